"""Nystrom centres: given by the user, drawn uniformly, or drawn by approximate ridge
leverage scores (BLESS-style, Rudi, Calandriello, Carratino and Rosasco, "On Fast
Leverage Score Sampling and Optimal Learning", NeurIPS 2018).

Ridge leverage scores. With K = Phi Phi^T the kernel of the n training rows, the score of
row i at scale lambda is

    l_lambda(i) = [K (K + lambda n I)^-1]_ii,

and their sum d_eff(lambda) is the effective dimension. Drawing centres with probability
proportional to l_lambda needs about d_eff(lambda) log d_eff(lambda) of them for the
Nystrom model to be as accurate as the full one at that lambda, where uniform draws need
about n max_i l_lambda(i): far more when a few rows sit in a region of their own (each of
high score) beside many redundant ones (a dense cluster, each of low score).

The estimate (Woodbury on a weighted dictionary J of rows drawn with probabilities pi_j,
M draws): the covariance C = Phi^T Phi / n is estimated by
C_J = sum_{j in J} phi_j phi_j^T / (M n pi_j), and

    l~(x) = (k(x, x) - k_xJ (K_JJ + lambda diag(M n pi_J))^-1 k_Jx) / (lambda n),

exact for J = all rows with pi = 1/n (K_JJ + lambda n I). BLESS grows J bottom up: at
lambda_0 = max k(x, x) (d_eff <= 1) a handful of uniform rows suffice; at each level
lambda halves, the scores of a uniform candidate set of about 4 / lambda rows (a row's
score is at most 1 / (lambda n): such a subsample holds rows of every region whose scores
sum to about 1) are estimated with the previous level's dictionary, and the new
dictionary, about 2 d_eff rows, is drawn from the candidates by those scores
(pi_j = (R / n) p_j: a uniform candidate set of R rows, then a score-proportional draw
p_j within it). The cost per level is O(R M (d + M)) for R candidates and M dictionary
rows.

Where it stops. A path-regularised fit (NYTRO's t, or a lambda grid) has no single lambda,
and m centres resolve about m effective dimensions: the levels descend until the
estimated d_eff(lambda) reaches m / 4 (m ~ d_eff log d_eff centres, the theory's count),
or lambda reaches 1e-12, or the next level and the final draw would take the scoring
flops past n m (d + 100), about one fit's: its kernel block and a hundred products (on
smooth low-dimensional data d_eff grows slowly as lambda falls: the levels would descend
for tens of levels of 40 m candidates each, at several fits' cost; the draw is then made
at the lambda reached, whose scores are the smoother ones), and the m centres are then
drawn without replacement,
proportionally to l~ at that lambda, from a uniform candidate set of
min(n, max(10 m, 4 / lambda), 40 m) rows (every level's candidates are capped at 40 m
too). The dictionary then holds about m / 2 rows, so each level costs at most about
10 m^3 + 20 m^2 d flops whatever n: below a fit's O(n m^2) (gram solver) or
O(n m (d + t)) (direct) once n is well above 40 m, comparable below that;
bench_centers.py measures the ratio.

Determinism. Every draw comes from one NumPy Generator seeded by the caller; the scores
are rounded to 2^-24 relative before they become probabilities, so that the BLAS's
rounding (which may change with its thread count) cannot change a draw in practice, and
the kernel blocks come from the C++ core, whose results do not depend on n_threads.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from . import _checks as chk
from . import options as opt
from ._api import kernel_matrix, sample_centers

__all__ = ["leverage_centers", "approximate_leverage_scores", "exact_leverage_scores"]

CENTER_SELECTIONS = chk.CENTER_SELECTIONS  # declared beside its row's check; nytro.dask reads it here

# Dictionary rows per unit of estimated effective dimension (BLESS's q2); uniform
# candidates per unit of 1 / lambda at each level (BLESS's q1: a row's score is at most
# 1 / (lambda n), so a uniform subsample of c / lambda rows holds about c rows of any
# region whose scores sum to 1); candidates per centre in the final draw, at least; and
# the smallest lambda the levels descend to.
_DICTIONARY_PER_DIMENSION = 2.0
_CANDIDATES_PER_INVERSE_LAMBDA = 4.0
_FINAL_CANDIDATES_PER_CENTRE = 10
_SMALLEST_LAMBDA = 1e-12


# At most this many candidates per centre, whatever lambda: it bounds the selection's cost
# by O(m^3) independently of n (a region then needs about n / (40 m) rows to be seen).
_MOST_CANDIDATES_PER_CENTRE = 40


# The levels' budget: the scoring flops of all levels and of the final draw stay within
# n m (d + _BUDGET_PRODUCTS), about one fit's: the kernel block K_nm and the products of a
# path of about the 100 iterations the cost model expects the default fit to take
# (kExpectedKrylovBest in cpp/src/solvers/nytro.cpp).
_BUDGET_PRODUCTS = 100.0


def _scoring_cost(candidates, size, d):
    """Flops of scoring `candidates` rows with a dictionary of `size` rows in d features:
    the kernel block, the triangular solve, the dictionary's Cholesky factorisation."""
    return candidates * size * (d + size) + size ** 3 / 3.0


