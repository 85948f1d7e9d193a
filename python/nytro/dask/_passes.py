"""The distributed products: each chunk's share of the normal equations (gram mode), the
kept kernel blocks and their products (direct mode, with its worker-loss handling), and
the hold-out errors and images of coefficient blocks."""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import scipy.linalg

import dask

from .._api import _block_normal_equations, _block_normal_product
from .._labels import class_index
from ._cluster import (_add, _broadcast, _chunk_tasks, _client, _client_product, _CORE_LOCK, _held_sum, _homes,
                       _Missing, _pinned, _placement, _task_threads, _tree_sum, _WORKER_WAIT, _WorkerLost)
from ._data import _blocks, _chunk_rows, _Factor, _row_blocks


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
    misclassifies (class_index of the predictions against the targets'), then the
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
                truth = class_index(Y[r0:r1])
                for i in range(L):
                    missed = class_index(predictions[:, i * q:(i + 1) * q]) != truth
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
