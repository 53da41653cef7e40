"""A model of one metric over the search space, with a predictive interval (scikit-learn, imported lazily).

Two kinds, compared on real grids by benchmarks/search_eval.py (docs/results/search/README.md has the numbers that
chose the default):
- `gp`: a Gaussian process (ARD RBF kernel over the scaled log2 batch / log2 instances and the one-hot categories,
  plus a white-noise term for run-to-run noise), fitted on the log of the metric;
- `loglinear`: Bayesian ridge regression on log metric with a quadratic in log2 batch and log2 instances, their
  product, the categories and each category's slope in batch and instances (per precision/placement curves
  sharing one shape).
Metrics that are positive and multiplicative (throughput, power, energy, latency) are modelled in log space; the
accuracy drop (percentage points, can be 0 or negative) as it is. Every prediction's spread is at least
MIN_SD_LOG (run-to-run noise of a row is a few percent: a model never claims to know a row better).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from edgebench.errors import EdgebenchError
from edgebench.search.space import Encoder, SearchPoint

SURROGATES = ("gp", "loglinear")
MIN_SD_LOG = 0.03  # ~3% of the value
MIN_SD_LINEAR = 0.05  # percentage points, for the accuracy drop
LINEAR_METRICS = ("accuracy_drop_pct",)


def sklearn_missing() -> str | None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return "the adaptive search needs scikit-learn: pip install scikit-learn (or pip install edgebench[search])"
    return None


def transform(metric: str, value: float) -> float | None:
    if metric in LINEAR_METRICS:
        return value
    return math.log(value) if value > 0 else None


def inverse(metric: str, value: float) -> float:
    return value if metric in LINEAR_METRICS else math.exp(value)


@dataclass
class Fitted:
    """Predictions of one metric in its modelled space (log, or linear for LINEAR_METRICS)."""
    metric: str
    kind: str
    encoder: Encoder
    model: object
    n: int

    def predict(self, points: Sequence[SearchPoint]) -> tuple[list[float], list[float]]:
        import numpy as np

        X = np.array([_features(self.kind, self.encoder, p) for p in points], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mu, sd = self.model.predict(X, return_std=True)  # type: ignore[attr-defined]
        floor = MIN_SD_LINEAR if self.metric in LINEAR_METRICS else MIN_SD_LOG
        return [float(m) for m in mu], [max(float(s), floor) for s in sd]


def _features(kind: str, enc: Encoder, p: SearchPoint) -> list[float]:
    if kind == "gp":
        return enc.row(p)
    b, i = enc.numeric(p)
    hot = enc.onehot(p)
    return [b, i, b * b, i * i, b * i, *hot, *[h * b for h in hot], *[h * i for h in hot]]


def fit(metric: str, kind: str, encoder: Encoder, points: Sequence[SearchPoint], values: Sequence[float],
        seed: int = 0) -> Fitted | None:
    """The model of `metric` from one (point, value) per usable row (repeats are separate observations); None with
    fewer than 2 values that can be modelled."""
    import numpy as np

    pairs = [(p, t) for p, v in zip(points, values) if (t := transform(metric, float(v))) is not None]
    if len(pairs) < 2:
        return None
    X = np.array([_features(kind, encoder, p) for p, _ in pairs], dtype=float)
    y = np.array([t for _, t in pairs], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the optimiser at a bound: expected with few points
        if kind == "gp":
            from sklearn.gaussian_process import GaussianProcessRegressor
            from sklearn.gaussian_process.kernels import RBF, WhiteKernel
            from sklearn.gaussian_process.kernels import ConstantKernel as C

            kernel = (C(1.0, (1e-3, 1e3)) * RBF(np.ones(X.shape[1]), (0.05, 50.0))
                      + WhiteKernel(1e-3, (1e-6, 1.0)))
            model: object = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0,
                                                     random_state=seed).fit(X, y)
        elif kind == "loglinear":
            from sklearn.linear_model import BayesianRidge

            model = BayesianRidge().fit(X, y)
        else:
            raise EdgebenchError(f"search.surrogate: unknown {kind!r} (one of {', '.join(SURROGATES)})")
    return Fitted(metric, kind, encoder, model, len(pairs))
