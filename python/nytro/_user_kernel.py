"""Kernels of one's own: kernel=k, a Python callable k(X, Z) -> (len(X), len(Z)) array.

The core computes its four kernels inside its passes; a callable cannot go there, so a
fit with one runs as partial_fit's sums do (nytro._batches): the callable evaluated on
blocks of rows against the centres, A^T A and A^T y summed over the training blocks, the
hold-out rows' factor over theirs, and the path on the core's engine in m dimensions.
The memory is that of the built-in kernels' gram solver, O(b m + m^2) for blocks of b
rows; the time is the callable's (slow but correct: NumPy's, not the core's fused
passes). This module has the checks of such a kernel and its blocks; nytro._callable
the in-memory backend (nytro._backends' protocol) of the estimators that take it.
"""
from __future__ import annotations

import numpy as np

# Rows of X per call of the callable: its block (rows x centres) within about 32 MiB of
# float64, as the core's streamed passes.
BLOCK_ELEMENTS = 1 << 22


def is_user_kernel(kernel) -> bool:
    return callable(kernel)


def name_of(kernel) -> str:
    return getattr(kernel, "__name__", type(kernel).__name__)


def block(kernel, X, Z) -> np.ndarray:
    """kernel(X, Z) as a float64 (len(X), len(Z)) array, checked: a wrong shape or a value
    that is not finite is refused (ValueError naming the kernel)."""
    K = np.asarray(kernel(X, Z), dtype=np.float64)
    if K.shape != (X.shape[0], Z.shape[0]):
        raise ValueError(f"kernel={name_of(kernel)} returned shape {K.shape} for X of {X.shape[0]} rows and Z of "
                         f"{Z.shape[0]}: a kernel k(X, Z) must return (len(X), len(Z))")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"kernel={name_of(kernel)} returned values that are not finite")
    return K


def rows_per_block(width: int) -> int:
    return max(1, BLOCK_ELEMENTS // max(1, width))


def diagonal_max(kernel, X) -> float:
    """max k(x, x) over the rows of X, from the diagonals of square blocks (the bound of
    hybrid's lambda grid and of the step rule "paper", as the core's kernel_bound)."""
    top = 0.0
    size = 256
    for r0 in range(0, X.shape[0], size):
        Xb = X[r0:r0 + size]
        top = max(top, float(np.max(np.diagonal(block(kernel, Xb, Xb)))))
    return top
