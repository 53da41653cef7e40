"""Median and an interval over repeats that states the coverage it really has.

The interval of the median is the distribution-free order-statistic interval [x(k), x(n-k+1)] of the sorted
repeats: for any continuous distribution it holds the true median with probability
    1 - 2 * P(Binomial(n, 1/2) <= k - 1),
whatever the shape (normal, skewed, bimodal). The widest k whose coverage reaches LEVEL (95%) is used; at n <= 5
no k does, so the interval is [min, max] and its label says what it covers: n=2 50%, n=3 75%, n=4 87.5%, n=5 93.8%,
n=6 96.9%. (A percentile bootstrap of the median gives the same [min, max] at n=2-3 and calls it 95%: it is not.)
benchmarks/interval_coverage.py checks the stated coverage against 10,000 draws of known distributions.

The ratio of two medians (a speedup) is bounded by its sides' intervals, [lo_a / hi_b, hi_a / lo_b]: with
independent sides it holds the ratio of the true medians at least as often as both intervals hold theirs, so its
stated coverage is the product of theirs (a lower bound). Pure Python: no numpy needed to read a run.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

LEVEL = 0.95
METHOD = ("distribution-free order-statistic interval of the median, coverage stated per interval "
          f"({LEVEL:.0%} needs >= 6 repeats; [min, max] of 2/3/4/5 repeats covers 50/75/87.5/93.8%)")


@dataclass(frozen=True)
class Interval:
    median: float | None
    lo: float | None  # None: fewer than 2 values, no interval
    hi: float | None
    n: int
    coverage: float | None = None  # the probability the interval holds the true value (None: no interval)

    def meets(self, level: float = LEVEL) -> bool:
        """Whether the interval's coverage reaches `level` (a 95% claim may be made of it)."""
        return self.coverage is not None and self.coverage >= level - 1e-12

    def coverage_text(self) -> str:
        """'95%' style label of the coverage: '50%', '87.5%', '96.9%'; '' without an interval."""
        return "" if self.coverage is None else percent(self.coverage)

    def text(self, digits: int = 4) -> str:
        """'123.4 [120.1, 125.0]' for tables, with the coverage where it is below LEVEL ('... (75%)'); the median
        alone (n=1) or '' (no value)."""
        if self.median is None:
            return ""
        med = _fmt(self.median, digits)
        if self.lo is None or self.hi is None:
            return f"{med} (n=1, no CI)"
        below = "" if self.meets() else f" ({self.coverage_text()} interval)"
        return f"{med} [{_fmt(self.lo, digits)}, {_fmt(self.hi, digits)}]{below}"


def percent(p: float) -> str:
    """0.5 -> '50%', 0.875 -> '87.5%', 0.9375 -> '93.8%', 0.96875 -> '96.9%'."""
    text = f"{p * 100:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def _fmt(value: float, digits: int) -> str:
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2g}"
    text = f"{value:.{digits}g}"
    return text if "e" not in text else f"{value:.0f}"


def order_stat_coverage(n: int, k: int) -> float:
    """P(x(k) <= true median <= x(n-k+1)) for n independent draws of a continuous distribution (1 <= k <= n/2)."""
    tail = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1.0 - 2.0 * tail


