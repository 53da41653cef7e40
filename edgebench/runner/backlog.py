"""Does a fixed-rate row's backlog grow? The latency trend over its window, with an interval that holds for
queueing data (issue 35).

A fixed-rate row offers `rate_hz * instances` arrivals per second. When the device serves fewer, the arrivals
that wait pile up, and each waits longer than the one before: latency (end - scheduled arrival) rises linearly in
arrival time, at (offered / served - 1) seconds per second: 10 ms/s for a 1% overload, whatever the service time.
A throughput tolerance (runner.metrics.overload_reason, 15%) cannot see that: 950/s served of 960/s offered is
99%, and its p50 per 3 s went 22, 60, 96 ... 347 ms. A short window's p99 then looks fine, and a longer one's
grows with the window: the row measured a moment of a growing backlog, not a steady state.

The trend. The window's inferences are put in TREND_BINS (20) bins of equal arrival time (fewer when there are
fewer than MIN_PER_BIN inferences a bin), each bin's median latency against its mean arrival time, and a least-
squares line through those points: its slope, in ms of latency per s of arrival time.

Its interval. Queueing latencies are strongly autocorrelated (one slow inference delays every one behind it), so
ordinary least squares on the inferences themselves gives intervals far too narrow: each inference counts as new
information. On a stable queue (90-95% load) such an interval excludes 0 from below in 36-57% of 30 s windows
(tests/runner/queue_sim.py's queues). Bins pool neighbours; the Newey-West (Bartlett kernel) variance of the slope
adds the correlation between neighbouring bins (lag_bins: a bandwidth of a quarter of the bins), and the critical
value is that of this t statistic at this bin count and bandwidth (simulated once: _critical_value, 3.4 at 20 bins
rather than a normal 1.96), since a variance estimated from 20 points is itself noisy (fixed-b, as Kiefer and
Vogelsang). On the same stable queues the interval covers 0 in 93-96% of windows (the 95% it states; the misses are
mostly the queue filling from empty at the window's start). Where the queue's correlation time is as long as the
window (20 ms services at 95% load in a 10 s window of Poisson arrivals) no interval from one window can hold.
Under overload the interval describes this window's growth, not the device's long-run overload: with random
arrivals the backlog is a random walk with drift, and one window's slope strays from the drift by more than the
interval says (it covers the drift in ~50% of windows; with clocked 1 ms services on random phases, always).

The verdict (`growing`) is no longer the trend's (issue 54): a row's backlog grows when the backlog itself, scheduled
arrivals minus completions, is shown to grow by an exact sign-flip test over 16 sub-windows (runner.backlog_growth,
`LatencyTrend.backlog`; columns backlog_growth_per_s and its interval). The rule it replaces called a row growing
when the trend's lower bound was above 0 AND the growth it proved over the window reached the window's median
latency: that bar rose with the overload (a bigger backlog has a bigger median), so on the serial null device a
window whose backlog went from 306 to 1,892 inferences (trend 40.9 [21.2, 60.7] ms/s) was ok while one with 26 ms/s
was flagged. The trend and its interval stay in the row (what the latency did, and the bound the SLO horizon uses);
they no longer decide its validity.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from edgebench.runner.backlog_growth import BacklogGrowth, backlog_growth, window_backlog
from edgebench.runner.exact_rank import GroupBounds, median_ranks, numpy_median, order_statistics
from edgebench.runner.window_stamps import inside_chunks, stamps_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig

TREND_BINS = 20  # bins of equal arrival time the line is fitted through
MIN_PER_BIN = 10  # inferences per bin on average: fewer bins when the window holds fewer than TREND_BINS of these
MIN_BINS = 8  # below this (MIN_BINS * MIN_PER_BIN = 80 inferences, or gaps) the window gets no trend
TREND_CONFIDENCE = 0.95  # two-sided
TREND_COLUMNS = ("latency_trend_ms_per_s", "latency_trend_lo_ms_per_s", "latency_trend_hi_ms_per_s")
GROWTH_MARK = "backlog grows "  # how growth_reason's text starts (the SLO search reads it in a row's reason)
OLD_GROWTH_MARK = "latency grows "  # the same reason in rows written before issue 54 (the trend's rule)
_CRITICAL_DRAWS = 40_000  # simulated t statistics behind each critical value (its 97.5% quantile to ~0.5%)


@dataclass(frozen=True)
class LatencyTrend:
    """The slope of latency (end - scheduled arrival) against arrival time, ms per s, with its interval."""

    slope_ms_per_s: float
    lo_ms_per_s: float
    hi_ms_per_s: float
    span_s: float  # first to last arrival of the inferences fitted
    bins: int  # bins the line went through (empty bins are left out)
    inferences: int
    p50_ms: float  # their median latency
    confidence: float = TREND_CONFIDENCE
    backlog: BacklogGrowth | None = None  # the window's backlog growth (runner.backlog_growth): the verdict's

    @property
    def growing(self) -> bool:
        """True when the backlog (scheduled arrivals minus completions) is shown to grow: BacklogGrowth.growing."""
        return self.backlog is not None and self.backlog.growing

    @property
    def proven_ms_per_s(self) -> float:
        """The latency growth a growing backlog proves, ms per s: the larger of the trend's lower bound and the one
        the backlog's lower bound implies (BacklogGrowth.latency_lo_ms_per_s); 0 when the backlog is not growing."""
        if not self.growing or self.backlog is None:
            return 0.0
        return max(self.lo_ms_per_s, self.backlog.latency_lo_ms_per_s, 0.0)

    def fields(self) -> dict[str, float]:
        """The row's latency_trend_* and backlog_growth_* columns."""
        trend = dict(zip(TREND_COLUMNS, (self.slope_ms_per_s, self.lo_ms_per_s, self.hi_ms_per_s), strict=True))
        return {**trend, **(self.backlog.fields() if self.backlog is not None else {})}


