"""Issue 28 as a user meets it: a row whose window cannot back a p99 is ok with the p99 empty and its reason; an
old run folder's rows judged by the retired p99 rule are measured again on --resume; a plan that measures nothing
exits 4 without a run folder; --version; a usage error is one line."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli, null_profile, read_rows, shared_cache_env
from repo_paths import REPO

from edgebench.commands.options import EXIT_NOTHING_MEASURED


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return shared_cache_env(tmp_path_factory)


def slow_null_profile(tmp_path: Path) -> Path:
    """One null-backend row of 10 ms inferences capped at a 0.6 s window: ~60 inferences, far from a p99's 662."""
    return null_profile(tmp_path, "slownull", sweep={"option_sets": [{"sleep_s": 0.01}]},
                        run={"duration_s": 0.5, "max_duration_s": 0.6, "min_inferences": 662,
                             "stability_tolerance_pct": 60.0})


def test_a_window_too_short_for_a_p99_gives_an_ok_row_with_the_p99_empty_and_its_reason_then_resume(env, tmp_path):
    out = cli(env, "bench", "--device", str(slow_null_profile(tmp_path)), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    (row,) = read_rows(run_dir / "results.csv")
    assert row["status"] == "ok", row["reason"]
    assert 10 <= int(row["inferences"]) < 64
    assert row["latency_ms_p50"] and not row["latency_ms_p90"] and not row["latency_ms_p99"]
    assert row["throughput_ips"] and "inferences" not in row["reason"]
    assert ("latency_ms_p90, latency_ms_p95, latency_ms_p99: " + row["inferences"] + " inferences in the window, "
            "p90 needs 64, p95 needs 130, p99 needs 662") in row["empty_reasons"]
    assert "the window ran to run.max_duration_s 0.6 s (--max-duration)" in row["empty_reasons"]

    # the same folder as an earlier edgebench wrote it: that row invalid by the retired rule (its reason replaced
    # whole: on a busy host an ok row's reason holds a note, so no text of the row is assumed)
    with open(run_dir / "results.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)
    rows[0].update(status="invalid", reason="only 57 inferences in the window; p99 needs 662")
    with open(run_dir / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    dry = cli(env, "bench", "--resume", str(run_dir), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "resume: 0 of 1 configurations already done; 1 would be measured" in dry.stdout
    assert "resume: 1 of them were invalid by the retired rule" in dry.stdout
    resumed = cli(env, "bench", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 row(s) were invalid by the retired rule" in resumed.stdout
    (again,) = read_rows(run_dir / "results.csv")
    assert again["status"] == "ok" and not again["latency_ms_p99"]
    with open(run_dir / "attempts.csv", newline="") as fh:
        (attempt,) = list(csv.DictReader(fh))
    assert attempt["status"] == "invalid" and "p99 needs 662" in attempt["reason"]


def test_a_plan_that_measures_nothing_exits_4_with_why_and_writes_no_run_folder(env, tmp_path):
    out = cli(env, "bench", "--device", "smoke", "--precisions", "fp16", "--out", str(tmp_path / "runs"))
    assert out.returncode == EXIT_NOTHING_MEASURED == 4, out.stdout + out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("edgebench: nothing to measure: all 4 configuration(s) are skipped: 4x ")
    assert "fp16 needs a GPU provider" in line
    assert not (tmp_path / "runs").exists()
    dry = cli(env, "bench", "--device", "smoke", "--precisions", "fp16", "--dry-run")
    assert dry.returncode == 0 and "nothing to measure" in dry.stderr  # the plan printed; it says so


def test_version():
    from edgebench import __version__

    out = subprocess.run([sys.executable, "-m", "edgebench", "--version"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"edgebench {__version__}"


@pytest.mark.parametrize("args, flag", [(["bench", "--batches", "0"], "--batches"),
                                        (["run", "--model", "tiny_cnn", "--batch", "x"], "--batch"),
                                        (["bench", "--mode", "threads"], "--mode"),
                                        (["run"], "--model")])
def test_every_usage_error_is_one_line(args, flag):
    out = subprocess.run([sys.executable, "-m", "edgebench", *args], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("edgebench") and ": error: " in line and flag in line and "--help" in line