def _candidate_count(n, lam, least, most):
    return int(min(n, most, max(least, math.ceil(_CANDIDATES_PER_INVERSE_LAMBDA / lam))))


def check_centers(centers, X, X_train, *, limited=True) -> np.ndarray:
    """The user's centres as rows: an (m, d) array of points, or a 1-D integer array of
    row indices into X (the X given to fit, before any hold-out split), checked by name.
    limited: at most as many as the training rows (partial_fit's later batches bring more)."""
    arr = chk.check_centers_form(centers)  # the row's check (nytro.options.CENTERS), then the data's
    if arr.ndim == 1:  # row indices
        n = X.shape[0]
        if limited and arr.size > X_train.shape[0]:
            raise ValueError(f"centers has {arr.size} indices, more than the {X_train.shape[0]} training rows")
        if arr.min() < -n or arr.max() >= n:
            bad = arr[(arr < -n) | (arr >= n)][0]
            raise ValueError(f"centers index {int(bad)} is out of range for X with {n} rows")
        rows = np.where(arr < 0, arr + n, arr)
        if np.unique(rows).size != rows.size:
            raise ValueError("centers has repeated indices: each centre must be a distinct row of X")
        return np.ascontiguousarray(X[rows])
    try:
        arr = np.asarray(arr, dtype=X.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"centers must be numeric: {error}") from None
    if arr.shape[1] != X.shape[1]:
        raise ValueError(f"centers have {arr.shape[1]} features but X has {X.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("centers contain NaN or infinity")
    if limited and arr.shape[0] > X_train.shape[0]:
        raise ValueError(f"there are more centers ({arr.shape[0]}) than training rows ({X_train.shape[0]})")
    return np.ascontiguousarray(arr)


class _Kernel:
    """The fit's kernel in float64: k(A, B), and its diagonal k(x, x), which is 1 for the
    distance-based kernels and ||x||^2 for the linear one."""

    def __init__(self, sigma, kernel="gaussian", matern_nu=1.5, n_threads=None):
        self.kernel, self.sigma, self.matern_nu, self.n_threads = kernel, sigma, matern_nu, n_threads

    def __call__(self, A, B):
        return kernel_matrix(A, B, kernel=self.kernel, sigma=self.sigma, matern_nu=self.matern_nu,
                             n_threads=self.n_threads, dtype=np.float64)

    def diagonal(self, A):
        return np.einsum("ij,ij->i", A, A) if self.kernel == "linear" else np.ones(A.shape[0])


def _as_kernel(kernel, sigma, matern_nu, n_threads, n_features):
    chk.check_kernel(kernel, sigma, matern_nu, n_features)  # ValueError naming the argument
    return _Kernel(sigma, kernel, matern_nu, n_threads)


class _Dictionary:
    """A weighted dictionary J: rows of X and diag(M n pi_J) (module docstring)."""

    def __init__(self):
        self.rows = np.zeros(0, dtype=np.int64)
        self.inverse_weights = np.zeros(0)

    def scores(self, X, candidates, lam, kern):
        """l~ of the candidate rows at lambda (lambda in units of max k(x, x))."""
        n = X.shape[0]
        diagonal = kern.diagonal(X[candidates]) / kern.scale
        if self.rows.size == 0:  # C_J = 0: l~ = k(x, x) / (lambda n)
            return diagonal / (lam * n)
        D = X[self.rows]
        K_jj = kern(D, D) / kern.scale
        K_jc = kern(D, X[candidates]) / kern.scale
        K_jj[np.diag_indices_from(K_jj)] += lam * self.inverse_weights
        L = scipy.linalg.cholesky(K_jj, lower=True, check_finite=False)
        Z = scipy.linalg.solve_triangular(L, K_jc, lower=True, check_finite=False)
        explained = np.einsum("ij,ij->j", Z, Z)
        return np.maximum(diagonal - explained, 0.0) / (lam * n)

    def resample(self, candidates, scores, size, rng):
        """A new dictionary of `size` draws from the candidates, proportional to scores."""
        p = _quantised(scores)
        draws = rng.choice(candidates.size, size=size, replace=True, p=p)
        self.rows = candidates[draws]
        # One draw picks row j with pi_j = (R / n) p_j: M n pi_j = M R p_j.
        self.inverse_weights = size * candidates.size * p[draws]


def _quantised(p):
    """Scores rounded to 2^-24 of the largest (see Determinism above), normalised."""
    top = p.max()
    q = np.maximum(np.round(p / top * 2.0**24), 1.0) if top > 0 else np.ones_like(p)
    return q / q.sum()  # every candidate keeps a chance (the floor of 1)


def _grow(X, rng, cap, kern, done, oversampling=_DICTIONARY_PER_DIMENSION, most=None, budget=None, final=0):
    """BLESS's levels: lambda halves from 1 (= max k(x, x)) until done(lambda, d_eff), or
    until the next level and a final draw from `final` candidates would take the scoring
    flops spent past `budget` (None: no budget); the dictionary holds oversampling x d_eff
    rows (at most cap). Returns (dictionary, lambda, d_eff, dictionary sizes, flops
    spent). At most `most` candidates a level (None: n)."""
    n, d = X.shape
    most = n if most is None else most
    dictionary, lam, sizes, spent = _Dictionary(), 1.0, [], 0.0
    while True:
        lam /= 2.0
        R = _candidate_count(n, lam, 64, most)
        candidates = np.sort(rng.choice(n, size=R, replace=False))
        scores = dictionary.scores(X, candidates, lam, kern)
        spent += _scoring_cost(R, dictionary.rows.size, d)
        d_eff = n * float(scores.mean())
        size = int(min(cap, max(4, math.ceil(oversampling * d_eff))))
        dictionary.resample(candidates, scores, size, rng)
        sizes.append(size)
        if done(lam, d_eff):
            return dictionary, lam, d_eff, sizes, spent
        # The next level may grow the dictionary: d_eff(lambda / 2) <= 2 d_eff(lambda).
        grown = min(cap, 2 * size)
        ahead = _scoring_cost(_candidate_count(n, lam / 2.0, 64, most), size, d) + _scoring_cost(final, grown, d)
        if budget is not None and spent + ahead > budget:
            return dictionary, lam, d_eff, sizes, spent


def leverage_centers(X, n_centers, sigma, seed, *, kernel="gaussian", matern_nu=1.5, n_threads=None,
                     return_details=False):
    """Indices of n_centers distinct rows of X drawn by approximate ridge leverage scores
    (BLESS-style; see the module's docstring). Deterministic for a given seed whatever
    n_threads. Its cost is bounded by about one fit's: the levels and the final draw spend
    at most n m (d + 100) flops on scoring (the kernel block and a hundred products), the
    levels stopping at a larger lambda where they would spend more. return_details: also
    a dict with the final lambda, its estimated d_eff, the levels' dictionary sizes, the
    scoring flops spent ("flops") and that budget ("budget"). kernel, sigma, matern_nu: the
    fit's kernel (as in nytro.kernel_matrix)."""
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, first
    X = chk.as_matrix(X, "X", np.dtype(np.float64))
    n = X.shape[0]
    m = chk.check_int("n_centers", n_centers, 1)
    if m > n:
        raise ValueError(f"n_centers={m} is more than the {n} rows to draw from")
    kern = _scaled(_as_kernel(kernel, sigma, matern_nu, n_threads, X.shape[1]), X)
    chosen, details = _leverage_draw(X, m, kern, np.random.default_rng(seed))
    return (chosen, details) if return_details else chosen


def _leverage_draw(X, m, kern, rng):
    """leverage_centers' levels and final draw on X (an array, or any object with its
    shape and rows by index, as nytro.dask's training rows gathered on demand): (the
    sorted indices of m rows, the details)."""
    n, d = X.shape
    # The levels stop at d_eff ~ m / 4 (m centres then oversample d_eff by about the
    # factor the theory's m ~ d_eff log d_eff asks for), where the dictionary holds about
    # m / 2 rows; or where the next level would spend more than the budget, about one
    # fit's flops (on smooth low-dimensional data d_eff grows slowly as lambda falls, and
    # the levels would otherwise descend towards _SMALLEST_LAMBDA at 40 m candidates
    # each). The final draw's candidates, at most 40 m, are reserved in the budget.
    cap, most = max(1, min(n, m // 2)), _MOST_CANDIDATES_PER_CENTRE * m
    final = _candidate_count(n, _SMALLEST_LAMBDA, _FINAL_CANDIDATES_PER_CENTRE * m, most)
    budget = n * m * (d + _BUDGET_PRODUCTS)
    dictionary, lam, d_eff, sizes, spent = _grow(
        X, rng, cap, kern, lambda lam, d_eff: 4.0 * d_eff >= m or lam <= _SMALLEST_LAMBDA,
        most=most, budget=budget, final=final)
    R = _candidate_count(n, lam, _FINAL_CANDIDATES_PER_CENTRE * m, most)
    candidates = np.sort(rng.choice(n, size=R, replace=False))
    scores = dictionary.scores(X, candidates, lam, kern)
    spent += _scoring_cost(R, dictionary.rows.size, d)
    chosen = np.sort(candidates[rng.choice(R, size=m, replace=False, p=_quantised(scores))])
    return chosen, {"lambda": lam, "d_eff": d_eff, "dictionary_sizes": sizes, "flops": spent, "budget": budget}


def exact_leverage_scores(X, sigma, lam, *, kernel="gaussian", matern_nu=1.5):
    """[K (K + lambda n I)^-1]_ii from the full kernel (nytro.theory.leverage_scores; O(n^3):
    for checks on small n). lambda in units of max k(x, x), as the sampler's."""
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, first
    from .theory import leverage_scores
    X = np.asarray(X, dtype=np.float64)
    kern = _scaled(_as_kernel(kernel, sigma, matern_nu, None, X.shape[1]), X)
    return leverage_scores(kern(X, X) / kern.scale, lam)


def approximate_leverage_scores(X, sigma, lam, seed, *, dictionary_size=None,
                                oversampling=_DICTIONARY_PER_DIMENSION, n_threads=None, kernel="gaussian",
                                matern_nu=1.5):
    """l~ at lambda for every row of X, with a BLESS dictionary of oversampling x d_eff
    rows (at most dictionary_size; None: n) grown down to lambda (for checks against
    exact_leverage_scores)."""
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, first
    X = chk.as_matrix(X, "X", np.dtype(np.float64))
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    cap = n if dictionary_size is None else min(n, chk.check_int("dictionary_size", dictionary_size, 1))
    # By name: lam <= 0 or NaN would fail in the dictionary's Cholesky factorisation, and
    # oversampling NaN or inf in its size.
    target = chk.positive_number("lam", lam)
    oversampling = chk.positive_number("oversampling", oversampling)
    kern = _scaled(_as_kernel(kernel, sigma, matern_nu, n_threads, X.shape[1]), X)
    dictionary = _grow(X, rng, cap, kern, lambda level, d_eff: level <= target, oversampling)[0]
    return dictionary.scores(X, np.arange(n), target, kern)


def choose_centers(X, X_train, *, n_centers, centers, center_selection, sigma, rng, n_threads=None,
                   kernel="gaussian", matern_nu=1.5):
    """The centres of a Nystrom fit: the user's (centers), or n_centers rows of X_train
    drawn uniformly (the default, as before) or by leverage scores; seeded by rng. The
    parameters are the estimator's, checked by their rows of nytro.options on entry to
    fit; here what depends on the data."""
    if centers is not None:
        return check_centers(centers, X, X_train)
    m = int(n_centers)
    n = X_train.shape[0]
    if m > n:
        raise ValueError(f"n_centers={m} is more than the {n} training rows left after the hold-out split")
    seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
    if center_selection == "uniform":
        return X_train[sample_centers(n, m, seed)]
    return X_train[leverage_centers(X_train, m, sigma, seed, kernel=kernel, matern_nu=matern_nu,
                                    n_threads=n_threads)]


def _scaled(kern, X):
    """kern with `scale` = max k(x, x) over X (1 for the distance-based kernels): the levels'
    lambdas start at 1 in units of it."""
    top = float(kern.diagonal(X).max()) if X.shape[0] else 1.0
    kern.scale = top if top > 0 else 1.0
    return kern
