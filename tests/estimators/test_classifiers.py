"""NytroClassifier and NystromKRLSClassifier, and the core's hold-out selection on the
classification error (metric="error") against nytro.reference and against a direct
computation: a model fitted at each t (or lambda), its hold-out predictions, its errors
counted."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics import accuracy_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import nytro
from nytro import (NystromKRLSClassifier, NystromKRLSRegressor, NytroClassifier, NytroRegressor,
                   reference)
from conftest import SAMPLE_WEIGHT_XFAIL
from nytro.estimators.classifiers import encode_labels

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)
METHODS = ("gd", "nu", "cg", "hybrid")


def sectors(n=240, n_classes=2, flip=0.1, seed=0):
    """Points of [-1, 1]^2 labelled 0..n_classes-1 by the sector of their angle, a share
    `flip` of the labels redrawn at random (so the hold-out error stays above 0 and its
    path has ties)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 2))
    angle = np.arctan2(X[:, 1], X[:, 0]) + np.pi
    y = np.minimum((angle / (2 * np.pi) * n_classes).astype(int), n_classes - 1)
    noisy = rng.rand(n) < flip
    y[noisy] = rng.randint(0, n_classes, noisy.sum())
    return X, y


def split_problem(n_classes, n=200, n_val=60, m=25, seed=0):
    """(X, Y, X_val, Y_val, centres) with +-1 coded targets."""
    X, y = sectors(n + n_val, n_classes, seed=seed)
    _, Y = encode_labels(y)
    rng = np.random.RandomState(seed + 1)
    centers = X[:n_val + m][rng.permutation(n_val + m)[:m]]
    return X[n_val:], Y[n_val:], X[:n_val], Y[:n_val], centers


def classes(scores, n_outputs):
    """The class of each row: the sign of one column, or the argmax of several."""
    return scores[:, 0] > 0 if n_outputs == 1 else np.argmax(scores, axis=1)


def misclassified(scores, Y):
    """Direct count of the rows classed otherwise than their targets."""
    return int(np.count_nonzero(classes(scores, Y.shape[1]) != classes(Y, Y.shape[1])))


# ---------------------------------------------------------------- sklearn's checks
# As for the regressors (test_estimators.py), the smallest check sets leave 8 training
# rows after the hold-out split: 8 centres. check_classifiers_train asks for accuracy
# > 0.83 on three standardised blobs, which 8 centres of a unit-width kernel separate.
# Sample weights: the regressors' expected failure, for the same reason (test_estimators.py).
# The default sigma="auto" too, selected on each check's own data.
@parametrize_with_checks([NytroClassifier(n_centers=8, sigma=1.0, random_state=0),
                          NystromKRLSClassifier(n_centers=8, sigma=1.0, random_state=0),
                          NytroClassifier(n_centers=8, random_state=0),
                          NystromKRLSClassifier(n_centers=8, random_state=0)],
                         expected_failed_checks=lambda estimator: {
                             "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT_XFAIL,
                             "check_sample_weight_equivalence_on_sparse_data": SAMPLE_WEIGHT_XFAIL})
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------- the core's metric="error" path
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", METHODS)
def test_error_path_matches_reference(method, n_classes):
    X, Y, Xv, Yv, C = split_problem(n_classes)
    kw = dict(X_val=Xv, y_val=Yv, method=method, max_iter=40, metric="error")
    core = nytro.nytro_path(X, Y, C, 0.5, **kw)
    ref = reference.nytro_path(X, Y, C, 0.5, **kw)
    # rates of the same predictions up to rounding: a row on the boundary may flip
    assert np.all(np.abs(core.validation_rmse - ref.validation_rmse) <= 1.5 / len(Yv))
    assert np.mean(core.validation_rmse == ref.validation_rmse) >= 0.9
    assert np.all(np.isclose(core.validation_rmse * len(Yv), np.round(core.validation_rmse * len(Yv))))
    if np.array_equal(core.validation_rmse, ref.validation_rmse):
        assert core.n_iter == ref.n_iter
        assert core.lambda_ == ref.lambda_
        assert_allclose(core.coef, ref.coef, rtol=1e-6, atol=1e-8 * np.abs(ref.coef).max())
    # ties go to the smaller t
    assert core.n_iter == int(np.argmin(core.validation_rmse)) + 1


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", ["gd", "nu", "cg"])
def test_error_path_is_the_error_of_each_iterate(method, n_classes):
    """Direct: the model at t (t iterations without a hold-out set) predicts the hold-out
    rows, and its errors are counted."""
    X, Y, Xv, Yv, C = split_problem(n_classes)
    T = 25
    path = nytro.nytro_path(X, Y, C, 0.5, X_val=Xv, y_val=Yv, method=method, max_iter=T,
                            metric="error").validation_rmse
    direct = []
    for t in range(1, T + 1):
        coef = nytro.nytro_path(X, Y, C, 0.5, method=method, max_iter=t).coef
        direct.append(misclassified(nytro.kernel_predict(Xv, C, coef, 0.5), Yv) / len(Yv))
    assert np.all(np.abs(path - np.array(direct)) <= 1.5 / len(Yv))
    assert np.mean(path == np.array(direct)) >= 0.9


