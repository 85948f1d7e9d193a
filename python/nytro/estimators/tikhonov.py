"""NystromKRLSRegressor and KRLSRegressor: Tikhonov regularisation with hold-out
selection of lambda over a grid (default: the paper's 100 values in [1e-15, 1], times the
kernel's bound max k(x, x), which only the linear kernel's is not 1)."""
from __future__ import annotations

import numpy as np

from .. import _checks as chk
from .. import options as opt
from .._api import krls_path
from . import _partial
from ._base import KernelRegressorBase
from .nytro import NytroRegressor


@opt.documented
class NystromKRLSRegressor(KernelRegressorBase):
    """Nystrom KRLS: alpha = R (A^T A + lambda n I)^-1 A^T y with A = K_nm R, lambda
    selected on a hold-out set.

    {parameters}

    {attributes}

    Examples
    --------
    On scikit-learn's diabetes data as it comes (sigma="auto" reads each feature's
    spread, so no scaler is needed):

    >>> from sklearn.datasets import load_diabetes
    >>> from nytro import NystromKRLSRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = NystromKRLSRegressor(n_centers=100, random_state=0).fit(X, y)
    >>> model.n_centers_, model.predict(X[:3]).shape
    (100, (3,))
    >>> bool(model.lambda_ in model.lambdas_)  # the lambda selected on the hold-out rows
    True
    """

    def __init__(self, n_centers=1000, sigma="auto", *, kernel="gaussian", matern_nu=1.5, lambdas=None,
                 factor="pivoted", solver="eigh", storage=None, centers=None, center_selection="uniform",
                 validation_fraction=0.2, refit=False, fit_intercept=True, random_state=None, n_threads=None,
                 n_jobs=None,
                 verbose=0, dtype=None, options=None):
        self.n_centers = n_centers
        self.centers = centers
        self.center_selection = center_selection
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.lambdas = lambdas
        self.factor = factor
        self.solver = solver
        self.storage = storage
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_threads = n_threads
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.dtype = dtype
        self.options = options

    _family = opt.NKRLS
    _attributes = ("sigma_", "sigma_candidates_", "sigma_scores_", "sigma_spread_",
                   "centers_", "n_centers_", "n_centers_candidates_",
                   "n_centers_scores_", "coef_", "intercept_", "lambda_", "lambdas_", "validation_rmse_", "rank_")

    _path_kind = "nkrls"

    def _fit_path(self, backend, split, rng, options):
        shared = dict(kernel=self.kernel, matern_nu=self.matern_nu, options=options, progress=self._progress())

        def fit_at(centers, sigma):
            return backend.nkrls_path(split, centers, sigma, lambdas=self.lambdas, metric=self._selection_metric(),
                                      **shared)

        fit, sigma = NytroRegressor._sized_fit(self, backend, split, rng, options, fit_at)
        held_out = fit.n_val > 0
        self.centers_ = fit.centers
        self.lambdas_ = fit.lambdas
        self.lambda_ = fit.result.lambda_
        self.validation_rmse_ = fit.result.validation_rmse
        self.rank_ = fit.result.rank
        self._calibrate(backend, split, fit.centers, fit.result.coef, held_out)
        if self._refits(held_out):  # all rows, the selected lambda and centres, no hold-out set
            return backend.nkrls_path(split.all_rows(), fit.centers, sigma, lambdas=[self.lambda_],
                                      **shared).result.coef
        return fit.result.coef

    @_partial.batch_documented("NystromKRLSRegressor")
    def partial_fit(self, X, y, sample_weight=None):
        """Fit on one more batch of rows: the model is then the one fit on every batch
        given since the first call (or since the last fit), to rounding.

        The same sums as NytroRegressor.partial_fit (nytro._batches): A^T A and A^T y over
        the training rows, and a triangular factor of the hold-out rows' kernel and
        targets, (m + q + 1)^2 numbers at most whatever the rows seen. Each call adds its
        batch, then solves alpha = R (A^T A + lambda n I)^-1 A^T y for every lambda of the
        grid by one eigendecomposition of A^T A, n the training rows seen, and selects
        lambda anew on every hold-out row seen. A call costs one pass over its batch
        (O(b m^2) for b rows) and O(m^3) for the solve, whatever the rows seen before.

        The first call fixes the centres, the bandwidths and the split's seed as
        NytroRegressor.partial_fit does (the same rules: `centers`, or n_centers drawn by
        center_selection from its training rows; sigma="auto" by the distance heuristic
        alone; row i of the concatenation of the batches held out by a hash of i and the
        seed), so k calls equal one call on the concatenation. The default grid is the
        paper's times the kernel's bound max k(x, x) over the training rows seen, as fit
        scales it. While no hold-out row has come, the model is the grid's first
        lambda's (a UserWarning says so); without a hold-out set (validation_fraction=None)
        exactly one lambda is needed, as for fit. The intercept is the weighted mean of
        every row's targets seen.

        Takes solver "eigh", storage None and a number of centres (not "auto"): another
        value, as a keyword or in `options`, is refused by name with a ValueError (also a
        NotImplementedError). Takes arrays in memory (a sparse X is refused with
        scikit-learn's TypeError). fit discards what partial_fit accumulated and starts
        afresh.
        """
        return _partial.partial_fit(self, X, y, sample_weight)


