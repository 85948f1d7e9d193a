"""What the paths on the client take from the chunks: hybrid's hold-out images, and the
core's price of a path, which the cost model of solver="auto" reads. The paths
themselves run on the core's path engine (nytro._engine.engine_path, the in-memory
fits' own: step, stopping rule, certified Lanczos iterates, Krylov bases, hybrid's
lambda grid), fed Dask's products and hold-out errors."""
from __future__ import annotations

import numpy as np

from .. import _dask_options as dopt
from .. import options as opt
from ._cluster import _broadcast, _chunk_tasks
from ._data import _exponents
from ._passes import _images_part, _tree_r


def _expected_path_length(values: dict, dtype, k: int, validated: bool) -> dict:
    """The core's price of the path of `values` (DASK_NYTRO's rows) before it runs, for
    an H of dimension k (nytro._core.expected_path_length): "products" and "iterations"
    that solver="auto" prices, and "planned", the most products it can take (max_iter,
    or gd's Lanczos count where its iterates come from a Lanczos basis)."""
    from .. import _core
    core = opt.core_options(dopt.DASK_NYTRO, values)
    return getattr(_core, f"expected_path_length_{np.dtype(dtype).name}")(options=core, k=k, validated=validated)


def _image_factors(data, fraction, seed, C, kern, n_threads, split_every, scales):
    """hybrid's hold-out images as the core's engine reads them from a holder of rows
    elsewhere (HoldOut::image_factors): factors(bases) -> for each output j, the R factor
    of [S k(X_val, C) B_j, S y_j] ((k_j + 1) x (k_j + 1), S the rows' weight scales),
    times the square root of column j's weight in the pooled RMSE, by one pass over the
    hold-out rows (a TSQR over the chunks)."""
    weights = scales.weights()

    def factors(bases):
        sizes = [B.shape[1] for B in bases]
        C_b, bases_b = _broadcast(C, np.hstack(bases))
        parts = _chunk_tasks(data, _images_part, fraction, seed, C_b, bases_b, sizes, kern, data.dtype,
                             data.estimator, n_threads, _exponents(scales))
        padded = _tree_r(parts, split_every)
        return [np.ascontiguousarray(padded[j][:size + 1, :size + 1] * (np.sqrt(weights[j]) if weights else 1.0))
                for j, size in enumerate(sizes)]

    return factors
