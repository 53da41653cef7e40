"""One probe per model x precision x backend x option set, reused by every row it applies to.

runner/probe.py runs the probe process; this module decides when a row needs one, reuses an earlier row's result
when nothing it depends on changed (the instance count does not; the batch does only for a kernel profile or a
TensorRT layer profile, which run once per precision x batch),
and turns it into the row's `probe` column and reason notes. A probe that failed is not kept: the next row tries
again.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from edgebench.config.run_config import RunConfig
from edgebench.runner.probe import ProbeResult, probe_key, probe_wanted, run_probe


def layer_profile_runs(cfg: RunConfig, prepared: Any) -> int:
    """The trt backend's layer_profile option (runs to profile), else 0."""
    if cfg.backend != "trt":
        return 0
    return int(prepared.options.get("layer_profile") or 0)


def row_probe(cfg: RunConfig, prepared: Any, accuracy_inputs: Any, cache: dict, row_dir: Path, *,
              work_root: str | None = None) -> ProbeResult | None:
    """The probe result for this row, from `cache` or a new probe process; None when the row needs none.
    `work_root`: where a new probe's work folder goes (run_probe; None: the system temp folder)."""
    runs = layer_profile_runs(cfg, prepared)
    if not probe_wanted(cfg, accuracy_inputs, runs):
        return None
    key = probe_key(cfg, prepared, accuracy_inputs, runs)
    found = cache.get(key)
    if found is not None:
        if found.layers_csv:
            row_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found.layers_csv, row_dir / "layers.csv")
        return found
    result = run_probe(cfg, prepared, accuracy_inputs, layer_profile_runs=runs, keep_dir=str(row_dir),
                       work_root=work_root)
    result.label = f"{_row_name(row_dir)} (batch {cfg.batch}, pid {result.pid})"
    if not result.notes:
        cache[key] = result
    return result


def probe_fields(result: ProbeResult | None, reason: str) -> dict[str, Any]:
    """The row's probe column and, when the probe failed somewhere, the reason with its notes appended."""
    if result is None:
        return {}
    fields: dict[str, Any] = {"probe": result.label}
    if result.notes:
        fields["reason"] = "; ".join(r for r in (reason, *result.notes) if r)
    return fields


def _row_name(row_dir: Path) -> str:
    head = row_dir.name.split("-", 1)[0]
    return f"row {int(head)}" if head.isdigit() else row_dir.name
