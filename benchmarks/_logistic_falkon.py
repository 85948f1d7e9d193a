"""A LogisticFalkon-style peer for bench_logistic.py: Tikhonov-regularised logistic
regression on Nystrom centres, a decreasing sequence of penalties, Newton steps solved by
Nystrom-preconditioned conjugate gradients.

Written for this benchmark in NumPy/SciPy after the method (Marteau-Ferey, Bach and
Rudi's Newton path over decreasing penalties, NeurIPS 2019, as Falkon's LogisticFalkon of
Meanti et al., NeurIPS 2020, runs it); no code of theirs is used.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.spatial.distance import cdist
from scipy.special import expit, log_expit

# The default penalties: geometric, one decade apart, from a penalty under which the
# model is close to a constant down to one where the Nystrom model interpolates almost
# as much as it can (the objective's data term is a mean, so lambda is per row).
LAMBDAS = np.logspace(-3, -9, 7)
# Cholesky of K_mm: the jitter relative to m, raised tenfold until the factor exists,
# since Gaussian K_mm of close centres is singular to rounding.
_JITTER = 1e-12


def gaussian_kernel(X, Z, sigma):
    """k(x, z) = exp(-|x - z|^2 / (2 sigma^2)), the kernel of nytro's "gaussian"."""
    return np.exp(-cdist(X, Z, "sqeuclidean") / (2.0 * sigma ** 2))


def _upper_cholesky(S, scale):
    jitter = _JITTER * scale
    while True:
        try:
            return scipy.linalg.cholesky(S + jitter * np.eye(len(S)), lower=False)
        except np.linalg.LinAlgError:
            jitter *= 10.0


