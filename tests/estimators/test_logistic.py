"""NytroLogisticClassifier and its path (nytro._logistic): against the NumPy twin
(nytro.reference.logistic_path) iterate by iterate, against scipy's minimiser of the same
risk, the hold-out selection, separable data, sample weights, real data against
scikit-learn's LogisticRegression on Nystroem features, scikit-learn's checks, the
refusals and the labels."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegressionCV
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from nytro import NytroLogisticClassifier, reference
from nytro import options as opt
from nytro import _logistic as lg
from conftest import SAMPLE_WEIGHT_XFAIL

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

EPS = np.finfo(np.float64).eps
GRID = np.array([(a, b) for a in (-2.0, 0.0, 2.0) for b in (-2.0, 0.0, 2.0)])  # 9 well separated centres


def noisy_classes(n, n_classes, seed, noise=0.8):
    """Rows on [-3, 3]^2 with classes from smooth scores plus noise: not separable."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    scores = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), 0.3 * X[:, 0], -0.3 * X[:, 1]][:, :n_classes]
    return X, np.argmax(scores + noise * rng.standard_normal((n, n_classes)), axis=1)


def features(X, sigma=0.8):
    R = reference.nystrom_factor(reference.kernel_matrix(GRID, GRID, sigma=sigma))
    return np.hstack([reference.kernel_matrix(X, GRID, sigma=sigma) @ R, np.ones((len(X), 1))]), R


# --------------------------------------------------------------- against the twin
# The twin recomputes every quantity from theta, forms L from the dense eigenvalues and
# Newton's Hessian as a matrix; the features' condition number is a few hundred here, so
# iterates agree to a few hundred eps per step. Newton's iterates are compared until it
# converges: past the minimiser the steps are rounding, which the two compute differently.
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method, steps", [("gd", 40), ("nesterov", 40), ("newton", 6)])
def test_path_matches_the_twin_iterate_by_iterate(method, steps, n_classes):
    X, y = noisy_classes(300, n_classes, seed=1)
    Xv, yv = noisy_classes(80, n_classes, seed=2)
    w = np.random.default_rng(3).integers(1, 4, len(y)).astype(float)
    kw = dict(n_classes=n_classes, X_val=Xv, y_val=yv, method=method, max_iter=steps, n_iter_no_change=None,
              sample_weight=w, sample_weight_val=np.linspace(0.5, 2, len(yv)), return_iterates=True)
    fast = lg.logistic_path(X, y, GRID, 0.8, **kw)
    twin = reference.logistic_path(X, y, GRID, 0.8, **kw)
    assert len(fast.train_loss) == len(twin.train_loss) == steps
    tol = 1e3 * EPS * steps
    assert_allclose(fast.train_loss, twin.train_loss, rtol=tol)
    assert_allclose(fast.validation_log_loss, twin.validation_log_loss, rtol=tol)
    assert_array_equal(fast.validation_error, twin.validation_error)
    assert fast.step_size == pytest.approx(twin.step_size, rel=1e3 * EPS)
    R_fast = lg.features(X, GRID, 0.8)[1]
    R_twin = features(X)[1]
    for a, b in zip(fast.iterates, twin.iterates):  # the model over the centres: R theta, and the intercept
        scale = np.abs(R_twin @ b[:-1]).max()
        assert_allclose(R_fast @ a[:-1], R_twin @ b[:-1], atol=tol * scale)
        assert_allclose(a[-1], b[-1], atol=tol * (scale + 1))
    assert fast.n_iter == twin.n_iter
    assert_allclose(fast.coef, twin.coef, atol=tol * np.abs(twin.coef).max())


# ------------------------------------------------- against a direct minimisation
def _risk(theta_flat, At, Y, c):
    theta = theta_flat.reshape(At.shape[1], Y.shape[1], order="F")
    Z = At @ theta
    if Y.shape[1] == 1:
        losses = np.logaddexp(0, Z[:, 0]) - Y[:, 0] * Z[:, 0]
        P = 1 / (1 + np.exp(-Z))
    else:
        losses = logsumexp(Z, axis=1) - np.sum(Y * Z, axis=1)
        P = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
    grad = At.T @ (c[:, None] * (P - Y))
    return float(c @ losses), grad.ravel(order="F")


