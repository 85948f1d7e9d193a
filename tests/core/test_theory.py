"""nytro.theory against closed forms, the paper's inequalities and the paper's claims about
Figure 1 that follow from the Discussion's complexities."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference
from nytro import theory as th

LAMS = np.logspace(-5, 0, 11)


def random_orthonormal(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def gaussian_gram(n, d=3, sigma=0.7, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return nytro.reference.gaussian_kernel(X, X, sigma)


# ------------------------------------------------------------------ dimensions
@pytest.mark.parametrize("n", [1, 7, 50])
def test_identity_kernel_closed_forms(n):
    K = np.eye(n)
    expected = n / (1 + LAMS * n)
    np.testing.assert_allclose(th.effective_dimension(K, LAMS), expected, rtol=1e-12)
    np.testing.assert_allclose(th.max_leverage_dimension(K, LAMS), expected, rtol=1e-12)
    assert th.effective_dimension(K, 0.1) == pytest.approx(n / (1 + 0.1 * n), rel=1e-12)
    assert np.ndim(th.effective_dimension(K, 0.1)) == 0


def test_known_eigendecomposition():
    rng = np.random.default_rng(1)
    n = 40
    U = random_orthonormal(n, rng)
    s = np.concatenate([np.logspace(1, -8, 30), np.zeros(10)])  # rank 30
    K = (U * s) @ U.T
    for lam in LAMS:
        shrink = s / (s + lam * n)
        assert th.effective_dimension(K, lam) == pytest.approx(shrink.sum(), rel=1e-9, abs=1e-12)
        dense = np.diag(K @ np.linalg.inv(K + lam * n * np.eye(n)))
        np.testing.assert_allclose(th.leverage_scores(K, lam), dense, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(th.leverage_scores(K, lam), (U * U) @ shrink, rtol=1e-8, atol=1e-12)
        assert th.max_leverage_dimension(K, lam) == pytest.approx(n * dense.max(), rel=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dimension_inequalities_unit_diagonal(seed):
    """d_eff <= d~ <= min(n, 1/lambda) (Sec. 2.2) for kernels with k(x, x) = 1."""
    rng = np.random.default_rng(seed)
    n = 60
    B = rng.standard_normal((n, 8)) @ rng.standard_normal((8, n)) + 0.1 * rng.standard_normal((n, n))
    C = B @ B.T
    correlation = C / np.sqrt(np.outer(np.diag(C), np.diag(C)))
    for K in (gaussian_gram(n, seed=seed), correlation):
        d_eff, d_tilde = th.effective_dimension(K, LAMS), th.max_leverage_dimension(K, LAMS)
        assert np.all(d_eff <= d_tilde * (1 + 1e-12))
        assert np.all(d_tilde <= np.minimum(n, 1 / LAMS) * (1 + 1e-12))
        assert np.all(np.diff(d_eff) < 0)  # decreasing in lambda
        assert d_tilde[-1] < d_tilde[0]


def test_dimension_bound_scales_with_diagonal():
    """Without k(x, x) <= 1 the bound is max_i K_ii / lambda, which can exceed 1/lambda."""
    K = 25.0 * np.eye(10)
    d_tilde = th.max_leverage_dimension(K, 1.0)
    assert 1.0 < d_tilde <= 25.0
    assert d_tilde == pytest.approx(10 * 25 / (25 + 10))


def test_f_opt_norm2_snr_lambda_star():
    K = gaussian_gram(30, sigma=0.5)
    a = np.random.default_rng(3).standard_normal(30)
    mu = K @ a
    assert th.f_opt_norm2(K, mu) == pytest.approx(a @ K @ a, rel=1e-6)
    # rank-deficient K: mu outside range(K) is ignored by K^+
    U = random_orthonormal(6, np.random.default_rng(4))
    s = np.array([3.0, 2.0, 1.0, 0.0, 0.0, 0.0])
    K2 = (U * s) @ U.T
    mu2 = U @ np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert th.f_opt_norm2(K2, mu2) == pytest.approx(1 / 3 + 4 / 2 + 9 / 1)
    assert th.snr(8.0, 2.0) == 4.0
    np.testing.assert_allclose(th.snr(np.array([1.0, 3.0]), 0.5), [2.0, 6.0])
    assert th.lambda_star(100, 4.0) == pytest.approx(1 / 400)
    assert th.stopping_time(th.lambda_star(100, 4.0)) == pytest.approx(400)
    assert th.stopping_time(0.5, gamma=4.0) == pytest.approx(0.5)


@pytest.mark.parametrize("call", [
    lambda: th.effective_dimension(np.ones((2, 3)), 0.1),
    lambda: th.effective_dimension(np.array([[1.0, 0.5], [0.0, 1.0]]), 0.1),
    lambda: th.effective_dimension(np.eye(3), 0.0),
    lambda: th.max_leverage_dimension(np.eye(3), -1.0),
    lambda: th.snr(1.0, 0.0),
    lambda: th.snr(-1.0, 1.0),
    lambda: th.lambda_star(0, 1.0),
    lambda: th.f_opt_norm2(np.eye(3), np.ones(4)),
    lambda: th.regime_map(1e6, np.ones((2, 2)), np.ones(3)),
    lambda: th.c_t(1.5),
    lambda: th.nytro_filter(np.array([3.0]), 2, n=2),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


# ---------------------------------------------------------------- complexities
N = 1e6
D_GRID = np.logspace(0, 6, 301)
SNR_GRID = np.logspace(-7, 4, 331)


def test_time_formulas():
    n, d, snr = 1e4, 30.0, 0.2
    L = np.log(n * n * snr)  # log(n / lambda*)
    m, t = d * L, n * snr
    assert th.subsample_size(n, d, snr) == pytest.approx(m)
    assert th.time_krls(n, d, snr) == pytest.approx(n ** 3)
    assert th.time_early_stopping(n, d, snr) == pytest.approx(n ** 3 * snr)
    assert th.time_nkrls(n, d, snr) == pytest.approx(n * d ** 2 * L ** 2)
    assert th.time_nytro(n, d, snr) == pytest.approx(n * d * L / th.lambda_star(n, snr))
    assert th.time_nytro(n, d, snr) == pytest.approx(n * m * t)
    times = th.complexity_times(n, D_GRID[:, None], SNR_GRID[None, :])
    assert times.shape == (4, len(D_GRID), len(SNR_GRID))


def test_regime_map_shape_and_feasibility():
    W = th.regime_map(N, D_GRID, SNR_GRID)
    assert W.shape == (len(D_GRID), len(SNR_GRID))
    infeasible = D_GRID[:, None] > np.minimum(N, N * SNR_GRID)[None, :]
    assert np.array_equal(np.isnan(W), infeasible)
    assert set(np.unique(W[~infeasible])) <= {0.0, 1.0, 2.0, 3.0}


def test_regime_map_matches_closed_form_rule():
    """argmin of the four times = (m < n ? (t* < m ? NYTRO : NKRLS) : (t* < n ? ES : KRLS))."""
    D, S = D_GRID[:, None], SNR_GRID[None, :]
    m, t = th.subsample_size(N, D, S), th.stopping_time(th.lambda_star(N, S))
    rule = np.where(m < N, np.where(t < m, 3, 2), np.where(t < N, 1, 0)).astype(float)
    W = th.regime_map(N, D_GRID, SNR_GRID)
    feasible = ~np.isnan(W)
    # away from exact ties (a boundary falling on a grid point)
    clear = (np.abs(np.log(m / N)) > 1e-9) & (np.abs(np.log(t / m)) > 1e-9) & (np.abs(np.log(t / N)) > 1e-9)
    assert np.array_equal(W[feasible & clear], rule[feasible & clear])


def test_every_method_wins_somewhere():
    W = th.regime_map(N, D_GRID, SNR_GRID)
    for i, name in enumerate(th.METHODS):
        assert np.any(W == i), f"{name} never wins"
    assert th.METHODS == ("KRLS", "Early Stopping", "NKRLS", "NYTRO")
    assert th.METHOD_COLORS.keys() == set(th.METHODS)


def test_discussion_two_regimes_nkrls_vs_nytro():
    """Discussion: d~ <= 1/(lambda* log(n/lambda*)) -> NKRLS faster, above -> NYTRO faster."""
    D, S = D_GRID[:, None], SNR_GRID[None, :]
    lam = th.lambda_star(N, S)
    threshold = 1 / (lam * np.log(N / lam))
    faster_nytro = th.time_nytro(N, D, S) < th.time_nkrls(N, D, S)
    clear = np.abs(np.log(D / threshold)) > 1e-9
    assert np.array_equal(faster_nytro[clear], (D > threshold)[clear])


def test_early_stopping_cost_and_krls():
    """After Theorem 3: early stopping costs O(n^2 t*) = O(n^3 SNR), better than KRLS for SNR < 1."""
    for snr in (1e-3, 0.5, 2.0, 100.0):
        assert th.time_early_stopping(N, 10.0, snr) == pytest.approx(N ** 3 * snr)
        assert (th.time_early_stopping(N, 10.0, snr) < th.time_krls(N, 10.0, snr)) == (snr < 1)


def test_nkrls_beats_krls_below_n_over_log():
    """After Theorem 1: NKRLS more efficient than KRLS when d~ < n / log(n / lambda*)."""
    D, S = D_GRID[:, None], SNR_GRID[None, :]
    c1 = N / np.log(N / th.lambda_star(N, S))
    faster = th.time_nkrls(N, D, S) < th.time_krls(N, D, S)
    clear = np.abs(np.log(D / c1)) > 1e-9
    assert np.array_equal(faster[clear], np.broadcast_to(D < c1, faster.shape)[clear])


def test_nytro_wins_for_low_snr_at_large_dimension():
    """Discussion: NYTRO preferable for noisy problems. With the formulas: for SNR below
    1/log(n/lambda*) the largest possible d~ (= n SNR) goes to NYTRO, small d~ to NKRLS."""
    for snr in (1e-5, 1e-3, 1e-2):
        assert snr < 1 / np.log(N * N * snr)
        top = np.array([N * snr])
        assert th.regime_map(N, top, [snr])[0, 0] == 3
        assert th.regime_map(N, top / 2, [snr])[0, 0] == 3
        below_c2 = N * snr / np.log(N * N * snr) / 2
        assert th.regime_map(N, [below_c2], [snr])[0, 0] == 2


def test_large_dimension_extremes():
    """Discussion: early stopping effective when the dimensionality is very large, NKRLS
    when very small; KRLS only at SNR >= 1 with d~ close to n (above n / log(n/lambda*))."""
    W = th.regime_map(N, D_GRID, SNR_GRID)
    D, S = np.meshgrid(D_GRID, SNR_GRID, indexing="ij")
    c1 = N / np.log(N * N * S)
    assert np.all(D[W == 1] >= c1[W == 1]) and np.all(S[W == 1] < 1)
    assert np.all(D[W == 0] >= c1[W == 0]) and np.all(S[W == 0] >= 1)
    assert np.all(W[0][~np.isnan(W[0])] >= 2)  # d~ = 1: a subsampled method everywhere
    assert th.regime_map(N, [N / 2], [0.5])[0, 0] == 1
    assert th.regime_map(N, [N], [5.0])[0, 0] == 0


def test_nkrls_region_peaks_at_snr_one():
    """Discussion: a peak around SNR ~ 1 where NKRLS is the method up to the largest d~."""
    W = th.regime_map(N, D_GRID, SNR_GRID)
    top = np.array([D_GRID[W[:, j] == 2].max() if np.any(W[:, j] == 2) else 0 for j in range(len(SNR_GRID))])
    assert 0.5 <= SNR_GRID[np.argmax(top)] <= 2


def test_nytro_region_grows_and_c1_flattens_with_n():
    """Discussion: the NYTRO region grows with n and curve c1 (m = n) flattens as n grows.
    (Measured in log10 units of the (SNR, d~) plane.)"""
    areas, slopes = [], []
    for n in (1e4, 1e6, 1e9):
        snr = np.logspace(-np.log10(n), 0, 400)
        d = np.logspace(0, np.log10(n), 400)
        cell = np.log10(snr[1] / snr[0]) * np.log10(d[1] / d[0])
        areas.append(np.sum(th.regime_map(n, d, snr) == 3) * cell)
        c1 = th.regime_boundaries(n, np.array([0.1, 10.0]))["c1"]
        slopes.append(abs(np.log10(c1[1] / c1[0])) / 2)
    assert areas[0] < areas[1] < areas[2]
    assert slopes[0] > slopes[1] > slopes[2]


def test_no_nytro_region_above_snr_one():
    """A consequence of the formulas at odds with the Discussion's text ("when SNR > 1 NYTRO
    is faster when the dimension is sufficiently large"): NYTRO needs t* = n SNR < m and
    m < n at once, so it never wins for SNR >= 1. (It beats NKRLS there when m > t*, but
    then m > n and KRLS beats both.)"""
    W = th.regime_map(N, D_GRID, SNR_GRID)
    assert not np.any(W[:, SNR_GRID >= 1] == 3)
    D, S = D_GRID[:, None], SNR_GRID[None, :]
    nytro_beats_nkrls = (th.time_nytro(N, D, S) < th.time_nkrls(N, D, S)) & th.feasible(N, D, S) & (S > 1)
    assert np.any(nytro_beats_nkrls)


def test_regime_boundaries():
    snr = np.array([1e-3, 1.0, 10.0])
    curves = th.regime_boundaries(N, snr)
    L = np.log(N * N * snr)
    np.testing.assert_allclose(curves["feasible"], [1e3, 1e6, 1e6])
    np.testing.assert_allclose(curves["c1"], N / L)
    np.testing.assert_allclose(curves["c2"], N * snr / L)


# --------------------------------------------------- Proposition 2 and Theorems 1-4
def nystrom_problem(n=80, m=15, sigma=0.6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    mu = np.sin(3 * X[:, 0]) + X[:, 1] ** 2
    C = X[nytro.reference.sample_centers(n, m, seed + 1)]
    R = nytro.reference.nystrom_factor(nytro.reference.gaussian_kernel(C, C, sigma))
    A = nytro.reference.gaussian_kernel(X, C, sigma) @ R
    return X, C, mu, A


def test_spectral_risk_matches_dense_q_matrices():
    X, _, mu, A = nystrom_problem()
    n = len(mu)
    Z = A @ A.T
    design = th.SpectralDesign.from_factor(A, mu)
    noise = 0.3
    for t in (2, 7, 50, 400):
        Q = np.eye(n) - np.linalg.matrix_power(np.eye(n) - Z / n, t)
        v, b = design.nytro(t, noise)
        assert (v, b) == pytest.approx(th.excess_risk(Q, mu, noise), rel=1e-7, abs=1e-14)
        lam = 1 / t
        Q = Z @ np.linalg.inv(Z + lam * n * np.eye(n))
        v, b = design.nkrls(lam, noise)
        assert (v, b) == pytest.approx(th.excess_risk(Q, mu, noise), rel=1e-7, abs=1e-14)
    v, b = design.nytro(np.array([2.0, 7.0]), noise)
    assert v.shape == b.shape == (2,)


def test_kols_risk_is_sigma2_rank_over_n():
    """Theorem 1 via Proposition 2: Q = P = K^+ K gives E R = sigma^2 d* / n."""
    rng = np.random.default_rng(5)
    n, r = 20, 7
    U = random_orthonormal(n, rng)
    K = (U[:, :r] * rng.uniform(1, 2, r)) @ U[:, :r].T
    P = np.linalg.pinv(K) @ K
    v, b = th.excess_risk(P, rng.standard_normal(n), 0.4, P=P)
    assert v == pytest.approx(0.4 * r / n) and b == pytest.approx(0, abs=1e-20)


@pytest.mark.parametrize("module", [nytro, nytro.reference], ids=["core", "reference"])
def test_q_matrices_are_the_algorithms(module):
    """Q_t y and Q_lambda y are the fitted values of NYTRO (step 1/n, the paper's gamma/n) and
    NKRLS: the normalisation used for Theorem 4 is the algorithms'."""
    X, C, mu, A = nystrom_problem(n=70, m=12)
    n, sigma = len(mu), 0.6
    y = mu + 0.2 * np.random.default_rng(9).standard_normal(n)
    K_nm = nytro.reference.gaussian_kernel(X, C, sigma)
    Z = A @ A.T
    t = 25
    path = module.nytro_path(X, y, C, sigma, max_iter=t, step_size="paper")  # no hold-out: exactly t steps
    Q = np.eye(n) - np.linalg.matrix_power(np.eye(n) - Z / n, t)
    np.testing.assert_allclose(K_nm @ path.coef, Q @ y, rtol=1e-7, atol=1e-9)
    lam = 1 / t
    fit = module.nkrls_path(X, y, C, sigma, lambdas=[lam])
    Q = Z @ np.linalg.inv(Z + lam * n * np.eye(n))
    np.testing.assert_allclose(K_nm @ fit.coef, Q @ y, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_theorem4_on_random_factors(seed):
    """E R(NYTRO_t) <= c_t E R(NKRLS_{1/(gamma t)}) for any A with ||A A^T|| <= n / gamma,
    any mu and noise, and the proof's sharper constant too."""
    rng = np.random.default_rng(seed)
    n, k = 50, 12
    A = rng.standard_normal((n, k)) * np.logspace(0, -4, k)
    A *= np.sqrt(n / np.linalg.norm(A, 2) ** 2)  # ||Z|| = n: the extreme step
    mu = rng.standard_normal(n)
    design = th.SpectralDesign.from_factor(A, mu)
    t = np.unique(np.round(np.logspace(np.log10(2), 5, 120)))
    for noise in (1e-4, 0.1, 10.0):
        v1, b1 = design.nytro(t, noise)
        v2, b2 = design.nkrls(1 / t, noise)
        ratio = (v1 + b1) / (v2 + b2)
        assert np.all(ratio <= th.c_t_proof(t) * (1 + 1e-12))
        assert np.all(th.c_t_proof(t) <= th.c_t(t))


def test_constants():
    assert th.c_t(2) == pytest.approx(16)
    assert th.c_t_proof(2) == pytest.approx(9)
    assert th.c_t(1e9) == pytest.approx(4, rel=1e-8)


def test_theorem2_bound():
    """E R(KRLS_lambda*) <= sigma^2 d_eff(lambda*) / n with lambda* = 1/(n SNR)."""
    K = gaussian_gram(60, sigma=0.8, seed=2)
    a = np.random.default_rng(2).standard_normal(60) * 0.3
    mu = K @ a
    n = len(mu)
    for noise in (0.01, 0.5, 5.0):
        lam = th.lambda_star(n, th.snr(th.f_opt_norm2(K, mu), noise))
        v, b = th.SpectralDesign.from_gram(K, mu).nkrls(lam, noise)
        assert v + b <= noise * th.effective_dimension(K, lam) / n
