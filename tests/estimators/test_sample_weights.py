"""Sample weights: weighted least squares in every fit and a weighted hold-out RMSE.

Checked three ways: the C++ core against its NumPy twin (nytro.reference, which scales
the rows of A, K and y by sqrt(w'), where the core scales kernel blocks in its passes and
weights the squared hold-out errors), a direct weighted solve (np.linalg.lstsq on the
sqrt(w)-scaled rows), and the defining property: integer weights fit exactly what
repeating each row that many times does (same centres, same hold-out rows).
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import nytro
import nytro.reference as ref
from conftest import SERIAL, assert_close, make_noisy_problem, make_problem
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)


def weights(n, seed, *, integer=False, zeros=True):
    """Positive weights with a few exact zeros (integers in 0..3 for integer=True)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, n).astype(float) if integer else rng.uniform(0.2, 3.0, n)
    if zeros:
        w[rng.choice(n, max(1, n // 10), replace=False)] = 0.0
    w[0] = max(w[0], 1.0)
    return w


def repeated(X, y, w):
    """The rows of (X, y) each repeated w_i times (integer weights)."""
    rows = np.repeat(np.arange(X.shape[0]), w.astype(int))
    return X[rows], y[rows]


NYSTROM_PATHS = [
    ("nytro_path", {"method": "gd", "max_iter": 40, "iterates": "stepwise"}),
    # Krylov methods only a few steps: past them CG's rounding (not the weights) moves
    # the core and the twin apart.
    ("nytro_path", {"method": "cg", "max_iter": 6}),
    ("nytro_path", {"method": "hybrid", "max_iter": 6}),
    ("nytro_path", {"method": "nu", "max_iter": 30, "solver": "gram"}),
    ("nytro_path", {"method": "gd", "max_iter": 30, "solver": "spectral", "step_size": "paper"}),
    ("nytro_path", {"method": "gd", "max_iter": 200, "iterates": "lanczos", "solver": "gram"}),
    ("nkrls_path", {"lambdas": np.logspace(-9, -1, 9)}),
]
FULL_PATHS = [
    ("landweber_path", {"method": "gd", "max_iter": 40, "iterates": "stepwise"}),
    ("landweber_path", {"method": "cg", "max_iter": 6}),
    ("krls_path", {"lambdas": np.logspace(-9, -1, 9)}),
]


def _args(name, p):
    return (p.X, p.y, p.centers, p.sigma) if name in ("nytro_path", "nkrls_path") else (p.X, p.y, p.sigma)


# ------------------------------------------------------------------ core vs twin
@pytest.mark.parametrize("name, options", NYSTROM_PATHS + FULL_PATHS)
def test_weighted_paths_match_the_reference(name, options, dtype):
    p = make_noisy_problem(dtype)
    w, wv = weights(len(p.X), 1), weights(len(p.X_val), 2)
    kwargs = dict(options, X_val=p.X_val, y_val=p.y_val, sample_weight=w, sample_weight_val=wv)
    got = getattr(nytro, name)(*_args(name, p), **SERIAL, **kwargs)
    want = getattr(ref, name)(*_args(name, p), **kwargs)
    if hasattr(want, "n_iter"):
        assert got.n_iter == want.n_iter
    else:
        assert got.selected == want.selected
    assert_close(got.validation_rmse, want.validation_rmse, dtype, what="validation_rmse")
    assert_close(got.coef, want.coef, dtype, rtol=1e-7 if dtype == np.float64 else 1e-3, what="coef")
    # The weights change the fit: the unweighted path differs (the test can fail).
    plain = getattr(nytro, name)(*_args(name, p), **SERIAL, **dict(options, X_val=p.X_val, y_val=p.y_val))
    assert np.max(np.abs(plain.validation_rmse - got.validation_rmse)) > 1e-3


def test_weighted_kols_matches_the_reference(dtype):
    p = make_problem(n=80, sigma=0.6, dtype=dtype)
    w = weights(len(p.X), 3)
    got = nytro.kols(p.X, p.y, p.sigma, sample_weight=w, **SERIAL)
    want = ref.kols(p.X, p.y, p.sigma, sample_weight=w)
    predict = nytro.gaussian_kernel(p.X_val, p.X, p.sigma)
    assert_close(predict @ got, predict @ want, dtype, rtol=1e-7 if dtype == np.float64 else 2e-3)
    assert np.all(got[w == 0] == 0)  # a row of weight 0 has no coefficient


# ------------------------------------------------------------------ direct solve
def test_weighted_nkrls_is_the_weighted_least_squares_solution():
    """alpha = argmin (1/n) sum_i w'_i (K_nm alpha - y)_i^2 + lambda alpha^T K_mm alpha, by
    lstsq on [sqrt(w') K_nm; sqrt(lambda n) K_mm^(1/2)] alpha = [sqrt(w') y; 0]."""
    p = make_problem(n=200, m=20)
    n, lam = len(p.X), 1e-4
    w = weights(n, 4)
    s = np.sqrt(w * n / w.sum())
    K_nm = nytro.gaussian_kernel(p.X, p.centers, p.sigma)
    vals, vecs = np.linalg.eigh(nytro.gaussian_kernel(p.centers, p.centers, p.sigma))
    root = vecs @ np.diag(np.sqrt(np.maximum(vals, 0))) @ vecs.T
    A = np.vstack([s[:, None] * K_nm, np.sqrt(lam * n) * root])
    b = np.concatenate([s * p.y, np.zeros(len(p.centers))])
    alpha = np.linalg.lstsq(A, b, rcond=None)[0]
    got = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[lam], sample_weight=w, **SERIAL)
    assert_close(K_nm @ got.coef, K_nm @ alpha, np.float64, rtol=1e-8)


def test_weighted_cg_converges_to_the_weighted_least_squares_solution():
    """Unregularised (CG run to convergence) on the Nystrom space: lstsq on sqrt(w) K_nm."""
    p = make_problem(n=200, m=12, sigma=2.0)
    w = weights(len(p.X), 5)
    K_nm = nytro.gaussian_kernel(p.X, p.centers, p.sigma)
    sw = np.sqrt(w)
    alpha = np.linalg.lstsq(sw[:, None] * K_nm, sw * p.y, rcond=None)[0]
    got = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="hybrid", max_iter=12, sample_weight=w,
                           **SERIAL)
    assert_close(K_nm @ got.coef, K_nm @ alpha, np.float64, rtol=1e-6)


def test_weighted_holdout_rmse_is_the_weighted_mean():
    p = make_problem()
    wv = weights(len(p.X_val), 6)
    got = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[1e-3, 1e-2], X_val=p.X_val, y_val=p.y_val,
                           sample_weight_val=wv, **SERIAL)
    for lam, rmse in zip([1e-3, 1e-2], got.validation_rmse):
        coef = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[lam], **SERIAL).coef
        r = nytro.kernel_predict(p.X_val, p.centers, coef, p.sigma) - p.y_val
        assert rmse == pytest.approx(np.sqrt(np.sum(wv * r**2) / np.sum(wv)), rel=1e-9)