@pytest.mark.parametrize("n_classes", [2, 3])
def test_long_paths_reach_the_minimiser_of_the_risk(n_classes):
    """Without a hold-out set and with enough iterations, newton and nesterov reach the
    minimiser of the unregularised risk on these features (non-separable data), which
    L-BFGS finds directly: the same risk, gradients near zero, the same logits."""
    X, y = noisy_classes(300, n_classes, seed=4)
    w = np.random.default_rng(5).uniform(0.5, 2.0, len(y))
    At, _ = features(X)
    Y = lg.one_hot(y, n_classes)
    c = w / w.sum()
    K = Y.shape[1]
    direct = minimize(_risk, np.zeros(At.shape[1] * K), args=(At, Y, c), jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 20000, "maxcor": 50})
    Z_direct = At @ direct.x.reshape(At.shape[1], K, order="F")
    for method, steps in (("newton", 60), ("nesterov", 20000)):
        path = lg.logistic_path(X, y, GRID, 0.8, n_classes=n_classes, method=method, max_iter=steps,
                                n_iter_no_change=None, sample_weight=w)
        value, grad = _risk(path.theta.ravel(order="F"), At, Y, c)
        assert value <= direct.fun * (1 + 1e-9)
        assert np.abs(grad).max() < (1e-10 if method == "newton" else 1e-6)
        Z = At @ path.theta
        if K > 1:  # the softmax's logits are defined up to a constant per row
            Z, Z_d = Z - Z.mean(axis=1, keepdims=True), Z_direct - Z_direct.mean(axis=1, keepdims=True)
        else:
            Z_d = Z_direct
        assert_allclose(Z, Z_d, atol=1e-5 * np.abs(Z_d).max())


# ----------------------------------------------------------------- the selection
@pytest.mark.parametrize("selection", ["log_loss", "error"])
@pytest.mark.parametrize("method", ["nesterov", "newton"])
def test_selected_iterate_is_the_argmin_of_the_recorded_path(selection, method):
    X, y = noisy_classes(400, 3, seed=6)
    clf = NytroLogisticClassifier(n_centers=60, sigma=1.0, method=method, selection=selection, max_iter=400,
                                  n_iter_no_change=30, random_state=0).fit(X, y)
    path = clf.validation_log_loss_ if selection == "log_loss" else clf.validation_error_
    assert len(clf.validation_log_loss_) == len(clf.validation_error_) == len(clf.train_loss_)
    assert clf.n_iter_ == int(np.argmin(path)) + 1  # the first of ties
    # The patience rule: the path ran n_iter_no_change past its best, or ended on its own.
    assert len(path) <= clf.n_iter_ + 30
    # The model is the selected iterate: its hold-out log loss is the recorded one.
    split_X, split_y = clf._split(*clf._validated(X, y)[:2], np.random.RandomState(0))[2:]
    index = np.argmax(split_y, axis=1)
    assert log_loss(index, clf.predict_proba(split_X), labels=[0, 1, 2]) == pytest.approx(
        clf.validation_log_loss_[clf.n_iter_ - 1], rel=1e-10)


@pytest.mark.parametrize("method", ["gd", "nesterov", "newton"])
def test_separable_data_give_a_finite_model(method):
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (200, 2))
    y = np.where(X[:, 0] > 0.1, "right", "left")
    X[:, 0] += np.where(y == "right", 0.5, -0.5)  # a gap: separable by a margin
    clf = NytroLogisticClassifier(n_centers=40, sigma=1.0, method=method, max_iter=3000, random_state=0).fit(X, y)
    assert np.isfinite(clf.coef_).all() and np.isfinite(clf.intercept_)
    assert np.isfinite(clf.validation_log_loss_).all()
    grid = np.c_[np.linspace(-1.5, 1.6, 50), np.zeros(50)]
    P = clf.predict_proba(np.vstack([X, grid]))
    assert np.isfinite(P).all() and (P > 0).all() and (P < 1).all()
    assert np.isfinite(clf.predict_log_proba(X)).all()
    assert (clf.predict(X) == y).all()


