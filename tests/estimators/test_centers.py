"""Centres: the user's own (points or row indices), and leverage-score selection (BLESS-style,
nytro.centers) checked against exact ridge leverage scores from the full kernel."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import nytro
from conftest import make_problem
from nytro import NystromKRLSRegressor, NytroRegressor
from nytro.centers import approximate_leverage_scores, exact_leverage_scores, leverage_centers

NYSTROM = [NytroRegressor(n_centers=20, max_iter=20, random_state=0),
           NystromKRLSRegressor(n_centers=20, random_state=0)]
IDS = lambda e: type(e).__name__  # noqa: E731


def mixture(n, seed, *, tail=0.05, d=2):
    """A large tight cluster (redundant: a few kernel widths across) beside a small share of
    rows spread thinly over a wide box, where the target varies: uniform centres land
    mostly in the cluster, leverage scores spread them over the box."""
    rng = np.random.default_rng(seed)
    n_tail = int(round(tail * n))
    X = np.vstack([0.3 * rng.standard_normal((n - n_tail, d)), rng.uniform(-6, 6, (n_tail, d))])
    y = np.sin(X[:, 0]) * np.cos(0.7 * X[:, 1]) + 0.05 * rng.standard_normal(n)
    return X, y, np.arange(n) >= n - n_tail


# ----------------------------------------------------------------- own centres
@pytest.mark.parametrize("est", NYSTROM, ids=IDS)
def test_own_centres_as_points_and_as_indices(est):
    p = make_problem(n=150)
    points = clone(est).set_params(centers=p.centers).fit(p.X, p.y)
    np.testing.assert_array_equal(points.centers_, p.centers)
    idx = np.array([3, 50, 7, 120, 99, 0, 41])
    rows = clone(est).set_params(centers=idx).fit(p.X, p.y)
    np.testing.assert_array_equal(rows.centers_, p.X[idx])
    assert rows.coef_.shape == (7,)
    # The centres are the ones fitted: the same model as passing the points.
    same = clone(est).set_params(centers=p.X[idx]).fit(p.X, p.y)
    np.testing.assert_array_equal(same.coef_, rows.coef_)


@pytest.mark.parametrize("est", NYSTROM, ids=IDS)
@pytest.mark.parametrize("centers, message", [
    (lambda X: X[:5, :2], "centers have 2 features but X has 4"),
    (lambda X: np.r_[X[:4], [[np.nan] * 4]], "centers contain NaN"),
    (lambda X: np.arange(130), "centers has 130 indices, more than the 120 training rows"),
    (lambda X: np.array([1, 2, 150]), "centers index 150 is out of range"),
    (lambda X: np.array([1, 2, 2]), "centers has repeated indices"),
    (lambda X: np.ones(150, dtype=bool), "centers must be .* boolean"),
    (lambda X: X[:121], "more centers \\(121\\) than training rows \\(120\\)"),
    (lambda X: X[0], "centers must be an \\(m, d\\) array"),
])
def test_bad_centres_are_refused_by_name(est, centers, message):
    p = make_problem(n=150)
    with pytest.raises(ValueError, match=message):
        clone(est).set_params(centers=centers(p.X)).fit(p.X, p.y)


@pytest.mark.parametrize("est", NYSTROM, ids=IDS)
def test_unknown_center_selection_is_refused(est):
    p = make_problem(n=100)
    with pytest.raises(ValueError, match="center_selection"):
        clone(est).set_params(center_selection="kmeans").fit(p.X, p.y)


# ----------------------------------------------------------------- leverage scores
@pytest.mark.parametrize("kernel", ["gaussian", "matern", "laplacian"])
def test_approximate_leverage_scores_within_a_constant_factor_of_the_exact_ones(kernel):
    """BLESS's guarantee is a constant factor with high probability once the dictionary
    oversamples d_eff enough; measured here with oversampling 8 (5 seeds, three lambdas):
    every row within [0.5, 4.1] of its exact score, >= 86% within a factor 2, d_eff within
    17%. The bounds below leave a margin. The sampler scores rows with the fit's kernel."""
    X, _, _ = mixture(600, 0)
    for lam in (1e-2, 1e-3, 1e-4):
        exact = exact_leverage_scores(X, 0.5, lam, kernel=kernel)
        if 8 * exact.sum() > X.shape[0]:
            continue  # outside the guarantee: a dictionary of 8 d_eff rows would exceed n
        for seed in range(3):
            ratio = approximate_leverage_scores(X, 0.5, lam, seed=seed, oversampling=8, kernel=kernel) / exact
            assert 1 / 3 <= ratio.min() and ratio.max() <= 6, (lam, seed, ratio.min(), ratio.max())
            assert np.mean((ratio > 0.5) & (ratio < 2)) >= 0.8, (lam, seed)
            assert abs(np.sum(ratio * exact) / exact.sum() - 1) < 0.25, (lam, seed)


