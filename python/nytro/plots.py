"""Plots of validation paths (matplotlib, written to files; no screen needed).

The figures are built on ``matplotlib.figure.Figure`` directly, not through pyplot, so
drawing one neither selects a backend nor touches the caller's pyplot state.
"""
from __future__ import annotations

import numpy as np


def new_figure(**kwargs):
    """A pyplot-free matplotlib Figure (``savefig`` renders it with Agg), imported lazily
    so that ``import nytro`` and its submodules never load matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - matplotlib is a base dependency
        raise ImportError("nytro's plots need matplotlib: pip install matplotlib") from error
    return Figure(**kwargs)


def plot_validation_paths(nytro_estimator, nkrls_estimator, path, title=""):
    """Two panels: NYTRO's hold-out RMSE against the iteration t, and NKRLS's against
    lambda, each with the selected value marked. Writes a PNG to `path`."""
    fig = new_figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
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
    return path
