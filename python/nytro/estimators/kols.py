"""KOLSRegressor: kernel ordinary least squares, alpha = pinv(K) y (no regularisation)."""
from __future__ import annotations

from .. import options as opt
from .._api import kols
from ._base import KernelRegressorBase


@opt.documented
class KOLSRegressor(KernelRegressorBase):
    """KOLS: alpha = pinv(K) y on all training rows, the paper's unregularised baseline.
    Memory O(n^2).

    {parameters}

    {attributes}

    Examples
    --------
    On scikit-learn's diabetes data as it comes (sigma="auto" reads each feature's
    spread, so no scaler is needed):

    >>> from sklearn.datasets import load_diabetes
    >>> from nytro import KOLSRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = KOLSRegressor().fit(X, y)
    >>> model.predict(X[:3]).shape
    (3,)
    """

    def __init__(self, sigma="auto", *, kernel="gaussian", matern_nu=1.5, rcond=None, fit_intercept=True,
                 n_threads=None, n_jobs=None, dtype=None, options=None):
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.rcond = rcond
        self.fit_intercept = fit_intercept
        self.n_threads = n_threads
        self.n_jobs = n_jobs
        self.dtype = dtype
        self.options = options

    _family = opt.KOLS
    _attributes = ("sigma_", "sigma_candidates_", "sigma_scores_", "sigma_spread_", "centers_", "coef_", "intercept_")
    _attribute_notes = {"coef_": "Here pinv(K) y, or with fit's sample_weight S pinv(S K S) S y, S = diag(sqrt(w n / "
                                 "sum w)) (for an invertible K the interpolant does not depend on the positive "
                                 "weights; rows of weight 0 are left out of it)."}

    _path_kind = "kols"

    def _fit_path(self, backend, split, rng, options):
        # In memory only, and without a hold-out set (KOLS takes no validation_fraction):
        # sigma="auto" is the distance heuristic alone.
        sigma = self._fit_sigma(backend, split, rng, None)
        self.centers_ = split.own(split.X)
        return kols(split.X, split.Y, sigma, kernel=self.kernel, matern_nu=self.matern_nu, options=options,
                    sample_weight=split.w_train)