@pytest.mark.parametrize("n_classes", [2, 3])
def test_hybrid_selects_the_largest_lambda_of_the_least_error(n_classes):
    """Direct: at the selected t, every lambda of the grid refitted (hybrid_lambda) and its
    hold-out errors counted; the selected lambda is the largest of the fewest errors."""
    X, Y, Xv, Yv, C = split_problem(n_classes)
    sel = nytro.nytro_path(X, Y, C, 0.5, X_val=Xv, y_val=Yv, method="hybrid", max_iter=30, metric="error")
    lambdas = np.array([10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(100)])
    errors = np.array([
        misclassified(nytro.kernel_predict(
            Xv, C, nytro.nytro_path(X, Y, C, 0.5, method="hybrid", max_iter=sel.n_iter, hybrid_lambda=lam).coef,
            0.5), Yv) for lam in lambdas])
    assert errors.min() / len(Yv) == sel.validation_rmse[sel.n_iter - 1]
    best = lambdas[errors == errors.min()]
    assert len(best) > 1  # a tie, so that the rule is exercised
    assert sel.lambda_ == pytest.approx(best.max(), rel=1e-12)


def undetermined(path, X, Y, Xv, C, lambdas, draws=3, seed=0):
    """Per lambda, the hold-out rows whose class float64 does not determine: the rows
    whose reference prediction changes class when X moves by a few units in the last
    place. At the grid's smallest lambdas the kernel system's condition number reaches
    about 1e14, and two correct solvers may then class these rows differently."""
    def classes_at_each_lambda(Xp):
        args = (Xp, Y, C, 0.5) if path == "nkrls" else (Xp, Y, 0.5)
        centres = C if path == "nkrls" else Xp
        fit = getattr(reference, f"{path}_path")
        return np.array([classes(nytro.kernel_predict(Xv, centres, fit(*args, lambdas=[lam]).coef, 0.5), Y.shape[1])
                         for lam in lambdas])

    base = classes_at_each_lambda(X)
    rng = np.random.RandomState(seed)
    moved = np.zeros(base.shape, bool)
    for _ in range(draws):
        moved |= classes_at_each_lambda(X * (1 + 2.0 ** -50 * rng.standard_normal(X.shape))) != base
    return moved.sum(axis=1)


