"""Checks of coreg.Coreg (run from the repository root; output in ../coreg-check.txt):
1. its gradient (central differences in log space) against scikit-learn's numerical one, at random hyperparameters;
2. fitted on 60 rows of two pairs of levels (0 and 1 on one curve, 2 and 3 on another), the correlations it learns.
    PYTHONPATH=$PWD .venv/bin/python docs/results/search/tried-2026-11-30/harness/coreg_check.py"""
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coreg import Coreg  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel as C, WhiteKernel, _approx_fprime  # noqa: E402

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
n = 60
b, i, lev = rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.integers(0, 4, n)
X = np.column_stack([b, i, np.eye(4)[lev]])
y = np.where(lev < 2, 3 * b + 0.5 * i, b - 0.5 * i) + 0.02 * rng.standard_normal(n)
k = Coreg((0, 1, 2, 2, 2, 2), rank=2)
k.theta = k.theta + rng.normal(0, 0.3, k.theta.shape)
_K, G = k(X, eval_gradient=True)
numeric = _approx_fprime(k.theta, lambda t: k.clone_with_theta(t)(X), 1e-7)
print(f"gradient: largest difference {np.abs(G - numeric).max():.1e} (largest entry {np.abs(G).max():.2f})")
gp = GaussianProcessRegressor(C(1.0, (1e-3, 1e3)) * Coreg((0, 1, 2, 2, 2, 2), rank=2) + WhiteKernel(1e-3, (1e-6, 1)),
                              normalize_y=True, random_state=0).fit(X, y)
print("learned correlations between the 4 levels:")
print(np.round(gp.kernel_.k1.k2.correlations()[0], 3))
