"""Rows for the estimate tests (test_estimate.py, test_calibration_estimate.py): a RunConfig of a CPU ORT row, and an
earlier run folder holding measured rows whose speed and set-up the estimate reads."""

from __future__ import annotations

from pathlib import Path

from edgebench.config.run_config import RunConfig
from edgebench.results.store import ResultsStore


def cfg(batch: int, instances: int = 1, **kw) -> RunConfig:
    base = dict(model="resnet18", backend="ort", precision="fp32", batch=batch, placements=("cpu",) * instances,
                warmup_s=1.0, duration_s=2.0, max_duration_s=30.0, min_inferences=662)
    base.update(kw)
    return RunConfig(**base)


def earlier_run(runs: Path, name: str, rows: list[tuple[RunConfig, float, int, float]]) -> None:
    """A run folder with measured rows: (config, window_s, inferences, setup_s)."""
    store = ResultsStore(runs / name)
    for c, window_s, inferences, setup_s in rows:
        store.append({"model": c.model, "backend": c.backend, "precision": c.precision, "batch": c.batch,
                      "instances": c.instances, "mode": c.mode, "placement": c.placement, "status": "ok",
                      "config_hash": c.config_hash(), "window_s": window_s, "inferences": inferences,
                      "setup_s": setup_s, "threads_per_instance": c.threads_per_instance})
