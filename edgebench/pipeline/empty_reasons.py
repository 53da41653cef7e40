"""Why a measured row leaves a column empty that a reader could otherwise take for an answer (issue 21).

The empty_reasons column is the last row step (pipeline/row_steps.py; results.row.why_empty states the entries);
this module gives it what only the pipeline knows: why the sweep has no idle baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.results.row import why_empty


def idle_absent(profile: Profile) -> str:
    """Why the sweep has no idle baseline (pipeline.idle.idle_baseline gave none)."""
    if profile.telemetry.idle_baseline_s <= 0:
        return "idle baseline off (telemetry.idle_baseline_s = 0)"
    return "no power measurable for an idle baseline before the sweep"


def empty_reasons(row: dict[str, Any], cfg: RunConfig, profile: Profile, idle_power_w: float | None,
                  sources: Sequence[str]) -> str | None:
    """'; '-joined reasons for the empty columns of a measured row, or None when none needs one: results.row's
    empty_reasons step for a row measured with `sources` and an idle baseline of `idle_power_w` W (None: none)."""
    return why_empty(row, sources, idle_absent(profile) if idle_power_w is None else None)
