"""Bad input gets a clear exception that names the argument: never a crash, a hang or a
silent NaN. docs/design.md, "Contracts": bad input -> ValueError, numerical failure ->
RuntimeError, a request larger than the machine's memory -> MemoryError, raised before
allocating.

The estimators validate X and y with scikit-learn's validate_data, so their messages
for malformed arrays are sklearn's own (which sklearn's estimator checks look for);
their own parameters, and every argument of the low-level functions, are checked by
nytro with messages of the form "<argument> ... <value>"."""
from __future__ import annotations

import functools
import re
import time

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)

# LandweberRegressor's defaults are the paper's (step 1/n, 500 iterations), whose path is
# still falling at its end on these small problems: its ConvergenceWarning is tested in
# test_path_cut_warning.py, and is beside the point here.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ALL = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor, KOLSRegressor)
WITH_HOLDOUT = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor)
ITERATIVE = (NytroRegressor, LandweberRegressor)
NYSTROM = (NytroRegressor, NystromKRLSRegressor)


def make_estimator(cls, **params):
    """A small valid configuration of `cls`, with `params` (possibly bad) on top."""
    base = {"n_centers": 5, "sigma": 1.0, "max_iter": 20, "random_state": 0}
    accepted = cls().get_params()
    return cls(**{k: v for k, v in {**base, **params}.items() if k in accepted})


def data(n=50, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, d))
    return X, np.sin(3 * X[:, 0])


def with_value(a, value, index=(3, 1)):
    a = a.copy()
    a[index[: a.ndim]] = value
    return a


# ================================================================ estimators: X and y
@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("value, word", [(np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "infinity")])
def test_nonfinite_input(cls, where, value, word):
    X, y = data()
    X, y = (with_value(X, value), y) if where == "X" else (X, with_value(y, value))
    with pytest.raises(ValueError, match=f"Input {where} contains {word}"):
        make_estimator(cls).fit(X, y)


@pytest.mark.parametrize("cls", ALL)
def test_nonfinite_input_to_predict(cls):
    X, y = data()
    est = make_estimator(cls).fit(X, y)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.predict(with_value(X, np.nan))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("shape, match", [
    ((50,), "Expected 2D array, got 1D array"),
    ((50, 2, 1), "Found array with dim 3"),
    ((), "Expected 2D array, got scalar array"),
])
def test_X_of_wrong_rank(cls, shape, match):
    X, y = data()
    with pytest.raises(ValueError, match=match):
        make_estimator(cls).fit(X.ravel()[: int(np.prod(shape))].reshape(shape), y)


@pytest.mark.parametrize("cls", ALL)
def test_y_of_wrong_length_or_rank(cls):
    X, y = data()
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        make_estimator(cls).fit(X, y[:-1])
    with pytest.raises(ValueError, match="Found array with dim 3"):  # sklearn's wording: no "y"
        make_estimator(cls).fit(X, y.reshape(-1, 1, 1))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("shape, match", [((0, 2), "0 sample"), ((50, 0), "0 feature")])
def test_empty_X(cls, shape, match):
    with pytest.raises(ValueError, match=match):
        make_estimator(cls).fit(np.zeros(shape), np.zeros(shape[0]))


