"""From per-inference timestamps to throughput, latency percentiles, stability, and a validity verdict.

Throughput counts only inferences entirely inside the overlap window
[latest first-inference start across instances, earliest last-inference end], the span in which
every instance was running, so staggered starts and stops cannot inflate it.

Stability (issue 34): a closed-loop row's throughput is unstable when some sub-window's rate is further from the
window mean than run.stability_tolerance_pct AND further than the row's own per-inference jitter explains (see
`jitter_sigma_pct`). A tolerance alone cannot tell a window of few, jittery inferences per sub-window (~40-80 in the
1.5 s eager-PyTorch windows of the H100 grid) from a real change of speed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from edgebench.runner.backlog import growth_reason
from edgebench.runner.exact_rank import GroupBounds, numpy_percentile, order_statistics, percentile_ranks
from edgebench.runner.jitter_bound import jitter_sigma_pct
from edgebench.runner.stamps import Stamps
from edgebench.runner.window_stamps import inside_chunks, overlap_window, stamps_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.runner.backlog import LatencyTrend

PERCENTILES = (50, 90, 95, 99)
STABILITY_CONFIDENCE = 0.99  # family-wise, over a row's sub-windows


def stability_z(sub_windows: int) -> float:
    """The two-sided standard normal quantile that holds STABILITY_CONFIDENCE over `sub_windows` comparisons
    (Bonferroni): 1 - 0.01 / (2 * 5) -> z = 3.090 at 5 sub-windows (3.481 at 20)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - (1.0 - STABILITY_CONFIDENCE) / (2 * max(sub_windows, 1)))


def min_inferences_for(percentile: float) -> int:
    """Inferences needed before a latency percentile is reported.

    MLPerf LoadGen's single-stream floors are 64 for p90 and 662 for p99; the rule
    n >= log2(100) / -ln(p) reproduces both and gives p50 -> 10, p95 -> 130.
    """
    return math.ceil(math.log2(100) / -math.log(percentile / 100.0))


MIN_INFERENCES_FOR = {f"p{p}": min_inferences_for(p) for p in PERCENTILES}


class Timestamps(Protocol):
    start_ns: np.ndarray
    end_ns: np.ndarray


@dataclass
class Summary:
    window_start_ns: int
    window_end_ns: int
    window_s: float
    inferences: int  # entirely inside the window, all instances
    samples: int  # inferences * batch
    throughput_ips: float  # samples per second over the window
    per_instance_ips: list[float] = field(default_factory=list)
    latency_ms: dict[str, float | None] = field(default_factory=dict)  # mean p50 p90 p95 p99 max min
    subwindow_ips: list[float] = field(default_factory=list)
    stability_pct: float = 0.0  # max |sub - mean| / mean * 100
    open_loop: bool = False  # fixed-rate row: sub-windows count service time [issued, end], not time queued
    # closed loop: one standard deviation of a sub-window's deviation from the mean that the row's per-inference
    # jitter gives a stationary process, % of the mean (jitter_sigma_pct); None for fixed-rate or empty rows
    stability_sigma_pct: float | None = None

    @property
    def stability_bound_pct(self) -> float | None:
        """The largest sub-window deviation the row's own jitter explains at 99% over its sub-windows (Bonferroni):
        z * stability_sigma_pct; None where the rule has no interval (fixed-rate or empty rows)."""
        if self.stability_sigma_pct is None:
            return None
        return stability_z(len(self.subwindow_ips)) * self.stability_sigma_pct


def _empty(n_instances: int) -> Summary:
    latency: dict[str, float | None] = {k: None for k in ("mean", *MIN_INFERENCES_FOR, "max", "min")}
    return Summary(0, 0, 0.0, 0, 0, 0.0, [0.0] * n_instances, latency, [], 0.0)


