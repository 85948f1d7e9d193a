"""
Validation paths: the iteration count is the regulariser
=========================================================

NYTRO fits by iterating; after each iteration it records the hold-out RMSE, and the
selected model is the iterate with the smallest one. This example draws the paths of the
paper's gradient descent (``method="gd"``), of conjugate gradients (``"cg"``) and of the
default ``"hybrid"`` on the same synthetic problem, centres and hold-out split. On this
easy problem CG and hybrid follow the same path and stop within a few tens of
iterations, where gradient descent needs hundreds.
"""
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from nytro import NytroRegressor

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(4000, 5))
y = np.sin(3 * X[:, 0]) * X[:, 1] + 0.1 * rng.standard_normal(len(X))

fig, ax = plt.subplots(figsize=(7, 4))
for method, color, style in [("gd", "tab:purple", "-"), ("cg", "tab:green", "-"), ("hybrid", "tab:orange", "--")]:
    # n_iter_no_change=None draws the whole path (the default ends it 50 iterations
    # after its last improvement).
    model = NytroRegressor(n_centers=300, sigma=0.5, method=method, max_iter=300, n_iter_no_change=None,
                           random_state=0, n_threads=2)
    with warnings.catch_warnings():  # GD's path is still improving at t = 300
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    path = model.validation_rmse_
    ax.semilogx(np.arange(1, len(path) + 1), path, color=color, ls=style, label=f"{method}: t* = {model.n_iter_}")
    ax.plot(model.n_iter_, path[model.n_iter_ - 1], "o", color=color)
ax.set(xlabel="iteration t", ylabel="hold-out RMSE", title="Validation paths (n = 3200 + 800 hold-out, m = 300)")
ax.legend()
plt.show()
