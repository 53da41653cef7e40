"""MLPerf LoadGen's early-stopping rule for a percentile latency bound (issue 54, build item 4): may a window's
queries claim "the p-th percentile latency is within the bound" at a stated confidence?

The math (LoadGen's Server scenario; implemented here from it, not from its code). Each query is over the bound
or not. If the percentile were exactly at the bound, each query would be over it with probability q = 1 - p, and the
number over among n queries would be Binomial(n, q). Seeing `over` or fewer of n is then unlikely when

    P(Binomial(n, q) <= over) <= 1 - confidence,

and the claim "the p-th percentile is within the bound" holds at `confidence` (one-sided: a percentile further above
the bound makes so few overs less likely still). The least n that satisfies it for a given `over` is LoadGen's h + t
(its `find_min_passing` returns h, the queries under the bound); at p = 0.99 and confidence 0.99 with no query over
the bound that is 459 (log 0.01 / log 0.99 = 458.2), the figure LoadGen's summaries print. LoadGen's Server verdict
is VALID when the percentile is within the bound AND this holds over every query it issued, including those still
queued when the run ended (it waits for them); runner.load counts the arrivals still queued at a window's end that
had waited longer than the bound as over it, so the two count the same queries.
"""

from __future__ import annotations

import math

EARLY_STOPPING_CONFIDENCE = 0.99  # LoadGen's
TARGET_PERCENTILE = 0.99  # p99


def over_at_most_probability(over: int, queries: int, percentile: float = TARGET_PERCENTILE) -> float:
    """P(Binomial(queries, 1 - percentile) <= over): how likely so few overs were if the percentile sat at the bound.
    Summed in log space (a window of millions of queries underflows p^n)."""
    import numpy as np

    if queries <= 0 or over >= queries:
        return 1.0
    if over < 0:
        return 0.0
    q = 1.0 - percentile
    i = np.arange(1, over + 1, dtype=np.float64)
    # log C(n, x) q^x p^(n-x) for x = 0..over, by its ratio to the term before
    steps = np.log(queries - i + 1) - np.log(i) + math.log(q) - math.log(percentile)
    logs = queries * math.log(percentile) + np.concatenate([[0.0], np.cumsum(steps)])
    top = float(logs.max())
    return min(1.0, math.exp(top) * float(np.exp(logs - top).sum()))


def early_stopping_met(over: int, queries: int, percentile: float = TARGET_PERCENTILE,
                       confidence: float = EARLY_STOPPING_CONFIDENCE) -> bool:
    """True when `queries` with `over` of them over the bound show the percentile within it at `confidence`."""
    return over_at_most_probability(over, queries, percentile) <= 1.0 - confidence


def queries_needed(over: int, percentile: float = TARGET_PERCENTILE,
                   confidence: float = EARLY_STOPPING_CONFIDENCE) -> int:
    """The fewest queries with `over` of them over the bound that meet the rule (LoadGen's h + t): 459 for none over
    at p99 / 99%. Any more queries, none of them over, meet it too (the probability falls as queries grow)."""
    low = max(over + 1, math.ceil((over + 1) / (1.0 - percentile)) // 2)  # below the mean count of overs: never met
    high = max(low, 2 * math.ceil((over + 1) / (1.0 - percentile)))
    while not early_stopping_met(over, high, percentile, confidence):
        low, high = high, 2 * high
    while low < high:  # early_stopping_met is false below the answer and true from it on
        mid = (low + high) // 2
        if early_stopping_met(over, mid, percentile, confidence):
            high = mid
        else:
            low = mid + 1
    return low
