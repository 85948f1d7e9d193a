"""NYTRO and Nystrom KRLS on Dask arrays chunked by rows.

The data stay where Dask keeps them (worker memory, or a zarr store read chunk by
chunk); the client holds O(m^2 + m d + m T) numbers for T iterates run (or lambdas). A fit
takes a pass over y (each chunk's training rows and largest target in absolute value,
and its sample weights' checks and sums) and three passes over X, each a map over its row
chunks:

1. the Nystrom centres: m seeded ordinals among the training rows
   (``nytro.sample_centers`` over n_train, or the leverage sampler's), gathered m x d
   from the chunks holding them (or the given centres: points, or row indices gathered
   alike); the factor R of K_mm is computed on the client by the C++ core;
2. the normal equations: the centres R acts on (the factor's support: for "pivoted",
   its k pivots) and R as the core holds it (for the triangular factors, a k x k upper
   triangle) are sent to the workers once (see _broadcast); each chunk's training rows
   give K_i = k(X_i, C_support) (C++ core, in row blocks), A_i = K_i R (R applied as a
   triangle) and the partial sums A_i^T A_i and A_i^T y, added up by a tree of sums
   (``split_every``), the in-memory gram solver's work; in float64, where its rule finds
   it accurate, the chunks sum K_i^T K_i and K_i^T y instead (no factor) and the client
   forms R^T (K^T K) R with R's triangle (the core's kernel-first route: no K_i R, half
   the flops);
3. the hold-out errors: the path (gd, nu, cg iterates, or NKRLS's lambda grid through one
   eigendecomposition of A^T A) is computed on the client in m dimensions; the coefficients
   alpha_t = R beta_t are sent alike, an m x L block of L iterates at a time (L doubling
   to a bounded size), and each chunk's hold-out rows give the squared errors of
   the predictions k(X_val_i, C) alpha_t, formed explicitly, summed over rows by the same
   tree reduction (metric="error": the weights of the rows each alpha_t misclassifies, and
   of all of them); the stopping rule reads each block's errors before the next block is
   iterated, so a path that stops (n_iter_no_change, "relative", "window") forms and holds
   only the iterates up to its stop and one block past it, whatever max_iter. Method
   "hybrid" grows its Lanczos bases
   V on the client; each chunk's hold-out rows give the triangular factor of
   [k(X_val_i, C) R V, y_val_i], combined up a tree of QR factorisations (TSQR), from
   which the errors of every (t, lambda) follow as in the core (a residual plus
   ||g - S z||^2, sums of squares, no normal equations); with metric="error" each chunk
   predicts its hold-out rows at every (t, lambda) instead, as the core's tally does.

The hold-out split needs no shuffle: row i (its global index) is held out when a 64-bit
hash of (i, seed) falls below validation_fraction (see :func:`holdout_mask`). The number
of hold-out rows is therefore binomial around validation_fraction * n, not its rounding,
and the split differs from the in-memory estimators' permutation.

The "direct" mode (solver="direct", or "auto" by the cost model of the solver row,
``nytro.options.DASK_SOLVER``, which charges each product's round trip to the scheduler)
replaces step 2: each chunk's K_i (training rows) is computed once and kept on a worker,
with its hold-out rows, and every product A^T A v = R^T K^T K R v of the path (of "cg"'s
and "hybrid"'s Lanczos too, one per step for all outputs) is each worker's sum over its
blocks, asked of the workers directly (no task), R applied on the client; so are the
hold-out errors of step 3 (see _DirectOperator).

Each pass over the chunks is one graph sent to the scheduler, one round trip. On data of
up to _CLIENT_SPLIT_ROWS rows drawing uniform centres, the client counts each chunk's
training rows itself (the hash needs only the row indices) and draws the centres first,
so that the pass over y also gathers them (one round trip fewer; the same rows).

Every kernel of ``nytro.kernel_matrix`` (one bandwidth or one per feature) is evaluated by
the C++ core in the tasks. Sample weights travel with y's chunks: the training rows'
w' = w n_train / sum(w_train) scale the rows of K_i and y_i by sqrt(w'), and the hold-out
rows' w' = w n_val / sum(w_val) weigh their squared errors, as the core's row scales and
hold-out row weights.

The parameters are the rows of ``nytro.options`` (DASK_NYTRO, DASK_NKRLS): the in-memory
functions' names, defaults and options objects, with the values not taken here refused.

storage="float32" with float64 compute does what the core does: kernel blocks from the
rows and centres rounded to float32, computed in float32 (the hold-out kernel too). The
direct mode keeps the workers' K_i so, as the core keeps K_nm, and widens it in each
product; the gram mode and NKRLS form A_i = K_i R with R rounded to float32, and A_i^T A_i
and A_i^T y from float32 products summed in float64 (the core's low-precision
accumulation); NYTRO's gram mode then keeps A^T A rounded to float32 on the client (the
core's stored H), its products in float64. The Krylov methods stop, and gd's Lanczos
iterates are certified, at float32's rounding, as in the core.

iterates="auto" takes gd's iterates from Lanczos bases where the core's "auto" does
(float64 compute; in gram mode from rank 5 on, 9 with float32 storage), the step's
estimate of lambda_max in the same products: in direct mode, tens of round trips
instead of max_iter.

center_selection="leverage" runs nytro.centers' sampler on the training rows, each level
gathering the candidate rows it has not seen yet from their chunks.

progress(stage, done, total) is called on the client after each pass and each direct
product (the estimators' verbose= prints it), and an exception from it stops the fit.

The classifiers fit Dask arrays too (fit_estimator): one pass over the labels checks
them and counts each class on both sides of the split (not stratified on Dask: a class
missing from one side is refused), and the ±1 coding is made chunk by chunk.

Not done yet (issue 28): storage="float16" (the computation's dtype may be float32:
dtype=, or float32 data).
"""
from __future__ import annotations

import collections
import ctypes
import dataclasses
import functools
import math
import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse

import dask
import dask.array as da

from . import _checks as chk
from . import options as opt
from . import reference
from ._api import (_block_normal_equations, _block_normal_product, _nystrom_factor_parts, _scaled_coef,
                   kernel_matrix, kernel_predict, sample_centers)
from .centers import CENTER_SELECTIONS, check_centers
from ._results import PathResult, TikhonovResult

__all__ = ["DaskFit", "holdout_mask", "nytro_path", "nkrls_path", "predict", "fit_estimator"]

_MASK64 = np.uint64((1 << 64) - 1)
# Kernel rows per block inside a chunk: about 32 MiB of float64 kernel, as the core's
# streamed gram solver uses, so a chunk of any size costs O(block x m) memory on a worker.
_BLOCK_ELEMENTS = 1 << 22
# One C++ / BLAS call at a time per worker process, each with all the worker's threads:
# the worker may run several tasks at once, and their threads must not add up past the
# worker's share of the cores. The BLAS pool itself is left as the worker set it
# (distributed's nanny starts workers with OPENBLAS/MKL/OMP_NUM_THREADS=1): a fit never
# changes process-wide state.
_CORE_LOCK = threading.Lock()
# The client's products in m dimensions up to this many multiply-adds are made without
# BLAS (einsum's own loop, a fraction of a millisecond at m = 1000): after a threaded BLAS
# call, OpenBLAS's idle threads spin for about a tenth of a second of a core each, and on a
# LocalCluster that core is taken from the workers, whose pass is then under way.
_CLIENT_PRODUCT_MACS = 1 << 22


@dataclass
class DaskFit:
    """A Dask fit: the in-memory result record, and where its centres came from.

    Attributes
    ----------
    result : PathResult or TikhonovResult
        As the in-memory ``nytro.nytro_path`` / ``nytro.nkrls_path`` return it
        (solver "gram" or "direct").
    centers : ndarray (m, d)
        The Nystrom centres: rows of X, or the points given as centers.
    center_rows : ndarray (m,) or None
        Their global row indices in X (None for centres given as points).
    n_train, n_val : int
        Training and hold-out rows of the split.
    lambdas : ndarray or None
        The lambda grid searched (nkrls_path; the default scaled by the kernel's bound),
        None for nytro_path.
    """

    result: PathResult | TikhonovResult
    centers: np.ndarray
    center_rows: np.ndarray
    n_train: int
    n_val: int
    lambdas: np.ndarray | None = None