@pytest.mark.parametrize("cls", ALL)
def test_complex_and_object_input(cls):
    X, y = data()
    with pytest.raises(ValueError, match="Complex data not supported"):
        make_estimator(cls).fit(X + 1j, y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        make_estimator(cls).fit(X, y + 1j)
    with pytest.raises(ValueError, match="could not convert string to float"):
        make_estimator(cls).fit(np.full(X.shape, "a", dtype=object), y)
    with pytest.raises(ValueError, match="could not convert string to float"):
        make_estimator(cls).fit(X, np.full(y.shape, "a"))


# ================================================================ estimators: parameters
@pytest.mark.parametrize("cls", NYSTROM)
@pytest.mark.parametrize("n_centers", [0, -3, 1.5, "5"])
def test_bad_n_centers(cls, n_centers):
    X, y = data()
    with pytest.raises(ValueError, match=f"n_centers.*{n_centers}"):
        make_estimator(cls, n_centers=n_centers).fit(X, y)


@pytest.mark.parametrize("cls", NYSTROM)
@pytest.mark.parametrize("n_centers", [41, 10**6])
def test_too_many_centres_are_capped_with_a_warning_naming_n_centers(cls, n_centers):
    """More centres than training rows: all of them, as scikit-learn's Nystroem does
    (issue 44; before, a ValueError)."""
    X, y = data()  # 50 rows, 40 of them left for training after the 20% hold-out
    with pytest.warns(UserWarning, match=rf"n_centers={n_centers} is more than the 40 training rows left after the "
                      r"hold-out split; using all 40 as centres \(n_centers_\). Set n_centers <= 40"):
        fitted = make_estimator(cls, n_centers=n_centers).fit(X, y)
    assert fitted.n_centers_ == 40


@pytest.mark.parametrize("cls", NYSTROM)
def test_n_centers_counts_the_training_rows(cls):
    """Without a hold-out set every row can be a centre."""
    X, y = data()
    make_estimator(cls, n_centers=50, validation_fraction=None, lambdas=[1e-3]).fit(X, y)
    with pytest.warns(UserWarning, match="n_centers=51 is more than the 50 training rows"):
        capped = make_estimator(cls, n_centers=51, validation_fraction=None, lambdas=[1e-3]).fit(X, y)
    assert capped.n_centers_ == 50


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("sigma", [0, -1.0, np.nan, np.inf, -np.inf, "1.0", None, [1.0], [[1.0, 2.0], [1.0]],
                                   [1.0, [2.0, 3.0]]])
def test_bad_sigma(cls, sigma):
    X, y = data()
    with pytest.raises(ValueError, match="sigma"):
        make_estimator(cls, sigma=sigma).fit(X, y)


@pytest.mark.parametrize("cls", ITERATIVE)
@pytest.mark.parametrize("max_iter", [0, -1, 2.5, None])
def test_bad_max_iter(cls, max_iter):
    X, y = data()
    with pytest.raises(ValueError, match=f"max_iter.*{max_iter}"):
        make_estimator(cls, max_iter=max_iter).fit(X, y)


@pytest.mark.parametrize("cls", WITH_HOLDOUT)
@pytest.mark.parametrize("fraction", [0, 1, 0.0, 1.0, -0.1, 1.5, np.nan, "0.2", True])
def test_bad_validation_fraction(cls, fraction):
    X, y = data()
    with pytest.raises(ValueError, match="validation_fraction"):
        make_estimator(cls, validation_fraction=fraction).fit(X, y)


@pytest.mark.parametrize("cls", WITH_HOLDOUT)
def test_validation_fraction_leaving_no_rows(cls):
    """A legal fraction that rounds to no hold-out row (or no training row) on a tiny set."""
    X, y = data(n=4)
    for fraction in (0.01, 0.99):
        with pytest.raises(ValueError, match="validation_fraction"):
            make_estimator(cls, n_centers=1, validation_fraction=fraction).fit(X, y)


# (class, parameter) for every option that takes one of a few strings
OPTIONS = [
    (NytroRegressor, "step_size"), (NytroRegressor, "stopping"), (NytroRegressor, "factor"),
    (NytroRegressor, "solver"), (NytroRegressor, "iterates"), (LandweberRegressor, "step_size"),
    (LandweberRegressor, "stopping"), (LandweberRegressor, "iterates"),
    (NystromKRLSRegressor, "factor"), (NystromKRLSRegressor, "solver"), (KRLSRegressor, "solver"),
] + [(cls, "dtype") for cls in ALL]


@pytest.mark.parametrize("cls, param", OPTIONS, ids=[f"{c.__name__}-{p}" for c, p in OPTIONS])
@pytest.mark.parametrize("value", ["bogus", "AUTO", ""])
def test_unknown_option(cls, param, value):
    X, y = data()
    with pytest.raises(ValueError, match=f"{param}={value!r} is not one of"):
        make_estimator(cls, **{param: value}).fit(X, y)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("spelling", [np.float32, np.dtype("float32"), "f4"])
def test_dtype_takes_numpy_spellings(cls, spelling):
    """dtype=np.float32 (or a dtype, or NumPy's short code) means dtype="float32", as in NumPy."""
    X, y = data()
    named = make_estimator(cls, dtype="float32").fit(X, y)
    spelled = make_estimator(cls, dtype=spelling).fit(X, y)
    assert spelled.predict(X).dtype == np.float32
    np.testing.assert_array_equal(spelled.predict(X), named.predict(X))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("value", [np.float16, np.int64, int, bool, np.dtype("complex128"), 3])
def test_dtype_of_another_kind_is_refused(cls, value):
    X, y = data()
    with pytest.raises(ValueError, match=re.escape(f"dtype={value!r} is not one of None, 'float32', 'float64'")):
        make_estimator(cls, dtype=value).fit(X, y)


def test_functions_take_numpy_dtype_spellings():
    X, y = data()
    centers = X[:10]
    np.testing.assert_array_equal(nytro.gaussian_kernel(X, centers, 1.0, dtype=np.float32),
                                  nytro.gaussian_kernel(X, centers, 1.0, dtype="float32"))
    assert nytro.gaussian_kernel(X, centers, 1.0, dtype=float).dtype == np.float64
    named = nytro.nytro_path(X, y, centers, 1.0, X_val=X, y_val=y, max_iter=10, storage="float32")
    spelled = nytro.nytro_path(X, y, centers, 1.0, X_val=X, y_val=y, max_iter=10, storage=np.float32)
    np.testing.assert_array_equal(spelled.coef, named.coef)
    with pytest.raises(ValueError, match=re.escape("storage=<class 'numpy.float64'> is not one of None, 'float32'")):
        nytro.nytro_path(X, y, centers, 1.0, storage=np.float64)


@pytest.mark.parametrize("cls, param, value", [
    (NytroRegressor, "step_size", -0.5), (NytroRegressor, "step_size", 0.0),
    (NytroRegressor, "step_size", np.nan), (LandweberRegressor, "step_size", np.inf),
    (NytroRegressor, "tol", -1.0), (LandweberRegressor, "tol", np.nan),
    (NytroRegressor, "window", 1), (LandweberRegressor, "window", 0),
    (NystromKRLSRegressor, "lambdas", [1e-3, -1.0]), (KRLSRegressor, "lambdas", []),
    (KRLSRegressor, "lambdas", [np.nan]), (KOLSRegressor, "rcond", -1.0),
] + [(cls, "n_threads", 0) for cls in ALL] + [(cls, "n_threads", -2) for cls in ALL])
def test_bad_numeric_option(cls, param, value):
    X, y = data()
    with pytest.raises(ValueError, match=param):
        make_estimator(cls, **{param: value}).fit(X, y)


# ================================================================ estimators: predict
@pytest.mark.parametrize("cls", ALL)
def test_predict_before_fit(cls):
    X, _ = data()
    with pytest.raises(NotFittedError):
        make_estimator(cls).predict(X)


@pytest.mark.parametrize("cls", ALL)
def test_predict_with_wrong_number_of_features(cls):
    X, y = data()
    est = make_estimator(cls).fit(X, y)
    for bad in (X[:, :1], np.hstack([X, X])):
        with pytest.raises(ValueError, match=f"X has {bad.shape[1]} features, but {cls.__name__} is expecting 2"):
            est.predict(bad)
    with pytest.raises(ValueError, match="Expected 2D array"):
        est.predict(X[0])


# ================================================================ numerical failure
@pytest.mark.parametrize("cls", ITERATIVE)
@pytest.mark.parametrize("max_iter, fraction", [(500, 0.2), (500, None), (10, 0.2), (10, None)])
def test_diverging_step_raises(cls, max_iter, fraction):
    """A step 1e6 times the stable one makes |1 - step * s| ~ 1e6: the iterates grow by
    that factor each iteration. That is a failure whether or not they would have
    overflowed to inf by max_iter (after 10 iterations they are ~1e60, finite but
    meaningless), so the step is refused up front, naming the stable bound."""
    X, y = data(200)
    est = make_estimator(cls, method="gd", step_size=1e6, max_iter=max_iter, validation_fraction=fraction)
    with pytest.raises(ValueError, match=r"step_size=1e\+06 is unstable .* 2 / lambda_max"):
        est.fit(X, y)


# Finite input at extreme scales: k depends on ||x - z|| / sigma only, so scaling X and
# sigma together leaves K unchanged, and a sigma far below the distances gives K = I (the
# rows are distinct). Computed as ||x||^2 + ||z||^2 - 2 x.z, the squares overflow to inf
# and inf - inf is NaN; the contract allows a ValueError here, never a NaN.
EXTREME_SCALES = [
    pytest.param(np.float64, 1e200, 1e200, "same", id="float64 X and sigma 1e200"),
    pytest.param(np.float32, 1e20, 1e20, "same", id="float32 X and sigma 1e20"),
    pytest.param(np.float64, 1.0, 1e-300, "identity", id="sigma 1e-300"),
]


@pytest.mark.parametrize("precision, scale, sigma, expected", EXTREME_SCALES)
def test_kernel_at_extreme_scales_is_right_or_refused(precision, scale, sigma, expected):
    X = np.random.RandomState(0).uniform(-1, 1, (6, 2))
    want = nytro.gaussian_kernel(X, X, 1.0) if expected == "same" else np.eye(6)
    try:
        K = nytro.gaussian_kernel((X * scale).astype(precision), (X * scale).astype(precision), sigma)
    except ValueError as error:
        assert re.search("X|Z|sigma", str(error)), error
        return
    assert np.all(np.isfinite(K)), f"silent NaN or inf: {K}"
    np.testing.assert_allclose(K, want, atol=1e-5 if precision == np.float32 else 1e-12)


@pytest.mark.parametrize("cls", ALL)
def test_fit_at_extreme_scale_is_right_or_refused(cls):
    """The estimators on X * 1e200 with sigma * 1e200: the same model or a ValueError."""
    X, y = data()
    ref = make_estimator(cls, sigma=0.3).fit(X, y)
    try:
        est = make_estimator(cls, sigma=0.3e200).fit(X * 1e200, y)
    except ValueError as error:
        assert re.search("X|sigma", str(error)), error
        return
    assert np.all(np.isfinite(est.coef_)), "fit returned NaN coefficients without an error"
    np.testing.assert_allclose(est.predict(X * 1e200), ref.predict(X), atol=1e-6)


@pytest.mark.parametrize("method", ["gd", "cg", "hybrid"])
def test_linear_kernel_overflow_is_refused_not_a_zero_model(method):
    """A linear kernel on X * 1e120: K^T K overflows and every hold-out error was inf; cg
    and hybrid returned the zero model at t = 1 without an error, and gd's error blamed
    its step. A model, or an error that names the overflow and its remedy."""
    X, y = data()
    try:
        est = make_estimator(NytroRegressor, kernel="linear", method=method).fit(X * 1e120, y)
    except (RuntimeError, ValueError) as error:
        assert re.search("overflow.*rescale X", str(error)), error
        return
    assert np.isfinite(est.validation_rmse_[est.n_iter_ - 1]), "selected a model whose hold-out error is inf"
    assert np.any(est.coef_ != 0), "returned the zero model"


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
def test_linear_kernel_overflow_in_nkrls_names_it(solver):
    """NKRLS on the same data: A^T A overflowed, and the error was an eigendecomposition
    that "did not converge"."""
    X, y = data()
    with pytest.raises(RuntimeError, match="overflow.*rescale X"):
        make_estimator(NystromKRLSRegressor, kernel="linear", solver=solver).fit(X * 1e120, y)


@pytest.mark.parametrize("cls", [NytroRegressor, NytroClassifier])
@pytest.mark.parametrize("scale", [1e80, 1e120])
def test_linear_kernel_overflow_in_nytros_spectral_solver_names_it(cls, scale):
    """NYTRO's spectral solver on the same data (and on X * 1e80, where K_mm is still
    finite): A^T A overflowed, and the error was an eigendecomposition that "did not
    converge (LAPACK ?syevd info=2)"."""
    X, y = data(n=300, d=3)
    with pytest.raises(RuntimeError, match="A\\^T A is not finite.*overflow.*rescale X"):
        make_estimator(cls, kernel="linear", solver="spectral", n_centers=40).fit(
            X * scale, y if cls is NytroRegressor else y > 0)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("exponent", [-1000, -600, 600, 1000])
def test_targets_near_the_ends_of_float64_give_the_scaled_model(cls, exponent):
    """y * 2^e, whose squared errors would underflow to 0 or overflow to inf: the same
    model, scaled by 2^e bit for bit (the core fits y / 2^k, and the results are scaled back)."""
    X, y = data()
    ref = make_estimator(cls, sigma=0.5).fit(X, y)
    est = make_estimator(cls, sigma=0.5).fit(X, np.ldexp(y, exponent))
    np.testing.assert_array_equal(est.predict(X), np.ldexp(ref.predict(X), exponent))
    np.testing.assert_array_equal(est.coef_, np.ldexp(ref.coef_, exponent))
    if hasattr(ref, "validation_rmse_"):
        np.testing.assert_array_equal(est.validation_rmse_, np.ldexp(ref.validation_rmse_, exponent))
    for name in ("n_iter_", "lambda_"):
        assert getattr(est, name, None) == getattr(ref, name, None), name


@pytest.mark.parametrize("exponent", [-1000, 1000])
def test_path_functions_scale_extreme_targets_exactly(exponent):
    """The public path functions do the scaling (the estimators go through them)."""
    X, y = data()
    X_tr, y_tr, X_val, y_val = X[:40], y[:40], X[40:], y[40:]
    centers = X_tr[:10]
    for fit in (lambda t, tv: nytro.nytro_path(X_tr, t, centers, 0.5, X_val=X_val, y_val=tv, method="hybrid"),
                lambda t, tv: nytro.nkrls_path(X_tr, t, centers, 0.5, X_val=X_val, y_val=tv),
                lambda t, tv: nytro.landweber_path(X_tr, t, 0.5, X_val=X_val, y_val=tv, max_iter=50)):
        ref, est = fit(y_tr, y_val), fit(np.ldexp(y_tr, exponent), np.ldexp(y_val, exponent))
        np.testing.assert_array_equal(est.coef, np.ldexp(ref.coef, exponent))
        np.testing.assert_array_equal(est.validation_rmse, np.ldexp(ref.validation_rmse, exponent))
    np.testing.assert_array_equal(nytro.kols(X, np.ldexp(y, exponent), 0.5), np.ldexp(nytro.kols(X, y, 0.5), exponent))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e170, 1e300])
