"""Open-loop (fixed-rate) rows: offered vs achieved rate, queueing vs service time, the SLO verdict.

A fixed-rate instance stores, per inference, its scheduled arrival (start_ns), when it really began
(issued_ns) and its end (end_ns); see runner.worker.measure_fixed_rate. Latency is end - arrival, so
the row's latency percentiles (runner.metrics) already include time spent waiting; this module adds
how that latency splits into queueing (issued - arrival) and service (end - issued), and the verdict of
an SLO probe (slo_fields): met, missed, or unmeasured when the window holds too few inferences for a p99
judgement (never `missed` for that reason alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from edgebench.runner.arrivals import SEEDED, arrival_seed_of
from edgebench.runner.metrics import MIN_INFERENCES_FOR

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig
    from edgebench.runner.metrics import Summary
    from edgebench.runner.orchestrator import InstanceResult


P99_FLOOR = MIN_INFERENCES_FOR["p99"]  # inferences a p99 judgement needs (662, MLPerf's single-stream floor)
# inferences over the SLO that put the p99 of a P99_FLOOR-inference window over it whatever the others took
# (numpy's p99 interpolates between sorted values floor(0.99 (n-1)) and the next): 8 of 662
MISSES_FOR_P99_OVER = P99_FLOOR - math.floor(0.99 * (P99_FLOOR - 1))
SLO_VERDICTS = ("met", "missed", "unmeasured", "failed")  # "failed": the probe did not run to the end


def slo_met(p99_ms: float | None, slo_ms: float, status: str) -> bool:
    """A probe meets its SLO only when it is a valid measurement whose p99 was measured and is <= slo_ms."""
    return status == "ok" and p99_ms is not None and p99_ms <= slo_ms


def slo_verdict(p99_ms: float | None, slo_ms: float, status: str, inferences: int, over_slo: int,
                reason: str = "") -> tuple[str, str]:
    """(verdict, why) of one SLO probe; `why` is empty when the p99 speaks for itself.

    met         the row is ok and its p99 <= slo_ms
    missed      its p99 > slo_ms (a measured p99 over the SLO is a miss even in an invalid row), or, without a
                p99, at least MISSES_FOR_P99_OVER inferences exceeded the SLO: the p99 of a window of
                P99_FLOOR inferences holding them is over it (an overloaded device completes few inferences)
    unmeasured  too few inferences for a p99 and too few over the SLO to call it missed, or an invalid row
                whose p99 is under the SLO: neither met nor missed, and the search treats it as neither
    """
    if status == "failed":
        return "failed", ""
    if p99_ms is not None:
        if p99_ms > slo_ms:
            return "missed", ""
        if status == "ok":
            return "met", ""
        return "unmeasured", f"slo: p99 {p99_ms:.3g} ms is under {slo_ms:g} ms but the row is {status} ({reason})"
    if over_slo >= MISSES_FOR_P99_OVER:
        return "missed", (f"slo: missed without a p99: {over_slo} of {inferences} inferences took longer than "
                          f"{slo_ms:g} ms; {MISSES_FOR_P99_OVER} such among the {P99_FLOOR} a p99 needs put it over")
    return "unmeasured", (f"slo: unmeasured: {inferences} inferences in the window, a p99 needs {P99_FLOOR} "
                          f"({over_slo} over {slo_ms:g} ms); lengthen run.max_duration_s")


def slo_fields(cfg: RunConfig, instances: Sequence[InstanceResult], summary: Summary, status: str,
               reason: str) -> tuple[dict[str, Any], str]:
    """The slo_* columns of an slo-search row and the note its reason gets (empty when there is none)."""
    import numpy as np

    assert cfg.slo_ms is not None
    over = 0
    for r in instances:
        if len(r.start_ns) == 0:
            continue
        inside = (r.start_ns >= summary.window_start_ns) & (r.end_ns <= summary.window_end_ns)
        over += int(np.count_nonzero((r.end_ns[inside] - r.start_ns[inside]) > cfg.slo_ms * 1e6))
    verdict, why = slo_verdict(summary.latency_ms.get("p99"), cfg.slo_ms, status, summary.inferences, over, reason)
    met = {"met": True, "missed": False, "failed": False}.get(verdict)
    return {"slo_ms": cfg.slo_ms, "slo_met": met, "slo_verdict": verdict}, why


def arrival_fields(cfg: RunConfig) -> dict[str, Any]:
    """`arrival` (the arrival model of a fixed-rate row, 'closed' for a closed loop) and `arrival_seed` (the seed
    its phases / gaps were drawn from; empty for even and aligned, which draw nothing, and for a closed loop)."""
    if cfg.rate_hz is None:
        return {"arrival": "closed", "arrival_seed": None}
    seed = arrival_seed_of(cfg.seed, cfg.repeat) if cfg.arrival in SEEDED else None
    return {"arrival": cfg.arrival, "arrival_seed": seed}


def load_fields(cfg: RunConfig, instances: Sequence[InstanceResult], summary: Summary) -> dict[str, Any]:
    """Row fields of a fixed-rate / slo-search row (empty dict for closed-loop rows)."""
    import numpy as np

    if cfg.rate_hz is None:
        return {}
    offered = cfg.rate_hz * cfg.instances
    fields: dict[str, Any] = {
        "rate_per_stream_hz": cfg.rate_hz,
        "offered_rate_hz": offered,
        "achieved_rate_hz": summary.inferences / summary.window_s if summary.window_s > 0 else None,
    }
    queue, service = [], []
    for r in instances:
        if r.issued_ns is None or len(r.start_ns) == 0:
            continue
        inside = (r.start_ns >= summary.window_start_ns) & (r.end_ns <= summary.window_end_ns)
        queue.append((r.issued_ns[inside] - r.start_ns[inside]) / 1e6)
        service.append((r.end_ns[inside] - r.issued_ns[inside]) / 1e6)
    if queue and sum(len(q) for q in queue):
        q, sv = np.concatenate(queue), np.concatenate(service)
        fields["queue_ms_p99"] = float(np.percentile(q, 99))
        fields["service_ms_p50"] = float(np.percentile(sv, 50))
    if cfg.slo_ms is not None:
        fields["slo_ms"] = cfg.slo_ms
    return fields
