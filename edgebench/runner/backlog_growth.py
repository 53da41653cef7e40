"""Does a fixed-rate row's backlog grow? The direct quantity, arrivals minus completions, tested in a way that more
overload can never weaken (issue 54, build item 4).

The backlog B(t) is the inferences scheduled to arrive by t minus those completed by t, all streams. It is exact over
[window start, until], `until` being the earliest of the streams' last recorded arrivals: a stream records every
arrival it served, in order, so up to `until` no scheduled arrival is missing, and every completion before the
window's end is recorded. That span is cut into SUB_WINDOWS (16) equal sub-windows and each one's increment
x_k = arrivals_k - completions_k taken; their sum is B(until) - B(start), the growth, and growth_per_s = sum / span.

The test. A device that keeps up (load <= 1) has increments whose drift is <= 0; at the boundary (load 1) the backlog
is a random walk without drift and its increments are independent and symmetric; below it they telescope (their
sum is bounded by the queue's stationary spread), which only makes the test more conservative. So Fisher's sign-flip
test of the sum (runner.sign_flip: exact, distribution-free, no variance estimated from the increments) says the
backlog grows when p <= ALPHA (1%, one-sided): `growing`. Its interval for the drift (98% two-sided: each bound 99%
one-sided) is in the row as backlog_growth_lo_per_s / backlog_growth_hi_per_s, growing exactly when the lower bound is
above 0.

Monotone in the overload: the verdict is a function of the increments that never turns from growing to not growing
when any increment rises (sign_flip's docstring proves it), so a larger backlog, a stall that adds to it, a start
that was late, never argue for a steady state. The rule it replaces (issue 35: the growth the latency trend's lower
bound proves over the window must reach the window's median latency) compared the evidence with a bar the overload
itself raised, and a run whose backlog went from 306 to 1,892 inferences was called ok while one with a smaller
trend was flagged. A start-up transient (the queue filling from empty, a worker that woke late) is one increment: it
can add to the evidence of growth, never take from it, and at loads <= 0.95 it creates none (measured below).

Periodic arrivals (even, random, aligned: every stream one arrival each period, as runner.arrivals schedules them)
are counted in sub-windows of whole periods, so every sub-window holds exactly one arrival per stream and period,
served or not: the count has no noise from where a boundary falls among the streams' phases, and the span runs to
the window's end (the arrivals past a stream's last served one are known). Poisson arrivals are counted as recorded,
up to the earliest of the streams' last served arrivals.

Measured on simulated queues (`python tests/runner/queue_sim.py`: single FIFO servers started empty, 32 random-phase
streams or Poisson arrivals, clocked or lognormal services of 1, 5, 20 ms, 10 and 60 s windows; 200 windows a cell
at loads <= 1, 60 overloaded; docs/results/calibration/capacity-verdict.md): 90% and 95% load flagged in 0 of 200
windows in every one of the 20 cells; load 1.00 in 0-2.5% (the 1% the test states, and a queue started empty at load
1 does grow). Overloads: clocked services on random phases are flagged at 0.5% in every window (20 ms services in 10 s
windows at 2%); lognormal services or Poisson arrivals make the backlog a random walk whose drift one window cannot
separate from its noise at 1-2% (2-42% of windows at 1%, 3-92% at 2%). tests/runner/test_backlog_growth.py holds the
monotone property on coupled queues (loads 0.9 to 5, starts up to 4 s late: no window invalid at one load and ok at
a higher one) and the serial device's kind of queue (5 streams, 50 ms: 1% flagged in 10 of 10 60 s windows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgebench.runner import stamps
from edgebench.runner.sign_flip import sign_flip_bounds, sign_flip_p

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.runner.stamps import Stamps

SUB_WINDOWS = 16  # increments the sign-flip test enumerates (2^16 patterns: p down to 1.5e-5)
ALPHA = 0.01  # one-sided: the backlog grows when its growth is shown at 99%
BACKLOG_COLUMNS = ("backlog_growth_per_s", "backlog_growth_lo_per_s", "backlog_growth_hi_per_s")


@dataclass(frozen=True)
class BacklogGrowth:
    """How the backlog (scheduled arrivals minus completions) changed over [start, until], in inferences per second,
    with the sign-flip test's interval."""

    growth_per_s: float  # (B(until) - B(start)) / span_s
    lo_per_s: float  # one-sided 1 - alpha lower bound of the drift (98% two-sided interval with hi_per_s)
    hi_per_s: float
    p_value: float  # sign-flip p of 'the backlog does not grow'
    span_s: float
    sub_windows: int
    start_backlog: int  # B(start): inferences scheduled and not yet completed at the window's start
    end_backlog: int  # B(until)
    arrivals: int  # scheduled arrivals in the span, all streams
    completions: int  # completions in the span, all streams
    alpha: float = ALPHA

    @property
    def growing(self) -> bool:
        """True when the sign-flip test shows the backlog grows (p <= alpha): the lower bound is above 0."""
        return self.p_value <= self.alpha

    @property
    def served_per_s(self) -> float:
        return self.completions / self.span_s if self.span_s > 0 else 0.0

    @property
    def latency_lo_ms_per_s(self) -> float:
        """The latency growth the lower bound implies, ms of latency per s of arrivals: a backlog that grows by
        lo inferences a second, served at served_per_s, adds lo / served_per_s seconds of wait a second (0 when the
        bound is not above 0)."""
        served = self.served_per_s
        return max(self.lo_per_s, 0.0) / served * 1000.0 if served > 0 else 0.0

    def fields(self) -> dict[str, float]:
        """The row's backlog_growth_* columns."""
        return dict(zip(BACKLOG_COLUMNS, (self.growth_per_s, self.lo_per_s, self.hi_per_s), strict=True))


