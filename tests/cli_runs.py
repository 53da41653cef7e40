"""The CLI in a subprocess, its environment, a null-backend profile to give it, and the one row it wrote: shared by
the end-to-end tests."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from repo_paths import REPO

# a null row's run section: short windows, no accuracy pass (null_profile's defaults)
NULL_RUN = {"warmup_s": 0.1, "duration_s": 0.3, "max_duration_s": 3.0, "min_inferences": 10, "accuracy_samples": 0}


def cli_env(cache: Path) -> dict:
    """This environment, with this checkout importable and its own artifact cache (one per test module)."""
    return {**os.environ, "PYTHONPATH": str(REPO), "EDGEBENCH_CACHE": str(cache)}


def shared_cache_env(tmp_path_factory: Any) -> dict:
    """cli_env with the EDGEBENCH_CACHE this session was given (CI shares one), else a fresh one; output
    unbuffered, so a test reading a running CLI's lines gets them as they are printed."""
    cache = os.environ.get("EDGEBENCH_CACHE") or str(tmp_path_factory.mktemp("cache"))
    return {**cli_env(Path(cache)), "PYTHONUNBUFFERED": "1"}


def cli(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m edgebench ARGS` from the repo root, its output captured."""
    return subprocess.run([sys.executable, "-m", "edgebench", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=timeout)


def null_profile(folder: Path, name: str, *, sweep: dict | None = None, run: dict | None = None,
                 **sections: Any) -> Path:
    """folder/NAME.yaml: a profile extending smoke whose rows run the null backend on tiny_cnn (fp32, batch 1, one
    instance: no framework in the measurement) in short windows (NULL_RUN). `sweep` and `run` add to or replace
    those fields; other sections (telemetry) are written as given."""
    data = {"name": name, "extends": "smoke",
            "sweep": {"backends": ["null"], "precisions": ["fp32"], "batches": [1], "instances": [1], **(sweep or {})},
            "run": {**NULL_RUN, **(run or {})}, **sections}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    """`python -m edgebench run ARGS` from the repo root, its output captured (10 min at most)."""
    return subprocess.run([sys.executable, "-m", "edgebench", "run", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=600)


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every line of a CSV the CLI wrote (results.csv, slo_search.csv, ...) as a dict."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def one_row(out: Path) -> dict:
    """The single row of the single run folder under `out`."""
    (run_dir,) = [d for d in out.iterdir() if d.is_dir()]
    (row,) = read_rows(run_dir / "results.csv")
    return row
