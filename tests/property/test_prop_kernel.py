"""gaussian_kernel and kernel_predict: any shape, input dtype, magnitude and offset give
the kernel computed exactly from the differences, to a few ulps (see kernel_tolerance)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nytro
import nytro.reference as ref

from ._support import (INPUT_DTYPES, SERIAL, compute_dtype_of, eps, exact_kernel, kernel_tolerance,
                       outcome)

# Offsets of the data (common to X and Z) relative to their spread: "small" keeps the
# norms within a few spreads of the origin; "large" is a year column, a timestamp, a
# coordinate in metres.
OFFSETS = {"small": st.floats(-4, 4), "large": st.floats(3, 12).map(lambda e: 10.0 ** e)}
# Small offsets are held to the expanded square's own error bound (norms from the origin):
# they test everything but the cancellation. Large ones to an offset-independent bound:
# the kernel must not depend on where the origin is (issue 26 defect 5).
ABOUT = {"small": "origin", "large": "mean"}


@st.composite
def kernel_inputs(draw, offset):
    n, p, d = draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = 10.0 ** draw(st.integers(-3, 3))
    shift = draw(OFFSETS[offset]) * spread * draw(st.sampled_from([1, -1]))
    X = rng.standard_normal((n, d)) * spread + shift
    Z = rng.standard_normal((p, d)) * spread + shift
    if draw(st.booleans()):  # some rows of X repeated in Z: distances exactly 0
        k = min(n, p)
        Z[:k] = X[:k]
    sigma = spread * 10.0 ** draw(st.floats(-0.7, 1.0))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    return X.astype(dtype), Z.astype(dtype), sigma


def _check_kernel(function, X, Z, sigma, about):
    K = outcome(lambda: function(X, Z, sigma), {"X", "Z", "sigma"})
    if K is None:
        return
    dt = compute_dtype_of(X.dtype, Z.dtype)
    assert K.shape == (X.shape[0], Z.shape[0]) and K.dtype == dt
    exact = exact_kernel(X, Z, sigma)  # of the inputs as given (already rounded to dt)
    tol = kernel_tolerance(X, Z, sigma, dt, exact, about=about)
    err = float(np.abs(K.astype(np.longdouble) - exact).max())
    assert err <= tol, f"kernel error {err:.3e} > {tol:.3e} (|mean| {np.abs(Z.mean(0)).max():.3g})"


@pytest.mark.parametrize("offset", list(OFFSETS))
@given(data=st.data())
def test_kernel_matches_direct_differences(offset, data):
    X, Z, sigma = data.draw(kernel_inputs(offset))
    _check_kernel(lambda *a: nytro.gaussian_kernel(*a, **SERIAL), X, Z, sigma, ABOUT[offset])


@pytest.mark.parametrize("offset", list(OFFSETS))
@given(data=st.data())
def test_reference_kernel_matches_direct_differences(offset, data):
    # The twin expands the square like the core: only an exact computation can see what
    # the two get wrong together.
    X, Z, sigma = data.draw(kernel_inputs(offset))
    _check_kernel(ref.gaussian_kernel, X, Z, sigma, ABOUT[offset])


@given(dtype_x=st.sampled_from(INPUT_DTYPES), dtype_z=st.sampled_from(INPUT_DTYPES),
       seed=st.integers(0, 2**32 - 1), shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4)))
def test_kernel_of_any_input_dtype(dtype_x, dtype_z, seed, shape):
    # Integer and boolean features, half precision: computed in float64 (float32 only when
    # both are float32) from the values as given.
    n, p, d = shape
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((n, d)) * 2).astype(dtype_x)
    Z = (rng.standard_normal((p, d)) * 2).astype(dtype_z)
    K = nytro.gaussian_kernel(X, Z, 1.5, **SERIAL)
    dt = compute_dtype_of(dtype_x, dtype_z)
    assert K.dtype == dt
    exact = exact_kernel(X.astype(np.float64), Z.astype(np.float64), 1.5)
    assert float(np.abs(K - exact).max()) <= kernel_tolerance(X, Z, 1.5, dt, exact)


@given(exponent=st.integers(-300, 300), seed=st.integers(0, 2**32 - 1),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_kernel_is_scale_invariant_at_any_magnitude(exponent, seed, dtype):
    # k(s x, s z; s sigma) = k(x, z; sigma): features of 1e-300 or 1e300 (in float64; in
    # float32 the magnitudes its range holds) must not underflow or overflow the distances.
    if dtype == np.float32:
        exponent = int(np.clip(exponent, -35, 35))
    scale = 10.0 ** exponent
    rng = np.random.default_rng(seed)
    X0, Z0 = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    X, Z = (X0 * scale).astype(dtype), (Z0 * scale).astype(dtype)
    sigma = 1.3 * scale
    K = outcome(lambda: nytro.gaussian_kernel(X, Z, sigma, **SERIAL), {"X", "Z", "sigma"})
    if K is None:
        return
    # The exact kernel of the inputs as rounded to dtype, brought back to unit scale.
    exact = exact_kernel(X.astype(np.float64) / scale, Z.astype(np.float64) / scale, sigma / scale)
    tol = kernel_tolerance(X0, Z0, 1.3, dtype, exact)
    err = float(np.abs(K - exact).max())
    assert err <= tol, f"kernel error {err:.3e} > {tol:.3e} at scale 1e{exponent}"


@given(data=st.data())
def test_kernel_predict_matches_the_exact_product(data):
    X, Z, sigma = data.draw(kernel_inputs("small"))
    q = data.draw(st.sampled_from([None, 1, 3]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    coef = rng.standard_normal(Z.shape[0] if q is None else (Z.shape[0], q)).astype(Z.dtype)
    out = nytro.kernel_predict(X, Z, coef, sigma, **SERIAL)
    exact = exact_kernel(X, Z, sigma) @ coef.astype(np.longdouble)
    assert out.shape == exact.shape and out.dtype == Z.dtype
    dt = Z.dtype
    # Each output sums p products: the kernel's error times |coef|, plus the sum's rounding.
    k_tol = kernel_tolerance(X, Z, sigma, dt, exact_kernel(X, Z, sigma))
    abs_coef = np.abs(coef.astype(np.float64)).reshape(Z.shape[0], -1)
    bound = (k_tol + Z.shape[0] * eps(dt)) * abs_coef.sum(0).max()
    err = float(np.abs(out.astype(np.longdouble) - exact).max())
    assert err <= bound, f"kernel_predict error {err:.3e} > {bound:.3e}"


@given(n=st.integers(1, 60), m=st.integers(1, 60), seed=st.integers(0, 2**64 - 1),
       kinds=st.tuples(*[st.sampled_from([int, np.int64, np.uint64, np.int32])] * 3))
def test_sample_centers_matches_reference(n, m, seed, kinds):
    # NumPy integers are integers: the same draw as from Python ints.
    as_n, as_m, as_seed = kinds
    try:
        args = (as_n(n), as_m(m), as_seed(seed))
    except OverflowError:  # seed past int32/int64: not a value of that type at all
        return
    got = outcome(lambda: nytro.sample_centers(*args), {"n", "n_centers", "seed"})
    if m > n:
        assert got is None, "n_centers > n must be refused"
        return
    assert got is not None
    assert len(np.unique(got)) == m and got.min() >= 0 and got.max() < n
    np.testing.assert_array_equal(got, ref.sample_centers(n, m, seed))