# ------------------------------------------------------------- repeated rows
@pytest.mark.parametrize("name, options", NYSTROM_PATHS + FULL_PATHS)
def test_integer_weights_equal_repeated_rows(name, options):
    p = make_noisy_problem()
    w, wv = weights(len(p.X), 7, integer=True), weights(len(p.X_val), 8, integer=True)
    Xr, yr = repeated(p.X, p.y, w)
    Xvr, yvr = repeated(p.X_val, p.y_val, wv)
    if name == "landweber_path" and options["method"] == "gd":
        options = dict(options, step_size="paper")  # 1/n: the step the repeated rows would take
    weighted = getattr(nytro, name)(*_args(name, p), X_val=p.X_val, y_val=p.y_val, sample_weight=w,
                                    sample_weight_val=wv, **options, **SERIAL)
    rp = p.__class__(Xr, yr, p.X_val, p.y_val, p.centers, p.sigma)
    plain = getattr(nytro, name)(*_args(name, rp), X_val=Xvr, y_val=yvr, **options, **SERIAL)
    assert_close(weighted.validation_rmse, plain.validation_rmse, np.float64, rtol=1e-7, what="validation_rmse")
    if name in ("nytro_path", "nkrls_path"):
        assert_close(weighted.coef, plain.coef, np.float64, rtol=1e-6, what="coef")
        return
    # Full-kernel methods: the coefficients live on different rows (repeated rows share
    # theirs); the fitted functions agree.
    f_weighted = nytro.kernel_predict(p.X_val, p.X, weighted.coef, p.sigma)
    f_plain = nytro.kernel_predict(p.X_val, Xr, plain.coef, p.sigma)
    assert_close(f_weighted, f_plain, np.float64, rtol=1e-6, what="predictions")


