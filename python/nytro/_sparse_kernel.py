"""The built-in kernels on sparse rows: k(X, Z) for X a scipy.sparse CSR matrix and Z
dense centres, without densifying X, and the per-feature statistics sigma="auto" reads.

The core forms its kernels on dense rows less the centres' mean (reference.kernel_matrix):
a sparse matrix cannot be shifted without filling it in. Here the squared distances of
the bandwidth-scaled rows come from the norms and the sparse-dense products,

    ||x - z||^2 = ||x||^2 + ||z||^2 - 2 x.z,

whose rounding is about eps (||x||^2 + ||z||^2): harmless where the distance is not small
against the norms, garbage where it is (rows far from the origin, a row equal to a centre).
Every pair whose computed distance is below REFINE times its norms' sum (or not finite) is
computed again as sums of non-negative terms that cancel nothing,

    ||x - z||^2 = sum_{j in S} (x_j - z_j)^2 + sum_{j not in S, z_j != 0} z_j^2,

S the columns x stores: the first sum on the row's stored entries against the dense
centre, the second over the centre's nonzeros outside S. The pairs refined are those
near each other on the scale of their norms: a row and its duplicates or the centre
drawn from it, or every pair of data far from the origin (where the cost is then that of
the dense kernel on the stored columns). Distances are then accurate to a few eps
relative, where the dense kernel's are to eps times the data's spread.

The linear kernel is x.z itself. The sparse fits of nytro._sparse call block(); the
memory is the block's, O(b m) for b rows and m centres, beside X's O(nnz).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse

from . import _checks as chk

# A pair is computed again where its distance from the norms is below REFINE times the
# norms' sum: the norms' rounding (a few eps of that sum) is then at most a few eps / REFINE
# relative to the distances kept, about 1e-12.
REFINE = 2.0 ** -10


def is_sparse(X) -> bool:
    return scipy.sparse.issparse(X)


class Centres:
    """Dense centres Z prepared for the sparse kernel blocks: the bandwidths' inverses
    (distance kernels), the scaled squared norms, and the same rows as a CSR matrix for
    the products with sparse rows and the nonzeros' sums of the refinement. Z is kept
    unscaled: the refinement subtracts before it scales, so that rows far from the origin
    lose no digits to the division."""

    def __init__(self, Z, kernel, sigma, matern_nu):
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        self.kernel, self.matern_nu, self.m = kernel, matern_nu, Z.shape[0]
        self.Z, self.csr = Z, scipy.sparse.csr_matrix(Z)
        if kernel == "linear":
            self.inverse = None
            return
        spec = chk.check_kernel(kernel, sigma, matern_nu, Z.shape[1])
        self.inverse = 1.0 / np.broadcast_to(np.asarray(spec.sigma, dtype=np.float64), (Z.shape[1],))
        self.nu = 0.5 if kernel == "laplacian" else (spec.nu if kernel == "matern" else None)
        self.norms = _row_sums(self.csr, (self.csr.data * self.inverse[self.csr.indices]) ** 2)


def prepared(Z, kernel, sigma, matern_nu) -> Centres:
    """Z as a Centres (unchanged where it already is one)."""
    return Z if isinstance(Z, Centres) else Centres(Z, kernel, sigma, matern_nu)


def canonical_csr(X):
    """X as a CSR matrix with sorted, summed indices (the refinement reads each row's
    stored columns as a set): a copy where it is not one already, O(nnz)."""
    X = X.tocsr() if X.format != "csr" else X
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _row_sums(X, values) -> np.ndarray:
    """The sum of `values` (one per stored entry of CSR X) over each row."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    return np.bincount(rows, weights=values, minlength=X.shape[0])


