"""The paper's theory in NumPy: dimensions, signal-to-noise ratio, complexities, and the
fixed-design bias-variance formula (Angles, Camoriano, Rudi, Rosasco, "NYTRO: When
Subsampling Meets Early Stopping"; equation and theorem numbers of paper/nytro_paper.tex).

Symbols: K the n x n kernel matrix on the training points, lambda > 0 a Tikhonov
parameter (the penalty is lambda ||f||^2, so it enters as K + lambda n I), mu = E y the
noiseless targets, sigma^2 the noise variance, gamma the NYTRO step factor (step
gamma / n), t the iteration count.

Three groups:

* dimensions and SNR (Sec. 2): ``effective_dimension`` (d_eff), ``max_leverage_dimension``
  (d~, eq. 5), ``f_opt_norm2`` and ``snr`` (eq. 6), ``lambda_star`` (Theorem 2);
* the complexities of the Discussion (Sec. 3.3) and the regime map of Figure 1:
  ``time_krls``, ``time_early_stopping``, ``time_nkrls``, ``time_nytro``, ``regime_map``;
* Proposition 2's exact expected excess risk, E R = (sigma^2/n) Tr(Q^2) +
  (1/n) ||P (I - Q) mu||^2, dense (``excess_risk``) and, for the filters of NYTRO and
  NKRLS, spectral (``SpectralDesign``: every t or lambda in O(rank) once the SVD of
  A = K_nm R is known), with the constants of Theorems 3-4 (``c_t``, ``c_t_proof``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "effective_dimension", "leverage_scores", "max_leverage_dimension", "f_opt_norm2", "snr",
    "lambda_star", "stopping_time", "subsample_size", "time_krls", "time_early_stopping", "time_nkrls",
    "time_nytro", "complexity_times", "feasible", "regime_map", "regime_boundaries", "METHODS",
    "METHOD_COLORS", "excess_risk", "nytro_filter", "tikhonov_filter", "SpectralDesign", "c_t", "c_t_proof",
]

# Order of the methods in complexity_times / regime_map (a map value i means METHODS[i]).
METHODS = ("KRLS", "Early Stopping", "NKRLS", "NYTRO")
# Figure 1's caption: purple NYTRO, blue Early Stopping, orange KRLS, yellow NKRLS.
METHOD_COLORS = {"KRLS": "#f28e2b", "Early Stopping": "#4e79a7", "NKRLS": "#f5d63d", "NYTRO": "#8e44ad"}


# ------------------------------------------------------------------------ helpers
def _kernel_matrix(K) -> np.ndarray:
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"K must be a non-empty square matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("K has non-finite entries")
    scale = max(np.abs(K).max(), np.finfo(np.float64).tiny)
    if np.abs(K - K.T).max() > 1e-8 * scale:
        raise ValueError("K must be symmetric")
    return (K + K.T) / 2


def _spectrum(K, vectors=False):
    """Eigenvalues (clipped at 0: K is PSD, rounding can make the smallest negative) and,
    if asked, eigenvectors of a symmetric PSD K."""
    K = _kernel_matrix(K)
    if vectors:
        s, U = np.linalg.eigh(K)
        return np.clip(s, 0, None), U
    return np.clip(np.linalg.eigvalsh(K), 0, None)


def _positive(name, value):
    value = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(value)) or np.any(value <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value if value.ndim == 0 else 'an array'}")
    return value


def _shrinkage(s, lam, n):
    """s / (s + lam n) for every eigenvalue s (last axis) and every lam (leading axes)."""
    lam = _positive("lam", lam)
    return s / (s + lam[..., None] * n)


# ------------------------------------------------------------- dimensions and SNR
def effective_dimension(K, lam):
    """d_eff(lambda) = Tr(K (K + lambda n I)^-1) = sum_i s_i / (s_i + lambda n)   (Sec. 2.2)

    with s_i the eigenvalues of K and n = K.shape[0]. ``lam`` may be a scalar or an
    array (one value per lambda, same shape).
    """
    s = _spectrum(K)
    return _shrinkage(s, lam, len(s)).sum(-1)


def leverage_scores(K, lam):
    """The diagonal of K (K + lambda n I)^-1: l_i = sum_j U_ij^2 s_j / (s_j + lambda n) for
    K = U diag(s) U^T. Shape (n,) for a scalar lam, lam.shape + (n,) otherwise."""
    s, U = _spectrum(K, vectors=True)
    return _shrinkage(s, lam, len(s)) @ (U * U).T


def max_leverage_dimension(K, lam):
    """d~(lambda) = n max_i (K (K + lambda n I)^-1)_ii   (eq. 5)

    The dimension that sets the Nystrom subsample size m (Theorem 1 of Bach 2013, the
    paper's Theorem 4 condition). Always d_eff(lambda) <= d~(lambda) <= min(n, kappa^2 /
    lambda) with kappa^2 = max_i K_ii; the paper writes 1/lambda, for kernels with
    k(x, x) <= 1 such as the Gaussian.
    """
    n = np.asarray(K).shape[0]
    return n * leverage_scores(K, lam).max(-1)


def f_opt_norm2(K, mu, rcond=None):
    """||f_opt||_H^2 = alpha_opt^T K alpha_opt with alpha_opt = K^+ mu, i.e. mu^T K^+ mu
    (Sec. 2.2, before eq. 6): the squared RKHS norm of the best function in H_n.

    Computed as sum_{s_i > rcond s_max} (u_i^T mu)^2 / s_i. rcond (default n * eps) is
    the cut-off of the pseudo-inverse: for an ill-conditioned K (a Gaussian kernel) the
    value depends on it unless mu lies in the span of the top eigenvectors, e.g. mu = K a
    with a known (then the norm is a^T K a exactly).
    """
    s, U = _spectrum(K, vectors=True)
    mu = np.asarray(mu, dtype=np.float64)
    if mu.shape != (len(s),):
        raise ValueError(f"mu must have shape ({len(s)},), got {mu.shape}")
    rcond = len(s) * np.finfo(np.float64).eps if rcond is None else float(rcond)
    keep = s > rcond * s.max()
    c = U[:, keep].T @ mu
    return float(np.sum(c * c / s[keep]))


def snr(f_opt_norm2, noise_var):
    """SNR = ||f_opt||_H^2 / sigma^2   (eq. 6)."""
    f_opt_norm2 = np.asarray(f_opt_norm2, dtype=np.float64)
    if np.any(f_opt_norm2 < 0):
        raise ValueError("f_opt_norm2 must be >= 0")
    return f_opt_norm2 / _positive("noise_var", noise_var)


def lambda_star(n, snr):
    """lambda* = 1 / (n SNR)   (Theorem 2): KRLS at lambda* has E R <= sigma^2 d_eff(lambda*) / n."""
    return 1.0 / (_positive("n", n) * _positive("snr", snr))


def stopping_time(lam, gamma=1.0):
    """t = 1 / (gamma lambda): the iteration count matched to lambda in Theorems 3-4
    (step gamma / n; gamma = 1 / max_i k(x_i, x_i) = 1 for the Gaussian kernel)."""
    return 1.0 / (_positive("gamma", gamma) * _positive("lam", lam))


# --------------------------------------------------------------- complexities (Sec. 3.3)
def subsample_size(n, d_tilde, snr):
    """m = d~ log(n / lambda*) = d~ log(n^2 SNR): the Nystrom subsample of Theorem 1 (Bach's
    condition m >= (32 d~ / delta + 2) log(||K|| n / (delta lambda)) with delta fixed and
    constants and ||K|| dropped), as used in the Discussion."""
    n, d_tilde = _positive("n", n), _positive("d_tilde", d_tilde)
    return d_tilde * np.log(n / lambda_star(n, snr))


def time_krls(n, d_tilde, snr):
    """KRLS at lambda*: one n x n solve, T = n^3 (Sec. 2.2: O(n^3) per lambda).
    d_tilde and snr only set the output's shape."""
    n = _positive("n", n)
    return np.broadcast_to(n ** 3, np.broadcast(n, _positive("d_tilde", d_tilde), _positive("snr", snr)).shape) + 0.0


