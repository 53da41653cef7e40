"""The SLO search over option sets and GPU sharing: probe verdicts (met / missed / unmeasured), the window a
probe extends to hold a p99's inferences, the monotonic note, and the side-by-side answers.

Search logic runs against scripted probes; the end-to-end tests run `edgebench bench` with the null backend
on a serial simulated device (serial_device: one flock'ed lock file, sleep_s per inference), whose capacity in
streams is computable: floor(1 / (sleep_s * rate_hz)). MPS runs under the fake nvidia-cuda-mps-control of
tests/runner/test_mps.py (a real daemonizing executable on PATH).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from serial_slo import serial_options, serial_slo_profile, slo_bench

from edgebench.config.run_config import RunConfig
from edgebench.models.inputs import InputDesc
from edgebench.pipeline.slo_search import (
    Probe,
    monotonic_note,
    probe_config,
    search_key,
    search_max_streams,
    search_record,
)
from edgebench.runner.load import MISSES_FOR_P99_OVER, P99_FLOOR, slo_fields, slo_verdict
from edgebench.runner.metrics import summarize


def scripted(verdicts: dict[int, str] | None = None, capacity: int = 0, p99: dict[int, float] | None = None):
    """A probe function: verdicts[n] when given, else met up to `capacity` and missed above; records calls."""
    calls: list[int] = []

    def probe(n: int) -> Probe:
        calls.append(n)
        v = (verdicts or {}).get(n, "met" if n <= capacity else "missed")
        return Probe(n, v, (p99 or {}).get(n, float(n) if v != "unmeasured" else None),
                     "skipped" if v == "skipped" else "ok", "no MPS here" if v == "skipped" else "")

    return probe, calls


# ------------------------------------------------------------------------------------------ verdicts


def test_too_few_inferences_for_a_p99_is_unmeasured_never_missed():
    """The issue's probe: 121 inferences with min_inferences 100, max latency 1.6 ms against 33 ms."""
    verdict, why = slo_verdict(None, 33.0, "ok", 121, over_slo=0)
    assert verdict == "unmeasured"
    assert "121 inferences" in why and f"needs {P99_FLOOR}" in why
    # a few slow ones are still not enough to call it: 7 of 662 over can leave the p99 under the SLO
    assert slo_verdict(None, 33.0, "ok", 300, over_slo=MISSES_FOR_P99_OVER - 1)[0] == "unmeasured"


def test_enough_inferences_over_the_slo_is_a_miss_even_without_a_p99():
    assert MISSES_FOR_P99_OVER == 8  # numpy's p99 of 662 values lies between sorted values 654 and 655
    values = np.concatenate([np.ones(P99_FLOOR - 8), np.full(8, 100.0)])
    assert np.percentile(values, 99) > 33.0  # 8 over -> p99 over, whatever the other 654 are
    # 7 over can leave it under: the p99 interpolates between the last one under and the first one over
    assert np.percentile(np.concatenate([np.full(P99_FLOOR - 7, 32.0), np.full(7, 33.5)]), 99) < 33.0
    verdict, why = slo_verdict(None, 33.0, "invalid", 200, over_slo=150)
    assert verdict == "missed" and "150 of 200" in why


def test_a_measured_p99_decides_unless_the_row_is_invalid_under_the_slo():
    assert slo_verdict(20.0, 33.0, "ok", 700, 0) == ("met", "")
    assert slo_verdict(40.0, 33.0, "ok", 700, 50) == ("missed", "")
    assert slo_verdict(40.0, 33.0, "invalid", 700, 50)[0] == "missed"  # measured over the SLO: a miss anyway
    verdict, why = slo_verdict(20.0, 33.0, "invalid", 700, 0, "throughput unstable")
    assert verdict == "unmeasured" and "throughput unstable" in why
    assert slo_verdict(None, 33.0, "failed", 0, 0)[0] == "failed"


