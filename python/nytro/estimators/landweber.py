"""LandweberRegressor: early-stopped gradient descent on the full kernel (the paper's
"Early Stopping" baseline)."""
from __future__ import annotations

from .. import options as opt
from .._api import landweber_path
from ._base import KernelRegressorBase


@opt.documented
class LandweberRegressor(KernelRegressorBase):
    """Landweber iteration alpha_t = alpha_{t-1} - step (K alpha_{t-1} - y) on the full
    n x n kernel, stopped at the iteration with the best hold-out RMSE. Memory O(n^2).

    Unlike NytroRegressor, step_size defaults to "paper" (1/n, as in the paper's
    experiments) and n_iter_no_change to None (the whole path). method "nu" and "cg"
    accelerate the iterations on K alpha = y; "hybrid" selects (t, lambda) of Tikhonov's
    problem projected onto their Krylov space (lambda_). As for NytroRegressor, fit
    emits a ConvergenceWarning when the selected t is max_iter: with the paper's step
    1/n the path is often still falling there (step_size="auto" takes the largest
    stable step).

    {parameters}

    {attributes}

    Examples
    --------
    On scikit-learn's diabetes data as it comes (sigma="auto" reads each feature's
    spread, so no scaler is needed):

    >>> from sklearn.datasets import load_diabetes
    >>> from nytro import LandweberRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = LandweberRegressor(random_state=0).fit(X, y)
    >>> model.predict(X[:3]).shape
    (3,)
    >>> 1 <= model.n_iter_ <= model.max_iter
    True
    """

    def __init__(self, sigma="auto", *, kernel="gaussian", matern_nu=1.5, method="gd", nu=1.0, max_iter=500,
                 step_size="paper", stopping="best",
                 tol=None, window=10, n_iter_no_change=None, iterates="auto", validation_fraction=0.2,
                 refit=False, fit_intercept=True, random_state=None, n_threads=None,
                 n_jobs=None, verbose=0, dtype=None,
                 options=None):
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.method = method
        self.nu = nu
        self.max_iter = max_iter
        self.step_size = step_size
        self.stopping = stopping
        self.tol = tol
        self.window = window
        self.n_iter_no_change = n_iter_no_change
        self.iterates = iterates
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_threads = n_threads
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.dtype = dtype
        self.options = options

    _family = opt.LANDWEBER
    _attributes = ("sigma_", "sigma_candidates_", "sigma_scores_", "sigma_spread_",
                   "centers_", "coef_", "intercept_", "n_iter_",
                   "validation_rmse_", "step_size_", "products_",
                   "lambda_")

    _path_kind = "landweber"

    def _fit_path(self, backend, split, rng, options):
        # In memory only (the backend's paths say so): the split's arrays are at hand.
        sigma = self._fit_sigma(backend, split, rng, None)
        shared = dict(kernel=self.kernel, matern_nu=self.matern_nu, method=self.method, nu=self.nu,
                      step_size=self.step_size, options=options, progress=self._progress())
        metric = self._selection_metric()
        result = landweber_path(
            split.X_train, split.Y_train, sigma, max_iter=self.max_iter, stopping=self.stopping, tol=self.tol,
            window=self.window, n_iter_no_change=self.n_iter_no_change, metric=metric, **split.keywords(metric),
            **shared)
        self.centers_ = split.own(split.X_train)
        coef = self._take_path(result)
        if self._refits(split.n_val > 0):  # all rows, the selected t (and lambda), no hold-out set
            again = landweber_path(split.X, split.Y, sigma, max_iter=self.n_iter_, hybrid_lambda=self.lambda_,
                                   sample_weight=split.sample_weight, **shared)
            self.centers_, self.step_size_, coef = split.own(split.X), again.step_size, again.coef
        return coef