def time_early_stopping(n, d_tilde, snr):
    """Early stopping (Landweber) at t* = 1 / (gamma lambda*) = n SNR (gamma = 1), each
    iteration a product with K: T = n^2 t* = n^3 SNR (Sec. 2.3, after Theorem 3:
    "O(n^2 t*) = O(n^3 SNR)"). Theorems 3 and 2 give it KRLS's accuracy at lambda*."""
    n, d_tilde = _positive("n", n), _positive("d_tilde", d_tilde)
    return n ** 2 * stopping_time(lambda_star(n, snr)) + 0.0 * d_tilde


def time_nkrls(n, d_tilde, snr):
    """Nystrom KRLS with m = d~ log(n/lambda*) (Theorem 1): T = n m^2 =
    n d~^2 log^2(n/lambda*) (Sec. 2.3 after Theorem 1, and the Discussion). The m^3 of
    the factorisation is dropped, as in the paper: it is below n m^2 whenever m <= n."""
    n = _positive("n", n)
    return n * subsample_size(n, d_tilde, snr) ** 2


def time_nytro(n, d_tilde, snr):
    """NYTRO with m = d~ log(n/lambda*) and t* = 1/(gamma lambda*) = n SNR (Corollary 1):
    T = n m t* = n d~ log(n/lambda*) / lambda* (the Discussion's
    O(n d~(lambda*)/lambda* log(n/lambda*))), the O(m^3) factorisation dropped."""
    n = _positive("n", n)
    return n * subsample_size(n, d_tilde, snr) * stopping_time(lambda_star(n, snr))