def growth_of_increments(increments: Any, span_s: float, start_backlog: int, arrivals: int, completions: int,
                         alpha: float = ALPHA) -> BacklogGrowth:
    """The BacklogGrowth of K sub-window increments (arrivals - completions each) over `span_s` seconds."""
    import numpy as np

    x = np.asarray(increments, dtype=np.float64)
    k = len(x)
    sub_s = span_s / k
    lo, hi = sign_flip_bounds(x, alpha)
    total = int(round(float(x.sum())))
    return BacklogGrowth(growth_per_s=float(x.sum()) / span_s, lo_per_s=lo / sub_s, hi_per_s=hi / sub_s,
                         p_value=sign_flip_p(x), span_s=span_s, sub_windows=k, start_backlog=start_backlog,
                         end_backlog=start_backlog + total, arrivals=arrivals, completions=completions, alpha=alpha)


def backlog_growth(arrival_ns: Any, end_ns: Any, start_ns: int, until_ns: int, *, period_ns: int | None = None,
                   streams: int | None = None, sub_windows: int = SUB_WINDOWS,
                   alpha: float = ALPHA) -> BacklogGrowth | None:
    """The backlog's growth over [start_ns, until_ns] from every recorded inference's (arrival, end), int64 ns, any
    order, all streams pooled (those that arrived before start_ns included: they are the backlog at the start).

    `period_ns` and `streams`: `streams` streams each with one arrival every period_ns (arrival models even, random,
    aligned) and every one of them started by start_ns: the sub-windows are whole periods (sub_windows_of), each with
    exactly `streams` arrivals a period whether served or not, so `until_ns` may be the window's end, past the last
    served arrival. Otherwise the arrivals are counted as recorded, and until_ns must be no later than the earliest
    of the streams' last recorded arrivals (up to it none is missing). None when the span is empty."""
    import numpy as np

    arrival = np.asarray(arrival_ns, dtype=np.int64)
    end = np.asarray(end_ns, dtype=np.int64)
    counter = _Counter(start_ns, until_ns, sub_windows, period_ns if streams else None, streams or 0)
    if counter.span <= 0:
        return None
    counter.add(arrival, end)
    return counter.growth(alpha)


def window_backlog(sources: Sequence[Stamps], start_ns: int, served_until_ns: int, end_ns: int, *,
                   sub_windows: int = SUB_WINDOWS, alpha: float = ALPHA) -> BacklogGrowth | None:
    """backlog_growth over every recorded inference of these instances' timestamps, read a chunk at a time (issue 37:
    never all of them in memory). A first pass finds whether every stream's arrivals are evenly spaced to the ns with
    one period (a periodic schedule's are: runner.arrivals): then the span runs from the window's start to its end
    (`end_ns`: the streams' arrivals past their last served one are known), else to `served_until_ns`. The second
    pass counts. None when the span is empty."""
    periods = set()
    for src in sources:
        gaps = _Gaps()
        for chunk in src.chunks(stamps.READ_CHUNK):
            gaps.add(chunk.start_ns)
        periods.add(gaps.period_ns)
    period = periods.pop() if len(periods) == 1 else None
    counter = _Counter(start_ns, end_ns if period else served_until_ns, sub_windows, period, len(sources))
    if counter.span <= 0:
        return None
    for src in sources:
        for chunk in src.chunks(stamps.READ_CHUNK):
            counter.add(chunk.start_ns, chunk.end_ns)
    return counter.growth(alpha)


