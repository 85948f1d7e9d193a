"""n_jobs, scikit-learn's name for the core's threads (issue 44), and how nytro's threads
compose with joblib's workers: n_jobs=None follows the context, which inside
GridSearchCV(n_jobs=k)'s loky workers is joblib's limit of cpu_count // k threads."""
from __future__ import annotations

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import GridSearchCV

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroOptions, NytroRegressor)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ALL = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor, KOLSRegressor, NytroClassifier,
       NystromKRLSClassifier)


def _make(cls, **params):
    small = {"n_centers": 30, "max_iter": 30, "random_state": 0}
    return cls(**{k: v for k, v in {**small, **params}.items() if k in cls().get_params()})


def _data(n=200):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((n, 3))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("cls", ALL)
def test_n_jobs_sets_the_threads_and_not_the_model(cls):
    X, y = _data()
    y = y > 0 if "Classifier" in cls.__name__ else y
    one = _make(cls, n_jobs=1).fit(X, y)
    assert one._options().n_threads == 1
    two = _make(cls, n_jobs=2).fit(X, y)
    assert two._options().n_threads == 2
    by_threads = _make(cls, n_threads=2).fit(X, y)
    assert_array_equal(two.coef_, by_threads.coef_)
    assert_allclose(two.coef_, one.coef_, rtol=1e-10, atol=1e-12 * np.abs(one.coef_).max())


def test_negative_n_jobs_counts_from_joblibs_cpus():
    cpus = joblib.cpu_count()
    assert NytroRegressor(n_jobs=-1)._options().n_threads == cpus
    assert NytroRegressor(n_jobs=-2)._options().n_threads == max(1, cpus - 1)
    assert NytroRegressor(n_jobs=-(cpus + 5))._options().n_threads == 1
    assert NytroRegressor()._options().n_threads is None  # the context's, resolved by the core


@pytest.mark.parametrize("params", [{"n_threads": 3}, {"options": NytroOptions(n_threads=3)}])
def test_n_jobs_and_n_threads_that_differ_are_refused_by_name(params):
    X, y = _data(50)
    with pytest.raises(ValueError, match=r"^n_jobs=2 and n_threads=3 are both given and differ: n_jobs is "
                                         r"scikit-learn's name for the core's threads; give one of them"):
        NytroRegressor(n_centers=10, n_jobs=2, **params).fit(X, y)
    NytroRegressor(n_centers=10, n_jobs=3, **params).fit(X, y)  # equal: accepted


def test_loky_workers_give_nytro_their_share_of_the_cpus():
    """The rule GridSearchCV(n_jobs=k) relies on: joblib's loky workers limit their
    OpenMP pools to cpu_count // k threads, and nytro's None takes that limit."""
    k = 2
    cpus = joblib.cpu_count()
    shares = joblib.Parallel(n_jobs=k)(joblib.delayed(nytro.default_n_threads)() for _ in range(2 * k))
    assert shares == [max(1, cpus // k)] * (2 * k)
    # joblib's parallel_config sets another limit, which nytro follows as well
    with joblib.parallel_config(backend="loky", inner_max_num_threads=2):
        inner = joblib.Parallel(n_jobs=k)(joblib.delayed(nytro.default_n_threads)() for _ in range(k))
    assert inner == [min(2, cpus)] * k


def test_gridsearch_with_workers_selects_what_one_process_selects():
    X, y = _data(300)
    grid = {"sigma": [0.5, 2.0], "n_jobs": [None, 1]}  # n_jobs is a parameter GridSearchCV can set
    searches = [GridSearchCV(NytroRegressor(n_centers=30, random_state=0), grid, cv=3, n_jobs=jobs,
                             error_score="raise").fit(X, y) for jobs in (1, 2)]
    assert searches[0].best_params_["sigma"] == searches[1].best_params_["sigma"]
    assert_allclose(searches[0].cv_results_["mean_test_score"], searches[1].cv_results_["mean_test_score"],
                    rtol=1e-9)
