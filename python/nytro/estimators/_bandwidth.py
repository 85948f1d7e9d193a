"""sigma="auto": the kernel's bandwidths chosen from the data, on the fit's own hold-out split.

The bandwidths are ARD, one per feature: sigma_j = s * spread_j. The spreads (the training
rows' standard deviations, feature_spreads) make the kernel blind to each feature's unit,
as StandardScaler would, without the user having to scale; the overall scale s starts
from the median pairwise distance of the rows so scaled (distance_scale), the usual
heuristic for a Gaussian kernel, and is then selected on the hold-out rows among s0 * 2^k
(k from -2 to 2, extended by one step at a time while the best is at the edge, up to
|k| = MAX_EXPONENT). Each candidate is screened by a NYTRO "hybrid" fit at few centres
(at most SCREEN_CENTERS), which selects t and lambda of the paper's grid on the same
hold-out rows (Nystrom KRLS's hold-out accuracy in a few tens of products of an m x m
matrix), so a candidate's best hold-out error costs a fraction of the fit; the
estimator's own fit then runs once, at the winner, with its full n_centers.
The search runs twice where the backend gives the features' ranges (in memory): with the
deviations, then with the ranges as the spreads; the ranges win only by more than the
hold-out RMSE's standard error (holdout_resolution), so that a small hold-out set keeps
the deviations. A heavy-tailed feature's deviation understates the distances the kernel
must reach; its range does not.
The screening fits train on at most SCREEN_ROWS of the training rows, drawn once, and
are scored on every hold-out row.
Where the fit has at least twice the first round's centres, a second round screens the
winning kind's scales again at up to REFINE_FACTOR times as many (at most the fit's):
from the narrowest first-round candidate within the hold-out's resolution of the best,
and its neighbours, widened while the best is at an edge. Few centres represent smooth
functions well and sharp ones badly, so a first round at few centres favours wide
kernels, and where it cannot tell several apart the fit's own centres may do better
with a narrower one.
The screening scores the hold-out RMSE, with the sample weights, for the classifiers too
(of their +-1 codes): their error rate is a step function that ties across candidates on a
small hold-out set, where the RMSE still ranks them; a tie goes to the candidate nearest
s0. The path's own selection of t and lambda keeps the estimator's metric.

The fit's backend (nytro._backends) reads the data: on Dask arrays, where each screening
fit would be passes over the chunks, the candidates are not screened (sigma_scores_ is
NaN), and the spreads and s0 come from every row, unweighted, before the hold-out split,
which the fit's own passes draw.

Everything here is equivariant under x -> a x + b per feature: the spreads are
deviations from the mean or ranges (an offset does not enter) and scale with the data, and the
rows are compared only after division by them, so sigma_ scales with each feature's unit
and the selected model is the same up to rounding.
"""
from __future__ import annotations

import numpy as np

from .. import _checks as chk
from .. import options as opt
from .._memory import feature_deviations
from ._growth import is_auto as is_auto_size

# The screening fits' centres at most, and the rows whose pairwise distances give s0.
SCREEN_CENTERS = 200
# The screening path: NYTRO's "hybrid" (t and lambda of the paper's grid selected on the
# hold-out rows, Nystrom KRLS's accuracy without its eigendecomposition), ended as the
# estimator's default ends it.
SCREEN_ITERATIONS = 500
SCREEN_PATIENCE = 50
# The first candidates are s0 * 2^k for |k| <= FIRST_EXPONENT; the search widens while
# the best is at the edge, up to |k| <= MAX_EXPONENT (a factor 16 either way), since
# per-feature spreads can be far from the scale a target varies at.
FIRST_EXPONENT = 2
MAX_EXPONENT = 4
# The second round's centres: REFINE_FACTOR times the first's (at most the fit's).
REFINE_FACTOR = 4
# The screening fits' training rows at most (a uniform draw; every hold-out row scores
# them): their Gram passes cost n m^2, and the candidates' ranking is the same on a
# sample of rows many times larger than the second round's centres.
SCREEN_ROWS = 10000


def is_auto(sigma) -> bool:
    return isinstance(sigma, str) and sigma == "auto"


def searches(est) -> bool:
    """Whether est's fit selects its bandwidths (sigma="auto" with a kernel that has one).
    Sets what is known before: sigma_ as given (checked), None for kernel="linear", a
    callable kernel, or while it is to be selected, and sigma_candidates_, sigma_scores_
    and sigma_spread_ None."""
    est.sigma_candidates_ = est.sigma_scores_ = est.sigma_spread_ = None
    auto = is_auto(est.sigma)
    unused = est.kernel == "linear" or callable(est.kernel)  # a kernel of one's own has its own parameters
    est.sigma_ = None if unused or auto else chk.check_bandwidth(est.sigma)
    return auto and not unused


def feature_spreads(X, weights=None) -> np.ndarray:
    """Each feature's standard deviation over the rows of X, in float64, each row counting
    by its weight where given (integer weights as repeated rows). A feature that does
    not vary (its deviation within rounding of its magnitude: a constant, or a constant
    with a large offset) has no spread to measure: it gets the median of the others', so
    that the rows that do differ in it (at predict) are measured in a typical unit; 1.0
    where no feature varies."""
    if np.shape(X)[0] == 0:
        return np.ones(np.shape(X)[1])
    return spreads_of(*feature_deviations(X, weights))