def test_integer_weights_equal_repeated_rows_kols():
    p = make_problem(n=60, sigma=0.5)
    w = weights(len(p.X), 9, integer=True)
    Xr, yr = repeated(p.X, p.y, w)
    a = nytro.kols(p.X, p.y, p.sigma, sample_weight=w, **SERIAL)
    b = nytro.kols(Xr, yr, p.sigma, **SERIAL)
    assert_close(nytro.kernel_predict(p.X_val, p.X, a, p.sigma), nytro.kernel_predict(p.X_val, Xr, b, p.sigma),
                 np.float64, rtol=1e-6)


def _estimators(p):
    idx = np.arange(len(p.centers))  # pinned centres: rows 0..m-1 of the weighted X
    return [
        NytroRegressor(sigma=p.sigma, centers=p.X[idx], method="gd", max_iter=30, validation_fraction=None),
        NystromKRLSRegressor(sigma=p.sigma, centers=p.X[idx], lambdas=[1e-3], validation_fraction=None),
        KRLSRegressor(sigma=p.sigma, lambdas=[1e-3], validation_fraction=None),
        LandweberRegressor(sigma=p.sigma, max_iter=30, validation_fraction=None),
        KOLSRegressor(sigma=p.sigma),
    ]


@pytest.mark.parametrize("which", range(5))
def test_estimator_integer_weights_equal_repeated_rows(which):
    p = make_problem(n=120, m=15, sigma=0.8)
    w = weights(len(p.X), 10, integer=True)
    Xr, yr = repeated(p.X, p.y, w)
    est = _estimators(p)[which]
    a = clone(est).fit(p.X, p.y, sample_weight=w)
    b = clone(est).fit(Xr, yr)
    assert_close(a.predict(p.X_val), b.predict(p.X_val), np.float64, rtol=1e-6)
    c = clone(est).fit(p.X, p.y)
    assert relative_error_of(c.predict(p.X_val), a.predict(p.X_val)) > 1e-4  # the weights matter


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", [
    NytroRegressor(sigma=10.0, method="gd", max_iter=30), NystromKRLSRegressor(sigma=10.0, lambdas=[1e-3]),
    KRLSRegressor(sigma=3.0, lambdas=[1e-3]), LandweberRegressor(sigma=3.0, max_iter=30),
    NytroClassifier(sigma=1.0, max_iter=30), NystromKRLSClassifier(sigma=1.0, lambdas=[1e-3])],
    ids=lambda e: type(e).__name__)
def test_sklearn_weight_equivalence_holds_without_the_draws(est):
    """scikit-learn's check_sample_weight_equivalence, which the estimators' default hold-out
    split fails (test_estimators.py says why), passes where nothing is drawn from the rows
    given: no hold-out split, and centres given as points (the check's rows are shuffled,
    and its weight-0 rows dropped, so centres given as row indices would differ)."""
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data
    params = {"validation_fraction": None}
    if "centers" in est.get_params():
        params["centers"] = np.random.default_rng(1).random((8, 30))  # the check's X: 15 rows, 30 features
    check_sample_weight_equivalence_on_dense_data(type(est).__name__, clone(est).set_params(**params))


