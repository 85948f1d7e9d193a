"""What the five estimators share: input validation, the hold-out split, the compute
dtype, progress reporting and prediction as k(X, centers_) @ coef_ + intercept_."""
from __future__ import annotations

import sys
import threading
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import _checks as chk
from .. import options as opt
from .._api import kernel_predict
from .._backends import backend_of, library_of
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
    return f"{text} (auto: best of {len(candidates)} scales on the hold-out set)"


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
    if est.kernel != "linear":
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


def capped_n_centers(estimator, n_train: int) -> int:
    """The estimator's n_centers, or n_train with a UserWarning where it asks for more
    centres than the training rows left after the hold-out split. As scikit-learn's
    Nystroem caps n_components at n_samples: the default m (1000) would otherwise refuse
    every data set of under about 1250 rows, and inside a search every fit would fail.
    m = n_train is no approximation left: the model is then KRLS on the training rows."""
    m = int(estimator.n_centers)
    if m <= n_train:
        return m
    warnings.warn(
        f"{type(estimator).__name__}: n_centers={m} is more than the {n_train} training rows left after the "
        f"hold-out split; using all {n_train} as centres (n_centers_). Set n_centers <= {n_train} to silence "
        "this warning.", UserWarning, stacklevel=6)
    return n_train


# The estimator objects whose fit is running, by id: an object is not thread-safe (as in
# scikit-learn, fit sets its attributes one by one), and a second fit of the same object
# from another thread is refused with a clear error instead of mixing two fits' attributes.
_FITTING_LOCK = threading.Lock()
_FITTING: set = set()


