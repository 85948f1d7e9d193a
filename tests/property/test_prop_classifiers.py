"""The classifiers: labels of any one type give the model of their class indices, and a
relabeling of the classes relabels the predictions (any bijection where nothing is drawn
class by class; an order-preserving one through the default, stratified hold-out split,
which draws the classes in their sorted order)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nytro

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

CLASSIFIERS = {
    "NytroClassifier": lambda **kw: nytro.NytroClassifier(n_centers=8, max_iter=10, **kw),
    "NytroClassifier-gd": lambda **kw: nytro.NytroClassifier(n_centers=8, method="gd", max_iter=10, **kw),
    "NystromKRLSClassifier": lambda **kw: nytro.NystromKRLSClassifier(n_centers=8, **kw),
}

# Relabelings of class indices 0..k-1, each of one label type; "order" says whether it
# keeps the classes' sorted order.
RELABELINGS = {
    "int": (lambda c: np.asarray(c, dtype=np.int64) * 3 - 7, True),
    "str": (lambda c: np.array([f"class-{i:02d}" for i in c]), True),
    "object-str": (lambda c: np.array([f"c{i}" for i in c], dtype=object), True),
    "bool": (lambda c: np.asarray(c) == 1, True),
    "reversed-int": (lambda c: 100 - np.asarray(c, dtype=np.int64), False),
    "reversed-str": (lambda c: np.array([chr(ord("z") - i) for i in c]), False),
}


@st.composite
def classification(draw):
    k = draw(st.integers(2, 4))
    n = draw(st.integers(8 * k, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.standard_normal((n, 2))
    # Classes by angle (every class a region), a few labels flipped; every class present
    # at least 4 times, so the stratified split finds each on both sides.
    index = (np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi) * k).astype(int) % k)
    flip = rng.random(n) < 0.1
    index[flip] = rng.integers(0, k, flip.sum())
    index[: 4 * k] = np.repeat(np.arange(k), 4)
    return X, index, k


def _model(name, X, labels, **kw):
    return CLASSIFIERS[name](sigma=1.0, random_state=0, n_threads=1, **kw).fit(X, labels)


@pytest.mark.parametrize("relabeling", list(RELABELINGS))
@pytest.mark.parametrize("name", list(CLASSIFIERS))
@given(problem=classification(), held_out=st.booleans())
def test_relabeled_classes_relabel_the_predictions(name, relabeling, problem, held_out):
    X, index, k = problem
    relabel, keeps_order = RELABELINGS[relabeling]
    if relabeling == "bool" and k != 2:
        return
    if not keeps_order and held_out:
        return  # the stratified split draws class by class in sorted order: another split
    kw = {"validation_fraction": 0.25 if held_out else None}
    if not held_out and name == "NystromKRLSClassifier":
        kw["lambdas"] = [1e-3]
    base = _model(name, X, index, **kw)
    model = _model(name, X, relabel(index), **kw)
    np.testing.assert_array_equal(model.classes_, relabel(base.classes_) if keeps_order else
                                  np.sort(relabel(base.classes_)))
    Z = np.random.default_rng(k).standard_normal((25, 2))
    predicted = model.predict(Z)
    assert predicted.dtype == model.classes_.dtype
    np.testing.assert_array_equal(predicted, relabel(base.predict(Z)))
    assert model.score(X, relabel(index)) == base.score(X, index)
