"""benchmarks/stability_replay.py on the files the CLI writes: it recomputes each row's stability from its
latencies.npz exactly as the row was judged, and tells the old rule (tolerance alone) from the interval's."""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, cli_env, null_profile, read_rows
from repo_paths import REPO

from edgebench.results.latency_file import write_latencies

SCRIPT = REPO / "benchmarks" / "stability_replay.py"


@dataclass
class Instance:
    instance: int
    placement: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    issued_ns: np.ndarray | None = None


def jittery_loop(seed: int) -> Instance:
    """A stationary closed loop of ~300 lognormal inferences (5 ms mean, cv 1) in 1.5 s."""
    rng = np.random.default_rng(seed)
    took = rng.lognormal(-np.log(2) / 2, np.sqrt(np.log(2)), 400) * 5e6
    starts = np.concatenate([[0.0], np.cumsum(took + 20_000)[:-1]])
    keep = starts + took <= 1.5e9
    return Instance(0, "cpu", starts[keep].astype(np.int64), (starts + took)[keep].astype(np.int64))


@pytest.fixture(scope="module")
def null_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("replay")
    profile = null_profile(folder, "replay", sweep={"option_sets": [{"sleep_s": 0.002}]},
                           telemetry={"samplers": ["host"]})
    done = cli(cli_env(folder / "cache"), "bench", "--device", str(profile), "--out", str(folder / "runs"))
    assert done.returncode == 0, done.stderr
    (run_dir,) = (folder / "runs").iterdir()
    return run_dir


def replay(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_replay_reproduces_the_recorded_verdict_and_numbers(null_run, tmp_path):
    out = tmp_path / "replay.csv"
    printed = replay(str(null_run), "--csv", str(out)).stdout
    (recorded,) = read_rows(null_run / "results.csv")
    (row,) = read_rows(out)
    assert float(row["stability_pct"]) == pytest.approx(float(recorded["stability_pct"]), rel=1e-9)
    assert float(row["bound_pct"]) == pytest.approx(float(recorded["stability_bound_pct"]), rel=1e-9)
    assert row["new_status"] == recorded["status"]
    assert 100 < int(row["inferences"]) < 200  # ~0.3 s of 2 ms sleeps
    assert f"ok rows: old rule {1 if row['old_status'] == 'ok' else 0}/1" in printed


def test_replay_tells_the_two_rules_apart_on_a_jittery_row(null_run, tmp_path):
    """The row's timestamps replaced by a stationary jittery loop that the tolerance alone calls unstable: the
    replay says old UNSTABLE, new stable, and counts the row ok only under the new rule."""
    from edgebench.runner.metrics import summarize

    seed = next(s for s in range(50) if summarize([jittery_loop(s)], 1, 5).stability_pct > 20.0)
    run_dir = tmp_path / null_run.name
    subprocess.run(["cp", "-r", str(null_run), str(run_dir)], check=True)
    (row_dir,) = (run_dir / "rows").iterdir()
    write_latencies(row_dir / "latencies.npz", [jittery_loop(seed)])
    out = tmp_path / "replay.csv"
    printed = replay(str(run_dir), "--csv", str(out)).stdout
    (row,) = list(csv.DictReader(out.open()))
    assert (row["old_stable"], row["new_stable"], row["old_status"], row["new_status"]) == ("False", "True",
                                                                                           "invalid", "ok")
    assert float(row["stability_pct"]) > 20.0 > 15.0 and float(row["bound_pct"]) > float(row["stability_pct"])
    assert "UNSTABLE   stable  invalid -> ok (recorded " in printed
    assert "ok rows: old rule 0/1 (0%), new rule 1/1 (100%)" in printed