# ------------------------------------------------------------------------- split
def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def holdout_mask(rows, validation_fraction, seed) -> np.ndarray:
    """Whether each global row index in `rows` is held out, for a split seeded by `seed`.

    Row i is held out when u(i) < validation_fraction, with u(i) in [0, 1) the top 53
    bits of h = mix(mix(seed XOR 0x6E7974726F) + (i + 1) * 0x9E3779B97F4A7C15) (mod 2^64)
    over 2^53, mix being SplitMix64's finaliser. It needs only the row's index, so each
    chunk splits its own rows; the salt keeps h apart from the stream that
    ``nytro.sample_centers`` draws from the same seed.
    """
    fraction = _check_fraction(validation_fraction)
    rows = np.asarray(rows, dtype=np.int64)
    if fraction is None:
        return np.zeros(rows.shape, dtype=bool)
    seed = _check_seed(seed)
    with np.errstate(over="ignore"):
        key = _mix64(np.array([seed ^ 0x6E7974726F], dtype=np.uint64))
        h = _mix64(key + (rows.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53 < fraction


def _check_fraction(fraction):
    # The estimators' check: NumPy's numbers too (np.float32(0.25) is a fraction in memory).
    return chk.check_fraction("validation_fraction", fraction)


def _check_seed(seed) -> int:
    seed = chk.check_int("seed", seed, 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be < 2**64, got {seed}")
    return seed


# ---------------------------------------------------------------- the dask inputs
@dataclass
class _Data:
    X: da.Array
    Y: da.Array
    one_d: bool
    dtype: np.dtype
    offsets: np.ndarray  # global index of each chunk's first row, then n
    estimator: str | None  # validate blocks as this scikit-learn estimator does, or as the functions do
    q: int = 1  # outputs: Y's columns (a 1-D y is one)
    W: da.Array | None = None  # the sample weights, chunked as X's rows, or None
    # What turns a weight w into its row's w' (training rows: n_train / sum of their w;
    # hold-out rows: n_val / sum of theirs), once the first pass has summed them.
    units: tuple = (None, None)


@dataclass(frozen=True)
class _Kernel:
    """The fit's kernel as the tasks evaluate it (picklable, sent with each task):
    kernel_matrix's kernel, sigma (one, or one per feature) and matern_nu."""

    kernel: str
    sigma: object
    matern_nu: float
    # storage="float32" with float64 data: K from the rows rounded to float32, computed and
    # kept in float32 (the core's stored K_nm and hold-out kernel then), used widened.
    low: bool = False

    def __call__(self, A, B, n_threads):
        if self.low:
            A, B = A.astype(np.float32), B.astype(np.float32)
        return kernel_matrix(A, B, kernel=self.kernel, sigma=self.sigma, matern_nu=self.matern_nu,
                             n_threads=n_threads)


@dataclass(frozen=True)
class _Factor:
    """The Nystrom factor as the core holds it (nytro/nystrom.hpp): R (len(support) x k)
    acting on the centres C[support] (for "pivoted", the k pivots), upper triangular when
    `upper` (its strict lower part zero). The gram mode's chunks take it so, as the
    in-memory gram solver does: the kernel on the support only, R applied as a triangle.
    The other passes apply the dense m x k factor (zero rows outside the support)."""

    support: np.ndarray
    R: np.ndarray
    upper: bool

    def dense(self, m: int) -> np.ndarray:
        full = np.zeros((m, self.R.shape[1]), dtype=self.R.dtype)
        full[self.support] = self.R
        return full


def _as_dask_weights(sample_weight, X) -> da.Array | None:
    """sample_weight as a Dask vector chunked as X's rows (None for none): a NumPy array or
    scalar is checked here as in memory; a Dask array's values are checked chunk by chunk
    in the first pass (_split_counts)."""
    if sample_weight is None:
        return None
    n = int(X.shape[0])
    if not isinstance(sample_weight, da.Array):
        return da.from_array(chk.check_sample_weight(sample_weight, n, "sample_weight"), chunks=(X.chunks[0],))
    if sample_weight.ndim == 0:
        sample_weight = da.full(n, sample_weight, chunks=(X.chunks[0],))
    # Unknown sizes first: their shape, (nan,), would otherwise be reported as a wrong length.
    if sample_weight.ndim == 1 and any(math.isnan(c) for c in sample_weight.chunks[0]):
        raise ValueError("sample_weight has unknown chunk sizes (nan): its rows cannot be matched with X's. "
                         "Call sample_weight.compute_chunk_sizes() first")
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n:
        raise ValueError(f"sample_weight must have shape ({n},), one weight per row, got shape {sample_weight.shape}")
    return sample_weight.rechunk((X.chunks[0],))


def _check_dask_x(X, estimator=None):
    """X's checks that need no chunk read: a 2-D Dask array of known row chunks, with rows
    and features (the in-memory error for none: scikit-learn's for an estimator). Made
    before anything else reads X's chunks or shape (the classifiers' labels, the
    intercept's pass)."""
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask.array.Array, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if any(math.isnan(c) for c in X.chunks[0]) or math.isnan(X.shape[1]):
        raise ValueError("X has unknown chunk sizes (nan) along its rows: the hold-out split and the centres "
                         "need each chunk's global row offset. Call X.compute_chunk_sizes() first (or "
                         "to_dask_array(lengths=True) on a dask DataFrame)")
    for axis, what in ((0, "sample(s)"), (1, "feature(s)")):
        if X.shape[axis] == 0:
            if estimator is not None:
                raise ValueError(f"Found array with 0 {what} (shape={X.shape}) while a minimum of 1 is required by "
                                 f"{estimator}.")
            raise ValueError(f"X is empty (shape {X.shape})")


def _as_dask_data(X, y, dtype, estimator=None) -> _Data:
    _check_dask_x(X, estimator)
    dt = chk.compute_dtype(dtype, np.empty(0, X.dtype))
    X = X.rechunk({1: -1})  # whole rows per chunk (the kernel needs every feature)
    if not isinstance(y, da.Array):
        y = np.asarray(y)  # its shape checked below before it is cut into X's chunks
        if y.ndim in (1, 2) and y.shape[0] == X.shape[0]:
            y = da.from_array(y, chunks=(X.chunks[0],) + ((-1,) if y.ndim == 2 else ()))
    if y.ndim not in (1, 2) or (y.ndim == 2 and y.shape[1] == 0):  # no outputs: nothing to fit
        raise ValueError(f"y must be 1-D (n_samples,) or 2-D (n_samples, n_outputs >= 1), got shape {y.shape}")
    if isinstance(y, da.Array) and any(math.isnan(c) for c in y.chunks[0]):
        raise ValueError("y has unknown chunk sizes (nan) along its rows: its rows cannot be matched with X's. "
                         "Call y.compute_chunk_sizes() first (or to_dask_array(lengths=True) on a dask DataFrame)")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} rows but X has {X.shape[0]}")
    one_d = y.ndim == 1
    # y's own chunks where they are X's (a 1-D y is made a column inside the tasks): a
    # reshaping layer would add a level of tasks, a few milliseconds, to every pass.
    Y = y.rechunk((X.chunks[0],) if one_d else (X.chunks[0], -1))
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    return _Data(X, Y, one_d, dt, offsets, estimator, q=1 if one_d else int(y.shape[1]))


def _blocks(data: _Data):
    """(X block, Y block, first row, last row + 1) for every row chunk with rows (empty
    chunks, which concatenation can leave, are skipped), as delayed objects."""
    # Unoptimised, here and in every pass's compute: an optimised graph fuses the chunks'
    # tasks (from_zarr's getitem into its reader, say) under the same output keys with a
    # different recipe from pass to pass, which distributed warns "can cause failures
    # and deadlocks".
    xs = data.X.to_delayed(optimize_graph=False).ravel()
    ys = data.Y.to_delayed(optimize_graph=False).ravel()
    if data.W is not None:  # the weights travel with the targets (see _targets)
        ws = data.W.to_delayed(optimize_graph=False).ravel()
        ys = [(yb, wb) + tuple(data.units) for yb, wb in zip(ys, ws)]
    return [(x, yb, int(data.offsets[b]), int(data.offsets[b + 1])) for b, (x, yb) in enumerate(zip(xs, ys))
            if data.offsets[b + 1] > data.offsets[b]]


def _targets(Y):
    """A task's targets argument: (Y block (a 1-D y's as a column), weights block or None,
    (training unit, hold-out unit))."""
    w, units = None, (None, None)
    if isinstance(Y, tuple):
        Y, w, units = Y[0], np.asarray(Y[1]), Y[2:]
    Y = np.asarray(Y)
    return (Y[:, None] if Y.ndim == 1 else Y), w, units


def _validated_block(X, Y, dtype, estimator, rows=None):
    """The chunk (its rows `rows`, a boolean mask, where given) as C-contiguous arrays of
    the computation's dtype, with the error the in-memory path gives for NaN or infinity
    in any of its rows (scikit-learn's for an estimator). Where X's own dtype converts to
    the computation's exactly (float32 to float64, say), X is checked as it is and only
    the selected rows are converted: a task then holds no converted copy of the whole
    chunk, which the rows it keeps would make a second copy of."""
    if rows is not None and estimator is None and np.asarray(X).dtype.kind in "fiub" and \
            np.can_cast(np.asarray(X).dtype, dtype, "safe"):
        X = chk.as_matrix(X, "X", np.asarray(X).dtype)
        return _converted_rows(X, rows, dtype), chk.as_matrix(Y, "y", dtype)[rows]
    if estimator is not None:
        from sklearn.utils.validation import check_X_y
        X, Y = check_X_y(X, Y, dtype=dtype, order="C", multi_output=True, y_numeric=True, estimator=estimator)
        Y = np.ascontiguousarray(Y.reshape(len(Y), -1), dtype=dtype)
    else:
        X, Y = chk.as_matrix(X, "X", dtype), chk.as_matrix(Y, "y", dtype)
    return (X, Y) if rows is None else (X[rows], Y[rows])


# Rows per block where a chunk's rows are gathered and converted (_converted_rows): 1 MiB of
# float32, a buffer the worker's heap reuses from block to block (see below).
_CONVERT_ELEMENTS = 1 << 18


def _converted_rows(X, rows, dtype):
    """X's rows `rows` (a boolean mask) in dtype, gathered and converted a block of rows at
    a time: no copy of them in X's dtype beside the result."""
    index = np.flatnonzero(rows)
    out = np.empty((len(index), X.shape[1]), dtype)
    for r0, r1 in _row_blocks(len(index), X.shape[1], _CONVERT_ELEMENTS):
        out[r0:r1] = X[index[r0:r1]]
    return out


# distributed's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which also turns
# off glibc's dynamic mmap threshold: every allocation past 128 KiB is then a fresh mmap,
# and a freed block at the heap's top is returned at once. The core allocates buffers of
# 0.5-2 MiB per output tile (Eigen's packing), each page-faulted anew, so a chunk's normal
# equations ran up to 1.3x slower in a worker than in a plain process. Once per worker
# process, before its first C++ call, nytro lets buffers of that size come from the heap
# and stay there between tiles: mmap threshold 4 MiB, trim threshold 8 MiB (a worker keeps
# up to that much freed memory at a heap's top). Not higher: the arrays of a task's size
# (a chunk read from storage, its conversion to the computation's dtype, its training
# rows) must stay mappings of their own, returned to the OS when freed. Taken from the
# heap, they are freed at different times (a chunk lives until its task has run) between
# other allocations of the worker's threads, and the holes they leave are never trimmed:
# the worker's unmanaged memory then grows pass after pass, until distributed reports it
# as memory pressure, or spills and pauses (issue 47). Not where the worker was given its
# own MALLOC_MMAP_THRESHOLD_, or a trim threshold of 8 MiB or more.
_MMAP_THRESHOLD = 4 << 20
_TRIM_THRESHOLD = 8 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


@functools.cache
def _tune_worker_malloc():
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if trim is None or not trim.isdigit() or int(trim) >= _TRIM_THRESHOLD or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


# The worker's nthreads while _held_sum computes on it: in the thread pool it runs in,
# outside a task, distributed's get_worker finds no worker.
_HELD = threading.local()


def _task_threads(requested: int | None) -> int:
    """The threads a C++ call on this worker may use: the worker's own (its nthreads),
    never more than the cores this process may run on, nor than the caller asked. Called
    before every C++ call of a task, it also tunes the worker's malloc once
    (_tune_worker_malloc)."""
    _tune_worker_malloc()
    n = chk.available_cores()
    held = getattr(_HELD, "nthreads", None)
    if held:
        n = min(n, held)
    else:
        try:
            from distributed import get_worker
            n = min(n, get_worker().state.nthreads)
        except (ImportError, ValueError):  # not on a distributed worker: the local scheduler
            pass
    return max(1, min(n, requested) if requested else n)


def _client():
    """The current distributed Client, or None (Dask's local schedulers)."""
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


# An array up to this size travels inside the pass's graph (one copy, which the workers
# fetch from each other), saving the scatter's round trip to the scheduler; a larger one is
# scattered to every worker once (a graph of many MiB is slow to send, and Dask warns).
_IN_GRAPH_BYTES = 1 << 20


def _broadcast(*arrays):
    """The arrays as the tasks of a pass take them, each sent to the workers once: a small
    one as a single value of the graph, a larger one scattered to every worker; as they
    are without a distributed client (the local scheduler shares memory)."""
    client = _client()
    if client is None:
        return arrays
    large = [a for a in arrays if np.asarray(a).nbytes > _IN_GRAPH_BYTES]
    scattered = iter(client.scatter(large, broadcast=True, hash=False) if large else ())
    return tuple(next(scattered) if np.asarray(a).nbytes > _IN_GRAPH_BYTES else dask.delayed(a) for a in arrays)


def _client_product(A, B):
    """A @ B on the client (B 1-D or 2-D), without waking BLAS's threads where it is small
    (_CLIENT_PRODUCT_MACS)."""
    columns = B.shape[1] if B.ndim == 2 else 1
    if A.shape[0] * A.shape[1] * columns <= _CLIENT_PRODUCT_MACS:
        return np.einsum("ij,j...->i...", A, B)
    return A @ B


def _add(*parts):
    """The sum of the partial sums `parts` in float64, added in their order. An overflow
    is no warning here: the callers refuse non-finite sums by name (A^T A overflowing,
    diverged iterations)."""
    total = np.array(parts[0], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for part in parts[1:]:
            total += part
    return total


def _tree_sum(parts, shape, split_every):
    """The sum of the delayed arrays `parts` (each of `shape`, float64) as one delayed
    value: a tree of _add tasks in which at most split_every partial sums meet (Dask's
    reductions' default fan-in for None). Plain tasks, not a dask.array reduction, whose
    graph takes several times as long to build and schedule (the direct mode builds one
    per product)."""
    fan_in = split_every or dask.config.get("split_every", 4)
    level = list(parts) or [dask.delayed(np.zeros)(shape)]
    while len(level) > 1:
        level = [dask.delayed(_add)(*level[i:i + fan_in]) for i in range(0, len(level), fan_in)]
    return level[0]


# -------------------------------------------------------------- tasks (on workers)
def _count_and_peak(Y, start, stop, fraction, seed):
    """The chunk's number of training rows, its largest |y| (NaN propagates: the normal
    equations' pass then reports it as in memory), and its weights' summary (None
    without weights, see _weight_summary)."""
    Y, w, _ = _targets(Y)
    held = holdout_mask(np.arange(start, stop), fraction, seed)
    count = int(np.count_nonzero(~held))
    summary = None if w is None else _weight_summary(w, held, start)
    Y = np.asarray(Y)
    if Y.size and not (np.issubdtype(Y.dtype, np.number) or Y.dtype == np.bool_):
        # Numbers held as objects or strings are fitted as numbers (scikit-learn's y_numeric
        # conversion): their peak sets the targets' scale as any other's.
        try:
            Y = Y.astype(np.float64)
        except (TypeError, ValueError):
            return count, None, summary  # not numbers: reported by the normal equations' pass, as in memory
    if not Y.size:
        return count, None, summary
    peaks = np.max(np.abs(Y.reshape(len(Y), -1)), axis=0).astype(np.float64)
    return count, peaks, summary


def _weight_summary(w, held, start):
    """The chunk's weights as the client checks them: the first non-finite and the first
    negative weight (global row, value) or None, then for its training and hold-out rows
    the sum of the weights divided by 2^e and the count of positive weights, and e, the
    exponent of the largest finite weight (a sum of finite weights may overflow: 1e308 on
    every row; the power of two is exact)."""
    w = chk.real_weights(w).reshape(-1)
    firsts = []
    for bad in (~np.isfinite(w), w < 0):
        i = np.flatnonzero(bad)
        firsts.append((start + int(i[0]), float(w[i[0]])) if i.size else None)
    finite = w[np.isfinite(w)]
    e = int(np.frexp(np.max(finite))[1]) if finite.size and np.max(finite) > 0 else 0
    parts = [(float(np.sum(np.ldexp(w[rows], -e))), int(np.count_nonzero(w[rows] > 0))) for rows in (~held, held)]
    return firsts[0], firsts[1], parts[0], parts[1], e


def _pick_rows(X, start, stop, fraction, seed, ordinals):
    """Global row indices and rows of the chunk's training rows number `ordinals` (in the
    chunk's training order)."""
    train = np.flatnonzero(~holdout_mask(np.arange(start, stop), fraction, seed))[ordinals]
    return train + start, _dense(X)[train]


def _row_blocks(rows: int, width: int, elements=None):
    step = max(1, (elements or _BLOCK_ELEMENTS) // max(1, width))
    return [(r, min(r + step, rows)) for r in range(0, rows, step)]


def _scaled_columns(Y, exponents):
    """Y with column j divided by 2^exponents[j], exactly (as chk.TargetScales.scaled)."""
    return Y if exponents is None else np.ldexp(Y, -exponents).astype(Y.dtype, copy=False)


def _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, held):
    """The chunk's training rows (held False) or hold-out rows (held True): X, Y (columns
    divided by the fit's powers of two), and their row scales sqrt(w') in dtype (None
    without weights), w' the weights rescaled to sum to the part's row count, as the core's
    row scales (training) and hold-out row weights."""
    Y, w, units = _targets(Y)
    rows = holdout_mask(np.arange(start, stop), fraction, seed)
    rows = rows if held else ~rows
    X, Y = _validated_block(X, Y, dtype, estimator, rows)
    # The core's training row scales are in dtype, its hold-out row weights in float64.
    if w is not None:
        k, unit = units[int(held)]  # w' = (w 2^k) unit: see _unit
        w = np.ldexp(w.astype(np.float64)[rows], k) * unit
    scale = None if w is None else np.sqrt(w).astype(np.float64 if held else dtype)
    return X, _scaled_columns(Y, exponents), scale


def _gram_part(X, Y, start, stop, fraction, seed, C, R, kern, dtype, estimator, n_threads, exponents, upper=False):
    """This chunk's share of [A^T A, A^T Y] (k x (k + q), float64 after summing in dtype)
    over its training rows, A = S k(X_train, C) R and S Y with S the rows' weight scales
    (the identity without weights), Y's columns scaled by the fit's powers of two: C the
    centres R acts on (the factor's support), R applied as an upper triangle when `upper`;
    for R None (the kernel-first route), the share of [K^T K, K^T Y]
    (len(C) x (len(C) + q)) with K = S k(X_train, C), no factor. With kern.low
    (storage="float32", float64 compute), as the core's low-precision accumulation: the
    kernel block (rows and centres rounded to float32), S, R, S Y and the products
    A = K R, A^T A and A^T (S Y) in float32, summed in float64."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, False)
    if scale is not None:
        Y = Y * scale[:, None]
    # The core's streamed Gram pass (the in-memory gram solver's), whose low_precision is
    # the accumulation above; the route is the caller's, decided for the whole training set.
    with _CORE_LOCK:
        H, c = _block_normal_equations(X, Y, C, R, kern.kernel, kern.sigma, kern.matern_nu, scale,
                                       upper_triangular=upper and R is not None, low_precision=kern.low,
                                       n_threads=_task_threads(n_threads))
    return np.hstack([H, c]).astype(np.float64, copy=False)


def _direct_block(X, Y, start, stop, fraction, seed, C, kern, dtype, estimator, n_threads, exponents):
    """(K_i, Y_i) of this chunk's training rows, K_i = S k(X_i, C) in the computation's
    dtype and S Y_i (S the rows' weight scales, the identity without weights), Y_i's
    columns scaled by the fit's powers of two: what a worker keeps in memory for the
    "direct" mode (R is applied on the client, in m dimensions, as the in-memory direct
    solver applies it: forming K_i R would cost 2 n m k flops, a Gram pass's)."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, False)
    if not len(X):  # every row held out (a small chunk): an empty block, which the kernel refuses to form
        return np.zeros((0, C.shape[0]), dtype=np.float32 if kern.low else dtype), Y
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        K = kern(X, C, threads)
    if scale is not None:
        K *= scale.astype(K.dtype)[:, None]  # the core scales the stored K_nm by the scales in its precision
        Y = Y * scale[:, None]
    return K, Y


def _widened_rows(K, dtype, elements=None):
    """K's row blocks (of about `elements` values) in dtype (views of K where it has it): a
    K kept in float32 for float64 computation is widened a block at a time, never whole."""
    for r0, r1 in _row_blocks(len(K), K.shape[1], elements):
        yield r0, r1, K[r0:r1].astype(dtype, copy=False)


def _direct_rhs(block):
    """This chunk's K_i^T Y_i (float64 for the reduction)."""
    K, Y = block
    out = np.zeros((K.shape[1], Y.shape[1]), Y.dtype)
    for r0, r1, Kb in _widened_rows(K, Y.dtype):
        out += Kb.T @ Y[r0:r1]
    return out.astype(np.float64, copy=False)


def _direct_product(block, B, n_threads):
    """This chunk's K_i^T (K_i B) (float64 for the reduction), in Y_i's dtype (the
    computation's): the core's fused pass, which reads K_i once, in place (widening a
    float32 K_i in registers), on the worker's threads."""
    K, Y = block
    with _CORE_LOCK:
        out = _block_normal_product(K, B.astype(Y.dtype), n_threads=_task_threads(n_threads))
    return out.astype(np.float64, copy=False)


def _holdout_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents):
    """The chunk's hold-out rows as the hold-out errors read them: X, Y (float64, its
    columns scaled by the fit's powers of two) and their row scales sqrt(w') (None without
    weights). The direct mode keeps them on the worker that holds the chunk's kernel
    block (n_val x d values, beside its n_train x m)."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, True)
    return X, Y.astype(np.float64), scale


def _holdout_sums(rows, C, alphas, kern, n_threads, metric="rmse"):
    """Squared hold-out errors of the rows (_holdout_rows), per output column, for each of
    the L coefficient sets alphas[:, l q:(l + 1) q] ((L, q)), from the predictions
    k(X_val, C) alpha_l against Y's scaled columns, each row's weighted by its w'. For
    metric "error" ((L + 1,)): the summed w' (1 without weights) of the rows each set
    misclassifies (reference._classes of the predictions against the targets'), then the
    summed w' of all the rows."""
    X, Y, scale = rows
    q = Y.shape[1]
    L = alphas.shape[1] // q
    errors = np.zeros((L, q))
    weights = np.ones(len(Y)) if scale is None else scale * scale  # the core's w' = (its row scale)^2
    wrong = np.zeros(L)
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        for r0, r1 in _row_blocks(len(X), max(C.shape[0], alphas.shape[1])):
            predictions = (kern(X[r0:r1], C, threads) @ alphas).astype(np.float64, copy=False)
            if metric == "error":
                truth = reference._classes(Y[r0:r1])
                for i in range(L):
                    missed = reference._classes(predictions[:, i * q:(i + 1) * q]) != truth
                    wrong[i] += float(np.sum(weights[r0:r1][missed]))
                continue
            residual = predictions.reshape(r1 - r0, L, q) - Y[r0:r1, None, :]
            if scale is not None:
                residual *= scale[r0:r1, None, None]
            errors += np.einsum("rlj,rlj->lj", residual, residual)
    if metric == "error":
        return np.append(wrong, np.sum(weights))
    return errors


def _holdout_part(X, Y, start, stop, fraction, seed, C, alphas, kern, dtype, estimator, n_threads, exponents,
                  metric="rmse"):
    """_holdout_sums of the chunk's hold-out rows."""
    return _holdout_sums(_holdout_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents), C, alphas,
                         kern, n_threads, metric)


def _images_part(X, Y, start, stop, fraction, seed, C, bases, sizes, kern, dtype, estimator, n_threads,
                 exponents):
    """R factors of this chunk's hold-out images, one per output j: the triangular factor
    of S [P_j y_j] with P_j = k(X_val, C) bases[:, columns of j] (its sizes[j] basis
    vectors as coefficients) and S the rows' weight scales (as the core's weigh_rows),
    padded to (q, K + 1, K + 1) for K = max(sizes)."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, True)
    Y = Y.astype(np.float64)
    if scale is not None:
        Y *= scale[:, None]
    K = max(sizes)
    factors = np.zeros((len(sizes), K + 1, K + 1))
    threads = _task_threads(n_threads)
    # Row blocks of the chunk, each folded into the running factors (a TSQR inside the
    # chunk), so that a task holds O(block x K) of images whatever the chunk's size.
    with _CORE_LOCK:
        for r0, r1 in _row_blocks(len(X), max(C.shape[0], bases.shape[1], K + 1)):
            images = kern(X[r0:r1], C, threads) @ bases
            if scale is not None:
                images = images.astype(np.float64) * scale[r0:r1, None]
            first = 0
            for j, size in enumerate(sizes):
                block = np.zeros((r1 - r0 + K + 1, K + 1))
                block[:K + 1] = factors[j]
                block[K + 1:, :size] = images[:, first:first + size]
                block[K + 1:, size] = Y[r0:r1, j]
                factors[j] = _padded_r(block, K + 1)
                first += size
    return factors


def _padded_r(A, width):
    """The triangular factor of A's QR (its Gram matrix's Cholesky factor up to row
    signs), with zero rows below when A has fewer rows than columns."""
    out = np.zeros((width, width))
    if len(A):
        r = np.linalg.qr(A, mode="r")
        out[:r.shape[0]] = r
    return out


def _combine_r(*factors):
    """The R factors (q, w, w) of the row-stacked matrices whose factors are `factors`
    (each q, w, w): a node of the TSQR tree (no Gram matrix formed)."""
    stacked = np.stack(factors)
    g, q, w, _ = stacked.shape
    return np.stack([_padded_r(stacked[:, j].reshape(g * w, w), w) for j in range(q)])


def _tree_r(parts, split_every):
    """The TSQR combination of the per-chunk factors `parts` (delayed) by a tree of at
    most split_every factors per task (8 for None)."""
    split_every = split_every or 8
    level = list(parts)
    while len(level) > 1:
        level = [dask.delayed(_combine_r)(*level[i:i + split_every]) for i in range(0, len(level), split_every)]
    return level[0].compute(optimize_graph=False)


# ------------------------------------------------------------------ the passes
def _split_counts(data: _Data, fraction, seed, also=()):
    """Training rows per chunk, the targets' per-column powers of two (chk.TargetScales of
    the in-memory functions, from the chunks' largest |y| per column: max |y_j| over
    every row, training and hold-out, as in memory), and the values of the delayed `also`
    (computed in the same graph)."""
    parts = [dask.delayed(_count_and_peak)(y, start, stop, fraction, seed) for _, y, start, stop in _blocks(data)]
    *results, = dask.compute(*parts, *also, optimize_graph=False)
    counts, peaks, summaries = zip(*results[:len(parts)])
    counts = np.array(counts, dtype=np.int64)
    if data.W is not None:
        data.units = _weight_units(summaries, int(counts.sum()), int(data.X.shape[0]) - int(counts.sum()), fraction,
                                   "random_state" if data.estimator else "the seed")  # the caller's parameter
    peaks = [p for p in peaks if p is not None and p.size]
    peak = np.max(np.vstack(peaks), axis=0) if peaks else np.zeros(data.q)
    if not np.all(np.isfinite(peak)):
        peak = np.zeros_like(peak)  # NaN: reported by the normal equations' pass, nothing scaled
    elif np.any(peak > np.finfo(data.dtype).max):  # finite y beyond float32: the in-memory error, by name
        chk.check_finite_before_cast(peak, "y", data.dtype)
    with np.errstate(over="ignore"):
        scales = chk.TargetScales(peak[None, :].astype(data.dtype), None)
    return counts, scales, results[len(parts):]


def _weight_units(summaries, n_train, n_val, fraction, seed_name="the seed"):
    """(n_train / sum of the training rows' w, n_val / sum of the hold-out rows' w) from the
    chunks' _weight_summary, after the checks (and errors) of the in-memory estimators:
    chk.check_sample_weight's on all rows, then a positive weight in each part (its error
    saying to change seed_name)."""
    for which, requirement in ((0, "finite"), (1, ">= 0")):
        bad = [s[which] for s in summaries if s[which] is not None]
        if bad:
            row, value = min(bad)
            raise ValueError(f"sample_weight must be {requirement}, got {value} at row {row}")
    # The sums in units of 2^top, top the largest chunk's exponent (exact powers of two).
    top = max(s[4] for s in summaries)
    sums = [math.fsum(math.ldexp(s[2 + part][0], s[4] - top) for s in summaries) for part in (0, 1)]
    positive = [sum(s[2 + part][1] for s in summaries) for part in (0, 1)]
    if not sum(positive):
        raise ValueError("sample_weight must not be all zero: give some rows a positive weight")
    for part, rows, name in ((0, n_train, "training"), (1, n_val, "hold-out")):
        if rows and not positive[part]:
            raise ValueError(
                f"sample_weight is zero on every one of the {rows} {name} rows the hold-out split "
                f"(validation_fraction={fraction}) left: the {name} error has no weight; give more rows a "
                f"positive weight or change {seed_name}")
    return tuple(_unit(rows, total, top) if rows else None for rows, total in zip((n_train, n_val), sums))


def _unit(rows: int, total: float, exponent: int = 0) -> tuple:
    """rows / (total 2^exponent) as (k, rows / (total 2^(k + exponent))), w' = (w 2^k)
    (rows / (total 2^(k + exponent))): rows / total overflows for weights as tiny as 1e-310
    (the core's row scales divide by the largest weight instead), the sum of weights as
    large as 1e308 overflows (hence its exponent apart), and the power of two is exact, so
    other weights give the same w' as w (rows / total)."""
    e = int(np.frexp(total)[1])
    return -(e + exponent), rows / float(np.ldexp(total, -e))


def _exponents(scales: chk.TargetScales):
    """The per-column exponents the tasks divide Y by, or None where nothing is scaled."""
    return np.asarray(scales.exponents, dtype=np.int32) if scales.active else None


def _pooled_rmse(errors, scales: chk.TargetScales, n_val):
    """The hold-out RMSE path in units of 2^E (as the core's) from the summed squared
    errors per column ((L, q), scaled targets): column j weighted by (2^e_j / 2^E)^2."""
    weights = np.asarray(scales.weights() or np.ones(errors.shape[1]))
    return np.sqrt((errors @ weights) / (n_val * errors.shape[1]))


def _unscaled(coef, path, scales: chk.TargetScales, metric="rmse"):
    """coef and the path in units of y, as the in-memory functions return them (the
    same ValueError where coef overflows; an error rate has no units)."""
    if not scales.active:
        return coef, path
    if metric != "error":
        with np.errstate(over="ignore"):
            path = np.ldexp(path, scales.top)
    return _scaled_coef(coef, scales), path


class _Rows:
    """X's rows as nytro.centers.check_centers reads them (its shape, the computation's
    dtype, rows taken by global index from the chunks holding them): the in-memory
    checks and messages for given centres, without gathering X."""

    def __init__(self, data: _Data, n_rows: int):
        self.data, self.shape, self.dtype = data, (n_rows, int(data.X.shape[1])), data.dtype

    def __getitem__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        chunk = np.searchsorted(self.data.offsets, rows, side="right") - 1
        blocks = {start: x for x, _, start, _ in _blocks(self.data)}
        wanted = {b: dask.delayed(_take_rows)(blocks[int(self.data.offsets[b])],
                                              rows[chunk == b] - self.data.offsets[b])
                  for b in np.unique(chunk)}
        out = np.empty((len(rows), self.shape[1]), dtype=self.data.X.dtype)
        for b, values in zip(wanted, dask.compute(*wanted.values(), optimize_graph=False)):
            out[chunk == b] = values
        return out


def _take_rows(X, local):
    return _dense(X)[local]


def _dense(X):
    """A chunk of X as a NumPy array, where its rows are taken by index; a scipy.sparse
    chunk refused with the in-memory fit's error for sparse X (scikit-learn's TypeError),
    not read as a 0-d array of one object."""
    if scipy.sparse.issparse(X):
        from sklearn.utils import check_array
        check_array(X, accept_sparse=False, input_name="X")
    return np.asarray(X)


def _given_centers(data: _Data, n_train, centers, center_selection):
    """(C, their global rows or None) for centers= as the in-memory estimators take it
    (points, or indices into X before the split), or None to draw them uniformly."""
    chk.check_choice("center_selection", center_selection, CENTER_SELECTIONS)
    if centers is None:
        return None
    C = check_centers(centers, _Rows(data, int(data.X.shape[0])), _Rows(data, n_train))
    given = np.asarray(centers)
    rows = None
    if given.ndim == 1:
        rows = np.where(given < 0, given + int(data.X.shape[0]), given).astype(np.int64)
    return _checked_centers(C, data), rows


def _checked_centers(C, data: _Data):
    """Rows of X as centres, validated as the fit validates X (an estimator's messages)."""
    if data.estimator is not None:
        from sklearn.utils import check_array
        C = check_array(C, dtype=data.dtype, order="C", input_name="X", estimator=data.estimator)
    return chk.as_matrix(C, "X", data.dtype)


def _gather_training(data: _Data, counts, fraction, seed, ordinals):
    """(global rows, rows) of the training rows number `ordinals` (in global order),
    gathered from the chunks that hold them."""
    chunk, wanted = _pick_tasks(data, counts, fraction, seed, ordinals)
    return _picked_rows(data, chunk, dict(zip(wanted, dask.compute(*wanted.values(), optimize_graph=False))))


def _pick_tasks(data: _Data, counts, fraction, seed, ordinals):
    """(the chunk holding each of the training rows number `ordinals`, {chunk: the delayed
    _pick_rows of its share}) for the chunks holding some."""
    first = np.concatenate([[0], np.cumsum(counts)])
    chunk = np.searchsorted(first, ordinals, side="right") - 1
    blocks = _blocks(data)
    wanted = {}
    for b in np.unique(chunk):
        x, _, start, stop = blocks[b]
        wanted[b] = dask.delayed(_pick_rows, nout=2)(x, start, stop, fraction, seed, ordinals[chunk == b] - first[b])
    return chunk, wanted


def _picked_rows(data: _Data, chunk, picked):
    """(global rows, rows) in the ordinals' order from _pick_tasks's chunks and the picks'
    results ({chunk: (global rows, rows)})."""
    rows = np.empty(len(chunk), dtype=np.int64)
    values = np.empty((len(chunk), data.X.shape[1]), dtype=data.X.dtype)
    for b, (global_rows, taken) in picked.items():
        rows[chunk == b], values[chunk == b] = global_rows, taken
    return rows, values


# Up to this many rows the client splits them itself (the hash costs it about 40 ns a row),
# draws uniform centres before the first pass and has that pass gather them too: one round
# trip to the scheduler fewer, which is most of a small fit's fixed cost.
_CLIENT_SPLIT_ROWS = 1 << 18


@dataclass
class _EarlyDraw:
    """Uniform centres drawn before the first pass: the training rows per chunk (as the
    client counted them), each centre's chunk, and the picks the first pass computes."""

    counts: np.ndarray
    chunk: np.ndarray
    wanted: dict


def _early_draw(data: _Data, n_centers, centers, center_selection, fraction, seed) -> _EarlyDraw | None:
    """The uniform centres' draw made before the first pass, for data of at most
    _CLIENT_SPLIT_ROWS rows; None otherwise, or where the draw's checks would fail (the
    passes then report it, in their order)."""
    if centers is not None or center_selection != "uniform" or int(data.X.shape[0]) > _CLIENT_SPLIT_ROWS:
        return None
    counts = np.array([np.count_nonzero(~holdout_mask(np.arange(start, stop), fraction, seed))
                       for _, _, start, stop in _blocks(data)], dtype=np.int64)
    n_train = int(counts.sum())
    n_val = int(data.X.shape[0]) - n_train
    try:
        m = chk.check_int("n_centers", n_centers, 1)
    except (TypeError, ValueError):
        return None
    if m > n_train or (fraction is not None and n_val < 1):
        return None
    ordinals = sample_centers(n_train, m, _center_seed(seed))
    return _EarlyDraw(counts, *_pick_tasks(data, counts, fraction, seed, ordinals))


def _center_seed(seed: int) -> int:
    """The centres' stream: a different seed from the split's hash (a plain offset keeps it
    reproducible from `seed` alone)."""
    return (seed + 0x5851F42D4C957F2D) % 2**64


class _TrainingRows:
    """The training rows, in global order, as nytro.centers' leverage sampler reads X: its
    shape, and rows by ordinal (float64), gathered from their chunks when first asked for
    (a level's candidates: a pass over the chunks holding them) and kept."""

    def __init__(self, data: _Data, counts, fraction, seed):
        self.data, self.counts, self.fraction, self.seed = data, counts, fraction, seed
        self.shape = (int(counts.sum()), int(data.X.shape[1]))
        self._rows = {}

    def __getitem__(self, ordinals):
        ordinals = np.asarray(ordinals, dtype=np.int64).reshape(-1)
        missing = np.setdiff1d(ordinals, np.fromiter(self._rows, dtype=np.int64, count=len(self._rows)))
        if missing.size:
            _, values = _gather_training(self.data, self.counts, self.fraction, self.seed, missing)
            values = _checked_centers(values, self.data).astype(np.float64)  # X's errors for NaN, as in memory
            self._rows.update(zip(missing.tolist(), values))
        out = np.empty((len(ordinals), self.shape[1]))
        for i, o in enumerate(ordinals.tolist()):
            out[i] = self._rows[o]
        return out


def _leverage_ordinals(rows: _TrainingRows, m: int, kern: _Kernel, seed, top: float) -> np.ndarray:
    """nytro.centers.leverage_centers(X_train, m, ...) on the training rows gathered on
    demand: its levels and final draw, the same draws for the same seed (top: max k(x, x)
    over the training rows, its kernel scale)."""
    from . import centers as lev
    kernel = lev._Kernel(kern.sigma, kern.kernel, kern.matern_nu)
    kernel.scale = top if top > 0 else 1.0
    return lev._leverage_draw(rows, m, kernel, np.random.default_rng(seed))[0]


def _centers(data: _Data, counts, n_centers, fraction, seed, center_seed, selection="uniform", kern=None):
    """(C m x d, their global rows): n_centers of the n_train training rows (in global
    order) drawn by `selection` ("uniform": sample_centers; "leverage": the leverage
    sampler, with the fit's kernel `kern`), gathered from the chunks that hold them."""
    n_train = int(counts.sum())
    m = chk.check_int("n_centers", n_centers, 1)
    if m > n_train:
        raise ValueError(f"n_centers={m} is more than the {n_train} training rows left after the hold-out split")
    if selection == "leverage":
        ordinals = _leverage_ordinals(_TrainingRows(data, counts, fraction, seed), m, kern, center_seed,
                                      _kernel_bound(data, kern, fraction, seed))
    else:
        ordinals = sample_centers(n_train, m, center_seed)
    rows, C = _gather_training(data, counts, fraction, seed, ordinals)
    return _checked_centers(C, data), rows


def _kernel_first_is_accurate(n_train, factor: _Factor, dtype) -> bool:
    """Whether A^T A may be formed as R^T (K^T K) R (K^T K summed over the chunks), the
    in-memory gram solver's rule: float64, an upper triangular factor, n_train >= 4k, and
    k ||R||_2^2 (k cond(K_mm) for unit kernel diagonals) within 1 / sqrt(k eps), where its
    error stays within the A route's worst case. It saves the chunks' K R (n k^2 flops) and
    half the squaring."""
    R = factor.R
    k = R.shape[1]
    if dtype != np.float64 or not factor.upper or n_train < 4 * k:
        return False
    limit = 1.0 / math.sqrt(k * np.finfo(np.float64).eps)
    if k * float(np.max(np.sum(R * R, axis=0))) > limit:  # a column norm bounds ||R||_2 below
        return False
    top = scipy.linalg.eigh(R.T @ R, eigvals_only=True, subset_by_index=[k - 1, k - 1])[0]
    return k * 1.25 * float(top) <= limit


# The core's words for products of the kernel that overflow (a linear kernel on |x| ~ 1e120).
_OVERFLOW = ("an overflow (the features or targets are too large or too small for the kernel's products); "
             "rescale X or y")


def _normal_equations(data, fraction, seed, C, factor: _Factor, kern, n_threads, split_every, exponents, n_train):
    """A^T A and A^T Y (A = K R) summed over the chunks as the in-memory gram solver forms
    them: the chunks evaluate the kernel on the factor's support only, and either apply R
    (as a triangle where it is one), or (the kernel-first route) sum K^T K and K^T Y there,
    R then applied on the client, as a triangle, in k dimensions."""
    R, q = factor.R, data.q
    k = R.shape[1]
    # storage="float32" (kern.low) takes the A route, in float32, as the core's does.
    kernel_first = not kern.low and _kernel_first_is_accurate(n_train, factor, data.dtype)
    used = np.ascontiguousarray(C[factor.support])
    width = len(used) if kernel_first else k
    C_b, R_b = _broadcast(used) + (None,) if kernel_first else _broadcast(used, R)
    parts = _chunk_tasks(data, _gram_part, fraction, seed, C_b, R_b, kern, data.dtype, data.estimator, n_threads,
                         exponents, factor.upper)
    total = _tree_sum(parts, (width, width + q), split_every).compute(optimize_graph=False)
    H, c = total[:, :width], total[:, width:]
    if kernel_first:
        # R^T G R and R^T (K^T Y) with R's upper triangle (the rule took only a triangular factor).
        trmm = scipy.linalg.get_blas_funcs("trmm", (R,))
        R64 = R.astype(np.float64, copy=False)
        H = trmm(1.0, R64, trmm(1.0, R64, H, side=1), trans_a=1)
        c = trmm(1.0, R64, c, trans_a=1)
        H = (H + H.T) / 2  # exactly symmetric, as the core mirrors its triangle
    if not np.all(np.isfinite(H)):  # else cg and hybrid stop at t = 1 with the zero model, NKRLS fails in SciPy
        raise RuntimeError(f"A^T A is not finite: {_OVERFLOW}")
    return H.astype(data.dtype), c.astype(data.dtype)


def _holdout_errors(data, fraction, seed, C, alphas, kern, n_threads, split_every, exponents, metric="rmse"):
    """Summed squared hold-out errors of each coefficient set (alphas m x L q), per
    output column: (L, q); for metric "error", the weighted error rate of each set (L,),
    sum_v w_v [row v wrong] / sum_v w_v over all the hold-out rows."""
    C_b, alphas_b = _broadcast(C, alphas)
    parts = _chunk_tasks(data, _holdout_part, fraction, seed, C_b, alphas_b, kern, data.dtype, data.estimator,
                         n_threads, exponents, metric)
    shape = _holdout_shape(data.q, alphas, metric)
    return _holdout_result(_tree_sum(parts, shape, split_every).compute(optimize_graph=False), metric)


def _holdout_shape(q, alphas, metric):
    """The shape of a chunk's _holdout_sums."""
    L = alphas.shape[1] // q
    return (L + 1,) if metric == "error" else (L, q)


def _holdout_result(summed, metric):
    """_holdout_errors's value from the chunks' summed _holdout_sums."""
    return summed[:-1] / summed[-1] if metric == "error" else summed


class _DirectOperator:
    """A^T A and A^T Y (A = K R) from the chunks' (K_i, Y_i), kept where they were
    computed (on the workers with a distributed client): each product A^T A B =
    R^T (sum_i K_i^T (K_i (R B))) is a sum over the chunks of m x p matrices, R applied
    on the client.

    Each block is computed on a worker chosen here (where X's chunks are persisted, by
    _placement: the worker holding the chunk, within its share; otherwise the workers in
    turn, as many blocks in a round as each has threads), and its A^T Y share is pinned to
    that worker; the blocks and their shares are one graph, one round trip to the
    scheduler. A product is then no task at all: each worker is asked directly
    (``client.run``, about 2 ms on a LocalCluster, where a graph of tasks and their tree
    sum takes 20-50 ms) for the sum of K_i^T (K_i B) over the blocks it holds, computed in
    its thread pool, and the client adds the workers' sums (in the order of their
    addresses). No block ever moves: left to the scheduler, work stealing handed product
    tasks to an idle worker, which fetched their blocks (n_i x m values, a GB at
    250000 x 500) at every product.

    A worker that dies takes its blocks with it (as does one that restarts: its blocks are
    no longer there), and tasks pinned to it would wait for it for ever: a wait that lasts
    checks that the blocks' workers are still there (the scheduler may also cancel the
    computation, when it forgets persisted results whose inputs went with the worker).
    Either way the blocks are then computed again from the chunks, on the workers now
    present, and the product repeated, once: the same numbers as before, so the path goes
    on unchanged. A second loss in the same product is reported as a RuntimeError, never
    answered with a partial sum.

    With a hold-out split, each block's worker also keeps the chunk's hold-out rows
    (_holdout_rows: n_val x d values), so that the hold-out errors too are asked of the
    workers (the kernel of those rows formed there), not sent as a graph."""

    # Seconds a product may run before the blocks' workers are checked (then again as often).
    _patience = 0.5

    def __init__(self, data, fraction, seed, C, R, kern, n_threads, split_every, exponents):
        """Sends the blocks' computation (waited for at the first product or rhs()). The
        blocks need the centres only: R may come later (set_factor), so that they are
        computed while the client factors K_mm."""
        self._recipe = (data, fraction, seed, C, kern, n_threads, exponents)
        self.C, self.kern = C, kern
        self.m, self.q, self.dtype = C.shape[0], data.q, data.dtype
        self.n_threads, self.split_every = n_threads, split_every
        self.products = 0
        self._client = _client()
        self.blocks = self.held = self._rhs = None
        if R is not None:
            self.set_factor(R)
        self._persist()

    def set_factor(self, R):
        self.R = R
        # shape and @ as A^T A's matrix has them in "gram" mode: "hybrid"'s Lanczos takes
        # either (each product here a pass over the workers' blocks).
        self.shape = (R.shape[1], R.shape[1])

    def _persist(self):
        """The blocks and hold-out rows (kept: futures on their workers, or values without
        a client) and the blocks' summed A^T Y (a future, waited for by _run), in one
        computation."""
        data, fraction, seed, C, kern, n_threads, exponents = self._recipe
        (C_b,) = _broadcast(C)
        chunks = _blocks(data)
        # Where X's chunks are persisted, each block is computed where its chunk is (no
        # chunk moves); otherwise the workers take the blocks in turn.
        placed = _placement(chunks)
        self._homes = placed if all(placed) else _homes(self._client, len(chunks))
        blocks = [_pinned(home, _direct_block, x, y, start, stop, fraction, seed, C_b, kern, data.dtype,
                          data.estimator, n_threads, exponents)
                  for home, (x, y, start, stop) in zip(self._homes, chunks)]
        held = [] if fraction is None else [
            _pinned(home, _holdout_rows, x, y, start, stop, fraction, seed, data.dtype, data.estimator, exponents)
            for home, (x, y, start, stop) in zip(self._homes, chunks)]
        rhs = _tree_sum([_pinned(home, _direct_rhs, b) for home, b in zip(self._homes, blocks)], (self.m, self.q),
                        self.split_every)
        if self._client is None:
            *kept, self._rhs_future = dask.persist(*blocks, *held, rhs, optimize_graph=False)
        else:
            *kept, self._rhs_future = self._client.compute(blocks + held + [rhs], optimize_graph=False)
        self.blocks, self.held, self._rhs = kept[:len(blocks)], kept[len(blocks):], None

    def _wait(self, future):
        """The future's result; _WorkerLost once a worker holding blocks has left. Waited
        for on an event its done-callback sets (finished, failed or cancelled), not by
        future.result(timeout=...): under load, a timeout of that wait racing the result
        can end distributed's sync with neither (UnboundLocalError: 'result'), which no
        caller could take for a lost worker."""
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        while not done.wait(self._patience):
            try:
                self._check_homes()
            except _WorkerLost:
                self._client.cancel([future])
                raise
        return future.result()

    def _run(self, step):
        """step() with the blocks in place, computing them again (and repeating step) once
        where a lost worker took some of them."""
        from concurrent.futures import CancelledError
        for attempt in (0, 1):
            try:
                if self.blocks is None:
                    self._persist()
                if self._rhs is None:
                    future = self._rhs_future
                    self._rhs = future.compute() if self._client is None else self._wait(future)
                return step()
            except (CancelledError, _WorkerLost) as error:
                if attempt:
                    raise RuntimeError("solver='direct': the workers holding the kernel blocks were lost twice in "
                                       f"one product ({error}); no result was formed from partial sums") from error
                self.blocks = self.held = None
                self._settle()

    # Seconds the scheduler gets to drop a worker whose connection broke, before the blocks
    # are placed again (on a worker it still lists, pinned tasks would wait for it).
    _removal = 10.0

    def _settle(self):
        """After a loss: wait until the scheduler has dropped a lost holder (or the
        _removal seconds have passed: a holder restarted under its own address has lost
        its blocks without leaving) and lists a worker to place the blocks on."""
        if self._client is None:
            return
        deadline = time.monotonic() + self._removal
        while time.monotonic() < deadline:
            try:
                self._check_homes()
            except _WorkerLost:
                break
            time.sleep(0.05)
        self._client.wait_for_workers(1, timeout=_WORKER_WAIT)

    def _sum(self, task, shape, *args, held=False):
        """The sum of task(block, *args) over the blocks (float64), or over the hold-out
        rows for held: on each chunk's worker (with a client), or by the local scheduler."""
        def step():
            kept = self.held if held else self.blocks
            if self._client is not None:
                return self._asked(task, args, kept)
            parts = [dask.delayed(task)(b, *args) for b in kept]
            return _tree_sum(parts, shape, self.split_every).compute(optimize_graph=False)
        return self._run(step)

    def _asked(self, task, args, kept):
        """The sum over the workers of their _held_sum(task, their futures in kept, args)."""
        keys = {}
        for home, block in zip(self._homes, kept):
            keys.setdefault(home, []).append(block.key)
        try:
            sums = self._client.run(_held_sum, task, keys, args, workers=sorted(keys))
        except OSError as error:  # distributed's CommClosedError: a holder's connection broke mid-run
            raise _WorkerLost(f"a worker holding blocks stopped answering ({error})") from error
        except Exception:
            self._check_homes()
            raise
        if any(isinstance(value, _Missing) for value in sums.values()):
            raise _WorkerLost("a worker no longer holds its blocks")
        return _add(*(sums[address] for address in sorted(keys)))

    def _check_homes(self):
        """_WorkerLost where a worker holding blocks has left the cluster."""
        present = set(self._client.scheduler_info(n_workers=-1)["workers"])
        gone = sorted(set(self._homes) - present)
        if gone:
            raise _WorkerLost(f"worker {gone[0]} left")

    def rhs(self):
        self._run(lambda: None)
        return _client_product(self.R.T, self._rhs.astype(self.dtype))

    def holdout_errors(self, alphas, metric="rmse"):
        """_holdout_errors's value, from the hold-out rows the workers keep."""
        C, alphas = self.C, np.asarray(alphas)
        shape = _holdout_shape(self.q, alphas, metric)
        return _holdout_result(self._sum(_holdout_sums, shape, C, alphas, self.kern, self.n_threads, metric,
                                         held=True), metric)

    def __call__(self, B):
        """A^T A B for B of shape (k,) or (k, p)."""
        B = np.asarray(B)
        lifted = _client_product(self.R, B.reshape(self.R.shape[1], -1).astype(self.dtype))
        self.products += 1
        out = _client_product(self.R.T, self._sum(_direct_product, lifted.shape, lifted, self.n_threads).astype(
            self.dtype))
        # The first product is of A^T y or a start vector, never a diverged iterate: a
        # non-finite one is A^T A itself overflowing, on which cg and hybrid would stop at
        # t = 1 with the zero model.
        if self.products == 1 and np.all(np.isfinite(B)) and not np.all(np.isfinite(out)):
            raise RuntimeError(f"A^T A's products are not finite: {_OVERFLOW}")
        return out.reshape(B.shape)

    __matmul__ = __call__


class _Reported:
    """A direct operator whose products are reported as progress("product", done,
    planned); the count can pass the plan (the step's estimate, a basis that falls
    short), and the total then follows it."""

    def __init__(self, operator: _DirectOperator, progress, planned: int):
        self.operator, self.progress, self.planned = operator, progress, planned

    @property
    def products(self) -> int:
        return self.operator.products

    def __call__(self, B):
        out = self.operator(B)
        done = self.operator.products
        self.progress("product", done, max(done, self.planned))
        return out


# Seconds to wait for a worker when the cluster has none (a TimeoutError after them).
_WORKER_WAIT = 60.0


class _WorkerLost(Exception):
    """A worker that holds blocks has left the cluster, or no longer holds them."""


class _Missing:
    """What a worker answers for blocks it does not hold."""


async def _held_sum(task, keys, args, dask_worker=None):
    """On a worker (client.run): the sum, in float64 and in the order of keys[its
    address], of task(block, *args) over the blocks it holds under those keys, computed in
    its thread pool (not on its event loop, which must keep answering the scheduler);
    a _Missing where it lacks one."""
    import asyncio
    mine = keys[dask_worker.address]
    if not all(key in dask_worker.data for key in mine):
        return _Missing()
    blocks = [dask_worker.data[key] for key in mine]  # read here: the data store is the event loop's
    nthreads = dask_worker.state.nthreads

    def held_sum():
        _HELD.nthreads = nthreads
        try:
            return _add(*(task(block, *args) for block in blocks))
        finally:
            _HELD.nthreads = None
    return await asyncio.get_running_loop().run_in_executor(dask_worker.executors["default"], held_sum)


def _homes(client, count) -> list:
    """The worker each of `count` blocks is computed and read on: the workers (by address)
    in turn, each as many times in a round as it has threads; None each without a client."""
    if client is None:
        return [None] * count
    workers = client.scheduler_info(n_workers=-1)["workers"]
    if not workers:  # all restarting (their nannies bring them back) or not started yet
        client.wait_for_workers(1, timeout=_WORKER_WAIT)
        workers = client.scheduler_info(n_workers=-1)["workers"]
    slots = [address for address in sorted(workers) for _ in range(max(1, int(workers[address].get("nthreads") or 1)))]
    return [slots[i % len(slots)] for i in range(count)]


def _chunk_tasks(data: _Data, task, *args) -> list:
    """task(x, y, start, stop, *args) for every chunk (_blocks), as delayed values, each
    placed by _placement where X's chunks are persisted (loosely: another worker may run it
    if that one has gone), left to the scheduler otherwise."""
    blocks = _blocks(data)
    tasks = []
    for (x, y, start, stop), home in zip(blocks, _placement(blocks)):
        if home is None:
            tasks.append(dask.delayed(task)(x, y, start, stop, *args))
            continue
        with dask.annotate(workers=[home], allow_other_workers=True):
            tasks.append(dask.delayed(task)(x, y, start, stop, *args))
    return tasks


def _placement(blocks) -> list:
    """The worker to run each chunk's task of a pass on (None: the scheduler's choice), for
    chunks of X persisted on the workers: the worker holding the chunk, unless that worker
    already has its share of the chunks (their count times its share of the threads,
    rounded up), then the least loaded worker. The arrays a pass broadcasts are on every
    worker, which made each worker a candidate for every task: left to itself, the
    scheduler sometimes ran three of four evenly persisted chunks' tasks on one of two
    workers, and a gram pass took a third longer."""
    client = _client()
    if client is None:
        return [None] * len(blocks)
    from distributed import Future
    graph = {b: x.dask.get(x.key) for b, (x, _, _, _) in enumerate(blocks)}
    persisted = {b: value for b, value in graph.items() if isinstance(value, Future)}
    who = client.who_has(list(persisted.values())) if persisted else {}
    holders = {b: sorted(who[future.key]) for b, future in persisted.items() if who.get(future.key)}
    threads = {address: max(1, int(info.get("nthreads") or 1))
               for address, info in client.scheduler_info(n_workers=-1)["workers"].items()}
    if not holders or not threads:
        return [None] * len(blocks)
    total = sum(threads.values())
    share = {address: math.ceil(len(holders) * t / total) for address, t in threads.items()}
    load = dict.fromkeys(threads, 0)
    homes = [None] * len(blocks)
    for b, where in holders.items():
        home = next((w for w in where if w in load and load[w] < share[w]), None)
        if home is not None:
            homes[b] = home
            load[home] += 1
    for b in holders:
        if homes[b] is None:
            homes[b] = min(sorted(load), key=lambda w: load[w] / threads[w])
            load[homes[b]] += 1
    return homes


def _pinned(home, task, *args):
    """dask.delayed(task)(*args), to be run on the worker `home` and no other (None: anywhere)."""
    if home is None:
        return dask.delayed(task)(*args)
    with dask.annotate(workers=[home], allow_other_workers=False):
        return dask.delayed(task)(*args)


def _no_work(block):
    return np.zeros(1)  # never called: _round_trip_seconds's workers hold no blocks under its keys


# (scheduler address, chunks) -> seconds of one round trip of a product's shape.
_ROUND_TRIPS: dict = {}


def _round_trip_seconds(client, chunks, split_every=None) -> float:
    """The wall time of a direct product that does no work (each worker asked for its sum
    over `chunks` blocks spread as the blocks are, which it finds it does not hold): the
    round trip of every product. The best of three (the first may import on the workers),
    measured once per client and number of chunks."""
    key = (client.scheduler.address, chunks)
    if key not in _ROUND_TRIPS:
        held = {}
        for i, home in enumerate(_homes(client, chunks)):
            held.setdefault(home, []).append(f"nytro-no-block-{i}")
        times = []
        for _ in range(3):
            begin = time.perf_counter()
            client.run(_held_sum, _no_work, held, (), workers=sorted(held))  # no blocks there: nothing read
            times.append(time.perf_counter() - begin)
        _ROUND_TRIPS[key] = min(times)
    return _ROUND_TRIPS[key]


@dataclass
class _Cluster:
    """What "auto" weighs on a distributed client: each worker's memory_limit (0: none),
    the workers' flop/s together, and the seconds of a product's round trip."""

    limits: list
    flops: float
    latency: float


def _cluster(data: _Data) -> _Cluster | None:
    """The current distributed client's _Cluster for products over `data`'s chunks, or
    None without one. The workers' rate: the client's probed float64 (float32) flop/s per
    thread (nytro.machine_rates, cached) times the workers' threads. Its latency is left
    at 0: _auto_mode times a round trip only where it can change the choice."""
    client = _client()
    if client is None:
        return None
    from ._config import machine_rates
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    rate = machine_rates(1)["flops32" if data.dtype == np.float32 else "flops"]
    threads = sum(int(w.get("nthreads") or 1) for w in workers)
    return _Cluster([int(w.get("memory_limit") or 0) for w in workers], rate * threads, 0.0)


def _auto_mode(solver, method, n_train, k, max_iter, data, m, split_every, itemsize=None) -> str:
    """_choose_solver with the current cluster; a round trip is timed only when "direct"
    wins without it (a latency can only turn "direct" into "gram"). max_iter: the path's
    products; itemsize: the bytes of a kept kernel value (None: the computation's)."""
    cluster = _cluster(data) if solver == "auto" and method != "hybrid" else None
    args = (solver, method, n_train, k, max_iter, itemsize or data.dtype.itemsize)
    mode = _choose_solver(*args, m=m, **(dataclasses.asdict(cluster) if cluster else {}))
    if mode == "direct" and cluster is not None:
        cluster.latency = _round_trip_seconds(_client(), len(_blocks(data)), split_every)
        mode = _choose_solver(*args, m=m, **dataclasses.asdict(cluster))
    return mode


def _choose_solver(solver, method, n_train, k, max_iter, itemsize, limits=None, m=None, latency=0.0,
                   flops=math.inf):
    """ "gram" or "direct" for solver "auto" (see DASK_SOLVER's row in nytro.options for
    the model; the direct mode's blocks hold n_train x m kernel values, m = k when not
    given). A round trip of `latency` seconds counts as latency * flops flops (`flops`:
    the workers' flop/s together): direct takes max_iter of them, gram one."""
    if solver != "auto":
        return solver
    if method == "hybrid" or not limits:  # no limits: the local schedulers, the blocks in this process
        return "gram"
    trip = latency * flops if latency > 0 else 0.0
    if not max_iter * (4 * n_train * k + trip) < 2 * n_train * k * k + k ** 3 + trip:
        return "gram"
    share = n_train * (m or k) * itemsize / len(limits)
    return "direct" if all(limit == 0 or share <= limit / 2 for limit in limits) else "gram"


def _reporter(progress):
    """progress (checked), or a callable that reports nothing."""
    chk.check_progress(progress)
    return progress or (lambda stage, done, total: None)


def _setup(X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype,
           sample_weight, estimator, progress=None, before_factor=None):
    """The passes shared by both paths: data, split, centres, factor (dense, m x k; and as
    the core holds it, a _Factor). values: the family's parameters (kernel, matern_nu,
    factor, rank_tol, jitter). before_factor: None, or called as before_factor(data, kern,
    fraction, seed, C, scales) once the centres are known, before the client factors K_mm
    (work sent to the workers then runs while it does)."""
    report = _reporter(progress)
    data = _as_dask_data(X, y, dtype, estimator)
    chk.check_kernel(values["kernel"], sigma, values["matern_nu"], int(data.X.shape[1]))  # ValueError by name
    kern = _Kernel(values["kernel"], np.asarray(sigma, dtype=np.float64) if np.ndim(sigma) else sigma,
                   values["matern_nu"])
    fraction = _check_fraction(validation_fraction)
    seed = _check_seed(seed)
    data.W = _as_dask_weights(sample_weight, data.X)
    early = _early_draw(data, n_centers, centers, center_selection, fraction, seed)
    counts, scales, picked = _split_counts(data, fraction, seed, () if early is None else early.wanted.values())
    report("split", 1, 1)
    n = int(data.X.shape[0])
    n_train = int(counts.sum())
    n_val = n - n_train
    if fraction is not None and (n_val < 1 or n_train < 1):
        raise ValueError(f"validation_fraction={fraction} leaves {n_train} training and {n_val} validation rows "
                         f"of n_samples={n}; at least 1 training and 1 validation row are needed")
    given = _given_centers(data, n_train, centers, center_selection)
    if given is not None:
        C, rows = given
    elif early is not None:
        if not np.array_equal(early.counts, counts):
            raise RuntimeError("the client's split of the rows differs from the workers'")
        rows, C = _picked_rows(data, early.chunk, dict(zip(early.wanted, picked)))
        C = _checked_centers(C, data)
    else:
        C, rows = _centers(data, counts, n_centers, fraction, seed, _center_seed(seed), center_selection, kern)
    report("centres", 1, 1)
    if before_factor is not None:
        before_factor(data, kern, fraction, seed, C, scales)
    # The core's compact factor (for the gram mode's chunks) and the dense one the other
    # passes apply: the same numbers (nystrom_factor's R is the compact one scattered).
    factor = _Factor(*_nystrom_factor_parts(kern(C, C, None), method=values["factor"], rank_tol=values["rank_tol"],
                                            jitter=values["jitter"], progress=progress))
    return data, kern, fraction, seed, C, rows, factor.dense(C.shape[0]), n_train, n_val, scales, factor


def _bound_part(X, Y, start, stop, fraction, seed, dtype, estimator):
    """The largest ||x||^2 of the chunk's training rows (0 for none)."""
    X, _, _ = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, None, False)
    return float(np.max(np.sum(X.astype(np.float64) ** 2, axis=1))) if len(X) else 0.0


def _kernel_bound(data: _Data, kern: _Kernel, fraction, seed) -> float:
    """max k(x, x) over the training rows, as the core's kernel_bound: 1 for the
    distance-based kernels, max ||x||^2 for the linear one (a pass over the chunks)."""
    if kern.kernel != "linear":
        return 1.0
    parts = [dask.delayed(_bound_part)(x, y, start, stop, fraction, seed, data.dtype, data.estimator)
             for x, y, start, stop in _blocks(data)]
    bound = max(dask.compute(*parts, optimize_graph=False), default=0.0)
    return bound if bound > 0 and math.isfinite(bound) else 1.0


# ------------------------------------------------------------------- top eigenvalue
def _top_eigenvalue_process(dim, dtype):
    """lambda_max(H) as the C++ core estimates it for step_size="auto" (Lanczos with full
    reorthogonalisation from its fixed start vector, stopped when the top Ritz value moves
    by at most 1e-13 relative, 1e-6 in float32), so that the same step comes out: a
    generator that yields the vectors to multiply by H (float64, dim) and is sent their
    products, and returns the estimate (StopIteration's value)."""
    tol = 1e-6 if dtype == np.float32 else 1e-13
    most = min(120, dim)
    v = np.fmod(0.6180339887498949 * np.arange(1, dim + 1, dtype=np.float64), 1.0) - 0.5
    V = np.zeros((dim, most + 1))
    V[:, 0] = v / np.linalg.norm(v)
    diagonal, off = [], []
    value, coupling = 0.0, 0.0
    for k in range(most):
        w = np.asarray((yield V[:, k]), dtype=np.float64)
        applied = np.linalg.norm(w)
        diagonal.append(float(w @ V[:, k]))
        if k > 0:
            off.append(coupling)
        for _ in range(2):
            w = w - V[:, :k + 1] @ (V[:, :k + 1].T @ w)
        b = np.linalg.norm(w)
        complete = not b > 4 * np.finfo(np.float64).eps * applied or k + 1 == dim
        if not complete:
            coupling = b
            V[:, k + 1] = w / b
        top = float(scipy.linalg.eigh_tridiagonal(np.array(diagonal), np.array(off), eigvals_only=True)[-1])
        if (k + 1 >= 3 and abs(top - value) <= tol * abs(top)) or complete or k + 1 == most:
            return top
        value = top
    return value


def _top_eigenvalue(H, dim=None, dtype=None) -> float:
    """lambda_max(H) (a matrix, or a function applying it to a dim-vector of dtype) by
    _top_eigenvalue_process, one product at a time."""
    if not callable(H):
        matrix, dim, dtype = H, H.shape[0], H.dtype
        H = lambda v: matrix @ v  # noqa: E731
    process = _top_eigenvalue_process(dim, dtype)
    vector = next(process)
    while True:
        try:
            vector = process.send(H(vector.astype(dtype)))
        except StopIteration as stop:
            return stop.value


def _resolve_step(step_size, method, H, n_train, dim=None, dtype=None):
    if method == "cg":
        return 0.0
    if chk.check_step_size(step_size)[0] == "paper":
        return 1.0 / n_train
    return _step_from_top(step_size, method, _top_eigenvalue(H, dim, dtype))


def _step_from_top(step_size, method, top):
    """The step of rule "auto" or a given (checked) step, from lambda_max(A^T A) = top."""
    rule, value = chk.check_step_size(step_size)
    if rule == "auto":
        if not np.isfinite(top):  # the core's error: the kernel's products overflowed
            raise RuntimeError(f"lambda_max(A^T A) = {top}: {_OVERFLOW}")
        if not top > 0:
            raise RuntimeError(f"lambda_max(A^T A) = {top}: cannot set step_size='auto'")
        return 1.0 / top
    limit = (1.0 if method == "nu" else 2.0) / top
    if not value < limit * (1 + 1e-9):
        raise ValueError(f"step_size={value} is unstable for method '{method}': it must be below "
                         f"{'1' if method == 'nu' else '2'} / lambda_max(A^T A) = {limit}")
    return value


# ------------------------------------------------------------- gd's Lanczos iterates
def _projected_gd(a, b, norm, step, max_iter):
    """z_1..z_max_iter (k x max_iter) of gd on T z = norm e_1 from z_0 = 0, T the
    tridiagonal (a, b): z_t = U diag(p_t(theta)) U^T norm e_1, p_t(x) = (1 - (1 - s x)^t)
    / x (s t at x = 0), by expm1 and log1p where s theta is small (1 - s theta near 1,
    whose power would lose the digits of s theta), by the plain power elsewhere (s theta
    up to 2 for a stable step: 1 - s theta may be negative)."""
    theta, U = scipy.linalg.eigh_tridiagonal(a, b) if len(a) > 1 else (a.copy(), np.ones((1, 1)))
    t = np.arange(1, max_iter + 1, dtype=np.float64)
    x = step * theta[:, None]
    small = np.abs(x) < 0.5
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gone = np.where(small, -np.expm1(t * np.log1p(-np.where(small, x, 0.0))), 1.0 - (1.0 - x) ** t)
        p = np.where(x == 0, step * t, gone / np.where(x == 0, 1.0, theta[:, None]))
    return U @ (p * (norm * U[0])[:, None])


def _certified(a, b, coupling, norm, step, max_iter, eps) -> np.ndarray | None:
    """The projected iterates Z (k x max_iter) of a basis of k = len(a) vectors whose
    remainder has norm `coupling`, where the core's bound certifies every one: |beta_t -
    V z_t| <= s coupling sum_{i<t} |z_i[k]| within 64 eps |z_t|; None where it does not."""
    Z = _projected_gd(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), norm, step, max_iter)
    drift = step * coupling * np.concatenate([[0.0], np.cumsum(np.abs(Z[-1]))[:-1]])
    return Z if np.all(drift <= 64 * eps * np.linalg.norm(Z, axis=0)) else None