def complexity_times(n, d_tilde, snr):
    """The four times stacked along a new first axis, in the order of METHODS.

    Derivation (constants 1, natural log, gamma = 1, lambda* = 1/(n SNR), so
    t* = 1/lambda* = n SNR and m = d~ log(n/lambda*) = d~ log(n^2 SNR)):

        KRLS            n^3
        Early Stopping  n^2 t*   = n^3 SNR
        NKRLS           n m^2    = n d~^2 log^2(n^2 SNR)
        NYTRO           n m t*   = n^2 SNR d~ log(n^2 SNR)

    Every method then has (up to the constants of Theorems 1-4) the expected excess risk
    of KRLS at lambda*. Pairwise, with L = log(n/lambda*):
    NYTRO < NKRLS iff t* < m iff d~ > 1/(lambda* L)  (the Discussion's two regimes);
    NYTRO < Early Stopping and NKRLS < KRLS iff m < n iff d~ < n / L  (curve c1);
    Early Stopping < KRLS iff t* < n iff SNR < 1.
    Only problems with d_eff <= d~ <= min(n, 1/lambda*) = min(n, n SNR) exist
    (see ``feasible``); the formulas are evaluated anywhere.
    """
    return np.stack(np.broadcast_arrays(time_krls(n, d_tilde, snr), time_early_stopping(n, d_tilde, snr),
                                        time_nkrls(n, d_tilde, snr), time_nytro(n, d_tilde, snr)))


def feasible(n, d_tilde, snr):
    """True where a problem with these (d~, SNR) can exist: d~ <= min(n, 1/lambda*) =
    min(n, n SNR), the paper's d_eff <= d~ <= 1/lambda (k(x, x) <= 1) and d~ <= n."""
    n, d_tilde, snr = _positive("n", n), _positive("d_tilde", d_tilde), _positive("snr", snr)
    return d_tilde <= np.minimum(n, n * snr)  # 1/lambda* = n SNR


