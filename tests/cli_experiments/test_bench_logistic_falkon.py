"""benchmarks/_logistic_falkon.py, bench_logistic's LogisticFalkon-style peer: at one
fixed penalty its Newton-CG steps reach the minimiser of the regularised objective that
scipy's L-BFGS-B finds on its own."""
import numpy as np
import scipy.optimize
from scipy.spatial.distance import cdist

from conftest import load_benchmark


def problem(seed=0, n=300, d=4, m=30, sigma=1.25):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    centers = X[rng.permutation(n)[:m]]
    return X, y, centers, sigma


def test_fixed_lambda_reaches_the_minimiser():
    peer_module = load_benchmark("_logistic_falkon")
    X, y, C, sigma = problem()
    lam = 1e-3
    # The objective written out here, apart from the peer's code: theta = (alpha, b).
    K_nm = np.exp(-cdist(X, C, "sqeuclidean") / (2 * sigma ** 2))
    K_mm = np.exp(-cdist(C, C, "sqeuclidean") / (2 * sigma ** 2))
    n, m = K_nm.shape

    def value_and_gradient(theta):
        alpha, b = theta[:m], theta[m]
        f = K_nm @ alpha + b
        r = (1 / (1 + np.exp(-f)) - y) / n
        value = np.mean(np.logaddexp(0, f) - y * f) + 0.5 * lam * alpha @ K_mm @ alpha
        return value, np.append(K_nm.T @ r + lam * K_mm @ alpha, r.sum())

    def hessian(theta):
        p = 1 / (1 + np.exp(-(K_nm @ theta[:m] + theta[m])))
        A = np.hstack([K_nm, np.ones((n, 1))])
        H = A.T @ (A * (p * (1 - p))[:, None]) / n
        H[:m, :m] += lam * K_mm
        return H

    theta0 = np.zeros(m + 1)
    exact = scipy.optimize.minimize(value_and_gradient, theta0, jac=True, method="L-BFGS-B",
                                    options=dict(maxiter=20000, maxcor=50, ftol=1e-15, gtol=1e-13)).x
    peer = peer_module.LogisticFalkonPeer(C, sigma, lambdas=[lam], newton_steps=25, cg_max_iter=200,
                                          cg_tol=1e-14, validation_fraction=0).fit(X, y)
    theta = np.append(peer.coef_[:, 0], peer.intercept_[0])

    g0 = np.linalg.norm(value_and_gradient(theta0)[1])
    g_peer = np.linalg.norm(value_and_gradient(theta)[1])
    g_exact = np.linalg.norm(value_and_gradient(exact)[1])
    assert g_peer <= 1e-9 * g0  # Newton's quadratic convergence ends at rounding
    # Strong convexity near the minimiser: |theta - theta*| <= |g(theta)| / mu for each
    # of the two points, mu the smallest eigenvalue of the Hessian there (twice it, for
    # the Hessian's change between them).
    mu = np.linalg.eigvalsh(hessian(exact))[0]
    assert mu > 0
    assert np.linalg.norm(theta - exact) <= 2 * (g_peer + g_exact) / mu
    assert value_and_gradient(theta)[0] <= value_and_gradient(exact)[0] + 1e-12
    assert peer.lambda_ == lam and peer.validation_log_loss_.size == 0


def test_more_classes_one_vs_rest():
    peer_module = load_benchmark("_logistic_falkon")
    X, _, C, sigma = problem(seed=1)
    y = np.digitize(X[:, 0] + X[:, 1] ** 2, [0.0, 1.5])  # three classes
    peer = peer_module.LogisticFalkonPeer(C, sigma, lambdas=np.logspace(-2, -5, 4)).fit(X, y)
    P = peer.predict_proba(X)
    assert P.shape == (len(X), 3) and np.allclose(P.sum(axis=1), 1)
    assert peer.coef_.shape == (len(C), 3) and peer.validation_log_loss_.shape == (4,)
    assert peer.lambda_ in np.logspace(-2, -5, 4)
    assert np.mean(peer.predict(X) != y) < 0.2
