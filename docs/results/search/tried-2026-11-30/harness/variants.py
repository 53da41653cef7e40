"""Patch edgebench.search.surrogate (its gp's kernel) with the variant EB_KERNEL names, before search_eval or
surrogate_coverage import it (ev.py, cov.py, trace.py import this first; run them from the repository root):
- v0: as shipped (C x ARD RBF over every feature + white noise);
- v1: C x GroupedRBF with one length scale per categorical axis (the gp-tied of ../tied-kernel/change.diff);
- v2: a shared curve, C x RBF over log2 batch and log2 instances alone, plus v1's term;
- v3: the same shared curve plus the shipped ARD RBF term (../shared-curve-kernel).
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
    return _orig_fit(metric, kind, encoder, points, values, seed, widen)


def model(kind, dims, seed, groups=None):
    v = os.environ.get("EB_KERNEL", "v0")
    if kind != "gp" or v == "v0":
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
            elif isinstance(k.k2, RBF):
                terms.append((amp, list(np.atleast_1d(k.k2.length_scale))))
        elif isinstance(k, WhiteKernel):
            noise = float(k.noise_level)
    dims = max(len(s) for _a, s in terms)
    scales = [min(s[j] if len(s) > 1 else s[0] for _a, s in terms) for j in range(dims)]
    return sum(a for a, _s in terms), np.array(scales), noise


if os.environ.get("EB_KERNEL", "v0") != "v0":
    surrogate._kernel_parts = kernel_parts
