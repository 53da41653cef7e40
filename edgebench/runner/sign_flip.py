"""Fisher's sign-flip test of a sum, exact, and the interval it inverts to (issue 54, build item 4).

Given K numbers x_1..x_K that are independent and each symmetric about 0 under the null (the backlog's increments
over K sub-windows of a queue whose drift is 0: runner.backlog_growth), every one of the 2^K sign patterns of
|x_1|..|x_K| is as likely as the one observed, so

    p = #{signs e : sum(e_k |x_k|) >= sum(x_k)} / 2^K

is an exact one-sided p-value for "the sum is positive". Nothing is assumed of the numbers' scale: each may have its
own (heteroscedastic), and no variance is estimated from them.

Monotone, the property the verdict needs: raising any x_k never raises p. For a positive x_k raised by d, the observed
sum and every pattern with e_k = +1 rise by d, the patterns with e_k = -1 fall by d; for a negative x_k raised by d
(|x_k| shrinks) the observed sum rises by d, the patterns with e_k = -1 rise by d and those with e_k = +1 fall by d.
Either way no pattern passes the observed sum that did not before. A t-test lacks this: one large increment inflates
the standard deviation it divides by (a single outlier among K pulls t towards 1, whatever its size), so a bigger
backlog could read as weaker evidence.

The interval: shifting every x_k by -r tests "the drift per sub-window is at most r"; p is non-decreasing in r,
so the one-sided bounds are found by bisection. Exact enumeration is done by meeting in the middle: the 2^(K/2)
signed sums of each half, one sorted and searched (K = 16: 256 x 256, microseconds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

_BISECT_STEPS = 60  # halvings of the bracket: far below any count's resolution


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """The 2^len(values) sums of +-values, in no particular order."""
    import numpy as np

    sums = np.zeros(1)
    for v in values:
        sums = np.concatenate([sums + v, sums - v])
    return sums


def sign_flip_p(x: Any) -> float:
    """P(sum of e_k |x_k| >= sum of x_k) over all 2^K equally likely sign patterns e (exact; K <= 24)."""
    import numpy as np

    values = np.asarray(x, dtype=np.float64)
    k = len(values)
    if k == 0:
        return 1.0
    if k > 24:
        raise ValueError(f"sign_flip_p enumerates 2^K patterns; K = {k} is too many (at most 24)")
    size = np.abs(values)
    observed = float(values.sum())
    tol = 1e-9 * (1.0 + float(size.sum()))  # sums of the same values in another order: equal within rounding
    left = _signed_sums(size[: k // 2])
    right = np.sort(_signed_sums(size[k // 2:]))
    at_least = len(right) - np.searchsorted(right, observed - left - tol, side="left")
    return float(at_least.sum()) / float(2**k)


def sign_flip_bounds(x: Any, alpha: float) -> tuple[float, float]:
    """(lo, hi): the one-sided (1 - alpha) bounds of the shift r of x (the drift per element) that the sign-flip test
    inverts to. lo is the largest r that the test of 'drift <= r' still rejects at alpha (sign_flip_p(x - r) <= alpha),
    hi the smallest that 'drift >= r' rejects (sign_flip_p(r - x) <= alpha). With K elements the test cannot reject
    below 2^-K: where 2^-K > alpha the bounds are -inf and +inf."""
    import numpy as np

    values = np.asarray(x, dtype=np.float64)
    if len(values) == 0 or 2.0 ** -len(values) > alpha:
        return -np.inf, np.inf
    spread = float(values.max() - values.min()) + 1.0
    lo = _last_rejected(lambda r: sign_flip_p(values - r) <= alpha, float(values.min()) - spread,
                        float(values.max()) + spread)
    hi = -_last_rejected(lambda r: sign_flip_p(-values - r) <= alpha, float(-values.max()) - spread,
                         float(-values.min()) + spread)
    return lo, hi


def _last_rejected(rejects: Any, below: float, above: float) -> float:
    """The edge between `below` (rejected: every element minus it is positive) and `above` (never rejected), for a
    `rejects(r)` that is true up to some r and false after it."""
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (below + above)
        if rejects(mid):
            below = mid
        else:
            above = mid
    return below