def _null_outcome(cfg: RunConfig):
    from edgebench.backends.null import NullBackend
    from edgebench.models.model_artifact import ModelArtifact
    from edgebench.runner.orchestrator import run_instances

    artifact = ModelArtifact(model="null", precision="fp32", onnx_path="unused.onnx", sha256="0" * 64,
                             inputs=(InputDesc("input", shape=(3, 4, 4)),))
    outcome = run_instances(cfg, NullBackend().prepare(cfg, artifact, cache=None))  # type: ignore[arg-type]
    assert outcome.status == "ok", outcome.reason
    return outcome, summarize(outcome.instances, cfg.batch, cfg.sub_windows)


def null_cfg(instances: int, rate_hz: float, duration_s: float, options: dict, **kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=1, placements=("cpu",) * instances,
                warmup_s=0.05, duration_s=duration_s, max_duration_s=duration_s, min_inferences=100,
                load_timeout_s=60.0, barrier_timeout_s=30.0, collect_timeout_s=30.0, rate_hz=rate_hz,
                accuracy_samples=0, slo_ms=33.0)
    base.update(kw)
    return RunConfig(**base, options=tuple(sorted(options.items())))


def test_slo_fields_of_real_streams_short_window_and_overload():
    """Real spawned streams: 1 ms of service at 100/s for 1 s holds ~100 inferences, none slow: unmeasured,
    slo_met empty. 2 ms of service every 0.5 ms for 0.4 s: the backlog puts most over 33 ms: missed without a p99."""
    cfg = null_cfg(1, 100.0, 1.0, {"sleep_s": 0.001})
    outcome, summary = _null_outcome(cfg)
    assert 50 <= summary.inferences < P99_FLOOR and summary.latency_ms["p99"] is None
    fields, why = slo_fields(cfg, outcome.instances, summary, "ok", "")
    assert {k: fields[k] for k in ("slo_ms", "slo_met", "slo_verdict")} == {
        "slo_ms": 33.0, "slo_met": None, "slo_verdict": "unmeasured"}, why
    assert fields["slo_horizon_s"] == 600.0  # its trend's bound over the horizon is a column; the p99 gap decides
    assert f"{summary.inferences} inferences" in why

    cfg = null_cfg(1, 2000.0, 0.4, {"sleep_s": 0.002})
    outcome, summary = _null_outcome(cfg)
    assert summary.latency_ms["p99"] is None
    fields, why = slo_fields(cfg, outcome.instances, summary, "invalid", "too few")
    assert fields["slo_verdict"] == "missed" and fields["slo_met"] is False, why
    over = int(why.split(" of ")[0].rsplit(" ", 1)[-1])
    assert over >= MISSES_FOR_P99_OVER and over > summary.inferences // 2


def test_a_probe_window_runs_until_it_holds_the_inferences_a_p99_needs():
    base = null_cfg(4, 30.0, 2.0, {}, min_inferences=100)
    probe = probe_config(base, 8, 1)
    assert probe.min_inferences == P99_FLOOR and probe.instances == 8 and probe.placements == ("cpu",) * 8
    assert probe_config(null_cfg(4, 30.0, 2.0, {}, min_inferences=1000), 2, 1).min_inferences == 1000
    # the instance count is folded out of a search; option sets and GPU sharing are not
    assert search_key(base) == search_key(null_cfg(2, 30.0, 2.0, {}))
    assert search_key(base) != search_key(null_cfg(4, 30.0, 2.0, {"sleep_s": 0.001}))
    assert search_key(null_cfg(1, 30.0, 2.0, {}, placements=("cuda:0",))) != search_key(
        null_cfg(1, 30.0, 2.0, {}, placements=("cuda:0",), gpu_sharing="mps"))


# ------------------------------------------------------------------------------------------ search


def test_unmeasured_small_counts_do_not_end_the_search_at_zero():
    """Before: 1 stream unmeasured was a miss and the answer was 0. Now the doubling goes on past it."""
    probe, calls = scripted({1: "unmeasured", 2: "unmeasured"}, capacity=21)
    result = search_max_streams(probe, 64, 1)
    assert result.max_streams == 21 and not result.lower_bound and not result.capped
    assert result.answer == "21"
    assert calls[:3] == [1, 2, 4] and len(calls) == len(set(calls))
    assert any("unmeasured at 1, 2" in n for n in result.notes)


