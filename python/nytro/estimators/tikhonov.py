"""NystromKRLSRegressor and KRLSRegressor: Tikhonov regularisation with hold-out
selection of lambda over a grid (default: the paper's 100 values in [1e-15, 1])."""
from __future__ import annotations

import numpy as np

from .. import _checks as chk
from .._api import krls_path, nkrls_path
from ._base import KernelRegressorBase
from .nytro import NytroRegressor

_SHARED_DOC = """
    lambdas : array-like or None, default=None
        The grid (each multiplied by n_train inside); None is the paper's 100 values
        log-spaced in [1e-15, 1]. Without a hold-out set exactly one lambda is needed.
    solver : {"eigh", "cholesky"}, default="eigh"
        "eigh": one eigendecomposition serves every lambda exactly; "cholesky": the
        paper's form, one Cholesky solve per lambda.
    validation_fraction, random_state, n_threads, verbose, dtype : as in NytroRegressor.
"""


class NystromKRLSRegressor(KernelRegressorBase):
    __doc__ = """Nystrom KRLS: alpha = R (A^T A + lambda n I)^-1 A^T y with A = K_nm R,
    lambda selected on a hold-out set.

    Parameters
    ----------
    n_centers, sigma, factor, storage, centers, center_selection : as in NytroRegressor
    (storage="float32" computes the kernel blocks of A^T A and keeps the hold-out kernel in
    float32).""" + _SHARED_DOC + """
    Attributes
    ----------
    centers_, coef_ : as in NytroRegressor; lambda_ : the selected lambda;
    lambdas_ : the grid; validation_rmse_ : hold-out RMSE per lambda; rank_ : columns of R.
    """

    def __init__(self, n_centers=1000, sigma=1.0, *, lambdas=None, factor="pivoted", solver="eigh", storage=None,
                 centers=None, center_selection="uniform",
                 validation_fraction=0.2, random_state=None, n_threads=None, verbose=0, dtype=None):
        self.n_centers = n_centers
        self.centers = centers
        self.center_selection = center_selection
        self.sigma = sigma
        self.lambdas = lambdas
        self.factor = factor
        self.solver = solver
        self.storage = storage
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.dtype = dtype

    def _fit_path(self, X, Y, rng):
        lambdas = np.asarray(chk.check_lambdas(self.lambdas))
        X_train, Y_train, X_val, Y_val = self._split(X, Y, rng)
        w_train, w_val = self._split_weights()
        centers = NytroRegressor._centers(self, X, X_train, rng)
        held_out = X_val.shape[0] > 0
        result = nkrls_path(
            X_train, Y_train, centers, self.sigma, lambdas=lambdas, X_val=X_val if held_out else None,
            y_val=Y_val if held_out else None, sample_weight=w_train, sample_weight_val=w_val,
            factor=self.factor, solver=self.solver, storage=self.storage,
            n_threads=self.n_threads, progress=self._progress())
        self.centers_ = centers
        self.lambdas_ = lambdas
        self.lambda_ = result.lambda_
        self.validation_rmse_ = result.validation_rmse
        self.rank_ = result.rank
        return result.coef


class KRLSRegressor(KernelRegressorBase):
    __doc__ = """KRLS (Tikhonov on the full kernel): alpha = (K + lambda n I)^-1 y, lambda
    selected on a hold-out set. Memory O(n^2).

    Parameters
    ----------
    sigma : as in NytroRegressor.""" + _SHARED_DOC + """
    Attributes
    ----------
    centers_ : the training rows; coef_, lambda_, lambdas_, validation_rmse_ : as in
    NystromKRLSRegressor.
    """

    def __init__(self, sigma=1.0, *, lambdas=None, solver="eigh", validation_fraction=0.2, random_state=None,
                 n_threads=None, verbose=0, dtype=None):
        self.sigma = sigma
        self.lambdas = lambdas
        self.solver = solver
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.dtype = dtype

    def _fit_path(self, X, Y, rng):
        lambdas = np.asarray(chk.check_lambdas(self.lambdas))
        X_train, Y_train, X_val, Y_val = self._split(X, Y, rng)
        w_train, w_val = self._split_weights()
        held_out = X_val.shape[0] > 0
        result = krls_path(
            X_train, Y_train, self.sigma, lambdas=lambdas, X_val=X_val if held_out else None,
            y_val=Y_val if held_out else None, solver=self.solver, n_threads=self.n_threads,
            sample_weight=w_train, sample_weight_val=w_val,
            progress=self._progress())
        self.centers_ = X_train
        self.lambdas_ = lambdas
        self.lambda_ = result.lambda_
        self.validation_rmse_ = result.validation_rmse
        return result.coef
