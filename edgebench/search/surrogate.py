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
MIN_SD_LOG (run-to-run noise of a row is a few percent: a model never claims to know a row better), and a gp's at
least LOO_FLOOR x the root mean square of its leave-one-out misses on its own rows (a rough grid is not claimed to
be smooth where it has not been measured). `Fitted.collapsed` says when a gp's own hyperparameters show it cannot
tell configurations apart (search.decide then does not trust it).

The spread of a configuration the model was not fitted on is then widened by its cross-validated miss (`cv_scale`):
the measured configurations split into CV_FOLDS folds, the model refitted (hyperparameters and all) without each
fold, and the fold's rows scored against the intervals that refit gives them; the root mean square of those
standardized misses, when above 1, multiplies the spread. A fit's own likelihood makes it confident where it has
not been tested: on the stored grids the default gp's "95%" intervals held 63-93% of held-out rows before this
(docs/results/search/coverage/surrogate.md), and a leave-one-out with the hyperparameters kept fixed, or with a
configuration's repeats left in, says nothing of it (its misses come out near 1 sd).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from edgebench.errors import EdgebenchError
from edgebench.search.space import Encoder, SearchPoint

SURROGATES = ("gp", "loglinear")
LENGTH_SCALE_BOUNDS = (0.05, 50.0)  # gp: on features scaled to [0, 1] (log2 batch / instances) or 0/1 (categories)
NUMERIC_FEATURES = 2  # gp features: log2 batch and log2 instances first (space.Encoder.row), then the categories
NOISE_SHARE_MAX = 0.5  # gp: a fit whose white-noise term takes more of the variance explains nothing
# gp: a fit never claims to know an unmeasured configuration better than this share of how far it misses its own
# rows, each left out in turn (root mean square, modelled units): where the grid is rough (a latency that dips at
# one batch) those misses are large, and so are the intervals of what it has not seen
LOO_FLOOR = 0.5
MIN_SD_LOG = 0.03  # ~3% of the value
CV_FOLDS = 5  # folds of the cross-validation that widens the spread of configurations not measured
# the cross-validation refits on at most this many rows (a seeded draw of whole configurations): its cost grows as
# rows^3, and a refit on fewer rows tends to miss more, so the widening tends to err wide
CV_MAX_ROWS = 150
# how the cross-validated misses set the widening: "rms" (their root mean square), or "conformal" (the
# ceil((n + 1) 0.95)-th smallest |z| of the n held-out rows over 1.96, split-conformal's 95% quantile: the spread at
# which 95% of the held-out rows would have fallen inside; issue 54)
CV_SCALE_RULE = "rms"
MIN_SD_LINEAR = 0.05  # percentage points, for the accuracy drop
LINEAR_METRICS = ("accuracy_drop_pct",)


def sklearn_missing() -> str | None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return "the adaptive search needs scikit-learn: pip install scikit-learn (or pip install edgebench[search])"
    return None


