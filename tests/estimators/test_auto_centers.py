"""n_centers="auto": m grown by doubling while the selected hold-out error still drops
by 1%, the best size kept; on real data (cpuSmall as shipped, scikit-learn's
breast_cancer), small data, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

import nytro
from nytro.datasets import load_cpusmall
from nytro.estimators import _growth


def test_sizes_double_up_to_the_training_rows_or_the_most():
    assert _growth.sizes(100) == [100]
    assert _growth.sizes(128) == [128]
    assert _growth.sizes(300) == [128, 256, 300]
    assert _growth.sizes(10**6) == [128, 256, 512, 1024, 2048, 4096]


def _check_growth(model):
    """The rule, read back from the fitted attributes: the sizes tried are the first of
    the doubling sequence; each kept size lowered the best error so far by more than TOL,
    growth stopped at the first that did not; the model is the last size kept. Returns
    that size's score."""
    tried, scores = model.n_centers_candidates_, model.n_centers_scores_
    assert len(tried) == len(scores) >= 1 and np.all(np.isfinite(scores))
    assert list(tried) == _growth.sizes(tried[-1])
    kept, best = 0, scores[0]
    for i in range(1, len(scores)):
        if scores[i] < (1 - _growth.TOL) * best:
            kept, best = i, scores[i]
        else:
            assert i == len(scores) - 1  # no size is tried past the first that does not improve
    assert model.n_centers_ == tried[kept] == len(model.centers_)
    return best


def test_auto_centers_on_cpusmall_is_the_best_size_it_tried():
    data = load_cpusmall()
    model = nytro.NytroRegressor(n_centers="auto", random_state=0, n_threads=1).fit(data.X_train, data.y_train)
    best = _check_growth(model)
    # The model is the kept size's own fit: its selected hold-out error is that size's score.
    assert model.validation_rmse_[model.n_iter_ - 1] == best
    rmse = np.sqrt(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
    assert np.isfinite(rmse)


@pytest.mark.parametrize("make", [
    lambda: nytro.NystromKRLSRegressor(n_centers="auto", random_state=0, n_threads=1),
    lambda: nytro.NytroClassifier(n_centers="auto", random_state=0, n_threads=1, selection="rmse"),
])
def test_auto_centers_for_the_other_nystrom_estimators(make):
    X, y = load_breast_cancer(return_X_y=True)
    model = make().fit(X, y)
    _check_growth(model)
    assert model.score(X, y) > 0.5


def test_small_data_takes_every_training_row_in_one_fit():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:100], y[:100]
    model = nytro.NytroRegressor(n_centers="auto", random_state=0, n_threads=1).fit(X, y)
    assert list(model.n_centers_candidates_) == [80] and model.n_centers_ == 80   # 20 held out


def test_an_integer_keeps_its_meaning():
    X, y = load_diabetes(return_X_y=True)
    model = nytro.NytroRegressor(n_centers=50, random_state=0, n_threads=1).fit(X, y)
    assert model.n_centers_ == 50 and model.n_centers_candidates_ is None and model.n_centers_scores_ is None


def test_auto_centers_needs_a_holdout_set():
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(ValueError, match="n_centers='auto'.*validation_fraction=None"):
        nytro.NytroRegressor(n_centers="auto", validation_fraction=None, n_threads=1).fit(X, y)
    with pytest.raises(ValueError, match="n_centers"):
        nytro.NytroRegressor(n_centers="many", n_threads=1).fit(X, y)
