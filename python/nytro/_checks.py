"""Argument checks shared by the functions and the estimators.

Every failure is a ValueError (TypeError for a wrong kind of object) whose message
names the argument and the offending value. NumPy scalars are accepted wherever Python
numbers are, and numbers past what the core's C++ types hold are refused here, by name.
"""
from __future__ import annotations

import math
import numbers
import os

import numpy as np

from . import _core

METHODS = ("gd", "nu", "cg", "hybrid")
STEP_RULES = ("auto", "paper")
STOPPING_RULES = ("best", "relative", "window")
# What the hold-out selection minimises (the core's Metric): the RMSE, or the error rate of
# targets coding classes as +-1 (the classifiers).
METRICS = ("rmse", "error")
FACTOR_METHODS = ("pivoted", "qr", "cholesky")
NYTRO_SOLVERS = ("auto", "direct", "gram", "spectral")
GD_ITERATES = ("auto", "lanczos", "stepwise")
TIKHONOV_SOLVERS = ("eigh", "cholesky")
DTYPES = (None, "float32", "float64")
STORAGES = (None, "float32")
NYTRO_STORAGES = (None, "float32", "float16")  # float16: NYTRO's stored K_nm only


class UnsupportedOption(ValueError, NotImplementedError):
    """A parameter set to a value that the fit's route cannot honour (solver="direct"
    where the path runs from partial_fit's sums, ...), refused by name rather than
    ignored. A ValueError, as every refused value of a parameter; also a
    NotImplementedError, what such refusals raised before, so that code catching that
    keeps working."""


def paper_lambdas() -> np.ndarray:
    """The paper's grid: 100 values log-spaced in [1e-15, 1] (multiplied by n inside)."""
    return np.logspace(-15, 0, 100)


def kernel_bound(kernel: str, X) -> float:
    """kappa^2 = max_i k(x_i, x_i) over the rows of X, which the default lambda grids are
    scaled by (as the core's hybrid grid): the largest ||x_i||^2 for the linear kernel, 1
    for the distance kernels (k(x, x) = 1) and where the linear one's is not finite and
    > 0. The paper's grid presumes kappa <= 1 (its step is 1 / (n kappa^2)); the linear
    kernel's spectrum scales as |x|^2, and at |x| ~ 1e-10 the unscaled grid over-
    regularised every lambda into the zero model."""
    if kernel != "linear" or len(X) == 0:
        return 1.0
    X = np.asarray(X)
    bound = float(np.max(np.einsum("ij,ij->i", X, X, dtype=np.float64)))
    return bound if 0 < bound < math.inf else 1.0


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
    """A C-contiguous 2-D array of `dtype` (no copy when it already is one), finite; a
    scipy.sparse matrix refused by name (TypeError): the functions take dense arrays, and
    sparse X is fitted by NytroRegressor and NytroClassifier (nytro._sparse)."""
    if type(a).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} is a scipy.sparse matrix: this function takes dense arrays; sparse X is fitted by "
                        "NytroRegressor and NytroClassifier (or give X.toarray() where it fits in memory)")
    arr = np.asarray(a)
    if arr.dtype == object or np.iscomplexobj(arr) or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got shape {arr.shape}")
    if not allow_empty and (arr.shape[0] == 0 or arr.shape[1] == 0):
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    given = arr
    with np.errstate(over="ignore"):
        arr = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        check_finite_before_cast(given, name, arr.dtype)
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_finite_before_cast(given: np.ndarray, name: str, dtype: np.dtype) -> None:
    """Raises for finite values that became infinite in the conversion to `dtype`: such data
    are not "NaN or infinity", they overflow the compute precision."""
    if np.issubdtype(given.dtype, np.floating) and np.isfinite(given).all():
        peak = float(np.max(np.abs(given)))
        raise ValueError(f"{name} overflows {np.dtype(dtype).name} (max |value| {peak:.6g} > "
                         f"{float(np.finfo(dtype).max):.6g}): compute in float64 (dtype='float64') or rescale {name}")


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


