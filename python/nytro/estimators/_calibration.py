"""The classifiers' probabilities: a softmax of the decision values times one scale a >= 0
(temperature scaling), a fitted on the hold-out rows' decision values at the selected
regularisation, which the fit's selection already needs, so no model is fitted again. A
fit without a hold-out set calibrates on its training rows instead (optimistic: the model
has seen them). Rows count by their sample weights, so integer weights and repeated rows
give the same scale.

One scale keeps the argmax of the probabilities the argmax of the decision values, so
predict_proba never contradicts predict (scikit-learn's check_classifiers_train asks for
it, and per-class offsets, as in Platt's sigmoid, would break it). The targets of the
fit are Platt's smoothed ones, generalised to K classes: a row of class k, whose class
has N_k rows (the sum of their weights), has target (N_k + 1) / (N_k + 2) for its class, and the
K - 1 others share the rest, 1 / (N_k + 2), equally. They keep a bounded from a hold-out set that the decision
values separate perfectly, where the plain likelihood has no maximum (a -> infinity,
probabilities 0 and 1 from a handful of rows); for K = 2 they are Platt's targets.
"""
from __future__ import annotations

import numpy as np


def calibration_logits(scores) -> np.ndarray:
    """The decision values as (n, K) logits at a = 1: the one-vs-all columns as they are
    (K > 2), or (-f / 2, f / 2) for the one column f of two classes, so that
    softmax(a G) = (1 - sigmoid(a f), sigmoid(a f))."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1 or scores.shape[1] == 1:
        f = scores.reshape(-1)
        return np.stack([-0.5 * f, 0.5 * f], axis=1)
    return scores


def smoothed_targets(index, n_classes: int, weights=None) -> np.ndarray:
    """(n, K) targets of the rows of class indices `index`: (N_k + 1) / (N_k + 2) in the
    row's class k, N_k the rows of class k (the sum of their weights where given), and the
    rest, 1 / (N_k + 2), shared equally by the K - 1 other classes (each row sums to 1)."""
    index = np.asarray(index)
    counts = np.bincount(index, weights=weights, minlength=n_classes).astype(np.float64)
    rest = 1.0 / (counts[index] + 2.0)
    T = np.repeat((rest / (n_classes - 1))[:, None], n_classes, axis=1)
    T[np.arange(index.size), index] = 1.0 - rest
    return T


def softmax(Z) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def log_softmax(Z) -> np.ndarray:
    """log softmax(Z) by log-sum-exp: finite where softmax underflows to 0."""
    Z = Z - Z.max(axis=1, keepdims=True)
    return Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))


def cross_entropy(a: float, G, T, weights=None) -> float:
    """The mean cross-entropy of the targets T under softmax(a G), rows weighted by
    `weights` where given."""
    return float(-np.average(np.sum(T * log_softmax(a * G), axis=1), weights=weights))


def _slope_and_curvature(a: float, G, T, weights=None):
    """The first and second derivatives of cross_entropy in a: the (weighted) mean over
    rows of E_p[G] - E_T[G], and of Var_p(G) (>= 0: the objective is convex in a)."""
    P = softmax(a * G)
    mean_p = np.sum(P * G, axis=1)
    slope = np.average(mean_p - np.sum(T * G, axis=1), weights=weights)
    curvature = np.average(np.sum(P * G * G, axis=1) - mean_p ** 2, weights=weights)
    return float(slope), float(curvature)


def fit_scale(G, T, weights=None, rtol: float = 1e-12, max_steps: int = 200) -> float:
    """The a >= 0 that minimises cross_entropy(a, G, T, weights): 0 where the decision
    values do not point towards the targets (the slope at 0 is >= 0, uniform
    probabilities), else the root of the slope, by Newton's method kept inside a bracket
    [lo, hi] that the slope's sign change encloses (bisection where a Newton step leaves
    it)."""
    slope, _ = _slope_and_curvature(0.0, G, T, weights)
    if not slope < 0:
        return 0.0
    lo, hi = 0.0, 1.0
    # The smoothed targets make the slope positive for large a (each row's targets are
    # < 1), so this doubling ends; the cap guards decision values that are all equal.
    while _slope_and_curvature(hi, G, T, weights)[0] < 0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            return lo
    a = 0.5 * (lo + hi)
    for _ in range(max_steps):
        slope, curvature = _slope_and_curvature(a, G, T, weights)
        if abs(slope) <= rtol * (1.0 + curvature):
            break
        if slope < 0:
            lo = a
        else:
            hi = a
        if hi - lo <= rtol * hi:
            break
        step = a - slope / curvature if curvature > 0 else None
        a = step if step is not None and lo < step < hi else 0.5 * (lo + hi)
    return float(a)