def order_stat_rank(n: int, level: float = LEVEL) -> tuple[int, float]:
    """(k, coverage): the largest k whose [x(k), x(n-k+1)] reaches `level`, else k = 1 ([min, max]) with the
    coverage it has."""
    best = (1, order_stat_coverage(n, 1))
    for k in range(2, n // 2 + 1):
        cov = order_stat_coverage(n, k)
        if cov < level:
            break
        best = (k, cov)
    return best


def repeats_for(level: float = LEVEL) -> int:
    """The fewest repeats whose [min, max] reaches `level` (6 for 95%)."""
    n = 2
    while order_stat_coverage(n, 1) < level:
        n += 1
    return n


def median_ci(values: list[float], level: float = LEVEL) -> Interval:
    vals = sorted(float(v) for v in values)
    if not vals:
        return Interval(None, None, None, 0)
    med = statistics.median(vals)
    n = len(vals)
    if n < 2:
        return Interval(med, None, None, 1)
    k, coverage = order_stat_rank(n, level)
    return Interval(med, vals[k - 1], vals[n - k], n, coverage)


def ratio_ci(numerator: list[float], denominator: list[float], level: float = LEVEL) -> Interval:
    """median(numerator) / median(denominator), with [lo_num / hi_den, hi_num / lo_den] when both sides have an
    interval (coverage: the product of the sides', a lower bound)."""
    num = [float(v) for v in numerator]
    den = [float(v) for v in denominator if v]
    if not num or not den:
        return Interval(None, None, None, 0)
    a, b = median_ci(num, level), median_ci(den, level)
    assert a.median is not None and b.median is not None
    ratio = a.median / b.median
    n = min(a.n, b.n)
    if a.lo is None or a.hi is None or b.lo is None or b.hi is None or b.lo <= 0:
        return Interval(ratio, None, None, n)
    cov = (a.coverage or 0.0) * (b.coverage or 0.0)
    return Interval(ratio, a.lo / b.hi, a.hi / b.lo, n, cov)


def rank_test_confidence(better: list[float], worse: list[float], higher_is_better: bool) -> float | None:
    """1 - p of the exact one-sided rank-sum (Mann-Whitney) test that `better`'s values are better than `worse`'s:
    p is the share of the C(n+m, n) ways to split the pooled values whose rank sum is at least the one observed,
    were both sides drawn from one distribution (ties get mid-ranks). Distribution-free: 3 vs 3 repeats with every
    value of one side better gives 1 - 1/20 = 0.95; 2 vs 2 at most 1 - 1/6. None when a side is empty. The count is
    exact (a dynamic programme over the doubled mid-ranks), not a normal approximation. Its level holds for a
    direction fixed before the data were seen; `best` picks the direction from the data: picked_confidence."""
    a, b = [float(v) for v in better], [float(v) for v in worse]
    if not a or not b:
        return None
    sign = 1.0 if higher_is_better else -1.0
    pooled = sorted([(sign * v, 0) for v in a] + [(sign * v, 1) for v in b])
    ranks2: list[int] = []  # doubled mid-ranks (integers), in pooled order
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        ranks2 += [i + j + 2] * (j - i + 1)  # mid-rank (i+1 + j+1) / 2, doubled
        i = j + 1
    observed = sum(r for r, (_v, side) in zip(ranks2, pooled) if side == 0)
    n = len(a)
    # ways[c][s]: subsets of c of the ranks seen so far with doubled rank sum s
    top = sum(ranks2)
    ways = [[0] * (top + 1) for _ in range(n + 1)]
    ways[0][0] = 1
    for r in ranks2:
        for c in range(n, 0, -1):
            row, prev = ways[c], ways[c - 1]
            for s in range(top, r - 1, -1):
                if prev[s - r]:
                    row[s] += prev[s - r]
    total = math.comb(len(pooled), n)
    return 1.0 - sum(ways[n][observed:]) / total


def picked_confidence(picked: list[float], other: list[float], higher_is_better: bool) -> float | None:
    """The confidence that `picked` is better than `other` when `picked` was chosen from the data as the better of
    the two (`best` ranks by the median first, then tests): 1 - 2p, p the exact one-sided rank test's
    (rank_test_confidence). Choosing the direction after seeing the data makes the one-sided test two-sided in
    effect: two identical configurations come out "better at 95%" one way or the other 2 x 5% of the time, so the
    one-sided p is doubled (the two-sided exact test). Clipped at 0; None when a side is empty."""
    conf = rank_test_confidence(picked, other, higher_is_better)
    return None if conf is None else max(0.0, 1.0 - 2.0 * (1.0 - conf))


def all_apart_chance(n: int, m: int) -> float:
    """The chance that n repeats of one configuration all fall beyond (below, say) m of another alike one: 1 / C(n + m,
    n), the exact rank test's smallest one-sided p (continuous values, exchangeable repeats)."""
    return 1.0 / math.comb(n + m, n)


def most_picked_confidence(n_picked: int, n_other: int) -> float:
    """The highest picked_confidence any n vs m repeats can give (every value of one side beyond the other's):
    1 - 2 / C(n + m, n). 4 vs 4: 97.1%; 3 vs 3: 90%; 3 vs 5: 96.4%."""
    if n_picked < 1 or n_other < 1:
        return 0.0
    return 1.0 - 2.0 * all_apart_chance(n_picked, n_other)


def spread_ratio(a: list[float], b: list[float]) -> float:
    """How many times wider one side's repeats spread than the other's: the ratio of their ranges (max - min), the
    wider over the narrower; 1 when both are flat, infinite when only one is. Fewer than 2 values a side: 1."""
    if len(a) < 2 or len(b) < 2:
        return 1.0
    ra, rb = max(a) - min(a), max(b) - min(b)
    wide, narrow = max(ra, rb), min(ra, rb)
    if wide == 0:
        return 1.0
    return math.inf if narrow == 0 else wide / narrow
