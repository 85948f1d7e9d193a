"""
Regularisation path against lambda
==================================

Nyström KRLS regularises with a penalty lambda and needs one solve per value of the
paper's grid (100 values in [1e-15, 1]); NYTRO regularises by stopping, and the
iteration t plays the role of lambda = 1 / (step * t). This example draws NKRLS's hold-out
RMSE against lambda and, on the same axis, NYTRO's gradient-descent path mapped through
that correspondence, with the same centres and hold-out split.
"""
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from nytro import NystromKRLSRegressor, NytroRegressor

rng = np.random.default_rng(1)
X = rng.uniform(-1, 1, size=(3000, 4))
y = np.cos(2 * X[:, 0] + X[:, 1]) + 0.2 * rng.standard_normal(len(X))

common = dict(n_centers=300, sigma=0.7, random_state=0, n_threads=2)
nkrls = NystromKRLSRegressor(**common).fit(X, y)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    gd = NytroRegressor(method="gd", max_iter=2000, n_iter_no_change=None, **common).fit(X, y)

n_fit = round(0.8 * len(X))
t = np.arange(1, len(gd.validation_rmse_) + 1)
# The GD filter after t steps of size s is close to Tikhonov's at lambda * n = 1 / (s t)
# (the paper's lambda = 1/(gamma t)); lambdas_ are before the factor n.
lam_of_t = 1.0 / (gd.step_size_ * t * n_fit)

fig, ax = plt.subplots(figsize=(7, 4))
ax.loglog(nkrls.lambdas_, nkrls.validation_rmse_, color="tab:orange", label=f"NKRLS, lambda* = {nkrls.lambda_:.2g}")
ax.loglog(lam_of_t, gd.validation_rmse_, color="tab:purple", label=f"NYTRO (gd), t* = {gd.n_iter_}")
ax.axvline(nkrls.lambda_, color="tab:orange", ls=":")
ax.set(xlabel="lambda (NYTRO: 1 / (step t n))", ylabel="hold-out RMSE", title="Two regularisation paths")
ax.legend()
plt.show()
