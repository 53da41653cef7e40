"""issue 54, items 5 and 6, in the answer layer: a configuration's identity is everything that changes what runs
(rows that differ in their inputs, workload, threads, model file or calibration never pool as repeats, and are
labelled so a reader can tell them apart; an older results.csv without the workload column reads as unknown,
pooled with itself only), and every measured repeat is checked against every limit whose column it measured,
an ok repeat whose objective column is empty included. Run folders are written by hand with the real ResultsStore
so every expected number is known."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from edgebench.answer.best import Limits, best_answer
from edgebench.answer.candidates import IDENTITY, LeftOut, candidates, load_sources
from edgebench.answer.identity import tell_apart, workload_entries
from edgebench.answer.pareto import pareto_fronts
from edgebench.report.answer import to_text
from edgebench.results.store import ResultsStore

P99_EMPTY = "latency_ms_p99: too few inferences for a p99 (400 < 662)"


def _row(i: int, tput: float, *, repeat: int = 0, status: str = "ok", reason: str = "", **extra: object) -> dict:
    out = {"model": "det", "backend": "ort", "precision": "int8", "batch": 1, "instances": 1, "mode": "process",
           "placement": "cpu", "throughput_ips": tput, "status": status, "reason": reason, "row_index": i,
           "config_hash": f"h{i}", "repeat": repeat, "threads_per_instance": 2, "inferences": 1000,
           "latency_ms_p50": 1000.0 / tput, "latency_ms_p99": 1500.0 / tput, "power_w_mean": 20.0,
           "energy_per_inference_mj": 20_000.0 / tput, "workload": "onnx=65d067301bb089b3; seed=0",
           "input_shapes": "x:float32[1x3x224x224]", "onnx_sha256": "aa" * 32}
    out.update(extra)
    return out


def _run(path: Path, rows: list[dict]) -> Path:
    store = ResultsStore(path)
    for r in rows:
        store.append(r)
    (path / "system.json").write_text(json.dumps({"board": {"model": "Board"}, "cpu": {"model": "CPU"},
                                                  "edgebench_version": "0.1.0"}))
    (path / "profile.yaml").write_text("name: p\n")
    return path


def _shape(size: int, repeat: int, tput: float, i: int) -> dict:
    return _row(i, tput, repeat=repeat, input_shapes=f"x:float32[1x3x{size}x{size}]",
                workload=f"inputs=x:float32[Nx3x{size}x{size}]; onnx=65d067301bb089b3; seed=0")


def test_rows_of_two_input_sizes_are_two_configurations_told_apart_by_their_inputs(tmp_path: Path):
    """The issue's case: PP-OCRv4 det int8 at 224x224 (fast) and 640x640 (slow) pooled as 'n=2'."""
    run = _run(tmp_path / "r", [_shape(224, 0, 20.0, 0), _shape(224, 1, 20.4, 1),
                                _shape(640, 0, 2.8, 2), _shape(640, 1, 2.9, 3)])
    (answer,) = best_answer([run]).answers
    assert answer.considered == 2
    best, runner = answer.feasible
    assert (best.interval.median, best.interval.n) == (pytest.approx(20.2), 2)
    assert (runner.interval.median, runner.interval.n) == (pytest.approx(2.85), 2)
    assert best.candidate.label() == "ort int8 b1 cpu (inputs x:float32[1x3x224x224])"
    assert runner.candidate.label() == "ort int8 b1 cpu (inputs x:float32[1x3x640x640])"
    text = to_text(best_answer([run]))
    assert "2 of 2 configuration(s) meet every limit" in text


def test_the_same_inputs_in_two_run_folders_pool_as_repeats_and_need_no_detail(tmp_path: Path):
    a = _run(tmp_path / "a", [_shape(224, 0, 20.0, 0)])
    b = _run(tmp_path / "b", [_shape(224, 0, 21.0, 0)])
    (answer,) = best_answer([a, b]).answers
    (only,) = answer.feasible
    assert only.interval.n == 2 and only.candidate.label() == "ort int8 b1 cpu"


