"""Plots of validation paths (matplotlib, written to files; no screen needed)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend chosen first)
import numpy as np  # noqa: E402


def plot_validation_paths(nytro_estimator, nkrls_estimator, path, title=""):
    """Two panels: NYTRO's hold-out RMSE against the iteration t, and NKRLS's against
    lambda, each with the selected value marked. Writes a PNG to `path`."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    rmse = nytro_estimator.validation_rmse_
    t = np.arange(1, len(rmse) + 1)
    left.plot(t, rmse, color="tab:purple", label="NYTRO")
    left.axvline(nytro_estimator.n_iter_, color="k", ls=":", label=f"t* = {nytro_estimator.n_iter_}")
    left.set(xlabel="iteration t", ylabel="validation RMSE", title="NYTRO: the path is the regulariser")
    left.legend()
    lambdas, path_l = nkrls_estimator.lambdas_, nkrls_estimator.validation_rmse_
    right.loglog(lambdas, path_l, color="tab:orange", label="NKRLS")
    right.axvline(nkrls_estimator.lambda_, color="k", ls=":", label=f"lambda* = {nkrls_estimator.lambda_:.2g}")
    right.set(xlabel="lambda", ylabel="validation RMSE", title="Nystrom KRLS: one fit per lambda")
    right.legend()
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
