"""The Nystrom centres: given (points or rows), drawn uniformly, or by leverage scores, and
gathered from the chunks that hold them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import dask

from .. import _checks as chk
from .._api import sample_centers
from ..centers import CENTER_SELECTIONS, check_centers
from ._data import _blocks, _chunk_rows, _Data, _dense, _Kernel, holdout_mask


def _pick_rows(X, start, stop, fraction, seed, ordinals):
    """Global row indices and rows of the chunk's training rows number `ordinals` (in the
    chunk's training order)."""
    train = np.flatnonzero(~holdout_mask(np.arange(start, stop), fraction, seed))[ordinals]
    return train + start, _dense(X)[train]


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
    from .. import centers as lev
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