class LogisticFalkonPeer:
    """LogisticFalkon-style kernel logistic regression, CPU NumPy, for comparison.

    The model is f(x) = k(x, C) alpha + b on the m given centres C, fitted to 0/1 targets
    y by minimising, for each penalty lambda of a decreasing sequence,

        F(alpha, b) = (1/n) sum_i [log(1 + e^f_i) - y_i f_i] + (lambda / 2) alpha^T K_mm alpha,

    with ``newton_steps`` Newton steps per lambda warm-started from the previous
    lambda's solution (the first from zero). Each Newton system H p = -g, H =
    (1/n) K_nm^T D K_nm + lambda K_mm on alpha (D the logistic curvatures p (1 - p)) and
    the intercept's row and column, is solved by preconditioned conjugate gradients. The
    preconditioner is Falkon's: with T the upper Cholesky factor of K_mm and A that of
    (1/m) T D_C T^T + lambda I (D_C the current curvatures at the centres, which stand
    for the n rows as a uniform sample of them), B = T^-1 A^-1 gives B B^T ~ H^-1 on
    alpha, since (1/n) K_nm^T D K_nm ~ (1/m) K_mm D_C K_mm; the intercept is scaled by
    the mean curvature. Every lambda's model is scored on a hold-out part of the
    training rows (``validation_fraction``, stratified) and the one of the smallest
    hold-out log loss is kept. More than two classes are fitted one-vs-rest, one binary
    problem per class over the same penalties, their probabilities normalised to sum to
    one, the penalty selected on the normalised probabilities' log loss.

    How it differs from Falkon's LogisticFalkon (FalkonML/falkon): dense NumPy on the CPU
    (K_nm is formed and kept, O(n m) memory; no GPU, no out-of-core blocks); an
    unpenalised intercept, absent from Falkon; a backtracking (Armijo) line search on
    each Newton step, where Falkon takes the full step; the penalty chosen on hold-out
    rows, where Falkon ends at the last penalty given; one-vs-rest for more than two
    classes. Its own code, written from the method's description.

    Parameters
    ----------
    centers : ndarray of shape (m, d)
        The Nystrom centres (the bench passes NYTRO's, so both use the same ones).
    sigma : float
        Gaussian bandwidth, k = exp(-|x - x'|^2 / (2 sigma^2)).
    lambdas : sequence of float, optional
        The penalties, in the order they are visited (decreasing); default LAMBDAS.
    newton_steps : int
        Newton steps per penalty.
    cg_max_iter : int
        Conjugate-gradient iterations per Newton step at most.
    cg_tol : float
        CG stops once the preconditioned residual is this small relative to its start.
    validation_fraction : float
        Share of the rows held out to choose lambda; 0 keeps the last lambda's model and
        uses every row.
    random_state : int
        Seed of the hold-out split.

    Attributes
    ----------
    classes_ : ndarray
        The labels, sorted.
    lambda_ : float
        The selected penalty.
    coef_ : ndarray of shape (m, n_columns)
        alpha of each binary problem (one column for two classes).
    intercept_ : ndarray of shape (n_columns,)
    validation_log_loss_ : ndarray of shape (n_lambdas,)
        Hold-out log loss of each penalty's model (empty without a hold-out part).
    cg_iterations_ : int
        CG iterations over the whole path, all classes together.
    """

    def __init__(self, centers, sigma, *, lambdas=None, newton_steps=2, cg_max_iter=50, cg_tol=1e-7,
                 validation_fraction=0.2, random_state=0):
        self.centers = centers
        self.sigma = sigma
        self.lambdas = lambdas
        self.newton_steps = newton_steps
        self.cg_max_iter = cg_max_iter
        self.cg_tol = cg_tol
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    # -- fitting -------------------------------------------------------------------
    def fit(self, X, y):
        from sklearn.model_selection import train_test_split
        C = np.asarray(self.centers, dtype=np.float64)
        X = np.asarray(X, dtype=np.float64)
        self.classes_, index = np.unique(y, return_inverse=True)
        Y = (index[:, None] == np.arange(len(self.classes_))).astype(np.float64)
        if len(self.classes_) == 2:
            Y = Y[:, 1:]
        lambdas = np.asarray(LAMBDAS if self.lambdas is None else self.lambdas, dtype=np.float64)
        if self.validation_fraction > 0:
            train, val = train_test_split(np.arange(len(X)), test_size=self.validation_fraction,
                                          random_state=self.random_state, stratify=index)
        else:
            train, val = np.arange(len(X)), np.arange(0)
        K_mm = gaussian_kernel(C, C, self.sigma)
        K_nm = gaussian_kernel(X[train], C, self.sigma)
        K_val = gaussian_kernel(X[val], C, self.sigma) if len(val) else None
        T = _upper_cholesky(K_mm, len(C))
        alpha = np.zeros((len(C), Y.shape[1]))
        b = np.zeros(Y.shape[1])
        self.cg_iterations_ = 0
        scores, best = [], None
        for lam in lambdas:
            for k in range(Y.shape[1]):
                for _ in range(self.newton_steps):
                    alpha[:, k], b[k], its = newton_step(K_nm, K_mm, T, Y[train, k], lam, alpha[:, k], b[k],
                                                         cg_max_iter=self.cg_max_iter, cg_tol=self.cg_tol)
                    self.cg_iterations_ += its
            if K_val is not None:
                score = _log_loss(self._proba_from_logits(K_val @ alpha + b), index[val])
                scores.append(score)
                if best is None or score < best[0]:
                    best = (score, lam, alpha.copy(), b.copy())
        if best is None:
            best = (None, lambdas[-1], alpha, b)
        _, self.lambda_, self.coef_, self.intercept_ = best
        self.validation_log_loss_ = np.asarray(scores)
        return self

    # -- prediction ----------------------------------------------------------------
    def decision_function(self, X):
        return gaussian_kernel(np.asarray(X, dtype=np.float64), self.centers, self.sigma) @ self.coef_ \
            + self.intercept_

    def predict_proba(self, X):
        return self._proba_from_logits(self.decision_function(X))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @staticmethod
    def _proba_from_logits(Z):
        P = expit(Z)
        if P.shape[1] == 1:
            return np.hstack([1.0 - P, P])
        return P / P.sum(axis=1, keepdims=True)