def summarize(instances: Sequence[Any], batch: int, sub_windows: int) -> Summary:
    """Throughput, latency and stability over the instances' overlap window.

    Sub-window throughput attributes each inference to the sub-windows it overlaps in proportion
    to the overlap (an inference spanning a boundary counts partly on each side), so slow models
    with few inferences per sub-window are not judged unstable from counting granularity alone.
    For open-loop (fixed-rate) instances, which carry `issued_ns`, that span is the inference's service
    [issued, end], so stability is that of completions: an inference that waited in a backlog is not
    smeared over [arrival, end] (under overload every arrival is early and every end late, which made a
    steadily working device look unstable).
    An instance without inferences leaves no overlap: the summary is empty (window_s 0).

    `instances`: runner InstanceResults, or anything runner.window_stamps.stamps_of reads (arrays included). Every
    value comes from passes over their timestamps a chunk at a time (issue 37): counts, minimum and maximum are exact;
    the percentiles are exact order statistics (runner.exact_rank) interpolated as np.percentile does; the mean is
    the exact integer sum of nanoseconds over the count; sub-window counts and the jitter's sums are float sums taken
    chunk by chunk, equal to a whole-array computation up to rounding (tests/runner/test_chunked_summary.py: 1e-9).
    """
    import numpy as np

    sources = [stamps_of(r) for r in instances]
    if not sources or any(s.count == 0 for s in sources):
        return _empty(len(sources))
    w0, w1 = overlap_window(sources)
    if w1 <= w0:
        return _empty(len(sources))
    window_s = (w1 - w0) / 1e9
    open_loop = all(s.open_loop for s in sources)
    edges = np.linspace(w0, w1 + 1, sub_windows + 1)
    sub_counts = np.zeros(sub_windows, dtype=np.float64)
    counts: list[int] = []
    lat_sum, lat_lo, lat_hi = 0, None, None
    for src in sources:
        n_i = 0
        for c in inside_chunks(src, w0, w1):
            if not len(c):
                continue
            n_i += len(c)
            lat = c.end_ns - c.start_ns
            lat_sum += int(lat.sum())
            lo, hi = int(lat.min()), int(lat.max())
            lat_lo = lo if lat_lo is None else min(lat_lo, lo)
            lat_hi = hi if lat_hi is None else max(lat_hi, hi)
            busy = c.issued_ns if open_loop and c.issued_ns is not None else c.start_ns
            sub_counts += np.asarray(_subwindow_inferences(busy, c.end_ns, edges))
        counts.append(n_i)
    count = sum(counts)
    latency: dict[str, float | None] = {k: None for k in ("mean", *MIN_INFERENCES_FOR, "max", "min")}
    if count and lat_lo is not None and lat_hi is not None:
        latency["mean"] = lat_sum / count / 1e6
        ranks = sorted({r for p in PERCENTILES for r in percentile_ranks(count, p)})

        def latencies() -> Iterator[tuple[np.ndarray, None]]:
            return ((c.end_ns - c.start_ns, None) for src in sources for c in inside_chunks(src, w0, w1))

        ns = order_statistics(latencies, {0: ranks}, {0: GroupBounds(count, lat_lo, lat_hi)})
        for p in PERCENTILES:
            key = f"p{p}"
            value = numpy_percentile(count, p, lambda r: ns[(0, r)] / 1e6)
            latency[key] = value if count >= MIN_INFERENCES_FOR[key] else None
        latency["max"] = lat_hi / 1e6
        latency["min"] = lat_lo / 1e6
    sub_ips = [float(n) * batch / ((b - a) / 1e9) for n, a, b in zip(sub_counts, edges[:-1], edges[1:], strict=True)]
    mean_ips = sum(sub_ips) / len(sub_ips)
    stability = max(abs(x - mean_ips) for x in sub_ips) / mean_ips * 100.0 if mean_ips > 0 else 0.0
    sigma = None
    if not open_loop and count:
        ends = [functools.partial(_inside_ends, src, w0, w1) for src in sources]
        sigma = jitter_sigma_pct(ends, counts, edges)
    return Summary(
        window_start_ns=w0,
        window_end_ns=w1,
        window_s=window_s,
        inferences=count,
        samples=count * batch,
        throughput_ips=count * batch / window_s,
        per_instance_ips=[n * batch / window_s for n in counts],
        latency_ms=latency,
        subwindow_ips=sub_ips,
        stability_pct=stability,
        open_loop=open_loop,
        stability_sigma_pct=sigma,
    )


def _inside_ends(src: Stamps, w0: int, w1: int) -> Iterator[np.ndarray]:
    return (c.end_ns for c in inside_chunks(src, w0, w1))