# The core's kMostCertified (paths/gradient_path.hpp): past it gd always steps.
_MOST_CERTIFIED = 1 << 17


def _lanczos_applies(iterates, method, dtype, max_iter) -> bool:
    """Whether gd's iterates may come from Lanczos bases, as the core's lanczos_applies:
    method "gd", iterates "lanczos", or "auto" in float64 compute (float32's rounding the
    basis would amplify), max_iter within what the bound certifies."""
    if method != "gd" or iterates == "stepwise" or max_iter > _MOST_CERTIFIED:
        return False
    return iterates == "lanczos" or np.dtype(dtype) == np.float64


def _by_lanczos(applies, iterates, mode, k, low) -> bool:
    """Whether they do, as the core's by_lanczos: "auto" takes them where a product with
    H reads more than twice the basis' k doubles a step, as the core measures it: always
    in "direct" mode (n k kernel values), in "gram" mode for 0.5 k^2 entries of A^T A of
    8 bytes (4 with storage="float32") above 16 k bytes, i.e. k > 4 (k > 8)."""
    if not applies:
        return False
    return iterates == "lanczos" or mode == "direct" or 0.5 * k * k * (4 if low else 8) > 2.0 * k * 8


def _lanczos_products(max_iter, k) -> float:
    """Products that gd's Lanczos iterates take for max_iter iterates, as the core's
    cost model counts them (lanczos_products in solvers/nytro.cpp)."""
    return min(float(max_iter), 8.0 + 4.0 * math.sqrt(math.sqrt(max_iter)), float(k))


