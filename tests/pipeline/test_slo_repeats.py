"""The SLO search that repeats: each stream count measured R times, accepted only when every repeat meets the SLO;
the answer reports the first count that failed and each repeat's p99. Search logic against a fake measurer; end to
end with the null backend on a serial simulated device (tiny windows), including --resume of a cut search."""

from __future__ import annotations

from cli_runs import read_rows
from serial_slo import serial_options, serial_slo_profile, slo_bench

from edgebench.cli import main
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.slo_search import (
    Probe,
    describe_probes,
    probe_config,
    repeated_probe,
    search_max_streams,
    search_record,
)
from edgebench.runner.arrivals import arrival_seed_of


def fake_measurer(p99_ms: dict[tuple[int, int], float], slo_ms: float = 33.0):
    """measure(n, j): the scripted p99 of count n's repeat j (met when <= slo_ms); records every call."""
    calls: list[tuple[int, int]] = []

    def measure(n: int, j: int) -> Probe:
        calls.append((n, j))
        v = p99_ms[(n, j)] if (n, j) in p99_ms else float(n)
        return Probe(n, "met" if v <= slo_ms else "missed", v, "ok")

    return measure, calls


def test_a_count_is_accepted_only_when_every_repeat_meets():
    """Up to 8 streams every repeat meets; at 16 the first two repeats meet and the third misses (the issue's
    32-stream H100 draws): 16 is not accepted, the answer lies between 8 and 16."""
    p99 = {(n, j): 10.0 + n for n in range(1, 13) for j in range(3)}
    p99.update({(16, 0): 20.0, (16, 1): 25.0, (16, 2): 66.2, (12, 1): 40.0, (10, 0): 31.0, (10, 2): 33.5})
    measure, calls = fake_measurer(p99)
    result = search_max_streams(lambda n: repeated_probe(n, 3, lambda j: measure(n, j)), 64, 1)
    assert result.max_streams == 9 and not result.capped
    # the counts that met ran all 3 repeats; a count stops at its first repeat that does not meet
    assert [c for c in calls if c[0] == 16] == [(16, 0), (16, 1), (16, 2)]
    assert [c for c in calls if c[0] == 12] == [(12, 0), (12, 1)]
    assert [c for c in calls if c[0] == 10] == [(10, 0), (10, 1), (10, 2)]
    assert [c for c in calls if c[0] == 9] == [(9, 0), (9, 1), (9, 2)]
    by_n = {p.streams: p for p in result.probes}
    assert by_n[16].verdict == "missed" and by_n[16].p99s_ms == [20.0, 25.0, 66.2] and by_n[16].p99_ms == 66.2
    assert by_n[10].verdict == "missed" and by_n[10].p99_ms == 33.5  # the worst repeat is the count's p99
    assert by_n[9].met and by_n[9].p99s_ms == [19.0, 19.0, 19.0]
    miss = result.first_miss
    assert miss is not None and miss.streams == 10
    record = search_record(null_cfg(1), result, 3)
    assert record["repeats_per_count"] == 3 and record["max_streams_under_slo"] == 9
    assert record["first_missed_streams"] == 10 and record["p99_ms_at_first_miss"] == 33.5
    assert record["p99_ms_repeats_at_first_miss"] == "31;20;33.5"
    assert record["p99_ms_repeats_at_max"] == "19;19;19" and record["p99_ms_at_max"] == 19.0
    assert "10:missed p99=31/20/33.5ms" in describe_probes(result.probes)


def test_one_repeat_is_the_old_search_and_a_skipped_or_unmeasured_repeat_ends_the_count():
    measure, calls = fake_measurer({}, slo_ms=5.0)
    result = search_max_streams(lambda n: repeated_probe(n, 1, lambda j: measure(n, j)), 64, 1)
    assert result.max_streams == 5 and all(j == 0 for _n, j in calls)
    unmeasured = repeated_probe(4, 3, lambda j: Probe(4, ["met", "unmeasured", "met"][j], None, "ok", "few"))
    assert unmeasured.verdict == "unmeasured" and len(unmeasured.repeats) == 2 and unmeasured.reason == "repeat 1: few"
    skipped = repeated_probe(4, 3, lambda j: Probe(4, "skipped", None, "skipped", "no MPS here"))
    assert skipped.verdict == "skipped" and skipped.reason == "no MPS here"