# ---------------------------------------------------------------- sample weights
@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("method", ["nesterov", "newton"])
def test_integer_weights_equal_repeated_rows(method, n_classes):
    X, y = noisy_classes(150, n_classes, seed=8)
    counts = np.random.default_rng(9).integers(0, 4, len(y))
    counts[:n_classes * 3] = 1
    kw = dict(centers=GRID, sigma=0.8, method=method, max_iter=80, validation_fraction=None)
    weighted = NytroLogisticClassifier(**kw).fit(X, y, sample_weight=counts)
    repeated = NytroLogisticClassifier(**kw).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    assert_allclose(weighted.train_loss_, repeated.train_loss_, rtol=1e-12)
    assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-9, atol=1e-9 * np.abs(repeated.coef_).max())
    assert_allclose(weighted.intercept_, repeated.intercept_, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------- real data
def _sklearn_log_loss(X_train, y_train, X_test, y_test, m, sigma):
    """LogisticRegression on scikit-learn's Nystroem features at the same m and kernel,
    its C chosen by 5-fold cross-validation on the log loss."""
    model = make_pipeline(Nystroem(gamma=0.5 / sigma ** 2, n_components=m, random_state=0),
                          LogisticRegressionCV(Cs=np.logspace(-2, 4, 7), l1_ratios=(0.0,), scoring="neg_log_loss",
                                               max_iter=3000))
    model.fit(X_train, y_train)
    P = model.predict_proba(X_test)
    return log_loss(y_test, P), np.mean(model.classes_[P.argmax(1)] != y_test)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # LogisticRegressionCV's attributes in scikit-learn 1.10
@pytest.mark.parametrize("loader, m", [(load_breast_cancer, 200), (load_digits, 300)])
def test_real_data_log_loss_near_sklearns_logistic_regression(loader, m):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sigma = np.sqrt(X.shape[1])
    clf = NytroLogisticClassifier(n_centers=m, sigma=sigma, method="newton", max_iter=60, n_iter_no_change=5,
                                  random_state=0).fit(X_train, y_train)
    ours = log_loss(y_test, clf.predict_proba(X_test))
    error = np.mean(clf.predict(X_test) != y_test)
    theirs, their_error = _sklearn_log_loss(X_train, y_train, X_test, y_test, m, sigma)
    # A loose bound: a broken model (a sign, a scale, the wrong iterate) is far past it.
    assert ours < 1.5 * theirs + 0.03, (ours, theirs)
    assert error < 2 * their_error + 0.03, (error, their_error)


# ------------------------------------------------------------ scikit-learn's checks
@parametrize_with_checks([NytroLogisticClassifier(n_centers=8, sigma=1.0, random_state=0),
                          NytroLogisticClassifier(n_centers=8, random_state=0, method="newton", max_iter=30,
                                                  n_iter_no_change=5)],
                         expected_failed_checks=lambda estimator: {
                             "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT_XFAIL})
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------------------------- refusals
def test_refusals_name_the_argument():
    X, y = noisy_classes(60, 2, seed=10)
    with pytest.raises(ValueError, match="method"):
        NytroLogisticClassifier(method="cg").fit(X, y)
    with pytest.raises(ValueError, match="selection"):
        NytroLogisticClassifier(selection="rmse").fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        NytroLogisticClassifier(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="n_centers='auto'"):
        NytroLogisticClassifier(n_centers="auto").fit(X, y)
    with pytest.raises(NotImplementedError, match="kernel of one's own"):
        NytroLogisticClassifier(kernel=lambda A, B: A @ B.T, n_centers=10).fit(X, y)
    assert not hasattr(NytroLogisticClassifier(), "partial_fit")


def test_dask_arrays_are_refused_by_name():
    da = pytest.importorskip("dask.array")
    X, y = noisy_classes(60, 2, seed=11)
    with pytest.raises(NotImplementedError, match="NytroLogisticClassifier does not take Dask arrays"):
        NytroLogisticClassifier(n_centers=10).fit(da.from_array(X, chunks=30), da.from_array(y, chunks=30))


# --------------------------------------------------------------------- labels
@pytest.mark.parametrize("labels", [("no", "yes"), (0, 1), (-1, 1), (False, True)])
def test_binary_labels_of_any_type(labels):
    X, index = noisy_classes(200, 2, seed=12)
    y = np.asarray(labels)[index]
    clf = NytroLogisticClassifier(n_centers=30, sigma=1.0, random_state=0).fit(X, y)
    assert_array_equal(clf.classes_, np.sort(np.asarray(labels)))
    P = clf.predict_proba(X)
    assert P.shape == (200, 2) and clf.coef_.shape == (30,) and isinstance(clf.intercept_, float)
    assert_allclose(P[:, 1], 1 / (1 + np.exp(-clf.decision_function(X))), rtol=1e-12)
    assert_array_equal(clf.predict(X), clf.classes_[P.argmax(axis=1)])
    assert_allclose(clf.predict_log_proba(X), np.log(P), rtol=1e-10, atol=1e-300)
    coded = NytroLogisticClassifier(n_centers=30, sigma=1.0, random_state=0).fit(X, index)
    assert_allclose(coded.coef_, clf.coef_)  # the labels' type changes nothing else


def test_a_class_with_one_sample():
    X, y = noisy_classes(120, 3, seed=13)
    y[0], y[1:][y[1:] == 2] = 2, 1  # class 2 has one row
    with pytest.raises(ValueError, match="validation_fraction"):
        NytroLogisticClassifier(n_centers=20, sigma=1.0, random_state=0).fit(X, y)
    clf = NytroLogisticClassifier(n_centers=20, sigma=1.0, random_state=0, validation_fraction=None,
                                  max_iter=50).fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (120, 3) and np.isfinite(P).all()
    assert_allclose(P.sum(axis=1), 1, rtol=1e-12)


def test_refit_runs_the_selected_iterations_on_all_rows():
    X, y = noisy_classes(300, 2, seed=14)
    held = NytroLogisticClassifier(n_centers=30, sigma=1.0, random_state=0).fit(X, y)
    refit = NytroLogisticClassifier(n_centers=30, sigma=1.0, random_state=0, refit=True).fit(X, y)
    assert refit.n_iter_ == held.n_iter_
    assert_array_equal(refit.validation_log_loss_, held.validation_log_loss_)
    again = NytroLogisticClassifier(centers=held.centers_, sigma=1.0, validation_fraction=None,
                                    max_iter=held.n_iter_).fit(X, y)
    assert_allclose(refit.coef_, again.coef_, rtol=1e-12, atol=1e-12 * np.abs(again.coef_).max())


# ------------------------------------------------------- the declared parameters
PARAMETERS = [name for name in NytroLogisticClassifier().get_params()]


@pytest.mark.parametrize("name", PARAMETERS)
def test_every_parameter_has_its_row_default_doc_and_check(name):
    """As tests/api/test_options.py for the other estimators: one row per parameter
    (nytro.options.LOGISTIC's or a shared one), its default, its docstring entry, and its
    check run on entry to fit with the row's message, before the data are looked at."""
    row = opt.declared(opt.LOGISTIC, name)
    assert row is not None, name
    assert _same(NytroLogisticClassifier().get_params()[name], row.default)
    head, *body = row.doc.splitlines()
    lines = inspect.cleandoc(NytroLogisticClassifier.__doc__).splitlines()
    at = lines.index(f"{head}, default={row.default!r}")
    assert lines[at + 1:at + 1 + len(body)] == body
    reading = {other: choices[0] for other, choices in row.read_when.items()}
    with pytest.raises(ValueError) as expected:
        row.check(row.invalid)
    with pytest.raises(ValueError) as refused:
        NytroLogisticClassifier(**reading).set_params(**{name: row.invalid}).fit(None, None)
    assert str(refused.value) == str(expected.value)


def _same(a, b):
    return a is b if a is None or b is None else a == b
