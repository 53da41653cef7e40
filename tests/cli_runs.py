"""`edgebench run` in a subprocess and the one row it wrote: shared by the end-to-end tests of external ONNX files."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO


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