# The largest values the core's C++ types hold: Index (int64) and int (n_threads).
INDEX_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


def real_number(name: str, value, requirement: str) -> float:
    """float(value) for a real number (Python's or NumPy's, not a bool); otherwise, or for
    an integer too large for a float, a ValueError naming `name` and saying `requirement`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be {requirement}, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be {requirement}, got {value!r} (too large for a float)") from None


def check_sigma(sigma) -> float:
    sigma = real_number("sigma", sigma, "a real number")
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
    return sigma


KERNELS = ("gaussian", "laplacian", "matern", "linear")
MATERN_NUS = (0.5, 1.5, 2.5)
CENTER_SELECTIONS = ("uniform", "leverage")
# What the classifiers' hold-out selection minimises (their `selection`).
SELECTIONS = ("error", "rmse")


def check_kernel_name(kernel):
    """A built-in kernel's name, or a kernel of one's own: a callable k(X, Z) (nytro._user_kernel)."""
    if callable(kernel):
        return kernel
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    return kernel


def check_matern_nu(matern_nu) -> float:
    nu = real_number("matern_nu", matern_nu, "0.5, 1.5 or 2.5")
    if nu not in MATERN_NUS:
        raise ValueError(f"matern_nu must be 0.5, 1.5 or 2.5 (the Matern orders with a closed form), "
                         f"got {matern_nu!r}")
    return nu


def check_bandwidth(sigma):
    """sigma as a float (one bandwidth) or a float64 array (one per feature, ARD), its values
    finite and > 0; whether an array has one entry per feature is for check_kernel, which
    knows the data."""
    try:
        # np.ndim itself raises for a ragged nesting ([[1, 2], [1]]), which has no shape.
        scalar = np.ndim(sigma) == 0
        bandwidths = None if scalar else np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sigma must be a number or a 1-D array of numbers (one bandwidth per feature), "
                         f"got {sigma!r}") from None
    if scalar:
        return check_sigma(sigma)
    if bandwidths.ndim == 1:
        bad = ~(np.isfinite(bandwidths) & (bandwidths > 0))
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"sigma must hold finite numbers > 0, got sigma[{j}] = {bandwidths[j]}")
    return bandwidths


def check_bandwidth_or_auto(sigma):
    """The estimators' sigma: "auto" (bandwidths chosen from the data at fit), or a bandwidth
    as check_bandwidth takes it; any other string is refused by name."""
    if isinstance(sigma, str):
        if sigma == "auto":
            return sigma
        raise ValueError(f"sigma must be a number > 0 or a 1-D array of them (one bandwidth per feature), or "
                         f"'auto' for an estimator, got {sigma!r}")
    return check_bandwidth(sigma)


def check_kernel(kernel, sigma, matern_nu, n_features: int):
    """The core's kernel spec (_core.KernelSpec) for kernel=, sigma= and matern_nu= as the
    public functions and estimators take them: sigma one bandwidth or one per feature
    (ARD), ignored by the linear kernel; matern_nu read by kernel="matern" only."""
    check_kernel_name(kernel)
    if callable(kernel):
        raise NotImplementedError(
            f"kernel={getattr(kernel, '__name__', kernel)!r}: a kernel of one's own is taken by NytroRegressor and "
            "NytroClassifier (fit, partial_fit, predict), which evaluate it by blocks; this function runs the core's "
            "built-in kernels only")
    nu = check_matern_nu(matern_nu) if kernel == "matern" else 1.5
    if kernel == "linear":
        return _core.KernelSpec(kernel, nu, [])
    if isinstance(sigma, str) and sigma == "auto":
        raise ValueError("sigma='auto' is the estimators' choice of the bandwidths from the data; this function "
                         "needs a number or one per feature (an estimator's fitted sigma_, for instance)")
    bandwidths = check_bandwidth(sigma)
    if np.ndim(bandwidths) == 0:
        return _core.KernelSpec(kernel, nu, [bandwidths])
    if bandwidths.ndim != 1 or bandwidths.shape[0] != n_features:
        raise ValueError(f"sigma has shape {bandwidths.shape} but the data have {n_features} features: give "
                         f"one bandwidth, or one per feature")
    return _core.KernelSpec(kernel, nu, bandwidths.tolist())


def check_int(name: str, value, minimum: int, maximum: int = INDEX_MAX) -> int:
    """int(value) for an integer (Python's or NumPy's, not a bool) in [minimum, maximum]:
    the maximum is what the core's C++ type holds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if value > maximum:
        bound = f"< 2**{maximum.bit_length()}" if (maximum + 1) & maximum == 0 else f"<= {maximum}"
        raise ValueError(f"{name} must be {bound} (the core's integer type), got {value}")
    return value


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}={value!r} is not one of {shown}")


