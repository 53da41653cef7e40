"""Open-loop (fixed-rate) rows: offered vs achieved rate, queueing vs service time (the SLO verdict: results.row).

A fixed-rate instance stores, per inference, its scheduled arrival (start_ns), when it really began
(issued_ns) and its end (end_ns); see runner.worker.measure_fixed_rate. Latency is end - arrival, so
the row's latency percentiles (runner.metrics) already include time spent waiting; this module adds
how that latency splits into queueing (issued - arrival) and service (end - issued).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.run_config import RunConfig
    from edgebench.runner.metrics import Summary
    from edgebench.runner.orchestrator import InstanceResult


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
