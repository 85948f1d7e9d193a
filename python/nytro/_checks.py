"""Argument checks shared by the functions and the estimators.

Every failure is a ValueError (TypeError for a wrong kind of object) whose message
names the argument and the offending value.
"""
from __future__ import annotations

import math
import numbers
import os

import numpy as np

METHODS = ("gd", "nu", "cg", "hybrid")
STEP_RULES = ("auto", "paper")
STOPPING_RULES = ("best", "relative", "window")
FACTOR_METHODS = ("pivoted", "qr", "cholesky")
NYTRO_SOLVERS = ("auto", "direct", "gram", "spectral")
GD_ITERATES = ("auto", "lanczos", "stepwise")
TIKHONOV_SOLVERS = ("eigh", "cholesky")
DTYPES = (None, "float32", "float64")
STORAGES = (None, "float32")
NYTRO_STORAGES = (None, "float32", "float16")  # float16: NYTRO's stored K_nm only


def paper_lambdas() -> np.ndarray:
    """The paper's grid: 100 values log-spaced in [1e-15, 1] (multiplied by n inside)."""
    return np.logspace(-15, 0, 100)


def float_dtype_name(name: str, value, choices) -> str | None:
    """None, or the name in `choices` of a precision given as a string ("float32"), a
    NumPy type (np.float32) or a dtype: users write all three, as NumPy accepts them."""
    if value is None:
        return None
    try:
        resolved = np.dtype(value).name
    except (TypeError, ValueError):
        resolved = None
    if resolved is None or resolved not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}={value!r} is not one of {shown} (or the NumPy type / dtype of one)")
    return resolved


def compute_dtype(dtype, *arrays) -> np.dtype:
    """float32 when asked, or when every given array is float32; float64 otherwise."""
    dtype = float_dtype_name("dtype", dtype, DTYPES)
    if dtype is not None:
        return np.dtype(dtype)
    given = [a for a in arrays if a is not None]
    if given and all(np.asarray(a).dtype == np.float32 for a in given):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def as_matrix(a, name: str, dtype: np.dtype, *, allow_empty: bool = False) -> np.ndarray:
    """A C-contiguous 2-D array of `dtype` (no copy when it already is one), finite."""
    arr = np.asarray(a)
    if arr.dtype == object or np.iscomplexobj(arr) or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got shape {arr.shape}")
    if not allow_empty and (arr.shape[0] == 0 or arr.shape[1] == 0):
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_output_array(out, name: str, shape: tuple, dtype: np.dtype) -> None:
    """An array the caller gives to be written into: exactly the shape and dtype, C-contiguous,
    writable (never converted: a converted copy would silently not be the caller's array)."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if out.dtype != dtype:
        raise ValueError(f"{name} must have dtype {np.dtype(dtype).name} (the computation's), got {out.dtype}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")


def as_targets(y, name: str, n_rows: int, dtype: np.dtype):
    """Targets as a C-contiguous (n, q) array, plus whether they were 1-D."""
    arr = np.asarray(y)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (n_samples,) or 2-D (n_samples, n_outputs), got shape {arr.shape}")
    one_d = arr.ndim == 1
    arr = as_matrix(arr.reshape(-1, 1) if one_d else arr, name, dtype, allow_empty=n_rows == 0)
    if arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n_rows}")
    return arr, one_d


def check_sigma(sigma) -> float:
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
        raise ValueError(f"sigma must be a real number, got {sigma!r}")
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
    return sigma


def check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}={value!r} is not one of {shown}")


def check_step_size(step_size):
    """("auto"|"paper", 0.0) or ("fixed", value)."""
    if isinstance(step_size, str):
        check_choice("step_size", step_size, STEP_RULES)
        return step_size, 0.0
    if isinstance(step_size, bool) or not isinstance(step_size, numbers.Real):
        raise ValueError(f"step_size must be 'auto', 'paper' or a positive float, got {step_size!r}")
    value = float(step_size)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"step_size must be a finite number > 0, got {value}")
    return "fixed", value


def check_storage(storage, choices=STORAGES) -> str:
    """The core's name for a storage precision: None -> "same"."""
    storage = float_dtype_name("storage", storage, choices)
    return "same" if storage is None else storage