def block(X, Z, *, kernel, sigma, matern_nu) -> np.ndarray:
    """k(X, Z) as a float64 (X.shape[0], m) array: X sparse (any scipy.sparse format; CSR
    read as it is), Z dense centres or a Centres. The kernel as nytro.kernel_matrix
    defines it (reference.kernel_matrix): gaussian, laplacian (the L2 distance),
    matern (nu 0.5, 1.5, 2.5) and linear, sigma a bandwidth or one per feature (ARD)."""
    C = prepared(Z, kernel, sigma, matern_nu)
    X = canonical_csr(X)
    data = X.data.astype(np.float64)
    if kernel == "linear":
        return (scipy.sparse.csr_matrix((data, X.indices, X.indptr), shape=X.shape) @ C.csr.T).toarray()
    inverse = C.inverse[X.indices]
    # (x / sigma).(z / sigma) as x / sigma^2 against z: the centres stay unscaled.
    weighted = scipy.sparse.csr_matrix((data * inverse * inverse, X.indices, X.indptr), shape=X.shape)
    products = (weighted @ C.csr.T).toarray()
    norms = _row_sums(X, (data * inverse) ** 2)
    scale = norms[:, None] + C.norms[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        squared = scale - 2.0 * products
        doubtful = ~(squared > REFINE * scale)  # NaN (inf - inf) too
    for i in np.flatnonzero(doubtful.any(axis=1)):
        near = np.flatnonzero(doubtful[i])
        squared[i, near] = _exact_squares(X, data, i, C, near)
    squared = np.maximum(squared, 0.0)
    if kernel == "gaussian":
        return np.exp(-squared / 2)
    u = np.sqrt(2 * C.nu) * np.sqrt(squared)
    polynomial = {0.5: 1.0, 1.5: 1.0 + u, 2.5: 1.0 + u + u * u / 3}[C.nu]
    return polynomial * np.exp(-u)


def _exact_squares(X, data, i, C: Centres, near) -> np.ndarray:
    """||(x_i - z_j) / sigma||^2 for the centres `near`, as sums of non-negative terms (see
    the module's docstring): the row's stored entries against the dense centres, each
    difference taken before it is scaled, and each centre's nonzeros outside the row's
    columns."""
    start, stop = X.indptr[i], X.indptr[i + 1]
    columns, values = X.indices[start:stop], data[start:stop]
    with np.errstate(over="ignore"):
        stored = (((C.Z[np.ix_(near, columns)] - values[None, :]) * C.inverse[columns]) ** 2).sum(axis=1)
        sub = C.csr[near]
        outside = ~np.isin(sub.indices, columns, assume_unique=True)
        rest = _row_sums(sub, np.where(outside, sub.data * C.inverse[sub.indices], 0.0) ** 2)
    return stored + rest


def row_squares(X) -> np.ndarray:
    """||x||^2 of each row of sparse X, float64."""
    X = canonical_csr(X)
    return _row_sums(X, X.data.astype(np.float64) ** 2)


def feature_deviations(X, weights=None):
    """(deviations, magnitudes) of nytro._memory.feature_deviations for sparse X, without
    densifying it: each column's (weighted) standard deviation from its stored entries
    less the mean, plus the mean's square for each row that stores nothing there, and
    the largest magnitude over the rows of positive weight."""
    X = canonical_csr(X)
    n, d = X.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / w.max() if weights is not None else w  # as the dense one: tiny weights' products would be subnormal
    total = float(w.sum())
    data = X.data.astype(np.float64)
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    mean = np.bincount(X.indices, weights=w[rows] * data, minlength=d) / total
    spread = np.bincount(X.indices, weights=w[rows] * (data - mean[X.indices]) ** 2, minlength=d)
    stored = np.bincount(X.indices, minlength=d)
    # The weight of the rows that store nothing in a column: exactly 0 where every row stores one.
    absent = np.where(stored == n, 0.0, total - np.bincount(X.indices, weights=w[rows], minlength=d))
    deviations = np.sqrt(np.maximum(spread + absent * mean * mean, 0.0) / total)
    kept = X if weights is None else X[np.flatnonzero(w > 0)]
    magnitudes = np.asarray(abs(kept).max(axis=0).todense(), dtype=np.float64).ravel() if kept.shape[0] else \
        np.zeros(d)
    return deviations, magnitudes