def _subwindow_inferences(busy_from: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> list[float]:
    """Inferences per sub-window [edges[k], edges[k+1]), each counted by the share of its span that falls there.

    An inference occupies [busy_from, end + 1) ns, so zero-length ones still have a place. One wholly inside a
    sub-window counts 1 there (found by searchsorted: a null row has millions of them); only those across a boundary
    are split by overlap (a window per pass over all of them cost ~0.3 s of an 8-instance null row)."""
    import numpy as np

    occupied_end = ends + 1
    # searched as int64 (faster than int64 into float64): for an integer t, edge <= t exactly when ceil(edge) <= t,
    # and edge < t exactly when floor(edge) < t
    first = np.searchsorted(np.ceil(edges).astype(np.int64), busy_from, side="right") - 1  # edges[first] <= from
    last = np.searchsorted(np.floor(edges).astype(np.int64), occupied_end, side="left") - 1  # edges[last] < end + 1
    whole = first == last
    counts = np.bincount(first[whole], minlength=len(edges) - 1).astype(np.float64)
    split_from, split_end = busy_from[~whole], occupied_end[~whole]
    if len(split_from):
        dur = (split_end - split_from).astype(np.float64)
        for k, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            overlap = np.clip(np.minimum(split_end, b) - np.maximum(split_from, a), 0.0, None)
            counts[k] += float((overlap / dur).sum())
    return [float(c) for c in counts]


NOT_SUSTAINED_MARK = "offered rate not sustained"  # how overload_reason's text starts (read by the SLO search)


def overload_reason(summary: Summary, cfg: RunConfig) -> str | None:
    """For a fixed-rate row: why the offered rate was not sustained (achieved below offered by more than
    run.stability_tolerance_pct), else None. Its latencies then measure a backlog growing for as long as
    the window lasts, not the service at that rate."""
    if cfg.rate_hz is None or summary.window_s <= 0:
        return None
    offered = cfg.rate_hz * cfg.instances
    achieved = summary.inferences / summary.window_s
    if achieved >= offered * (1.0 - cfg.stability_tolerance_pct / 100.0):
        return None
    return (f"{NOT_SUSTAINED_MARK}: offered {offered:.4g} inferences/s, achieved {achieved:.4g}/s "
            f"({achieved / offered * 100.0:.0f}%): the backlog, and the latency, grew for the whole window")


def instability_reason(summary: Summary, tolerance_pct: float) -> str | None:
    """Why the row's throughput is unstable across its sub-windows, else None.

    A closed-loop row is unstable when its largest sub-window deviation (stability_pct) exceeds both `tolerance_pct`
    (run.stability_tolerance_pct) and what its own per-inference jitter explains at 99% over the sub-windows
    (Summary.stability_bound_pct, jitter_sigma_pct's model): a real step or drift is flagged, a stationary jittery
    process with few inferences per sub-window is not. A fixed-rate row keeps the tolerance alone (its completions
    follow the arrivals, not a renewal process)."""
    k = len(summary.subwindow_ips)
    if summary.stability_pct <= tolerance_pct:
        return None
    bound = summary.stability_bound_pct
    if bound is None:
        return f"throughput unstable across {k} sub-windows: {summary.stability_pct:.0f}% from the mean"
    if summary.stability_pct <= bound:
        return None
    return (f"throughput unstable across {k} sub-windows: {summary.stability_pct:.0f}% from the mean, beyond the "
            f"{bound:.0f}% its per-inference jitter explains (99%, Bonferroni)")


def judge(summary: Summary, cfg: RunConfig, trend: LatencyTrend | None = None) -> tuple[str, str]:
    """("ok", "") or ("invalid", reasons joined with "; "): the verdict on the row's headline (throughput, and the
    energy taken over the same window). A fixed-rate row that could not keep up says so first; one whose backlog
    (scheduled arrivals minus completions) the `trend` (runner.backlog.window_trend, its `backlog`:
    runner.backlog_growth) shows growing says so next.

    Validity is per metric: too few inferences for a latency percentile never invalidates the row; that
    percentile is left empty and `percentile_gaps` says why (the row's empty_reasons)."""
    reasons = []
    if (overload := overload_reason(summary, cfg)) is not None:
        reasons.append(overload)
    if (growing := growth_reason(trend, summary, cfg)) is not None:
        reasons.append(growing)
    if summary.window_s < 0.9 * cfg.duration_s:
        reasons.append(f"window {summary.window_s:.1f} s shorter than required {cfg.duration_s:.1f} s")
    if (unstable := instability_reason(summary, cfg.stability_tolerance_pct)) is not None:
        reasons.append(unstable)
    return ("invalid", "; ".join(reasons)) if reasons else ("ok", "")


def percentile_gaps(summary: Summary, cfg: RunConfig) -> list[str]:
    """empty_reasons entries for the latency percentiles a measured window holds too few inferences for, e.g.
    'latency_ms_p99: 373 inferences in the window, p99 needs 662 (LoadGen's floor); the window ran to
    run.max_duration_s 30 s (--max-duration): at 12.4 inferences/s about 54 s would back it'. [] when every
    percentile is backed (or nothing was measured: the row's reason says why)."""
    n = summary.inferences
    missing = [k for k, floor in MIN_INFERENCES_FOR.items() if n < floor]
    if not missing or n == 0 or summary.window_s <= 0:
        return []
    needs = ", ".join(f"{k} needs {MIN_INFERENCES_FOR[k]}" for k in missing)
    rate = n / summary.window_s
    top = MIN_INFERENCES_FOR[missing[-1]]
    if n >= cfg.min_inferences:
        why = (f"the window stopped at run.min_inferences {cfg.min_inferences} (--min-inferences); "
               f"{top} back the {missing[-1]}")
    else:
        why = (f"the window ran to run.max_duration_s {cfg.max_duration_s:g} s (--max-duration): at "
               f"{rate:.3g} inferences/s about {math.ceil(top / rate)} s would back the {missing[-1]}")
    columns = ", ".join(f"latency_ms_{k}" for k in missing)
    return [f"{columns}: {n} inferences in the window, {needs} (LoadGen's floor{'s' if len(missing) > 1 else ''}); {why}"]


def window_needed_s(inferences_per_s: float, cfg: RunConfig, inferences: int | None = None) -> float:
    """The window a config gets at `inferences_per_s` (all instances together): at least duration_s, long enough
    for min_inferences (or `inferences`), at most max_duration_s; as the orchestrator stops it."""
    target = (cfg.min_inferences if inferences is None else inferences) + 2 * cfg.instances
    need = target / inferences_per_s if inferences_per_s > 0 else math.inf
    return min(cfg.max_duration_s, max(cfg.duration_s, need))