def spreads_of(deviations, magnitudes) -> np.ndarray:
    """feature_spreads from each feature's standard deviation and largest magnitude (as a
    backend's bandwidth_inputs gives them)."""
    spreads = np.asarray(deviations, dtype=np.float64)
    varies = spreads > 8 * np.finfo(np.float64).eps * np.asarray(magnitudes, dtype=np.float64)
    fallback = float(np.median(spreads[varies])) if varies.any() else 1.0
    return np.where(varies, spreads, fallback)


def distance_scale(X, spreads, weights=None) -> float:
    """The median distance between two different rows of X after each feature is divided
    by its spread (the median of the positive distances: duplicated rows ignored); 1.0
    where there are none. With weights, the pair (i, j) counts w_i w_j times, so that
    integer weights give the median of the rows repeated (zero weights: rows left out)."""
    X = np.asarray(X, dtype=np.float64)
    Z = (X - X.mean(axis=0)) / spreads  # centred first: the norms below then cancel nothing large
    if Z.shape[0] < 2:
        return 1.0
    norms = (Z * Z).sum(1)
    squared = np.maximum(norms[:, None] + norms[None, :] - 2.0 * (Z @ Z.T), 0.0)
    i, j = np.triu_indices(Z.shape[0], 1)
    pairs = squared[i, j]
    if weights is None:
        counts = np.ones(pairs.size)
    else:  # relative to the largest: products of weights near 1e-310 or 1e308 would under- or overflow
        w = np.asarray(weights, np.float64)
        w = w / w.max() if w.max() > 0 else w
        counts = w[i] * w[j]
    kept = (pairs > 0) & (counts > 0)
    if not kept.any():
        return 1.0
    return float(np.sqrt(weighted_median(pairs[kept], counts[kept])))


def weighted_median(values, counts) -> float:
    """The median of `values`, value k counted counts[k] times: the mean of the two middle
    values of the sorted multiset (np.median's convention for integer counts)."""
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(counts[order])
    half = cumulative[-1] / 2
    lower = np.searchsorted(cumulative, half, side="left")
    upper = np.searchsorted(cumulative, half, side="right")
    return 0.5 * (values[lower] + values[min(upper, values.size - 1)])