def relative_error_of(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


ALL = [NytroRegressor(n_centers=20, max_iter=20), NystromKRLSRegressor(n_centers=20), KRLSRegressor(),
       LandweberRegressor(max_iter=20), KOLSRegressor()]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_unit_and_rescaled_weights_change_nothing(est):
    p = make_problem(n=150)
    params = {"random_state": 0} if "random_state" in est.get_params() else {}
    base = clone(est).set_params(**params).fit(p.X, p.y)
    ones = clone(est).set_params(**params).fit(p.X, p.y, sample_weight=np.ones(len(p.X)))
    np.testing.assert_array_equal(base.coef_, ones.coef_)
    w = weights(len(p.X), 11)
    a = clone(est).set_params(**params).fit(p.X, p.y, sample_weight=w)
    b = clone(est).set_params(**params).fit(p.X, p.y, sample_weight=7.5 * w)
    assert_close(a.predict(p.X_val), b.predict(p.X_val), np.float64, rtol=1e-7)
    assert not hasattr(a, "_fit_sample_weight")  # fit's arguments are not kept


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_subnormal_weights_fit_as_their_ratios(est):
    # Weights in eighths times 2^-1060 are subnormal yet exact: the same ratios, so the
    # same fit. n / sum(w) overflowed to inf for them and the fit crashed.
    p = make_problem(n=150)
    params = {"random_state": 0} if "random_state" in est.get_params() else {}
    w = np.round(8 * weights(len(p.X), 11)) / 8
    a = clone(est).set_params(**params).fit(p.X, p.y, sample_weight=w)
    b = clone(est).set_params(**params).fit(p.X, p.y, sample_weight=np.ldexp(w, -1060))
    assert_close(b.predict(p.X_val), a.predict(p.X_val), np.float64, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_weights_whose_sum_overflows_fit_as_their_ratios(est):
    # Each weight finite, their sum past float64's largest: 1e308 on every row is the
    # unweighted fit, and eighths times 2^1020 the fit of their ratios. The sum's overflow
    # refused them as "all zero".
    p = make_problem(n=150)
    w = np.round(8 * weights(len(p.X), 11)) / 8
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.sum(np.ldexp(w, 1020)))
    for given, same in ((np.full(len(p.X), 1e308), None), (np.ldexp(w, 1020), w)):
        expected = seeded(est).fit(p.X, p.y, sample_weight=same).predict(p.X_val)
        got = seeded(est).fit(p.X, p.y, sample_weight=given).predict(p.X_val)
        assert_close(got, expected, np.float64, rtol=1e-12)


def seeded(est):
    """A clone of est with random_state=0 where it takes one."""
    return clone(est).set_params(**({"random_state": 0} if "random_state" in est.get_params() else {}))


def test_path_weights_whose_sum_overflows_fit_as_their_ratios():
    p = make_problem(n=150)
    w, wv = np.round(8 * weights(len(p.X), 11)) / 8, np.round(8 * weights(len(p.X_val), 12)) / 8
    kwargs = dict(X_val=p.X_val, y_val=p.y_val, method="cg", max_iter=10, **SERIAL)
    a = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, sample_weight=w, sample_weight_val=wv, **kwargs)
    b = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, sample_weight=np.ldexp(w, 1020),
                         sample_weight_val=np.ldexp(wv, 1020), **kwargs)
    assert_close(b.coef, a.coef, np.float64, rtol=1e-12)
    assert_close(b.validation_rmse, a.validation_rmse, np.float64, rtol=1e-12)


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad, message", [
    (lambda n: -np.ones(n), ">= 0"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "finite"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], "finite"),
    (lambda n: np.zeros(n), "all zero"),
    (lambda n: np.ones(n - 1), "shape"),
    (lambda n: np.ones((n, 1)), "shape"),
    (lambda n: ["a"] * n, "numbers"),
    (lambda n: np.ones(n) + 1j, "real numbers"),  # not cast to their real parts
])
def test_bad_sample_weight_is_refused_by_name(est, bad, message):
    p = make_problem(n=100)
    with pytest.raises(ValueError, match=f"sample_weight.*{message}|{message}.*sample_weight"):
        clone(est).fit(p.X, p.y, sample_weight=bad(len(p.X)))