class KernelRegressorBase(RegressorMixin, BaseEstimator):
    """Base of the estimators; subclasses implement `_fit_path(X, Y, rng)`.

    A subclass with an options object names its family of nytro.options in `_family`
    and takes `options=None`; its keywords that share a name with an option (solver,
    n_threads, ...) are shortcuts for that option (see `_options`)."""

    _family = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    # -- fitting ---------------------------------------------------------------
    def _validated(self, X, y, sample_weight=None):
        """(X, Y, one_output, sample weights, intercept): X and the targets as 2-D Y in the
        compute dtype, Y less the intercept (float64, one per column: the weighted mean
        of y with fit_intercept, else 0), subtracted before the cast so that a float32
        fit keeps the digits of y that the offset would take."""
        dtype = chk.compute_dtype(getattr(self, "dtype", None), X if hasattr(X, "dtype") else None)
        X, y = validate_data(self, X, y, dtype=dtype, multi_output=True, y_numeric=True, order="C")
        weights = chk.check_sample_weight(sample_weight, X.shape[0], "sample_weight")
        y2 = y.reshape(-1, 1) if y.ndim == 1 else y
        intercept = np.zeros(y2.shape[1])
        if getattr(self, "fit_intercept", False):
            y2 = np.asarray(y2, dtype=np.float64)
            if np.isfinite(y2).all():  # else refused below, by name
                # Weights relative to the largest: the mean does not depend on their scale, and
                # products y w of weights as tiny as 1e-310 would lose digits as subnormals.
                intercept = np.average(y2, axis=0, weights=None if weights is None else weights / weights.max())
                y2 = y2 - intercept
        with np.errstate(over="ignore"):  # finite y beyond float32: said below, by name
            Y = np.ascontiguousarray(y2, dtype=dtype)
        if not np.isfinite(Y).all():
            chk.check_finite_before_cast(y, "y", Y.dtype)
        return X, Y, y.ndim == 1, weights, intercept

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

    def _split(self, X, Y, rng, needed_train: int = 1):
        """(X_train, Y_train, X_val, Y_val); validation parts have 0 rows without hold-out.
        The sample weights of fit (if any) are split alike: see _split_weights."""
        n = X.shape[0]
        weights = getattr(self, "_fit_sample_weight", None)
        fraction = chk.check_fraction("validation_fraction", self.validation_fraction)  # as a float
        if fraction is None:
            self._weights_of_split = (weights, None)
            return X, Y, X[:0], Y[:0]
        n_val = int(round(fraction * n))
        if n_val < 1 or n - n_val < needed_train:
            raise ValueError(
                f"validation_fraction={fraction} leaves {n - n_val} training and {n_val} validation "
                f"rows of n_samples={n}; at least {needed_train} training and 1 validation row are needed")
        val = self._holdout_rows(Y, n_val, rng, fraction)
        train = np.setdiff1d(np.arange(n), val, assume_unique=True)
        self._weights_of_split = (None, None)
        if weights is not None:
            for part, rows in (("training", train), ("hold-out", val)):
                if not np.any(weights[rows] > 0):
                    raise ValueError(
                        f"sample_weight is zero on every one of the {rows.size} {part} rows the hold-out split "
                        f"(validation_fraction={fraction}) left: the {part} error has no weight; give more "
                        "rows a positive weight or change random_state")
            self._weights_of_split = (weights[train], weights[val])
        return X[train], Y[train], X[val], Y[val]

    def _holdout_rows(self, Y, n_val, rng, fraction):
        """The sorted rows of the hold-out part: n_val of range(n) uniformly at random (the
        first n_val of one permutation drawn from rng; the classifiers stratify)."""
        return np.sort(rng.permutation(Y.shape[0])[:n_val])

    def _split_weights(self):
        """(training weights, hold-out weights) of the last _split: None where fit had no
        sample_weight or there is no hold-out set."""
        return getattr(self, "_weights_of_split", (None, None))

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

    def _fit_sigma(self, X_train, Y_train, X_val, Y_val, rng, n_screen: int):
        """The bandwidths the fit uses, kept as sigma_: `sigma` as given (checked), None for
        kernel="linear" (which has none), or with sigma="auto" the bandwidths selected on
        this split's hold-out rows (nytro.estimators._bandwidth: screening fits at
        min(n_screen, 200) centres), with sigma_candidates_ and sigma_scores_, which are None
        otherwise."""
        if searches(self):
            self.sigma_, self.sigma_candidates_, self.sigma_scores_ = select_bandwidth(
                self, X_train, Y_train, X_val, Y_val, rng, n_screen, KernelRegressorBase._split_weights(self))
        return self.sigma_

    def _calibrate(self, X_rows, Y_rows, centers, coef, held_out):
        """Called by the Nystrom fits with the hold-out rows (the training rows where
        held_out is False) and the model selected on them (before any refit); the
        classifiers fit their probabilities there."""

    @staticmethod
    def _own_rows(rows, X):
        """rows as centers_: a copy where they are the caller's X itself (fit without a
        hold-out split, whose X may be the caller's array: mutating it after fit must not
        change predict)."""
        try:
            shares = np.may_share_memory(rows, X)
        except Exception:  # an object NumPy cannot look into: copy to be safe
            shares = True
        return rows.copy() if shares else rows

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
        started, display, fitted = time.perf_counter(), self._start_progress(), False
        try:
            result = self._fit_rows(X, y, sample_weight)
            fitted = True
            return result
        finally:
            self._stop_progress(display, started, fitted)
            if self.__dict__.get("_progress_display") is display:  # not a concurrent, refused fit's
                self.__dict__.pop("_progress_display", None)

    def _fit_rows(self, X, y, sample_weight):
        backend = backend_of(X)
        if backend is not None:
            return self._count_centers(backend.fit(self, X, y, sample_weight))
        key = id(self)
        with _FITTING_LOCK:
            if key in _FITTING:
                raise RuntimeError(
                    f"this {type(self).__name__} is being fitted in another thread: an estimator object is "
                    "not thread-safe; fit a separate copy in each thread (sklearn.base.clone(estimator))")
            _FITTING.add(key)
        try:
            X_checked, Y, one_output, self._fit_sample_weight, intercept = self._validated(X, y, sample_weight)
            self._weights_of_split = (self._fit_sample_weight, None)
            rng = check_random_state(getattr(self, "random_state", None))
            coef = self._fit_path(X_checked, Y, rng)
            self.centers_ = self._own_rows(self.centers_, X)
            self.coef_ = coef[:, 0] if one_output else coef
            self._keep_intercept(intercept, one_output)
            return self._count_centers(self)
        finally:
            # The weights are fit's arguments, not the model's: not kept (nor pickled).
            self.__dict__.pop("_fit_sample_weight", None)
            self.__dict__.pop("_weights_of_split", None)
            with _FITTING_LOCK:
                _FITTING.discard(key)

    def _count_centers(self, fitted):
        """`fitted` with n_centers_, the number of centres m the fit used (at most the
        training rows: capped_n_centers), for the Nystrom estimators (those that take
        n_centers)."""
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
        backend = backend_of(X)
        if backend is not None:
            scores = backend.predict(X, self.centers_, self.coef_, self.sigma_, kernel=self.kernel,
                                     matern_nu=self.matern_nu, n_threads=self._n_threads())
        else:
            X = validate_data(self, X, reset=False, dtype=self.coef_.dtype, order="C")
            scores = kernel_predict(X, self.centers_, self.coef_, self.sigma_, kernel=self.kernel,
                                    matern_nu=self.matern_nu, n_threads=self._n_threads())
        return self._plus_intercept(scores)

    def _plus_intercept(self, scores):
        """scores + intercept_ in the scores' dtype; scores unchanged where the intercept
        is 0 (fit_intercept=False, or a model fitted before intercept_ existed)."""
        intercept = np.asarray(getattr(self, "intercept_", 0.0))
        if not np.any(intercept):
            return scores
        return scores + intercept.astype(scores.dtype)
