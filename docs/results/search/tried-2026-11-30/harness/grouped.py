"""Experiment: an RBF whose length scales are tied within groups of features (each categorical axis one group)."""
import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel, StationaryKernelMixin, NormalizedKernelMixin


class GroupedRBF(StationaryKernelMixin, NormalizedKernelMixin, Kernel):
    def __init__(self, groups, length_scale=1.0, length_scale_bounds=(0.05, 50.0)):
        self.groups = groups
        self.length_scale = length_scale
        self.length_scale_bounds = length_scale_bounds

    @property
    def n_groups(self):
        return max(self.groups) + 1

    @property
    def hyperparameter_length_scale(self):
        return Hyperparameter("length_scale", "numeric", self.length_scale_bounds, self.n_groups)

    def _scales(self):
        ls = np.broadcast_to(np.asarray(self.length_scale, dtype=float), (self.n_groups,))
        return ls

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        Y = X if Y is None else np.atleast_2d(Y)
        ls = self._scales()
        g = np.asarray(self.groups)
        D = np.zeros((X.shape[0], Y.shape[0], self.n_groups))
        for j in range(X.shape[1]):
            if g[j] >= 0:  # -1: a feature this kernel ignores
                D[:, :, g[j]] += (X[:, j][:, None] - Y[:, j][None, :]) ** 2
        K = np.exp(-0.5 * np.sum(D / ls ** 2, axis=2))
        if not eval_gradient:
            return K
        if self.hyperparameter_length_scale.fixed:
            return K, np.empty((X.shape[0], X.shape[0], 0))
        return K, K[:, :, None] * D / ls ** 2

    def __repr__(self):
        return f"GroupedRBF(groups={self.groups}, length_scale={np.round(self._scales(), 3).tolist()})"
