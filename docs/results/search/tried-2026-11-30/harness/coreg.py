"""Experiment: an RBF over the numeric features times, for each categorical axis, a correlation matrix between its
levels learned per pair (coregionalisation, rank `rank`): B = W W^T + diag(kappa), taken as a correlation
(unit diagonal); the amplitude is the ConstantKernel's. W and kappa are positive (scikit-learn optimises the log of
every hyperparameter), so every correlation is positive; rank 2 lets two groups of levels (fp16 and amp; fp32 and
tf32) be close within and far across, which one length scale per one-hot column (the shipped ARD kernel: the
correlation of levels p and q is r_p r_q) cannot. The gradient is taken by central differences in log space (the
kernels here are at most a few hundred rows)."""
import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

STEP = 1e-5  # central-difference step in log space


class Coreg(Kernel):
    def __init__(self, groups, rank=2, length_scale=1.0, length_scale_bounds=(0.05, 50.0), factors=None,
                 factors_bounds=(1e-3, 1e2), kappa=None, kappa_bounds=(1e-3, 1e2)):
        self.groups = groups  # per feature: 0, 1 the numeric features; k >= 2 the categorical axis of a one-hot column
        self.rank = rank
        self.length_scale = length_scale
        self.length_scale_bounds = length_scale_bounds
        self.factors = factors
        self.factors_bounds = factors_bounds
        self.kappa = kappa
        self.kappa_bounds = kappa_bounds

    # --- layout -------------------------------------------------------------------------------------------------
    @property
    def numeric(self):
        return [j for j, g in enumerate(self.groups) if g < 2]

    @property
    def axes(self):
        """[(columns of the axis's one-hot levels)] in axis order."""
        out = {}
        for j, g in enumerate(self.groups):
            if g >= 2:
                out.setdefault(g, []).append(j)
        return [out[g] for g in sorted(out)]

    @property
    def n_levels(self):
        return sum(len(c) for c in self.axes)

    def _factors(self):
        if self.factors is None:  # asymmetric start: identical columns would stay identical (rank 1) under the fit
            cols = [np.ones(self.n_levels)] + [np.linspace(0.3, 3.0, self.n_levels) ** (r % 2 * 2 - 1) for r in
                                               range(1, self.rank)]
            return np.stack(cols, axis=1).ravel()
        return np.broadcast_to(np.asarray(self.factors, dtype=float), (self.n_levels * self.rank,))

    def _kappa(self):
        k = 0.5 if self.kappa is None else self.kappa
        return np.broadcast_to(np.asarray(k, dtype=float), (self.n_levels,))

    def _scales(self):
        return np.broadcast_to(np.asarray(self.length_scale, dtype=float), (len(self.numeric),))

    # --- hyperparameters ----------------------------------------------------------------------------------------
    @property
    def hyperparameter_length_scale(self):
        return Hyperparameter("length_scale", "numeric", self.length_scale_bounds, len(self.numeric))

    @property
    def hyperparameter_factors(self):
        return Hyperparameter("factors", "numeric", self.factors_bounds, self.n_levels * self.rank)

    @property
    def hyperparameter_kappa(self):
        return Hyperparameter("kappa", "numeric", self.kappa_bounds, self.n_levels)

    def _full(self):
        return {"length_scale": self._scales(), "factors": self._factors(), "kappa": self._kappa()}

    @property
    def theta(self):  # every hyperparameter at full length, in the base class's (alphabetical) order, as bounds is
        full = self._full()
        return np.log(np.concatenate([full[h.name] for h in self.hyperparameters]))

    @theta.setter
    def theta(self, theta):
        values, i = np.exp(np.asarray(theta, dtype=float)), 0
        for h in self.hyperparameters:
            setattr(self, h.name, values[i:i + h.n_elements].copy())
            i += h.n_elements

    def _split(self, values):
        """(length scales, factors, kappa) from exponentiated theta, in the base class's (alphabetical) order."""
        out, i = {}, 0
        for h in self.hyperparameters:
            out[h.name] = values[i:i + h.n_elements]
            i += h.n_elements
        return out["length_scale"], out["factors"], out["kappa"]

    # --- the kernel ---------------------------------------------------------------------------------------------
    def correlations(self, values=None):
        """Per axis, the levels' correlation matrix at `values` (theta, exponentiated; default the current)."""
        _ls, f, kap = self._split(np.exp(self.theta) if values is None else values)
        W = f.reshape(self.n_levels, self.rank)
        out, start = [], 0
        for cols in self.axes:
            w, k = W[start:start + len(cols)], kap[start:start + len(cols)]
            B = w @ w.T + np.diag(k)
            d = np.sqrt(np.diag(B))
            out.append(B / d[:, None] / d[None, :])
            start += len(cols)
        return out

    def _eval(self, X, Y, values):
        ls = self._split(values)[0]
        num = self.numeric
        D = (X[:, num][:, None, :] - Y[:, num][None, :, :]) / ls
        K = np.exp(-0.5 * np.sum(D ** 2, axis=2))
        for cols, R in zip(self.axes, self.correlations(values)):
            lx, ly = np.argmax(X[:, cols], axis=1), np.argmax(Y[:, cols], axis=1)
            K = K * R[lx][:, ly]
        return K

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        same = Y is None
        Y = X if same else np.atleast_2d(Y)
        theta = self.theta
        K = self._eval(X, Y, np.exp(theta))
        if not eval_gradient:
            return K
        if not same:
            raise ValueError("gradient only when Y is None")
        G = np.empty(K.shape + (len(theta),))
        for i in range(len(theta)):
            up, down = theta.copy(), theta.copy()
            up[i] += STEP
            down[i] -= STEP
            G[:, :, i] = (self._eval(X, X, np.exp(up)) - self._eval(X, X, np.exp(down))) / (2 * STEP)
        return K, G

    def diag(self, X):
        return np.ones(np.atleast_2d(X).shape[0])

    def is_stationary(self):
        return False

    def equivalent_scales(self):
        """Per feature, a length scale a reader of the shipped ARD kernel can take in: the numeric ones as they are;
        for a one-hot column, the ARD scale whose correlation with the axis's other levels (taken alike) is this
        level's mean correlation with them, exp(-1 / l^2)."""
        out = np.zeros(len(self.groups))
        for j, s in zip(self.numeric, self._scales()):
            out[j] = s
        for cols, R in zip(self.axes, self.correlations()):
            for i, j in enumerate(cols):
                others = [R[i, k] for k in range(len(cols)) if k != i]
                rho = float(np.clip(np.mean(others), 1e-12, 1 - 1e-12))
                out[j] = float(np.clip(np.sqrt(-1.0 / np.log(rho)), *self.length_scale_bounds))
        return out

    def __repr__(self):
        R = [np.round(r, 2).tolist() for r in self.correlations()]
        return f"Coreg(rank={self.rank}, length_scale={np.round(self._scales(), 3).tolist()}, correlations={R})"
