"""Run a planned sweep: for each config, artifacts -> prepare -> instances -> one result row.

One row is appended (and fsynced) as soon as it is known; a config that fails becomes a
`failed` row with its reason and the sweep goes on. Per-row details (latencies, telemetry,
artifact sidecars) go to runs/<run-id>/rows/<index>-<config_hash>/.

The loop only: pipeline/execute.py measures one config and hands over the parts of its row, results/row.py
assembles them (one writer per column), pipeline/model_cache.py holds what rows share.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.device.power_modes import power_mode_session
from edgebench.errors import EdgebenchError
from edgebench.pipeline.cooldown import Thermal
from edgebench.pipeline.execute import execute
from edgebench.pipeline.model_cache import ModelCache
from edgebench.pipeline.plan import PlannedRun
from edgebench.results.row import RowParts, Verdict, assemble_row, identity

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.results.store import ResultsStore

log = logging.getLogger("edgebench")


def new_run_id(device: str) -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S") + f"-{device}"


def run_sweep(
    planned: list[PlannedRun],
    profile: Profile,
    run_dir: Path,
    store: ResultsStore,
    models: ModelCache,
    on_row: Callable[[int, int, dict[str, Any]], None] | None = None,
    idle_power_w: float | None = None,
    on_start: Callable[[int, int, RunConfig], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every planned config not already done in `store`; returns the rows written now.

    Rows with a `power_mode` switch the Jetson's nvpmodel mode before they run (once per group) and the
    original mode and clocks are restored when the sweep ends, however it ends (edgebench.device.power_modes).
    With cooldown.enabled each row after the first waits for the idle temperature and clock (pipeline/cooldown)."""

    done = store.done_hashes()
    todo = [p.cfg.power_mode for p in planned if p.skip_reason is None and p.cfg.config_hash() not in done]
    with power_mode_session(todo, profile.power, profile.source) as power:
        return _run_rows(planned, profile, run_dir, store, models, on_row, idle_power_w, on_start, power)


def _run_rows(planned: list[PlannedRun], profile: Profile, run_dir: Path, store: ResultsStore, models: ModelCache,
              on_row: Callable[[int, int, dict[str, Any]], None] | None, idle_power_w: float | None,
              on_start: Callable[[int, int, RunConfig], None] | None, power: Any) -> list[dict[str, Any]]:
    done = store.done_hashes()
    next_index = len(store.rows())
    written: list[dict[str, Any]] = []
    thermal = Thermal(profile.cooldown, gpu=any(p.cfg.uses_gpu for p in planned))  # baseline before the first row
    for i, p in enumerate(planned):
        cfg = p.cfg
        if cfg.config_hash() in done:
            if on_row:
                on_row(i, len(planned), {"status": "resumed", "model": cfg.model, "label": cfg.label()})
            continue
        ident = identity(cfg, run_dir.name, next_index)
        row_dir = run_dir / "rows" / f"{next_index:04d}-{cfg.config_hash()}"
        if p.skip_reason is not None:
            parts = RowParts(ident, verdict=Verdict(skip_reason=p.skip_reason))
        else:
            if on_start:
                on_start(i, len(planned), cfg)
            parts = _measure(cfg, profile, models, row_dir, ident, idle_power_w, power, thermal)
        row = _assemble(parts, row_dir)
        store.append(row)
        written.append(row)
        next_index += 1
        if on_row:
            on_row(i, len(planned), row)
    return written


def _measure(cfg: RunConfig, profile: Profile, models: ModelCache, row_dir: Path, ident: dict[str, Any],
             idle_power_w: float | None, power: Any, thermal: Thermal) -> RowParts:
    """The parts of one measured config's row; a failure is a failed row's parts (the sweep goes on). The thermal
    part (cooldown before the row, temperatures at its start and end) is kept either way."""
    heat: dict[str, Any] = {}
    try:
        if (effective := power.switch(cfg.power_mode)) is not None:
            ident["power_mode"] = effective.name  # as nvpmodel -q reports it after the switch
        heat.update(thermal.before_row())
        try:
            parts = execute(cfg, profile, models, row_dir, idle_power_w)
        finally:
            heat.update(thermal.after_row())
        parts.identity = ident
        parts.thermal = heat
        return parts
    except EdgebenchError as exc:
        return RowParts(ident, thermal=heat, verdict=Verdict(failure=str(exc)))
    except Exception as exc:  # an internal bug must not cost the sweep its other rows
        return RowParts(ident, thermal=heat, verdict=Verdict(failure=_internal_error(exc, row_dir)))


def _assemble(parts: RowParts, row_dir: Path) -> dict[str, Any]:
    """The row of `parts`; a row that cannot be assembled (two writers of a column, a wrong type: a bug) is a
    failed row that says so, and the sweep goes on."""
    try:
        return assemble_row(parts)
    except ValueError as exc:
        return assemble_row(RowParts(parts.identity, verdict=Verdict(failure=_internal_error(exc, row_dir))))


def _internal_error(exc: BaseException, row_dir: Path) -> str:
    row_dir.mkdir(parents=True, exist_ok=True)
    (row_dir / "error.txt").write_text(traceback.format_exc())
    return f"internal error {type(exc).__name__}: {exc} (traceback in {row_dir / 'error.txt'})"