def check_step_size(step_size):
    """("auto"|"paper", 0.0) or ("fixed", value)."""
    if isinstance(step_size, str):
        check_choice("step_size", step_size, STEP_RULES)
        return step_size, 0.0
    value = real_number("step_size", step_size, "'auto', 'paper' or a positive float")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"step_size must be a finite number > 0, got {value}")
    return "fixed", value


def check_storage(storage, choices=STORAGES) -> str:
    """The core's name for a storage precision: None -> "same"."""
    storage = float_dtype_name("storage", storage, choices)
    return "same" if storage is None else storage


def positive_number(name: str, value) -> float:
    """A finite real number > 0 as a float; otherwise a ValueError naming `name`."""
    number = real_number(name, value, "a finite number > 0")
    if not np.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def check_nu(nu) -> float:
    return positive_number("nu", nu)


def check_patience(n_iter_no_change) -> int:
    """0 (run to max_iter) for None."""
    if n_iter_no_change is None:
        return 0
    return check_int("n_iter_no_change", n_iter_no_change, 1)


class TargetScales:
    """How the path functions hand targets of any magnitude to the core: output column j
    divided by its own power of two 2^e_j (exact), so that squares of targets near the
    ends of the dtype's range, which would underflow to 0 or overflow to inf in the
    hold-out errors and the Krylov methods' norms, stay in range, column by column (a
    column of 1e300 beside one of 1 gets each its model). The problem is linear in each
    column: coef column j is scaled back by 2^e_j. The hold-out RMSE pools all columns, so
    the core weights column j's squared errors by (2^e_j / 2^E)^2 (E = max e_j) and its
    path, times 2^E, is the unscaled path: the same selected t and lambda. A weight below
    the smallest double is 0: that column's errors are then below the rounding of the
    others' in any exact computation rounded to float64.

    Columns of ordinary size (max |y_j| within 2^+-128 in float64, 2^+-32 in float32) or
    all zero keep e_j = 0; where all are, nothing is scaled (`active` is False)."""

    def __init__(self, Y: np.ndarray, Y_val: np.ndarray | None):
        q = Y.shape[1]
        peaks = np.zeros(q)
        for A in (Y, Y_val):
            if A is not None and A.size:
                peaks = np.maximum(peaks, np.max(np.abs(A), axis=0).astype(np.float64))
        limit = 2.0 ** (32 if Y.dtype == np.float32 else 128)
        self.exponents = [0 if p == 0.0 or not math.isfinite(p) or 1.0 / limit <= p <= limit
                          else math.frexp(float(p))[1] - 1 for p in peaks]
        self.active = any(e != 0 for e in self.exponents)
        self.top = max(self.exponents)

    @classmethod
    def uniform(cls, scale: float) -> "TargetScales":
        """The scales of targets whose every column was divided by one power of two."""
        scales = cls.__new__(cls)
        exponent = math.frexp(scale)[1] - 1
        scales.exponents, scales.active, scales.top = [exponent], exponent != 0, exponent
        return scales

    def scaled(self, Y: np.ndarray | None) -> np.ndarray | None:
        """Y with column j divided by 2^e_j: exact (ldexp, where 2^-e_j itself may lie
        beyond the range, as for a column of subnormal numbers)."""
        if not self.active or Y is None:
            return Y
        return np.ascontiguousarray(np.ldexp(Y, -np.asarray(self.exponents, dtype=np.int32)))

    def unscaled(self, coef: np.ndarray) -> np.ndarray:
        """coef (m, q) with column j times 2^e_j (inf where it overflows the dtype)."""
        if not self.active:
            return coef
        with np.errstate(over="ignore"):
            return np.ldexp(coef, np.asarray(self.exponents, dtype=np.int32))

    def weights(self) -> list:
        """The core's validation_weights: (2^e_j / 2^E)^2, or [] (all 1) when inactive."""
        if not self.active:
            return []
        return [math.ldexp(1.0, 2 * (e - self.top)) for e in self.exponents]

    def path_factor(self) -> float:
        """The core's pooled hold-out RMSE times this is in units of y."""
        return math.ldexp(1.0, self.top)