@opt.documented
class KRLSRegressor(KernelRegressorBase):
    """KRLS (Tikhonov on the full kernel): alpha = (K + lambda n I)^-1 y, lambda
    selected on a hold-out set. Memory O(n^2).

    {parameters}

    {attributes}

    Examples
    --------
    On scikit-learn's diabetes data as it comes (sigma="auto" reads each feature's
    spread, so no scaler is needed):

    >>> from sklearn.datasets import load_diabetes
    >>> from nytro import KRLSRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = KRLSRegressor(random_state=0).fit(X, y)
    >>> model.coef_.shape  # one coefficient per training row: 80% of 442 (the rest held out)
    (354,)
    >>> bool(model.lambda_ in model.lambdas_)
    True
    """

    def __init__(self, sigma="auto", *, kernel="gaussian", matern_nu=1.5, lambdas=None, solver="eigh",
                 validation_fraction=0.2, refit=False, fit_intercept=True,
                 random_state=None, n_threads=None, n_jobs=None, verbose=0, dtype=None, options=None):
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.lambdas = lambdas
        self.solver = solver
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_threads = n_threads
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.dtype = dtype
        self.options = options

    _family = opt.KRLS
    _attributes = ("sigma_", "sigma_candidates_", "sigma_scores_", "sigma_spread_",
                   "centers_", "coef_", "intercept_", "lambda_",
                   "lambdas_", "validation_rmse_")

    _path_kind = "krls"

    def _fit_path(self, backend, split, rng, options):
        # In memory only (the backend's paths say so): the split's arrays are at hand.
        lambdas = np.asarray(chk.check_lambdas(self.lambdas, self.kernel, split.X_train))
        sigma = self._fit_sigma(backend, split, rng, None)
        shared = dict(kernel=self.kernel, matern_nu=self.matern_nu, options=options, progress=self._progress())
        metric = self._selection_metric()
        result = krls_path(split.X_train, split.Y_train, sigma, lambdas=lambdas, metric=metric,
                           **split.keywords(metric), **shared)
        self.centers_ = split.own(split.X_train)
        self.lambdas_ = lambdas
        self.lambda_ = result.lambda_
        self.validation_rmse_ = result.validation_rmse
        if self._refits(split.n_val > 0):  # all rows, the selected lambda, no hold-out set
            self.centers_ = split.own(split.X)
            return krls_path(split.X, split.Y, sigma, lambdas=[self.lambda_], sample_weight=split.sample_weight,
                             **shared).coef
        return result.coef
