"""The core's per-block normal equations (nytro/normal_equations.hpp, which nytro.dask's
gram mode sums over its chunks) against a direct computation in long double: H = A^T A and
C = A^T Y with A = diag(s) k(X, centers) R, by the A route and by the kernel-first route
(R None: K^T K), with and without row scales, in float32, float64 and float64 with the
float32 accumulation (storage="float32")."""

import numpy as np
import pytest

from nytro import nystrom_factor
from nytro._api import _block_normal_equations, kernel_matrix

SIGMA = 1.5


def problem(dtype, n=300, m=40, d=5, q=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    centers = X[rng.choice(n, m, replace=False)]
    # A dense factor whose support is every centre, as nytro.dask holds it.
    R = nystrom_factor(kernel_matrix(centers.astype(np.float64), centers.astype(np.float64), sigma=SIGMA),
                       method="qr").astype(dtype)
    scale = np.sqrt(rng.uniform(0.2, 3.0, n)).astype(dtype)
    Y = (rng.standard_normal((n, q)) * scale[:, None]).astype(dtype)
    return X, Y, centers, R, scale


def exact(X, Y, centers, R, scale):
    """(A^T A, A^T Y) in long double from the given (rounded) inputs, and the elementwise
    magnitudes |A|^T |A| and |A|^T |Y| (|A| = |S| |K| |R|) that bound the rounding."""
    Xl, Cl = X.astype(np.longdouble), centers.astype(np.longdouble)
    diff = Xl[:, None, :] - Cl[None, :, :]
    K = np.exp(-np.sum(diff * diff, axis=2) / (2 * np.longdouble(SIGMA) ** 2))
    if scale is not None:
        K = K * scale.astype(np.longdouble)[:, None]
    A = K if R is None else K @ R.astype(np.longdouble)
    Yl = Y.astype(np.longdouble)
    A_abs = np.abs(K) if R is None else np.abs(K) @ np.abs(R.astype(np.longdouble))
    return A.T @ A, A.T @ Yl, A_abs.T @ A_abs, A_abs.T @ np.abs(Yl)


def tolerance(unit, X, centers, m):
    """The entrywise bound's factor: each product's dot lengths (n rows, m centres), plus
    the kernel's relative error from its distances, formed as ||x||^2 + ||z||^2 - 2 x.z
    (each entry of K off by about unit times those squared norms over 2 sigma^2)."""
    norms = float(np.max(np.sum(X.astype(np.float64) ** 2, axis=1)) +
                  np.max(np.sum(centers.astype(np.float64) ** 2, axis=1)))
    return 4 * unit * (len(X) + m + X.shape[1] + norms / (2 * SIGMA**2))


CASES = [(np.float32, False), (np.float64, False), (np.float64, True)]


@pytest.mark.parametrize("dtype,low", CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kernel_first", [False, True])
def test_matches_long_double(dtype, low, weighted, kernel_first):
    X, Y, centers, R, scale = problem(dtype)
    R = None if kernel_first else R
    scale = scale if weighted else None
    H, C = _block_normal_equations(X, Y, centers, R, "gaussian", SIGMA, 1.5, scale, low_precision=low, n_threads=2)
    assert H.dtype == C.dtype == np.dtype(dtype)
    k = len(centers) if R is None else R.shape[1]
    assert H.shape == (k, k) and C.shape == (k, Y.shape[1])
    assert np.array_equal(H, H.T)  # both triangles, mirrored
    H_ref, C_ref, H_mag, C_mag = exact(X, Y, centers, R, scale)
    unit = np.finfo(np.float32 if low else dtype).eps
    tol = tolerance(unit, X, centers, len(centers))
    assert np.all(np.abs(H - H_ref) <= tol * H_mag), np.max(np.abs(H - H_ref) / H_mag)
    assert np.all(np.abs(C - C_ref) <= tol * C_mag), np.max(np.abs(C - C_ref) / C_mag)
    if low:  # the accumulation really is in float32: beyond float64's own bound
        tight = tolerance(np.finfo(np.float64).eps, X, centers, len(centers))
        assert np.any(np.abs(H - H_ref) > tight * H_mag)


def test_route_with_a_factor_by_identity_is_the_kernel_route():
    """R None is A = K: the same as an explicit identity factor, up to rounding."""
    X, Y, centers, _, scale = problem(np.float64, seed=1)
    eye = np.eye(len(centers))
    first = _block_normal_equations(X, Y, centers, None, "gaussian", SIGMA, 1.5, scale)
    through = _block_normal_equations(X, Y, centers, eye, "gaussian", SIGMA, 1.5, scale)
    for a, b in zip(first, through):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))


def test_no_rows_gives_zeros():
    X, Y, centers, R, _ = problem(np.float64)
    H, C = _block_normal_equations(X[:0], Y[:0], centers, R, "gaussian", SIGMA, 1.5)
    assert H.shape == (R.shape[1],) * 2 and C.shape == (R.shape[1], Y.shape[1])
    assert not H.any() and not C.any()


@pytest.mark.parametrize("change,name", [
    (dict(Y=np.zeros((3, 2))), "Y"),
    (dict(centers=np.zeros((4, 2))), "centers"),
    (dict(row_scale=np.ones(3)), "row_scale"),
    (dict(R=np.ones((5, 3))), "factor"),
    (dict(kernel_first=True), "kernel_first"),
])
def test_bad_arguments_are_named(change, name):
    X, Y, centers, R, _ = problem(np.float64, n=20, m=4)
    args = dict(X=X, Y=Y, centers=centers, R=R, row_scale=None, kernel_first=False)
    args.update(change)
    with pytest.raises(ValueError, match=name):
        _block_normal_equations(args["X"], args["Y"], args["centers"], args["R"], "gaussian", SIGMA, 1.5,
                          args["row_scale"], kernel_first=args["kernel_first"])