@pytest.mark.parametrize("bad", [dict(lam=0.0), dict(lam=-1.0), dict(lam=np.nan), dict(lam=None),
                                 dict(oversampling=np.nan), dict(oversampling=np.inf), dict(oversampling=0.0)])
def test_approximate_leverage_scores_refuse_bad_arguments_by_name(bad):
    """lam and oversampling as the exact scores' lam: finite and > 0, refused by name
    (they failed in the dictionary's Cholesky factorisation, or in its size)."""
    X, _, _ = mixture(100, 7)
    args = {"lam": 1e-3, "oversampling": 2.0, **bad}
    (name,) = bad
    with pytest.raises(ValueError, match=f"^{name} must be a finite number > 0"):
        approximate_leverage_scores(X, 0.5, args["lam"], 0, oversampling=args["oversampling"])


@pytest.mark.parametrize("kernel", ["gaussian", "matern", "linear"])
def test_exact_dictionary_gives_exact_scores(kernel):
    """The estimate with every row in the dictionary at pi = 1/n is the exact score, for
    every kernel (the linear kernel's k(x, x) = ||x||^2 is not 1)."""
    from nytro.centers import _Dictionary, _as_kernel, _scaled
    X, _, _ = mixture(300, 7)
    d = _Dictionary()
    d.rows, d.inverse_weights = np.arange(300), np.full(300, 300.0)
    kern = _scaled(_as_kernel(kernel, 0.5, 1.5, None, X.shape[1]), X)
    exact = exact_leverage_scores(X, 0.5, 1e-3, kernel=kernel)
    np.testing.assert_allclose(d.scores(X, np.arange(300), 1e-3, kern), exact, rtol=1e-8, atol=1e-12 * exact.max())


@pytest.mark.parametrize("kernel, extra", [("matern", {"matern_nu": 2.5}), ("laplacian", {}),
                                           ("gaussian", {"sigma": [0.5, 1.0]})])
def test_leverage_centres_for_every_kernel_through_the_estimator(kernel, extra):
    """center_selection="leverage" scores rows with the estimator's own kernel (ARD too)
    and fits better than uniform centres on the uneven mixture, as with the Gaussian."""
    X, y, _ = mixture(3000, 1)
    X_test, y_test, _ = mixture(1000, 2)
    params = {"n_centers": 60, "sigma": 0.5, "kernel": kernel, "random_state": 0, **extra}
    errors = {}
    for selection in ("uniform", "leverage"):
        model = NystromKRLSRegressor(center_selection=selection, **params).fit(X, y)
        errors[selection] = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    assert errors["leverage"] < errors["uniform"], errors


def test_leverage_centres_are_seeded_distinct_and_thread_count_independent():
    X, _, _ = mixture(3000, 1)
    a = leverage_centers(X, 60, 0.5, seed=5, n_threads=1)
    b = leverage_centers(X, 60, 0.5, seed=5, n_threads=2)
    np.testing.assert_array_equal(a, b)
    assert np.unique(a).size == 60 and a.min() >= 0 and a.max() < 3000
    assert not np.array_equal(a, leverage_centers(X, 60, 0.5, seed=6))


def test_leverage_centres_cover_the_thin_region_that_uniform_misses():
    X, _, in_tail = mixture(4000, 2)
    chosen = leverage_centers(X, 160, 0.5, seed=3)
    share = in_tail[chosen].mean()
    # 5% of the rows, where the kernel needs most of its centres (the cluster spans a
    # couple of kernel widths): uniform gives the region about 5% of them (measured
    # with leverage scores: 45%).
    assert share > 0.25, share


