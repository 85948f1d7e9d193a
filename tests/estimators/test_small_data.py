"""The Nystrom estimators on data sets smaller than their default n_centers (issue 44):
n_centers is capped at the training rows with a warning, as scikit-learn's Nystroem caps
n_components, and n_centers_ reports the m used."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from nytro import NystromKRLSClassifier, NystromKRLSRegressor, NytroClassifier, NytroRegressor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

REGRESSORS = (NytroRegressor, NystromKRLSRegressor)
CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)
CAP = "n_centers=1000 is more than the {} training rows left after the hold-out split"


def _standardised(loader):
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _n_train(n, fraction=0.2):
    return n - int(round(fraction * n))


@pytest.mark.parametrize("cls, loader", [(c, load_diabetes) for c in REGRESSORS] +
                         [(c, load_iris) for c in CLASSIFIERS])
def test_default_n_centers_is_capped_at_the_training_rows(cls, loader):
    X, y = _standardised(loader)
    n_train = _n_train(len(y))
    with pytest.warns(UserWarning, match=CAP.format(n_train)):
        capped = cls(sigma=3.0, random_state=0).fit(X, y)
    assert capped.n_centers_ == n_train == capped.centers_.shape[0]
    # The cap is exactly the fit asked for with n_centers = the training rows: the same
    # draws from random_state, the same centres and model.
    explicit = cls(n_centers=n_train, sigma=3.0, random_state=0).fit(X, y)
    assert_array_equal(capped.centers_, explicit.centers_)
    assert_array_equal(capped.coef_, explicit.coef_)
    assert_array_equal(capped.predict(X), explicit.predict(X))


@pytest.mark.parametrize("cls", REGRESSORS + CLASSIFIERS)
def test_n_centers_within_the_rows_is_kept_without_warning(cls):
    X, y = _standardised(load_iris)
    fitted = cls(n_centers=30, sigma=3.0, random_state=0).fit(X, y)  # filterwarnings=error: no warning
    assert fitted.n_centers_ == 30 == fitted.centers_.shape[0]
    given = cls(n_centers=1000, centers=np.arange(12), sigma=3.0).fit(X, y)  # n_centers ignored: no warning
    assert given.n_centers_ == 12


def test_capped_refit_keeps_the_training_centres():
    X, y = _standardised(load_diabetes)
    n_train = _n_train(len(y))
    with pytest.warns(UserWarning, match=CAP.format(n_train)):
        fitted = NytroRegressor(sigma=3.0, refit=True, random_state=0).fit(X, y)
    assert fitted.n_centers_ == n_train


def test_gridsearch_on_iris_with_the_default_n_centers_fits_every_candidate():
    """Before the cap, every fit of this search failed ("All the 6 fits failed")."""
    X, y = load_iris(return_X_y=True)
    search = GridSearchCV(make_pipeline(StandardScaler(), NytroClassifier(random_state=0)),
                          {"nytroclassifier__sigma": [1.0, 3.0]}, cv=3, error_score="raise")
    with pytest.warns(UserWarning, match="is more than the"):
        search.fit(X, y)
    assert search.best_score_ > 0.8


def test_capped_leverage_centres_take_every_training_row():
    X, y = _standardised(load_iris)
    n_train = _n_train(len(y))
    with pytest.warns(UserWarning, match=CAP.format(n_train)):
        fitted = NytroClassifier(center_selection="leverage", sigma=3.0, random_state=0).fit(X, y)
    assert fitted.n_centers_ == n_train
    rows = {tuple(r) for r in X}
    assert fitted.centers_.shape == (n_train, X.shape[1]) and all(tuple(c) in rows for c in fitted.centers_)
