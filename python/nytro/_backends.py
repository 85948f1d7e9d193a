"""Where an estimator's fit runs: the backend of its arrays, chosen once per fit.

The estimators write their fit once (nytro.estimators: the targets, the intercept, the
classifiers' coding, the hold-out selection, the refit on all rows, the fitted
attributes) and run each step that touches the data through a backend, an object of the
protocol `Backend` below. Arrays in memory go to nytro._memory's; the arrays of a library
named in _PACKAGES go to the backend its nytro package registers when imported, which
backend_of imports the first time an array of that library is fitted. So the estimators
import no backend package, and a backend imports no estimator: they meet in this
protocol and in the records it returns (nytro._results), and an optional library (Dask)
is imported only when its arrays are fitted.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol

from ._memory import MEMORY

# The array library (the top-level package of an array's type) -> the nytro package that
# fits its arrays, and registers its backend on import.
_PACKAGES = {"dask": "nytro.dask"}
_REGISTERED: dict = {}


class Backend(Protocol):
    """The steps of an estimator's fit that touch its data, for the arrays of one library.

    A fit calls them in this order: start, then labels (a classifier) or targets (a
    regressor), split, bandwidth_inputs (sigma="auto"), centers, nytro_path or nkrls_path
    (once on the split, once more on split.all_rows() for a refit), calibration_rows (a
    classifier); predict after it. The objects passed between them (the rows, the split,
    the centres) are the backend's own: the estimators only hand them back. A split has
    `all_rows()`, the same rows without a hold-out part (the refit's), and where
    screens_bandwidth is true `n_val`, its hold-out rows.

    Attributes
    ----------
    arrays : str
        What an error calls the arrays it fits ("Dask arrays").
    paths : frozenset of str
        The estimators' paths it fits ("nytro", "nkrls", "krls", "landweber", "kols",
        "logistic"); an
        estimator whose path is not among them refuses its arrays (NotImplementedError).
    screens_bandwidth : bool
        Whether sigma="auto" screens its candidate scales by a fit each on the hold-out
        rows; where false (Dask, where each would be passes over the chunks) it takes the
        distance heuristic alone.

    A backend may also have ``check_options(estimator, options)``, called with the fit's
    options object (shortcuts folded in) before ``start``: it refuses by name (a
    ValueError) each option set to a value its paths cannot honour, rather than ignore it.
    """

    arrays: str
    paths: frozenset
    screens_bandwidth: bool

    def start(self, estimator, X, y, sample_weight, rng, *, validation_fraction, dtype, labels: bool) -> Any:
        """The fit's rows: X, y and sample_weight checked as the estimator's fit checks
        them (labels: y holds a classifier's labels), with how they will be split
        (validation_fraction; the split's randomness from rng)."""

    def labels(self, rows, metric: str) -> tuple:
        """(classes, Y, one_output): a classifier's sorted labels, its +-1 coded targets
        (nytro._labels.coded_labels) and whether they have one column (two classes).
        metric: what the hold-out selection minimises."""

    def targets(self, rows, fit_intercept: bool) -> tuple:
        """(Y, means, one_output): a regressor's targets, less their weighted column means
        where fit_intercept (float64 means, zeros otherwise), and whether y was 1-D."""

    def split(self, rows, Y, holdout_rows: Callable) -> Any:
        """The training and hold-out parts of the rows with the targets Y. holdout_rows(Y,
        n_val, rng, fraction): the estimator's draw of the hold-out rows, for a backend
        that draws them as the in-memory estimators do."""

    def bandwidth_inputs(self, split, rng, n_rows: int) -> tuple:
        """(deviations, magnitudes, sample, weights), the inputs of sigma="auto"'s distance
        heuristic (nytro.estimators._bandwidth): each feature's standard deviation and
        largest magnitude over the rows it reads, and at most n_rows of them drawn by rng,
        with their sample weights (None: unweighted)."""

    def feature_ranges(self, split) -> Any:
        """Each feature's range (largest less smallest value) over the training rows of
        positive weight, float64, for sigma="auto"'s second kind of spreads; None where
        the candidates are not screened (screens_bandwidth false)."""

    def centers(self, split, rng, *, n_centers, centers, center_selection, sigma, kernel, matern_nu, n_threads,
                estimator: str) -> Any:
        """The fit's centres as nytro_path and nkrls_path take them: `centers` (points, or
        row indices into X), or n_centers drawn from the training rows by center_selection
        (leverage scores under `sigma`)."""

    def nytro_path(self, split, centers, sigma, **params) -> Any:
        """NYTRO's path on the split's training rows, selected on its hold-out rows: a
        record with the attributes of nytro._results.NystromFit. centers: as `centers`
        returned them, or an (m, d) array of points (the refit's); params: those of
        nytro.nytro_path but the data's."""

    def nkrls_path(self, split, centers, sigma, *, lambdas, **params) -> Any:
        """Nystrom KRLS along the grid `lambdas` (None: the paper's, times the kernel's
        bound), as nytro_path; the record's `lambdas` is the grid searched."""

    def logistic_path(self, split, centers, sigma, *, n_classes: int, **params) -> Any:
        """NytroLogisticClassifier's path (nytro._logistic.logistic_path) on the split's
        training rows, selected on its hold-out rows, as nytro_path; only for a backend
        whose `paths` has "logistic"."""

    def calibration_rows(self, split, held_out: bool) -> tuple | None:
        """(X_rows, Y_rows, weights): the rows a classifier's probabilities are calibrated
        on (the hold-out rows, or the training rows where held_out is false), in memory;
        None where they are not gathered (the classifier then has no predict_proba)."""

    def predict(self, estimator, X, centers, coef, sigma, *, kernel, matern_nu, n_threads) -> Any:
        """k(X, centers) @ coef, X checked as the fitted estimator's predict checks it."""


def _is_sparse(X) -> bool:
    import scipy.sparse  # already imported where X is one
    return scipy.sparse.issparse(X)


def register(library: str, backend: Backend) -> None:
    """Make `backend` the backend of `library`'s arrays (called by the backend's package)."""
    _REGISTERED[library] = backend


def library_of(X) -> str:
    """The top-level package of X's type, without importing it."""
    return type(X).__module__.split(".")[0]


def backend_of(X, kernel=None) -> Backend:
    """The backend that fits X: the registered one of X's library, else the in-memory one;
    with a kernel of one's own (a callable), the in-memory one that evaluates it by blocks
    (nytro._callable), for arrays in memory only; for sparse X (scipy.sparse), the sparse
    one (nytro._sparse)."""
    library = library_of(X)
    if library == "scipy" and _is_sparse(X):
        if callable(kernel):
            raise TypeError(f"a kernel of one's own (kernel={getattr(kernel, '__name__', kernel)!r}) is not "
                            "supported on sparse X yet: it is evaluated on dense blocks; give a built-in kernel")
        from ._sparse import SPARSE
        return SPARSE
    if callable(kernel):
        if library in _PACKAGES:
            raise NotImplementedError(f"a kernel of one's own (kernel={getattr(kernel, '__name__', kernel)!r}) is "
                                      f"not supported on {library} arrays yet; it is fitted on arrays in memory")
        from ._callable import USER_KERNEL
        return USER_KERNEL
    if library not in _PACKAGES:
        return MEMORY
    if library not in _REGISTERED:
        importlib.import_module(_PACKAGES[library])
    return _REGISTERED[library]