def test_estimator_with_leverage_centres_fits_better():
    X, y, _ = mixture(4000, 4)
    Xt, yt, _ = mixture(2000, 5)
    errors = {}
    for selection in ("uniform", "leverage"):
        est = NystromKRLSRegressor(n_centers=160, sigma=0.5, center_selection=selection, random_state=0)
        errors[selection] = np.sqrt(np.mean((est.fit(X, y).predict(Xt) - yt) ** 2))
    # measured 0.12 against 0.20
    assert errors["leverage"] < 0.8 * errors["uniform"], errors


def scoring_flops(monkeypatch):
    """A list that collects the flops of every scoring of candidates by a dictionary (the
    kernel block, the triangular solve and the Cholesky factorisation of its M rows)."""
    import nytro.centers as lev
    spent, scores = [], lev._Dictionary.scores

    def counted(self, X, candidates, lam, kern):
        M = self.rows.size
        spent.append(len(candidates) * M * (X.shape[1] + M) + M ** 3 / 3.0)
        return scores(self, X, candidates, lam, kern)

    monkeypatch.setattr(lev._Dictionary, "scores", counted)
    return spent


def test_leverage_levels_cost_about_one_fit(monkeypatch):
    """Smooth low-dimensional data, where d_eff grows slowly as lambda falls: the levels
    stop within n m (d + 100) scoring flops (the kernel block and about a hundred
    products of one fit), not at lambda = 1e-12 or d_eff = m / 4 after tens of levels of
    40 m candidates (several such budgets)."""
    rng = np.random.default_rng(0)
    n, m, d = 20_000, 400, 2
    X = rng.uniform(-1, 1, (n, d))
    spent = scoring_flops(monkeypatch)
    chosen = leverage_centers(X, m, 0.5, seed=0)
    assert np.unique(chosen).size == m
    assert sum(spent) <= n * m * (d + 100), (sum(spent) / (n * m * (d + 100)), len(spent))


def test_leverage_budget_keeps_the_centres_quality_on_digits(monkeypatch):
    """scikit-learn's digits (1797 rows, 64 features) as a ridge regression of the digit:
    where the budget ends the levels early (here at a lambda 4 times larger), the
    centres give the hold-out error of the unbounded levels' within 3%."""
    import nytro.centers as lev
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    errors, levels = {}, {}
    for bounded in (True, False):
        if not bounded:
            monkeypatch.setattr(lev, "_BUDGET_PRODUCTS", np.inf)
        rmse = []
        for seed in range(2):
            perm = np.random.default_rng(seed).permutation(len(X))
            train, test = perm[:1400], perm[1400:]
            est = NystromKRLSRegressor(n_centers=600, sigma=4.0, center_selection="leverage", random_state=seed)
            rmse.append(np.sqrt(np.mean((est.fit(X[train], y[train]).predict(X[test]) - y[test]) ** 2)))
        errors[bounded] = np.mean(rmse)
        levels[bounded] = len(leverage_centers(X[:1400], 600, 4.0, seed=0, return_details=True)[1]["dictionary_sizes"])
    assert levels[True] < levels[False], levels  # the budget binds on this problem
    assert errors[True] <= 1.03 * errors[False], errors


def test_leverage_selection_is_reproducible_through_the_estimator():
    X, y, _ = mixture(1500, 6)
    est = NytroRegressor(n_centers=30, sigma=0.5, center_selection="leverage", random_state=3, max_iter=20)
    a = clone(est).fit(X, y).centers_
    b = clone(est).set_params(n_threads=1).fit(X, y).centers_
    np.testing.assert_array_equal(a, b)


def test_uniform_selection_is_unchanged():
    """center_selection='uniform' draws what n_centers drew before: the same rows of the
    training part, from the same stream of the estimator's random state."""
    p = make_problem(n=200)
    est = NytroRegressor(n_centers=25, random_state=7, max_iter=5, validation_fraction=None).fit(p.X, p.y)
    rng = np.random.RandomState(7)
    seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
    np.testing.assert_array_equal(est.centers_, p.X[nytro.sample_centers(200, 25, seed)])