def regime_map(n, d_tilde_grid, snr_grid):
    """Figure 1: which method reaches KRLS's accuracy at lambda* fastest.

    d_tilde_grid and snr_grid are 1-D; the result has shape (len(d_tilde_grid),
    len(snr_grid)) (rows: d~, the figure's vertical axis; columns: SNR, its horizontal
    axis) and holds floats: i for METHODS[i] (0 KRLS, 1 Early Stopping, 2 NKRLS,
    3 NYTRO), the argmin over ``complexity_times`` (ties to the lower index), and NaN
    where d~ > min(n, 1/lambda*), where no problem exists.
    """
    d = np.asarray(d_tilde_grid, dtype=np.float64)
    s = np.asarray(snr_grid, dtype=np.float64)
    if d.ndim != 1 or s.ndim != 1:
        raise ValueError("d_tilde_grid and snr_grid must be 1-D")
    D, S = d[:, None], s[None, :]
    winner = np.argmin(complexity_times(n, D, S), axis=0).astype(np.float64)
    winner[~feasible(n, D, S)] = np.nan
    return winner


def regime_boundaries(n, snr):
    """The curves of Figure 1 as functions of SNR (arrays like ``snr``), L = log(n/lambda*):

    feasible : d~ = min(n, n SNR), the top of the problem space;
    c1       : d~ = n / L, subsampled (below) against full-kernel methods (above);
    c2       : d~ = 1/(lambda* L) = n SNR / L, NKRLS (below) against NYTRO (above);
    and between Early Stopping and KRLS the vertical line SNR = 1.
    """
    n, snr = _positive("n", n), _positive("snr", snr)
    L = np.log(n / lambda_star(n, snr))
    return {"feasible": np.minimum(n, n * snr), "c1": n / L, "c2": n * snr / L}


