"""Exact order statistics of integer values read in chunks, in bounded memory (issue 37).

A row's latency percentiles, its queueing and service percentiles and the medians of a fixed-rate row's trend bins
are order statistics of integer nanoseconds. Sorting every value needs them all in memory; here each wanted rank is
narrowed down by passes over the chunks instead: a pass counts the values of the rank's current candidate interval
[lo, hi] in HIST_BINS equal bins and keeps the bin the rank falls in, until the interval is one integer wide, or holds
at most GATHER_MAX values, which the next pass gathers and sorts. Every step counts exactly, so the result is the
value np.sort would put at that rank; the memory is HIST_BINS counts or GATHER_MAX values per open interval. An
interval of width W needs about log(W) / log(HIST_BINS) passes: nanosecond latencies within 4 s of each other take
at most two counting passes and one gathering pass.

`numpy_percentile` interpolates between the two ranks as np.percentile's default ("linear") method does, with the
same floating-point operations, so a percentile computed here equals np.percentile's on the whole array.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

HIST_BINS = 1 << 16  # bins per counting pass and open interval (512 KiB of int64 counts)
GATHER_MAX = 1 << 16  # an interval holding at most this many values is gathered and sorted (512 KiB)

# values (int64) and the group of each (int64, 0 .. groups - 1) or None (every value in group 0); called once a pass
ValueChunks = Callable[[], Iterable[tuple["np.ndarray", "np.ndarray | None"]]]


@dataclass
class GroupBounds:
    """A group's value count and its smallest and largest value."""

    count: int
    lo: int
    hi: int


@dataclass
class _Interval:
    group: int
    lo: int
    hi: int
    below: int  # values of the group smaller than lo
    inside: int  # values of the group in [lo, hi]


def order_statistics(chunks: ValueChunks, wanted: Mapping[int, Iterable[int]],
                     bounds: Mapping[int, GroupBounds]) -> dict[tuple[int, int], int]:
    """{(group, rank): the rank-th smallest value of the group (0-based)} for every rank wanted of every group;
    `bounds` gives each wanted group's count, min and max (a pass that computed them already)."""
    result: dict[tuple[int, int], int] = {}
    open_ranks: dict[tuple[int, int], _Interval] = {}
    for group, ranks in wanted.items():
        g = bounds[group]
        for rank in ranks:
            if not 0 <= rank < g.count:
                raise ValueError(f"rank {rank} of group {group} outside its {g.count} values")
            open_ranks[(group, rank)] = _Interval(group, g.lo, g.hi, 0, g.count)
    while True:
        for key, iv in list(open_ranks.items()):
            if iv.lo == iv.hi:
                result[key] = iv.lo
                del open_ranks[key]
        if not open_ranks:
            return result
        intervals = {(iv.group, iv.lo, iv.hi): iv for iv in open_ranks.values()}
        found = _one_pass(chunks, list(intervals.values()))
        for key, iv in list(open_ranks.items()):
            outcome = found[(iv.group, iv.lo, iv.hi)]
            rank_inside = key[1] - iv.below
            if isinstance(outcome, tuple):  # counted: keep the bin the rank falls in
                width, counts = outcome
                cum = counts.cumsum()
                b = int((cum <= rank_inside).sum())
                before = int(cum[b - 1]) if b > 0 else 0
                lo = iv.lo + b * width
                open_ranks[key] = _Interval(iv.group, lo, min(iv.hi, lo + width - 1), iv.below + before, int(counts[b]))
            else:  # gathered and sorted
                result[key] = int(outcome[rank_inside])  # type: ignore[index]  # the sorted values
                del open_ranks[key]


def _one_pass(chunks: ValueChunks, intervals: list[_Interval]) -> dict[tuple[int, int, int], object]:
    """One pass over the values: per interval, (bin width, counts per bin) or, for a small one, its values sorted."""
    import numpy as np

    gathered: dict[int, list[np.ndarray]] = {}
    counted: dict[int, tuple[int, np.ndarray]] = {}
    for i, iv in enumerate(intervals):
        if iv.inside <= GATHER_MAX:
            gathered[i] = []
        else:
            width = max(1, -(-(iv.hi - iv.lo + 1) // HIST_BINS))
            counted[i] = (width, np.zeros(-(-(iv.hi - iv.lo + 1) // width), dtype=np.int64))
    groups_wanted = {iv.group for iv in intervals}
    for values, groups in chunks():
        by_group = {0: values} if groups is None else {g: values[groups == g] for g in groups_wanted}
        for i, iv in enumerate(intervals):
            v = by_group.get(iv.group)
            if v is None or not len(v):
                continue
            x = v[(v >= iv.lo) & (v <= iv.hi)]
            if i in gathered:
                gathered[i].append(x)
            else:
                width, counts = counted[i]
                counts += np.bincount((x - iv.lo) // width, minlength=len(counts))
    out: dict[tuple[int, int, int], object] = {}
    for i, iv in enumerate(intervals):
        key = (iv.group, iv.lo, iv.hi)
        if i in gathered:
            parts = gathered[i]
            out[key] = np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
        else:
            out[key] = counted[i]
    return out


def percentile_ranks(n: int, p: float) -> tuple[int, ...]:
    """The 0-based ranks np.percentile(..., p) reads of n values (one or two)."""
    virtual = (n - 1) * (p / 100)
    if virtual >= n - 1:
        return (n - 1,)
    low = math.floor(virtual)
    return (low, low + 1)


def numpy_percentile(n: int, p: float, value_at: Callable[[int], float]) -> float:
    """np.percentile(values, p) of n values from their order statistics (value_at(rank), as floats), with the same
    operations as NumPy's default linear method: index (n - 1) * p / 100, and a lerp from the nearer side."""
    virtual = (n - 1) * (p / 100)
    if virtual >= n - 1:
        return value_at(n - 1)
    low = math.floor(virtual)
    gamma = virtual - low
    a, b = value_at(low), value_at(low + 1)
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def median_ranks(n: int) -> tuple[int, ...]:
    """The ranks np.median reads of n values."""
    return (n // 2,) if n % 2 else (n // 2 - 1, n // 2)


def numpy_median(n: int, value_at: Callable[[int], float]) -> float:
    """np.median of n values from their order statistics: the middle one, or the mean of the middle two."""
    if n % 2:
        return value_at(n // 2)
    return (value_at(n // 2 - 1) + value_at(n // 2)) / 2


def chunked_percentiles(values: Callable[[], Iterable[np.ndarray]], percentiles: Iterable[float],
                        divisor: float = 1.0) -> dict[float, float] | None:
    """{p: np.percentile(all values / divisor, p)} of int64 values read in chunks (`values()` once per pass: one
    for count and bounds, then order_statistics'); None when there are none."""
    count, lo, hi = 0, None, None
    for v in values():
        if len(v):
            count += len(v)
            a, b = int(v.min()), int(v.max())
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    if count == 0 or lo is None or hi is None:
        return None
    wanted = list(percentiles)
    ranks = sorted({r for p in wanted for r in percentile_ranks(count, p)})
    ns = order_statistics(lambda: ((v, None) for v in values()), {0: ranks}, {0: GroupBounds(count, lo, hi)})
    return {p: numpy_percentile(count, p, lambda r: ns[(0, r)] / divisor) for p in wanted}
