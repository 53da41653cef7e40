"""`edgebench report` and `--resume` on damaged or hostile run folders (issue 21): a results.csv whose last line
is cut short, and run folders holding symlinks out of themselves (as an unpacked archive from a board may)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from edgebench.results.schema import COLUMNS
from edgebench.results.store import ResultsStore

NAMES = {c.name for c in COLUMNS}


def edgebench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edgebench", *args], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}, timeout=300)


def make_run(run: Path, rows: list[tuple[str, float]]) -> Path:
    run.mkdir(parents=True)
    store = ResultsStore(run)
    for i, (precision, tput) in enumerate(rows):
        store.append({"model": "resnet50", "backend": "torch", "precision": precision, "batch": 8, "instances": 1,
                      "mode": "process", "placement": "cuda:0", "status": "ok", "throughput_ips": tput,
                      "config_hash": f"h{i}", "row_index": i, "artifact_dir": f"rows/{i:04d}-h{i}"})
    return run


def test_report_sets_a_cut_last_line_aside_and_uses_the_intact_rows(tmp_path):
    run = make_run(tmp_path / "run", [("fp32", 50.0), ("fp32", 52.0), ("fp16", 100.0), ("fp16", 104.0)])
    whole = (run / "results.csv").read_text()
    intact_rows = whole.count("\n") - 1
    # a fifth row killed mid-write: its throughput cell complete (9999), the rest of the line missing
    cells = {c.name: "" for c in COLUMNS}
    cells.update(model="resnet50", backend="torch", precision="fp16", batch="8", instances="1", mode="process",
                 placement="cuda:0", throughput_ips="9999.0")
    line = ",".join(cells[c.name] for c in COLUMNS)
    cut = line[: line.index("9999.0") + len("9999.0") + 3]
    (run / "results.csv").write_text(whole + cut)

    proc = edgebench("report", str(run), "--formats", "png")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (f"edgebench: warning: {run / 'results.csv'}: last line cut short ({len(cut)} characters, no newline: "
            "a sweep killed mid-write or a copy in progress); set aside, not a row") in proc.stderr
    with open(run / "report" / "tables" / "speedup.csv", newline="") as fh:
        recs = {r["precision"]: r for r in csv.DictReader(fh)}
    assert recs["fp16"]["ok_all"] == "2/2"  # the half row is not a third fp16 repeat
    assert float(recs["fp16"]["speedup_vs_fp32"]) == pytest.approx(102 / 51)
    assert "9999" not in (run / "report" / "tables" / "speedup.md").read_text()
    summary = (run / "report" / "summary.md").read_text()
    assert f"{run / 'results.csv'}: last line cut short" in summary  # the summary states it too
    assert intact_rows == 4
    assert (run / "results.csv").read_text() == whole + cut  # the report never rewrites the run's data


def test_report_refuses_a_results_csv_that_is_a_link_out_of_the_run(tmp_path):
    outside = make_run(tmp_path / "elsewhere", [("fp32", 1.0)])
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.csv").symlink_to(outside / "results.csv")
    proc = edgebench("report", str(run), "--formats", "png")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"edgebench: error: {run / 'results.csv'} is a symlink (-> {outside / 'results.csv'}); "
                           "never followed out of a run folder; not read\n")
    assert not (run / "report").exists()


def test_report_never_reads_row_files_through_links(tmp_path):
    """rows/0000-h0 -> a secret folder holding telemetry, row.json -> /etc/passwd, system.json -> /etc/passwd."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "telemetry_host.csv").write_text("t_ns,power[mW]\n1,5\n2,6\n")
    run = make_run(tmp_path / "run", [("fp32", 50.0), ("fp16", 100.0)])
    (run / "rows").mkdir()
    (run / "rows" / "0000-h0").symlink_to(secret)
    (run / "rows" / "0001-h1").mkdir()
    (run / "rows" / "0001-h1" / "row.json").symlink_to("/etc/passwd")
    (run / "rows" / "0001-h1" / "telemetry_host.csv").symlink_to(secret / "telemetry_host.csv")
    (run / "system.json").symlink_to("/etc/passwd")

    proc = edgebench("report", str(run), "--formats", "png")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"edgebench: warning: {run / 'system.json'} is a symlink (-> /etc/passwd)" in proc.stderr
    summary = (run / "report" / "summary.md").read_text()
    assert f"{run / 'rows' / '0000-h0'} is a symlink (-> {secret})" in summary  # row 0: stated, not drawn
    assert "row 1: no telemetry_*.csv" in summary  # row 1's linked telemetry file is not read either
    assert "root:" not in summary


def test_resume_refuses_a_run_folder_with_links_before_writing(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    run = make_run(tmp_path / "run", [("fp32", 50.0)])
    (run / "profile.yaml").write_text("name: x\nextends: smoke\n")
    (run / "rows").symlink_to(target)
    before = sorted(os.listdir(run))
    proc = edgebench("bench", "--resume", str(run))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"edgebench: error: {run / 'rows'} is a symlink (-> {target}); --resume never follows a "
                           "link out of a run folder: remove it (or fetch the run again)\n")
    assert sorted(os.listdir(run)) == before and list(target.iterdir()) == []  # nothing written, no lock taken