def check_nu(nu) -> float:
    if isinstance(nu, bool) or not isinstance(nu, numbers.Real) or not np.isfinite(nu) or nu <= 0:
        raise ValueError(f"nu must be a finite number > 0, got {nu!r}")
    return float(nu)


def check_patience(n_iter_no_change) -> int:
    """0 (run to max_iter) for None."""
    if n_iter_no_change is None:
        return 0
    return check_int("n_iter_no_change", n_iter_no_change, 1)


def target_scale(*targets) -> float:
    """1.0 for targets of ordinary size; otherwise the power of two s with max|Y| / s in
    [1, 2) over the arrays given (None skipped). The path functions hand the core Y / s
    and scale its results back, which is exact (a power of two), so targets near the ends
    of the dtype's range, whose squares would underflow to 0 or overflow to inf in the
    hold-out errors, get the same model as any others. Ordinary: max|Y| within 2^+-128 in
    float64, 2^+-32 in float32."""
    arrays = [Y for Y in targets if Y is not None and Y.size]
    peak = max((float(np.max(np.abs(Y))) for Y in arrays), default=0.0)
    if peak == 0.0 or not math.isfinite(peak):
        return 1.0
    limit = 2.0 ** (32 if arrays[0].dtype == np.float32 else 128)
    if 1.0 / limit <= peak <= limit:
        return 1.0
    return math.ldexp(1.0, math.frexp(peak)[1] - 1)


# The core's tol for stopping="window" when tol is None (cpp/src/stopping.cpp); a test
# checks that the two agree.
WINDOW_DEFAULT_TOL = 1e-4


def tol_for_scaled_targets(tol, stopping: str, scale: float) -> float:
    """check_tol(tol) as the core must see it for targets divided by `scale`: the "window"
    rule's tol is absolute, in units of y; the other rules' are relative."""
    value = check_tol(tol)
    if scale == 1.0 or stopping != "window":
        return value
    return (WINDOW_DEFAULT_TOL if value < 0 else value) / scale


def check_tol(tol) -> float:
    """-1.0 (the rule's default) for None."""
    if tol is None:
        return -1.0
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be None or a finite number >= 0, got {tol!r}")
    return float(tol)


def check_optional_positive(name: str, value, default: float) -> float:
    """`default` for None; otherwise a finite number >= 0."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be None or a finite number >= 0, got {value!r}")
    return float(value)


def check_lambdas(lambdas) -> list:
    if lambdas is None:
        return paper_lambdas().tolist()
    arr = np.atleast_1d(np.asarray(lambdas, dtype=float) if not isinstance(lambdas, str) else np.nan)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"lambdas must be a non-empty 1-D sequence of numbers > 0, got {lambdas!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"lambdas must be finite and > 0, got {lambdas!r}")
    return arr.tolist()


def check_n_threads(n_threads) -> int:
    """0 (nytro.default_n_threads(), resolved by the core) for None."""
    if n_threads is None:
        return 0
    return check_int("n_threads", n_threads, 1)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_holdout(X_val, y_val, n_features: int, n_outputs: int, dtype: np.dtype):
    """(X_val, Y_val) as arrays, 0-row arrays when neither is given."""
    if (X_val is None) != (y_val is None):
        raise ValueError("X_val and y_val must be given together")
    if X_val is None:
        return np.zeros((0, n_features), dtype), np.zeros((0, n_outputs), dtype)
    X_val = as_matrix(X_val, "X_val", dtype)
    if X_val.shape[1] != n_features:
        raise ValueError(f"X_val has {X_val.shape[1]} features but X has {n_features}")
    Y_val, _ = as_targets(y_val, "y_val", X_val.shape[0], dtype)
    if Y_val.shape[1] != n_outputs:
        raise ValueError(f"y_val has {Y_val.shape[1]} outputs but y has {n_outputs}")
    return X_val, Y_val
