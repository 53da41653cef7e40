"""The interval every benchmark here reports: a percentile-bootstrap interval of the median. No edgebench import:
the benchmarks measure edgebench from outside (its CLI) and compute their statistics themselves.

Same algorithm and defaults (10,000 resamples, seed 0) as the intervals published in docs/results/ before it moved
here from edgebench.runner.interleave (retired since), so re-running a benchmark on the same values gives the same
interval.
"""

from __future__ import annotations

from collections.abc import Sequence


def bootstrap_median_ci(values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000,
                        seed: int = 0) -> tuple[float, float, float]:
    """(median, low, high): the sample median and a percentile-bootstrap interval for it."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    medians = np.median(data[rng.integers(0, data.size, size=(resamples, data.size))], axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(medians, [tail, 100.0 - tail])
    return float(np.median(data)), float(low), float(high)
