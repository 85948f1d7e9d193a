"""The rows of nytro.options that the Dask functions take (nytro.dask.nytro_path and
nkrls_path, which the estimators' fit on Dask arrays calls): the rows of NYTRO and NKRLS
under the same names and defaults, and the same options objects, with the rows whose
values Dask does not take (yet) replaced: the same name, default and ValueError for a bad
value, and a NotImplementedError naming what is supported for a value that is valid in
memory. SPLIT_EVERY is Dask's alone (not a field of the options objects). Apart from
nytro.options so that each module holds one role; it imports no Dask."""
from __future__ import annotations

import dataclasses

from . import _checks as chk
from .options import (ITERATES, METRIC, NKRLS, NYTRO, NYTRO_SOLVER, NYTRO_STORAGE, STORAGE, TIKHONOV_SOLVER, Family,
                      Param)


def _dask_refusing(row: Param, supported, doc: str, name_of=lambda value: value) -> Param:
    """`row` on Dask arrays: its check, then values whose name_of(value) is not in
    `supported` refused."""
    def to_core(value):
        fields = row.to_core(value)
        named = name_of(value)
        if not any(named is s or (named == s and s is not None) for s in supported):
            names = ", ".join(repr(s) for s in supported)
            raise NotImplementedError(f"{row.name}={value!r} is not supported on Dask arrays yet; supported: {names}")
        return fields
    return dataclasses.replace(row, to_core=to_core, doc=doc)


DASK_SOLVER = _dask_refusing(NYTRO_SOLVER, ("gram", "direct", "auto"), """\
solver : {"auto", "direct", "gram"}
    How products with A^T A are taken on Dask arrays (the same iterates up to rounding):
    "gram" forms A^T A in one pass over the chunks (each chunk's share summed up Dask's
    tree reduction) and iterates on the client in m dimensions; "direct" computes each
    chunk's kernel K_i = k(X_i, C) once, keeps it on the worker that computed it, and
    takes every product as a map over the chunks and a tree sum of m-vectors (every
    method; "cg" and "hybrid" take one per Lanczos step, for all of y's columns at once);
    "auto" picks "direct" when the path's products (max_iter; for gd's Lanczos iterates,
    iterates "lanczos", or "auto" in float64, 8 + 4 max_iter^(1/4) at most; for "cg"
    ending n_iter_no_change iterations after its best on the hold-out set, 100 +
    n_iter_no_change at most; as the core's cost model counts them) cost less than
    forming A^T A, the method is not "hybrid", a
    distributed client runs and the kernel blocks (in float32 with storage="float32") fit
    in half of each worker's memory_limit, and "gram" otherwise. The costs are in flops, a
    product 4 n k and A^T A 2 n k^2 + k^3 (n training rows, rank k), and every round trip
    (one per product, one for A^T A) adds its seconds times the workers' flop/s: the
    seconds of a product without work (the workers holding the data's chunks asked for
    their sums, as a product asks them; the best of three, measured once per client and
    number of chunks), the flop/s the client's ``nytro.machine_rates`` per thread times
    the workers' threads. A round trip weighs as much as a pass over millions of kernel
    values, whatever n: "direct"
    needs its products below k / 2 and n large enough for A^T A to outweigh their round
    trips. "spectral" is refused (NotImplementedError).""")
DASK_NYTRO_STORAGE = _dask_refusing(NYTRO_STORAGE, (None, "float32"), """\
storage : {None, "float32"}
    "float32" with float64 compute, as the in-memory core: each kernel block from the rows
    and centres rounded to float32, computed in float32, and the hold-out kernel too; in
    "direct" mode the workers keep K_i so (half their memory) and every product widens it
    to float64; in "gram" mode ("auto" too) each chunk forms A_i = K_i R in float32 (R
    rounded to float32) and A_i^T A_i, A_i^T y from float32 products summed in float64,
    and the client keeps A^T A rounded to float32 (the core's stored H), its products
    computed in float64. The Krylov methods ("cg", "hybrid", gd's Lanczos iterates) then
    stop and certify at float32's rounding, as the core does. "float16":
    NotImplementedError. Float32 data or dtype="float32" compute in float32 throughout.""",
                                    lambda value: chk.float_dtype_name("storage", value, chk.NYTRO_STORAGES))