# ---------------------------------------------- Proposition 2 and the Q matrices
def excess_risk(Q, mu, noise_var, P=None):
    """Proposition 2: for coefficients C y (C independent of y) and Q = K C,

        E R = V + B,  V = (sigma^2 / n) Tr(Q^2),  B = (1/n) ||P (I - Q) mu||^2,

    P = K^+ K the projector on range(K) (None: the identity, right for a strictly
    positive definite K, e.g. a Gaussian kernel on distinct points). Q is symmetric for
    every method here; Tr(Q^2) is computed as Tr(Q Q^T) = ||Q||_F^2. Returns (V, B).
    """
    Q = np.asarray(Q, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    n = len(mu)
    if Q.shape != (n, n):
        raise ValueError(f"Q must have shape ({n}, {n}), got {Q.shape}")
    residual = mu - Q @ mu
    if P is not None:
        residual = np.asarray(P, dtype=np.float64) @ residual
    variance = float(np.asarray(noise_var) * np.sum(Q * Q) / n)
    return variance, float(residual @ residual / n)


def nytro_filter(s, t, n, gamma=1.0):
    """g_t(s) = 1 - (1 - gamma s / n)^t: NYTRO's Q_t = g_t(Z), Z = A A^T, A = K_nm R (proof
    of Theorem 4; Landweber's with Z = K). Needs 0 <= gamma s / n <= 1, i.e. ||Z|| <= n/gamma.
    Broadcasts t (leading axes) against s (last axis)."""
    s = np.asarray(s, dtype=np.float64)
    t = _positive("t", t)
    x = gamma * s / n
    if np.any(x > 1 + 1e-12) or np.any(x < -1e-12):
        raise ValueError(f"gamma s / n must lie in [0, 1] (||Z|| <= n / gamma), got max {x.max():.6g}")
    with np.errstate(divide="ignore"):  # s = n / gamma: log1p(-1) = -inf gives g = 1, as it should
        return -np.expm1(t[..., None] * np.log1p(-np.clip(x, 0, 1)))


def tikhonov_filter(s, lam, n):
    """s / (s + lambda n): NKRLS's Q_lambda = Z (Z + lambda n I)^-1 (KRLS's with Z = K).
    Broadcasts lam (leading axes) against s (last axis)."""
    return _shrinkage(np.asarray(s, dtype=np.float64), lam, n)


def c_t(t):
    """Theorem 4's constant c_t = 4 (1 + 1/(t - 1))^2 (<= 16 for t >= 2; Theorem 3 says 20)."""
    t = np.asarray(t, dtype=np.float64)
    if np.any(t < 2):
        raise ValueError("Theorems 3-4 need t >= 2")
    return 4 * (1 + 1 / (t - 1)) ** 2


def c_t_proof(t):
    """The constant the proof of Theorem 4 actually derives, ((2t - 1)/(t - 1))^2 =
    (2 + 1/(t - 1))^2 <= c_t = (2 + 2/(t - 1))^2 (it bounds the variance; the bias needs 1)."""
    t = np.asarray(t, dtype=np.float64)
    if np.any(t < 2):
        raise ValueError("Theorems 3-4 need t >= 2")
    return ((2 * t - 1) / (t - 1)) ** 2


@dataclass(frozen=True)
class SpectralDesign:
    """Proposition 2 for any Q = g(Z), g(0) = 0, in O(rank) per filter.

    With Z = A A^T = U diag(s) U^T (U: n x r, orthonormal columns, from the thin SVD of
    A), c = U^T mu and range(Z) inside range(P) (so P Q = Q):

        V = (sigma^2 / n) sum_i g(s_i)^2
        B = (1/n) ( ||P mu||^2 - ||c||^2 + sum_i (1 - g(s_i))^2 c_i^2 )

    the first bias term being the part of mu outside the span of the Nystrom features
    (no filter reaches it).

    s        : eigenvalues of Z (squared singular values of A), shape (r,)
    c        : U^T mu, shape (r,)
    residual : ||P mu||^2 - ||c||^2 (>= 0)
    n        : number of training points
    """

    s: np.ndarray
    c: np.ndarray
    residual: float
    n: int

    @classmethod
    def from_factor(cls, A, mu, P_mu=None):
        """From A (n x k; Z = A A^T) and mu. P_mu = P mu (None: mu, P = I)."""
        A = np.asarray(A, dtype=np.float64)
        mu = np.asarray(mu, dtype=np.float64)
        if A.ndim != 2 or mu.shape != (A.shape[0],):
            raise ValueError(f"need A of shape (n, k) and mu of shape (n,), got {A.shape} and {mu.shape}")
        U, sv, _ = np.linalg.svd(A, full_matrices=False)
        c = U.T @ mu
        p_mu = mu if P_mu is None else np.asarray(P_mu, dtype=np.float64)
        return cls(sv ** 2, c, max(float(p_mu @ p_mu - c @ c), 0.0), A.shape[0])

    @classmethod
    def from_gram(cls, Z, mu, P_mu=None):
        """From a symmetric PSD Z (n x n) itself, e.g. Z = K for Landweber and KRLS (m = n:
        K R R^T K = K K^+ K = K, proof of Theorem 3)."""
        s, U = _spectrum(Z, vectors=True)
        mu = np.asarray(mu, dtype=np.float64)
        if mu.shape != (len(s),):
            raise ValueError(f"mu must have shape ({len(s)},), got {mu.shape}")
        c = U.T @ mu
        p_mu = mu if P_mu is None else np.asarray(P_mu, dtype=np.float64)
        return cls(s, c, max(float(p_mu @ p_mu - c @ c), 0.0), len(s))

    def risk(self, g, noise_var):
        """(V, B) for filter values g (shape (..., r), one row per filter)."""
        g = np.asarray(g, dtype=np.float64)
        variance = np.asarray(noise_var) * np.sum(g * g, axis=-1) / self.n
        bias = (self.residual + np.sum((1 - g) ** 2 * self.c ** 2, axis=-1)) / self.n
        return variance, bias

    def nytro(self, t, noise_var, gamma=1.0):
        """(V, B) of NYTRO after t iterations of step gamma / n (t: scalar or array)."""
        return self.risk(nytro_filter(self.s, t, self.n, gamma), noise_var)

    def nkrls(self, lam, noise_var):
        """(V, B) of Nystrom KRLS at lambda (scalar or array)."""
        return self.risk(tikhonov_filter(self.s, lam, self.n), noise_var)
