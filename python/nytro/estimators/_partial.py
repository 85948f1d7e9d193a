"""partial_fit of NytroRegressor, NystromKRLSRegressor and their classifiers: the fit of rows that come in batches, by
sums that add up exactly (nytro._batches), the path (NYTRO's, or Nystrom KRLS's lambda grid) re-selected on the hold-out
rows seen at each call.

The first call fixes what a fit draws once: the split's seed (from random_state, as
the Dask backend draws it), the centres (`centers`, as points or as row indices into the
first batch, or n_centers drawn by center_selection from its training rows, at most as
many as it has), the bandwidths (sigma="auto": the distance heuristic on the first
batch's training rows, without the screening fits, whose hold-out set is still to
come), the targets' offset and their powers of two. Every row is then held out or not by
the hash of its index in the concatenation of the batches (nytro._holdout), so the
batches' sizes do not change the split.
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from .. import _batches
from .. import _checks as chk
from .. import options as opt
from .._backends import library_of
from .._callable import refuse_leverage
from .._holdout import holdout_mask
from .._labels import check_classes, check_label_kinds, coded_labels, label_kinds, plain_label
from .._memory import InMemory, Split
from ..centers import check_centers
from ._bandwidth import centers_and_sigma
from ._calibration import calibration_logits, fit_scale, smoothed_targets
from ._growth import is_auto as is_auto_size


# The Parameters and Returns sections of the regressors' partial_fit (batch_documented).
_REGRESSOR_SECTIONS = """
        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The batch's rows, dense (a sparse X is taken by NytroRegressor's fit only); the
            same features as the first batch's.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Its targets; the same number of outputs as the first batch's.
        sample_weight : array-like of shape (n_samples,) or None
            As fit's: the loss weights the rows, the hold-out RMSE its rows.

        Returns
        -------
        self : {estimator}
        """


def batch_documented(estimator: str):
    """Decorator of a regressor's partial_fit: its docstring, then the Parameters and
    Returns sections every regressor's partial_fit shares (self is `estimator`)."""
    def decorate(method):
        method.__doc__ = method.__doc__.rstrip() + "\n" + _REGRESSOR_SECTIONS.format(estimator=estimator)
        return method
    return decorate


class FirstBatch(InMemory):
    """The in-memory steps on the first batch, where sigma="auto" takes the distance
    heuristic alone (the hold-out rows that would screen its candidates mostly come
    later), and centres given may outnumber its training rows (later batches bring more)."""

    screens_bandwidth = False

    def centers(self, split, rng, *, centers, **drawn):
        if centers is not None:
            return check_centers(centers, split.X, split.X_train, limited=False)
        return super().centers(split, rng, centers=centers, **drawn)


FIRST_BATCH = FirstBatch()


def partial_fit(est, X, y, sample_weight=None, classes=None):
    """est.partial_fit (see NytroRegressor.partial_fit, NystromKRLSRegressor.partial_fit and
    their classifiers')."""
    est._check_parameters()
    name = type(est).__name__
    if library_of(X) == "dask":
        raise NotImplementedError(f"{name}.partial_fit takes arrays in memory; a Dask array is fitted whole by fit")
    options = est._options()
    values = _values(est, options)
    if is_auto_size(est.n_centers) and est.centers is None:
        raise chk.UnsupportedOption('n_centers="auto" is not supported by partial_fit: the centres are fixed by the '
                                    "first batch; give a number of centres, or centers")
    if callable(est.kernel):
        refuse_leverage(est.center_selection, est.centers)
    with est._reporting(), est._exclusive():  # verbose: fit's bars and summary line
        state = est.__dict__.get("_partial_fit_state")
        first = state is None
        dtype = chk.compute_dtype(getattr(est, "dtype", None), X if hasattr(X, "dtype") else None) if first \
            else state.dtype
        labels = is_classifier(est)
        if labels:
            X, y = validate_data(est, X, y, reset=first, dtype=dtype, order="C")
            Y = _coded(est, y, classes, first)
        else:
            X, y = validate_data(est, X, y, reset=first, dtype=dtype, multi_output=True, y_numeric=True, order="C")
            Y = y.reshape(-1, 1) if y.ndim == 1 else y
        w = chk.check_sample_weight(sample_weight, X.shape[0], "sample_weight")
        if first:
            state = _start(est, X, Y, w, options, values)
            one_output = Y.shape[1] == 1 if labels else y.ndim == 1
        else:
            if Y.shape[1] != state.q:
                raise ValueError(f"y has {Y.shape[1]} outputs, but the earlier batches of partial_fit had {state.q}")
            one_output = est.__dict__["_partial_fit_one_output"]
        _batches.add(state, X, Y, w, options.n_threads)
        est.__dict__["_partial_fit_state"], est.__dict__["_partial_fit_one_output"] = state, one_output
        _select(est, state, values, one_output)
    return est