DASK_ITERATES = dataclasses.replace(ITERATES, doc="""\
iterates : {"auto", "lanczos", "stepwise"}
    How "gd"'s iterates are computed on Dask arrays (on the client, in m dimensions), as
    the in-memory core does: "lanczos" takes them from Lanczos bases of the Krylov spaces
    (all of y's columns in one product per vector, the step's Lanczos estimate in the same
    products), each certified within 64 machine epsilons of the stepwise iterate by the
    core's bound (64 float32 epsilons with storage="float32"), with at most the core's
    max(32, max_iter / 2) vectors (max_iter, 512 at most; where the bound is not met by
    then, the path is stepped instead); in
    "direct" mode, tens of round trips instead of max_iter. Every iterate up to max_iter
    is certified at once, then validated in one pass over the hold-out rows (whose kernel
    the workers do not keep), where the core, under a rule that may stop early
    ("relative", "window", n_iter_no_change), certifies 64 at a time: the same iterates,
    a few more products. "stepwise" takes one product
    per iteration; "auto" is "lanczos" in float64 compute (where the core's "auto" is: in
    "gram" mode from a rank k above 4, 8 with storage="float32", whose products cost more
    than the basis' bookkeeping) and "stepwise" in float32 compute.""")
DASK_METRIC = dataclasses.replace(METRIC, doc="""\
metric : {"rmse", "error"}
    What the hold-out selection minimises, as in memory: the RMSE, or the fraction of
    misclassified hold-out rows for targets coding classes as +-1 (the sign of one column,
    or the largest of one-vs-all columns), each row weighted by its sample weight
    (sum_v w_v [row v wrong] / sum_v w_v); ties go to the smaller t and to the larger
    lambda. Each chunk counts its own hold-out rows' errors (and weights) for every
    iterate (method "hybrid": every (t, lambda), as the core), summed by the tree
    reduction.""")
DASK_TIKHONOV_SOLVER = dataclasses.replace(TIKHONOV_SOLVER, doc="""\
solver : {"eigh", "cholesky"}
    A^T A is formed in one pass over the chunks, then solved on the client as in memory:
    "eigh", one eigendecomposition serves every lambda; "cholesky", one Cholesky solve per
    lambda (the eigendecomposition where a factorisation fails).""")
DASK_STORAGE = dataclasses.replace(STORAGE, doc="""\
storage : {None, "float32"}
    "float32" with float64 compute, as in memory: each chunk's kernel blocks, A_i = K_i R
    and their products in float32 (from the rows, centres and R rounded to float32),
    summed in float64; the hold-out kernel in float32; the eigendecomposition in float64.
    Float32 data or dtype="float32" compute in float32 throughout.""")


def _split_every(value) -> dict:
    if value is not None:
        chk.check_int("split_every", value, 2)
    return {}  # a Dask reduction's fan-in: no C++ field


SPLIT_EVERY = Param("split_every", None, _split_every, """\
split_every : int or None
    Fan-in of Dask's tree reductions of the chunks' partial sums (>= 2; None: Dask's
    default, and 8 for "hybrid"'s tree of QR factorisations). It changes the order of the
    sums (rounding) and the memory of a tree node, not the model.""", engineering=True)


def _on_dask(family: Family, rows) -> Family:
    by_name = {row.name: row for row in rows}
    return Family(family.core, tuple(by_name.get(p.name, p) for p in family.params), family.differences)


DASK_NYTRO = _on_dask(NYTRO, (DASK_SOLVER, DASK_NYTRO_STORAGE, DASK_ITERATES, DASK_METRIC))
DASK_NKRLS = _on_dask(NKRLS, (DASK_TIKHONOV_SOLVER, DASK_STORAGE, DASK_METRIC))
DASK_ONLY = (SPLIT_EVERY,)

