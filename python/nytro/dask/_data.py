"""The inputs as the passes read them: the Dask arrays and their checks, each chunk's
rows (split by nytro._holdout's hash), the sample weights and the targets' scales."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse

import dask
import dask.array as da

from .. import _checks as chk
from .._api import kernel_matrix
from .._holdout import _check_fraction, _check_seed, holdout_mask  # noqa: F401 (names of this package)



# Kernel rows per block inside a chunk: about 32 MiB of float64 kernel, the largest block
# of the core's streamed gram solver, so a chunk of any size costs O(block x m) memory on a
# worker.
_BLOCK_ELEMENTS = 1 << 22


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


def _dense(X):
    """A chunk of X as a NumPy array, where its rows are taken by index; a scipy.sparse
    chunk refused by name (TypeError), not read as a 0-d array of one object: sparse X is
    fitted in memory (nytro._sparse), not yet on Dask."""
    if scipy.sparse.issparse(X):
        raise TypeError("X: Dask arrays with scipy.sparse chunks are not supported yet; fit sparse X in memory "
                        "(a scipy.sparse matrix given to fit), or give dense chunks")
    return np.asarray(X)