def test_targets_at_extreme_scale_are_fitted(cls, scale):
    """Before the targets were scaled, y * 1e-170 gave t* = 1 and a zero model (its squared
    errors underflowed) and y * 1e170 an error or a zero model: now both fit."""
    X, y = data()
    ref = make_estimator(cls, sigma=0.5).fit(X, y)
    est = make_estimator(cls, sigma=0.5).fit(X, y * scale)
    np.testing.assert_allclose(est.predict(X) / scale, ref.predict(X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("cls", [NytroRegressor, NystromKRLSRegressor])
def test_float32_targets_at_extreme_scale_are_fitted(cls):
    X, y = data()
    X = X.astype(np.float32)
    ref = make_estimator(cls, sigma=0.5).fit(X, y.astype(np.float32))
    for scale in (1e-30, 1e30):
        est = make_estimator(cls, sigma=0.5).fit(X, (y * scale).astype(np.float32))
        assert est.coef_.dtype == np.float32
        np.testing.assert_allclose(est.predict(X) / np.float32(scale), ref.predict(X), rtol=1e-3, atol=1e-4)


WINDOW_RULE = dict(sigma=0.5, n_centers=30, method="gd", max_iter=300, stopping="window", window=5,
                   step_size="auto", n_iter_no_change=None)


@pytest.mark.parametrize("cls", ITERATIVE)
def test_window_tol_stays_in_units_of_y_when_targets_are_scaled(cls):
    """stopping="window" has an absolute tol, in units of y: y * 2^200 (scaled inside the
    fit) must stop where y * 2^100 (not scaled) does, which is not where y does (there
    the same tol stops the path early)."""
    X, y = data(n=200)
    t = {e: make_estimator(cls, tol=1e-3, **WINDOW_RULE).fit(X, np.ldexp(y, e)).n_iter_ for e in (0, 100, 200)}
    assert t[200] == t[100] != t[0], t


@pytest.mark.parametrize("cls", ITERATIVE)
def test_window_default_tol_matches_the_core(cls):
    """The path functions rescale the window rule's default tol themselves: it must be the
    core's (tol=None there), which stops this path where an explicit 1e-4 does and not
    where 2e-4 does."""
    from nytro._checks import WINDOW_DEFAULT_TOL
    X, y = data(n=200)
    y = np.ldexp(y, -4)
    default = make_estimator(cls, **WINDOW_RULE).fit(X, y)
    explicit = make_estimator(cls, tol=WINDOW_DEFAULT_TOL, **WINDOW_RULE).fit(X, y)
    other = make_estimator(cls, tol=2 * WINDOW_DEFAULT_TOL, **WINDOW_RULE).fit(X, y)
    assert default.n_iter_ == explicit.n_iter_ < WINDOW_RULE["max_iter"]
    np.testing.assert_array_equal(default.validation_rmse_, explicit.validation_rmse_)
    assert other.n_iter_ != default.n_iter_


# ================================================================ kernel output
@pytest.mark.parametrize("make_out, error, message", [
    (lambda: [[0.0] * 4] * 6, TypeError, "out must be a numpy.ndarray"),
    (lambda: np.empty((6, 5)), ValueError, r"out must have shape \(6, 4\)"),
    (lambda: np.empty((6, 4), dtype=np.float32), ValueError, "out must have dtype float64"),
    (lambda: np.empty((4, 6)).T, ValueError, "out must be C-contiguous"),
    (lambda: _read_only(), ValueError, "out is read-only"),
])
def test_gaussian_kernel_out_is_checked(make_out, error, message):
    X, Z = np.ones((6, 3)), np.zeros((4, 3))
    with pytest.raises(error, match=message):
        nytro.gaussian_kernel(X, Z, 1.0, out=make_out())


def _read_only():
    out = np.empty((6, 4))
    out.flags.writeable = False
    return out


# ================================================================ memory
def test_huge_kernel_raises_memory_error_before_allocating():
    """10^6 x 10^6 doubles are 8 TB: refused from the shapes, in well under a second."""
    X = np.zeros((10**6, 10))
    start = time.perf_counter()
    with pytest.raises(MemoryError, match="kernel"):
        nytro.gaussian_kernel(X, X, 1.0)
    assert time.perf_counter() - start < 1.0


# n = 2e5 rows of 2 features are 3.2 MB, but an n x n kernel is 320 GB; the Nystrom ones
# get 1e5 centres, a 1e5 x 1e5 K_mm of 80 GB.
@pytest.mark.parametrize("cls", ALL)
def test_huge_fit_raises_memory_error_before_allocating(cls):
    n = 2 * 10**5
    X, y = np.zeros((n, 2)), np.zeros(n)
    X[:, 0] = np.arange(n)  # distinct rows
    start = time.perf_counter()
    with pytest.raises(MemoryError, match="GB"):
        make_estimator(cls, n_centers=10**5).fit(X, y)
    assert time.perf_counter() - start < 1.0


# ================================================================ low-level functions
X0, Y0 = data()
C0 = X0[:5]
NAN_X = with_value(X0, np.nan)
INF_Y = with_value(Y0, np.inf, (2,))
PATHS = {  # name: function of (X, y, **options), the other arguments valid
    "nytro_path": lambda X, y, **kw: nytro.nytro_path(X, y, C0, 1.0, **{"max_iter": 5, **kw}),
    "nkrls_path": lambda X, y, **kw: nytro.nkrls_path(X, y, C0, 1.0, lambdas=[1e-3], **kw),
    "krls_path": lambda X, y, **kw: nytro.krls_path(X, y, 1.0, lambdas=[1e-3], **kw),
    "landweber_path": lambda X, y, **kw: nytro.landweber_path(X, y, 1.0, **{"max_iter": 5, **kw}),
    "kols": lambda X, y, **kw: nytro.kols(X, y, 1.0, **kw),
}
GOOD_K = nytro.gaussian_kernel(C0, C0, 1.0)
nyt = functools.partial(nytro.nytro_path, X0, Y0, C0, 1.0)
nkr = functools.partial(nytro.nkrls_path, X0, Y0, C0, 1.0)

LOW_LEVEL_CASES = {
    # gaussian_kernel
    "kernel NaN X": (lambda: nytro.gaussian_kernel(NAN_X, X0, 1.0), "X contains NaN"),
    "kernel inf Z": (lambda: nytro.gaussian_kernel(X0, with_value(X0, -np.inf), 1.0), "Z contains NaN or inf"),
    "kernel 1-D X": (lambda: nytro.gaussian_kernel(X0[:, 0], X0, 1.0), r"X must be a 2-D array.*\(50,\)"),
    "kernel 3-D Z": (lambda: nytro.gaussian_kernel(X0, X0[None], 1.0), r"Z must be a 2-D array.*\(1, 50, 2\)"),
    "kernel features": (lambda: nytro.gaussian_kernel(X0, X0[:, :1], 1.0), "X has 2 features but Z has 1"),
    "kernel empty": (lambda: nytro.gaussian_kernel(X0[:0], X0, 1.0), r"X is empty \(shape \(0, 2\)\)"),
    "kernel sigma 0": (lambda: nytro.gaussian_kernel(X0, X0, 0.0), "sigma must be a finite number > 0, got 0.0"),
    "kernel sigma nan": (lambda: nytro.gaussian_kernel(X0, X0, np.nan), "sigma .* got nan"),
    "kernel sigma inf": (lambda: nytro.gaussian_kernel(X0, X0, np.inf), "sigma .* got inf"),
    "kernel sigma str": (lambda: nytro.gaussian_kernel(X0, X0, "1"),
                         "sigma must be a number > 0 or a 1-D array of them .*, or 'auto' for an estimator, got"),
    "kernel ragged sigma": (lambda: nytro.kernel_matrix(X0, X0, sigma=[[1.0, 2.0], [1.0]]),
                            r"sigma must be a number or a 1-D array of numbers \(one bandwidth per feature\)"),
    "kernel complex": (lambda: nytro.gaussian_kernel(X0 + 0j, X0, 1.0), "X must hold real numbers, got dtype complex"),
    "kernel object": (lambda: nytro.gaussian_kernel(X0, X0.astype(object), 1.0),
                      "Z must hold real numbers, got dtype object"),
    "kernel strings": (lambda: nytro.gaussian_kernel(np.full((2, 2), "a"), X0, 1.0), "X must hold real numbers"),
    "kernel n_threads": (lambda: nytro.gaussian_kernel(X0, X0, 1.0, n_threads=0),
                         "n_threads must be an integer >= 1, got 0"),
    "kernel dtype": (lambda: nytro.gaussian_kernel(X0, X0, 1.0, dtype="float16"), "dtype='float16' is not one of"),
    # nystrom_factor
    "factor not square": (lambda: nytro.nystrom_factor(X0), r"K_mm must be square, got shape \(50, 2\)"),
    "factor 1-D": (lambda: nytro.nystrom_factor(np.ones(3)), "K_mm must be a 2-D array"),
    "factor NaN": (lambda: nytro.nystrom_factor(with_value(GOOD_K, np.nan)), "K_mm contains NaN"),
    "factor method": (lambda: nytro.nystrom_factor(GOOD_K, method="lu"), "method='lu' is not one of"),
    "factor rank_tol": (lambda: nytro.nystrom_factor(GOOD_K, rank_tol=-1.0), "rank_tol .* -1"),
    "factor jitter": (lambda: nytro.nystrom_factor(GOOD_K, jitter=np.nan), "jitter .* nan"),
    # sample_centers
    "centers m > n": (lambda: nytro.sample_centers(5, 6, 0), "n_centers=6 must be <= n=5"),
    "centers m = 0": (lambda: nytro.sample_centers(5, 0, 0), "n_centers must be an integer >= 1, got 0"),
    "centers n = 0": (lambda: nytro.sample_centers(0, 1, 0), "n must be an integer >= 1, got 0"),
    "centers n float": (lambda: nytro.sample_centers(5.0, 2, 0), "n must be an integer >= 1, got 5.0"),
    "centers seed < 0": (lambda: nytro.sample_centers(5, 2, -1), "seed must be an integer >= 0, got -1"),
    "centers seed 2**64": (lambda: nytro.sample_centers(5, 2, 2**64), r"seed must be < 2\*\*64"),
    # options of the paths
    "nytro centres features": (lambda: nytro.nytro_path(X0, Y0, C0[:, :1], 1.0), "centers have 1 features but X has 2"),
    "nytro too many centres": (lambda: nytro.nytro_path(X0[:3], Y0[:3], C0, 1.0),
                               r"more centres \(5\) than training rows \(3\)"),
    "nytro NaN centres": (lambda: nytro.nytro_path(X0, Y0, with_value(C0, np.nan), 1.0), "centers contains NaN"),
    "nytro max_iter": (lambda: nyt(max_iter=0), "max_iter must be an integer >= 1, got 0"),
    "nytro step_size str": (lambda: nyt(step_size="x"), "step_size='x' is not one of"),
    "nytro step_size < 0": (lambda: nyt(step_size=-1.0), "step_size must be a finite number > 0, got -1.0"),
    "nytro stopping": (lambda: nyt(stopping="x"), "stopping='x' is not one of"),
    "nytro factor": (lambda: nyt(factor="x"), "factor='x' is not one of"),
    "nytro solver": (lambda: nyt(solver="x"), "solver='x' is not one of"),
    "nytro iterates": (lambda: nyt(iterates="x"), "iterates='x' is not one of"),
    "nytro window": (lambda: nyt(window=1), "window must be an integer >= 2, got 1"),
    "nytro tol": (lambda: nyt(tol=-1.0), "tol must be None or a finite number >= 0"),
    "nytro X_val alone": (lambda: nyt(X_val=X0), "X_val and y_val must be given together"),
    "nytro y_val length": (lambda: nyt(X_val=X0, y_val=Y0[:3]), "y_val has 3 rows but X has 50"),
    "nytro X_val features": (lambda: nyt(X_val=X0[:, :1], y_val=Y0), "X_val has 1 features but X has 2"),
    "nytro y_val NaN": (lambda: nyt(X_val=X0, y_val=with_value(Y0, np.nan, (0,))),
                        "y_val contains NaN"),
    "nytro y_val outputs": (lambda: nyt(X_val=X0, y_val=np.c_[Y0, Y0]), "y_val has 2 outputs but y has 1"),
    "landweber step_size": (lambda: nytro.landweber_path(X0, Y0, 1.0, step_size="x"), "step_size='x' is not one of"),
    "landweber stopping": (lambda: nytro.landweber_path(X0, Y0, 1.0, stopping="x"), "stopping='x' is not one of"),
    "landweber iterates": (lambda: nytro.landweber_path(X0, Y0, 1.0, iterates="x"), "iterates='x' is not one of"),
    "nkrls lambdas < 0": (lambda: nkr(lambdas=[1.0, -1.0]), "lambdas must be finite and > 0"),
    "nkrls lambdas empty": (lambda: nkr(lambdas=[]), "lambdas must be a non-empty"),
    "nkrls no hold-out": (lambda: nkr(), "without a hold-out set exactly one lambda is needed, got 100"),
    "nkrls solver": (lambda: nkr(lambdas=[1.0], solver="x"), "solver='x' is not one of"),
    "nkrls factor": (lambda: nkr(lambdas=[1.0], factor="x"), "factor='x' is not one of"),
    "krls lambdas str": (lambda: nytro.krls_path(X0, Y0, 1.0, lambdas="a"), "lambdas"),
    "krls lambdas 2-D": (lambda: nytro.krls_path(X0, Y0, 1.0, lambdas=[[1.0]]), "lambdas"),
    "krls no hold-out": (lambda: nytro.krls_path(X0, Y0, 1.0, lambdas=[1.0, 2.0]), "exactly one lambda"),
    "krls solver": (lambda: nytro.krls_path(X0, Y0, 1.0, lambdas=[1.0], solver="x"), "solver='x' is not one of"),
    "kols sigma": (lambda: nytro.kols(X0, Y0, -2.0), "sigma must be a finite number > 0, got -2.0"),
    "landweber sigma": (lambda: nytro.landweber_path(X0, Y0, "wide"),
                        "sigma must be a number > 0 or a 1-D array of them .*, or 'auto' for an estimator, got"),
    "kols rcond": (lambda: nytro.kols(X0, Y0, 1.0, rcond=-1.0), "rcond must be None or a finite number >= 0"),
    "kernel_predict coef rows": (lambda: nytro.kernel_predict(X0, C0, np.ones(4), 1.0),
                                 "coef has 4 rows but there are 5 centres"),
    "kernel_predict features": (lambda: nytro.kernel_predict(X0[:, :1], C0, np.ones(5), 1.0),
                                "X has 1 features but the centres have 2"),
}
# the checks every path function shares, on its X and y
for _name, _path in PATHS.items():
    LOW_LEVEL_CASES.update({
        f"{_name} NaN X": (lambda p=_path: p(NAN_X, Y0), "X contains NaN or infinity"),
        f"{_name} inf y": (lambda p=_path: p(X0, INF_Y), "y contains NaN or infinity"),
        f"{_name} 1-D X": (lambda p=_path: p(X0[:, 0], Y0), "X must be a 2-D array"),
        f"{_name} 3-D X": (lambda p=_path: p(X0[:, :, None], Y0), "X must be a 2-D array"),
        f"{_name} 3-D y": (lambda p=_path: p(X0, Y0[:, None, None]), "y must be 1-D .* or 2-D"),
        f"{_name} y length": (lambda p=_path: p(X0, Y0[:-1]), "y has 49 rows but X has 50"),
        f"{_name} empty X": (lambda p=_path: p(X0[:0], Y0[:0]), "X is empty"),
        f"{_name} complex y": (lambda p=_path: p(X0, Y0 + 1j), "y must hold real numbers"),
        f"{_name} object X": (lambda p=_path: p(X0.astype(object), Y0), "X must hold real numbers, got dtype object"),
        f"{_name} n_threads": (lambda p=_path: p(X0, Y0, n_threads=-1), "n_threads must be an integer >= 1, got -1"),
    })


@pytest.mark.parametrize("case", list(LOW_LEVEL_CASES))
def test_low_level_bad_input(case):
    call, match = LOW_LEVEL_CASES[case]
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("name", ["nytro_path", "landweber_path"])
@pytest.mark.parametrize("holdout", [True, False])
@pytest.mark.parametrize("max_iter", [500, 10])
def test_low_level_diverging_step_raises(name, holdout, max_iter):
    """As test_diverging_step_raises, on the functions: never a NaN or ~1e60 result."""
    kwargs = {"X_val": X0, "y_val": Y0} if holdout else {}
    with pytest.raises(ValueError, match="step_size=1e\\+06 is unstable"):
        PATHS[name](X0, Y0, **{**kwargs, "step_size": 1e6, "max_iter": max_iter})


@pytest.mark.parametrize("name", list(PATHS))
def test_low_level_huge_problem_raises_memory_error(name):
    n = 2 * 10**5
    X = np.zeros((n, 2))
    X[:, 0] = np.arange(n)
    call = {  # the Nystrom ones need many centres to be too big
        "nytro_path": lambda: nytro.nytro_path(X, np.zeros(n), X[: 10**5], 1.0, solver="direct"),
        "nkrls_path": lambda: nytro.nkrls_path(X, np.zeros(n), X[: 10**5], 1.0, lambdas=[1.0]),
    }.get(name, lambda: PATHS[name](X, np.zeros(n)))
    start = time.perf_counter()
    with pytest.raises(MemoryError, match="GB"):
        call()
    assert time.perf_counter() - start < 1.0


# ====================================== NumPy scalars, C++ type limits, misleading messages
@pytest.mark.parametrize("cls", ALL)
def test_numpy_scalars_are_accepted_where_python_numbers_are(cls):
    """n_threads=np.int64(1) was refused by the estimators that capped the BLAS pool (the cap
    came before the check, and threadpoolctl takes only Python ints); validation_fraction
    np.float32(0.2) was refused outright."""
    X, y = data()
    numbers = dict(n_threads=1, sigma=0.5, max_iter=20, n_centers=5, nu=1.0, window=10, validation_fraction=0.25)
    numpy = dict(n_threads=np.int64(1), sigma=np.float32(0.5), max_iter=np.int32(20), n_centers=np.uint16(5),
                 nu=np.float64(1.0), window=np.int64(10), validation_fraction=np.float32(0.25))
    want = make_estimator(cls, **numbers).fit(X, y)
    got = make_estimator(cls, **numpy).fit(X, y)
    np.testing.assert_array_equal(got.predict(X), want.predict(X))


def test_numpy_scalars_are_accepted_by_the_functions():
    X, y = data()
    K = nytro.gaussian_kernel(X[:10], X[:10], np.float32(1.0), n_threads=np.int64(1))
    np.testing.assert_array_equal(nytro.nystrom_factor(K, n_threads=np.int64(1)), nytro.nystrom_factor(K, n_threads=1))
    np.testing.assert_array_equal(nytro.kols(X, y, 0.5, n_threads=np.int64(1)), nytro.kols(X, y, 0.5, n_threads=1))
    np.testing.assert_array_equal(nytro.sample_centers(np.int64(50), np.int32(5), np.uint64(2**64 - 1)),
                                  nytro.sample_centers(50, 5, 2**64 - 1))


def _functions_with(name, value):
    """Every public function taking argument `name`, called on small valid data with it."""
    X, y = data()
    C = X[:5]
    K = nytro.gaussian_kernel(C, C, 1.0)
    calls = {
        "gaussian_kernel": lambda **kw: nytro.gaussian_kernel(X, C, **{"sigma": 1.0, **kw}),
        "kernel_predict": lambda **kw: nytro.kernel_predict(X, C, np.ones(5), **{"sigma": 1.0, **kw}),
        "nystrom_factor": lambda **kw: nytro.nystrom_factor(K, **kw),
        "nytro_path": lambda **kw: nytro.nytro_path(X, y, C, **{"sigma": 1.0, "max_iter": 5, **kw}),
        "landweber_path": lambda **kw: nytro.landweber_path(X, y, **{"sigma": 1.0, "max_iter": 5, **kw}),
        "nkrls_path": lambda **kw: nytro.nkrls_path(X, y, C, **{"sigma": 1.0, "lambdas": [1e-3], **kw}),
        "krls_path": lambda **kw: nytro.krls_path(X, y, **{"sigma": 1.0, "lambdas": [1e-3], **kw}),
        "kols": lambda **kw: nytro.kols(X, y, **{"sigma": 1.0, **kw}),
    }
    import inspect
    out = []
    for fname, call in calls.items():
        if name in inspect.signature(getattr(nytro, fname)).parameters:
            out.append(pytest.param(functools.partial(call, **{name: value}), id=f"{fname}-{name}={value!r}"[:80]))
    return out


BAD_ARGUMENTS = [
    ("n_threads", "2"), ("n_threads", 2**31), ("n_threads", 2.0), ("n_threads", np.bool_(True)),
    ("max_iter", 2**63), ("window", 2**63), ("n_iter_no_change", 2**63), ("max_iter", "10"),
    ("sigma", 10**400), ("sigma", "1"), ("nu", 10**400), ("tol", 10**400), ("step_size", 10**400),
    ("rank_tol", 10**400), ("jitter", 10**400), ("rcond", 10**400), ("lambdas", [10**400]),
    ("lambdas", ["a"]), ("progress", 3),
]


@pytest.mark.parametrize("call", [p for name, value in BAD_ARGUMENTS for p in _functions_with(name, value)])
def test_function_arguments_past_their_type_name_the_argument(call):
    """Past the C++ type (2**63, 2**31 for n_threads), past a float (10**400), the wrong
    kind: a ValueError naming the argument, not pybind11's "incompatible function
    arguments" dump, an OverflowError or a TypeError from inside a comparison."""
    name = next(iter(call.keywords))
    with pytest.raises(ValueError, match=name):
        call()


BAD_PARAMETERS = [
    ("n_threads", "2"), ("n_threads", 2**31), ("max_iter", 2**63), ("window", 2**63), ("n_iter_no_change", 2**63),
    ("n_centers", 2**63), ("sigma", 10**400), ("nu", 10**400), ("tol", 10**400), ("step_size", 10**400),
    ("rcond", 10**400), ("validation_fraction", 10**400), ("validation_fraction", "0.2"),
    ("validation_fraction", np.float32(1.5)), ("lambdas", [10**400]),
]


@pytest.mark.parametrize("cls, name, value", [
    pytest.param(cls, name, value, id=f"{cls.__name__}-{name}={value!r}"[:80])
    for cls in ALL for name, value in BAD_PARAMETERS if name in cls().get_params()])
def test_estimator_parameters_past_their_type_name_the_parameter(cls, name, value):
    X, y = data()
    with pytest.raises(ValueError, match=name):
        make_estimator(cls, **{name: value}).fit(X, y)


def test_sample_centers_past_int64_names_the_argument():
    for args, name in (((2**63, 5, 0), "n"), ((50, 2**63, 0), "n_centers"), ((50, 5, 2**64), "seed")):
        with pytest.raises(ValueError, match=name):
            nytro.sample_centers(*args)


@pytest.mark.parametrize("cls", ITERATIVE)
def test_nu_method_with_a_huge_nu_fits(cls):
    """nu=1e300: the nu-method's coefficients, a quotient of products, overflowed to
    inf / inf and the fit blamed the step. As products of ratios they are finite for
    any nu (mu -> 0, omega -> 1: gradient descent), and the core follows its twin."""
    X, y = data(200)
    est = make_estimator(cls, method="nu", nu=1e300, step_size="auto", max_iter=30).fit(X, y)
    assert np.all(np.isfinite(est.coef_))
    X_tr, y_tr, X_val, y_val = X[:150], y[:150], X[150:], y[150:]
    got = nytro.nytro_path(X_tr, y_tr, X_tr[:20], 0.5, X_val=X_val, y_val=y_val, method="nu", nu=1e300, max_iter=30)
    want = nytro.reference.nytro_path(X_tr, y_tr, X_tr[:20], 0.5, X_val=X_val, y_val=y_val, method="nu", nu=1e300,
                                      max_iter=30)
    assert got.n_iter == want.n_iter
    np.testing.assert_allclose(got.validation_rmse, want.validation_rmse, rtol=1e-8)


def test_float32_targets_that_overflow_float32_say_so():
    """Finite y = 1e300 computed in float32 is not "NaN or infinity": it overflows float32."""
    X, y = data()
    with pytest.raises(ValueError, match=r"y overflows float32.*float64"):
        nytro.nytro_path(X.astype(np.float32), y * 1e300, X[:5].astype(np.float32), 1.0, max_iter=5)
    with pytest.raises(ValueError, match=r"y overflows float32.*float64"):
        nytro.kols(X, y * 1e300, 1.0, dtype="float32")
    with pytest.raises(ValueError, match=r"X overflows float32"):
        nytro.gaussian_kernel(X * 1e300, X, 1.0, dtype="float32")


@pytest.mark.parametrize("cls", ALL)
def test_estimators_with_float32_dtype_and_huge_finite_y_say_it_overflows(cls):
    X, y = data()
    with pytest.raises(ValueError, match=r"(?i)float32") as info:
        make_estimator(cls, dtype="float32").fit(X, y * 1e300)
    assert "NaN or infinity" not in str(info.value)


@pytest.mark.parametrize("method", ["pivoted", "qr", "cholesky"])
def test_nystrom_factor_of_an_indefinite_matrix_is_refused(method):
    """-I gave R with 0 columns, silently: a K_mm that is not positive semidefinite is no
    kernel matrix."""
    with pytest.raises(ValueError, match="K_mm"):
        nytro.nystrom_factor(-np.eye(4), method=method)


@pytest.mark.parametrize("cls, params", [(KOLSRegressor, {}), (KRLSRegressor, {"validation_fraction": None,
                                                                              "lambdas": [1e-3]}),
                                         (LandweberRegressor, {"validation_fraction": None})])
def test_centers_are_not_a_view_of_the_callers_X(cls, params):
    """Without a hold-out split the training rows are the centres: they were the caller's X
    itself, so mutating X after fit changed predict."""
    X, y = data()
    est = make_estimator(cls, sigma=0.5, **params).fit(X, y)
    X_test = X[:7].copy()
    before = est.predict(X_test)
    X += 1.0
    np.testing.assert_array_equal(est.predict(X_test), before)
    assert not np.shares_memory(est.centers_, X)


@pytest.mark.parametrize("n_jobs", [0, 1.5, True, "2"])
def test_bad_n_jobs(n_jobs):
    X, y = data()
    with pytest.raises(ValueError, match=r"^n_jobs must be None, a positive int or a negative int \(-1: every CPU\), "
                                         rf"got {n_jobs!r}$".replace(".", r"\.")):
        NytroRegressor(n_centers=10, n_jobs=n_jobs).fit(X, y)
