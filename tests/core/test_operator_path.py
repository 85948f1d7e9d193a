"""The core's path engine over Python's operators (nytro._core.operator_path, which
nytro.dask runs every method on) against the in-memory path: given H = A^T A,
c = A^T y and R as NumPy callables, and the hold-out RMSE of coefficient sets from the
hold-out kernel, it selects the same t with the same path, step and coefficients as
nytro.nytro_path's gram solver on the same rows and centres."""
import dataclasses

import numpy as np
import pytest

import nytro
from nytro import _core
from nytro import _dask_options as dopt
from nytro import options as opt
from conftest import make_problem, relative_error

RTOL = 1e-10


def operators(p, C):
    """(apply, c, R, holdout) of the gram solver's problem on p's training rows and the
    centres C, the hold-out values pooled over p's hold-out rows."""
    R = nytro.nystrom_factor(nytro.gaussian_kernel(C, C, p.sigma))
    A = nytro.gaussian_kernel(p.X, C, p.sigma) @ R
    Y = p.y.reshape(len(p.y), -1)
    Y_val = p.y_val.reshape(len(p.y_val), -1)
    H, c = A.T @ A, A.T @ Y
    K_val = nytro.gaussian_kernel(p.X_val, C, p.sigma)
    calls = []

    def holdout(alphas, q):
        calls.append(alphas.shape[1] // q)
        residual = (K_val @ alphas).reshape(len(Y_val), -1, q) - Y_val[:, None, :]
        return np.sqrt(np.mean(residual ** 2, axis=(0, 2)))

    return (lambda B: H @ B), c, R, holdout, calls


def engine(apply, c, R, holdout, n, **keywords):
    values = {**{param.name: param.default for param in dopt.DASK_NYTRO.params}, **keywords}
    return _core.operator_path_float64(apply=apply, rhs=c, lift=R, holdout=holdout, n=n,
                                       options=opt.core_options(dopt.DASK_NYTRO, values))


@pytest.mark.parametrize("method, iterates, stopping, patience", [
    ("gd", "stepwise", "best", None), ("gd", "lanczos", "best", None), ("gd", "lanczos", "best", 10),
    ("nu", "stepwise", "relative", None), ("cg", "auto", "best", 5), ("gd", "stepwise", "window", None)])
def test_operator_path_is_the_in_memory_path(method, iterates, stopping, patience):
    p = make_problem(n=300, m=30, n_val=120, noise=0.5, dtype=np.float64)
    C = p.centers
    apply, c, R, holdout, calls = operators(p, C)
    keywords = dict(method=method, max_iter=200, iterates=iterates, stopping=stopping, n_iter_no_change=patience)
    raw = engine(apply, c, R, holdout, len(p.X), **keywords)
    expected = nytro.nytro_path(p.X, p.y, C, p.sigma, X_val=p.X_val, y_val=p.y_val, solver="gram", n_threads=1,
                                **keywords)
    assert raw["n_iter"] == expected.n_iter and raw["iterations_run"] == expected.iterations_run
    assert relative_error(raw["validation_rmse"], expected.validation_rmse) < RTOL
    assert relative_error(raw["coef"][:, 0], expected.coef) < RTOL
    assert relative_error(raw["step_size"], expected.step_size) < RTOL if method != "cg" else raw["step_size"] == 0
    # Validated a chunk of iterates per call, not one by one.
    assert len(calls) < expected.iterations_run and sum(calls) >= expected.iterations_run


def test_a_long_path_stops_by_its_rule_through_the_callbacks():
    """max_iter=10**7 with n_iter_no_change: the engine stops while it iterates, having
    validated at most a chunk past the stop, as the in-memory path."""
    p = make_problem(n=300, m=30, n_val=120, noise=0.5, dtype=np.float64)
    C = p.centers
    apply, c, R, holdout, calls = operators(p, C)
    raw = engine(apply, c, R, holdout, len(p.X), method="nu", max_iter=10**7, n_iter_no_change=20)
    assert raw["iterations_run"] < 10**4 and sum(calls) < raw["iterations_run"] + 4096
    expected = nytro.nytro_path(p.X, p.y, C, p.sigma, X_val=p.X_val, y_val=p.y_val, solver="gram", n_threads=1,
                                method="nu", max_iter=10**7, n_iter_no_change=20)
    assert raw["n_iter"] == expected.n_iter and raw["iterations_run"] == expected.iterations_run


def test_no_holdout_runs_max_iter_and_errors_propagate():
    p = make_problem(n=200, m=20, n_val=1, noise=0.5, dtype=np.float64)
    C = p.centers
    apply, c, R, _, _ = operators(p, C)
    raw = engine(apply, c, R, None, len(p.X), method="gd", max_iter=30, iterates="stepwise")
    expected = nytro.nytro_path(p.X, p.y, C, p.sigma, solver="gram", n_threads=1, method="gd", max_iter=30,
                                iterates="stepwise")
    assert raw["n_iter"] == 30 and relative_error(raw["coef"][:, 0], expected.coef) < RTOL

    def failing(B):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        engine(failing, c, R, None, len(p.X), method="gd", max_iter=30)
    with pytest.raises(ValueError, match="one value per coefficient set"):
        engine(apply, c, R, lambda alphas, q: [0.0], len(p.X), method="gd", max_iter=30, iterates="stepwise")


@pytest.mark.parametrize("route", ["factors", "coefficients"])
@pytest.mark.parametrize("q", [1, 3])
def test_hybrid_through_the_callbacks_is_the_in_memory_hybrid(route, q):
    """method="hybrid" over a caller's hold-out set, from the R factors of its bases'
    images in one call (the RMSE) or from the coefficient sets of every (k, lambda) a
    stretch at a time: the same (t, lambda), path and coefficients as the in-memory
    hybrid path, whose images are K_val's products with the bases."""
    p = make_problem(n=300, m=30, n_val=120, noise=0.5, dtype=np.float64)
    rng = np.random.default_rng(3)
    y, y_val = p.y, p.y_val
    if q > 1:  # three outputs of different scales; the second all zero (its Krylov space is {0})
        y = np.column_stack([p.y, np.zeros_like(p.y), 1e3 * p.y + rng.normal(size=len(p.y))])
        y_val = np.column_stack([p.y_val, np.zeros_like(p.y_val), 1e3 * p.y_val])
    p = dataclasses.replace(p, y=y, y_val=y_val)
    C = p.centers
    apply, c, R, holdout, calls = operators(p, C)
    K_val = nytro.gaussian_kernel(p.X_val, C, p.sigma)
    Y_val = p.y_val.reshape(len(p.y_val), -1)
    factor_calls = []

    def factors(bases):
        factor_calls.append([B.shape[1] for B in bases])
        return [np.linalg.qr(np.column_stack([K_val @ B, Y_val[:, j]]), mode="r") for j, B in enumerate(bases)]

    values = {**{param.name: param.default for param in dopt.DASK_NYTRO.params},
              **dict(method="hybrid", max_iter=60, n_iter_no_change=10)}
    raw = _core.operator_path_float64(apply=apply, rhs=c, lift=R, holdout=holdout, n=len(p.X),
                                      holdout_factors=factors if route == "factors" else None,
                                      holdout_rows=float(len(Y_val)),
                                      options=opt.core_options(dopt.DASK_NYTRO, values))
    expected = nytro.nytro_path(p.X, p.y, C, p.sigma, X_val=p.X_val, y_val=p.y_val, solver="gram", n_threads=1,
                                method="hybrid", max_iter=60, n_iter_no_change=10)
    assert raw["n_iter"] == expected.n_iter and raw["lambda"] == expected.lambda_
    assert relative_error(raw["validation_rmse"], expected.validation_rmse) < 1e-8
    coef = raw["coef"][:, 0] if q == 1 else raw["coef"]
    assert relative_error(coef, expected.coef) < 1e-8
    if route == "factors":  # one call, with every basis at its full size; no coefficient set validated
        assert len(factor_calls) == 1 and not calls
        assert q == 1 or factor_calls[0][1] == 0
    else:
        assert calls and not factor_calls