def test_an_unmeasured_count_above_the_answer_makes_it_a_lower_bound():
    probe, calls = scripted({11: "unmeasured", 12: "unmeasured"}, capacity=12)
    result = search_max_streams(probe, 64, 1)
    assert calls == [1, 2, 4, 8, 16, 12, 10, 11]
    assert result.max_streams == 10 and result.lower_bound and result.answer == "at least 10"


def test_nothing_measured_below_the_first_miss_is_undetermined_not_zero():
    probe, _ = scripted({1: "unmeasured", 2: "unmeasured", 4: "unmeasured"}, capacity=0)
    result = search_max_streams(probe, 64, 1)
    assert result.max_streams == 0 and result.lower_bound
    assert result.answer == "undetermined (< 8): no probe below 8 was measured"
    cfg = null_cfg(1, 30.0, 1.0, {})
    assert search_record(cfg, result)["max_streams_under_slo"] is None  # an empty cell, never a 0
    real_zero = search_max_streams(scripted(capacity=0)[0], 64, 1)
    assert real_zero.answer == "0" and search_record(cfg, real_zero)["max_streams_under_slo"] == 0


def test_a_skipped_probe_ends_the_search_with_its_reason():
    probe, calls = scripted({8: "skipped"}, capacity=30)
    result = search_max_streams(probe, 64, 8)
    assert calls == [8] and result.skipped == "no MPS here" and result.answer == "skipped: no MPS here"


def test_a_p99_that_falls_as_streams_are_added_is_noted_in_the_search_row():
    """The H100 numbers of docs/results/h100-issues-10-11-12.md: 33.1, 47.4, 42.8, 39.5 ms at 1, 2, 4, 8."""
    p99 = {1: 33.1, 2: 47.4, 4: 42.8, 8: 39.5}
    probes = [Probe(n, "missed", v, "ok") for n, v in p99.items()]
    note = monotonic_note(probes, 33.0)
    assert note is not None and note.startswith("not monotonic")
    assert "47.4 ms at 2 -> 39.5 ms at 8" in note
    result = search_max_streams(scripted(capacity=0, p99={1: 33.1, 2: 47.4})[0], 64, 1)
    result.notes.insert(0, note)
    record = search_record(null_cfg(1, 30.0, 1.0, {}), result)
    assert record["monotonic"] == "false" and "47.4 ms at 2" in record["notes"]
    # percentile noise far below the SLO is not a failed assumption; a count that met above a miss is
    assert monotonic_note([Probe(16, "met", 3.1, "ok"), Probe(31, "met", 2.9, "ok")], 33.0) is None
    inverted = monotonic_note([Probe(2, "missed", 34.0, "ok"), Probe(4, "met", 32.0, "ok")], 33.0)
    assert inverted is not None and "4 streams met after 2 missed" in inverted


# ------------------------------------------------------------------------------------------ end to end

def bench(tmp_path: Path, cache: Path, argv: list[str], option_sets: list[dict], *, instances: int,
          accelerator: str, duration_s: float, max_duration_s: float) -> tuple[Path, list[dict], list[dict]]:
    profile = serial_slo_profile(tmp_path, "slo2", option_sets, instances=instances, accelerator=accelerator,
                                 warmup_s=0.1, duration_s=duration_s, max_duration_s=max_duration_s,
                                 min_inferences=100, stability_tolerance_pct=80.0)
    return slo_bench(cache, profile, tmp_path / "runs", *argv)