def test_holdout_without_weight_is_refused():
    p = make_problem(n=100)
    est = NystromKRLSRegressor(n_centers=10, random_state=0, validation_fraction=0.2)
    rng = np.random.RandomState(0)
    val = np.sort(rng.permutation(100)[:20])  # the rows the estimator holds out
    w = np.ones(100)
    w[val] = 0.0
    with pytest.raises(ValueError, match="sample_weight is zero on every one of the 20 hold-out rows"):
        est.fit(p.X, p.y, sample_weight=w)


def test_zero_weights_equal_dropping_the_rows():
    p = make_problem(n=150, m=20)
    w = weights(len(p.X), 12)
    keep = w > 0
    a = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[1e-3], sample_weight=w, **SERIAL)
    b = nytro.nkrls_path(p.X[keep], p.y[keep], p.centers, p.sigma, lambdas=[1e-3], sample_weight=w[keep],
                         **SERIAL)
    assert_close(a.coef, b.coef, np.float64, rtol=1e-8)


# ------------------------------------------------ with the kernels and the classifiers
@pytest.mark.parametrize("estimator", [
    NytroRegressor(20, sigma=1.3, kernel="laplacian", refit=True, fit_intercept=False, random_state=0),
    NystromKRLSRegressor(20, sigma=1.3, kernel="matern", matern_nu=2.5, refit=True, fit_intercept=False,
                         random_state=0),
    KRLSRegressor(sigma=1.3, kernel="laplacian", refit=True, fit_intercept=False, random_state=0),
], ids=lambda e: type(e).__name__)
def test_refit_keeps_the_kernel_and_the_weights(estimator):
    """refit fits all rows again with the fit's kernel and its sample weights: the same
    model as the function on all rows at the selected t / lambda."""
    p = make_problem(n=150, m=20, sigma=1.3)
    w = np.random.default_rng(3).uniform(0.1, 3.0, p.X.shape[0])
    est = clone(estimator).fit(p.X, p.y, sample_weight=w)
    kernel = dict(kernel=est.kernel, matern_nu=est.matern_nu, sample_weight=w)
    if isinstance(est, NytroRegressor):
        again = nytro.nytro_path(p.X, p.y, est.centers_, est.sigma, method=est.method, max_iter=est.n_iter_,
                                 hybrid_lambda=est.lambda_, **kernel).coef
    elif isinstance(est, NystromKRLSRegressor):
        again = nytro.nkrls_path(p.X, p.y, est.centers_, est.sigma, lambdas=[est.lambda_], **kernel).coef
    else:
        again = nytro.krls_path(p.X, p.y, est.sigma, lambdas=[est.lambda_], **kernel).coef
    np.testing.assert_array_equal(est.coef_, again)


@pytest.mark.parametrize("classifier, regressor", [
    (nytro.NytroClassifier(20, sigma=1.3, kernel="laplacian", selection="rmse", random_state=0),
     NytroRegressor(20, sigma=1.3, kernel="laplacian", fit_intercept=False, random_state=0)),
    (nytro.NystromKRLSClassifier(20, sigma=1.3, selection="rmse", random_state=0),
     NystromKRLSRegressor(20, sigma=1.3, fit_intercept=False, random_state=0)),
], ids=["nytro", "nkrls"])
def test_classifier_weights_are_the_regressors(classifier, regressor):
    """With selection="rmse", a weighted classifier is the weighted regressor on the +-1
    coded labels; with selection="error" the hold-out error counts rows, unweighted."""
    p = make_problem(n=150, m=20, sigma=1.3)
    labels = p.y > np.median(p.y)
    w = np.random.default_rng(4).uniform(0.1, 3.0, p.X.shape[0])
    fitted = clone(classifier).fit(p.X, labels, sample_weight=w)
    coded = np.where(labels, 1.0, -1.0)
    same_split = clone(regressor)
    same_split._holdout_rows = fitted._holdout_rows  # the classifier's split is stratified
    np.testing.assert_array_equal(fitted.decision_function(p.X),
                                  same_split.fit(p.X, coded, sample_weight=w).predict(p.X))
    with pytest.raises(ValueError, match="class"):
        clone(classifier).fit(p.X, labels, sample_weight=np.where(labels, w, 0.0))
