"""Why a measured row leaves a column empty that a reader could otherwise take for an answer (issue 21).

`throttled` empty means "not checked", never "not throttled" (that is `false`); `power_mode`, `gpu_sharing` and
`power_w_idle` are empty for reasons of the sweep, not of the measurement. Each such absence is one
'column[, column]: why' entry of the row's `empty_reasons` column. Power and energy state theirs in
`energy_source`, percentiles without enough inferences in `reason`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig

THROTTLE_SOURCES = ("nvml", "jetson_throttle")


def empty_reasons(row: dict[str, Any], cfg: RunConfig, profile: Profile, idle_power_w: float | None,
                  sources: Sequence[str]) -> str | None:
    """'; '-joined reasons for the empty columns of a measured row, or None when none needs one."""
    out = []
    if row.get("throttled") is None:
        ran = ", ".join(sources) or "none"
        out.append(f"throttled, throttle_reasons: not checked (this row's samplers {ran} do not read throttling, "
                   f"{' and '.join(THROTTLE_SOURCES)} do)")
    if row.get("power_mode") is None:
        out.append("power_mode: not switched by this sweep (power.modes not set), system.json records the mode")
    if row.get("gpu_sharing") is None:
        out.append("gpu_sharing: no CUDA placement in this row")
    if row.get("power_w_idle") is None:
        if row.get("power_w_mean") is None:
            why = "no power measured in this row (energy_source says why)"
        elif idle_power_w is None:
            why = ("idle baseline off (telemetry.idle_baseline_s = 0)" if profile.telemetry["idle_baseline_s"] <= 0
                   else "no power measurable for an idle baseline before the sweep")
        else:
            why = "the idle baseline was measured on GPU 0 only; this row's power covers other GPUs"
        out.append(f"power_w_idle, energy_per_inference_dynamic_mj: {why}")
    return "; ".join(out) or None
