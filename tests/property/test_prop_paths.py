"""The path functions (nytro_path, landweber_path, nkrls_path, krls_path, kols) on small,
degenerate and oddly typed problems: a clear exception naming an argument, or the float64
reference's model to a tolerance derived from the problem's conditioning. Models are
compared by their predictions (on the training and hold-out rows, with the kernel computed
exactly): where a near-singular K_mm lets core and reference cut the factor at different
ranks, the coefficients may differ along directions that predict nothing."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nytro
import nytro.reference as ref

from ._support import INPUT_DTYPES, SERIAL, assert_close, condition, eps, exact_kernel, outcome, problems

ITERATIVE = ["gd", "nu", "cg"]
COMPUTE = [np.float64, np.float32]
# Above this relative tolerance the problem is too ill-conditioned for the compute dtype
# to say anything about the values: only shapes and finiteness are checked.
MEANINGFUL = 0.05


def path_tolerance(data, dt, operator, expected=None, centers=None) -> float:
    """eps(dt) times the condition kappa of the operator whose pseudo-inverse the model
    approximates (K_mm for the Nystrom methods, K for the full-kernel ones), times a
    growth factor for the size; for a least-squares fit that leaves a residual r, rounding
    is amplified by kappa^2 |r| / |y| as well (the classic perturbation bound), with r
    that of the reference's model on the training rows."""
    size = operator.shape[0]
    kappa = condition(operator)
    rho = 0.0
    if expected is not None:
        K = exact_kernel(data.X, centers, data.sigma).astype(np.float64)
        residual = K @ np.asarray(expected.coef, dtype=np.float64) - data.y
        norm_y = float(np.linalg.norm(data.y))
        rho = float(np.linalg.norm(residual)) / norm_y if norm_y > 0 else 0.0
    return 64 * eps(dt) * kappa * (1 + kappa * rho) * (1 + size)


def predictions(data, coef, centers):
    rows = data.X if data.X_val is None else np.vstack([data.X, data.X_val])
    K = exact_kernel(rows, centers, data.sigma).astype(np.float64)
    return K @ np.asarray(coef, dtype=np.float64)


def compare_models(got, expected, data, centers, tol, what):
    assert got.coef.shape == expected.coef.shape, f"{what}: coef shape"
    assert np.all(np.isfinite(got.coef)), f"{what}: non-finite coef"
    if tol > MEANINGFUL:
        return
    if data.X_val is not None:
        path_got, path_ref = np.asarray(got.validation_rmse), np.asarray(expected.validation_rmse)
        assert path_got.shape == path_ref.shape, f"{what}: path lengths {path_got.shape} != {path_ref.shape}"
        assert_close(path_got, path_ref, tol, f"{what} validation_rmse")
        selected_got, selected_ref = _selected(got), _selected(expected)
        if selected_got != selected_ref:
            # A near tie on the path: the two selections must be equally good.
            gap = abs(path_ref[selected_got] - path_ref[selected_ref])
            assert gap <= tol * max(float(path_ref.max()), 1e-300), \
                f"{what}: selected {selected_got} against {selected_ref}, RMSE gap {gap:.3e}"
            return
    assert_close(predictions(data, got.coef, centers), predictions(data, expected.coef, centers), tol,
                 f"{what} predictions")


def _selected(result) -> int:
    """0-based index of the selected model on the path."""
    return result.selected if hasattr(result, "selected") else result.n_iter - 1


def _cast(data, dt):
    cast = {k: (None if v is None else np.asarray(v, dtype=dt)) for k, v in data.holdout.items()}
    return np.asarray(data.X, dtype=dt), np.asarray(data.y, dtype=dt), cast


# ------------------------------------------------------------------ nytro_path
@pytest.mark.parametrize("method", ITERATIVE)
@given(data=problems(), dt=st.sampled_from(COMPUTE), max_iter=st.integers(1, 12))
def test_nytro_path_matches_reference(method, data, dt, max_iter):
    X, y, holdout = _cast(data, dt)
    C = data.centers.astype(dt)
    got = outcome(lambda: nytro.nytro_path(X, y, C, data.sigma, method=method, max_iter=max_iter, **holdout,
                                           **SERIAL),
                  {"X", "y", "centers", "sigma", "X_val", "y_val", "max_iter"})
    if got is None:
        return
    expected = ref.nytro_path(data.X, data.y, data.centers, data.sigma, method=method, max_iter=max_iter,
                              **data.holdout)
    K_mm = exact_kernel(data.centers, data.centers, data.sigma).astype(np.float64)
    compare_models(got, expected, data, data.centers, path_tolerance(data, dt, K_mm, expected, data.centers),
                   f"nytro_path {method}")


