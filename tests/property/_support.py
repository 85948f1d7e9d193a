"""Strategies, exact computations and problem-derived tolerances for the property suite.

Every property has the same shape: a call either raises a clear exception (ValueError,
TypeError or MemoryError whose message names one of the arguments it is given), or
returns the answer of nytro.reference, in float64 on an equivalent well-scaled problem,
to a tolerance derived from that problem (machine epsilon of the compute dtype times the
condition that amplifies it), or of a direct exact computation where the reference shares
the core's formula.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

SERIAL = {"n_threads": 1}
ALLOWED_ERRORS = (ValueError, TypeError, MemoryError)

# Input dtypes users and their data produce; the compute dtype is float32 only for all-
# float32 input, float64 otherwise (nytro._checks.compute_dtype).
INPUT_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]


def compute_dtype_of(*dtypes) -> np.dtype:
    return np.dtype(np.float32) if all(np.dtype(d) == np.float32 for d in dtypes) else np.dtype(np.float64)


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


# ---------------------------------------------------------------------- outcomes
def outcome(call, names):
    """call()'s result, or None when it raised a clear exception: one of ALLOWED_ERRORS
    whose message names one of `names` (the arguments the caller passed). Anything else
    (another exception type, a message naming no argument) fails the test."""
    try:
        return call()
    except ALLOWED_ERRORS as error:
        message = str(error)
        named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", message)]
        assert named, f"{type(error).__name__} names none of the arguments {sorted(names)}: {message!r}"
        return None


# ------------------------------------------------------------------ exact kernel
def exact_kernel(X, Z, sigma) -> np.ndarray:
    """exp(-||x - z||^2 / (2 sigma^2)) from the differences, in long double: no
    cancellation whatever the offset of the data (the core and the twin expand the square)."""
    X = np.asarray(X, dtype=np.longdouble)
    Z = np.asarray(Z, dtype=np.longdouble)
    diff = X[:, None, :] - Z[None, :, :]
    squared = np.einsum("ijk,ijk->ij", diff, diff)
    return np.exp(-squared / (2 * np.longdouble(sigma) ** 2))


def kernel_tolerance(X, Z, sigma, dtype, exact, *, about="mean") -> float:
    """Absolute error allowed in a kernel computed in `dtype`: a few ulps of the kernel,
    plus the rounding of the squared distance amplified by the exponential's slope
    k * d^2 / (2 sigma^2), with d^2's rounding taken relative to the spread of the data
    about the centres' mean (about="mean": what an offset-independent evaluation attains)
    or to the norms from the origin (about="origin": the bound of the expanded square
    ||x||^2 + ||z||^2 - 2 x.z, whatever else the evaluation gets right). The core and the
    twin evaluate the kernel on the data less the centres' mean, so "mean" is their bound
    (a pair close together but far from that mean keeps the expanded square's rounding
    relative to its distance from it)."""
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    mean = Z.mean(0) if about == "mean" else np.zeros(Z.shape[1])
    rx = ((X - mean) ** 2).sum(1)
    rz = ((Z - mean) ** 2).sum(1)
    d = X.shape[1]
    slope = np.asarray(exact, dtype=np.float64) * (rx[:, None] + rz[None, :]) / (2 * sigma * sigma)
    return 16 * eps(dtype) * (1 + d) * float(1 + slope.max(initial=0.0))


# ---------------------------------------------------------------------- problems
@dataclass
class Data:
    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray | None
    y_val: np.ndarray | None
    centers: np.ndarray
    sigma: float
    kind: str

    @property
    def holdout(self) -> dict:
        return {} if self.X_val is None else {"X_val": self.X_val, "y_val": self.y_val}


def _features(rng, kind, n, d):
    if kind == "normal":
        return rng.standard_normal((n, d))
    if kind == "duplicates":  # rows drawn from a pool of at most 3: repeated rows, rank-deficient K
        pool = rng.standard_normal((min(3, n), d))
        return pool[rng.integers(0, len(pool), n)]
    if kind == "one_point":  # every row the same: K_mm of rank 1
        return np.repeat(rng.standard_normal((1, d)), n, axis=0)
    if kind == "integers":  # a small integer grid: ties and exact duplicates
        return rng.integers(-2, 3, (n, d)).astype(np.float64)
    raise AssertionError(kind)


def _targets(rng, kind, X, n_outputs):
    n = X.shape[0]
    if kind == "constant":
        y = np.full((n, 1), 1.5)
    elif kind == "zero":
        y = np.zeros((n, 1))
    else:
        s = X.sum(1) / np.sqrt(X.shape[1])
        y = (np.sin(s) + 0.1 * rng.standard_normal(n))[:, None]
    if n_outputs > 1:
        y = np.hstack([y, np.cos(X[:, :1]) + 0.1 * rng.standard_normal((n, 1))])
    return y[:, 0] if n_outputs == 1 else y


@st.composite
def problems(draw, *, max_n=24, max_m=10, max_d=3, holdout=None, min_n=1, outputs=(1, 2),
             kinds=("normal", "duplicates", "one_point", "integers"),
             target_kinds=("smooth", "smooth", "constant", "zero")):
    """A small float64 regression problem of ordinary scale: n in [min_n, max_n] training
    rows (1 and 2 included), duplicate rows / a single repeated point / integer grids,
    constant or zero targets, 1 or 2 outputs, centres drawn from the training rows, and a
    hold-out set (holdout: True / False / None = either)."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, max_d))
    m = draw(st.integers(1, min(n, max_m)))
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = _features(rng, kind, n, d)
    q = draw(st.sampled_from(outputs))
    y = _targets(rng, draw(st.sampled_from(target_kinds)), X, q)
    if holdout is None:
        holdout = draw(st.booleans())
    X_val = y_val = None
    if holdout:
        n_val = draw(st.integers(1, 12))
        X_val = _features(rng, "normal" if kind != "one_point" else kind, n_val, d)
        if kind == "one_point":
            X_val = X_val * 0 + X[:1]
        y_val = _targets(rng, "smooth", X_val, q)
    centers = X[rng.choice(n, m, replace=False)]
    sigma = float(10 ** draw(st.floats(-0.5, 1.0)))
    return Data(X, y, X_val, y_val, centers, sigma, kind)


# -------------------------------------------------------------------- tolerances
def condition(K) -> float:
    """cond of a symmetric PSD matrix on its numerical range (eigenvalues above
    n eps max), capped at 1 / eps: the amplification of rounding in a pseudo-inverse
    of K, which the rank cuts of the factor and of KOLS keep below that cap."""
    w = np.linalg.eigvalsh(np.asarray(K, dtype=np.float64))
    top = max(float(w[-1]), 0.0)
    if top == 0.0:
        return 1.0
    kept = w[w > K.shape[0] * eps(np.float64) * top]
    return min(top / float(kept[0]), 1 / eps(np.float64))


def relative_error(actual, expected) -> float:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if expected.size == 0:
        return 0.0
    scale = float(np.abs(expected).max())
    diff = float(np.abs(actual - expected).max())
    return diff / scale if scale > 0 else diff


def assert_close(actual, expected, tol, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert np.all(np.isfinite(actual)), f"{what}: non-finite entries"
    err = relative_error(actual, expected)
    assert err <= tol, f"{what}: relative error {err:.3e} > tolerance {tol:.3e}"
