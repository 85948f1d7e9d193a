"""What the five estimators share: their fit's flow, written once for every backend of
their arrays (nytro._backends: the rows checked, the targets and the intercept, the
hold-out split, the refit rule, the fitted attributes), progress reporting and prediction
as k(X, centers_) @ coef_ + intercept_."""
from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .. import _checks as chk
from .. import options as opt
from .._backends import backend_of, library_of
from .._memory import MEMORY, Rows as MemoryRows
from ._bandwidth import searches, select_bandwidth


def _is_dask_array(X) -> bool:
    """Whether X is a Dask array, without importing Dask (an optional dependency)."""
    return library_of(X) == "dask"


class ProgressPrinter:
    """Prints "stage done/total" to stderr at most every `every` seconds (verbose >= 2:
    the core's own counters, one line each)."""

    def __init__(self, name: str, every: float = 1.0):
        self.name, self.every, self.last = name, every, 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every or done == total:
            self.last = now
            print(f"[{self.name}] {stage} {done}/{total}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to close: the lines are printed as they come."""


class ProgressBars:
    """verbose=1: one tqdm bar on stderr per stage of the core that lasts (the kernel,
    the factor, A^T A, the iterations, ...), with its elapsed time and an estimate of
    what is left. The core reports each stage as (stage, done, total); a new stage name,
    a new total or a count that goes back starts the next bar and closes the last.
    A bar appears only once its stage has run `delay` seconds: the many short stages
    of a small fit print nothing, and a fit ends with its one summary line. A finished
    stage's bar is cleared (leave=False): the summary line is what a fit leaves.
    `mininterval` is tqdm's: the shortest time between two redraws."""

    def __init__(self, name: str, delay: float = 0.5, mininterval: float = 0.1):
        self.name, self.delay, self.mininterval, self.bar = name, delay, mininterval, None

    def __call__(self, stage: str, done: int, total: int) -> None:
        bar = self.bar
        if bar is None or bar.desc != f"[{self.name}] {stage}" or bar.total != total or done < bar.n:
            self.close()
            from tqdm.auto import tqdm  # imported by a verbose fit only: `import nytro` stays light
            bar = self.bar = tqdm(total=total, desc=f"[{self.name}] {stage}", file=sys.stderr, delay=self.delay,
                                  mininterval=self.mininterval, leave=False, dynamic_ncols=True)
        bar.update(done - bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def stop_reason(est) -> str | None:
    """Why the iterative path ended where it did, from the fitted attributes: max_iter,
    a stopping rule, n_iter_no_change after the best, or the end of the Krylov space (cg,
    hybrid); None for the Tikhonov and KOLS fits, which have no path to stop."""
    if not hasattr(est, "n_iter_"):
        return None
    path = getattr(est, "validation_rmse_", None)
    length = 0 if path is None else len(path)
    if length == 0:
        return f"no hold-out set: ran max_iter={est.max_iter} iterations"
    if length >= est.max_iter:
        return f"reached max_iter={est.max_iter}"
    if est.stopping != "best":
        return f"stopping={est.stopping!r} met at t={length}"
    if est.n_iter_no_change is not None and length >= est.n_iter_ + est.n_iter_no_change:
        return f"no improvement in n_iter_no_change={est.n_iter_no_change} iterations after t={est.n_iter_}"
    return f"the Krylov space was exhausted at t={length} (method={est.method!r})"


def _sigma_summary(est) -> str:
    """sigma_ as the summary line gives it: the number, or an ARD vector's size and range;
    with sigma="auto", among how many overall scales it was selected, or that there was no
    hold-out set to select it on (the distance heuristic alone)."""
    sigma = np.asarray(getattr(est, "sigma_", est.sigma), dtype=float)
    text = (f"sigma={_number(float(sigma))}" if sigma.ndim == 0 else
            f"sigma=(ARD, {sigma.size} values in [{_number(float(sigma.min()))}, {_number(float(sigma.max()))}])")
    candidates, scores = getattr(est, "sigma_candidates_", None), getattr(est, "sigma_scores_", None)
    if candidates is None:
        return text
    if np.isnan(scores).all():
        return f"{text} (auto: the distance heuristic, no hold-out set)"
    by = " of the feature ranges" if getattr(est, "sigma_spread_", None) == "range" else ""
    return f"{text} (auto: best of {len(candidates)} scales{by} on the hold-out set)"


def fit_summary(est, seconds: float) -> str:
    """The closing line of a verbose fit: what was selected (t, lambda), with what
    (sigma, m, rank, solver), why the path stopped, and the fit's wall time."""
    parts = []
    if getattr(est, "n_iter_", None) is not None:
        parts.append(f"t={est.n_iter_}")
    lambdas = getattr(est, "lambdas_", None)
    if getattr(est, "lambda_", None) is not None:
        grid = f" of {len(lambdas)}" if lambdas is not None else ""
        parts.append(f"lambda={_number(float(est.lambda_))}{grid}")
    if getattr(est, "sigma_", None) is not None:
        parts.append(_sigma_summary(est))
    if hasattr(est, "n_centers_"):
        parts.append(f"m={est.n_centers_}" + (f" (rank {est.rank_})" if hasattr(est, "rank_") else ""))
    if hasattr(est, "solver_"):
        parts.append(f"solver={est.solver_}")
    path = getattr(est, "validation_rmse_", None)
    if getattr(est, "refit", False) and path is not None and len(path) > 0:
        parts.append("refitted on all rows")
    reason = stop_reason(est)
    selected = ", ".join(parts)
    return f"fitted in {seconds:.2f} s: {selected}" + (f"; path stopped: {reason}" if reason else "")


def threads_of_jobs(n_jobs, n_threads):
    """The core's thread count from scikit-learn's n_jobs and nytro's n_threads: n_threads
    where n_jobs is None (None: the context's limit, nytro.default_n_threads()); else n_jobs,
    a negative count taken from joblib.cpu_count() (-1 every CPU, -2 all but one, at
    least 1), which n_threads, if given, must equal."""
    if n_jobs is None:
        return n_threads
    if n_jobs < 0:
        from joblib import cpu_count  # scikit-learn's own dependency; within affinity and cgroup quota
        n_jobs = max(1, cpu_count() + 1 + n_jobs)
    if n_threads is not None and n_threads != n_jobs:
        raise ValueError(f"n_jobs={n_jobs} and n_threads={n_threads} are both given and differ: n_jobs is "
                         "scikit-learn's name for the core's threads; give one of them (or equal values)")
    return n_jobs


# The regressor of each path (an estimator's _path_kind; a classifier's is its regressor's):
# a backend that fits some paths only names them when it refuses another.
_REGRESSORS = {"nytro": "NytroRegressor", "nkrls": "NystromKRLSRegressor", "krls": "KRLSRegressor",
               "landweber": "LandweberRegressor", "kols": "KOLSRegressor"}


# The estimator objects whose fit is running, by id: an object is not thread-safe (as in
# scikit-learn, fit sets its attributes one by one), and a second fit of the same object
# from another thread is refused with a clear error instead of mixing two fits' attributes.
_FITTING_LOCK = threading.Lock()
_FITTING: set = set()


class KernelRegressorBase(RegressorMixin, BaseEstimator):
    """Base of the estimators; subclasses implement `_fit_path(backend, split, rng,
    options)` and name their path in `_path_kind` (a key of _REGRESSORS), which a backend
    fits or refuses.

    A subclass with an options object names its family of nytro.options in `_family`
    and takes `options=None`; its keywords that share a name with an option (solver,
    n_threads, ...) are shortcuts for that option (see `_options`)."""

    _family = None
    _path_kind = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    # -- fitting ---------------------------------------------------------------
    # fit's flow, for every backend (nytro._backends: in memory, Dask): the rows checked,
    # the targets (a classifier's coded labels, or y less the intercept), the hold-out
    # split, then the estimator's _fit_path (bandwidths, centres, the path and its
    # selection, the refit on all rows), and the fitted attributes.

    def _targets(self, backend, rows):
        """(Y, intercept, one_output): the targets the path fits, y less its weighted column
        means with fit_intercept (float64, one per column; else zeros), and whether y was
        1-D (coef_ and intercept_ then drop the output axis). The classifiers code their
        labels instead."""
        return backend.targets(rows, bool(getattr(self, "fit_intercept", False)))

    def _validated(self, X, y, sample_weight=None):
        """fit's first steps in memory, on their own (for a look at them, with _split):
        (X, Y, one_output, sample weights, intercept), X and the targets as 2-D Y in the
        compute dtype, Y less the intercept (see _targets)."""
        rows = self._start(MEMORY, X, y, sample_weight, None)
        Y, intercept, one_output = self._targets(MEMORY, rows)
        return rows.X, Y, one_output, rows.sample_weight, intercept

    def _split(self, X, Y, rng):
        """The hold-out split of fit in memory, of X and Y as _validated gives them:
        (X_train, Y_train, X_val, Y_val); validation parts have 0 rows without hold-out."""
        rows = MemoryRows(X, Y, None, X, rng, getattr(self, "validation_fraction", None))
        split = MEMORY.split(rows, Y, self._holdout_rows)
        return split.X_train, split.Y_train, split.X_val, split.Y_val

    def _start(self, backend, X, y, sample_weight, rng):
        """The backend's rows of fit's data (Backend.start)."""
        fraction = getattr(self, "validation_fraction", None)  # KOLS has no hold-out set
        return backend.start(self, X, y, sample_weight, rng, validation_fraction=fraction,
                             dtype=getattr(self, "dtype", None), labels=is_classifier(self))

    def _selection_metric(self) -> str:
        """What the hold-out selection minimises (the core's metric): "rmse" for the
        regressors; the classifiers select on their `selection`."""
        return "rmse"

    def _path_attribute(self) -> str:
        """The fitted attribute that holds the hold-out path."""
        return "validation_error_" if self._selection_metric() == "error" else "validation_rmse_"

    def _refits(self, held_out: bool) -> bool:
        """Whether to refit on all rows at the selected t or lambda: `refit` given, and a
        hold-out part that something was selected on."""
        return bool(getattr(self, "refit", False)) and held_out

    def _progress(self):
        """The progress callable of the running fit (fit makes it: _start_progress)."""
        return self.__dict__.get("_progress_display")

    def _start_progress(self):
        """verbose=0: nothing; 1: tqdm bars (ProgressBars) and a summary line at the end
        of fit; 2 and more: the core's counters (ProgressPrinter), and the summary."""
        verbose = chk.check_verbose(getattr(self, "verbose", 0))
        name = type(self).__name__
        display = None if verbose == 0 else ProgressBars(name) if verbose == 1 else ProgressPrinter(name)
        self.__dict__["_progress_display"] = display
        return display

    def _stop_progress(self, display, started: float, fitted: bool) -> None:
        if display is None:
            return
        display.close()
        if fitted:
            print(f"[{type(self).__name__}] {fit_summary(self, time.perf_counter() - started)}", file=sys.stderr,
                  flush=True)

    def _holdout_rows(self, Y, n_val, rng, fraction):
        """The sorted rows of the hold-out part: n_val of range(n) uniformly at random (the
        first n_val of one permutation drawn from rng; the classifiers stratify)."""
        return np.sort(rng.permutation(Y.shape[0])[:n_val])

    def _take_path(self, result):
        """The iterative estimators' fitted attributes from a PathResult, then a
        ConvergenceWarning when the hold-out selection chose the last of max_iter
        iterations, where the path may still have been improving (the model is then more
        regularised than the data ask for). Returns the coefficients."""
        self.n_iter_ = result.n_iter
        self.validation_rmse_ = result.validation_rmse
        self.step_size_ = result.step_size
        self.products_ = result.products
        self.lambda_ = result.lambda_ if self.method == "hybrid" else None
        path = self.validation_rmse_
        if len(path) > 0 and len(path) >= self.max_iter and self.n_iter_ >= self.max_iter:
            warnings.warn(
                f"{type(self).__name__} selected the last iteration, t = max_iter = {self.max_iter}: the "
                "regularisation path may have been cut before its best model. A larger max_iter may fit "
                f"better ({self._path_attribute()} holds the path).", ConvergenceWarning, stacklevel=5)
        return result.coef

    def _fit_sigma(self, backend, split, rng, n_screen):
        """The bandwidths the fit uses, kept as sigma_: `sigma` as given (checked), None for
        kernel="linear" (which has none), or with sigma="auto" the bandwidths selected on
        the split's hold-out rows (nytro.estimators._bandwidth: screening fits at
        min(n_screen, 200) centres; n_screen None: every training row may be one), with
        sigma_candidates_, sigma_scores_ and sigma_spread_, which are None otherwise."""
        if searches(self):
            self.sigma_, self.sigma_candidates_, self.sigma_scores_, self.sigma_spread_ = select_bandwidth(
                self, backend, split, rng, n_screen)
        return self.sigma_

    def _calibrate(self, backend, split, centers, coef, held_out):
        """Called by the Nystrom fits with the split and the model selected on its hold-out
        rows (before any refit); the classifiers fit their probabilities there."""

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y), selecting the regularisation on a hold-out part of them.
        Dask arrays chunked by rows are fitted where their chunks live (nytro.dask).

        sample_weight : array of shape (n_samples,) or None
            Weighted least squares: the loss is (1/sum w) sum_i w_i (f(x_i) - y_i)^2, i.e.
            (1/n) sum_i w'_i (...)^2 with the weights rescaled to w' = w n / sum(w), so that
            lambda (and the step rules) keep their meaning, the weights' scale does not
            matter, and integer weights fit exactly what repeating each row w_i times would.
            The hold-out RMSE (validation_rmse_) is weighted by the hold-out rows' weights
            alike, sqrt(sum_v w_v r_v^2 / sum_v w_v). Zero weights are allowed (a row of
            weight 0 may still be drawn as a centre); negative, NaN or infinite weights, all
            zero, or a wrong length are refused (ValueError).
        """
        self._check_parameters()
        with self._reporting():
            return self._fit_rows(X, y, sample_weight)

    @contextlib.contextmanager
    def _reporting(self):
        """The progress display of verbose while a fit (or partial_fit) runs, and its
        summary line once it has completed (_start_progress, _stop_progress)."""
        started, display, fitted = time.perf_counter(), self._start_progress(), False
        try:
            yield
            fitted = True
        finally:
            self._stop_progress(display, started, fitted)
            if self.__dict__.get("_progress_display") is display:  # not a concurrent, refused fit's
                self.__dict__.pop("_progress_display", None)

    def _fit_rows(self, X, y, sample_weight):
        backend = backend_of(X, getattr(self, "kernel", None))
        if self._path_kind not in backend.paths:
            takers = [name for path, name in _REGRESSORS.items() if path in backend.paths]
            refusal = getattr(backend, "refusal", NotImplementedError)  # sparse X: TypeError, as scikit-learn's
            raise refusal(f"{type(self).__name__} does not take {backend.arrays}; {', '.join(takers)} and their "
                          "classifiers do")
        options = self._options()
        # A backend that cannot honour some options refuses them by name before any work
        # (nytro._callable: the sparse and callable routes' path from partial_fit's sums).
        check_options = getattr(backend, "check_options", None)
        if check_options is not None:
            check_options(self, options)
        with self._exclusive():
            self.__dict__.pop("_partial_fit_state", None)  # fit starts afresh: partial_fit's sums are dropped
            rng = check_random_state(getattr(self, "random_state", None))
            rows = self._start(backend, X, y, sample_weight, rng)
            Y, intercept, one_output = self._targets(backend, rows)
            split = backend.split(rows, Y, self._holdout_rows)
            coef = self._fit_path(backend, split, rng, options)
            # In memory the targets, and so the coefficients, are 2-D whatever y was; a
            # backend may keep a 1-D y 1-D (Dask).
            self.coef_ = coef[:, 0] if one_output and np.ndim(coef) == 2 else coef
            self._keep_intercept(intercept, one_output)
            self.n_features_in_ = int(rows.X.shape[1])  # in memory, validate_data set it (and feature_names_in_)
            return self._count_centers(self)

    @contextlib.contextmanager
    def _exclusive(self):
        """Holds this object's fit (or partial_fit) alone: a second one from another thread
        is refused (RuntimeError)."""
        key = id(self)
        with _FITTING_LOCK:
            if key in _FITTING:
                raise RuntimeError(
                    f"this {type(self).__name__} is being fitted in another thread: an estimator object is "
                    "not thread-safe; fit a separate copy in each thread (sklearn.base.clone(estimator))")
            _FITTING.add(key)
        try:
            yield
        finally:
            with _FITTING_LOCK:
                _FITTING.discard(key)

    def _fit_path(self, backend, split, rng, options):
        """The coefficients fitted on `split` (the backend's), the fitted attributes of the
        path and its selection set (centers_, sigma_, n_iter_ or lambda_, ...)."""
        raise NotImplementedError

    def _count_centers(self, fitted):
        """`fitted` with n_centers_, the number of centres m the fit used (at most the
        training rows: nytro._memory.capped_n_centers), for the Nystrom estimators (those
        that take n_centers)."""
        if "n_centers" in fitted.get_params(deep=False):
            fitted.n_centers_ = int(fitted.centers_.shape[0])
        return fitted

    def _keep_intercept(self, intercept, one_output: bool):
        """intercept_ from the per-column means: a float for one output. Only the
        estimators with fit_intercept have it (the classifiers fit their codes)."""
        if hasattr(self, "fit_intercept"):
            self.intercept_ = float(intercept[0]) if one_output else intercept

    def _check_parameters(self):
        """Every parameter checked by its row of nytro.options (the one check each has,
        shared with the functions), before any work: a ValueError naming the first refused
        (scikit-learn's _parameter_constraints, from the declared table)."""
        opt.check_parameters(self._family, self.get_params(deep=False))

    def _options(self):
        """The options object a fit runs with: `options` (or the defaults) with the
        keyword shortcuts folded in (nytro.options.merged: a shortcut left at its default
        takes the object's value; two values set differently are refused)."""
        family = self._family
        shortcuts = {name: getattr(self, name) for name in family.option_names if hasattr(self, name)}
        values = opt.merged(family, self.options, shortcuts)
        values["n_threads"] = threads_of_jobs(getattr(self, "n_jobs", None), values["n_threads"])
        return opt.options_object(family, values)

    def _n_threads(self):
        return self.n_threads if self._family is None else self._options().n_threads

    # -- prediction --------------------------------------------------------------
    def predict(self, X):
        """k(X, centers_) @ coef_ + intercept_ with the fitted bandwidths sigma_, the kernel
        streamed in row blocks (a Dask array for a Dask array X, one block per chunk)."""
        check_is_fitted(self, "coef_")
        scores = backend_of(X, self.kernel).predict(self, X, self.centers_, self.coef_, self.sigma_, kernel=self.kernel,
                                       matern_nu=self.matern_nu, n_threads=self._n_threads())
        return self._plus_intercept(scores)

    def _plus_intercept(self, scores):
        """scores + intercept_ in the scores' dtype; scores unchanged where the intercept
        is 0 (fit_intercept=False, or a model fitted before intercept_ existed)."""
        intercept = np.asarray(getattr(self, "intercept_", 0.0))
        if not np.any(intercept):
            return scores
        return scores + intercept.astype(scores.dtype)
