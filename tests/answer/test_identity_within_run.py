"""Review fixes to issue 54's identity: a run resumed by a newer edgebench does not split a configuration into the
repeats an older one wrote (no workload cell) and those the newer one wrote (one plan ran both), and configurations
that differ only in their workload draw curves of their own in the paper figures (two at one batch used to crash
the sort of (batch, interval) points)."""

from __future__ import annotations

from pathlib import Path

from edgebench.answer.best import best_answer
from edgebench.answer.identity import known_within_run
from edgebench.report.paper_figures import groups, paper_figures
from edgebench.results.runs import Run
from edgebench.results.store import ResultsStore


def _row(i: int, tput: float, workload: str | None, *, precision: str = "fp32", batch: int = 1, repeat: int = 0,
         shapes: str | None = None) -> dict:
    return {"model": "det", "backend": "ort", "precision": precision, "batch": batch, "instances": 1,
            "mode": "process", "placement": "cpu", "throughput_ips": tput, "status": "ok", "reason": "",
            "row_index": i, "config_hash": f"h{i}", "repeat": repeat, "threads_per_instance": 2,
            "latency_ms_p50": 1000.0 / tput, "workload": workload, "input_shapes": shapes}


def _folder(path: Path, rows: list[dict]) -> Path:
    store = ResultsStore(path)
    for r in rows:
        store.append(r)
    return path


def test_a_resumed_runs_old_and_new_repeats_are_one_configuration(tmp_path: Path):
    old = [_row(i, 100.0 + i, None, repeat=i) for i in range(2)]  # written before the workload column
    new = [_row(2 + i, 102.0 + i, "seed=0", repeat=2 + i, shapes="x:float32[1x3x8x8]") for i in range(2)]
    (only,) = best_answer([_folder(tmp_path / "r", old + new)]).answers
    assert only.considered == 1 and only.feasible[0].interval.n == 4


def test_a_workload_that_changed_the_hash_is_never_filled_in(tmp_path: Path):
    """Given shapes changed the config_hash, so --resume measured the configuration again: the old rows (no workload
    cell, inputs unknown) must not pool with the new ones (issue 54: a missing field is never pooled with a known
    one), while the seed-only workload of a spec run as it is (hash unchanged) is filled."""
    old = [_row(i, 100.0 + i, None, repeat=i) for i in range(2)]
    new = [_row(2 + i, 300.0 + i, "shapes=x:1x3x64x64; seed=0", repeat=i, shapes="x:float32[1x3x64x64]")
           for i in range(2)]
    answer = best_answer([_folder(tmp_path / "r", old + new)])
    assert answer.answers[0].considered == 2
    assert all(r["workload"] is None and r["input_shapes"] is None for r in known_within_run(old + new)[:2])
    seed_only = [_row(4, 100.0, "values=x:0; seed=0")]
    assert known_within_run(old + seed_only)[0]["workload"] == "values=x:0; seed=0"


def test_the_fill_stays_inside_one_folder_and_needs_one_known_value(tmp_path: Path):
    old = [_row(0, 100.0, None), _row(1, 101.0, None, repeat=1)]
    elsewhere = [_row(2, 300.0, "seed=0", shapes="x:float32[1x3x8x8]")]
    answer = best_answer([_folder(tmp_path / "old", old), _folder(tmp_path / "new", elsewhere)])
    assert answer.answers[0].considered == 2  # two folders: the old rows' workload stays unknown
    two = [_row(0, 100.0, None), _row(1, 200.0, "shapes=a", repeat=1), _row(2, 300.0, "shapes=b", repeat=2)]
    filled = known_within_run(two)
    assert filled[0]["workload"] is None  # the folder records two values: nothing to take


def test_two_workloads_draw_two_curves_with_files_of_their_own(tmp_path: Path):
    rows = [_row(i, 100.0 * (i + 1), f"inputs=x:float32[Nx3x{s}x{s}]; seed=0", batch=b, repeat=0,
                 shapes=f"x:float32[{b}x3x{s}x{s}]")
            for i, (s, b) in enumerate([(16, 1), (16, 4), (48, 1), (48, 4)])]
    run = Run(path=tmp_path, rows=rows)
    gs = groups([run])
    assert len(gs) == 2 and len({g.stem("throughput_vs_batch") for g in gs}) == 2
    assert any("inputs x:float32[Nx3x48x48]" in g.words() for g in gs)
    figs = paper_figures([run], tmp_path / "figs", formats=("png",))
    drawn = [f for f in figs if f.stem.startswith("throughput_vs_batch") and f.absent_reason is None]
    assert len(drawn) == 2 and all(f.files for f in drawn)
