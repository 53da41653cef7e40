"""`edgebench run` in a subprocess, its environment, and the one row it wrote: shared by the end-to-end tests."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO


def cli_env(cache: Path) -> dict:
    """This environment, with this checkout importable and its own artifact cache (one per test module)."""
    return {**os.environ, "PYTHONPATH": str(REPO), "EDGEBENCH_CACHE": str(cache)}


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    """`python -m edgebench run ARGS` from the repo root, its output captured (10 min at most)."""
    return subprocess.run([sys.executable, "-m", "edgebench", "run", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=600)


def one_row(out: Path) -> dict:
    """The single row of the single run folder under `out`."""
    (run_dir,) = [d for d in out.iterdir() if d.is_dir()]
    with open(run_dir / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    return row