def test_every_identity_cell_splits_configurations(tmp_path: Path):
    """Each of threads, workload entry, ONNX file and calibration data on its own makes another configuration,
    and the label names the one that differs (and nothing else)."""
    cases = {"threads_per_instance": (2, 4, "2 thread(s) per instance", "4 thread(s) per instance"),
             "workload": ("onnx=65d067301bb089b3; seed=0", "onnx=65d067301bb089b3; data=0011aa; seed=0",
                          "no data", "data=0011aa"),
             "onnx_sha256": ("aa" * 32, "bb" * 32, "ONNX sha256 aaaaaaaaaaaa", "ONNX sha256 bbbbbbbbbbbb"),
             "calibration_source": ("synthetic (32 samples, seed 0)", "a folder (64 samples, seed 0)",
                                    "calibration synthetic (32 samples, seed 0)",
                                    "calibration a folder (64 samples, seed 0)")}
    for column, (one, other, label_one, label_other) in cases.items():
        run = _run(tmp_path / column, [_row(0, 10.0, **{column: one}), _row(1, 12.0, **{column: other})])
        (answer,) = best_answer([run]).answers
        labels = sorted(r.candidate.label() for r in answer.feasible)
        assert labels == sorted([f"ort int8 b1 cpu ({label_one})", f"ort int8 b1 cpu ({label_other})"]), column


