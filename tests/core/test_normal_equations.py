"""The core's per-block normal equations (nytro/normal_equations.hpp, which nytro.dask's
gram mode sums over its chunks) against a direct computation in long double: H = A^T A and
C = A^T Y with A = diag(s) k(X, centers) R, by the A route and by the route without a
factor (R None: K^T K), with and without row scales, in float32, float64 and float64 with
the float32 accumulation (storage="float32"); and with the factor as the core holds it
(nytro._api._nystrom_factor_parts: R on its support, an upper triangle), which nytro.dask
passes to its chunks."""

import numpy as np
import pytest

from nytro import nystrom_factor
from nytro._api import _block_normal_equations, _nystrom_factor_parts, kernel_matrix

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


@pytest.mark.parametrize("with_factor", [True, False])
def test_no_rows_gives_zeros(with_factor):
    X, Y, centers, R, _ = problem(np.float64)
    R = R if with_factor else None
    H, C = _block_normal_equations(X[:0], Y[:0], centers, R, "gaussian", SIGMA, 1.5)
    k = len(centers) if R is None else R.shape[1]
    assert H.shape == (k, k) and C.shape == (k, Y.shape[1])
    assert not H.any() and not C.any()


def duplicated_centers(dtype, n=300, d=5, distinct=30, seed=2):
    """Rows, and 40 centres of which the last 10 repeat earlier ones (K_mm of rank 30)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    centers = X[rng.choice(n, distinct, replace=False)]
    return X, np.vstack([centers, centers[3:13]])


@pytest.mark.parametrize("method, upper, rank", [("pivoted", True, 30), ("cholesky", True, 40), ("qr", False, 30)])
def test_factor_parts_are_the_dense_factor_compacted(method, upper, rank):
    """_nystrom_factor_parts: the support and R as the core holds them, whose scatter onto
    the m centres is nystrom_factor's dense R, bit for bit; the pivoted factor of centres
    with duplicates acts on its k pivots only (k x k), the other triangular factor (with
    the jitter's shift, every centre) on all of them."""
    _, centers = duplicated_centers(np.float64)
    K_mm = kernel_matrix(centers, centers, sigma=SIGMA)
    support, R, is_upper = _nystrom_factor_parts(K_mm, method=method)
    assert is_upper is upper
    assert support.dtype == np.int64 and R.dtype == np.float64
    assert R.shape == (len(support), rank)
    if upper:
        assert R.shape == (rank, rank) and not np.tril(R, -1).any()
    else:
        np.testing.assert_array_equal(support, np.arange(len(centers)))
    assert len(set(support.tolist())) == len(support)
    dense = np.zeros((len(centers), R.shape[1]))
    dense[support] = R
    assert np.array_equal(dense, nystrom_factor(K_mm, method=method))


@pytest.mark.parametrize("dtype,low", CASES)
@pytest.mark.parametrize("kernel_first", [False, True])
def test_compact_factor_on_its_support_matches_long_double(dtype, low, kernel_first):
    """Centres with duplicates (rank 30 of 40): the kernel on the pivoted factor's 30
    support centres only and R applied as its 30 x 30 upper triangle (by either route),
    against A = diag(s) k(X, centers[support]) triu(R) in long double, and against the
    dense 40 x 30 factor on all the centres (the same A: its other rows are zero)."""
    X, centers = duplicated_centers(dtype)
    rng = np.random.default_rng(5)
    scale = np.sqrt(rng.uniform(0.2, 3.0, len(X))).astype(dtype)
    Y = (rng.standard_normal((len(X), 2)) * scale[:, None]).astype(dtype)
    K_mm = kernel_matrix(centers.astype(np.float64), centers.astype(np.float64), sigma=SIGMA)
    support, R, upper = _nystrom_factor_parts(K_mm)
    assert upper and R.shape == (30, 30)
    R = R.astype(dtype)
    # Rubbish below the diagonal: a triangle's strict lower part is never read.
    noisy = R + np.tril(np.full_like(R, 7.0), -1)
    H, C = _block_normal_equations(X, Y, centers, noisy, "gaussian", SIGMA, 1.5, scale, support=support,
                                   upper_triangular=True, kernel_first=kernel_first, low_precision=low)
    assert H.dtype == C.dtype == np.dtype(dtype) and H.shape == (30, 30) and C.shape == (30, 2)
    assert np.array_equal(H, H.T)
    H_ref, C_ref, H_mag, C_mag = exact(X, Y, centers[support], R, scale)
    unit = np.finfo(np.float32 if low else dtype).eps
    # The kernel-first route squares K before R: its error grows with R's size (~cond(K_mm)).
    growth = float(np.max(np.abs(R.astype(np.float64)))) ** 2 if kernel_first and not low else 1.0
    tol = tolerance(unit, X, centers, 30) * growth
    assert np.all(np.abs(H - H_ref) <= tol * H_mag), np.max(np.abs(H - H_ref) / H_mag)
    assert np.all(np.abs(C - C_ref) <= tol * C_mag), np.max(np.abs(C - C_ref) / C_mag)
    dense = np.zeros((len(centers), 30), dtype=dtype)
    dense[support] = R
    H_dense, C_dense = _block_normal_equations(X, Y, centers, dense, "gaussian", SIGMA, 1.5, scale,
                                               low_precision=low)
    for a, b in ((H, H_dense), (C, C_dense)):
        np.testing.assert_allclose(a, b, rtol=0, atol=2 * tol * np.max(np.abs(b)))


@pytest.mark.parametrize("dtype,low", CASES)
def test_no_factor_is_the_kernel_gram_over_several_row_blocks(dtype, low):
    """R None: K^T K and K^T Y on all the given centres (no factor, duplicates kept), over
    the row blocks of the core's streamed pass (8 of 938 rows at 600 centres), against
    NumPy's products of the kernel matrix in float64 (nytro.kernel_matrix from the same
    rounded inputs: float32 ones for the float32 accumulation)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((7500, 3)).astype(dtype)
    centers = np.vstack([X[:500], X[:100]])
    Y = rng.standard_normal((7500, 2)).astype(dtype)
    H, C = _block_normal_equations(X, Y, centers, None, "gaussian", SIGMA, 1.5, low_precision=low)
    assert H.dtype == np.dtype(dtype) and H.shape == (600, 600) and C.shape == (600, 2)
    assert np.array_equal(H, H.T)
    rounded = (lambda a: a.astype(np.float32)) if low else (lambda a: a)  # noqa: E731
    K = kernel_matrix(rounded(X).astype(np.float64), rounded(centers).astype(np.float64), sigma=SIGMA)
    Yl = rounded(Y).astype(np.float64)
    unit = np.finfo(np.float32 if low else dtype).eps
    # NumPy's own float64 rounding is of the same order as the core's in float64: twice the bound.
    tol = 2 * tolerance(unit, X, centers, len(centers))
    H_ref, C_ref = K.T @ K, K.T @ Yl
    assert np.all(np.abs(H - H_ref) <= tol * H_ref), np.max(np.abs(H - H_ref) / H_ref)
    C_mag = K.T @ np.abs(Yl)
    assert np.all(np.abs(C - C_ref) <= tol * C_mag), np.max(np.abs(C - C_ref) / C_mag)
    if low:  # the float32 accumulation: beyond float64's own bound
        assert np.any(np.abs(H - H_ref) > tolerance(np.finfo(np.float64).eps, X, centers, 600) * H_ref)


@pytest.mark.parametrize("change,name", [
    (dict(Y=np.zeros((3, 2))), "Y"),
    (dict(centers=np.zeros((4, 2))), "centers"),
    (dict(row_scale=np.ones(3)), "row_scale"),
    (dict(R=np.ones((5, 3))), "factor"),
    (dict(kernel_first=True), "kernel_first"),
    (dict(support=np.array([0, 1, 2, 4])), "support index 4"),
    (dict(support=np.array([0, 1, 2])), "factor: R has 4 x 4 for 3 support centres"),
    (dict(support=np.array([0.0, 1.0, 2.0, 3.0])), "support must hold integer"),
    (dict(support=np.zeros((2, 2), dtype=np.int64)), "support must be 1-D"),
    (dict(R=np.ones((4, 3)), upper_triangular=True), "upper triangular R must be square"),
    (dict(R=None, support=np.arange(4)), "support and upper_triangular describe a factor R"),
    (dict(R=None, upper_triangular=True), "support and upper_triangular describe a factor R"),
])
def test_bad_arguments_are_named(change, name):
    X, Y, centers, R, _ = problem(np.float64, n=20, m=4)
    args = dict(X=X, Y=Y, centers=centers, R=R, row_scale=None, kernel_first=False, support=None,
                upper_triangular=False)
    args.update(change)
    with pytest.raises(ValueError, match=name):
        _block_normal_equations(args["X"], args["Y"], args["centers"], args["R"], "gaussian", SIGMA, 1.5,
                                args["row_scale"], kernel_first=args["kernel_first"], support=args["support"],
                                upper_triangular=args["upper_triangular"])