def test_option_sets_are_searched_side_by_side_with_their_own_capacity(tmp_path, artifact_cache, tiny_onnx, capsys):
    """Two option sets of one config, 2 ms and 4 ms per inference on one serial device, 90 arrivals/s per
    stream: 5 and 2 streams fit (90% and 72% busy), 6 and 3 overload it. One search each, one line each in
    slo_search.csv and in the console's side-by-side table; the window runs to 662 inferences although
    min_inferences is 100. Each search starts with its closed-loop capacity row at 2 streams (~450 and ~240/s:
    5 and 2 streams admitted) and ends with the same row again (the reference after the probes: slo_search.csv's
    capacity_after_per_s and capacity_reference). A 10 s horizon: 8 s windows cannot bound a 600 s one at 90% load.

    Windows of up to 8 s, so that 1 stream (90/s) reaches a p99's 662 inferences: when a host stall makes 2 streams
    of the 4 ms set miss (CI: one repeat's p99 143 ms at 72% busy), the search's answer is 1, which 6 s windows
    (541 inferences) could only call undetermined."""
    lock = tmp_path / "device.lock"
    run, searches, rows = bench(tmp_path, artifact_cache.root, ["--rate", "90", "--slo-ms", "100", "--max-streams", "8",
                                                                "--horizon-s", "10"],
                                serial_options(tmp_path, 0.002, 0.004), instances=2, accelerator="cpu",
                                duration_s=1.0, max_duration_s=8.0)
    assert [s["options"] for s in searches] == [f"serial_device={lock};sleep_s={v}" for v in ("0.002", "0.004")]
    assert all(s["max_streams_under_slo"] for s in searches), [(s["answer"], s["probes"]) for s in searches]
    found = [int(s["max_streams_under_slo"]) for s in searches]
    assert 4 <= found[0] <= 5 and 1 <= found[1] <= 2, [s["probes"] for s in searches]
    for s, cap in zip(searches, (5, 2)):
        if s["answer"].startswith("at least"):  # the count above met in its p99 but its window could not tell
            assert f"{found[searches.index(s)] + 1}:unmeasured" in s["probes"] and s["first_missed_streams"] == ""
            continue
        assert int(s["first_missed_streams"]) == int(s["max_streams_under_slo"]) + 1
        assert s["first_missed_streams"] != "" and int(s["first_missed_streams"]) <= cap + 1
        # the lowest capacity known: the closed loop's, or what an overloaded probe served
        assert s["capacity_source"] in ("closed loop at 2 streams", f"served at {s['first_missed_streams']} streams "
                                        "while the backlog grew") and s["horizon_s"] == "10.0"
        assert int(s["capacity_max_streams"]) == int(float(s["capacity_per_s"]) // 90) >= int(s["answer"])
    closed = [r for r in rows if r["scenario"] == "closed-loop"]
    assert [(r["instances"], r["rate_per_stream_hz"], r["repeat"]) for r in closed] == [
        ("2", "", "0"), ("2", "", "1")] * 2  # each search's reference before its probes and after them
    for s, (before, after) in zip(searches, (closed[:2], closed[2:]), strict=True):
        assert float(s["capacity_after_per_s"]) == pytest.approx(float(after["inferences"]) / float(after["window_s"]),
                                                                 rel=1e-4)
        before_per_s = float(before["inferences"]) / float(before["window_s"])
        moved = (float(s["capacity_after_per_s"]) / before_per_s - 1) * 100
        assert s["capacity_reference"] in (f"steady ({moved:+.1f}%)", f"unsure ({moved:+.1f}%)")
        assert ("capacity reference unsure" in s["notes"]) == s["capacity_reference"].startswith("unsure")
    rows = [r for r in rows if r["scenario"] == "slo-search"]
    measured = [r for r in rows if r["slo_verdict"] in ("met", "missed") and r["latency_ms_p99"]]
    assert measured and all(int(r["inferences"]) >= P99_FLOOR for r in measured)
    assert all(r["slo_verdict"] in ("met", "missed") for r in rows), [(r["instances"], r["reason"]) for r in rows]
    out = capsys.readouterr().out
    table = out[out.index("SLO search: tiny_cnn/null/fp32/b1 on cpu"):]
    assert "sleep_s=0.002" in table and "sleep_s=0.004" in table
    assert table.count("time-slicing") >= 2
    # the report: one table line per search, and one figure with both option sets' p99 curves side by side
    from edgebench.report.load_plots import latency_vs_load_compared
    from edgebench.report.slo_table import slo_table
    from edgebench.results.runs import load_runs

    runs = load_runs([run])
    table = slo_table(runs)
    assert table is not None and [r["answer"] for r in table.records] == [s["answer"] for s in searches]
    assert "sleep_s=0.004" in table.to_markdown()
    (fig,) = latency_vs_load_compared(runs)
    assert sorted(s.label for s in fig.series) == [f"serial_device={lock};sleep_s={v}, time-slicing"
                                                   for v in ("0.002", "0.004")]
    for series in fig.series:
        sleep = series.label.split("sleep_s=")[1].split(",")[0]
        mine = {int(r["instances"]): float(r["latency_ms_p99"]) for r in rows
                if r["options"].endswith(f"sleep_s={sleep}") and r["latency_ms_p99"]}
        assert {int(p.x): p.y for p in series.points} == mine
    assert fig.references[0].line_y[0] == 100.0


def test_gpu_sharing_modes_are_searched_side_by_side_under_a_private_mps_daemon(tmp_path, artifact_cache, tiny_onnx,
                                                                                 monkeypatch, capsys):
    """`--gpu-sharing time-slicing,mps`: one search per mode on a CUDA placement (null backend, fake MPS control
    program on PATH); every mps probe ran under a daemon of its own row, every time-slicing probe under none.
    Windows of 0.5 s at 60/s per stream hold too few inferences for a p99 at 1 and 2 streams: those probes say
    unmeasured and the search goes on instead of answering 0."""
    from fake_mps import install_fake_mps

    install_fake_mps(tmp_path / "bin", monkeypatch)
    run, searches, rows = bench(tmp_path, artifact_cache.root,
                                ["--rate", "60", "--slo-ms", "100", "--max-streams", "2",
                                 "--gpu-sharing", "time-slicing,mps"],
                                [{"sleep_s": 0.001}], instances=1, accelerator="cuda:0",
                                duration_s=0.5, max_duration_s=0.5)
    assert [s["gpu_sharing"] for s in searches] == ["time-slicing", "mps"]
    for s in searches:
        assert s["answer"] == "undetermined: no probe was measured" and s["max_streams_under_slo"] == ""
        assert "unmeasured at 1, 2" in s["notes"]
    assert sorted((r["gpu_sharing"], int(r["instances"]), r["scenario"]) for r in rows) == [  # reference before, after
        ("mps", 1, "closed-loop"), ("mps", 1, "closed-loop"), ("mps", 1, "slo-search"), ("mps", 2, "slo-search"),
        ("time-slicing", 1, "closed-loop"), ("time-slicing", 1, "closed-loop"), ("time-slicing", 1, "slo-search"),
        ("time-slicing", 2, "slo-search")]
    for r in rows:
        if r["scenario"] == "slo-search":
            assert r["slo_verdict"] == "unmeasured" and r["slo_met"] == "" and "slo: unmeasured" in r["reason"]
        mps_log = run / r["artifact_dir"] / "mps-log" / "fake-calls.log"
        assert mps_log.exists() == (r["gpu_sharing"] == "mps")
        if mps_log.exists():
            assert [line.split()[0] for line in mps_log.read_text().splitlines()] == ["start", "quit"]
    out = capsys.readouterr().out
    assert "SLO search: tiny_cnn/null/fp32/b1 on cuda:0" in out and "2x cuda:0" in out


def test_a_search_line_never_mixes_into_a_file_of_older_columns(tmp_path):
    from edgebench.pipeline.slo_search import SEARCH_COLUMNS, _append_search

    path = tmp_path / "slo_search.csv"
    path.write_text("model,max_streams_under_slo\nresnet50,0\n")
    record = search_record(null_cfg(1, 30.0, 1.0, {}), search_max_streams(scripted(capacity=3)[0], 8, 1))
    _append_search(path, record)
    _append_search(path, record)
    assert (tmp_path / "slo_search.older-columns.csv").read_text() == "model,max_streams_under_slo\nresnet50,0\n"
    with open(path, newline="") as fh:
        lines = list(csv.DictReader(fh))
    assert tuple(lines[0]) == SEARCH_COLUMNS and [r["answer"] for r in lines] == ["3", "3"]