def test_an_older_results_csv_without_the_new_columns_is_unknown_pooled_with_itself_only(tmp_path: Path):
    """A results.csv written before workload (and input_shapes, onnx_sha256, threads) existed: its two repeats
    pool with each other, never with a row that records the cells, and the label says they are not recorded."""
    new = _run(tmp_path / "new", [_shape(224, 0, 20.0, 0)])
    old = tmp_path / "old.csv"
    dropped = {"workload", "input_shapes", "onnx_sha256", "threads_per_instance"}
    rows = [{k: v for k, v in _shape(224, r, 19.0 + r, r).items() if k not in dropped} for r in (0, 1)]
    with open(old, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    runs = load_sources([new, old])
    cands = candidates(runs, "s", ("throughput_ips",), LeftOut())
    assert sorted(len(c.rows) for c in cands) == [1, 2]
    by_n = {len(c.rows): c for c in cands}
    assert all(by_n[2].identity[k] is None for k in dropped)
    assert by_n[2].label() == "ort int8 b1 cpu (inputs not recorded)"
    assert by_n[1].label() == "ort int8 b1 cpu (inputs x:float32[1x3x224x224])"


def test_tell_apart_adds_a_part_only_where_it_splits_and_reads_workload_entries():
    ident = {"input_shapes": "x[1]", "threads_per_instance": 2, "workload": "shapes=x:1x8; seed=0"}
    same_inputs = {**ident, "workload": "shapes=x:1x8; seed=3"}
    unknown = {**ident, "workload": None}
    assert tell_apart([ident, same_inputs]) == [["seed=0"], ["seed=3"]]  # equal shapes are not named
    # in order: the shapes entry splits the unknown one off, then the seed splits the other two
    assert tell_apart([ident, same_inputs, unknown]) == [["shapes=x:1x8", "seed=0"], ["shapes=x:1x8", "seed=3"],
                                                         ["workload not recorded", "workload not recorded"]]
    assert workload_entries("inputs=a:float32[Nx2]=1.5; seed=0") == {"inputs": "a:float32[Nx2]=1.5", "seed": "0"}
    assert workload_entries("") is None and workload_entries(None) is None
    assert {"workload", "input_shapes", "onnx_sha256", "threads_per_instance", "calibration_source"} <= set(IDENTITY)


# ------------------------------------------------------------------------------------ item 6: every repeat, every limit


def _power_case(tmp_path: Path, status: str) -> Path:
    """b1: three repeats at 20 W; repeat 2 measured 45 W but too few inferences for a p99 (status ok, its p99 empty
    with the reason), or the same row marked invalid. b2: slower, always under 30 W."""
    lacking = _row(2, 21.0, repeat=2, status=status, reason="unstable" if status == "invalid" else "",
                   power_w_mean=45.0, latency_ms_p99=None, inferences=400, empty_reasons=P99_EMPTY)
    return _run(tmp_path / status, [_row(0, 20.0, repeat=0), _row(1, 20.5, repeat=1), lacking,
                                    _row(3, 10.0, repeat=0, batch=2), _row(4, 10.1, repeat=1, batch=2)])


def test_an_ok_repeat_without_the_slo_column_is_still_judged_on_power(tmp_path: Path):
    limits = Limits(slo_ms=200.0, power_cap_w=30.0)
    for status in ("ok", "invalid"):  # the same measurement: judged alike whatever its status
        (answer,) = best_answer([_power_case(tmp_path, status)], limits=limits).answers
        assert [r.candidate.identity["batch"] for r in answer.feasible] == [2], status
        ((cand, why),) = answer.missed
        assert cand.identity["batch"] == 1
        assert why.startswith("power_w_mean 45 > 30 on repeat 2"), why
        assert why.endswith("worst of 3 repeat(s)"), why


def test_an_ok_repeat_not_pooled_is_named_with_its_values_and_why(tmp_path: Path):
    answer = best_answer([_power_case(tmp_path, "ok")], limits=Limits(slo_ms=200.0, power_cap_w=50.0))
    (only,) = answer.answers
    best = only.feasible[0]
    assert best.candidate.identity["batch"] == 1 and best.interval.n == 2  # the two repeats with a p99
    assert best.limit_values == {"latency_ms_p99": 1500.0 / 20.0, "power_w_mean": 45.0}  # the worst of all three
    assert best.candidate.repeats_text() == "2 usable repeats + 1 ok without latency_ms_p99"
    text = to_text(answer)
    assert ("not pooled: repeat 2 ok, not pooled (p99 75 ms, power 45 W; latency_ms_p99 empty: too few inferences "
            "for a p99 (400 < 662))") not in text  # its own p99 is empty: only what it measured is shown
    assert ("not pooled: repeat 2 ok, not pooled (power 45 W; latency_ms_p99 empty: too few inferences for a p99 "
            "(400 < 662))") in text


def test_the_pareto_front_keeps_a_repeat_without_energy_beside_its_configuration(tmp_path: Path):
    run = _run(tmp_path / "p", [_row(0, 20.0), _row(1, 20.5, repeat=1, energy_per_inference_mj=None,
                                                     empty_reasons="energy_per_inference_mj: no power sampler"),
                                _row(2, 10.0, batch=2)])
    (front,) = pareto_fronts(load_sources([run]))
    point = next(p for p in front.points if p.candidate.identity["batch"] == 1)
    assert len(point.candidate.rows) == 1 and [r["repeat"] for r in point.candidate.incomplete_rows] == [1]
    assert point.candidate.repeats_text() == "1 usable repeat + 1 ok without energy_per_inference_mj"
    assert [v for v, _r in point.candidate.every_value("power_w_mean")] == [20.0, 20.0]


# ------------------------------------------------------------------------------------ end to end, through the CLI


def test_run_at_two_input_sizes_then_best_reports_two_configurations(tmp_path: Path):
    """`edgebench run --onnx` of one real ONNX file at two --shapes, twice each (four run folders), then `edgebench
    best` over all four: two configurations of two repeats each, labelled by their inputs, never one of four."""
    pytest.importorskip("onnxruntime", reason="running an ONNX file needs onnxruntime")
    pytest.importorskip("onnx", reason="building the test ONNX file needs onnx")
    from cli_runs import cli, cli_env, read_rows
    from odd_models import conv_classifier
    from repo_paths import REPO

    model = conv_classifier(tmp_path / "cls.onnx")
    profile = tmp_path / "shapes.yaml"  # short windows; a busy shared host must not make the rows invalid here
    profile.write_text(f"name: shapes\nextends: {REPO / 'profiles' / 'smoke.yaml'}\n"
                       "run: {warmup_s: 0.1, duration_s: 0.3, min_inferences: 50, stability_tolerance_pct: 10000, "
                       "accuracy_samples: 0}\n")
    env = cli_env(tmp_path / "cache")
    out = tmp_path / "runs"
    for size in (16, 48):
        for _ in range(2):
            done = cli(env, "run", "--onnx", str(model), "--shapes", f"pixels:1x3x{size}x{size}", "--device",
                       str(profile), "--out", str(out))
            assert done.returncode == 0, done.stdout + done.stderr
    rows = [r for d in sorted(out.iterdir()) for r in read_rows(d / "results.csv")]
    assert [r["status"] for r in rows] == ["ok"] * 4, [r["reason"] for r in rows]
    hashes = {r["input_shapes"]: set() for r in rows}
    for r in rows:
        hashes[r["input_shapes"]].add(r["config_hash"])
    assert sorted(hashes) == ["pixels:float32[1x3x16x16]", "pixels:float32[1x3x48x48]"]
    assert all(len(h) == 1 for h in hashes.values()) and len(set.union(*hashes.values())) == 2  # --resume tells them
    assert {r["workload"].split("; ")[0] for r in rows} == {"inputs=pixels:float32[Nx3x16x16]",
                                                           "inputs=pixels:float32[Nx3x48x48]"}
    done = cli(env, "best", *(str(d) for d in sorted(out.iterdir())))
    assert done.returncode == 0, done.stderr
    assert "model cls on " in done.stdout and "2 of 2 configuration(s) meet every limit" in done.stdout, done.stdout
    for size in (16, 48):
        line = next(ln for ln in done.stdout.splitlines() if f"(inputs pixels:float32[1x3x{size}x{size}])" in ln)
        assert "(n=2)" in line, done.stdout
    best = next(ln for ln in done.stdout.splitlines() if ln.strip().startswith("best:"))
    assert "(inputs pixels:float32[1x3x16x16])" in best  # 9x fewer pixels: the faster one
