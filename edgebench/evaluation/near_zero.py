"""When a cosine against the FP32 reference means nothing: a reference dominated by near-zero values.

A detector's probability map on inputs with nothing to find (PP-OCRv4 det on noise: 99.7% of its FP32 values below
1e-6) rests its cosine on the few values left, and an int8 row whose output step is coarser than those values
returns zeros there: cosine 0.0, although both say "nothing here". The rule, per output over its compared samples:

- dominated: fewer than SPARSE_LIVE_SHARE (1%) of the reference's values reach NEAR_ZERO_REF (1e-6) in |value|
  (PP-OCRv4 det: 0.3%; a class-score vector, an embedding or a feature map: all or nearly all of them);
- and the row cannot represent those values: its output is 0 everywhere (a cosine against a zero vector has no
  direction), or the reference's largest |value| is below half the row's output step (the smallest gap between
  two of its distinct values or between 0 and one of them: an int8 QDQ output is a multiple of its scale), so
  every one of them rounds to the same level.

Such an output gets no cosine; its max abs error and rel_err (max abs error / the reference's peak) still go into
the row, so a row that lost real peaks (rel_err 1: every value above 1e-6 gone) is not hidden. A mostly-zero map
whose peaks are above the row's step keeps its cosine: int8 that finds them scores ~1, int8 that misses them scores
what it misses (tests/evaluation/test_near_zero.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

NEAR_ZERO_REF = 1e-6  # an FP32 value whose |value| is below this carries no direction to compare
SPARSE_LIVE_SHARE = 0.01  # a reference with fewer of its values at or above NEAR_ZERO_REF is dominated by ~0


def output_step(values: np.ndarray) -> float | None:
    """The finest level spacing of a row's output: the smallest positive gap between its distinct values, or
    between 0 and its smallest nonzero |value| when that is smaller; None when it has one value only."""
    import numpy as np

    levels = np.unique(values[np.isfinite(values)])
    gaps = np.diff(levels)
    nonzero = np.abs(levels[levels != 0])
    candidates = [float(gaps.min())] if gaps.size else []
    if nonzero.size and levels.size > 1:
        candidates.append(float(nonzero.min()))
    return min(candidates) if candidates else None


def near_zero_dominated(row: np.ndarray, reference: np.ndarray) -> str | None:
    """Why the cosine of `row` against `reference` (same shape, the compared samples) means nothing, or None when
    it means what it says (see the module's rule)."""
    import numpy as np

    ref = np.abs(reference.astype(np.float64)).ravel()
    if ref.size == 0:
        return None
    live_share = float(np.mean(ref >= NEAR_ZERO_REF))
    if live_share >= SPARSE_LIVE_SHARE:
        return None
    peak = float(ref.max())
    got = row.astype(np.float64).ravel()
    dominated = (f"FP32 dominated by near-zero values ({100 * (1 - live_share):.4g}% of them < {NEAR_ZERO_REF:g}, "
                 f"peak {peak:.3g})")
    if not np.any(got):
        return f"{dominated} and the row's output is all 0: a cosine against zeros has no direction"
    step = output_step(got)
    if step is not None and peak < step / 2:
        return (f"{dominated} below half the row's output step ({step:.3g}): the row cannot represent the values "
                "the cosine rests on")
    return None
