"""How many fixed-rate streams does this device serve with p99 latency under an SLO?

"How many 30 fps cameras does this board serve": every stream is one instance (its own process, or a
thread in streams mode) with arrivals at a fixed rate (run.rate_hz); a probe with n streams is one
ordinary row (scenario slo-search) whose p99 latency counts queueing. A probe meets the SLO when the
row is `ok` and its p99 <= slo_ms (runner.load.slo_met). The search doubles n from the sweep's smallest
instance count until a probe misses (or run.max_streams is reached), then bisects between the last n
that met and the first that missed, assuming more streams never lower p99. Each probe is a row of
results.csv (fsynced as usual, so --resume reuses finished probes); the answer of every search is one
line of slo_search.csv in the run folder.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.backends.registry import get_backend
from edgebench.pipeline.plan import PlannedRun, gpu_sharing_skip_reason, threads_for
from edgebench.pipeline.sweep import run_sweep

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Env
    from edgebench.config.profile import Profile
    from edgebench.config.run_config import RunConfig
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.results.store import ResultsStore

SEARCH_COLUMNS = ("model", "backend", "precision", "batch", "device", "mode", "gpu_sharing", "rate_per_stream_hz",
                  "slo_ms", "max_streams_under_slo", "capped_at_max_streams", "probes")


@dataclass
class Probe:
    streams: int
    met: bool
    p99_ms: float | None
    status: str
    reason: str = ""


@dataclass
class SloResult:
    max_streams: int  # the most streams that met the SLO; 0 when even the first probe below it missed
    capped: bool  # every probe up to max_streams met it: the answer is a lower bound
    probes: list[Probe] = field(default_factory=list)  # in the order they ran


def search_max_streams(probe: Callable[[int], Probe], max_streams: int, start: int = 1) -> SloResult:
    """Exponential search from `start`, then bisection; each stream count is probed at most once."""
    seen: dict[int, Probe] = {}
    order: list[Probe] = []

    def met(n: int) -> bool:
        if n not in seen:
            seen[n] = probe(n)
            order.append(seen[n])
        return seen[n].met

    good, bad = 0, None
    n = max(1, min(start, max_streams))
    while True:
        if not met(n):
            bad = n
            break
        good = n
        if n >= max_streams:
            break
        n = min(2 * n, max_streams)
    if bad is not None:
        lo, hi = good, bad  # lo met (0: nothing below was probed yet), hi missed
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if met(mid):
                lo = mid
            else:
                hi = mid
        good = lo
    return SloResult(good, bad is None, order)


def probe_of(streams: int, row: dict[str, Any]) -> Probe:
    """A probe from a typed row: one just assembled, or one of store.records()."""
    return Probe(streams, row.get("slo_met") is True, row.get("latency_ms_p99"), str(row.get("status") or ""),
                 str(row.get("reason") or ""))


def probe_config(base: RunConfig, streams: int, threads: int) -> RunConfig:
    """The base config with `streams` copies of its first placement."""
    return dataclasses.replace(base, placements=(base.placements[0],) * streams, threads_per_instance=threads)


def search_key(cfg: RunConfig) -> str:
    """Configs that differ only in their instance count belong to one search."""
    return probe_config(cfg, 1, 1).config_hash()


def run_slo_searches(planned: list[PlannedRun], profile: Profile, env: Env, run_dir: Path, store: ResultsStore,
                     models: ModelCache, *, on_row: Callable[..., None] | None = None,
                     on_start: Callable[..., None] | None = None, idle_power_w: float | None = None,
                     report: Callable[[str], None] = print) -> list[SloResult]:
    """One search per distinct config of `planned` (instance counts folded); returns the answers."""

    groups: dict[str, list[RunConfig]] = {}
    for p in planned:
        groups.setdefault(search_key(p.cfg), []).append(p.cfg)
    max_streams = int(profile.run.get("max_streams", 64))
    results = []
    for cfgs in groups.values():
        base = cfgs[0]
        assert base.slo_ms is not None and base.rate_hz is not None
        start = min(c.instances for c in cfgs)

        def probe(n: int, base: RunConfig = base) -> Probe:
            cfg = probe_config(base, n, threads_for(profile, n, env.cpu_count))
            skip = get_backend(cfg.backend).supports(cfg, env) or gpu_sharing_skip_reason(cfg)
            written = run_sweep([PlannedRun(cfg, skip)], profile, run_dir, store, models, on_row=on_row,
                                idle_power_w=idle_power_w, on_start=on_start)
            if written:
                return probe_of(n, written[0])
            done = [r for r in store.records() if r["config_hash"] == cfg.config_hash()]
            return probe_of(n, done[-1]) if done else Probe(n, False, None, "missing", "no row")

        result = search_max_streams(probe, max_streams, start)
        results.append(result)
        _append_search(run_dir / "slo_search.csv", base, result)
        bound = "at least " if result.capped else ""
        report(f"edgebench: {base.model}/{base.backend}/{base.precision}/b{base.batch} on {base.placements[0]}: "
               f"{bound}{result.max_streams} streams of {base.rate_hz:g}/s keep p99 <= {base.slo_ms:g} ms "
               f"(probes: {describe_probes(result.probes)})")
    return results


def describe_probes(probes: list[Probe]) -> str:
    return ", ".join(f"{p.streams}:{'met' if p.met else 'missed'}"
                     f"{f' p99={p.p99_ms:.3g}ms' if p.p99_ms is not None else ''}"
                     f"{'' if p.status == 'ok' else f' ({p.status})'}" for p in probes)


def _append_search(path: Path, base: RunConfig, result: SloResult) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(SEARCH_COLUMNS)
        w.writerow([base.model, base.backend, base.precision, base.batch, base.placements[0], base.mode,
                    base.gpu_sharing, base.rate_hz, base.slo_ms, result.max_streams, str(result.capped).lower(),
                    describe_probes(result.probes)])
