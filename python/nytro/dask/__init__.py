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
3. the hold-out errors: the path (gd, nu, cg or hybrid, run by the core's path engine,
   nytro._core.operator_path, over these products; or NKRLS's lambda grid through one
   eigendecomposition of A^T A) is computed on the client in m dimensions; the coefficients
   alpha_t = R beta_t are sent alike, an m x L block of L iterates at a time (the engine's
   chunk of iterates per validation), and each chunk's hold-out rows give the squared errors of
   the predictions k(X_val_i, C) alpha_t, formed explicitly, summed over rows by the same
   tree reduction (metric="error": the weights of the rows each alpha_t misclassifies, and
   of all of them); the stopping rule reads each block's errors before the next block is
   iterated, so a path that stops (n_iter_no_change, "relative", "window") forms and holds
   only the iterates up to its stop and one block past it, whatever max_iter. Method
   "hybrid" (the engine's, on the client) grows its Lanczos bases V to the end; then each
   chunk's hold-out rows give the triangular factor of [k(X_val_i, C) R V, y_val_i],
   combined up a tree of QR factorisations (TSQR), from which the engine reads the
   errors of every (t, lambda) (a residual plus ||g - S z||^2, sums of squares, no
   normal equations); with metric="error" its coefficient sets at every (t, lambda) are
   validated like any other path's, a stretch of t per pass.

The hold-out split needs no shuffle: row i (its global index) is held out when a 64-bit
hash of (i, seed) falls below validation_fraction (see :func:`holdout_mask`). The number
of hold-out rows is therefore binomial around validation_fraction * n, not its rounding,
and the split differs from the in-memory estimators' permutation.

The "direct" mode (solver="direct", or "auto" by the cost model of the solver row,
``nytro._dask_options.DASK_SOLVER``, which charges each product's round trip to the scheduler)
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

The parameters are the rows of ``nytro.options`` as ``nytro._dask_options`` replaces
them (DASK_NYTRO, DASK_NKRLS): the in-memory functions' names, defaults and options
objects, with the values not taken here refused.

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

The estimators NytroRegressor and NystromKRLSRegressor, and their classifiers, fit Dask
arrays through this package's backend (DaskBackend, nytro._backends' protocol, registered
on import): their fit's flow is theirs, its steps over the chunks are these passes. For
the classifiers one pass over the labels checks them and counts each class on both sides
of the split (not stratified on Dask: a class missing from one side is refused), and the
±1 coding is made chunk by chunk.

Not done yet (issue 28): storage="float16" (the computation's dtype may be float32:
dtype=, or float32 data).
"""
from .._backends import register
from ._data import holdout_mask
from ._estimators import DASK
from ._fit import DaskFit, nkrls_path, nytro_path, predict

__all__ = ["DaskFit", "holdout_mask", "nytro_path", "nkrls_path", "predict"]

register("dask", DASK)