# The core's tol for stopping="window" when tol is None (cpp/src/paths/stopping.cpp); a test
# checks that the two agree.
WINDOW_DEFAULT_TOL = 1e-4


def tol_for_scaled_targets(tol, stopping: str, scales: TargetScales) -> float:
    """check_tol(tol) as the core must see it for the scaled targets: the "window" rule's
    tol is absolute, in units of y (the core's path is in units of 2^E, see TargetScales);
    the other rules' are relative."""
    value = check_tol(tol)
    if not scales.active or stopping != "window":
        return value
    value = WINDOW_DEFAULT_TOL if value < 0 else value
    try:
        in_core_units = math.ldexp(value, -scales.top)
    except OverflowError:  # beyond any path's fall in these units: the rule stops at once either way
        return float(np.finfo(np.float64).max)
    if value > 0 and in_core_units == 0.0:
        raise ValueError(f"tol={value!r} is below what float64 holds in units of max |y| (2^{scales.top}): "
                         "the window rule cannot apply it; rescale y or raise tol")
    return in_core_units


def check_tol(tol) -> float:
    """-1.0 (the rule's default) for None."""
    return check_optional_positive("tol", tol, -1.0)


def check_optional_positive(name: str, value, default: float) -> float:
    """`default` for None; otherwise a finite number >= 0."""
    if value is None:
        return default
    number = real_number(name, value, "None or a finite number >= 0")
    if not np.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be None or a finite number >= 0, got {value!r}")
    return number


def check_fraction(name: str, value):
    """None, or a number in (0, 1) (Python's or NumPy's) as a float."""
    if value is None:
        return None
    number = real_number(name, value, "None or a number in (0, 1)")
    if not 0 < number < 1:
        raise ValueError(f"{name} must be None or a number in (0, 1), got {value!r}")
    return number


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_verbose(verbose) -> int:
    """An integer >= 0 (True and False count as 1 and 0)."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    return check_int("verbose", verbose, 0)


def check_random_state(random_state):
    """None, an integer seed NumPy's RandomState takes (0 <= seed < 2**32), or a
    numpy.random.RandomState (scikit-learn's random_state)."""
    # Imported here: the core's functions need scikit-learn for this check alone, and
    # `import nytro` stays light (scikit-learn's import is most of it).
    from sklearn.utils import check_random_state as sklearn_check_random_state

    try:
        return sklearn_check_random_state(random_state)
    except ValueError as error:
        raise ValueError(f"random_state must be None, an integer seed in [0, 2**32) or a numpy.random.RandomState, "
                         f"got {random_state!r} ({error})") from None


def check_centers_form(centers):
    """None, or the user's centres as an array: an (m, d) array of finite numbers (points)
    or a non-empty 1-D integer array (row indices into the X given to fit). Whether they
    fit that X is checked by nytro.centers.check_centers, which has it."""
    if centers is None:
        return None
    try:
        arr = np.asarray(centers)
    except (TypeError, ValueError) as error:
        raise ValueError(f"centers must be numeric: {error}") from None
    if arr.ndim == 1 and arr.dtype == bool:
        raise ValueError("centers must be an (m, d) array of points or an integer array of row indices "
                         "into X, got a boolean array")
    if arr.ndim == 1 and arr.size > 0 and np.issubdtype(arr.dtype, np.integer):
        return arr
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"centers must be an (m, d) array of points or a 1-D integer array of row indices into "
                         f"X, got shape {arr.shape}")
    try:
        points = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"centers must be numeric: {error}") from None
    if not np.all(np.isfinite(points)):
        raise ValueError("centers contain NaN or infinity")
    return arr


