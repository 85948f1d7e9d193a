"""The paths on the client, in m dimensions: every method (gd, nu, cg, hybrid) runs on
the core's path engine (nytro._core.operator_path, the in-memory fits' own: step,
stopping rule, certified Lanczos iterates, Krylov bases, hybrid's lambda grid), fed
Dask's products and hold-out errors; and the core's price of a path, which the cost
model of solver="auto" reads."""
from __future__ import annotations

import numpy as np

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
    core = opt.core_options(opt.DASK_NYTRO, values)
    return getattr(_core, f"expected_path_length_{np.dtype(dtype).name}")(options=core, k=k, validated=validated)


def _block_limit(m, q) -> int:
    """The most iterates validated in one pass: their m x q coefficients within 32 MiB of
    float64 (the client's copy and the hold-out rows' predictions of a chunk), 4096 at most."""
    return max(1, min(4096, (32 << 20) // (8 * max(1, m * q))))


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


def _engine_path(apply, c, R, holdout, values, *, n_train, kernel_bound, iteration_bytes, storage_epsilon, tol,
                 holdout_bytes, report, image_factors=None, n_val=0):
    """Every method (gd, nu, cg, hybrid) by the core's path engine
    (nytro._core.operator_path), the in-memory fits' own: its step, stopping rule, gd's
    certified Lanczos iterates, the Krylov bases of cg and hybrid and hybrid's lambda grid
    (kernel_bound times the paper's), over Dask's operators. apply(B) = H B on the client
    (the gram mode's A^T A) or a pass over the workers' blocks (direct); holdout(alphas)
    the hold-out values of the m x (L q) coefficient sets alphas (None without a hold-out
    set), a pass over the hold-out rows per call, which the engine makes once per chunk of
    iterates (holdout_bytes: one call's cost, as the in-memory streamed hold-out kernel
    counts it); image_factors (hybrid with the RMSE, _image_factors): the whole path's
    hold-out images from one pass, over n_val rows. values: the family's parameters
    (DASK_NYTRO's rows); tol: the rule's, for the scaled targets. Returns the core's path
    dict (coef m x q in the targets' scaled units)."""
    from .. import _core
    dtype = c.dtype
    core = opt.core_options(opt.DASK_NYTRO, values)
    core.tol = tol
    m, q = R.shape[0], c.shape[1]
    done = [0]

    def applied(B):
        return np.ascontiguousarray(apply(B), dtype=dtype)

    def validated(alphas, q):
        if done[0]:  # the sets validated before this call were all read by the rule: the path went on
            report("validation", done[0], values["max_iter"])
        done[0] += alphas.shape[1] // q
        return np.asarray(holdout(alphas), dtype=np.float64).tolist()

    # Each validation is a pass over the hold-out rows: a path that runs to max_iter
    # validates as many iterates at once as the block's memory allows; one whose rule can
    # stop, at most a few times what the rule needs before it can (patience or window),
    # since the engine iterates a whole chunk before reading its errors (in "direct" mode
    # each iterate a pass over the workers' blocks).
    reach = core.patience if values["stopping"] == "best" else core.window
    most = _block_limit(m, q) if not reach else min(_block_limit(m, q), max(64, 4 * reach))
    raw = getattr(_core, f"operator_path_{np.dtype(dtype).name}")(
        apply=applied, rhs=np.ascontiguousarray(c, dtype=dtype), lift=np.ascontiguousarray(R, dtype=dtype),
        holdout=None if holdout is None else validated, holdout_bytes=holdout_bytes, holdout_most=most,
        holdout_factors=image_factors if holdout is not None else None, holdout_rows=float(n_val),
        iteration_bytes=iteration_bytes, storage_epsilon=storage_epsilon, n=n_train, kernel_bound=kernel_bound,
        options=core)
    if holdout is not None:
        report("validation", raw["iterations_run"], values["max_iter"])
    return raw
