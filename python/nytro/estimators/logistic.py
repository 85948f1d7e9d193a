"""NytroLogisticClassifier: the logistic loss the NYTRO way, early-stopped iterations on the
unregularised logistic risk over the Nystrom features, the iterate selected on the
hold-out log loss (nytro._logistic), its probabilities the model's own."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .. import options as opt
from ._bandwidth import centers_and_sigma
from ._base import KernelRegressorBase, _is_dask_array, threads_of_jobs
from ._calibration import log_softmax, softmax
from ._growth import is_auto as is_auto_size
from .classifiers import KernelClassifierMixin, _check_weighted_classes


@opt.documented
class NytroLogisticClassifier(KernelClassifierMixin, KernelRegressorBase):
    """NYTRO for the logistic loss: early-stopped iterations on the unregularised
    (weighted) logistic risk over the Nystrom features, selected on the hold-out log loss.

    The model is f(x) = k(x, centers_) @ coef_ + intercept_, coef_ = R theta over the
    features A = k(X, centers_) R, R R^T = pinv(K_mm) (the least-squares path's
    factor), with an intercept: one column of logits for two classes (predict_proba's
    second column is its sigmoid), one per class for more (the softmax: multinomial,
    not one-vs-all). There is no penalty: the iterations start from the zero model
    (every class equally likely) and the number of iterations is the regulariser, as
    t is NYTRO's. The hold-out log loss and error of every iterate are recorded, the
    iterate with the smallest hold-out log loss (selection="log_loss") or error is the
    model, and the path ends n_iter_no_change iterations after its best. predict_proba
    is the model's own sigmoid or softmax, without a calibration step.

    On separable data the risk has no minimiser (it falls towards 0 as the logits
    grow): the iterations stay finite (gd and nesterov grow the logits slowly, newton
    changes no logit by more than 4 a step), the hold-out log loss stops the path once
    confidence stops paying, and the path ends anyway once the training risk is below
    1e-12.

    Compared with Falkon's LogisticFalkon, which also takes Newton steps on the
    Nystrom-preconditioned logistic risk, each solved by a few CG iterations: Falkon's
    regulariser is a Tikhonov penalty, a decreasing sequence of lambdas given by the
    user with one Newton step each; here there is no penalty, and the iteration count
    (with CG's truncation inside each Newton step) is selected on the hold-out rows.

    The centres, the bandwidths (sigma="auto" as for NytroClassifier: screened on the
    +-1 codes' hold-out RMSE), the stratified hold-out split, the sample weights and the
    refit follow NytroClassifier; sample weights weigh the training risk, (1/sum w) sum_i
    w_i l(f(x_i), y_i) (integer weights as repeated rows), and the hold-out log loss,
    not the hold-out error. The features are kept as a dense n x m array (memory
    O(n m), as the least-squares path's "direct" solver). Refused: arrays on Dask, a
    kernel of one's own (a callable), n_centers="auto" (NotImplementedError or
    ValueError, by name); there is no partial_fit.

    {parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted.
    coef_ : ndarray of shape (m,) or (m, n_classes)
        The selected model's coefficients over the centres: (m,) for two classes.
    intercept_ : float or ndarray of shape (n_classes,)
        Its intercept.
    n_iter_ : int
        The selected iteration (the last one run without a hold-out set).
    validation_log_loss_ : ndarray of shape (n_iterations_run,)
        The hold-out log loss after each iteration (empty without a hold-out set).
    validation_error_ : ndarray of shape (n_iterations_run,)
        The hold-out error rate after each iteration (empty without a hold-out set).
    train_loss_ : ndarray of shape (n_iterations_run,)
        The training risk after each iteration (of the hold-out fit, before any refit).
    step_size_ : float
        1 / L for "gd" and "nesterov", 0 for "newton".
    rank_ : int
        Columns of the Nystrom factor R.
    sigma_, sigma_candidates_, sigma_scores_, sigma_spread_, centers_, n_centers_ :
        As for NytroClassifier.

    Examples
    --------
    On scikit-learn's iris data (three classes) as it comes:

    >>> from sklearn.datasets import load_iris
    >>> from nytro import NytroLogisticClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = NytroLogisticClassifier(n_centers=50, random_state=0).fit(X, y)
    >>> proba = model.predict_proba(X[:2])
    >>> proba.shape, bool(abs(proba.sum(axis=1) - 1).max() < 1e-12)
    ((2, 3), True)
    >>> bool(model.validation_log_loss_[model.n_iter_ - 1] == model.validation_log_loss_.min())
    True
    """

    _family = opt.LOGISTIC
    _path_kind = "logistic"

    def __init__(self, n_centers=1000, sigma="auto", *, kernel="gaussian", matern_nu=1.5, method="nesterov",
                 max_iter=1000, n_iter_no_change=100, selection="log_loss", factor="pivoted", centers=None,
                 center_selection="uniform", validation_fraction=0.2, refit=False, random_state=None,
                 n_threads=None, n_jobs=None):
        self.n_centers = n_centers
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.method = method
        self.max_iter = max_iter
        self.n_iter_no_change = n_iter_no_change
        self.selection = selection
        self.factor = factor
        self.centers = centers
        self.center_selection = center_selection
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.random_state = random_state
        self.n_threads = n_threads
        self.n_jobs = n_jobs

    def _options(self):
        # No options object: the threads are the only option, for the kernel and the
        # factor (and for the screening fits of sigma="auto", through _n_threads).
        return opt.NytroOptions(n_threads=threads_of_jobs(self.n_jobs, self.n_threads), factor=self.factor)

    def _n_threads(self):
        return self._options().n_threads

    def _start(self, backend, X, y, sample_weight, rng):
        # The iterations run in float64 whatever X's dtype (a float32 risk would end its
        # path at float32's rounding of the log loss).
        return backend.start(self, X, y, sample_weight, rng, validation_fraction=self.validation_fraction,
                             dtype="float64", labels=True)

    def fit(self, X, y, sample_weight=None):
        """Fit the logistic path on the labels y, selecting its iterate on a hold-out part
        (see the class docstring).

        sample_weight : array of shape (n_samples,) or None
            Weights of the rows in the training risk and the hold-out log loss (not the
            hold-out error); their scale does not matter.
        """
        if _is_dask_array(X):
            raise NotImplementedError("NytroLogisticClassifier does not take Dask arrays yet: fit it on arrays in "
                                      "memory, or use NytroClassifier (the +-1 codes by least squares) on Dask")
        if callable(self.kernel):
            raise NotImplementedError(f"NytroLogisticClassifier does not take a kernel of one's own (kernel="
                                      f"{getattr(self.kernel, '__name__', self.kernel)!r}); NytroRegressor and "
                                      "NytroClassifier do")
        _check_weighted_classes(y, sample_weight)
        KernelRegressorBase.fit(self, X, y, sample_weight)
        return self

    def _fit_path(self, backend, split, rng, options):
        if is_auto_size(self.n_centers) and self.centers is None:
            raise ValueError("n_centers='auto' is not supported by NytroLogisticClassifier: give a number of "
                             "centres (or centers)")
        centers, sigma = centers_and_sigma(self, backend, split, rng, options)
        params = dict(n_classes=len(self.classes_), kernel=self.kernel, matern_nu=self.matern_nu,
                      method=self.method, factor=self.factor, n_threads=options.n_threads)
        fit = backend.logistic_path(split, centers, sigma, max_iter=self.max_iter,
                                    n_iter_no_change=self.n_iter_no_change, selection=self.selection, **params)
        result, held_out = fit.result, fit.n_val > 0
        self.centers_ = fit.centers
        self.rank_ = result.rank
        self.n_iter_ = result.n_iter
        self.validation_log_loss_ = result.validation_log_loss
        self.validation_error_ = result.validation_error
        self.train_loss_ = result.train_loss
        self.step_size_ = result.step_size
        if held_out and self.n_iter_ >= self.max_iter:
            warnings.warn(
                f"NytroLogisticClassifier selected the last iteration, t = max_iter = {self.max_iter}: the path may "
                "have been cut before its best model. A larger max_iter may fit better (validation_log_loss_ "
                "holds the path).", ConvergenceWarning, stacklevel=4)
        if self._refits(held_out) and self.n_iter_ > 0:  # all rows, the selected t and centres, no hold-out set
            result = backend.logistic_path(split.all_rows(), fit.centers, sigma, max_iter=self.n_iter_,
                                           n_iter_no_change=None, selection=self.selection, **params).result
            self.step_size_ = result.step_size
        one_column = result.coef.shape[1] == 1
        self.intercept_ = float(result.intercept[0]) if one_column else result.intercept
        return result.coef

    # -- prediction ----------------------------------------------------------------
    def decision_function(self, X):
        """The logits k(X, centers_) @ coef_ + intercept_: (n,) for two classes (the
        log-odds of classes_[1]), else (n, n_classes)."""
        return KernelRegressorBase.predict(self, X)

    def predict_proba(self, X):
        """Class probabilities in the order of classes_: the sigmoid of the logit for two
        classes ((1 - p, p)), the softmax of the logits for more; the most probable class
        is the one predict returns."""
        return self._probabilities(X, softmax)

    def predict_log_proba(self, X):
        """log predict_proba(X) by log-sum-exp: finite where a probability underflows."""
        return self._probabilities(X, log_softmax)

    def _probabilities(self, X, link):
        check_is_fitted(self, "coef_")
        scores = np.asarray(self.decision_function(X), dtype=np.float64)
        if scores.ndim == 1:  # sigmoid(f) = softmax((0, f))[1]
            scores = np.stack([np.zeros_like(scores), scores], axis=1)
        return link(scores)

