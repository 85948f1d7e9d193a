"""NYTRO's path for the logistic loss: early-stopped iterations on the unregularised
empirical logistic risk over the Nystrom features, the iteration count as the regulariser.

The features are the least-squares path's, A = k(X, C) R with R R^T = pinv(K_mm) (the
core's kernel and factor), with a column of ones for the intercept: A~ = [A, 1]. The model
is f(x) = A~(x) theta, theta of shape (m + 1, K): K = 1 column of logits for two classes
(the sigmoid of f is the probability of the second class), K = n_classes columns for more
(the softmax of f). The risk is

    R(theta) = (1/n) sum_i w_i l(f(x_i), y_i),    w rescaled to mean 1,

with l the binary cross-entropy log(1 + e^z) - y z, or the multinomial one logsumexp(z) -
z_y. Its gradient is A~^T diag(w / n) (P - Y), P the probabilities and Y the 0/1 (one-hot)
targets, and its Hessian is A~^T diag(w / n) D A~ with D = p (1 - p) <= 1/4 per row (binary)
or D_i = diag(p_i) - p_i p_i^T, whose largest eigenvalue is <= 1/2 (softmax). So the
gradient is Lipschitz with L = c lambda_max(A~^T W A~) / n, c = 1/4 or 1/2.

Iterations start at theta = 0 (every class equally likely) and each iterate is a model of
the path; the hold-out log loss and error of every iterate are recorded, the one with the
smallest hold-out log loss (or error) is selected, and the path ends n_iter_no_change
iterations after its best. Three methods:

* "gd": theta <- theta - grad / L, the logistic analogue of the paper's Landweber step on
  A (NYTRO's "gd" with step "auto").
* "nesterov": the same step taken from Nesterov's extrapolated point (momentum (k - 1) /
  (k + 2)), reaching a given training risk in about the square root of gd's iterations.
* "newton": truncated Newton-CG. Each iteration is one Newton step, the system H p = -g
  solved by _CG_STEPS steps of conjugate gradients from p = 0 (fewer once it is solved:
  then the exact Newton step). CG from zero builds the step in the Krylov space of H and g, the
  directions of largest curvature first, as NYTRO's "cg" does for the squared loss (for
  which one such Newton step with t CG steps is exactly the t-th CG iterate). The step is
  then limited so that no training logit moves by more than _RADIUS (a trust region in the
  sup norm of the logits: the logistic curvature sigma'(z) changes by at most a factor
  e^|dz| over the step, so within it the quadratic model holds up to a known factor), and
  shortened by backtracking until Armijo's decrease holds. On separable data the risk has
  no minimiser and plain Newton steps grow without bound; here each step is bounded, and
  the path also ends once the training risk is below _RISK_FLOOR, the point past which
  further iterates only scale the logits towards probabilities of exactly 0 and 1.

Falkon's LogisticFalkon (FalkonML/falkon) is the closest relative: it also takes Newton
steps on Nystrom-preconditioned logistic risk, each solved by a few preconditioned CG
iterations, but its regulariser is Tikhonov's: a decreasing sequence of penalties lambda
given by the user, one Newton step per penalty, ending at the smallest. Here there is no
penalty at all: the number of iterations (and CG's truncation within each) is the only
regulariser, chosen along the path on the hold-out rows, as NYTRO chooses t.

The arrays are dense NumPy: A~ (n x (m + 1)) is kept, O(n m) memory, as the least-squares
path's "direct" solver keeps K_nm. nytro.reference.logistic_path is the same path written
directly (explicit Hessians, no incremental updates), which the tests take as the
definition.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from scipy.special import expit, logsumexp

from . import _api
from . import _checks as chk

# The rules of the path, shared with nytro.reference's twin so that both compute the
# same iterates:
_RADIUS = 4.0  # Newton: the largest change of a training logit (of positive weight) in one step
_ARMIJO = 1e-4  # Newton: the backtracking's sufficient-decrease constant
# Near the minimiser a step's decrease is below the rounding of the risk itself (a sum of
# n non-negative terms, each within a few eps): a decrease within _ROUNDING of the risk is
# not judged, the step is taken, so that rounding alone does not halve it.
_ROUNDING = 16 * np.finfo(np.float64).eps
_BACKTRACKS = 40  # Newton: halvings before a step is declared no descent (the path ends)
_CG_STEPS = 50  # Newton: CG steps per Newton step at most
_CG_RTOL = 1e-10  # Newton: CG ends early once its residual is this small against the gradient
_RISK_FLOOR = 1e-12  # the training risk below which the data are separated: the path ends
METHODS = ("newton", "nesterov", "gd")
SELECTIONS = ("log_loss", "error")


@dataclass
class LogisticPath:
    """The logistic path and its selected model.

    Attributes
    ----------
    coef : ndarray of shape (m, K)
        R theta[:m] at the selected iterate: k(x, centers) @ coef + intercept are the logits.
    intercept : ndarray of shape (K,)
    theta : ndarray of shape (k + 1, K)
        The selected iterate in the features' coordinates (k the factor's rank).
    n_iter : int
        The selected iteration (the last one run without a hold-out set).
    validation_log_loss, validation_error : ndarray of shape (n_iter_run,)
        The hold-out log loss (weighted by the hold-out rows' weights) and error rate (every
        row counted once) of each iterate; empty without a hold-out set.
    train_loss : ndarray of shape (n_iter_run,)
        The training risk of each iterate.
    step_size : float
        1 / L for "gd" and "nesterov"; 0 for "newton".
    rank : int
        Columns of R.
    iterates : list of ndarray or None
        Every iterate theta_1, theta_2, ... where asked for (return_iterates).
    """

    coef: np.ndarray
    intercept: np.ndarray
    theta: np.ndarray
    n_iter: int
    validation_log_loss: np.ndarray
    validation_error: np.ndarray
    train_loss: np.ndarray
    step_size: float
    rank: int
    iterates: list | None = None


def one_hot(index, n_classes: int) -> np.ndarray:
    """The targets of the risk: (n, 1) 0/1 of the second class (two classes), else (n, K)
    one-hot."""
    index = np.asarray(index)
    if n_classes == 2:
        return (index == 1).astype(np.float64)[:, None]
    Y = np.zeros((index.size, n_classes))
    Y[np.arange(index.size), index] = 1.0
    return Y


def probabilities(Z) -> np.ndarray:
    """sigmoid of one column of logits, softmax of more, row by row."""
    if Z.shape[1] == 1:
        return expit(Z)
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def row_losses(Z, Y) -> np.ndarray:
    """Each row's cross-entropy of the 0/1 targets Y under the logits Z, by log-sum-exp
    (finite where a probability underflows)."""
    if Z.shape[1] == 1:
        z, y = Z[:, 0], Y[:, 0]
        return np.logaddexp(0.0, z) - y * z
    return logsumexp(Z, axis=1) - np.sum(Y * Z, axis=1)


def errors(Z, index) -> float:
    """The fraction of rows whose most probable class is not theirs (z > 0 picks the second
    of two classes; ties go to the first class)."""
    predicted = (Z[:, 0] > 0).astype(int) if Z.shape[1] == 1 else np.argmax(Z, axis=1)
    return float(np.mean(predicted != index))


def curvature_bound(n_classes: int) -> float:
    """c of L = c lambda_max(A~^T W A~) / n: the largest eigenvalue of the loss's Hessian in
    the logits, p (1 - p) <= 1/4 (sigmoid), diag(p) - p p^T <= 1/2 (softmax: its largest
    eigenvalue is at most max_k p_k (1 - p_k) + max_k p_k ... <= 1/2, Bohning's bound)."""
    return 0.25 if n_classes == 2 else 0.5


def normalised_weights(sample_weight, n: int) -> np.ndarray:
    """w n / sum w (ones for none): the risk's scale does not depend on the weights'."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    return w * (n / w.sum())


def _largest_eigenvalue(At, w):
    """lambda_max(A~^T diag(w) A~): Lanczos (ARPACK) on the products, the Gram matrix never
    formed, to a relative tolerance far below what the step needs; dense where A~ is thin."""
    k = At.shape[1]
    if k <= 64:
        return float(scipy.linalg.eigvalsh(At.T @ (w[:, None] * At), subset_by_index=[k - 1, k - 1])[0])
    op = scipy.sparse.linalg.LinearOperator((k, k), matvec=lambda v: At.T @ (w * (At @ v)), dtype=np.float64)
    return float(scipy.sparse.linalg.eigsh(op, k=1, which="LA", tol=1e-14, v0=np.ones(k))[0][0])


class _Risk:
    """The weighted risk over one set of features A~ and targets Y (the training rows)."""

    def __init__(self, At, Y, w):
        self.At, self.Y, self.c = At, Y, w / At.shape[0]

    def value(self, Z) -> float:
        return float(self.c @ row_losses(Z, self.Y))

    def gradient(self, Z, P):
        return self.At.T @ (self.c[:, None] * (P - self.Y))

    def curvature(self, P, V):
        """The Hessian's product with V (k + 1, K), at the probabilities P."""
        U = self.At @ V
        if U.shape[1] == 1:
            DU = P * (1.0 - P) * U
        else:
            DU = P * U - P * np.sum(P * U, axis=1, keepdims=True)
        return self.At.T @ (self.c[:, None] * DU)


def newton_direction(hessian, g, n_unknowns):
    """p ~ -H^-1 g by _CG_STEPS steps of CG from 0, fewer where its residual falls to
    _CG_RTOL ||g|| (the system is then solved: in exact arithmetic within n_unknowns steps,
    in floating point a few more) or a direction has no positive curvature; -g where the
    first direction already has none. A fixed count, rather than
    a tolerance that loosens far from the minimiser, keeps the step a continuous function
    of the iterate: a stopping test met by a hair would otherwise add or drop one CG step
    on a rounding difference, and two computations of the same path would part."""
    p = np.zeros_like(g)
    r = -g
    d = r.copy()
    rr = float(np.sum(r * r))
    target = _CG_RTOL * np.sqrt(rr)
    for _ in range(_CG_STEPS):
        Hd = hessian(d)
        curvature = float(np.sum(d * Hd))
        if not curvature > 0:
            break
        a = rr / curvature
        p += a * d
        r -= a * Hd
        rr_new = float(np.sum(r * r))
        if np.sqrt(rr_new) <= target:
            break
        d = r + (rr_new / rr) * d
        rr = rr_new
    return p if np.any(p) else -g


class Selection:
    """The hold-out selection along the path, shared with the twin: the iterate of the
    smallest hold-out log loss (or error; the first of ties), and the patience rule; the
    last iterate without a hold-out set (the zero model where none was taken)."""

    def __init__(self, selection: str, patience: int, theta0):
        self.by_error, self.patience = selection == "error", patience
        self.best, self.theta, self.selected = np.inf, theta0, 0
        self.log_loss, self.error = [], []

    def record(self, t: int, theta, scores) -> bool:
        """Iterate t and its hold-out (log loss, error), None without a hold-out set;
        whether the patience rule ends the path."""
        if scores is None:
            self.theta, self.selected = theta, t
            return False
        self.log_loss.append(scores[0])
        self.error.append(scores[1])
        score = scores[1] if self.by_error else scores[0]
        if score < self.best:
            self.best, self.theta, self.selected = score, theta, t
            return False
        return bool(self.patience) and t - self.selected >= self.patience

    def result(self, R, train_loss, step, iterates) -> LogisticPath:
        theta = self.theta
        return LogisticPath(coef=R @ theta[:-1], intercept=theta[-1].copy(), theta=theta, n_iter=int(self.selected),
                            validation_log_loss=np.asarray(self.log_loss), validation_error=np.asarray(self.error),
                            train_loss=np.asarray(train_loss), step_size=float(step), rank=int(R.shape[1]),
                            iterates=iterates)


def features(X, centers, sigma, *, kernel="gaussian", matern_nu=1.5, factor="pivoted", n_threads=None):
    """(A, R): A = k(X, centers) R, R R^T = pinv(k(centers, centers)), by the core."""
    R = _api.nystrom_factor(_api.kernel_matrix(centers, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu,
                                               n_threads=n_threads), method=factor, n_threads=n_threads)
    K = _api.kernel_matrix(X, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu, n_threads=n_threads)
    return K @ R, R


def with_ones(A) -> np.ndarray:
    return np.hstack([A, np.ones((A.shape[0], 1))])


def check_path_arguments(method, selection, max_iter, n_iter_no_change):
    chk.check_choice("method", method, METHODS)
    chk.check_choice("selection", selection, SELECTIONS)
    return chk.check_int("max_iter", max_iter, 1), chk.check_patience(n_iter_no_change)


def logistic_path(X, y, centers, sigma, *, n_classes=None, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None,
                  method="nesterov", max_iter=1000, n_iter_no_change=100, selection="log_loss", factor="pivoted",
                  sample_weight=None, sample_weight_val=None, n_threads=None, return_iterates=False) -> LogisticPath:
    """The logistic path on the Nystrom features of X (float64) for the class indices y
    (integers in [0, n_classes)), selected on (X_val, y_val) where given (see the module's
    docstring)."""
    max_iter, patience = check_path_arguments(method, selection, max_iter, n_iter_no_change)
    X = np.ascontiguousarray(X, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    y = np.asarray(y)
    n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
    A, R = features(X, centers, sigma, kernel=kernel, matern_nu=matern_nu, factor=factor, n_threads=n_threads)
    At = with_ones(A)
    held_out = X_val is not None and len(X_val) > 0
    if held_out:
        X_val = np.ascontiguousarray(X_val, dtype=np.float64)
        Av = with_ones(_api.kernel_matrix(X_val, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu,
                                          n_threads=n_threads) @ R)
        y_val = np.asarray(y_val)
        Yv = one_hot(y_val, n_classes)
        cv = normalised_weights(sample_weight_val, len(y_val)) / len(y_val)
    w = normalised_weights(sample_weight, X.shape[0])
    risk = _Risk(At, one_hot(y, n_classes), w)
    counted = w > 0
    K = risk.Y.shape[1]
    theta = np.zeros((At.shape[1], K))
    Z = np.zeros((At.shape[0], K))
    step = 0.0
    if method != "newton":
        step = 1.0 / (curvature_bound(n_classes) * _largest_eigenvalue(At, w) / X.shape[0])
    previous, Z_previous = theta, Z
    train_loss, iterates = [], [] if return_iterates else None
    chosen = Selection(selection, patience, theta)
    for t in range(1, max_iter + 1):
        if method == "newton":
            P = probabilities(Z)
            g = risk.gradient(Z, P)
            if K > 1:
                # The softmax does not change when one vector is added to every class's
                # column: H is singular along theta + u 1^T, and g is orthogonal to it
                # (its columns sum to 0). CG runs on H restricted to the complement
                # (columns summing to 0), where it is definite: without the projection
                # its rounding drifts along the flat direction and stalls its residual.
                def flat(V):
                    return V - V.mean(axis=1, keepdims=True)

                g = flat(g)
                p = flat(newton_direction(lambda V: flat(risk.curvature(P, flat(V))), g, g.size))
            else:
                p = newton_direction(lambda V: risk.curvature(P, V), g, g.size)
            dZ = At @ p
            reach = float(np.max(np.abs(dZ[counted])))  # the rows the risk counts: zero weights as absent rows
            if reach > _RADIUS:
                p, dZ = p * (_RADIUS / reach), dZ * (_RADIUS / reach)
            now, slope, a = risk.value(Z), float(np.sum(g * p)), 1.0
            for _ in range(_BACKTRACKS):
                if risk.value(Z + a * dZ) <= now + _ARMIJO * a * slope + _ROUNDING * now:
                    break
                a *= 0.5
            else:
                break  # no decrease left at rounding level: the path ends at the last iterate
            theta, Z = theta + a * p, Z + a * dZ
        else:
            if method == "nesterov" and t > 1:
                beta = (t - 2) / (t + 1)  # (k - 1) / (k + 2) at k = t - 1
                point, Z_point = theta + beta * (theta - previous), Z + beta * (Z - Z_previous)
            else:
                point, Z_point = theta, Z
            G = risk.gradient(Z_point, probabilities(Z_point))
            previous, Z_previous = theta, Z
            theta, Z = point - step * G, Z_point - step * (At @ G)
        train_loss.append(risk.value(Z))
        if iterates is not None:
            iterates.append(theta.copy())
        ended = train_loss[-1] <= _RISK_FLOOR
        scores = None
        if held_out:
            Zv = Av @ theta
            scores = float(cv @ row_losses(Zv, Yv)), errors(Zv, y_val)
        if chosen.record(t, theta, scores) or ended:
            break
    return chosen.result(R, train_loss, step, iterates)