def check_progress(progress) -> None:
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be None or a callable progress(stage, done, total), got {progress!r}")


def check_lambdas(lambdas, kernel: str | None = None, X=None) -> list:
    """The grid as a list; None: the paper's, times kernel_bound(kernel, X) where a
    kernel and the training rows are given."""
    if lambdas is None:
        grid = paper_lambdas()
        return (grid if kernel is None else grid * kernel_bound(kernel, X)).tolist()
    try:
        arr = np.atleast_1d(np.asarray(lambdas, dtype=float) if not isinstance(lambdas, str) else np.nan)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"lambdas must be a non-empty 1-D sequence of numbers > 0, got {lambdas!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"lambdas must be a non-empty 1-D sequence of numbers > 0, got {lambdas!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"lambdas must be finite and > 0, got {lambdas!r}")
    return arr.tolist()


def check_n_threads(n_threads) -> int:
    """0 (nytro.default_n_threads(), resolved by the core) for None."""
    if n_threads is None:
        return 0
    return check_int("n_threads", n_threads, 1, INT_MAX)


def check_n_jobs(n_jobs):
    """scikit-learn's n_jobs: None, or an int other than 0 (negative: counted from the
    CPUs, -1 all of them)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None, a positive int or a negative int (-1: every CPU), got {n_jobs!r}")
    return int(n_jobs)


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


def real_weights(weights, name: str = "sample_weight") -> np.ndarray:
    """weights as float64, refused by name where they are not real numbers (complex ones
    too: NumPy's cast would drop their imaginary parts with only a warning)."""
    try:
        given = np.asarray(weights)
        if given.dtype.kind != "c":
            return np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of numbers: {error}") from None
    raise ValueError(f"{name} must be real numbers, got complex values")


def check_sample_weight(sample_weight, n_rows: int, name: str = "sample_weight") -> np.ndarray | None:
    """None, or the weights as a float64 vector of n_rows entries, checked as scikit-learn's
    _check_sample_weight does (a scalar is every row's weight): one per row, finite, >= 0,
    and not all zero. Their scale does not matter: the core rescales them to sum to the row
    count (see the estimators' fit); weights whose sum would overflow float64 (each finite,
    as 1e308 on every row) are returned divided by a power of two (exact), the same ratios."""
    if sample_weight is None:
        return None
    w = real_weights(sample_weight, name)
    if w.ndim == 0:
        w = np.full(n_rows, float(w))
    if w.ndim != 1 or w.shape[0] != n_rows:
        raise ValueError(f"{name} must have shape ({n_rows},), one weight per row, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        bad = int(np.flatnonzero(~np.isfinite(w))[0])
        raise ValueError(f"{name} must be finite, got {w[bad]} at row {bad}")
    if np.any(w < 0):
        bad = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"{name} must be >= 0, got {w[bad]} at row {bad}")
    if not np.any(w > 0):
        raise ValueError(f"{name} must not be all zero: give some rows a positive weight")
    with np.errstate(over="ignore"):
        overflows = not np.isfinite(np.sum(w))
    if overflows:  # the largest weight to [0.5, 1): a sum of n_rows such weights is finite
        w = np.ldexp(w, -int(np.frexp(np.max(w))[1]))
    return w


def weights_argument(w: np.ndarray | None) -> np.ndarray:
    """The core's form of optional weights: an empty vector for none."""
    return np.zeros(0) if w is None else w