@pytest.mark.parametrize("path", ["nkrls", "krls"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_tikhonov_error_path_and_tie_rule(path, n_classes):
    X, Y, Xv, Yv, C = split_problem(n_classes)
    args = (X, Y, C, 0.5) if path == "nkrls" else (X, Y, 0.5)
    lambdas = nytro.paper_lambdas()[::3]  # a third of the grid: the direct check fits once per lambda
    core = getattr(nytro, f"{path}_path")(*args, lambdas=lambdas, X_val=Xv, y_val=Yv, metric="error")
    ref = getattr(reference, f"{path}_path")(*args, lambdas=lambdas, X_val=Xv, y_val=Yv, metric="error")
    # a row on the boundary may flip, and so may every row that rounding leaves undetermined
    allowed = (1.5 + undetermined(path, X, Y, Xv, C, lambdas)) / len(Yv)
    assert np.all(np.abs(core.validation_rmse - ref.validation_rmse) <= allowed)
    centres = C if path == "nkrls" else X
    direct = np.array([misclassified(nytro.kernel_predict(
        Xv, centres, getattr(nytro, f"{path}_path")(*args, lambdas=[lam]).coef, 0.5), Yv) for lam in lambdas])
    assert np.all(np.abs(core.validation_rmse - direct / len(Yv)) <= allowed)
    # ties (common: error counts) go to the largest lambda
    tied = np.flatnonzero(core.validation_rmse == core.validation_rmse.min())
    assert len(tied) > 1
    assert core.selected == tied.max() and core.lambda_ == lambdas[tied.max()]
    # the grid need not ascend: the tie still goes to the largest lambda
    shuffled = np.random.RandomState(0).permutation(lambdas)
    again = getattr(nytro, f"{path}_path")(*args, lambdas=shuffled, X_val=Xv, y_val=Yv, metric="error")
    assert again.lambda_ == lambdas[tied.max()]


@pytest.mark.parametrize("method", ["gd", "cg", "hybrid"])
def test_landweber_error_path_matches_reference(method):
    # The full kernel is numerically singular here (cond ~ 4e15): CG's iterates part from
    # the reference's by rounding after about a dozen steps, with either metric (the RMSE
    # paths too), so the path is short
    X, Y, Xv, Yv, _ = split_problem(3, n=120, n_val=40)
    kw = dict(X_val=Xv, y_val=Yv, method=method, max_iter=12, step_size="auto", metric="error")
    core = nytro.landweber_path(X, Y, 0.5, **kw)
    ref = reference.landweber_path(X, Y, 0.5, **kw)
    assert np.all(np.abs(core.validation_rmse - ref.validation_rmse) <= 1.5 / len(Yv))
    assert core.n_iter == int(np.argmin(core.validation_rmse)) + 1


@pytest.mark.parametrize("method", ["gd", "cg", "hybrid"])
def test_error_path_in_float32(method):
    """float32 compute: the same error path as float64 but for rows that rounding moves
    across the boundary (a few of the 60)."""
    X, Y, Xv, Yv, C = split_problem(3)
    kw = dict(X_val=Xv, y_val=Yv, method=method, max_iter=30, metric="error")
    single = nytro.nytro_path(*(a.astype(np.float32) for a in (X, Y, C)), 0.5,
                              **{**kw, "X_val": Xv.astype(np.float32), "y_val": Yv.astype(np.float32)})
    double = nytro.nytro_path(X, Y, C, 0.5, **kw)
    assert single.coef.dtype == np.float32
    n = min(len(single.validation_rmse), len(double.validation_rmse))
    assert np.all(np.abs(single.validation_rmse[:n] - double.validation_rmse[:n]) <= 3.5 / len(Yv))


def test_unknown_metric_is_refused():
    X, Y, Xv, Yv, C = split_problem(2)
    with pytest.raises(ValueError, match="metric"):
        nytro.nytro_path(X, Y, C, 0.5, X_val=Xv, y_val=Yv, metric="accuracy")
    with pytest.raises(ValueError, match="metric"):
        nytro.nkrls_path(X, Y, C, 0.5, X_val=Xv, y_val=Yv, metric="auc")


# ---------------------------------------------------------------- the estimators
@pytest.mark.parametrize("cls", CLASSIFIERS)
@pytest.mark.parametrize("labels", [
    np.array(["no", "yes"]), np.array([-1, 1]), np.array([False, True]), np.array([3, 7, 9]),
    np.array(["cat", "dog", "emu", "yak"]), np.array([1.0, 2.0]),
])
def test_labels_round_trip(cls, labels):
    X, index = sectors(300, len(labels))
    y = labels[index]
    est = cls(n_centers=40, sigma=0.5, random_state=0).fit(X, y)
    assert_array_equal(est.classes_, np.unique(labels))
    predicted = est.predict(X)
    assert predicted.dtype == y.dtype
    assert set(predicted) <= set(labels)
    assert est.score(X, y) == accuracy_score(y, predicted)
    assert est.score(X, y) > 0.75
    scores = est.decision_function(X)
    if len(labels) == 2:
        assert scores.shape == (len(X),) and est.coef_.ndim == 1
        assert_array_equal(predicted, est.classes_[(scores > 0).astype(int)])
    else:
        assert scores.shape == (len(X), len(labels)) and est.coef_.shape[1] == len(labels)
        assert_array_equal(predicted, est.classes_[np.argmax(scores, axis=1)])
    assert est.validation_error_ is not None and est.validation_rmse_ is None


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_label_order_does_not_matter(cls):
    """Sorted classes_: the same model for y and a relabelling that keeps the order."""
    X, index = sectors(200, 3)
    a = cls(n_centers=30, sigma=0.5, random_state=0).fit(X, np.array(["a", "b", "c"])[index])
    b = cls(n_centers=30, sigma=0.5, random_state=0).fit(X, np.array([10, 20, 30])[index])
    assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize("cls", CLASSIFIERS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_selection_rmse_is_the_regressors_choice(cls, n_classes):
    X, y = sectors(240, n_classes)
    _, Y = encode_labels(y)
    target = Y[:, 0] if n_classes == 2 else Y
    regressor = NytroRegressor if cls is NytroClassifier else NystromKRLSRegressor
    params = dict(n_centers=30, sigma=0.5, random_state=0)
    clf = cls(selection="rmse", **params).fit(X, y)
    reg = regressor(fit_intercept=False, **params)  # the classifiers fit their codes as they are
    # The classifier's hold-out split is stratified: the regressor draws the same rows.
    reg._holdout_rows = clf._holdout_rows
    reg.fit(X, target)
    assert_array_equal(clf.coef_, reg.coef_)
    assert_array_equal(clf.validation_rmse_, reg.validation_rmse_)
    assert clf.validation_error_ is None
    if cls is NytroClassifier:
        assert clf.n_iter_ == reg.n_iter_
    assert clf.lambda_ == reg.lambda_


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_selection_error_is_the_cores_error_path(cls):
    """The estimator's selection is the core's metric="error" path on the same split and
    centres: the classifier's validation_error_ lies in [0, 1] in steps of 1 / n_val, and
    its choice is the first least error (Nytro) or the largest lambda of it (NKRLS)."""
    X, y = sectors(250, 3)
    est = cls(n_centers=30, sigma=0.5, random_state=0).fit(X, y)
    path, n_val = est.validation_error_, 50
    assert np.all((path >= 0) & (path <= 1))
    assert_allclose(path * n_val, np.round(path * n_val), atol=1e-9)
    if cls is NytroClassifier:
        assert est.n_iter_ == int(np.argmin(path)) + 1
    else:
        tied = np.flatnonzero(path == path.min())
        assert est.lambda_ == est.lambdas_[tied.max()]


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_bad_labels_and_selection(cls):
    X, y = sectors(60, 2)
    est = cls(n_centers=10, random_state=0)
    with pytest.raises(ValueError, match=r"^y has one class \(0 for every sample\)"):  # 0, not np.int64(0)
        est.fit(X, np.zeros(60, dtype=int))
    with pytest.raises(ValueError, match=r"^sample_weight is zero on every row outside class 'b': a classifier"):
        est.fit(X, np.where(y == y[0], "a", "b"), sample_weight=(y != y[0]).astype(float))
    mixed = np.array(["a", 1] * 30, dtype=object)
    with pytest.raises(ValueError, match="y has labels of mixed types"):
        est.fit(X, mixed)
    with pytest.raises(ValueError, match="selection"):
        cls(n_centers=10, selection="accuracy").fit(X, y)
    with pytest.raises(ValueError, match="[Uu]nknown label type"):
        est.fit(X, np.linspace(0, 1, 60))  # continuous targets are not classes


@pytest.mark.parametrize("method", METHODS)
def test_nytro_classifier_methods_multiclass(method):
    X, y = sectors(400, 4, flip=0.05)
    est = NytroClassifier(n_centers=60, sigma=0.4, method=method, max_iter=100, random_state=0).fit(X, y)
    assert est.score(X, y) > 0.8
    assert est.coef_.shape == (60, 4)


def test_cut_path_warning_names_the_error_path():
    from sklearn.exceptions import ConvergenceWarning
    X, y = sectors(300, 8, flip=0.0)  # eight narrow sectors: the error still falls at t = 3
    est = NytroClassifier(n_centers=40, sigma=0.3, method="gd", max_iter=3, random_state=0)
    with pytest.warns(ConvergenceWarning, match="validation_error_ holds the path"):
        est.fit(X, y)
    assert est.n_iter_ == 3
