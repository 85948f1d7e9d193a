"""The estimators' backend for a kernel of one's own (kernel=a callable, nytro._user_kernel):
the split and the centres as in memory, NYTRO's path from partial_fit's sums
(nytro._batches) over the split's own rows, and predict by blocks."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from . import _batches
from . import _checks as chk
from . import options as opt
from ._memory import InMemory
from ._results import NystromFit
from ._user_kernel import block, rows_per_block


def refuse_leverage(center_selection, centers) -> None:
    """chk.UnsupportedOption naming center_selection where a kernel of one's own would need
    leverage scores (no `centers` given): they are computed by the core's kernel."""
    if center_selection != "uniform" and centers is None:
        raise chk.UnsupportedOption(f"center_selection={center_selection!r} is not supported with a kernel of "
                                    "one's own: leverage scores need the core's kernel; use 'uniform' or give "
                                    "centers")


class UserKernelBackend(InMemory):
    """The estimators' steps with a callable kernel, on arrays in memory: the split and
    centres as in memory (uniform or given; leverage scores refused), NYTRO's path from
    the sums of nytro._batches over the split's own rows, predict by blocks."""

    arrays = "a kernel of one's own (a callable)"
    paths = frozenset({"nytro"})
    screens_bandwidth = False
    # Where the refusals of options say this route is.
    where = "with a kernel of one's own (a callable)"

    def check_options(self, estimator, options) -> None:
        """The options of estimator's fit (its NytroOptions, shortcuts folded in), refused
        by name where the path from partial_fit's sums cannot honour them (solver, storage:
        nytro._batches.refuse_options), before any work on the data."""
        _batches.refuse_options(options.solver, options.storage, self.where)

    def centers(self, split, rng, *, center_selection, **drawn):
        refuse_leverage(center_selection, drawn.get("centers"))
        return super().centers(split, rng, center_selection=center_selection, **drawn)

    def nytro_path(self, split, centers, sigma, *, kernel, matern_nu=1.5, method="gd", nu=1.0, max_iter=500,
                   step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None, options=None,
                   progress=None, metric="rmse", hybrid_lambda=None):
        values = opt.merged(opt.NYTRO, options, dict(
            kernel=kernel, matern_nu=matern_nu, method=method, nu=nu, max_iter=max_iter, step_size=step_size,
            stopping=stopping, tol=tol, window=window, n_iter_no_change=n_iter_no_change, metric=metric,
            hybrid_lambda=hybrid_lambda))
        n_threads = values["n_threads"]
        both = np.vstack([split.Y_train, split.Y_val])
        weights = None if split.w_train is None else np.concatenate([split.w_train, split.w_val])
        state = _batches.start(split.X_train, both, weights, centers, sigma, kernel=kernel, matern_nu=matern_nu,
                               fraction=None, seed=0, fit_intercept=False, factor=values["factor"],
                               rank_tol=values["rank_tol"], jitter=values["jitter"], n_threads=n_threads,
                               keeps_rows=metric == "error")
        # The sums block the kernel's calls themselves (nytro._batches): one call per part.
        for X, Y, w, held in ((split.X_train, split.Y_train, split.w_train, False),
                              (split.X_val, split.Y_val, split.w_val, True)):
            _batches.add(state, X, Y, w, n_threads, held=np.full(X.shape[0], held))
        result, _ = _batches.path(state, values, report=progress or (lambda stage, done, total: None))
        return NystromFit(result, split.own(state.centers), split.X_train.shape[0], split.n_val)

    def predict(self, estimator, X, centers, coef, sigma, *, kernel, matern_nu, n_threads):
        X = validate_data(estimator, X, reset=False, dtype=coef.dtype, order="C")
        out = np.empty((X.shape[0],) + coef.shape[1:], dtype=coef.dtype)
        step = rows_per_block(len(centers))
        for r0 in range(0, X.shape[0], step):
            out[r0:r0 + step] = block(kernel, X[r0:r0 + step], centers) @ coef
        return out


USER_KERNEL = UserKernelBackend()
