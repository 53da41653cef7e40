"""Run a planned sweep: for each config, artifacts -> prepare -> instances -> one result row.

One row is appended (and fsynced) as soon as it is known; a config that fails becomes a
`failed` row with its reason and the sweep goes on. Per-row details (latencies, telemetry,
artifact sidecars) go to runs/<run-id>/rows/<index>-<config_hash>/.

The loop only: pipeline/execute.py measures one config and hands over the facts of its row, pipeline/row_steps.py
computes the row from them (one step per column), pipeline/model_cache.py holds what rows share.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import shutil
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.atomic_files import write_bytes_atomic
from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.device.power_modes import power_mode_session
from edgebench.errors import EdgebenchError, exc_text
from edgebench.file_sizes import tree_bytes
from edgebench.pipeline.cooldown import Thermal
from edgebench.pipeline.disk_full import disk_full_cause, disk_full_error
from edgebench.pipeline.execute import execute
from edgebench.pipeline.model_cache import ModelCache
from edgebench.pipeline.plan import PlannedRun
from edgebench.pipeline.row_steps import RowFacts, build_row
from edgebench.results.row import Verdict, identity
from edgebench.runner.warm_pool import WarmPool, block_needs, pool_key

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
    session: SweepSession | None = None,
    workers_ahead: int = 0,
    workers_kept: int = 0,
) -> list[dict[str, Any]]:
    """Run every planned config not already done in `store`; returns the rows written now.

    `workers_ahead`: the warm workers the caller's rows after these will need (the SLO search: a count's repeats,
    each in processes that never ran that configuration); the pool keeps and primes that many, where the plan's own
    blocks need fewer (warm_pool.block_needs sees only this call's rows); `workers_kept`: idle workers kept after
    these rows though not started with them.

    With `run.workers: warm` the rows run in warm worker processes (runner/warm_pool.py): the session's pool when
    the caller keeps a session across calls (the adaptive and the SLO search), else one for this call, retired when
    it ends, however it ends.

    Rows with a `power_mode` switch the Jetson's nvpmodel mode before they run (once per group) and the
    original mode and clocks are restored when the sweep ends, however it ends (edgebench.device.power_modes).
    With cooldown.enabled each row after the first waits for the idle temperature and clock (pipeline/cooldown)."""

    if session is not None:  # the caller's (a search runs its picks or probes in one session)
        return _run_rows(planned, profile, run_dir, store, models, on_row, idle_power_w, on_start, session,
                         workers_ahead, workers_kept)
    with sweep_session(planned, profile, store) as own:
        return _run_rows(planned, profile, run_dir, store, models, on_row, idle_power_w, on_start, own,
                         workers_ahead, workers_kept)


@dataclass
class SweepSession:
    """What the rows of one sweep share across calls of run_sweep: the power-mode session (modes restored when it
    ends), the worker pool, the thermal baseline taken before the first row (cooldown waits for it), and where the
    next row's wall time starts (its between_rows phase)."""
    power: Any
    pool: WarmPool | None
    thermal: Thermal
    since: list[float] = field(default_factory=lambda: [time.monotonic()])


@contextlib.contextmanager
def sweep_session(planned: list[PlannedRun], profile: Profile, store: ResultsStore) -> Iterator[SweepSession]:
    """One session for `planned` (every power mode it may switch to is checked up front), however many run_sweep
    calls measure its rows: the adaptive search and the SLO search keep one, so cooldown, the power mode, the warm
    pool and the phases work across their picks and probes as in a grid sweep."""
    done = store.done_hashes()
    todo = [p.cfg.power_mode for p in planned if p.skip_reason is None and p.cfg.config_hash() not in done]
    with power_mode_session(todo, profile.power.model_dump(), profile.source) as power, \
            worker_pool(profile) as workers:
        thermal = Thermal(profile.cooldown.model_dump(), gpu=any(p.cfg.uses_gpu for p in planned))  # baseline first
        yield SweepSession(power, workers, thermal)


@contextlib.contextmanager
def worker_pool(profile: Profile) -> Iterator[WarmPool | None]:
    """With run.workers: warm, a pool retired on the way out; else None (fresh processes for every row). _run_rows
    tells the pool what each block of rows of one key needs (warm_pool.block_needs)."""
    if profile.run.workers != "warm":
        yield None
        return
    with WarmPool(fork_from_server=profile.run.worker_start == "forkserver") as pool:
        yield pool


def _run_rows(planned: list[PlannedRun], profile: Profile, run_dir: Path, store: ResultsStore, models: ModelCache,
              on_row: Callable[[int, int, dict[str, Any]], None] | None, idle_power_w: float | None,
              on_start: Callable[[int, int, RunConfig], None] | None,
              session: SweepSession, workers_ahead: int = 0, workers_kept: int = 0) -> list[dict[str, Any]]:
    power, pool, thermal, since = session.power, session.pool, session.thermal, session.since
    done = store.done_hashes()
    next_index = len(store.rows())
    written: list[dict[str, Any]] = []
    needs = block_needs([p.cfg if p.skip_reason is None and p.cfg.config_hash() not in done else None
                         for p in planned])
    for i, p in enumerate(planned):
        cfg = p.cfg
        if cfg.config_hash() in done:
            if on_row:
                on_row(i, len(planned), {"status": "resumed", "model": cfg.model, "label": cfg.label(),
                                         "placement": cfg.placement})
            continue
        ident = identity(cfg, run_dir.name, next_index)
        row_dir = run_dir / "rows" / f"{next_index:04d}-{cfg.config_hash()}"
        row_dir_existed = row_dir.exists()
        try:
            if p.skip_reason is not None:
                facts = RowFacts(ident, verdict=Verdict(skip_reason=p.skip_reason))
            else:
                if on_start:
                    on_start(i, len(planned), cfg)
                if pool is not None and (key := pool_key(cfg)) is not None:
                    pool.expect(key, max(needs[i], workers_ahead), workers_kept)
                facts = _measure(cfg, profile, models, row_dir, ident, idle_power_w, power, thermal, pool, since)
            try:
                row = _assemble(facts, row_dir)
            finally:
                if facts.run is not None:  # the row steps read the instances' timestamp files (load, slo): now gone
                    facts.run.discard_stamps()
            store.append(row)  # whole line or nothing (results/store.py)
        except Exception as exc:
            full = disk_full_cause(exc)
            if full is None:
                raise
            # the chunk files the row's instances had written on the results disk when it filled (pipeline/execute.py)
            unfinished = int(getattr(full, "unfinished_stamps_bytes", 0))
            if not row_dir_existed:  # the row in flight is not recorded: none of its files stay as if complete
                unfinished += tree_bytes(row_dir)
                shutil.rmtree(row_dir, ignore_errors=True)
            raise disk_full_error(full, run_dir, store.path, rows_kept=next_index,
                                  unfinished_bytes=unfinished) from None
        written.append(row)
        next_index += 1
        if on_row:
            on_row(i, len(planned), row)
    return written


def _measure(cfg: RunConfig, profile: Profile, models: ModelCache, row_dir: Path, ident: dict[str, Any],
             idle_power_w: float | None, power: Any, thermal: Thermal, pool: WarmPool | None,
             since: list[float]) -> RowFacts:
    """The facts of one measured config's row; a failure is a failed row's facts (the sweep goes on). The thermal
    facts (cooldown before the row, temperatures at its start and end) are kept either way. A full disk is raised
    (the sweep stops: disk_full_error), never a failed row. `since[0]`: where this row's wall time starts (the
    previous row's files written); set to where the next one's starts once this row's files are written."""
    heat: dict[str, Any] = {}
    try:
        if (effective := power.switch(cfg.power_mode)) is not None:
            ident["power_mode"] = effective.name  # as nvpmodel -q reports it after the switch
        heat.update(thermal.before_row())
        try:
            facts = execute(cfg, profile, models, row_dir, idle_power_w, pool, since_s=since[0])
        finally:
            since[0] = time.monotonic()
            heat.update(thermal.after_row())
        facts.identity = ident
        facts.thermal = heat
        return facts
    except EdgebenchError as exc:
        if disk_full_cause(exc) is not None:
            raise
        return RowFacts(ident, thermal=heat, verdict=Verdict(failure=str(exc)))
    except Exception as exc:  # an internal bug must not cost the sweep its other rows
        if disk_full_cause(exc) is not None:
            raise
        return RowFacts(ident, thermal=heat, verdict=Verdict(failure=_internal_error(exc, row_dir)))


def _assemble(facts: RowFacts, row_dir: Path) -> dict[str, Any]:
    """The row of `facts`; a row that cannot be assembled (a step wrote a column it does not own, a wrong type: a
    bug) is a failed row that says so, and the sweep goes on."""
    try:
        return build_row(facts)
    except ValueError as exc:
        return build_row(RowFacts(facts.identity, verdict=Verdict(failure=_internal_error(exc, row_dir))))


def _internal_error(exc: BaseException, row_dir: Path) -> str:
    row_dir.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(row_dir / "error.txt", traceback.format_exc().encode())
    return f"internal error {exc_text(exc)} (traceback in {row_dir / 'error.txt'})"