def _values(est, options) -> dict:
    """The parameters of est's family (NYTRO's, or Nystrom KRLS's for est._path_kind
    "nkrls"), options folded in, each refused by name where the sums cannot honour it
    (nytro._batches), before any work."""
    if est._path_kind != "nkrls":
        values = opt.merged(opt.NYTRO, options, dict(
            kernel=est.kernel, matern_nu=est.matern_nu, method=est.method, nu=est.nu, max_iter=est.max_iter,
            step_size=est.step_size, stopping=est.stopping, tol=est.tol, window=est.window,
            n_iter_no_change=est.n_iter_no_change, metric=est._selection_metric(), hybrid_lambda=None))
        _batches.refuse_options(values["solver"], values["storage"], "by partial_fit")
        return values
    name = type(est).__name__
    if callable(est.kernel):
        raise chk.UnsupportedOption(f"kernel={getattr(est.kernel, '__name__', est.kernel)!r}: a kernel of one's own "
                                    f"is taken by NytroRegressor and NytroClassifier only; {name} does not take it")
    values = opt.merged(opt.NKRLS, options, dict(kernel=est.kernel, matern_nu=est.matern_nu,
                                                 metric=est._selection_metric()))
    _batches.refuse_options(values["solver"], values["storage"], "by partial_fit", path="nkrls")
    lambdas = chk.check_lambdas(est.lambdas)
    if est.validation_fraction is None and len(lambdas) != 1:
        raise ValueError(f"without a hold-out set exactly one lambda is needed, got {len(lambdas)} in lambdas: pass "
                         "lambdas=[value], or a validation_fraction to select among them")
    return values


def _start(est, X, Y, w, options, values):
    """The first batch's fixed parts (nytro._batches.start): the seed, centres and bandwidths
    drawn as fit draws them from the first batch's training rows."""
    rng = check_random_state(est.random_state)
    fraction = chk.check_fraction("validation_fraction", est.validation_fraction)
    seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
    held = holdout_mask(np.arange(X.shape[0]), fraction, seed)
    if held.all():
        raise ValueError(f"the first batch of partial_fit has {X.shape[0]} rows, all of them held out "
                         f"(validation_fraction={fraction}): the centres are drawn from its training rows; give a "
                         "larger first batch")
    train, val = ~held, held
    split = Split(X, Y, w, X[train], Y[train], X[val], Y[val], None if w is None else w[train],
                  None if w is None else w[val], X)
    centers, sigma = centers_and_sigma(est, FIRST_BATCH, split, rng, options)  # sets sigma_ as fit
    return _batches.start(X, Y, w, centers, sigma, kernel=est.kernel, matern_nu=est.matern_nu, fraction=fraction,
                          seed=seed, fit_intercept=getattr(est, "fit_intercept", False), factor=values["factor"],
                          rank_tol=values["rank_tol"], jitter=values["jitter"], n_threads=options.n_threads,
                          keeps_rows=is_classifier(est))


