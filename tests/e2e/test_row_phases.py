"""Per-row set-up (issue 19), through the CLI: every row's phases in row.json, setup_s and the probe column in
results.csv, one probe reused across batches, and the report's "time outside measurement windows"."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from cli_runs import cli, cli_env, null_profile, read_rows
from repo_paths import REPO


def test_rows_record_phases_reuse_one_probe_and_the_report_sums_setup(tmp_path):
    env = cli_env(tmp_path / "cache")
    profile = null_profile(tmp_path, "phases", sweep={"batches": [1, 2]}, run={"accuracy_samples": 4})
    t0 = time.monotonic()
    out = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / "runs"), timeout=300)
    cli_wall_s = time.monotonic() - t0
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir = next((tmp_path / "runs").iterdir())
    rows = read_rows(run_dir / "results.csv")
    assert [r["batch"] for r in rows] == ["1", "2"]
    # one probe process for both batches; the second row names the first's
    assert rows[0]["probe"].startswith("row 0 (batch 1, pid ") and rows[1]["probe"] == rows[0]["probe"]
    assert rows[0]["accuracy_cosine_min"] and rows[1]["accuracy_cosine_min"]
    assert all(r["threads_note"].startswith("auto: ") and "cores //" in r["threads_note"] for r in rows)
    docs = [json.loads(p.read_text()) for p in sorted((run_dir / "rows").glob("*/row.json"))]
    for row, doc in zip(rows, docs):
        ph = doc["phases"]
        assert {"export", "precision", "prepare", "probe", "spawn", "load", "warmup", "window", "collect",
                "accuracy", "total", "setup"} <= set(ph)
        assert ph["window"] >= 0.3 and ph["total"] > ph["window"] + ph["warmup"]
        assert abs(ph["setup"] - (ph["total"] - ph["window"] - ph["warmup"])) < 1e-3
        # issue 27: the row's setup_s is row.json's, and the phases add up to the row's wall time
        assert abs(float(row["setup_s"]) - ph["setup"]) < 1e-6
        named = sum(v for k, v in ph.items() if k not in ("total", "setup"))
        assert abs(named - ph["total"]) < 1e-3 * len(ph), ph
        assert {"between_rows", "write", "unaccounted"} <= set(ph)
    # the rows' totals are the sweep's wall time but for the CLI's start (imports, plan) and the last row's append
    totals = sum(d["phases"]["total"] for d in docs)
    assert totals <= cli_wall_s and cli_wall_s - totals < 15, (totals, cli_wall_s)
    assert docs[0]["probe"]["pid"] and docs[1]["phases"]["probe"] < docs[0]["phases"]["probe"]  # reused: no process
    rep = subprocess.run([sys.executable, "-m", "edgebench", "report", str(run_dir), "--out", str(tmp_path / "rep"),
                          "--formats", "png"], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert rep.returncode == 0, rep.stderr[-2000:]
    summary = Path(tmp_path / "rep" / "summary.md").read_text()
    section = summary.split("## Time outside measurement windows", 1)[1].split("## ", 1)[0]
    line = next(x for x in section.splitlines() if x.startswith(f"| {run_dir.name}") or "| 2 |" in x)
    cells = [c.strip() for c in line.strip("|").split("|")]
    total, windows, warmup, outside = map(float, cells[2:6])
    assert cells[1] == "2" and abs(total - (windows + warmup + outside)) < 0.2
    assert abs(outside - sum(d["phases"]["setup"] for d in docs)) < 0.2