def _log_loss(P, index):
    return float(-np.mean(np.log(np.clip(P[np.arange(len(index)), index], 1e-300, None))))


def objective(K_nm, K_mm, y, lam, alpha, b):
    """F(alpha, b), the regularised risk one Newton path minimises (see the class
    docstring), and the logits f = K_nm alpha + b."""
    f = K_nm @ alpha + b
    # log(1 + e^f) - y f = -log sigmoid(f) + (1 - y) f, without overflow
    risk = np.mean(-log_expit(f) + (1.0 - y) * f)
    return risk + 0.5 * lam * alpha @ (K_mm @ alpha), f


def newton_step(K_nm, K_mm, T, y, lam, alpha, b, *, cg_max_iter, cg_tol):
    """One damped Newton step on F at (alpha, b): the direction by preconditioned CG, the
    step halved until Armijo's decrease holds. Returns the new (alpha, b) and the CG
    iterations taken. T: the upper Cholesky factor of K_mm (the preconditioner's)."""
    n, m = K_nm.shape
    F0, f = objective(K_nm, K_mm, y, lam, alpha, b)
    p = expit(f)
    D = p * (1.0 - p)
    r = (p - y) / n
    g_alpha = K_nm.T @ r + lam * (K_mm @ alpha)
    g_b = r.sum()

    # Falkon's preconditioner at the curvatures of the centres' logits.
    D_c = expit(K_mm @ alpha + b)
    D_c = D_c * (1.0 - D_c)
    A = _upper_cholesky((T * D_c) @ T.T / m + lam * np.eye(m), 1.0)
    d_b = max(D.mean(), np.finfo(np.float64).tiny)

    def hessian(v_alpha, v_b):
        s = D * (K_nm @ v_alpha + v_b) / n
        return K_nm.T @ s + lam * (K_mm @ v_alpha), s.sum()

    def precondition(r_alpha, r_b):
        # B B^T r with B = T^-1 A^-1: two triangular solves each way
        u = scipy.linalg.solve_triangular(T, r_alpha, trans="T")
        u = scipy.linalg.solve_triangular(A, u, trans="T")
        u = scipy.linalg.solve_triangular(A, u)
        return scipy.linalg.solve_triangular(T, u), r_b / d_b

    # Preconditioned CG on H (x_alpha, x_b) = -(g_alpha, g_b), from zero.
    x_a, x_b = np.zeros(m), 0.0
    r_a, r_b = -g_alpha, -g_b
    z_a, z_b = precondition(r_a, r_b)
    q_a, q_b = z_a.copy(), z_b
    rz = r_a @ z_a + r_b * z_b
    rz0, its = rz, 0
    while its < cg_max_iter and rz > cg_tol ** 2 * rz0 and rz > 0:
        Hq_a, Hq_b = hessian(q_a, q_b)
        step = rz / (q_a @ Hq_a + q_b * Hq_b)
        x_a += step * q_a
        x_b += step * q_b
        r_a -= step * Hq_a
        r_b -= step * Hq_b
        z_a, z_b = precondition(r_a, r_b)
        rz_new = r_a @ z_a + r_b * z_b
        q_a, q_b = z_a + (rz_new / rz) * q_a, z_b + (rz_new / rz) * q_b
        rz = rz_new
        its += 1

    slope = g_alpha @ x_a + g_b * x_b
    if not slope < 0:  # at the minimiser to rounding: nothing left to gain
        return alpha, b, its
    t = 1.0
    for _ in range(30):
        F1, _ = objective(K_nm, K_mm, y, lam, alpha + t * x_a, b + t * x_b)
        # a decrease within the rounding of F is not judged, so that rounding alone does
        # not shorten the last steps
        if F1 <= F0 + 1e-4 * t * slope + 16 * np.finfo(np.float64).eps * abs(F0):
            return alpha + t * x_a, b + t * x_b, its
        t *= 0.5
    return alpha, b, its