def min_sd(metric: str) -> float:
    """The least spread a prediction of `metric` is given, in its modelled units (MIN_SD_LINEAR or MIN_SD_LOG)."""
    return MIN_SD_LINEAR if metric in LINEAR_METRICS else MIN_SD_LOG


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
    # the predictive spread is never below this either (modelled units; 0: MIN_SD_* alone): gp, LOO_FLOOR x the
    # root mean square of its leave-one-out residuals
    sd_floor: float = 0.0
    # the spread of a configuration not in `trained` is multiplied by this (>= 1; cv_scale)
    sd_scale: float = 1.0
    trained: frozenset[str] = frozenset()  # keys of the configurations the model was fitted on

    def predict(self, points: Sequence[SearchPoint]) -> tuple[list[float], list[float]]:
        import numpy as np

        X = np.array([_features(self.kind, self.encoder, p) for p in points], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mu, sd = self.model.predict(X, return_std=True)  # type: ignore[attr-defined]
        floor = max(min_sd(self.metric), self.sd_floor)
        scales = [1.0 if p.key in self.trained else self.sd_scale for p in points]
        return [float(m) for m in mu], [max(float(s) * k, floor) for s, k in zip(sd, scales)]

    def collapsed(self, varying: Sequence[int], names: Sequence[str]) -> str | None:
        """Why the fitted model cannot tell configurations apart, from its own hyperparameters (gp only): the
        length scale of a numeric feature that varies (log2 batch, log2 instances) at the upper bound, a model flat
        along it (batch and instances move every metric a search reads, so few rows that say otherwise have not
        seen it yet); every length scale at the lower bound, no configuration informing another; or the noise term
        taking most of the variance. None when none holds. `varying`: indices of the features that vary over the
        space; `names`: every feature's name."""
        if self.kind != "gp" or not varying:
            return None
        import numpy as np

        signal, scales, noise = _kernel_parts(self.model.kernel_)  # type: ignore[attr-defined]
        scales = np.atleast_1d(np.asarray(scales, dtype=float))
        mine = {i: float(scales[i]) if len(scales) > 1 else float(scales[0]) for i in varying}
        lo, hi = LENGTH_SCALE_BOUNDS
        flat = [names[i] for i, v in mine.items() if i < NUMERIC_FEATURES and v >= 0.9 * hi]
        if flat:
            return f"{self.metric}: flat along {' and '.join(flat)} (length scale at its upper bound, {hi:g})"
        mine_values = list(mine.values())
        if all(v >= 0.9 * hi for v in mine_values):
            return f"{self.metric}: every length scale at its upper bound ({hi:g}): a flat model"
        if all(v <= 1.1 * lo for v in mine_values):
            return f"{self.metric}: every length scale at its lower bound ({lo:g}): no configuration informs another"
        if noise / (signal + noise) > NOISE_SHARE_MAX:
            return f"{self.metric}: the noise term takes {noise / (signal + noise):.0%} of the variance"
        return None


def _features(kind: str, enc: Encoder, p: SearchPoint) -> list[float]:
    if kind == "gp":
        return enc.row(p)
    b, i = enc.numeric(p)
    hot = enc.onehot(p)
    return [b, i, b * b, i * i, b * i, *hot, *[h * b for h in hot], *[h * i for h in hot]]


def fit(metric: str, kind: str, encoder: Encoder, points: Sequence[SearchPoint], values: Sequence[float],
        seed: int = 0, widen: bool = True) -> Fitted | None:
    """The model of `metric` from one (point, value) per usable row (repeats are separate observations); None with
    fewer than 2 values that can be modelled. `widen`: widen the spread of unmeasured configurations by the
    cross-validated miss (cv_scale); off only to measure what it changes (benchmarks/surrogate_coverage.py)."""
    import numpy as np

    if kind not in SURROGATES:
        raise EdgebenchError(f"search.surrogate: unknown {kind!r} (one of {', '.join(SURROGATES)})")
    pairs = [(p, t) for p, v in zip(points, values) if (t := transform(metric, float(v))) is not None]
    if len(pairs) < 2:
        return None
    X = np.array([_features(kind, encoder, p) for p, _ in pairs], dtype=float)
    y = np.array([t for _, t in pairs], dtype=float)
    keys = [p.key for p, _ in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the optimiser at a bound: expected with few points
        model = _model(kind, X.shape[1], seed).fit(X, y)  # type: ignore[attr-defined]
        sd_floor = LOO_FLOOR * _loo_rms(model, X) if kind == "gp" else 0.0
        sd_scale = cv_scale(kind, X, y, keys, seed, min_sd(metric)) if widen else 1.0
    return Fitted(metric, kind, encoder, model, len(pairs), sd_floor, sd_scale, frozenset(keys))


def _model(kind: str, dims: int, seed: int) -> object:
    """An unfitted model of `kind` over `dims` features."""
    if kind == "gp":
        import numpy as np
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel
        from sklearn.gaussian_process.kernels import ConstantKernel as C

        kernel = C(1.0, (1e-3, 1e3)) * RBF(np.ones(dims), LENGTH_SCALE_BOUNDS) + WhiteKernel(1e-3, (1e-6, 1.0))
        return GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0, random_state=seed)
    from sklearn.linear_model import BayesianRidge

    return BayesianRidge()


def cv_scale(kind: str, X: object, y: object, keys: Sequence[str], seed: int = 0, floor: float = MIN_SD_LOG) -> float:
    """max(1, root mean square of the cross-validated standardized misses): the configurations (`keys`, one per
    row; a configuration's repeats stay together) dealt into CV_FOLDS folds in a seeded order, the model refitted
    on the others for each fold, and each of the fold's rows taken as (value - predicted mean) / predicted spread.
    1 with fewer than 3 configurations (nothing to hold out and still fit). With more than CV_MAX_ROWS rows, the
    folds are dealt from a seeded subset of whole configurations holding at most that many rows (the first three
    drawn are always kept, so only three configurations of more than CV_MAX_ROWS / 3 rows each can exceed it; a
    configuration too large for what is left is passed over, so the subset leans to configurations with fewer
    repeats). With few configurations the scale rests on few misses: one cliff among them widens every unmeasured
    configuration's spread, as it should until more are measured. The folds are dealt again at every fit, so the
    scale moves from one search step to the next. `floor`: the least spread a prediction is given (MIN_SD_*)."""
    import random

    import numpy as np

    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    configs = sorted(set(keys))
    if len(configs) < 3:
        return 1.0
    random.Random(seed).shuffle(configs)
    rows_of: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        rows_of.setdefault(k, []).append(i)
    kept: list[str] = []
    total = 0
    for c in configs:
        if len(kept) >= 3 and total + len(rows_of[c]) > CV_MAX_ROWS:
            continue
        kept.append(c)
        total += len(rows_of[c])
    zs: list[float] = []
    for f in range(min(CV_FOLDS, len(kept))):  # every fold holds out >= 1 configuration and trains on >= 2
        out = set(kept[f::CV_FOLDS])
        held = [i for c in kept[f::CV_FOLDS] for i in rows_of[c]]
        train = [i for c in kept if c not in out for i in rows_of[c]]
        model = _model(kind, X.shape[1], seed).fit(X[train], y[train])  # type: ignore[attr-defined]
        mu, sd = model.predict(X[held], return_std=True)  # type: ignore[attr-defined]
        zs += list((y[held] - mu) / np.maximum(sd, floor))
    if CV_SCALE_RULE == "conformal":
        ranked = sorted(abs(float(z)) for z in zs)
        rank = min(len(ranked), math.ceil((len(ranked) + 1) * 0.95))
        return max(1.0, ranked[rank - 1] / 1.959964)
    return max(1.0, float(np.sqrt(np.mean(np.square(zs)))))


def _kernel_parts(kernel: object) -> tuple[float, object, float]:
    """(the RBF's amplitude, its length scale(s), the white-noise level) of a fitted gp kernel."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product, Sum, WhiteKernel

    signal, scales, noise = 1.0, None, 0.0
    stack = [kernel]
    while stack:
        k = stack.pop()
        if isinstance(k, Sum):
            stack += [k.k1, k.k2]
        elif isinstance(k, Product) and isinstance(k.k2, RBF) and isinstance(k.k1, ConstantKernel):
            signal, scales = float(k.k1.constant_value), k.k2.length_scale
        elif isinstance(k, WhiteKernel):
            noise = float(k.noise_level)
    return signal, scales, noise


def _loo_rms(model: object, X: object) -> float:
    """The root mean square of a fitted GaussianProcessRegressor's leave-one-out residuals, in the modelled units,
    in closed form (Rasmussen & Williams 5.4.2: residual_i = [K^-1 y]_i / [K^-1]_ii, K with its noise term): how far
    the fit misses each of its own rows when that row is left out."""
    import numpy as np

    K = model.kernel_(X)  # type: ignore[attr-defined]
    K[np.diag_indices_from(K)] += model.alpha  # type: ignore[attr-defined]
    try:
        inv_diag = np.diag(np.linalg.inv(K))
    except np.linalg.LinAlgError:  # pragma: no cover - the white-noise term keeps K positive definite
        return 0.0
    residual = np.ravel(model.alpha_) / inv_diag  # type: ignore[attr-defined]  # normalized units (normalize_y)
    return float(np.sqrt(np.mean(residual ** 2))) * float(np.ravel(getattr(model, "_y_train_std", 1.0))[0])
