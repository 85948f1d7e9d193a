"""Result records returned by the path functions (C++-backed and reference alike), and by
the estimators' backends (NystromFit)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PathResult:
    """A gradient path (NYTRO, Landweber) and the iteration selected on it.

    Attributes
    ----------
    coef : ndarray of shape (m,) or (m, q)
        Coefficients alpha at the selected t, over the centres given (the training rows
        for Landweber); prediction is ``kernel_matrix(X, centers, kernel=..., sigma=...) @ coef``.
    validation_rmse : ndarray
        RMSE on the hold-out set after iterations 1, 2, ... (empty without a hold-out set).
    n_iter : int
        The selected t (max_iter without a hold-out set).
    iterations_run : int
        Iterations computed: fewer than max_iter after an early stop, and for methods
        "hybrid" and "cg" where the Krylov space became invariant (later t would repeat
        its last solution).
    step_size : float
        The step actually used.
    rank : int
        Columns of the Nystrom factor R (n for Landweber).
    solver : str
        "direct", "gram" or "spectral" ("reference" for nytro.reference).
    products : int
        Products with A^T A (K for Landweber) taken: iterations_run when stepping, far
        fewer when gd's iterates come from a Lanczos basis.
    lambda_ : float
        Method "hybrid": the lambda selected with t (before multiplication by n); 0.0
        for the other methods.
    """

    coef: np.ndarray
    validation_rmse: np.ndarray
    n_iter: int
    iterations_run: int
    step_size: float
    rank: int
    solver: str
    products: int
    lambda_: float = 0.0


@dataclass
class TikhonovResult:
    """A Tikhonov path (KRLS, NKRLS) over a lambda grid and the lambda selected on it.

    Attributes
    ----------
    coef : ndarray of shape (m,) or (m, q)
        Coefficients alpha at the selected lambda.
    validation_rmse : ndarray
        One hold-out RMSE per lambda (empty without a hold-out set).
    lambda_ : float
        The selected lambda (before multiplication by n).
    selected : int
        Its index in the grid.
    rank : int
        Columns of R (NKRLS) or n (KRLS).
    """

    coef: np.ndarray
    validation_rmse: np.ndarray
    lambda_: float
    selected: int
    rank: int


@dataclass
class NystromFit:
    """A Nystrom path fitted by a backend of the estimators (nytro._backends), and where
    its centres came from. nytro.dask's DaskFit has the same attributes.

    Attributes
    ----------
    result : PathResult or TikhonovResult
        The path, as ``nytro.nytro_path`` or ``nytro.nkrls_path`` return it.
    centers : ndarray of shape (m, d)
        The Nystrom centres the path used.
    n_train, n_val : int
        Training and hold-out rows of the split.
    lambdas : ndarray or None
        The lambda grid searched (a Tikhonov path), None for an iterative one.
    """

    result: PathResult | TikhonovResult
    centers: np.ndarray
    n_train: int
    n_val: int
    lambdas: np.ndarray | None = None
