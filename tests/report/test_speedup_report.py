"""The tensor-core speedup table: medians over repeats, pessimistic/optimistic range, invalid rows counted."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from edgebench.report.speedup import speedup_rows
from edgebench.report.tables import speedup_table
from edgebench.results.runs import Run


def row(precision: str, tput: float | str, status: str = "ok", batch: int = 8, tc: str = "") -> dict:
    return {"model": "resnet50", "backend": "torch", "batch": str(batch), "instances": "1", "mode": "process",
            "placement": "cuda:0", "options": "", "precision": precision, "throughput_ips": str(tput),
            "status": status, "tensor_core_time_pct": tc, "energy_per_inference_mj": ""}


def test_speedup_is_ratio_of_medians_with_range_from_extreme_pairings():
    rows = [row("fp32", 100), row("fp32", 110), row("fp32", 90),
            row("fp16", 300, tc="40"), row("fp16", 330, tc="50"), row("fp16", 270, tc="45"),
            row("fp16", 9999, status="invalid")]
    recs = {r["precision"]: r for r in speedup_rows(rows)}
    fp16 = recs["fp16"]
    assert fp16["throughput_ips_median"] == 300
    assert fp16["speedup_vs_fp32"] == pytest.approx(3.0)
    assert fp16["speedup_min"] == pytest.approx(270 / 110)
    assert fp16["speedup_max"] == pytest.approx(330 / 90)
    assert (fp16["repeats_ok"], fp16["repeats_all"]) == (3, 4)  # the invalid repeat is counted, not averaged
    assert fp16["tensor_core_time_pct_median"] == 45
    assert recs["fp32"]["speedup_vs_fp32"] == pytest.approx(1.0)


def test_groups_are_per_batch_and_missing_baseline_gives_no_speedup():
    rows = [row("fp32", 100, batch=1), row("fp16", 150, batch=1), row("fp16", 500, batch=64),
            row("fp32", "", status="failed", batch=64), row("int8", "", status="skipped", batch=1)]
    recs = {(r["batch"], r["precision"]): r for r in speedup_rows(rows)}
    assert recs[("1", "fp16")]["speedup_vs_fp32"] == pytest.approx(1.5)
    assert recs[("64", "fp16")]["speedup_vs_fp32"] is None  # fp32 failed at b64: no ratio invented
    assert ("1", "int8") not in recs
    md = speedup_table([Run(Path("run"), rows)]).to_markdown()  # the report's one speedup table
    assert "| resnet50 | torch | 64 |" in md and "0/1" in md


def test_report_command_writes_csv_and_markdown(tmp_path):
    from edgebench.results.schema import COLUMNS
    from edgebench.results.store import ResultsStore

    run = tmp_path / "run"
    run.mkdir()
    store = ResultsStore(run)
    for i, (prec, tput) in enumerate([("fp32", 50.0), ("fp32", 52.0), ("tf32", 120.0), ("tf32", 118.0)]):
        r = {k: v for k, v in row(prec, tput).items() if k in {c.name for c in COLUMNS}}
        r.update(throughput_ips=tput, config_hash=f"h{i}")
        store.append(r)
    out = subprocess.run([sys.executable, "-m", "edgebench", "report", str(run)], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    tables = run / "report" / "tables"  # the one speedup table; none beside the run's results.csv
    with open(tables / "speedup.csv", newline="") as fh:
        recs = {r["precision"]: r for r in csv.DictReader(fh)}
    assert float(recs["tf32"]["speedup_vs_fp32"]) == pytest.approx(119 / 51)
    assert "tf32" in (tables / "speedup.md").read_text() and r"\toprule" in (tables / "speedup.tex").read_text()
    assert not (run / "speedup.csv").exists() and not (run / "speedup.md").exists()
    assert (tables / "speedup.md").read_text() in out.stdout  # and the terminal shows it
    bad = subprocess.run([sys.executable, "-m", "edgebench", "report", str(tmp_path / "nope")], capture_output=True,
                         text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert bad.returncode == 2 and "not a run folder" in bad.stderr


def test_report_of_two_runs_never_pools_their_rows(tmp_path):
    """Two boards: each fp16 speedup is over its own board's fp32, in a row that names the run."""
    from edgebench.results.schema import COLUMNS
    from edgebench.results.store import ResultsStore

    names = {c.name for c in COLUMNS}
    runs = []
    for board, (fp32, fp16) in {"fast": (100.0, 400.0), "slow": (10.0, 20.0)}.items():
        run = tmp_path / board
        run.mkdir()
        store = ResultsStore(run)
        for i, (prec, tput) in enumerate([("fp32", fp32), ("fp16", fp16)]):
            r = {k: v for k, v in row(prec, tput).items() if k in names}
            r.update(throughput_ips=tput, config_hash=f"h{i}")
            store.append(r)
        runs.append(run)
    out = subprocess.run([sys.executable, "-m", "edgebench", "report", *map(str, runs), "--out", str(tmp_path / "rep"),
                          "--formats", "png"], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    from edgebench.results.runs import load_runs

    fast, slow = (r.label for r in load_runs(runs))
    with open(tmp_path / "rep" / "tables" / "speedup.csv", newline="") as fh:
        recs = {(r["run"], r["precision"]): r for r in csv.DictReader(fh)}
    assert float(recs[(fast, "fp16")]["speedup_vs_fp32"]) == pytest.approx(4.0)
    assert float(recs[(slow, "fp16")]["speedup_vs_fp32"]) == pytest.approx(2.0)
    assert recs[(fast, "fp32")]["ok_all"] == "1/1"  # not 2: the other board's fp32 is not a repeat
    assert f"| {slow} | resnet50 |" in (tmp_path / "rep" / "tables" / "speedup.md").read_text()
    assert not (tmp_path / "rep" / "speedup.csv").exists()