def test_each_repeat_of_a_count_is_its_own_config_with_fresh_arrivals():
    base = null_cfg(2, repeat=1)  # the plan's second search (run.repeats)
    probes = [probe_config(base, 8, 1, repeat=base.repeat * 3 + j) for j in range(3)]
    assert [p.repeat for p in probes] == [3, 4, 5]
    assert len({p.config_hash() for p in probes}) == 3  # --resume tells them apart
    assert len({arrival_seed_of(p.seed, p.repeat) for p in probes}) == 3  # random phases drawn afresh


def null_cfg(instances: int, **kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=1, placements=("cpu",) * instances,
                rate_hz=30.0, slo_ms=33.0, duration_s=1.0, max_duration_s=1.0)
    base.update(kw)
    return RunConfig(**base)


# ------------------------------------------------------------------------------------------ end to end

def settled(rows: list[dict]) -> list[dict]:
    """The rows without a probe repeat measured again: a stalled moment on a busy box can leave a probe's short
    window unable to exclude growth (slo_verdict unmeasured), and the search then measures that repeat again with
    the longer window that could tell; both rows are written, and the repeat's verdict is the later one's."""
    return [r for i, r in enumerate(rows) if not (
        r["slo_verdict"] == "unmeasured" and i + 1 < len(rows)
        and (rows[i + 1]["instances"], rows[i + 1]["repeat"]) == (r["instances"], r["repeat"]))]


def test_a_repeated_search_end_to_end_and_its_resume_after_a_cut(tmp_path, artifact_cache, tiny_onnx, capsys):
    """0.2 ms per inference on one serial device at 300 arrivals/s per stream: 4 streams keep it 24% busy, and the
    SLO (1 s) is far from anything but a stalled machine. The search from 2 streams to at most 4 measures its
    capacity (a closed loop at 2 streams: thousands per second, 4 streams admitted), then meets at 2 and 4 on
    each of 3 repeats, then measures its capacity again: 8 rows, 'at least 4'. Then the run is cut after its fifth
    row (results.csv truncated, no
    slo_search.csv line) and resumed: the capacity row and the 4 finished probes are reused, the 2 missing ones
    measured, and the answer is the same."""
    profile = serial_slo_profile(tmp_path, "slorep", serial_options(tmp_path, 0.0002), warmup_s=0.05,
                                 duration_s=0.2, max_duration_s=3.0, stability_tolerance_pct=90.0)  # tiny windows
    run, (search,), rows = slo_bench(artifact_cache.root, profile, tmp_path / "runs", "--rate", "300", "--slo-ms",
                                     "1000", "--max-streams", "4", "--arrival", "random",
                                     "--horizon-s", "60")  # 1 s windows: a stalled moment could unsettle 600 s
    assert search["answer"] == "at least 4", search["probes"]
    assert search["arrival"] == "random" and search["repeats_per_count"] == "3"
    assert len(search["p99_ms_repeats_at_max"].split(";")) == 3
    assert search["holds_at_max"].startswith("holds for 60 s: p99 ")
    every, rows = rows, settled(rows)
    assert len(every) - len(rows) <= 1, search["probes"]
    assert [(r["instances"], r["repeat"], r["scenario"]) for r in rows] == [
        ("2", "0", "closed-loop"), ("2", "0", "slo-search"), ("2", "1", "slo-search"), ("2", "2", "slo-search"),
        ("4", "0", "slo-search"), ("4", "1", "slo-search"), ("4", "2", "slo-search"),
        ("2", "1", "closed-loop")]  # the reference again, after the probes
    probes = rows[1:-1]
    assert all(r["arrival"] == "random" and r["slo_verdict"] == "met" for r in probes)
    assert len({r["arrival_seed"] for r in probes}) == 3  # one seed per repeat, the same for every count
    assert [f"{float(r['latency_ms_p99']):.4g}" for r in probes[3:]] == search["p99_ms_repeats_at_max"].split(";")
    assert "random arrivals]: at least 4 streams of 300/s keep p99 <= 1000 ms on every one of 3 repeat(s)" in \
        capsys.readouterr().out

    # cut after the fifth row (a repeat measured again counted once): the search line and the last two probe rows
    # are gone
    cut = every.index(rows[4]) + 1
    lines = (run / "results.csv").read_text().splitlines(keepends=True)
    (run / "results.csv").write_text("".join(lines[:cut + 1]))
    (run / "slo_search.csv").unlink()
    assert main(["--cache", str(artifact_cache.root), "bench", "--resume", str(run)]) == 0
    again = read_rows(run / "results.csv")
    assert again[:cut] == every[:cut]  # reused as they were
    assert [(r["instances"], r["repeat"]) for r in settled(again)[5:]] == [("4", "1"), ("4", "2"), ("2", "1")]
    (resumed,) = read_rows(run / "slo_search.csv")
    assert resumed["answer"] == "at least 4" and resumed["p99_ms_repeats_at_max"].split(";")[0] == \
        f"{float(rows[4]['latency_ms_p99']):.4g}"


