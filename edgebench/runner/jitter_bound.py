"""The throughput deviation a closed-loop row's own per-inference jitter explains (issue 34's stability rule).

`jitter_sigma_pct` is one standard deviation of a sub-window's throughput deviation from the window mean, from the
gaps between completions of every instance, read chunk by chunk (runner/stamps.py): runner/metrics.py holds a
sub-window's deviation against stability_z x this bound.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

STALL_FACTOR = 50.0  # a gap between completions this many times the median gap is a stall, not jitter (_gap_cv2)


EndChunks = Callable[[], Iterable["np.ndarray"]]  # one instance's ends inside the window, chunk by chunk, in order


def jitter_sigma_pct(ends: Sequence[EndChunks], counts: Sequence[int], edges: np.ndarray) -> float:
    """One standard deviation of a sub-window's throughput deviation from the window mean, % of the mean, that a
    stationary closed loop with the row's own per-inference jitter gives (issue 34). `ends[i]()` gives instance i's
    ends inside the window in chunks, `counts[i]` how many there are.

    Model. A closed-loop instance starts its next inference when the last one ends, so its completions form a
    renewal process: the gaps between consecutive completions are independent draws of one distribution with mean
    mu_i and coefficient of variation cv_i. The count in a sub-window of length T then has variance
    ~ (T / mu_i) * cv_i^2 (the renewal central limit theorem; cv = 1 is Poisson, cv = 0 a clock). Instances run
    independently, so the variances add: Var N = sum_i (n_i * cv_i^2 + 1/6), where n_i is instance i's mean count
    per sub-window (what a stationary process expects in every one) and 1/6 is the counting granularity the
    asymptotic formula leaves out: the inference in flight at each of the two edges counts by its elapsed share,
    a fraction in [0, 1) that, taken as uniform and independent at the two edges, adds 1/12 + 1/12. With
    n = sum_i n_i, a sub-window's deviation from the mean of K equal sub-windows has standard deviation
    sqrt(Var N) * sqrt(1 - 1/K) / n. cv_i comes from the instance's gaps within sub-windows, stalls left out
    (_gap_cv2), so neither a step between sub-windows nor one long pause passes for jitter.

    Checked by simulation (closed loop, lognormal service times, 400 windows each): the renewal term with the true
    cv gives the observed standard deviation of the deviations within 6% for cv 0.05-1 at 15-600 inferences per
    sub-window (cv 0.5, 60 per sub-window: 5.86% observed, 5.77% modelled); time-shared counting at the edges adds
    no measurable variance there, so the 1/6 is an allowance that matters only below ~15 inferences per sub-window.
    The estimated cv (below) reads 0.99 for a cv of 1 at 60 per sub-window, 0.95 at 15, 0.87 at 5.
    Measured with the rule (tests/runner/test_stability_interval.py): a stationary process of ~300 inferences in
    1.5 s, cv 0.5-1, is flagged in 0.8-1.6% of windows (old rule 4-61%); counts of heavy-tailed gaps are skewed,
    so the 1% of the normal model is slightly exceeded.

    Not covered: jitter correlated over many inferences (slow phases lasting tens of inferences, a clock or
    scheduler changing state) makes counts vary more than a renewal process does. The model does not explain such
    phases away: a sub-window they slow by more than the tolerance is still flagged, which is what they are.
    """
    k = len(edges) - 1
    variance = 0.0
    total = 0.0
    for instance_ends, n in zip(ends, counts, strict=True):
        n_i = n / k
        total += n_i
        variance += n_i * _gap_cv2(instance_ends, n, edges) + 1.0 / 6.0
    if total <= 0:
        return 0.0
    return math.sqrt(variance) * math.sqrt(1.0 - 1.0 / k) / total * 100.0


def _gap_cv2(ends: EndChunks, count: int, edges: np.ndarray) -> float:
    """The squared coefficient of variation of the gaps between consecutive completions (`count` ends, in order),
    stalls left out: their variance within sub-windows (each gap about the mean gap of the sub-window it ends in,
    pooled with n - 1 degrees of freedom per sub-window) over the squared mean gap of the window; the whole window's
    variance where no sub-window holds two gaps; 0 with fewer than two gaps.

    Within sub-windows, so that a step or drift between them is not counted as jitter. Over the window's mean, not
    each sub-window's: a sub-window's own mean grows with its largest gaps, and dividing by it read a cv of 1 as
    0.95 at ~60 gaps per sub-window (0.98 this way), which raised the false-alarm rate from 1.4% to 2.5%.

    A gap longer than STALL_FACTOR times the instance's median gap is a stall (the process descheduled, a pause),
    not one inference's jitter, and is left out: a single 278 ms stall among 6 million 0.2 us null inferences read
    as a cv of 466, which "explained" any deviation (the sub-window it fell in was 38% from the mean). A deviation a
    stall causes is judged by the tolerance alone, as before the interval. 50x: a lognormal of cv 1 (heavier than
    any row of docs/results) passes it once in ~800,000 gaps, so the rule's false-alarm rate on such jitter is the
    model's (20x cut a gap in ~5% of 300-inference windows and raised it from 1.6% to 2.6%); the H100 grid's slowest
    inferences sit within 4x of its median; a CPU row's preemptions (4 ms among 25 us inferences) are stalls.
    Stalls shorter than 50 median gaps still count as jitter: one 100 ms stall among 300 inferences of 4 ms widens
    the interval to ~50%.

    Two passes over the ends: the median of an even sample of 100,000-200,000 gaps (every len // 100,000-th, where
    there are more: the stall limit needs no more precision), then each sub-window's count, sum and sum of squared
    deviations, merged chunk by chunk (Chan et al.). Ends that are out of order (a closed loop's never are) are
    sorted in memory first."""
    import numpy as np

    gaps_n = count - 1
    if gaps_n < 2:
        return 0.0
    stride = max(1, gaps_n // 100_000)
    sample: list[np.ndarray] = []
    taken = 0  # gaps seen so far (the global index of the next one)
    for gaps, _later in _gaps(ends):
        if bool((gaps < 0).any()):  # out of order: sorted in memory (never for a closed loop's completions)
            return _gap_cv2(functools.partial(_sorted_once, ends), count, edges)
        sample.append(gaps[(-taken) % stride::stride].copy())  # a copy: a view would keep every chunk's gaps
        taken += len(gaps)
    limit = STALL_FACTOR * float(np.median(np.concatenate(sample)))
    k = len(edges) - 1
    bounds = np.ceil(edges).astype(np.int64)
    n = np.zeros(k)
    mean = np.zeros(k)
    m2 = np.zeros(k)
    for gaps, later in _gaps(ends):
        where = np.searchsorted(bounds, later, side="right") - 1  # the sub-window of each gap's later end
        keep = (where >= 0) & (where < k) & (gaps <= limit)
        where, values = where[keep], gaps[keep].astype(np.float64)
        n_b = np.bincount(where, minlength=k).astype(np.float64)
        sum_b = np.bincount(where, weights=values, minlength=k)
        mean_b = np.divide(sum_b, n_b, out=np.zeros(k), where=n_b > 0)
        m2_b = np.bincount(where, weights=(values - mean_b[where]) ** 2, minlength=k)
        both = n + n_b
        delta = mean_b - mean
        safe = np.where(both > 0, both, 1.0)
        m2 = m2 + m2_b + delta**2 * n * n_b / safe
        mean = np.where(both > 0, mean + delta * n_b / safe, 0.0)
        n = both
    total_n = float(n.sum())
    total_sum = float((mean * n).sum())
    dof = float((n[n >= 2] - 1).sum())
    if total_n < 2 or total_sum <= 0:
        return 0.0
    window_mean = total_sum / total_n
    if dof <= 0:  # no sub-window holds two gaps: the whole window's variance (ddof 1)
        m2_all = float(m2.sum() + (n * (mean - window_mean) ** 2).sum())
        return m2_all / (total_n - 1) / window_mean**2
    return float(m2[n >= 2].sum()) / dof / window_mean**2


def _sorted_once(ends: EndChunks) -> list[np.ndarray]:
    import numpy as np

    return [np.sort(np.concatenate([np.asarray(e, dtype=np.int64) for e in ends()]))]


def _gaps(ends: EndChunks) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(gaps, the later end of each) between consecutive ends, chunk by chunk (a chunk's first gap reaches back to
    the previous chunk's last end)."""
    import numpy as np

    previous: np.ndarray | None = None
    for chunk in ends():
        chunk = np.asarray(chunk, dtype=np.int64)
        if not len(chunk):
            continue
        joined = chunk if previous is None else np.concatenate([previous, chunk])
        previous = chunk[-1:]
        if len(joined) > 1:
            yield np.diff(joined), joined[1:]