def select_bandwidth(est, backend, split, rng, n_screen):
    """(sigma_, candidates, scores, spread) for the estimator `est` with sigma="auto": the
    ARD bandwidths s * spreads, with s selected on the split's hold-out rows (none: s0
    alone, and NaN scores), and the kind of spreads used ("deviation" or "range"). The
    candidates are screened at the first round's centres, min(n_screen, SCREEN_CENTERS)
    training rows (n_screen: the fit's centres, None where every training row may be
    one), which also give s0. Where the fit has at least twice as many centres, a second
    round screens the chosen kind's scales again at min(n_screen, REFINE_FACTOR times
    as many centres), from the narrowest first-round candidate within the hold-out's
    resolution of the best (holdout_resolution) and its two neighbours, widened while
    the best is at an edge; the second round's candidates and scores are then the ones
    returned, and its best wins. A bandwidth's hold-out error depends on the centres:
    few centres favour wide kernels, whose smooth functions they represent well, and the
    fit's own centres may do better with a narrower one. The backend (nytro._backends)
    gives the spreads and the rows; one that does not screen (Dask) takes SCREEN_CENTERS
    rows for s0 alone, with the deviations."""
    screens = backend.screens_bandwidth and split.n_val > 0
    first = SCREEN_CENTERS if n_screen is None or not backend.screens_bandwidth else min(int(n_screen),
                                                                                          SCREEN_CENTERS)
    second = REFINE_FACTOR * first if n_screen is None else min(int(n_screen), REFINE_FACTOR * first)
    refines = screens and second >= 2 * first
    deviations, magnitudes, sample, weights = backend.bandwidth_inputs(split, rng, second if refines else first)
    refines = refines and len(sample) >= 2 * first  # not with fewer training rows
    if len(sample) > first:  # the first round's rows: a uniform draw from the sample
        rows = np.sort(rng.permutation(len(sample))[:first])
        centers, centers_weights = sample[rows], None if weights is None else weights[rows]
    else:
        centers, centers_weights = sample, weights
    spreads = spreads_of(deviations, magnitudes)
    if not screens:
        s0 = distance_scale(centers, spreads, centers_weights)
        return s0 * spreads, np.array([s0]), np.array([np.nan]), "deviation"
    options = opt.NytroOptions(n_threads=est._n_threads())
    n_train = split.X_train.shape[0]
    screened = split if n_train <= SCREEN_ROWS else split.training_sample(
        np.sort(rng.permutation(n_train)[:SCREEN_ROWS]))

    def screen(points, bandwidths):
        """The best hold-out RMSE of a screening fit with centres `points`."""
        fit = backend.nytro_path(screened, points, bandwidths, kernel=est.kernel, matern_nu=est.matern_nu,
                                 method="hybrid", max_iter=SCREEN_ITERATIONS, n_iter_no_change=SCREEN_PATIENCE,
                                 options=options, metric="rmse")
        return float(np.min(fit.result.validation_rmse))

    def rank(scores):
        """Best first; a tie goes to the candidate nearest s0."""
        return sorted(scores, key=lambda k: (scores[k], abs(k), k))

    def widen(scores, bandwidths):
        """Screens s0 2^k for the k around the best of `scores` ({k: score}) while the best is
        at an edge, within |k| <= MAX_EXPONENT; returns `scores`."""
        while True:
            best, lo, hi = rank(scores)[0], min(scores), max(scores)
            if best == lo and lo > -MAX_EXPONENT:
                scores[lo - 1] = screen(*bandwidths(lo - 1))
            elif best == hi and hi < MAX_EXPONENT:
                scores[hi + 1] = screen(*bandwidths(hi + 1))
            else:
                return scores

    def search(spreads):
        """(s0, {k: score of s0 2^k}) at the first round's centres, for one kind of spreads."""
        s0 = distance_scale(centers, spreads, centers_weights)

        def bandwidths(k):
            return centers, s0 * 2.0 ** k * spreads

        scores = {k: screen(*bandwidths(k)) for k in range(-FIRST_EXPONENT, FIRST_EXPONENT + 1)}
        return s0, widen(scores, bandwidths)

    chosen = (spreads, *search(spreads), "deviation")
    ranges = backend.feature_ranges(split)
    if ranges is not None:
        by_range = spreads_of(ranges, magnitudes)
        if not np.allclose(by_range / np.median(by_range), spreads / np.median(spreads), rtol=1e-12, atol=0.0):
            s0, scores = search(by_range)
            if min(scores.values()) < min(chosen[2].values()) * (1.0 - holdout_resolution(split)):
                chosen = (by_range, s0, scores, "range")
    spreads, s0, scores, kind = chosen
    if refines:  # the second round: around the first's best, at the sample's centres

        def bandwidths(k):
            return sample, s0 * 2.0 ** k * spreads

        # From the narrowest first-round candidate within the hold-out's resolution of the
        # best: the first round cannot tell those apart, and its few centres favour the wide.
        best = min(scores.values())
        start = min(k for k in scores if scores[k] <= best * (1.0 + holdout_resolution(split)))
        scores = widen({k: screen(*bandwidths(k)) for k in range(max(start - 1, -MAX_EXPONENT),
                                                                  min(start + 1, MAX_EXPONENT) + 1)}, bandwidths)
    ks = sorted(scores)
    return (s0 * 2.0 ** rank(scores)[0] * spreads, s0 * 2.0 ** np.array(ks, dtype=np.float64),
            np.array([scores[k] for k in ks]), kind)


def holdout_resolution(split) -> float:
    """The relative standard error of a hold-out RMSE, 1 / sqrt(2 n): the spread of the
    RMSE over n independent Gaussian residuals (the MSE's relative error is sqrt(2 / n),
    and the square root halves it), with n the hold-out rows' effective number
    (sum w)^2 / sum w^2 under sample weights. A second kind of spreads replaces the
    first only where it does better by more than this: on a hold-out set too small to
    tell the two apart, the screening keeps the deviations."""
    w = getattr(split, "w_val", None)
    if w is None:
        n = float(split.n_val)
    else:
        w = np.asarray(w, dtype=np.float64)
        w = w / w.max() if w.max() > 0 else w
        n = float(w.sum() ** 2 / max((w * w).sum(), np.finfo(np.float64).tiny))
    return 1.0 / np.sqrt(2.0 * max(n, 1.0))


def centers_and_sigma(est, backend, split, rng, options):
    """(centers, sigma_) of a Nystrom estimator's fit and first partial_fit batch (every
    one draws here): `centers`, or n_centers drawn by center_selection (leverage scores
    under the bandwidths), at most every training row in memory
    (nytro._memory.capped_n_centers). Uniform or given centres are drawn first, as
    with an explicit sigma, so that sigma="auto" and sigma=<its sigma_> with the same
    random_state fit the same model; leverage scores need the bandwidths, so there
    sigma is selected first. The screening fits take at most as many centres as the
    fit."""
    n_screen = (None if is_auto_size(est.n_centers) else int(est.n_centers)) if est.centers is None \
        else len(est.centers)
    drawn = dict(n_centers=est.n_centers, centers=est.centers, center_selection=est.center_selection,
                 kernel=est.kernel, matern_nu=est.matern_nu, n_threads=options.n_threads,
                 estimator=type(est).__name__)
    if is_auto(est.sigma) and est.centers is None and est.center_selection == "leverage":
        sigma = est._fit_sigma(backend, split, rng, n_screen)
        return backend.centers(split, rng, sigma=sigma, **drawn), sigma
    centers = backend.centers(split, rng, sigma=est.sigma, **drawn)
    return centers, est._fit_sigma(backend, split, rng, n_screen)