# --------------------------------------------------------------- landweber_path
@pytest.mark.parametrize("method", ITERATIVE)
@given(data=problems(max_n=16), dt=st.sampled_from(COMPUTE), max_iter=st.integers(1, 12),
       step=st.sampled_from(["paper", "auto"]))
def test_landweber_path_matches_reference(method, data, dt, max_iter, step):
    X, y, holdout = _cast(data, dt)
    got = outcome(lambda: nytro.landweber_path(X, y, data.sigma, method=method, max_iter=max_iter,
                                               step_size=step, **holdout, **SERIAL),
                  {"X", "y", "sigma", "X_val", "y_val", "max_iter"})
    if got is None:
        return
    expected = ref.landweber_path(data.X, data.y, data.sigma, method=method, max_iter=max_iter, step_size=step,
                                  **data.holdout)
    K = exact_kernel(data.X, data.X, data.sigma).astype(np.float64)
    compare_models(got, expected, data, data.X, path_tolerance(data, dt, K, expected, data.X),
                   f"landweber_path {method}")


# ------------------------------------------------------------------------ hybrid
@st.composite
def hybrid_problems(draw, function, regime):
    """Problems where the Krylov space can (krylov_past_n_val) or cannot outgrow the
    hold-out set: its dimension is at most m for nytro_path, n for landweber_path."""
    data = draw(problems(max_n=14, max_m=8, holdout=True, min_n=2))
    size = data.centers.shape[0] if function == "nytro_path" else data.X.shape[0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_val = draw(st.integers(size + 1, size + 6)) if regime == "krylov_within_n_val" else \
        draw(st.integers(1, max(1, size - 1)))
    X_val = rng.standard_normal((n_val, data.X.shape[1]))
    y_val = np.sin(X_val.sum(1))
    if data.y.ndim == 2:
        y_val = np.repeat(y_val[:, None], data.y.shape[1], axis=1)
    data.X_val, data.y_val = X_val, y_val
    return data


@pytest.mark.parametrize("regime", ["krylov_within_n_val", "krylov_past_n_val"])
@pytest.mark.parametrize("function", ["nytro_path", "landweber_path"])
@given(data=st.data())
def test_hybrid_path_matches_reference(function, regime, data):
    problem = data.draw(hybrid_problems(function, regime))
    max_iter = data.draw(st.integers(1, 16))
    if function == "nytro_path":
        args, centers = (problem.X, problem.y, problem.centers, problem.sigma), problem.centers
        operator = exact_kernel(problem.centers, problem.centers, problem.sigma)
    else:
        args, centers = (problem.X, problem.y, problem.sigma), problem.X
        operator = exact_kernel(problem.X, problem.X, problem.sigma)
    kwargs = dict(method="hybrid", max_iter=max_iter, **problem.holdout)
    got = getattr(nytro, function)(*args, **kwargs, **SERIAL)
    expected = getattr(ref, function)(*args, **kwargs)
    tol = path_tolerance(problem, np.float64, operator.astype(np.float64), expected, centers)
    compare_models(got, expected, problem, centers, tol, f"{function} hybrid")


# ------------------------------------------- hold-out error of the returned model
PATH_CALLS = {
    "nytro_path-gd": ("nytro_path", {"method": "gd"}),
    "nytro_path-cg": ("nytro_path", {"method": "cg"}),
    "nytro_path-hybrid": ("nytro_path", {"method": "hybrid"}),
    "landweber_path-nu": ("landweber_path", {"method": "nu", "step_size": "auto"}),
    "landweber_path-hybrid": ("landweber_path", {"method": "hybrid"}),
    "nkrls_path": ("nkrls_path", {}),
    "krls_path": ("krls_path", {}),
}


@pytest.mark.parametrize("call", list(PATH_CALLS))
@given(data=problems(max_n=20, max_m=10, holdout=True, min_n=2), max_iter=st.integers(1, 16))
def test_holdout_rmse_is_that_of_the_returned_coef(call, data, max_iter):
    # The reported hold-out RMSE of the selected model, against that RMSE computed
    # directly from the returned coefficients (exact kernel): independent of how the core
    # (or the twin) updates its errors, e.g. hybrid's projected two-term formula.
    function, kwargs = PATH_CALLS[call]
    if function in ("nytro_path", "landweber_path"):
        kwargs = {**kwargs, "max_iter": max_iter}
    centers = data.centers if function in ("nytro_path", "nkrls_path") else data.X
    args = (data.X, data.y, data.centers, data.sigma) if centers is data.centers else (data.X, data.y, data.sigma)
    got = getattr(nytro, function)(*args, **kwargs, **data.holdout, **SERIAL)
    coef = np.asarray(got.coef, dtype=np.float64)
    direct = exact_kernel(data.X_val, centers, data.sigma).astype(np.float64) @ coef
    rmse = float(np.sqrt(np.mean((direct - data.y_val) ** 2)))
    reported = float(np.asarray(got.validation_rmse)[_selected(got)])
    # The reported value sums n_val squared residuals, each the rounding of a sum of m
    # products with coef: scale by |K_val| |coef| + |y_val|.
    K_val = np.abs(exact_kernel(data.X_val, centers, data.sigma).astype(np.float64))
    size = float((K_val @ np.abs(coef.reshape(coef.shape[0], -1))).max()) + float(np.abs(data.y_val).max())
    tol = 64 * eps(np.float64) * (1 + centers.shape[0]) * size
    assert abs(reported - rmse) <= tol + 1e-9 * rmse, \
        f"{call}: reported hold-out RMSE {reported:.6g}, of the returned coef {rmse:.6g}"


# ------------------------------------------------------------------- Tikhonov
@pytest.mark.parametrize("function", ["nkrls_path", "krls_path"])
@given(data=problems(max_n=16), dt=st.sampled_from(COMPUTE), solver=st.sampled_from(["eigh", "cholesky"]),
       lambdas=st.lists(st.floats(-12, 0).map(lambda e: 10.0 ** e), min_size=1, max_size=4))
def test_tikhonov_paths_match_reference(function, data, dt, solver, lambdas):
    X, y, holdout = _cast(data, dt)
    if function == "nkrls_path":
        args, centers = (X, y, data.centers.astype(dt), data.sigma), data.centers
        operator = exact_kernel(data.centers, data.centers, data.sigma)
    else:
        args, centers = (X, y, data.sigma), data.X
        operator = exact_kernel(data.X, data.X, data.sigma)
    got = outcome(lambda: getattr(nytro, function)(*args, lambdas=lambdas, solver=solver, **holdout, **SERIAL),
                  {"X", "y", "centers", "sigma", "lambdas", "X_val", "y_val", "solver"})
    if data.X_val is None and len(lambdas) > 1:
        assert got is None, "several lambdas without a hold-out set must be refused"
        return
    if got is None:
        return
    ref_args = (data.X, data.y, data.centers, data.sigma) if function == "nkrls_path" else (data.X, data.y,
                                                                                            data.sigma)
    expected = getattr(ref, function)(*ref_args, lambdas=lambdas, **data.holdout)
    # The condition of operator + lambda n I for the smallest lambda: rounding moves the
    # operator's zero eigenvalues (duplicate rows) by eps |operator|, which lambda n
    # tames only where it is larger.
    n = data.X.shape[0]
    w = np.linalg.eigvalsh(operator.astype(np.float64))
    shift = min(lambdas) * n
    cond = (w[-1] + shift) / (max(w[0], 0.0) + shift)
    # Each entry of A^T A and A^T y sums n products, on top of the m-sized solve.
    tol = 64 * eps(dt) * cond * (1 + operator.shape[0] + n)
    compare_models(got, expected, data, centers, tol, f"{function} {solver}")


@given(data=problems(max_n=16, holdout=False), dt=st.sampled_from(COMPUTE))
def test_kols_matches_reference(data, dt):
    X, y, _ = _cast(data, dt)
    got = outcome(lambda: nytro.kols(X, y, data.sigma, **SERIAL), {"X", "y", "sigma"})
    if got is None:
        return
    expected = ref.kols(data.X, data.y, data.sigma, rcond=X.shape[0] * eps(dt))
    K = exact_kernel(data.X, data.X, data.sigma).astype(np.float64)
    tol = 64 * eps(dt) * condition(K) * (1 + X.shape[0])
    if tol <= MEANINGFUL:
        assert_close(predictions(data, got, data.X), predictions(data, expected, data.X), tol, "kols predictions")


# ------------------------------------------------------------ magnitudes, offsets
@given(data=problems(max_n=16, outputs=(1,)), exponent=st.integers(-990, 990),
       method=st.sampled_from(["gd", "cg", "hybrid"]))
def test_path_targets_of_any_magnitude(data, exponent, method):
    # The model is linear in y and the selection scale-free ("best"): y * s gives s times
    # the model of y, for s from 2^-990 to 2^990 (README: targets of any magnitude). A
    # power of two scales every rounding exactly, so the two models are equal bit for bit.
    scale = 2.0 ** exponent
    holdout = {} if data.X_val is None else {"X_val": data.X_val, "y_val": data.y_val * scale}
    got = outcome(lambda: nytro.nytro_path(data.X, data.y * scale, data.centers, data.sigma, method=method,
                                           max_iter=8, **holdout, **SERIAL), {"y", "y_val"})
    if got is None:
        return
    expected = nytro.nytro_path(data.X, data.y, data.centers, data.sigma, method=method, max_iter=8,
                                **data.holdout, **SERIAL)
    assert got.n_iter == expected.n_iter
    np.testing.assert_array_equal(got.coef, expected.coef * scale)
    np.testing.assert_array_equal(got.validation_rmse, expected.validation_rmse * scale)


@given(data=problems(max_n=12, outputs=(2,), target_kinds=("smooth",)),
       exponent=st.sampled_from([-300, -200, 200, 300]), method=st.sampled_from(["gd", "cg", "hybrid"]))
def test_multi_output_columns_of_any_magnitude(data, exponent, method):
    # Each output column is its own problem: column 0 at 1e+-300, column 1 of ordinary
    # size, the second column's model must be the one fitted alone.
    y = data.y.copy()
    y[:, 0] *= 10.0 ** exponent
    holdout = {}
    if data.X_val is not None:
        y_val = data.y_val.copy()
        y_val[:, 0] *= 10.0 ** exponent
        holdout = {"X_val": data.X_val, "y_val": y_val}
    got = nytro.nytro_path(data.X, y, data.centers, data.sigma, method=method, max_iter=6,
                           stopping="best", **holdout, **SERIAL)
    alone = nytro.nytro_path(data.X, data.y[:, 1], data.centers, data.sigma, method=method, max_iter=6,
                             **({} if data.X_val is None else {"X_val": data.X_val, "y_val": data.y_val[:, 1]}),
                             **SERIAL)
    if data.X_val is None:  # without hold-out no selection couples the columns
        assert_close(got.coef[:, 1], alone.coef, 1e3 * eps(np.float64), "second column")
    else:
        assert np.all(np.isfinite(got.coef)) and np.abs(got.coef[:, 1]).max() > 0 or \
            np.abs(alone.coef).max() == 0, "the ordinary column was lost"


@given(data=problems(max_n=12, outputs=(1,), kinds=("normal", "duplicates")),
       exponent=st.integers(-300, 300))
def test_path_invariant_under_feature_scale(data, exponent):
    # k(s x, s z; s sigma) = k(x, z; sigma): the model must not see the unit of the features.
    s = 10.0 ** exponent
    scaled = {} if data.X_val is None else {"X_val": data.X_val * s, "y_val": data.y_val}
    got = nytro.nytro_path(data.X * s, data.y, data.centers * s, data.sigma * s, max_iter=6, **scaled, **SERIAL)
    expected = ref.nytro_path(data.X, data.y, data.centers, data.sigma, max_iter=6, **data.holdout)
    K_mm = exact_kernel(data.centers, data.centers, data.sigma).astype(np.float64)
    compare_models(got, expected, data, data.centers, path_tolerance(data, np.float64, K_mm, expected, data.centers),
                   "feature scale")


@given(data=problems(max_n=12, outputs=(1,), kinds=("normal",)), exponent=st.integers(4, 10),
       dt=st.sampled_from(COMPUTE))
def test_path_invariant_under_feature_offset(data, exponent, dt):
    # A common offset (years, timestamps) leaves every distance, so the model, unchanged.
    # float32 holds offsets up to 2^24 exactly only for integers: offset by an integer so
    # that the shifted features are the unshifted ones plus exactly that offset in float64,
    # and compare in float64 compute.
    offset = float(10 ** exponent) if dt == np.float64 else float(min(10 ** exponent, 2 ** 10))
    shifted = {} if data.X_val is None else {"X_val": data.X_val + offset, "y_val": data.y_val}
    got = nytro.nytro_path(data.X + offset, data.y, data.centers + offset, data.sigma, max_iter=6, **shifted,
                           **SERIAL)
    expected = ref.nytro_path(data.X, data.y, data.centers, data.sigma, max_iter=6, **data.holdout)
    # The shifted inputs are rounded to the offset's ulp: that changes the data by
    # eps * offset relative to the spread, amplified like any other rounding.
    K_mm = exact_kernel(data.centers, data.centers, data.sigma).astype(np.float64)
    tol = path_tolerance(data, np.float64, K_mm, expected, data.centers) * (1 + offset / data.sigma)
    compare_models(got, expected, data, data.centers, tol, f"offset 1e{exponent}")


# -------------------------------------------------------------- parameter types
@given(data=problems(max_n=10, max_m=6, holdout=False, outputs=(1,)), dtype=st.sampled_from(INPUT_DTYPES))
def test_any_input_dtype_is_its_float64_values(data, dtype):
    # Integer, boolean and half-precision inputs are their values in float64 (exact
    # conversions): the same model as those float64 arrays, bit for bit on one thread.
    X = (data.X * 3).astype(dtype)
    y = (data.y * 3).astype(dtype)
    C = X[: data.centers.shape[0]]
    got = nytro.nytro_path(X, y, C, data.sigma, max_iter=5, **SERIAL)
    as64 = nytro.nytro_path(X.astype(np.float64), y.astype(np.float64), C.astype(np.float64), data.sigma,
                            max_iter=5, **SERIAL)
    assert got.coef.dtype == (np.float32 if dtype == np.float32 else np.float64)
    np.testing.assert_array_equal(got.coef, as64.coef if dtype != np.float32 else
                                  nytro.nytro_path(X, y, C, data.sigma, max_iter=5, **SERIAL).coef)


def _problem(seed=0, n=30, m=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    return X, np.sin(X[:, 0]), X[:m]


# NumPy scalars for every numeric parameter, per function (Python numbers in SCALARS_PY).
NUMPY_SCALAR_CALLS = {
    "gaussian_kernel": lambda S, X, y, C: nytro.gaussian_kernel(X, C, S.f(1.2), n_threads=S.i(1)),
    "kernel_predict": lambda S, X, y, C: nytro.kernel_predict(X, C, np.ones(len(C)), S.f(1.2), n_threads=S.i(1)),
    "sample_centers": lambda S, X, y, C: nytro.sample_centers(S.i(30), S.i(6), S.i(7)),
    "nystrom_factor": lambda S, X, y, C: nytro.nystrom_factor(nytro.gaussian_kernel(C, C, 1.2),
                                                             rank_tol=S.f(1e-12), jitter=S.f(1e-10),
                                                             n_threads=S.i(1)),
    "nytro_path": lambda S, X, y, C: nytro.nytro_path(X, y, C, S.f(1.2), X_val=X[:5], y_val=y[:5], method="nu",
                                                      nu=S.f(1.5), max_iter=S.i(7), step_size=S.f(0.01),
                                                      stopping="window", tol=S.f(1e-3), window=S.i(3),
                                                      n_iter_no_change=S.i(4), rank_tol=S.f(1e-12),
                                                      jitter=S.f(1e-10), n_threads=S.i(1)).coef,
    "landweber_path": lambda S, X, y, C: nytro.landweber_path(X, y, S.f(1.2), X_val=X[:5], y_val=y[:5],
                                                              max_iter=S.i(7), step_size=S.f(0.01),
                                                              tol=S.f(1e-3), window=S.i(3),
                                                              n_iter_no_change=S.i(4), n_threads=S.i(1)).coef,
    "nkrls_path": lambda S, X, y, C: nytro.nkrls_path(X, y, C, S.f(1.2), lambdas=[S.f(1e-3)], rank_tol=S.f(1e-12),
                                                      jitter=S.f(1e-10), n_threads=S.i(1)).coef,
    "krls_path": lambda S, X, y, C: nytro.krls_path(X, y, S.f(1.2), lambdas=[S.f(1e-3)], n_threads=S.i(1)).coef,
    "kols": lambda S, X, y, C: nytro.kols(X, y, S.f(1.2), rcond=S.f(1e-10), n_threads=S.i(1)),
}


class _Python:
    f, i = float, int


@pytest.mark.parametrize("function", list(NUMPY_SCALAR_CALLS))
@given(float_type=st.sampled_from([np.float64, np.float32, np.float16, np.longdouble]),
       int_type=st.sampled_from([np.int64, np.int32, np.int16, np.uint8, np.uint64, np.intp]))
def test_numpy_scalar_parameters(function, float_type, int_type):
    # NumPy scalars are numbers: the same result as the Python numbers of the same values.
    class Numpy:
        f, i = staticmethod(lambda v: float_type(v)), staticmethod(lambda v: int_type(v))
    X, y, C = _problem()
    call = NUMPY_SCALAR_CALLS[function]
    as_python = call(_Python, X, y, C)
    # The Python numbers of the NumPy values (float16 rounds 1.2): the same model.
    class Rounded:
        f, i = staticmethod(lambda v: float(float_type(v))), staticmethod(int)
    np.testing.assert_array_equal(call(Numpy, X, y, C), call(Rounded, X, y, C))
    assert np.asarray(as_python).shape == np.asarray(call(Rounded, X, y, C)).shape


# Values past int64 (and n_threads past int32): each call would be refused for its size
# anyway, and must say which argument. (Large values that fit are legal: max_iter = 2^31
# runs 2^31 iterations, and sample_centers(2^31, ...) shuffles 2^31 indices.)
PAST_THE_CORE_TYPES = {
    "max_iter": lambda X, y, C, v: nytro.nytro_path(X, y, C, 1.0, max_iter=v),
    "window": lambda X, y, C, v: nytro.nytro_path(X, y, C, 1.0, X_val=X, y_val=y, stopping="window", window=v),
    "n_iter_no_change": lambda X, y, C, v: nytro.nytro_path(X, y, C, 1.0, X_val=X, y_val=y, n_iter_no_change=v),
    "n_threads-kernel": lambda X, y, C, v: nytro.gaussian_kernel(X, C, 1.0, n_threads=v),
    "n_threads-path": lambda X, y, C, v: nytro.nytro_path(X, y, C, 1.0, max_iter=2, n_threads=v),
    "n": lambda X, y, C, v: nytro.sample_centers(v, 2, 0),
    "n_centers": lambda X, y, C, v: nytro.sample_centers(10, v, 0),
}


@pytest.mark.parametrize("argument", list(PAST_THE_CORE_TYPES))
@pytest.mark.parametrize("power", [63, 64, 100])
def test_integers_past_the_core_types_name_the_argument(argument, power):
    # Any Python integer is an integer: past what the core can hold it is refused with a
    # message naming the argument (not pybind11's "incompatible function arguments").
    X, y, C = _problem()
    name = argument.split("-")[0]
    with pytest.raises((ValueError, TypeError, MemoryError, OverflowError)) as error:
        PAST_THE_CORE_TYPES[argument](X, y, C, 2 ** power)
    assert name in str(error.value), f"{error.type.__name__} does not name {name}: {error.value}"


# ------------------------------------------------------------------------ BLAS pool
def test_concurrent_fits_leave_the_blas_pool_alone(process_blas_pool):
    # A fit with n_threads below the core count may cap the BLAS pool for itself, never
    # for the rest of the process (nor for the other threads' later calls).
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    # Large enough that the four calls overlap (each holds its BLAS cap for its eigh).
    X, y, C = _problem(n=1500, m=300)
    errors = []

    def fit():
        try:
            for _ in range(2):
                nytro.NystromKRLSRegressor(n_centers=300, n_threads=1, random_state=0).fit(X, y)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=fit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    assert not errors, errors
    assert after == before, f"BLAS pool sizes {before} became {after}"


# ------------------------------------------------- hybrid without hold-out is CG
@pytest.mark.parametrize("function", ["nytro_path", "landweber_path"])
@given(data=problems(max_n=20, max_m=10, holdout=False, outputs=(1,), target_kinds=("smooth",)),
       max_iter=st.integers(1, 24))
def test_hybrid_without_holdout_is_cg(function, data, max_iter):
    # Without a hold-out set hybrid runs max_iter steps with the grid's smallest lambda
    # (1e-15 n): Tikhonov projected on the Krylov space, i.e. CG's iterate up to that
    # lambda (NytroRegressor's documentation). Past an invariant Krylov space (a singular
    # operator: duplicate rows) neither may take directions from rounding noise. The twin
    # shares hybrid's Lanczos recursion, so the comparison is with CG, a different
    # algorithm, by the models' predictions.
    if function == "nytro_path":
        args, centers = (data.X, data.y, data.centers, data.sigma), data.centers
        operator = exact_kernel(data.centers, data.centers, data.sigma)
    else:
        args, centers = (data.X, data.y, data.sigma), data.X
        operator = exact_kernel(data.X, data.X, data.sigma)
    hybrid = getattr(nytro, function)(*args, method="hybrid", max_iter=max_iter, **SERIAL)
    cg = getattr(nytro, function)(*args, method="cg", max_iter=max_iter, **SERIAL)
    operator = operator.astype(np.float64)
    kappa = condition(operator)
    # lambda n against the smallest eigenvalue CG can reach: the Tikhonov shift's effect.
    top = float(np.linalg.eigvalsh(operator)[-1])
    shift = 1e-15 * data.X.shape[0] * kappa / max(top, 1e-300)
    tol = 64 * eps(np.float64) * kappa * kappa * (1 + operator.shape[0]) + shift
    if tol <= MEANINGFUL:
        assert_close(predictions(data, hybrid.coef, centers), predictions(data, cg.coef, centers), tol,
                     f"{function} hybrid against cg")


@pytest.mark.parametrize("dt", COMPUTE)
@pytest.mark.parametrize("max_iter", [4, 10, 40])
def test_cg_stops_at_an_exhausted_krylov_space(dt, max_iter):
    # Regression: ten rows on three distinct points make K of rank 3, and y differs
    # between duplicates (a part outside K's range): four steps span an invariant Krylov
    # space, after which CG's iterate must be the minimum-norm least-squares solution
    # K^+ y and stay there. Stepping along the null-space direction (curvature =
    # rounding) gave coefficients of 1e26 and a hold-out RMSE of 1e11; stopping there
    # instead left the three-step iterate, which is not the least-squares fit.
    a, b, c = [1.17, -0.27], [-0.83, -1.11], [1.25, 0.03]
    X = np.array([a, b, b, a, c, a, a, c, a, b], dtype=dt)
    y = np.array([0.46, 0.64, 0.68, 0.50, 0.25, 0.33, 0.38, 0.23, 0.34, 0.65], dtype=dt)
    got = nytro.landweber_path(X, y, 0.54, method="cg", max_iter=max_iter, **SERIAL)
    K = exact_kernel(X, X, 0.54).astype(np.float64)
    # Directly: the least-squares predictions are the group means of y; the minimum-norm
    # coefficients K^+ y (K's three nonzero eigenvalues are O(1), its others rounding).
    _, group = np.unique(X, axis=0, return_inverse=True)
    group = group.ravel()
    means = (np.bincount(group, weights=y.astype(np.float64)) / np.bincount(group))[group]
    exact = np.linalg.pinv(K, rcond=1e-8, hermitian=True) @ y.astype(np.float64)
    tol = 64 * eps(dt) * condition(K) * (1 + len(X))
    if max_iter >= 4:
        assert_close(K @ got.coef, means, tol, "predictions")
    assert np.abs(got.coef).max() <= 10 * np.abs(exact).max()