def _coded(est, y, classes, first):
    """A classifier's batch of labels as +-1 codes of the classes fixed at the first call
    (`classes`, required there, as scikit-learn's partial_fit takes it)."""
    if first:
        if classes is None and hasattr(est, "classes_"):  # fitted by fit before: its classes, as scikit-learn's
            classes = est.classes_
        if classes is None:
            raise ValueError(f"{type(est).__name__}.partial_fit needs classes at its first call: every label the "
                             "batches will bring (classes=np.unique(y_all)), which fixes the coding")
        given = np.asarray(classes)
        check_label_kinds(label_kinds(given))
        est.classes_ = np.unique(given)
        check_classes(est.classes_)
    elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), est.classes_):
        raise ValueError(f"classes={list(np.asarray(classes))!r} differs from the first call's "
                         f"{list(est.classes_)!r}: the classes are fixed at the first call of partial_fit")
    check_label_kinds(label_kinds(y))
    unknown = np.setdiff1d(np.asarray(y), est.classes_)
    if unknown.size:
        raise ValueError(f"y has labels {[plain_label(v) for v in unknown[:5]]!r} that are not in classes "
                         f"{[plain_label(v) for v in est.classes_]!r} given at the first call of partial_fit")
    return coded_labels(np.searchsorted(est.classes_, y), len(est.classes_))


def _select(est, state, values, one_output):
    """The path on the rows seen, its selection and the fitted attributes (as fit's)."""
    held_out = state.val.rows > 0
    tikhonov = est._path_kind == "nkrls"
    if not held_out and state.fraction is not None:
        model = "the grid's first lambda's" if tikhonov else "the path's last iterate, t = max_iter,"
        warnings.warn(f"{type(est).__name__}.partial_fit: none of the {state.seen} rows seen so far is held out "
                      f"(validation_fraction={state.fraction}); the model is {model} until a batch brings "
                      "hold-out rows", UserWarning, stacklevel=3)
    est.centers_ = state.centers
    est.n_centers_candidates_ = est.n_centers_scores_ = None
    coef = (_select_lambda if tikhonov else _select_iteration)(est, state, values, held_out, one_output)
    est.coef_ = coef[:, 0] if one_output else coef
    est.n_centers_ = int(state.m)
    if state.kept is not None:
        est._name_path()


def _select_iteration(est, state, values, held_out, one_output):
    """NYTRO's path and the selected t (and lambda), then the refit; returns coef, sets
    the path's attributes and the intercept."""
    report = est._progress() or (lambda stage, done, total: None)
    result, intercept = _batches.path(state, values, report=report)
    est.rank_ = result.rank
    est.solver_ = result.solver
    coef = est._take_path(result)
    if state.kept is not None:
        _calibrate(est, state, coef, held_out)
    if est._refits(held_out):
        again, _ = _batches.path(state, values, report=report, refit_at=(est.n_iter_, est.lambda_))
        est.step_size_, coef = again.step_size, again.coef
    est._keep_intercept(intercept, one_output)
    return coef


def _select_lambda(est, state, values, held_out, one_output):
    """Nystrom KRLS along the grid (`lambdas`, or the paper's times the kernel's bound over
    the training rows seen, as fit scales it) and the selected lambda, then the refit;
    returns coef, sets lambdas_, lambda_, the path and the intercept."""
    lambdas = np.asarray(chk.check_lambdas(est.lambdas) if est.lambdas is not None else
                         chk.paper_lambdas() * _batches.kernel_bound(state))
    result, intercept = _batches.tikhonov_path(state, lambdas, metric=values["metric"])
    est.lambdas_ = lambdas
    est.lambda_ = result.lambda_
    est.validation_rmse_ = result.validation_rmse
    est.rank_ = result.rank
    coef = result.coef
    if state.kept is not None:
        _calibrate(est, state, coef, held_out)
    if est._refits(held_out):
        coef = _batches.tikhonov_path(state, None, metric=values["metric"], refit_lambda=est.lambda_)[0].coef
    est._keep_intercept(intercept, one_output)
    return coef


def _calibrate(est, state, coef, held_out):
    """A classifier's calibration_scale_ on the kept hold-out rows' decision values at the
    selected model (as fit's, nytro.estimators._calibration); none while no hold-out row
    has come (predict_proba then says so)."""
    est.__dict__.pop("calibration_scale_", None)
    if not held_out:
        return
    K, index, weights = _batches.kept_rows(state)
    scores = K @ np.asarray(coef, dtype=np.float64)
    est.calibration_scale_ = fit_scale(calibration_logits(scores), smoothed_targets(index, len(est.classes_), weights),
                                       weights)
