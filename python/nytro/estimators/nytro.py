"""NytroRegressor: NYTRO with hold-out selection of the iteration count."""
from __future__ import annotations

from .. import options as opt
from . import _partial
from ._bandwidth import centers_and_sigma
from ._base import KernelRegressorBase
from ._growth import grow_centers, is_auto as is_auto_size


@opt.documented
class NytroRegressor(KernelRegressorBase):
    """NYTRO (Nystrom iterative regularisation): gradient descent on the Nystrom-restricted
    least-squares problem, stopped at the iteration with the best hold-out RMSE.

    Each iteration costs one product with A^T A; the default method, "hybrid", selects
    (t, lambda) on the hold-out set, and method="gd", max_iter=500 with
    n_iter_no_change=None is the paper's protocol, with its sigma and fit_intercept=False.
    The defaults, sigma="auto" (per-feature bandwidths selected on the same hold-out set)
    and fit_intercept=True, fit raw features without a scaler. When the selected t is
    max_iter, fit emits a ConvergenceWarning.

    {parameters}

    {attributes}

    Examples
    --------
    On scikit-learn's diabetes data as it comes (sigma="auto" reads each feature's
    spread, so no scaler is needed):

    >>> from sklearn.datasets import load_diabetes
    >>> from nytro import NytroRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = NytroRegressor(n_centers=100, random_state=0).fit(X, y)
    >>> model.n_centers_, model.sigma_.shape, model.predict(X[:3]).shape
    (100, (10,), (3,))
    >>> int(model.n_iter_) >= 1  # the iteration selected on the hold-out rows
    True
    """

    def __init__(self, n_centers=1000, sigma="auto", *, kernel="gaussian", matern_nu=1.5, method="hybrid", nu=1.0,
                 max_iter=500, step_size="auto",
                 stopping="best", tol=None, window=10, n_iter_no_change=50, iterates="auto", factor="pivoted",
                 solver="auto", storage=None, centers=None, center_selection="uniform",
                 validation_fraction=0.2, refit=False, fit_intercept=True, random_state=None, n_threads=None,
                 n_jobs=None,
                 verbose=0, dtype=None,
                 options=None):
        self.n_centers = n_centers
        self.centers = centers
        self.center_selection = center_selection
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

    _family = opt.NYTRO
    _attributes = ("sigma_", "sigma_candidates_", "sigma_scores_", "sigma_spread_",
                   "centers_", "n_centers_", "n_centers_candidates_",
                   "n_centers_scores_", "coef_", "intercept_", "n_iter_", "validation_rmse_", "step_size_",
                   "rank_", "solver_", "products_", "lambda_")

    _path_kind = "nytro"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Sparse X (scipy.sparse) is fitted by nytro._sparse, with the built-in kernels.
        tags.input_tags.sparse = not callable(self.kernel)
        return tags

    def _fit_path(self, backend, split, rng, options):
        shared = dict(kernel=self.kernel, matern_nu=self.matern_nu, method=self.method, nu=self.nu,
                      step_size=self.step_size, options=options, progress=self._progress())

        def fit_at(centers, sigma):
            return backend.nytro_path(split, centers, sigma, max_iter=self.max_iter, stopping=self.stopping,
                                      tol=self.tol, window=self.window, n_iter_no_change=self.n_iter_no_change,
                                      metric=self._selection_metric(), **shared)

        fit, sigma = self._sized_fit(backend, split, rng, options, fit_at)
        held_out = fit.n_val > 0
        self.centers_ = fit.centers
        self.rank_ = fit.result.rank
        self.solver_ = fit.result.solver
        coef = self._take_path(fit.result)
        self._calibrate(backend, split, fit.centers, coef, held_out)
        if self._refits(held_out):  # all rows, the selected t (and lambda) and centres, no hold-out set
            again = backend.nytro_path(split.all_rows(), fit.centers, sigma, max_iter=self.n_iter_,
                                       hybrid_lambda=self.lambda_, **shared).result
            self.step_size_, self.solver_, coef = again.step_size, again.solver, again.coef
        return coef

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y), selecting the iteration (and hybrid's lambda) on a hold-out part
        of them; see KernelRegressorBase.fit for the weights' meaning.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows: an array in memory, a Dask array chunked by rows (nytro.dask), or a
            scipy.sparse matrix or array (CSR or CSC; another format is converted to CSR),
            fitted with the built-in kernels without densifying it (the user guide's
            "Sparse input": uniform or given centres, kept dense; by the gram solver,
            solver "direct" or "spectral" and a storage refused with a ValueError).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The targets.
        sample_weight : array-like of shape (n_samples,) or None
            The rows' weights in the loss and the hold-out RMSE.

        Returns
        -------
        self : NytroRegressor
        """
        return super().fit(X, y, sample_weight)

    def predict(self, X):
        """k(X, centers_) @ coef_ + intercept_, the kernel by blocks of rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As fit takes it; a sparse X is never densified (only k(X, centers_) by blocks).

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        return super().predict(X)

    @_partial.batch_documented("NytroRegressor")
    def partial_fit(self, X, y, sample_weight=None):
        """Fit on one more batch of rows: the model is then the one fit on every batch
        given since the first call (or since the last fit), to rounding.

        Each call adds the batch to sums whose size does not grow with the rows: A^T A and
        A^T y over the training rows (the gram solver's), and over the hold-out rows a
        triangular factor of their kernel and targets, all (m + q + 1)^2 at most; then
        the path runs again on those sums and the iteration (and lambda) is selected anew
        on every hold-out row seen. A call costs one pass over its batch (O(b m^2) for
        b rows) and one path in m dimensions, whatever the rows seen before.

        The first call fixes the centres, the bandwidths and the split's seed:
        `centers` (points, or row indices into the first batch), or n_centers drawn by
        center_selection from the first batch's training rows (at most as many as it has,
        with a UserWarning); sigma="auto" takes the distance heuristic on those rows,
        without the screening fits that fit runs on its hold-out set (sigma_scores_ is
        NaN). Row i of the concatenation of the batches is held out when
        ``nytro.dask.holdout_mask(i, validation_fraction, seed)`` is true (a hash of i and
        the seed, drawn from random_state), so the split does not depend on the batches'
        sizes: k calls equal one call on the concatenation. While no hold-out row has
        come, the model is the path's last iterate (a UserWarning says so). The intercept
        is the weighted mean of every row's targets seen. verbose reads as in fit: each
        call ends with its summary line.

        Takes solver "auto" or "gram", storage None and a number of centres (not
        "auto"): another value, as a keyword or in `options`, is refused by name with a
        ValueError (also a NotImplementedError), as is center_selection="leverage" with
        a kernel of one's own. Takes arrays in memory. fit discards what partial_fit
        accumulated and starts afresh.
        """
        return _partial.partial_fit(self, X, y, sample_weight)

    def _sized_fit(self, backend, split, rng, options, fit_at):
        """(fit, sigma_): fit_at(centers, sigma) at the fit's centres and bandwidths, or
        with n_centers="auto" (and no `centers` given) at each size m that
        nytro.estimators._growth tries, the best kept (n_centers_candidates_ and
        n_centers_scores_ set; None otherwise)."""
        self.n_centers_candidates_ = self.n_centers_scores_ = None
        if is_auto_size(self.n_centers) and self.centers is None:
            return grow_centers(self, backend, split, rng, options, fit_at)
        centers, sigma = centers_and_sigma(self, backend, split, rng, options)
        return fit_at(centers, sigma), sigma