def sub_windows_of(span_ns: int, period_ns: int | None, sub_windows: int = SUB_WINDOWS,
                   alpha: float = ALPHA) -> tuple[int, int, bool]:
    """(sub-windows, span used in ns, whole periods). Periodic arrivals: sub-windows of whole periods, so each
    holds exactly one arrival per stream and per period: `sub_windows` of them, each floor(span / (sub_windows x
    period)) periods long, or one period each when the span holds fewer (as many as fit, down to the fewest whose
    all-positive pattern 2^-K reaches alpha: 7 at 1%); the span's rest after them is left out. Otherwise, or with
    fewer periods than that, `sub_windows` equal parts of the whole span."""
    import math

    if period_ns:
        whole = span_ns // period_ns
        fewest = math.ceil(math.log2(1.0 / alpha))
        if whole >= sub_windows:
            return sub_windows, sub_windows * (whole // sub_windows) * period_ns, True
        if whole >= fewest:
            return int(whole), int(whole) * period_ns, True
    return sub_windows, span_ns, False


class _Gaps:
    """One stream's arrival period, seen a chunk at a time: the gap between its arrivals when every gap is the same
    to the ns (at least three arrivals), else None."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.lo: int | None = None
        self.hi: int | None = None
        self.count = 0

    def add(self, arrival: np.ndarray) -> None:
        import numpy as np

        if not len(arrival):
            return
        joined = arrival if self.last is None else np.concatenate([[self.last], arrival])
        if len(joined) > 1:
            d = np.diff(joined)
            self.lo = int(d.min()) if self.lo is None else min(self.lo, int(d.min()))
            self.hi = int(d.max()) if self.hi is None else max(self.hi, int(d.max()))
        self.last = int(arrival[-1])
        self.count += len(arrival)

    @property
    def period_ns(self) -> int | None:
        return self.lo if self.count >= 3 and self.lo is not None and self.lo == self.hi and self.lo > 0 else None


class _Counter:
    """Arrivals and completions per sub-window of [start, start + span] (exact, in int64), and the backlog at the
    start (the recorded arrivals up to it not completed by it)."""

    def __init__(self, start_ns: int, until_ns: int, sub_windows: int, period_ns: int | None, streams: int) -> None:
        import numpy as np

        self.start = int(start_ns)
        self.k, self.span, whole = sub_windows_of(int(until_ns) - self.start, period_ns, sub_windows)
        # whole periods: each sub-window holds exactly `streams` arrivals a period, served or not
        self.scheduled = streams * (self.span // self.k // period_ns) if whole and period_ns else None
        self.arrivals = np.zeros(self.k, dtype=np.int64)
        self.completions = np.zeros(self.k, dtype=np.int64)
        self.start_backlog = 0

    def _bins(self, t: np.ndarray) -> np.ndarray:
        import numpy as np

        end = self.start + self.span
        inside = t[(t > self.start) & (t <= end)]  # B(t) counts what happened up to and at t: (start, end]
        where = ((inside - self.start - 1) * self.k) // self.span  # exact in int64; t = end falls in the last
        return np.bincount(where, minlength=self.k)

    def add(self, arrival: np.ndarray, end: np.ndarray) -> None:
        if self.scheduled is None:
            self.arrivals += self._bins(arrival)
        self.completions += self._bins(end)
        self.start_backlog += int(((arrival <= self.start) & (end > self.start)).sum())

    def growth(self, alpha: float) -> BacklogGrowth:
        if self.scheduled is not None:
            self.arrivals[:] = self.scheduled
        return growth_of_increments(self.arrivals - self.completions, self.span / 1e9, self.start_backlog,
                                    int(self.arrivals.sum()), int(self.completions.sum()), alpha)
