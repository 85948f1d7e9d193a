"""The estimators' backend for sparse X (scipy.sparse matrices and arrays): NytroRegressor
and NytroClassifier fitted without densifying X.

The split, the targets, the intercept and the classifiers' coding are the in-memory
backend's (the rows of a CSR matrix are taken by index as an array's); the centres are
drawn as in memory, by the same seed, and kept dense (m rows of X, densified); sigma="auto"
reads the per-feature spreads from X's stored entries (nytro._sparse_kernel); NYTRO's path
comes from partial_fit's sums (nytro._batches) over the split's own rows, whose kernel
blocks are the sparse ones of nytro._sparse_kernel; predict is by blocks. The memory is
X's O(nnz), the dense centres' O(m d) and a block's O(b m), never O(n d).
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from . import _checks as chk
from ._callable import UserKernelBackend
from ._memory import Rows, capped_n_centers
from ._sparse_kernel import block, canonical_csr, feature_deviations, prepared
from ._api import sample_centers
from ._user_kernel import rows_per_block
from .centers import check_centers

# The formats taken as they are; any other scipy.sparse format is converted to CSR
# (scikit-learn's validation), O(nnz).
FORMATS = ("csr", "csc")


class SparseBackend(UserKernelBackend):
    """The estimators' steps on sparse X in memory: see the module's docstring. NYTRO's
    path is the callable kernel's (nytro._callable: partial_fit's sums over the split's
    parts), whose blocks nytro._batches forms by nytro._sparse_kernel for sparse rows."""

    arrays = "sparse X (scipy.sparse matrices)"
    paths = frozenset({"nytro"})
    screens_bandwidth = True
    where = "on sparse X (scipy.sparse matrices)"  # the refusals of options (UserKernelBackend.check_options)
    # Estimators whose paths are not in `paths` refuse sparse X as scikit-learn's
    # validation does for dense-only estimators: a TypeError that says "sparse".
    refusal = TypeError

    def start(self, estimator, X, y, sample_weight, rng, *, validation_fraction, dtype, labels):
        dtype = chk.compute_dtype(dtype, np.empty(0, dtype=X.dtype))  # float32 X computes in float32, as dense
        if labels:
            if y is None:
                raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None")
            checked, y = validate_data(estimator, X, y, dtype=dtype, accept_sparse=FORMATS)
        else:
            checked, y = validate_data(estimator, X, y, dtype=dtype, accept_sparse=FORMATS, multi_output=True,
                                       y_numeric=True)
        # Rows are taken by index (split, centres, blocks): CSR, sorted; a CSC X is converted, O(nnz).
        checked = canonical_csr(checked)
        weights = chk.check_sample_weight(sample_weight, checked.shape[0], "sample_weight")
        return Rows(checked, y, weights, X, rng, validation_fraction)

    def bandwidth_inputs(self, split, rng, n_rows):
        n_train = split.X_train.shape[0]
        rows = np.sort(rng.permutation(n_train)[:max(1, min(int(n_rows), n_train))])
        w = split.w_train
        # The sample doubles as the screening fits' centres: dense, as every fit's centres.
        return (*feature_deviations(split.X_train, w), split.X_train[rows].toarray(),
                None if w is None else w[rows])

    def centers(self, split, rng, *, n_centers, centers, center_selection, sigma, kernel, matern_nu, n_threads,
                estimator):
        if centers is None and center_selection != "uniform":
            raise chk.UnsupportedOption(f"center_selection={center_selection!r} is not supported on sparse X: "
                                        "leverage scores read the core's dense kernel; use 'uniform' or give "
                                        "centers")
        dtype = split.X.dtype
        if centers is not None:
            form = chk.check_centers_form(centers)
            if form.ndim == 1:  # row indices into X: checked as in memory, on the indices alone
                check_centers(form, np.empty((split.X.shape[0], 0)), np.empty((split.X_train.shape[0], 0)))
                rows = np.where(form < 0, form + split.X.shape[0], form)
                return np.ascontiguousarray(split.X[rows].toarray(), dtype=dtype)
            if scipy_sparse(form):
                form = form.toarray()
            return check_centers(np.asarray(form), split.X[:1].toarray(), np.empty((split.X_train.shape[0], 0)))
        n_train = split.X_train.shape[0]
        m = capped_n_centers(estimator, n_centers, n_train)
        seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))  # as nytro.centers.choose_centers draws it
        return np.ascontiguousarray(split.X_train[sample_centers(n_train, m, seed)].toarray(), dtype=dtype)

    def predict(self, estimator, X, centers, coef, sigma, *, kernel, matern_nu, n_threads):
        if estimator._path_kind not in self.paths:
            raise TypeError(f"{type(estimator).__name__} does not take {self.arrays}; NytroRegressor and "
                            "NytroClassifier do")
        X = canonical_csr(validate_data(estimator, X, reset=False, dtype=coef.dtype, accept_sparse=FORMATS))
        prepared_centres = prepared(centers, kernel, sigma, matern_nu)
        out = np.empty((X.shape[0],) + coef.shape[1:], dtype=coef.dtype)
        step = rows_per_block(len(centers))
        for r0 in range(0, X.shape[0], step):
            K = block(X[r0:r0 + step], prepared_centres, kernel=kernel, sigma=sigma, matern_nu=matern_nu)
            out[r0:r0 + step] = K @ coef
        return out


def scipy_sparse(X) -> bool:
    import scipy.sparse
    return scipy.sparse.issparse(X)


SPARSE = SparseBackend()