# The iteration "cg" and "hybrid" are expected to select: kExpectedKrylovBest in
# solvers/nytro.cpp (docs/design.md, "How many products auto prices"; measured:
# benchmarks/results/auto/history.md, "How many products auto prices").
_EXPECTED_KRYLOV_BEST = 100


def _priced_products(planned, method, validated, stopping, patience) -> float:
    """The products the cost model prices for a path planned to take `planned` (max_iter,
    or gd's Lanczos count), as the core's expected_path_length: for "cg" and "hybrid"
    ending `patience` iterations after their best on a hold-out set (stopping="best"),
    the expected best plus the patience, at most `planned`."""
    if method in ("cg", "hybrid") and validated and stopping == "best" and patience:
        return float(min(planned, _EXPECTED_KRYLOV_BEST + patience))
    return float(planned)


def _basis_limit(dim, q, max_iter) -> int:
    """The most vectors a column's basis may take, as the core's basis_limit
    (paths/lanczos_path.cpp): at most half the stepwise path's products (32 at least, never
    past max_iter), 512, and 256 MiB of float64 bases for the q columns."""
    by_memory = max(1, int(256 * 2**20 / (dim * q * 8.0)) - 1)
    return max(1, min(dim, min(max_iter, max(32, max_iter // 2)), 512, by_memory))


def _lanczos_gd(apply, c, step, max_iter, eps, top=None):
    """gd's iterates beta_1..beta_max_iter for H beta = c from Lanczos bases, as the core's
    iterates="lanczos" (paths/lanczos_path.hpp): each column's basis grows (all columns'
    vectors in one product per step) until the bound certifies all max_iter iterates within
    64 eps of stepping, at most _basis_limit vectors. step: the step; or, with `top` (a
    _top_eigenvalue_process), a function of its lambda_max giving the step: the estimate
    then runs in the same products as the bases (as the core's LanczosGradient), which
    grow meanwhile, and the certification starts once it is known. Returns (iterates,
    products, step), iterates None where a column is not certified by then (step
    instead)."""
    q = c.shape[1]
    columns = [c[:, j].astype(np.float64) for j in range(q)]
    norms = [float(np.linalg.norm(x)) for x in columns]
    most = _basis_limit(c.shape[0], q, max_iter)
    # One step past `most`, so that the last vector allowed comes with its coupling.
    processes = {j: reference._lanczos_process(columns[j], most + 1, eps, False) for j in range(q) if norms[j] > 0}
    pending = {j: next(process)[0] for j, process in processes.items()}  # the growing bases' next vectors
    bases = {j: [] for j in processes}
    grown = {}  # per column: its tridiagonal (a, b) and the remainder's norm (None: an invariant space)
    projected = {}
    estimate = None if top is None else next(top)  # the estimate's next vector, None once it is known
    products = 0
    while True:
        if estimate is None:  # the step is known: certify what the bases hold
            for j, (a, b, coupling) in list(grown.items()):
                k = len(a)
                # An invariant space, or t <= k: V z_t is beta_t itself.
                Z = (_projected_gd(a, b, norms[j], step, max_iter) if coupling is None or k >= max_iter
                     else _certified(a, b, coupling, norms[j], step, max_iter, eps))
                if Z is not None:
                    projected[j] = Z
                    del grown[j]
                    pending.pop(j, None)
                elif j not in pending:  # `most` vectors, not certified
                    return None, products, step
            if not pending:
                break
        running = list(pending)
        for j in running:
            bases[j].append(pending[j].copy())
        vectors = [pending[j] for j in running] + ([] if estimate is None else [estimate])
        W = apply(np.stack(vectors, axis=1).astype(c.dtype)).astype(np.float64)
        products += 1
        for i, j in enumerate(running):
            try:
                vector, a, b = processes[j].send(W[:, i])
            except StopIteration as stop:  # an invariant space: every iterate exact
                _, a, b, _, _ = stop.value
                grown[j] = (np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), None)
                del pending[j]
                continue
            k = len(a)
            grown[j] = (np.asarray(a, dtype=np.float64), np.asarray(b[:k - 1], dtype=np.float64), b[k - 1])
            if k >= most:
                del pending[j]
            else:
                pending[j] = vector
        if estimate is not None:
            try:
                estimate = top.send(W[:, -1])
            except StopIteration as stop:
                estimate, step = None, step(stop.value)
    betas = np.zeros((max_iter,) + c.shape)
    for j, Z in projected.items():
        V = np.stack(bases[j][:Z.shape[0]], axis=1)
        betas[:, :, j] = (V @ Z).T
    return [beta.astype(c.dtype) for beta in betas], products, step


# ------------------------------------------------------------- the stopping rule
class _StoppingWatch:
    """reference._select's rule applied one hold-out value at a time, as the core's
    StoppingRule (paths/stopping.cpp) applies it while iterating: push(value) says whether
    the path ends at that t; selection() is (t_selected, t_stopped) of the values pushed,
    reference._select's answer for them (NaN included: a first NaN is np.argmin's
    minimum, and never a `<` improvement). O(window) work and memory per value."""

    def __init__(self, stopping, tol, window, patience, metric):
        self.stopping, self.window, self.patience = stopping, window, patience or 0
        self.by_error = metric == "error"
        self.tol = (0.05 if stopping == "relative" else 1e-4) if tol is None else tol
        self.t, self.first = 0, None
        # metric "error": reference._select's plateau, the index of the first value that
        # differs from the first (None until one does: no iteration is counted before).
        self.plateau = None if self.by_error else 0
        self.improved, self.improved_value = 0, None  # the last strict (`<`) improvement
        self.lowest, self.lowest_value = 0, None      # np.argmin's 1-based answer so far
        self.before = None                            # min of the values older than the window
        self.recent = collections.deque(maxlen=window)
        self.stopped = None

    def push(self, value) -> bool:
        value = float(value)
        self.t += 1
        t = self.t
        if t == 1:
            self.first, self.improved, self.improved_value = value, 1, value
        if self.plateau is None and value != self.first:  # NaN differs from everything
            self.plateau = t - 1
        if self.lowest == 0 or (not math.isnan(self.lowest_value)
                                and (math.isnan(value) or value < self.lowest_value)):
            self.lowest, self.lowest_value = t, value
        if value < self.improved_value:
            self.improved, self.improved_value = t, value
        if len(self.recent) == self.window:
            old = self.recent[0]  # np.minimum propagates NaN, as np.min does
            self.before = old if self.before is None else float(np.minimum(self.before, old))
        self.recent.append(value)
        if self.stopped is None and self._ends(t):
            self.stopped = t
        return self.stopped is not None

    def _judged(self, t) -> bool:
        return self.plateau is not None and t - self.plateau >= self.window

    def _ends(self, t) -> bool:
        if self.stopping == "best":
            plateau = t if self.plateau is None else self.plateau
            return bool(self.patience) and t - max(self.improved, plateau) >= self.patience
        if self.stopping == "relative":
            if t < self.window + 1 or not self._judged(t):
                return False
            inside = float(np.min(self.recent))
            return bool(self.before - inside <= self.tol * self.before)
        if t < self.window or not self._judged(t):
            return False
        recent = np.asarray(self.recent)
        fall = -self.window * np.polyfit(np.arange(self.window, dtype=float), recent, 1)[0]
        return bool(fall <= self.tol * recent.mean() if self.by_error else fall < self.tol)

    def selection(self):
        end = self.stopped or self.t
        if self.stopping == "window":
            return end, end
        if self.stopping == "best" and self.patience and self.stopped is not None:
            return self.improved, end
        return self.lowest, end


def _block_limit(m, q) -> int:
    """The most iterates validated in one pass: their m x q coefficients within 32 MiB of
    float64 (the client's copy and the hold-out rows' predictions of a chunk), 4096 at most."""
    return max(1, min(4096, (32 << 20) // (8 * max(1, m * q))))


def _run_path(betas, R, q, path_errors, watch, step, max_iter, validated):
    """The path from the iterates `betas` (an iterator of k x q arrays, formed on demand):
    validated in blocks of growing size (path_errors(alphas) gives the hold-out values of
    the m x (L q) coefficients alphas), the stopping rule `watch` (a _StoppingWatch; None
    without a hold-out set: the last iterate) applied as the values come, so that the
    iterates formed and the memory held follow the iterations the rule runs, not max_iter
    (at most one block past the stop; the blocks double up to _block_limit). validated(done) is
    called after each block. Returns (coef at the selected t, the path to the stop,
    selected, stopped, iterates formed)."""
    def finite(beta):
        if not np.all(np.isfinite(beta)):
            raise RuntimeError(f"the iterations diverged (step_size={step}): a stable step is below "
                               "2 / lambda_max(A^T A)")
        return beta

    if watch is None:
        last, formed = None, 0
        for last in betas:
            formed += 1
        return _client_product(R, finite(last)), np.zeros(0), max_iter, max_iter, formed
    path, kept, formed = [], {}, 0
    most = _block_limit(R.shape[0], q)
    # Each block is a pass over the hold-out rows (a read of X's chunks in "gram" mode): a
    # rule that can stop starts with a few times the iterations it needs before it can
    # (patience or window), one that cannot (stopping="best" without patience) validates
    # as many as the block's memory allows at once.
    reach = watch.patience if watch.stopping == "best" else watch.window
    size = min(most, max(64, 4 * reach)) if reach else most
    while watch.stopped is None:
        block = [beta for _, beta in zip(range(size), betas)]
        if not block:
            break
        formed += len(block)
        finite(block[-1])
        alphas = _client_product(R, np.hstack(block))
        values = np.asarray(path_errors(alphas), dtype=np.float64)
        start = len(path)
        for i, value in enumerate(values):
            path.append(value)
            kept[start + i + 1] = alphas[:, i * q:(i + 1) * q]
            if watch.push(value):
                break
        validated(len(path))
        # Keep the coefficients a selection may still take (the best so far by either of
        # reference._select's counts, or the last), copied out of the block's array.
        kept = {t: alpha.copy() for t, alpha in kept.items() if t in (watch.lowest, watch.improved, len(path))}
        size = min(2 * size, most)
    selected, stopped = watch.selection()
    return kept[selected].copy(), np.asarray(path[:stopped]), selected, stopped, formed


# ------------------------------------------------------------------------ hybrid
def _shifted_solutions(a, b, shifts, norm):
    """z_k(shift) = (T_k + shift I)^-1 norm e_1 for every k = 1..len(a) and shift, T_k the
    leading k x k block of the tridiagonal (a, b), by elimination without pivoting as the
    C++ core does (T_k + shift I is positive definite for shift > 0): the forward sweep is
    shared by every k. Returns a list over k of (k, len(shifts)) arrays."""
    K = len(a)
    pivots = np.empty((K, len(shifts)))
    forward = np.empty((K, len(shifts)))
    upper = np.empty((K, len(shifts)))
    pivots[0] = a[0] + shifts
    forward[0] = norm / pivots[0]
    for i in range(1, K):
        upper[i - 1] = b[i - 1] / pivots[i - 1]
        pivots[i] = a[i] + shifts - b[i - 1] * upper[i - 1]
        forward[i] = -b[i - 1] * forward[i - 1] / pivots[i]
    solutions = []
    for k in range(1, K + 1):
        z = forward[:k].copy()
        for i in range(k - 2, -1, -1):
            z[i] -= upper[i] * z[i + 1]
        solutions.append(z)
    return solutions


def _hybrid(data, fraction, seed, C, R, H, c, sigma, n_train, n_val, max_iter, stopping, tol, window, patience,
            n_threads, split_every, scales, grid=None, eps=None, metric="rmse"):
    """Method "hybrid" from A^T A: Lanczos on the client, the hold-out images' R factors
    by TSQR on the workers, then the core's selection of (t, lambda) on `grid` (None: the
    paper's; without a hold-out set its first lambda is taken); eps: the rounding of a
    product with H (None: H's dtype's). metric "error": the path of (weighted) error
    rates, from every hold-out row's prediction at every (t, lambda) as the core's tally
    (_hybrid_error_part). Returns (coef m x q for the scaled targets, path, selected,
    stopped, lambda, Lanczos steps)."""
    if grid is None:  # the core's hybrid_lambda_grid: the paper's by its pow, times the kernel's bound
        grid = np.array([10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(100)]) * _kernel_bound(
            data, sigma, fraction, seed)
    q = c.shape[1]
    # The outputs' Lanczos processes in lockstep: one product with H (in direct mode a pass
    # over the workers' blocks) per step for all of them, as the in-memory block product.
    # As the core's, each stops where its remainder, or a Ritz value, is at the rounding of
    # a product with H (float32's for a float32 H); at such an invariant space a Ritz value
    # of rounding is dropped from the last solve (reference._invariant_solver).
    eps = reference._krylov_eps(H.dtype) if eps is None else eps
    rhs = [c[:, j].astype(np.float64) for j in range(q)]
    running = [j for j in range(q) if np.linalg.norm(rhs[j]) != 0]
    processes = reference._lanczos_columns(lambda B: (H @ B.astype(H.dtype)).astype(np.float64),
                                           [rhs[j] for j in running], min(max_iter, H.shape[0]), eps=eps,
                                           stop_when_singular=True)
    columns = [None] * q  # per output: (coefficients R V, tridiagonal a, b, |c|, invariant) or None for c = 0
    for j, (V, a, b, complete, scale) in zip(running, processes):
        norm = float(np.linalg.norm(rhs[j]))
        T = np.diag(a) + np.diag(b, 1) + np.diag(b, -1)
        invariant = reference._invariant_solver(T, norm, eps, scale) if complete else None
        columns[j] = (R @ V.astype(H.dtype), a, b, norm, invariant)
    sizes = [0 if col is None else col[0].shape[1] for col in columns]
    k_run = max(sizes)
    shifts = grid * float(n_train)
    solutions = [None if col is None else _shifted_solutions(col[1], col[2], shifts, col[3]) for col in columns]
    for col, solved in zip(columns, solutions):
        if col is not None and col[4] is not None:
            solved[-1] = np.column_stack([col[4](shift) for shift in shifts])

    def coef_at(k, lam):
        out = np.zeros((R.shape[0], q), dtype=H.dtype)
        for j, col in enumerate(columns):
            if col is not None:
                kc = min(k, sizes[j])
                out[:, j] = col[0][:, :kc] @ solutions[j][kc - 1][:, lam].astype(H.dtype)
        return out

    if n_val == 0:
        return coef_at(k_run, 0), np.zeros(0), max_iter, max_iter, float(grid[0]), k_run
    bases = np.hstack([col[0] for col in columns if col is not None] or [np.zeros((R.shape[0], 0), H.dtype)])
    if metric == "error":
        path, best_lambdas = _hybrid_error_path(data, fraction, seed, C, bases, columns, solutions, shifts, sigma,
                                                n_threads, split_every, scales)
        selected, stopped = reference._select(np.asarray(path), stopping, tol, window, patience, metric)
        lam = best_lambdas[selected - 1]
        return (coef_at(min(selected, k_run), lam), np.asarray(path[:stopped]), selected, stopped,
                float(grid[lam]), k_run)
    C_b, bases_b = _broadcast(C, bases)
    parts = _chunk_tasks(data, _images_part, fraction, seed, C_b, bases_b, sizes, sigma, data.dtype,
                         data.estimator, n_threads, _exponents(scales))
    factors = _tree_r(parts, split_every)
    images = []
    for j, size in enumerate(sizes):
        S, g, rho = factors[j][:size, :size], factors[j][:size, size], factors[j][size, size]
        residual = np.empty(size + 1)  # residual[k] = ||y - Q_k g_k||^2, as sums of squares
        residual[size] = rho * rho
        for k in range(size - 1, -1, -1):
            residual[k] = residual[k + 1] + g[k] * g[k]
        images.append((S, g, residual))
    # Column j's squared errors weighted as the core weights them (chk.TargetScales).
    weights = scales.weights() or [1.0] * q
    path, best_lambdas = [], []
    for k in range(1, k_run + 1):
        squared = np.zeros(len(grid))
        for j, (S, g, residual) in enumerate(images):
            kc = min(k, sizes[j])
            if kc == 0:
                squared += weights[j] * residual[0]
                continue
            top = np.triu(S[:kc, :kc]) @ solutions[j][kc - 1] - g[:kc, None]
            squared += weights[j] * ((top * top).sum(0) + residual[kc])
        finite = np.isfinite(squared)
        best = int(np.argmin(np.where(finite, squared, np.inf))) if finite.any() else 0
        path.append(float(np.sqrt(squared[best] / (n_val * q))) if finite.any() else np.inf)
        best_lambdas.append(best)
    # As in memory, the path ends where every Krylov space is invariant (later t repeat the
    # last solution); where every column of c is 0 it holds t = 1 alone (predictions 0).
    if not path:
        zero = sum(w * r[0] for w, (_, _, r) in zip(weights, images))
        path, best_lambdas = [float(np.sqrt(zero / (n_val * q)))], [0]
    selected, stopped = reference._select(np.asarray(path), stopping, tol, window, patience)
    lam = best_lambdas[selected - 1]
    return (coef_at(min(selected, k_run), lam), np.asarray(path[:stopped]), selected, stopped, float(grid[lam]),
            k_run)


def _hybrid_error_path(data, fraction, seed, C, bases, columns, solutions, shifts, kern, n_threads, split_every,
                       scales):
    """hybrid's error-rate path: per t, the rate of the best lambda (the smallest, a tie
    going to the larger lambda, as the core's), from one pass over the hold-out rows; t = 1
    alone (predictions 0) where every column of c is 0. Returns (path, best lambda per t)."""
    # The projected problems travel as their tridiagonals (the tasks solve them, O(k^2 L)),
    # not as their k_run^2 L / 2 solutions; an invariant space's last solve is sent as is.
    projected = [None if col is None else (col[1], col[2], col[3], solutions[j][-1] if col[4] is not None else None)
                 for j, col in enumerate(columns)]
    k_run, L = max([0] + [len(p[0]) for p in projected if p is not None]), len(shifts)
    C_b, bases_b = _broadcast(C, bases)
    parts = _chunk_tasks(data, _hybrid_error_part, fraction, seed, C_b, bases_b, projected, shifts, kern,
                         data.dtype, data.estimator, n_threads, _exponents(scales))
    summed = _tree_sum(parts, ((k_run + 1) * L + 1,), split_every).compute(optimize_graph=False)
    rates = summed[:-1].reshape(k_run + 1, L) / summed[-1]
    if k_run == 0:
        return [float(rates[0, 0])], [0]
    path, best_lambdas = [], []
    for row in rates[1:]:
        best = len(row) - 1 - int(np.argmin(row[::-1]))  # the last of the smallest
        path.append(float(row[best]))
        best_lambdas.append(best)
    return path, best_lambdas


def _hybrid_error_part(X, Y, start, stop, fraction, seed, C, bases, projected, shifts, kern, dtype, estimator,
                       n_threads, exponents):
    """This chunk's summed w' of the hold-out rows misclassified at every (t, lambda) of
    hybrid's path, t = 0 (predictions 0) to the longest basis, then the total w' of its
    hold-out rows ((t_max + 1) L + 1,). projected: per output, None (c = 0) or (a, b, |c|,
    last) of its Lanczos process, last its invariant space's solutions at its full size
    (None: the plain solve). Predictions P_j = k(X_val, C) bases_j z_j(t, lambda), the
    class of a row that of reference._classes, as the core's ErrorTally."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, True)
    weights = np.ones(len(Y)) if scale is None else scale * scale
    sizes = [0 if p is None else len(p[0]) for p in projected]
    solutions = []
    for p in projected:
        solved = None if p is None else _shifted_solutions(p[0], p[1], shifts, p[2])
        if p is not None and p[3] is not None:
            solved[-1] = p[3]
        solutions.append(solved)
    K, L, q = max([0] + sizes), len(shifts), len(projected)
    wrong = np.zeros((K + 1, L))
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        for r0, r1 in _row_blocks(len(X), max(C.shape[0], bases.shape[1], L * q)):
            images = (kern(X[r0:r1], C, threads) @ bases).astype(np.float64)
            truth = reference._classes(Y[r0:r1].astype(np.float64))
            for t in range(K + 1):
                P = np.zeros((r1 - r0, L, q))
                first = 0
                for j, size in enumerate(sizes):
                    kc = min(t, size)
                    if kc:
                        P[:, :, j] = images[:, first:first + kc] @ solutions[j][kc - 1]
                    first += size
                # The class of each row: the sign of one column, or the first largest column.
                predicted = P[:, :, 0] > 0 if q == 1 else np.argmax(P, axis=2)
                wrong[t] += weights[r0:r1] @ (predicted != truth[:, None])
    return np.append(wrong.ravel(), np.sum(weights))


# ---------------------------------------------------------------------- public
def _options(family, options, values: dict) -> dict:
    """The family's parameters (nytro.options, the Dask rows) from the keywords and the
    options object, each checked by its row; then the Dask-only ones (split_every)."""
    values = {**values, **opt.merged(family, options, values)}
    for param in family.params + opt.DASK_ONLY:
        if param.name not in ("kernel", "matern_nu"):  # checked with sigma, once the features are known
            param.to_core(values[param.name])
    return values


def nytro_path(X, y, sigma, *, n_centers=None, kernel="gaussian", matern_nu=1.5, centers=None,
               center_selection="uniform", validation_fraction=0.2, seed=0, method="gd", nu=1.0, max_iter=500,
               step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None, iterates="auto",
               factor="pivoted", rank_tol=None, jitter=1e-10, solver="auto", storage=None, n_threads=None,
               options=None, dtype=None, metric="rmse", hybrid_lambda=None, sample_weight=None, split_every=None,
               estimator=None, progress=None) -> DaskFit:
    """NYTRO's path on a Dask array X (chunked by rows) with a seeded hold-out split.

    Equals ``nytro.nytro_path(X[train], y[train], X[center_rows], sigma, X_val=X[val],
    y_val=y[val], sample_weight=w[train], sample_weight_val=w[val], solver=..., ...)`` up
    to rounding, with train/val from :func:`holdout_mask` (see the module's docstring for
    the passes) and the solver that ran (the result's ``solver``, "gram" or "direct").

    n_centers centres are drawn uniformly from the training rows (seeded by seed), or
    given: centers, as the estimators take it (an (m, d) array of points, or a 1-D array
    of row indices into X, before the split); center_selection="leverage" draws them as
    ``nytro.centers.leverage_centers`` does from the training rows, gathering each level's
    candidates from their chunks. sample_weight: None, a scalar, or one weight per row of X (a
    NumPy array, or a Dask array, rechunked as X's rows), split with the rows: the training
    rows' weights weigh the loss and the hold-out rows' the hold-out RMSE, as
    ``nytro.nytro_path``'s sample_weight and sample_weight_val (checked as the estimators'
    fit checks them). seed seeds the split and the centres. n_threads caps the threads of
    each worker's C++ calls (default: the worker's nthreads). estimator: a scikit-learn
    estimator's name, to validate the chunks as it does (its error messages). progress:
    None, or a callable progress(stage, done, total) called on the client after each
    pass over the chunks ("split", "centres", "gram", "validation"), between the blocks
    of the factor, and after each product in "direct" mode ("product", done, planned:
    max_iter, or the core's count of Lanczos products); an exception from it (a
    KeyboardInterrupt) stops the fit there. The other parameters are those of
    ``nytro.nytro_path``, with the same names and defaults, and the same options object;
    the values Dask does not take yet are refused (NotImplementedError), as their rows in
    ``nytro.options`` (``DASK_NYTRO``) say.
    """
    values = _options(opt.DASK_NYTRO, options, locals())
    method, solver, n_threads, metric = values["method"], values["solver"], values["n_threads"], values["metric"]
    patience = chk.check_patience(n_iter_no_change)
    report = _reporter(progress)
    # storage="float32" changes a float64 computation only, as in memory.
    low = (chk.check_storage(values["storage"], chk.NYTRO_STORAGES) == "float32" and isinstance(X, da.Array)
           and chk.compute_dtype(dtype, np.empty(0, X.dtype)) == np.float64)
    started = []

    def start_blocks(data, kern, fraction, seed, C, scales):
        # solver="direct": the kept blocks need the centres only, so they are computed on
        # the workers while the client factors K_mm.
        started.append(_DirectOperator(data, fraction, seed, C, None, dataclasses.replace(kern, low=low), n_threads,
                                       split_every, _exponents(scales)))

    data, kern, fraction, seed, C, rows, R, n_train, n_val, scales, factor = _setup(
        X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype, sample_weight,
        estimator, progress, before_factor=start_blocks if solver == "direct" and isinstance(X, da.Array) else None)
    exponents = _exponents(scales)
    k, q = R.shape[1], data.q
    kern = dataclasses.replace(kern, low=low)
    # gd's Lanczos iterates where the core's would take them (the mode decides "auto"'s
    # last condition): "direct" then costs tens of products, not max_iter.
    applies = _lanczos_applies(values["iterates"], method, data.dtype, max_iter)
    planned = _lanczos_products(max_iter, k) if applies else max_iter
    priced = _priced_products(planned, method, n_val > 0, stopping, patience)
    mode = _auto_mode(solver, method, n_train, k, priced, data, C.shape[0], split_every,
                      itemsize=4 if low else None)
    if mode == "direct":
        operator = started[0] if started else _DirectOperator(data, fraction, seed, C, None, kern, n_threads,
                                                              split_every, exponents)
        operator.set_factor(R)
        H, c = (_Reported(operator, progress, planned) if progress else operator), operator.rhs()
    else:
        H, c = _normal_equations(data, fraction, seed, C, factor, kern, n_threads, split_every, exponents, n_train)
        report("gram", 1, 1)
        if low:  # the core's gram solver keeps A^T A in float32 and widens it in each product
            H = H.astype(np.float32).astype(H.dtype)
    # As nytro.nytro_path: the tasks divide Y's columns by their powers of two (exact), the
    # path runs in those units, the results are scaled back.
    rule_tol = chk.tol_for_scaled_targets(tol, stopping, scales)
    rule_tol = None if rule_tol < 0 else rule_tol
    # The rounding of a product with H: float32's where K_i or A^T A is kept in float32 (as
    # the core's storage_epsilon): where the Krylov methods stop, gd's Lanczos certifies.
    krylov_eps = reference._krylov_eps(data.dtype, np.float32 if low else None)
    lam = 0.0
    if method == "hybrid":
        step = 0.0
        # hybrid_lambda: the lambda of the projected problems without a hold-out set (the
        # refit at a selected (t, lambda)); with one, the grid is searched as in memory. 0
        # takes the grid's first lambda, as the core does (its row allows 0).
        grid = None if not hybrid_lambda or n_val else np.array([float(hybrid_lambda)])
        coef, path, selected, stopped, lam, products = _hybrid(
            data, fraction, seed, C, R, H, c, kern, n_train, n_val, max_iter, stopping, rule_tol, window, patience,
            n_threads, split_every, scales, grid, krylov_eps, metric)
        products = H.products if mode == "direct" else products
    else:
        apply = H if mode == "direct" else (lambda b: _client_product(H, b))
        rule = chk.check_step_size(step_size)[0]
        bound = _kernel_bound(data, kern, fraction, seed) if rule == "paper" else 1.0
        lanczos, spent = None, 0
        if _by_lanczos(applies, values["iterates"], mode, k, low):
            # The step's Lanczos estimate of lambda_max in the bases' products, as the
            # core's LanczosGradient (the same estimate: start vector, tolerance).
            top = None if rule == "paper" else _top_eigenvalue_process(k, data.dtype)
            step = (lambda value: _step_from_top(step_size, method, value)) if top else 1.0 / (n_train * bound)
            lanczos, spent, step = _lanczos_gd(apply, c, step, max_iter, krylov_eps, top)
        else:
            step = _resolve_step(step_size, method, H, n_train * bound, k, data.dtype)
        if lanczos is not None:
            betas = iter(lanczos)
        else:
            # cg with a hold-out set ends where its Krylov space is invariant (t = rank at
            # the latest), as the core's path: later iterates repeat the last one.
            betas = (reference._cg_iterates(apply, c, max_iter, krylov_eps, until_invariant=True)
                     if method == "cg" and n_val else reference._iterates(apply, c, method, step, nu, max_iter))

        def path_errors(alphas):
            errors = (operator.holdout_errors(alphas, metric) if mode == "direct" else
                      _holdout_errors(data, fraction, seed, C, alphas, kern, n_threads, split_every, exponents, metric))
            return errors if metric == "error" else _pooled_rmse(errors, scales, n_val)

        watch = _StoppingWatch(stopping, rule_tol, window, patience, metric) if n_val else None
        coef, path, selected, stopped, formed = _run_path(betas, R, q, path_errors, watch, step, max_iter,
                                                          lambda done: report("validation", done, max_iter))
        # gram: one product with A^T A per iterate (or Lanczos vector), on the client;
        # direct: each a pass over the workers' blocks (the step's estimate included); the
        # products of a basis that fell short, then the steps
        products = H.products if mode == "direct" else (spent if lanczos is not None else spent + formed)
    coef, path = _unscaled(coef, path, scales, metric)
    result = PathResult(coef=coef[:, 0] if data.one_d else coef, validation_rmse=path, n_iter=selected,
                        iterations_run=stopped, step_size=step, rank=R.shape[1], solver=mode,
                        products=products, lambda_=lam)
    return DaskFit(result, C, rows, n_train, n_val)


def nkrls_path(X, y, sigma, *, n_centers=None, kernel="gaussian", matern_nu=1.5, centers=None,
               center_selection="uniform", lambdas=None, validation_fraction=0.2, seed=0, factor="pivoted",
               rank_tol=None, jitter=1e-10, solver="eigh", storage=None, n_threads=None, options=None, dtype=None,
               metric="rmse", sample_weight=None, split_every=None, estimator=None, progress=None) -> DaskFit:
    """Nystrom KRLS along a lambda grid on a Dask array X, with the split, centres and
    weights of :func:`nytro_path`: alpha(lambda) = R (A^T A + lambda n_train I)^+ A^T y
    from one eigendecomposition of A^T A (eigenvalues clipped at 0, as the core's "eigh";
    solver="cholesky": one Cholesky solve per lambda, as the core's),
    the hold-out errors of every lambda in one pass. progress: as :func:`nytro_path`'s
    ("split", "centres", the factor's stages, "gram", "validation"). The other parameters
    are those of ``nytro.nkrls_path`` (the rows of ``nytro.options.DASK_NKRLS``)."""
    values = _options(opt.DASK_NKRLS, options, locals())
    default_grid = lambdas is None
    lambdas = chk.check_lambdas(lambdas)
    if validation_fraction is None and len(lambdas) != 1:
        raise ValueError(f"without a hold-out set exactly one lambda is needed, got {len(lambdas)} in lambdas: pass "
                         "lambdas=[value], or a hold-out set to select among them")  # the core's message
    n_threads, metric = values["n_threads"], values["metric"]
    report = _reporter(progress)
    # storage="float32" changes a float64 computation only, as in memory.
    low = (chk.check_storage(values["storage"], chk.STORAGES) == "float32" and isinstance(X, da.Array)
           and chk.compute_dtype(dtype, np.empty(0, X.dtype)) == np.float64)
    data, kern, fraction, seed, C, rows, R, n_train, n_val, scales, factor = _setup(
        X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype, sample_weight,
        estimator, progress)
    exponents = _exponents(scales)
    if default_grid:  # scaled by the kernel's bound, as the in-memory grid (chk.kernel_bound)
        lambdas = (np.asarray(lambdas) * _kernel_bound(data, kern, fraction, seed)).tolist()
    kern = dataclasses.replace(kern, low=low)
    H, c = _normal_equations(data, fraction, seed, C, factor, kern, n_threads, split_every, exponents, n_train)
    report("gram", 1, 1)
    q = c.shape[1]
    alphas = R @ _shifted_solves(H, c, [lam * n_train for lam in lambdas], values["solver"], data.dtype)
    if n_val == 0:
        best, path = 0, np.zeros(0)
    else:
        errors = _holdout_errors(data, fraction, seed, C, alphas, kern, n_threads, split_every, exponents,
                                 metric)
        report("validation", 1, 1)
        path = errors if metric == "error" else _pooled_rmse(errors, scales, n_val)
        best = _best_lambda(path, lambdas, metric)
    coef, path = _unscaled(alphas[:, best * q:(best + 1) * q], path, scales, metric)
    result = TikhonovResult(coef=coef[:, 0] if data.one_d else coef, validation_rmse=path,
                            lambda_=float(lambdas[best]), selected=best, rank=R.shape[1])
    return DaskFit(result, C, rows, n_train, n_val, np.asarray(lambdas))


def _shifted_solves(H, c, shifts, solver, dtype):
    """(H + shift I)^-1 c for every shift, side by side (k x q L), as the core's Tikhonov
    solves: "eigh", one eigendecomposition of H, its eigenvalues clipped at 0 (so that the
    tiny end of a grid keeps pseudo-inverse semantics); "cholesky", one Cholesky
    factorisation per shift in dtype, falling back to the eigendecomposition for a shift
    whose factorisation fails or whose solution is not finite."""
    H, c = H.astype(dtype, copy=False), c.astype(dtype, copy=False)

    @functools.cache
    def eigen():
        w, V = np.linalg.eigh(H)
        return np.maximum(w.astype(np.float64), 0), V, V.T @ c

    M = np.empty_like(H) if solver == "cholesky" else None  # factored in place, shift after shift

    def solve(shift):
        if solver == "cholesky":
            np.copyto(M, H)
            M[np.diag_indices_from(M)] += dtype.type(shift)
            try:
                factor = scipy.linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
                solution = scipy.linalg.cho_solve(factor, c, check_finite=False)
                if np.all(np.isfinite(solution)):
                    return solution
            except np.linalg.LinAlgError:
                pass  # not positive definite: the eigendecomposition, as the core
        w, V, projected = eigen()
        return V @ (projected / (w + shift)[:, None]).astype(dtype)

    return np.hstack([solve(shift) for shift in shifts])


def _best_lambda(path, lambdas, metric) -> int:
    """The core's selection along the grid: the smallest finite value, a tie of error
    rates going to the larger lambda (the stronger regularisation), of RMSEs to the first."""
    best = -1
    for i, value in enumerate(path):
        if np.isfinite(value) and (best < 0 or value < path[best]
                                   or (metric == "error" and value == path[best] and lambdas[i] > lambdas[best])):
            best = i
    if best < 0:
        raise RuntimeError("the solution is not finite for any lambda of the grid (overflow)")
    return best


def predict(X, centers, coef, sigma, *, kernel="gaussian", matern_nu=1.5, n_threads=None):
    """kernel_matrix(X, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu) @ coef
    for a Dask array X chunked by rows: a Dask array, one ``nytro.kernel_predict`` per
    chunk. With a distributed client, centres and coef are scattered to the workers once,
    and the result is to be computed through that client."""
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise ValueError("X must be a 2-D dask.array.Array")
    centers, coef = np.asarray(centers), np.asarray(coef)
    if centers.ndim != 2:  # kernel_predict's error, before centers.shape[1] is read
        raise ValueError(f"centers must be a 2-D array (n_samples, n_features), got shape {centers.shape}")
    if X.shape[1] != centers.shape[1]:  # known before any chunk is read
        raise ValueError(f"X has {X.shape[1]} features but the centres have {centers.shape[1]}")
    chk.check_kernel(kernel, sigma, matern_nu, int(X.shape[1]))  # before any chunk is read
    kern = _Kernel(kernel, np.asarray(sigma, dtype=np.float64) if np.ndim(sigma) else sigma, matern_nu)
    X = X.rechunk({1: -1})
    dt = chk.compute_dtype(None, centers, coef)
    # Scattered, not embedded in the graph: a graph carrying m x d centres is sent whole
    # to the scheduler (Dask warns from a few MiB on).
    centers_b, coef_b = _broadcast(centers, coef)
    # meta given: Dask would otherwise call the block function on empty arrays to find it.
    if coef.ndim == 1:
        return X.map_blocks(_predict_block, centers_b, coef_b, kern, n_threads, drop_axis=1, meta=np.empty(0, dt))
    return X.map_blocks(_predict_block, centers_b, coef_b, kern, n_threads, chunks=(X.chunks[0], (coef.shape[1],)),
                        meta=np.empty((0, 0), dt))


def _predict_block(x, centers, coef, kern, n_threads):
    x = _dense(x)
    if x.shape[0] == 0:  # an empty chunk (fit takes them): no rows to predict, not an empty X
        return np.zeros((0,) + coef.shape[1:], chk.compute_dtype(None, centers, coef))
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        return kernel_predict(x, centers, coef, kern.sigma, kernel=kern.kernel, matern_nu=kern.matern_nu,
                              n_threads=threads)


# --------------------------------------------------------------- estimators' hook
def _label_part(y, w, start, stop, fraction, seed):
    """The chunk's labels as a classifier's fit checks them (its kinds, and scikit-learn's
    classification-target check), and per part of the split (training, hold-out) their
    distinct labels and counts; then the distinct labels of positive weight (None without
    weights)."""
    from sklearn.utils.multiclass import check_classification_targets
    from .estimators.classifiers import label_kinds
    y = np.asarray(y)
    kinds = label_kinds(y)
    if len(kinds) > 1:
        return kinds, None, None  # refused by the client, as in memory (they do not sort)
    check_classification_targets(y)
    held = holdout_mask(np.arange(start, stop), fraction, seed)
    parts = [np.unique(y[rows], return_counts=True) for rows in (~held, held)]
    positive = None if w is None else np.unique(y[np.asarray(w, dtype=np.float64) > 0])
    return kinds, parts, positive


def _coded_block(y, classes, dtype):
    from .estimators.classifiers import coded_labels
    Y = coded_labels(np.searchsorted(classes, np.asarray(y)), len(classes), dtype)
    return Y[:, 0] if len(classes) == 2 else Y


def _classifier_targets(X, y, sample_weight, fraction, seed, dtype):
    """(classes, Y): a classifier's labels y (a Dask or NumPy vector, one per row of X) as
    the +-1 coded Dask targets of nytro.dask's split (1-D for two classes, one column per
    class for more), after one pass over them: the in-memory fit's checks of the labels
    and of sample_weight (a class left alone with positive weight), and, the hash split
    not being stratified, each class on both sides of it (ValueError)."""
    from .estimators.classifiers import check_classes, check_label_kinds, plain_label
    n = int(X.shape[0])
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim in (1, 2) and len(y) == n:
            y = da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    if y.ndim == 2 and y.shape[1] == 1:  # as scikit-learn's check of a classifier's y
        import warnings
        from sklearn.exceptions import DataConversionWarning
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples, ), for example using ravel().", DataConversionWarning, stacklevel=4)
        y = y[:, 0]
    # Unknown sizes first: their shape, (nan,), would otherwise be reported as a wrong length.
    if isinstance(y, da.Array) and y.ndim == 1 and any(math.isnan(c) for c in y.chunks[0]):
        raise ValueError("y has unknown chunk sizes (nan): its rows cannot be matched with X's. "
                         "Call y.compute_chunk_sizes() first")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be a 1-D array of {n} labels, one per row of X, got shape {y.shape}")
    y = y.rechunk((X.chunks[0],))
    w = _as_dask_weights(sample_weight, X)
    offsets = np.concatenate([[0], np.cumsum(y.chunks[0])]).astype(np.int64)
    ws = [None] * len(offsets) if w is None else w.to_delayed(optimize_graph=False).ravel()
    parts = [dask.delayed(_label_part)(c, wc, int(offsets[b]), int(offsets[b + 1]), fraction, seed)
             for b, (c, wc) in enumerate(zip(y.to_delayed(optimize_graph=False).ravel(), ws))
             if offsets[b + 1] > offsets[b]]
    results = dask.compute(*parts, optimize_graph=False)
    check_label_kinds(set().union(*(kinds for kinds, _, _ in results)))
    classes = np.unique(np.concatenate([labels for _, chunk, _ in results for labels, _ in chunk]))
    check_classes(classes)
    counts = np.zeros((2, len(classes)), dtype=np.int64)
    for _, chunk, _ in results:
        for side, (labels, c) in enumerate(chunk):
            np.add.at(counts[side], np.searchsorted(classes, labels), c)
    if w is not None:
        kept = np.unique(np.concatenate([positive for _, _, positive in results]))
        if len(kept) == 1:
            raise ValueError(f"sample_weight is zero on every row outside class {plain_label(kept[0])!r}: a "
                             "classifier needs at least 2 classes of positive weight")
    for side, name in ((0, "training"), (1, "hold-out")):
        if side and fraction is None:
            continue
        missing = np.flatnonzero(counts[side] == 0)
        if missing.size:
            label = plain_label(classes[missing[0]])
            raise ValueError(
                f"class {label!r} has no row in the {name} part of nytro.dask's hold-out split (validation_fraction="
                f"{fraction}; {int(counts[1 - side][missing[0]])} rows in the other part): on Dask the split hashes "
                "the row index and is not stratified; give that class more rows, change random_state, or set "
                "validation_fraction=None")
    Y = y.map_blocks(_coded_block, classes, dtype, dtype=dtype, meta=np.empty((0,) * (1 if len(classes) == 2 else 2),
                                                                               dtype),
                     **({} if len(classes) == 2 else dict(new_axis=1, chunks=(y.chunks[0], (len(classes),)))))
    return classes, Y


def fit_estimator(est, X, y, sample_weight=None):
    """Fit a NytroRegressor or NystromKRLSRegressor, or their classifier, on Dask arrays
    (their fit's hook): their kernel, centres (centers, center_selection), options and
    sample_weight, with nytro.dask's seeded split; refit as in memory (all rows, the
    selected t and lambda, the centres drawn from the training part). A classifier's
    labels are checked and coded by _classifier_targets, and its selection metric taken."""
    from .estimators import NystromKRLSRegressor, NytroRegressor
    from .estimators.classifiers import KernelClassifierMixin
    from sklearn.utils import check_random_state
    name = type(est).__name__
    if not isinstance(est, (NytroRegressor, NystromKRLSRegressor)):
        raise NotImplementedError(f"{name} does not take Dask arrays; NytroRegressor, NystromKRLSRegressor and "
                                  "their classifiers do")
    _check_dask_x(X, name)  # before the labels' and the intercept's passes read X's chunks
    rng = check_random_state(est.random_state)
    seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
    common = dict(n_centers=est.n_centers, kernel=est.kernel, matern_nu=est.matern_nu, centers=est.centers,
                  center_selection=est.center_selection, validation_fraction=est.validation_fraction, seed=seed,
                  options=est._options(), dtype=est.dtype, sample_weight=sample_weight, estimator=name,
                  progress=est._progress())
    if isinstance(est, KernelClassifierMixin):
        metric = est._selection_metric()
        if sample_weight is not None and metric == "error":
            # In memory the error rate counts each hold-out row once, weights or not; the
            # Dask passes weigh the hold-out rows with the training rows' weights.
            raise NotImplementedError(f"{name} on Dask arrays takes sample_weight with selection='rmse' only")
        fraction = _check_fraction(est.validation_fraction)
        dt = chk.compute_dtype(est.dtype, np.empty(0, X.dtype))
        est.classes_, y = _classifier_targets(X, y, sample_weight, fraction, _check_seed(seed), dt)
        common["metric"] = metric
    intercept = np.zeros(int(y.shape[1]) if np.ndim(y) == 2 else 1)  # any other y: refused by name in the fit
    if getattr(est, "fit_intercept", False):  # the regressors' (a classifier fits its codes)
        y, intercept = _less_intercept(X, y, sample_weight)
    if isinstance(est, NytroRegressor):
        shared = dict(method=est.method, nu=est.nu, step_size=est.step_size)
        fit = nytro_path(X, y, est.sigma, max_iter=est.max_iter, stopping=est.stopping, tol=est.tol,
                         window=est.window, n_iter_no_change=est.n_iter_no_change, **shared, **common)
        est.solver_ = fit.result.solver
        coef = est._take_path(fit.result)
        if est._refits(fit.n_val > 0):  # all rows, the selected t (and lambda), no hold-out set
            again = nytro_path(X, y, est.sigma, max_iter=est.n_iter_, hybrid_lambda=est.lambda_, **shared,
                               **{**common, "centers": fit.centers, "validation_fraction": None})
            est.step_size_, est.solver_, coef = again.result.step_size, again.result.solver, again.result.coef
    else:
        fit = nkrls_path(X, y, est.sigma, lambdas=est.lambdas, **common)
        est.lambdas_ = fit.lambdas
        est.lambda_ = fit.result.lambda_
        est.validation_rmse_ = fit.result.validation_rmse
        coef = fit.result.coef
        if est._refits(fit.n_val > 0):  # all rows, the selected lambda, no hold-out set
            coef = nkrls_path(X, y, est.sigma, lambdas=[est.lambda_],
                              **{**common, "centers": fit.centers, "validation_fraction": None}).result.coef
    est.centers_ = fit.centers
    est.rank_ = fit.result.rank
    est.n_features_in_ = int(X.shape[1])
    est.coef_ = coef
    est._keep_intercept(intercept, np.ndim(y) == 1)
    return est


def _less_intercept(X, y, sample_weight):
    """(y less its weighted column means, the means): fit_intercept's centring, as the
    estimators' in memory, in float64, from one pass over y and the weights before the
    fit's own. Where the means are not finite (y or the weights refused later, by name)
    y is returned as it is, with zero means."""
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
            return y, np.zeros(1)  # refused by name with the fit's other checks of y
        y = da.from_array(y, chunks=(X.chunks[0],) + ((-1,) if y.ndim == 2 else ()))
    Y = y.astype(np.float64)
    w = _as_dask_weights(sample_weight, X)
    if w is None:
        total, weighted = Y.shape[0], Y.sum(axis=0)
    else:
        w = w.astype(np.float64)
        # Relative to the largest, as in memory (tiny weights' products y w lose digits as
        # subnormals); all zero (refused later) stays zero, with no warning from a worker.
        w = w / da.maximum(w.max(), np.finfo(np.float64).tiny)
        total, weighted = w.sum(), (Y * (w[:, None] if Y.ndim == 2 else w)).sum(axis=0)
    total, weighted = dask.compute(total, weighted)
    with np.errstate(all="ignore"):
        means = np.atleast_1d(np.asarray(weighted, dtype=np.float64) / float(total))
    if not (np.isfinite(means).all() and float(total) > 0):
        return y, np.zeros(means.size)
    return Y - (means[0] if Y.ndim == 1 else means), means


def _with_parameters(doc: str, family, options_class: str) -> str:
    """`doc` followed by a Parameters section of every row the function takes (the Dask
    rows say what is refused, so the options are listed in full, not as shortcuts)."""
    return f"""{doc.rstrip()}

    Parameters
    ----------
    options : {options_class} or None, default=None
        The options object of the in-memory function (see :class:`~nytro.{options_class}`);
        its fields are the option rows below, which are also keywords; a keyword and a field
        both set to different values are refused.
{opt.parameters_doc(family.params + opt.DASK_ONLY)}
    """


# The functions' Parameters sections, generated from the rows they take (nytro.options).
nytro_path.__doc__ = _with_parameters(nytro_path.__doc__, opt.DASK_NYTRO, "NytroOptions")
nkrls_path.__doc__ = _with_parameters(nkrls_path.__doc__, opt.DASK_NKRLS, "TikhonovOptions")