def test_every_probe_of_a_search_runs_in_one_sweep_session(tmp_path, artifact_cache, tiny_onnx, capsys, monkeypatch):
    """The probes share what a grid sweep's rows share: one thermal baseline (cooldown waits for the machine as it
    was before the first probe, not before each), one power-mode session, one warm pool."""
    import edgebench.pipeline.sweep as sweep

    baselines: list[object] = []

    class CountedThermal(sweep.Thermal):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            baselines.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sweep, "Thermal", CountedThermal)
    profile = serial_slo_profile(tmp_path, "sloone", serial_options(tmp_path, 0.0002), warmup_s=0.05,
                                 duration_s=0.2, max_duration_s=3.0, stability_tolerance_pct=90.0)
    _run, (search,), rows = slo_bench(artifact_cache.root, profile, tmp_path / "runs", "--rate", "300", "--slo-ms",
                                      "1000", "--max-streams", "4", "--slo-repeats", "2")
    # the capacity row, 2 and 4 streams 2 repeats each, the capacity again (a repeat a stall left unable to tell, run
    # again longer, counted once)
    assert len(settled(rows)) == 6, search["probes"]
    assert len(baselines) == 1


def test_warm_repeats_reuse_the_processes_of_the_count_below(tmp_path, artifact_cache, tiny_onnx, capsys):
    """With warm workers, each repeat of a count still runs in processes that never ran that count, but the pool
    keeps count x repeats of them: the next count's repeats reuse them and start only the streams added. 2 then 4
    streams, 3 repeats each, after the 2-stream capacity row: 4 x 3 = 12 processes in all, where a pool sized to
    one row's instances started 16 (every repeat of 2 and of 4 but the first started its own). The capacity row again
    after the probes (a repeat of the closed loop of its own) runs in processes that never ran that closed loop."""
    profile = serial_slo_profile(tmp_path, "slowarm", serial_options(tmp_path, 0.0002), warmup_s=0.05,
                                 duration_s=0.2, max_duration_s=3.0, stability_tolerance_pct=90.0, workers="warm")
    _run, (search,), rows = slo_bench(artifact_cache.root, profile, tmp_path / "runs", "--rate", "300", "--slo-ms",
                                      "1000", "--max-streams", "4", "--horizon-s", "60")
    assert search["answer"] == "at least 4", search["probes"]
    assert [(r["instances"], r["repeat"]) for r in rows] == [
        ("2", "0"), ("2", "0"), ("2", "1"), ("2", "2"), ("4", "0"), ("4", "1"), ("4", "2"), ("2", "1")]

    def started_for(row: dict[str, str]) -> int:  # "warm: k of n reused": n - k processes new to this row
        k, n = row["workers"].removeprefix("warm: ").split(" reused")[0].split(" of ")
        return int(n) - int(k)

    assert sum(started_for(r) for r in rows[:-1]) == 12, [r["workers"] for r in rows]
    assert rows[-1]["workers"].startswith("warm: ") and started_for(rows[-1]) <= 2
    assert rows[4]["workers"] == "warm: 4 of 4 reused"  # the first repeat at 4 runs in the 2-stream processes
