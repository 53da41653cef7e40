"""Median and a confidence interval over repeats: what a paper table gives per configuration.

The interval is a percentile bootstrap of the median (B resamples with replacement, a fixed seed, so a
report is reproducible from its CSV): with few repeats it is wide, which is the point. One value has no
interval (n = 1 says so); the ratio of two medians (a speedup) gets its interval by resampling both sides
independently. Pure Python: no numpy needed to read a run.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0
METHOD = f"bootstrap {LEVEL:.0%} CI of the median ({RESAMPLES} percentile resamples, seed {SEED})"


@dataclass(frozen=True)
class Interval:
    median: float | None
    lo: float | None  # None: fewer than 2 values, no interval
    hi: float | None
    n: int

    def text(self, digits: int = 4) -> str:
        """'123.4 [120.1, 125.0]' for tables; the median alone (n=1) or '' (no value)."""
        if self.median is None:
            return ""
        med = _fmt(self.median, digits)
        if self.lo is None or self.hi is None:
            return f"{med} (n=1, no CI)"
        return f"{med} [{_fmt(self.lo, digits)}, {_fmt(self.hi, digits)}]"


def _fmt(value: float, digits: int) -> str:
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2g}"
    text = f"{value:.{digits}g}"
    return text if "e" not in text else f"{value:.0f}"


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 1]."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_ci(values: list[float], level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED) -> Interval:
    vals = [float(v) for v in values]
    if not vals:
        return Interval(None, None, None, 0)
    med = statistics.median(vals)
    if len(vals) < 2:
        return Interval(med, None, None, 1)
    rng = random.Random(seed)
    boots = sorted(statistics.median(rng.choices(vals, k=len(vals))) for _ in range(resamples))
    alpha = (1.0 - level) / 2
    return Interval(med, _percentile(boots, alpha), _percentile(boots, 1 - alpha), len(vals))


def ratio_ci(numerator: list[float], denominator: list[float], level: float = LEVEL, resamples: int = RESAMPLES,
             seed: int = SEED) -> Interval:
    """median(numerator) / median(denominator), with a bootstrap interval when both sides have >= 2 values."""
    num = [float(v) for v in numerator]
    den = [float(v) for v in denominator if v]
    if not num or not den:
        return Interval(None, None, None, 0)
    ratio = statistics.median(num) / statistics.median(den)
    n = min(len(num), len(den))
    if len(num) < 2 or len(den) < 2:
        return Interval(ratio, None, None, n)
    rng = random.Random(seed)
    boots = sorted(statistics.median(rng.choices(num, k=len(num))) / statistics.median(rng.choices(den, k=len(den)))
                   for _ in range(resamples))
    alpha = (1.0 - level) / 2
    return Interval(ratio, _percentile(boots, alpha), _percentile(boots, 1 - alpha), n)