class Window(Protocol):
    """What this module reads of a runner.metrics.Summary (runner.metrics imports this module)."""

    window_start_ns: int
    window_end_ns: int
    window_s: float
    inferences: int


def trend_interval(arrival_ns: Any, end_ns: Any, stream: Any = None,
                   confidence: float = TREND_CONFIDENCE) -> tuple[float, float, float] | None:
    """(slope, lo, hi) of latency against arrival time in ms per s (latency_trend's), or None when the
    inferences are too few for a trend. The arrays are int64 ns, one element per inference, any order; `stream`
    (optional) the stream (instance) of each, as latency_trend takes it."""
    trend = latency_trend(arrival_ns, end_ns, stream, confidence=confidence)
    return None if trend is None else (trend.slope_ms_per_s, trend.lo_ms_per_s, trend.hi_ms_per_s)


def latency_trend(arrival_ns: Any, end_ns: Any, stream: Any = None, *, bins: int = TREND_BINS,
                  confidence: float = TREND_CONFIDENCE, period_ns: int | None = None, streams: int | None = None,
                  window_end_ns: int | None = None) -> LatencyTrend | None:
    """The latency trend of inferences that arrived at `arrival_ns` and ended at `end_ns` (int64 ns, pooled over
    a row's streams, any order): the module docstring says how. None when fewer than MIN_BINS bins of
    MIN_PER_BIN inferences can be made.

    `stream` (the stream of each inference, e.g. latencies.npz's `instance`): the fit then stops at the earliest
    of the streams' last arrivals. A stream only records the arrivals it served, so past that point the streams
    furthest behind, whose latencies are the largest, are missing, and the last bins would read low.

    The backlog's growth (`backlog`, the verdict's) is counted from the first arrival to the last fitted; with
    `period_ns`, `streams` and `window_end_ns` (that many periodic streams, all started by the first arrival) in
    whole periods up to the window's end (runner.backlog_growth.backlog_growth)."""
    import numpy as np

    arrival = np.asarray(arrival_ns, dtype=np.int64)
    end = np.asarray(end_ns, dtype=np.int64)
    recorded_arrival, recorded_end = arrival, end
    if stream is not None:
        keep = arrival <= served_until_ns(arrival, stream)
        arrival, end = arrival[keep], end[keep]
    n = len(arrival)
    k = min(bins, n // MIN_PER_BIN)
    if k < MIN_BINS:
        return None
    t0, t1 = int(arrival.min()), int(arrival.max())
    if t1 <= t0:
        return None
    latency_ms = (end - arrival) / 1e6
    t_s = (arrival - t0) / 1e9
    where = np.minimum(((arrival - t0) * k) // (t1 - t0), k - 1)  # exact in int64: bin of each arrival
    order = np.argsort(where, kind="stable")
    counts = np.bincount(where, minlength=k)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    kept = np.flatnonzero(counts)
    if len(kept) < MIN_BINS:
        return None
    lat_sorted, t_sorted = latency_ms[order], t_s[order]
    y = np.array([np.median(lat_sorted[starts[b]:starts[b] + counts[b]]) for b in kept])
    x = np.array([t_sorted[starts[b]:starts[b] + counts[b]].mean() for b in kept])
    slope, half_width = _slope_and_half_width(x, y, confidence)
    return LatencyTrend(slope_ms_per_s=slope, lo_ms_per_s=slope - half_width, hi_ms_per_s=slope + half_width,
                        span_s=(t1 - t0) / 1e9, bins=len(kept), inferences=n,
                        p50_ms=float(np.median(latency_ms)), confidence=confidence,
                        backlog=backlog_growth(recorded_arrival, recorded_end, t0,
                                               t1 if window_end_ns is None or not period_ns else window_end_ns,
                                               period_ns=period_ns, streams=streams))


def _ms(found: dict[tuple[int, int], int], group: int, rank: int) -> float:
    return found[(group, rank)] / 1e6


def lag_bins(bins: int) -> int:
    """The Newey-West bandwidth: lags 1 .. lag_bins - 1 get Bartlett weights 1 - lag / lag_bins (5 at 20 bins)."""
    return max(2, bins // 4)


def _slope_and_half_width(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float]:
    """Least-squares slope of y on x and the half-width of its interval: Newey-West standard error times the
    simulated critical value for this many points."""
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx
    scores = xc * (y - y.mean() - slope * xc)
    m = lag_bins(len(x))
    variance = float(scores @ scores)
    for lag in range(1, min(m, len(x))):
        variance += 2.0 * (1.0 - lag / m) * float(scores[lag:] @ scores[:-lag])
    se = math.sqrt(max(variance, 0.0)) / sxx
    return slope, _critical_value(len(x), m, confidence) * se


@functools.lru_cache(maxsize=64)
def _critical_value(bins: int, lags: int, confidence: float) -> float:
    """The `confidence` quantile of |t| for the slope's Newey-West t statistic over `bins` equally spaced points
    of independent normal noise at bandwidth `lags` (fixed seed: the same value every run). Larger than the normal
    1.96 (3.41 at 20 bins and bandwidth 5, 2.63 at bandwidth 2): the variance from 20 points is itself noisy."""
    import numpy as np

    rng = np.random.default_rng(20240535)
    x = np.arange(bins, dtype=np.float64)
    xc = x - x.mean()
    sxx = float(xc @ xc)
    y = rng.standard_normal((_CRITICAL_DRAWS, bins))
    slope = (y @ xc) / sxx
    scores = (y - y.mean(axis=1, keepdims=True) - slope[:, None] * xc[None, :]) * xc[None, :]
    variance = (scores * scores).sum(axis=1)
    for lag in range(1, min(lags, bins)):
        variance += 2.0 * (1.0 - lag / lags) * (scores[:, lag:] * scores[:, :-lag]).sum(axis=1)
    t = np.abs(slope) * sxx / np.sqrt(np.maximum(variance, 1e-300))
    return float(np.quantile(t, confidence))


def served_until_ns(arrival_ns: Any, stream: Any) -> int:
    """The earliest of the streams' last recorded arrivals: up to it every stream's arrivals are all there."""
    import numpy as np

    arrival = np.asarray(arrival_ns, dtype=np.int64)
    ids, which = np.unique(np.asarray(stream), return_inverse=True)
    last = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, which, arrival)
    return int(last.min())


def window_trend(instances: Sequence[Any], window: Window, *, bins: int = TREND_BINS,
                 confidence: float = TREND_CONFIDENCE) -> LatencyTrend | None:
    """The latency trend of a fixed-rate row's window (None for a closed loop, or too few inferences): latency_trend
    of every fixed-rate inference inside the window (start >= window start and end <= window end, as runner.metrics
    counts them), the streams pooled and cut at the earliest of their last arrivals.

    Computed in passes over the timestamps a chunk at a time (issue 37), never all of them in memory: each stream's
    last arrival; the count and span of arrivals; each bin's count and exact integer sum of arrival offsets; the
    medians (per bin and overall) as exact order statistics (runner.exact_rank). It equals latency_trend on the
    pooled arrays up to the rounding of the bins' mean arrival times (tests/runner/test_chunked_summary.py)."""
    import numpy as np

    w0, w1 = window.window_start_ns, window.window_end_ns
    streams = [s for s in (stamps_of(r) for r in instances) if s.open_loop and s.count]
    lasts = []
    for src in streams:
        last = [int(c.start_ns.max()) for c in inside_chunks(src, w0, w1) if len(c)]
        if last:
            lasts.append(max(last))
    if not lasts:
        return None
    until = min(lasts)  # served_until_ns: up to it every stream's arrivals are all there

    def kept() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for src in streams:
            for c in inside_chunks(src, w0, w1):
                keep = c.start_ns <= until
                yield c.start_ns[keep], c.end_ns[keep]

    n, t0, t1, lat_lo, lat_hi = 0, None, None, None, None
    for arrival, end in kept():
        if len(arrival):
            n += len(arrival)
            lat = end - arrival
            t0 = int(arrival.min()) if t0 is None else min(t0, int(arrival.min()))
            t1 = int(arrival.max()) if t1 is None else max(t1, int(arrival.max()))
            lat_lo = int(lat.min()) if lat_lo is None else min(lat_lo, int(lat.min()))
            lat_hi = int(lat.max()) if lat_hi is None else max(lat_hi, int(lat.max()))
    k = min(bins, n // MIN_PER_BIN)
    if k < MIN_BINS or t0 is None or t1 is None or lat_lo is None or lat_hi is None or t1 <= t0:
        return None
    first, span = t0, t1 - t0

    def binned() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for arrival, end in kept():
            yield end - arrival, np.minimum(((arrival - first) * k) // span, k - 1)  # exact in int64: bin of each

    counts = np.zeros(k, dtype=np.int64)
    offset_sums = [0] * k  # exact integer ns, per bin
    for arrival, _end in kept():
        where = np.minimum(((arrival - first) * k) // span, k - 1)
        counts += np.bincount(where, minlength=k)
        order = np.argsort(where, kind="stable")
        sorted_where = where[order]
        if len(where):
            starts = np.flatnonzero(np.r_[True, sorted_where[1:] != sorted_where[:-1]])
            sums = np.add.reduceat((arrival - first)[order], starts)
            for b, total in zip(sorted_where[starts].tolist(), sums.tolist(), strict=True):
                offset_sums[b] += total
    kept_bins = np.flatnonzero(counts)
    if len(kept_bins) < MIN_BINS:
        return None
    bounds = {int(b): GroupBounds(int(counts[b]), lat_lo, lat_hi) for b in kept_bins}
    in_bins = order_statistics(binned, {b: median_ranks(g.count) for b, g in bounds.items()}, bounds)
    overall = order_statistics(lambda: ((lat, None) for lat, _ in binned()), {0: median_ranks(n)},
                               {0: GroupBounds(n, lat_lo, lat_hi)})
    y = np.array([numpy_median(bounds[int(b)].count, functools.partial(_ms, in_bins, int(b))) for b in kept_bins])
    x = np.array([offset_sums[int(b)] / int(counts[b]) / 1e9 for b in kept_bins])
    slope, half_width = _slope_and_half_width(x, y, confidence)
    return LatencyTrend(slope_ms_per_s=slope, lo_ms_per_s=slope - half_width, hi_ms_per_s=slope + half_width,
                        span_s=span / 1e9, bins=len(kept_bins), inferences=n,
                        p50_ms=numpy_median(n, lambda r: overall[(0, r)] / 1e6), confidence=confidence,
                        backlog=window_backlog(streams, w0, until, w1))


def backlog_timeline(arrival_ns: Any, end_ns: Any, stream: Any = None,
                     points: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """(t_s, backlog): arrivals minus completions at `points` times from the first recorded arrival (t_s 0) to the
    last (with `stream`, latency_trend's: the earliest of the streams' last ones). A backlog that keeps growing is
    the overload the trend measures; the count is in inferences, all streams. Only arrivals that were served are
    recorded, so the view stops where they stop."""
    import numpy as np

    arrival = np.sort(np.asarray(arrival_ns, dtype=np.int64))
    end = np.sort(np.asarray(end_ns, dtype=np.int64))
    if not len(arrival):
        return np.empty(0), np.empty(0, dtype=np.int64)
    until = served_until_ns(arrival_ns, stream) if stream is not None else int(arrival[-1])
    t = np.linspace(arrival[0], until, points).astype(np.int64)
    backlog = np.searchsorted(arrival, t, side="right") - np.searchsorted(end, t, side="right")
    return (t - arrival[0]) / 1e9, backlog


def growth_reason(trend: LatencyTrend | None, window: Window, cfg: RunConfig) -> str | None:
    """The reason a fixed-rate row is invalid when its backlog grows (LatencyTrend.growing), e.g. (the serial null
    device of 50 ms at 101% of its bound, docs/results/calibration/capacity-verdict.md) 'backlog grows 0.387/s
    [0.303, 0.485] (98%, sign-flip p = 1.5e-05 over 16 sub-windows of 59.4 s of arrivals): 3 -> 26 inferences queued;
    19.79/s served of 20.2/s offered; latency +19.3 ms/s [17.7, 20.8] (95%); the window's percentiles are not a
    steady state'; else None."""
    if trend is None or cfg.rate_hz is None or not trend.growing or trend.backlog is None:
        return None
    b = trend.backlog
    offered = cfg.rate_hz * cfg.instances
    served = window.inferences / window.window_s if window.window_s > 0 else 0.0
    level = 1.0 - 2.0 * b.alpha
    return (f"{GROWTH_MARK}{b.growth_per_s:.3g}/s [{b.lo_per_s:.3g}, {b.hi_per_s:.3g}] ({level:.0%}, sign-flip "
            f"p = {b.p_value:.2g} over {b.sub_windows} sub-windows of {b.span_s:.3g} s of arrivals): "
            f"{b.start_backlog:,} -> {b.end_backlog:,} inferences queued; {served:.4g}/s served of {offered:.4g}/s "
            f"offered; latency {trend.slope_ms_per_s:+.3g} ms/s [{trend.lo_ms_per_s:.3g}, {trend.hi_ms_per_s:.3g}] "
            f"({trend.confidence:.0%}); the window's percentiles are not a steady state")


def trend_gap(cfg: RunConfig, window: Window, trend: LatencyTrend | None) -> str | None:
    """The empty_reasons entry of a fixed-rate row that measured but got no trend (too few inferences or bins);
    None for closed-loop rows (the columns are fixed-rate ones) and rows that have one."""
    if cfg.rate_hz is None or trend is not None or window.window_s <= 0:
        return None
    needed = MIN_BINS * MIN_PER_BIN
    if window.inferences < needed:
        why = (f"{window.inferences} inferences in the window, a latency trend needs {needed} ({MIN_BINS} bins of "
               f"arrival time, {MIN_PER_BIN} inferences each)")
    else:
        why = (f"the {window.inferences} inferences in the window, up to the last arrival every stream served, "
               f"fill fewer than {MIN_BINS} bins of arrival time with {MIN_PER_BIN} each")
    return f"{', '.join(TREND_COLUMNS)}: {why}"
