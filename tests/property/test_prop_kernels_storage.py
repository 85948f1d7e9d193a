"""Every kernel: kernel_matrix against the exact kernel of the differences at any
magnitude and offset where the kernel is invariant to them (the distance-based ones), and
NYTRO's path for every kernel and storage against nytro.reference, to tolerances of the
compute dtype and of the storage's rounding."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nytro
import nytro.reference as ref

from ._support import SERIAL, assert_close, eps, outcome

KERNELS = ["gaussian", "laplacian", "matern", "linear"]
DISTANCE_KERNELS = ["gaussian", "laplacian", "matern"]
STORAGES = [None, "float32", "float16"]


def exact_kernel_of(kernel, X, Z, sigma, nu):
    """k(x, z) from the differences in long double (no cancellation whatever the offset)."""
    X, Z = np.asarray(X, dtype=np.longdouble), np.asarray(Z, dtype=np.longdouble)
    if kernel == "linear":
        return X @ Z.T
    diff = (X[:, None, :] - Z[None, :, :]) / np.longdouble(sigma)
    r = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    if kernel == "gaussian":
        return np.exp(-r * r / 2)
    nu = 0.5 if kernel == "laplacian" else nu
    u = np.sqrt(np.longdouble(2 * nu)) * r
    return {0.5: 1, 1.5: 1 + u, 2.5: 1 + u + u * u / 3}[nu] * np.exp(-u)


def distance_tolerance(kernel, X, Z, sigma, dtype) -> float:
    """Absolute error allowed in a distance-based kernel in `dtype`: a few ulps, plus the
    rounding of the squared distance (relative to the spread about Z's mean, where the
    core evaluates it) amplified by the kernel's slope: k r^2 / 2 for the Gaussian; for
    the others, whose slope in r^2 is unbounded at r = 0, the square root of that
    rounding (a distance of 0 computed as sqrt(eps r^2))."""
    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    mean = Z.mean(0)
    spread = (((X - mean) ** 2).sum(1).max() + ((Z - mean) ** 2).sum(1).max()) / sigma ** 2
    unit = 16 * eps(dtype) * (1 + X.shape[1])
    if kernel == "gaussian":
        return unit * (1 + spread)
    return unit * (1 + spread) + 2 * np.sqrt(unit * spread)


@st.composite
def scaled_inputs(draw):
    n, p, d = draw(st.integers(1, 7)), draw(st.integers(1, 7)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X0, Z0 = rng.standard_normal((n, d)), rng.standard_normal((p, d))
    if draw(st.booleans()):  # some rows shared: distances exactly 0
        k = min(n, p)
        Z0[:k] = X0[:k]
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    # A power of two (about 1e-298 to 1e298 in float64, 1e-30 to 1e30 in float32): exact,
    # so that the inputs divided by it are the values the kernel saw.
    top = 990 if dtype == np.float64 else 100
    scale = 2.0 ** draw(st.integers(-top, top))
    # An offset of 0, or of up to 1e6 spreads (a timestamp column): invariant kernels
    # must not see it.
    offset = draw(st.sampled_from([0.0, 1.0, 1e3, 1e6])) * draw(st.sampled_from([1, -1]))
    return X0, Z0, scale, offset, dtype


@pytest.mark.parametrize("kernel", DISTANCE_KERNELS)
@given(inputs=scaled_inputs(), nu=st.sampled_from([0.5, 1.5, 2.5]), log_sigma=st.floats(-0.5, 1.0))
def test_distance_kernels_are_scale_and_offset_invariant(kernel, inputs, nu, log_sigma):
    # k(s x + c, s z + c; s sigma) = k(x, z; sigma) at any magnitude s and offset c, to the
    # rounding of the inputs as given.
    X0, Z0, scale, offset, dtype = inputs
    sigma0 = 10.0 ** log_sigma
    X, Z = ((X0 + offset) * scale).astype(dtype), ((Z0 + offset) * scale).astype(dtype)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Z))):
        return
    K = outcome(lambda: nytro.kernel_matrix(X, Z, kernel=kernel, sigma=sigma0 * scale, matern_nu=nu, **SERIAL),
                {"X", "Z", "sigma"})
    if K is None:
        return
    assert K.dtype == dtype and K.shape == (len(X0), len(Z0))
    # The exact kernel of the values as rounded to dtype, at unit scale.
    Xr, Zr = X.astype(np.float64) / scale, Z.astype(np.float64) / scale
    exact = exact_kernel_of(kernel, Xr, Zr, sigma0, nu)
    tol = distance_tolerance(kernel, Xr, Zr, sigma0, dtype)
    err = float(np.abs(K.astype(np.longdouble) - exact).max())
    assert err <= tol, f"{kernel} error {err:.3e} > {tol:.3e} at scale {scale:.1e}, offset {offset:g}"


@pytest.mark.parametrize("kernel", KERNELS)
@given(seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4)),
       nu=st.sampled_from([0.5, 1.5, 2.5]), dtype=st.sampled_from([np.float64, np.float32]))
def test_kernel_matrix_is_the_reference(kernel, seed, shape, nu, dtype):
    n, p, d = shape
    rng = np.random.default_rng(seed)
    X, Z = rng.standard_normal((n, d)).astype(dtype), rng.standard_normal((p, d)).astype(dtype)
    got = nytro.kernel_matrix(X, Z, kernel=kernel, sigma=1.3, matern_nu=nu, **SERIAL)
    twin = ref.kernel_matrix(X, Z, kernel=kernel, sigma=1.3, matern_nu=nu)
    assert got.dtype == twin.dtype == dtype
    exact = exact_kernel_of(kernel, X, Z, 1.3, nu)
    if kernel == "linear":  # x.z: d products, rounded relative to |x| |z|
        tol = 4 * d * eps(dtype) * float(np.abs(X).max() * np.abs(Z).max() * d)
    else:
        tol = distance_tolerance(kernel, X, Z, 1.3, dtype)
    for K, who in ((got, "core"), (twin, "reference")):
        err = float(np.abs(K.astype(np.longdouble) - exact).max())
        assert err <= tol, f"{who} {kernel}: error {err:.3e} > {tol:.3e}"


# The path's tolerance per (compute dtype, storage): the core against the reference,
# relative, on the hold-out path and the hold-out predictions. float16 storage is
# reproduced by the reference (K_nm rounded to float16, its rank cut); float32 storage
# is not (the reference keeps K_nm in float64): float32's rounding, amplified.
PATH_RTOL = {(np.float64, None): (1e-8, 1e-7), (np.float64, "float32"): (1e-4, 1e-3),
             (np.float64, "float16"): (1e-4, 1e-3), (np.float32, None): (1e-4, 1e-3),
             (np.float32, "float32"): (1e-4, 1e-3), (np.float32, "float16"): (1e-4, 1e-3)}


@pytest.mark.parametrize("storage", STORAGES, ids=lambda s: str(s))
@pytest.mark.parametrize("kernel", KERNELS)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from([np.float64, np.float32]),
       method=st.sampled_from(["gd", "nu"]))
def test_path_of_every_kernel_and_storage_is_the_reference(kernel, storage, seed, dtype, method):
    rng = np.random.default_rng(seed)
    n, d, m = 40, 2, 8
    X = rng.standard_normal((n, d))
    y = np.sin(X.sum(1)) + 0.1 * rng.standard_normal(n)
    X_val = rng.standard_normal((15, d))
    y_val = np.sin(X_val.sum(1))
    C = X[rng.choice(n, m, replace=False)]
    args = [a.astype(dtype) for a in (X, y, C)]
    kw = dict(X_val=X_val.astype(dtype), y_val=y_val.astype(dtype), kernel=kernel, method=method, max_iter=10,
              iterates="stepwise", storage=storage)
    got = outcome(lambda: nytro.nytro_path(*args, 1.5, **kw, **SERIAL), {"storage", "kernel", "X", "y"})
    if got is None:
        return
    expected = ref.nytro_path(*args, 1.5, **kw)
    path_tol, prediction_tol = PATH_RTOL[(dtype, storage)]
    assert got.rank == expected.rank and got.n_iter == expected.n_iter
    assert_close(got.validation_rmse, expected.validation_rmse, path_tol, "validation path")
    K_val = ref.kernel_matrix(X_val, C, kernel=kernel, sigma=1.5)
    assert_close(K_val @ got.coef.astype(np.float64), K_val @ expected.coef.astype(np.float64), prediction_tol,
                 "hold-out predictions")
