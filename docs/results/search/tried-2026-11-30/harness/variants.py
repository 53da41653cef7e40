"""Patch edgebench.search.surrogate (its gp's kernel) with the variant EB_KERNEL names, before search_eval or
surrogate_coverage import it (ev.py, cov.py, trace.py import this first; run them from the repository root):
- v0: as shipped (C x ARD RBF over every feature + white noise);
- v1: C x GroupedRBF with one length scale per categorical axis (the gp-tied of ../tied-kernel/change.diff);
- v2: a shared curve, C x RBF over log2 batch and log2 instances alone, plus v1's term;
- v3: the same shared curve plus the shipped ARD RBF term (../shared-curve-kernel);
- v4: C x an RBF over the numeric features times, per categorical axis, a rank-2 correlation matrix between its
  levels learned per pair (coreg.Coreg; the README's v4 section);
- v5: the shipped kernel, and an unmeasured configuration of a categorical level whose rows sit at fewer than 2
  (batch, instances) positions gets at least the fit's prior spread (one row cannot tell how a level moves
  with batch and instances against the others; ../one-position-level).
The searches' records name the surrogate "gp" whatever the variant (it replaces the gp's kernel)."""
import os
import numpy as np
from edgebench.search import surrogate
from edgebench.search.space import Encoder

_orig_model = surrogate._model
_orig_fit = surrogate.fit
GROUPS = {}  # "current" -> the feature groups of the encoder of the fit under way (set by fit, read by model)


def groups_for(enc: Encoder):
    g = [0, 1]
    axes = {}
    for name, _v in enc.levels:
        axes.setdefault(name, 2 + len(axes))
        g.append(axes[name])
    return tuple(g)


def fit(metric, kind, encoder, points, values, seed=0, widen=True):
    GROUPS["current"] = groups_for(encoder)
    fitted = _orig_fit(metric, kind, encoder, points, values, seed, widen)
    if fitted is not None and kind == "gp" and os.environ.get("EB_KERNEL", "v0") == "v5":
        fitted.one_position = one_position_levels(encoder, points, values, metric)
        fitted.prior_sd = prior_sd(fitted.model)
    return fitted


def one_position_levels(encoder, points, values, metric):
    """The (axis, level) pairs of the encoder whose usable values sit at fewer than 2 (batch, instances) positions."""
    pos = {}
    for p, v in zip(points, values):
        if surrogate.transform(metric, float(v)) is None:
            continue
        for name, value in encoder.levels:
            if p.categories.get(name, "") == value:
                pos.setdefault((name, value), set()).add((p.batch, p.instances))
    return {lv for lv in encoder.levels if len(pos.get(lv, ())) < 2}


def prior_sd(model):
    """The fitted gp's prior spread at any configuration (signal + noise; modelled units)."""
    signal, _scales, noise = surrogate._kernel_parts(model.kernel_)
    return float(np.sqrt(signal + noise)) * float(np.ravel(getattr(model, "_y_train_std", 1.0))[0])


_orig_predict = surrogate.Fitted.predict


def predict(self, points):
    mus, sds = _orig_predict(self, points)
    lv = getattr(self, "one_position", None)
    if not lv:
        return mus, sds
    out = []
    for p, sd in zip(points, sds):
        weak = p.key not in self.trained and any((n, p.categories.get(n, "")) in lv for n, _v in self.encoder.levels)
        out.append(max(sd, self.prior_sd) if weak else sd)
    return mus, out


surrogate.Fitted.predict = predict


def model(kind, dims, seed, groups=None):
    v = os.environ.get("EB_KERNEL", "v0")
    if kind != "gp" or v in ("v0", "v5"):
        return _orig_model(kind, dims, seed)
    from grouped import GroupedRBF
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel as C, WhiteKernel
    g = GROUPS["current"]
    assert len(g) == dims, (g, dims)
    n = max(g) + 1
    bounds = surrogate.LENGTH_SCALE_BOUNDS
    if v == "v1":  # one length scale per categorical axis, product with the numeric RBF
        k = C(1.0, (1e-3, 1e3)) * GroupedRBF(g, np.ones(n), bounds)
    elif v == "v2":  # shared numeric curve + per-axis-tied deviation
        gnum = tuple(x if x < 2 else -1 for x in g)
        k = (C(1.0, (1e-3, 1e3)) * GroupedRBF(gnum, np.ones(2), bounds)
             + C(0.1, (1e-3, 1e3)) * GroupedRBF(g, np.ones(n), bounds))
    elif v == "v3":  # shared numeric curve + ARD deviation (as shipped)
        from sklearn.gaussian_process.kernels import RBF
        gnum = tuple(x if x < 2 else -1 for x in g)
        k = (C(1.0, (1e-3, 1e3)) * GroupedRBF(gnum, np.ones(2), bounds)
             + C(0.1, (1e-3, 1e3)) * RBF(np.ones(dims), bounds))
    elif v == "v4":  # numeric RBF x rank-2 coregionalisation per categorical axis
        from coreg import Coreg
        k = C(1.0, (1e-3, 1e3)) * Coreg(g, rank=2, length_scale_bounds=bounds)
    else:
        raise SystemExit(f"EB_KERNEL={v}?")
    k = k + WhiteKernel(1e-3, (1e-6, 1.0))
    return GaussianProcessRegressor(k, normalize_y=True, n_restarts_optimizer=0, random_state=seed)


surrogate._model = model
surrogate.fit = fit


def kernel_parts(kernel):
    """(total amplitude, per-feature length scale: the shortest over the terms that read it, noise)."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product, Sum, WhiteKernel
    from grouped import GroupedRBF
    terms, noise = [], 0.0
    stack = [kernel]
    while stack:
        k = stack.pop()
        if isinstance(k, Sum):
            stack += [k.k1, k.k2]
        elif isinstance(k, Product) and isinstance(k.k1, ConstantKernel):
            amp = float(k.k1.constant_value)
            if isinstance(k.k2, GroupedRBF):
                ls = k.k2._scales()
                terms.append((amp, [ls[g] if g >= 0 else np.inf for g in k.k2.groups]))
            elif type(k.k2).__name__ == "Coreg":
                terms.append((amp, list(k.k2.equivalent_scales())))
            elif isinstance(k.k2, RBF):
                terms.append((amp, list(np.atleast_1d(k.k2.length_scale))))
        elif isinstance(k, WhiteKernel):
            noise = float(k.noise_level)
    dims = max(len(s) for _a, s in terms)
    scales = [min(s[j] if len(s) > 1 else s[0] for _a, s in terms) for j in range(dims)]
    return sum(a for a, _s in terms), np.array(scales), noise


if os.environ.get("EB_KERNEL", "v0") not in ("v0", "v5"):
    surrogate._kernel_parts = kernel_parts
