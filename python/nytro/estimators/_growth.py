"""n_centers="auto": the number of Nystrom centres m grown while the hold-out error
still improves.

The fit runs at m = 128, 256, 512, ... (doubling, up to every training row or MOST),
each at the same bandwidths and on the same hold-out rows, with centres drawn from one
seed; growth stops at the first size whose selected hold-out error is not below
(1 - TOL) times the best so far, and the best size's fit is the model. A fit's cost
grows about as n m^2, so the sizes before the best cost about a third of its fit, and
the one size past it (where growth stops) about four times it: the whole search costs
a small multiple of one fit at the chosen m.
"""
from __future__ import annotations

import numpy as np

from .. import _checks as chk
from .._memory import MEMORY

FIRST = 128
MOST = 4096
TOL = 0.01


def is_auto(n_centers) -> bool:
    return isinstance(n_centers, str) and n_centers == "auto"


def sizes(n_train: int) -> list:
    """The sizes tried, smallest first: FIRST doubled while below min(n_train, MOST), then
    min(n_train, MOST) itself."""
    last = min(int(n_train), MOST)
    out, m = [], FIRST
    while m < last:
        out.append(m)
        m *= 2
    return out + [last]


def selected_error(fit) -> float:
    """The hold-out error of the model a fit selected: its path at the selected t (the
    iterative paths), or the least over the lambda grid (Tikhonov, which takes it)."""
    path = np.asarray(fit.result.validation_rmse, dtype=np.float64)
    n_iter = getattr(fit.result, "n_iter", None)
    return float(path[n_iter - 1]) if n_iter is not None else float(np.min(path))


def grow_centers(est, backend, split, rng, options, fit_at):
    """(fit, sigma_): fit_at(centers, sigma) at each size of `sizes` in turn, the best
    kept by the rule above; sets n_centers_candidates_ and n_centers_scores_ (the sizes
    tried and their selected hold-out errors). sigma="auto" is selected first, by its
    screening fits (at most 200 centres, then 800); the centres of every size are then drawn from
    one seed of rng. Refused without a hold-out set (nothing to grow m on) and on other
    backends than memory (each size would be passes over the chunks)."""
    name = type(est).__name__
    if backend is not MEMORY:
        raise chk.UnsupportedOption(f"{name}: n_centers='auto' is fitted in memory only; give n_centers (an "
                                    f"integer) for {backend.arrays}")
    if split.n_val == 0:
        raise ValueError(f"{name}: n_centers='auto' selects m on the hold-out rows, and validation_fraction=None "
                         "leaves none; give n_centers (an integer) or a validation_fraction")
    sigma = est._fit_sigma(backend, split, rng, None)
    seed = int(rng.randint(0, 2**31 - 1))
    tried, scores, best, best_score = [], [], None, np.inf
    for m in sizes(split.X_train.shape[0]):
        centers = backend.centers(split, np.random.RandomState(seed), n_centers=m, centers=None,
                                  center_selection=est.center_selection, sigma=sigma, kernel=est.kernel,
                                  matern_nu=est.matern_nu, n_threads=options.n_threads, estimator=name)
        fit = fit_at(centers, sigma)
        score = selected_error(fit)
        tried.append(m)
        scores.append(score)
        if best is None or score < (1.0 - TOL) * best_score:
            best, best_score = fit, score
        else:
            break
    est.n_centers_candidates_, est.n_centers_scores_ = np.array(tried), np.array(scores)
    return best, sigma
