"""nytro.dask under any chunking: the hold-out split and the centres are functions of the
global row index, so random row chunks (empty ones included) give the one-chunk fit, to
the rounding of the chunks' sums, and predict gives the in-memory prediction."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

da = pytest.importorskip("dask.array")
nd = pytest.importorskip("nytro.dask")

import nytro  # noqa: E402

from ._support import assert_close  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@st.composite
def chunkings(draw, n):
    """Row chunk sizes summing to n: up to 6 cuts at drawn places, some of them repeated
    (empty chunks), at the ends too."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    edges = [0] + cuts + [n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:]))


@given(data=st.data(), method=st.sampled_from(["gd", "nu", "cg", "hybrid"]),
       solver=st.sampled_from(["gram", "direct"]), q=st.sampled_from([1, 2]), weighted=st.booleans())
def test_any_chunking_gives_the_one_chunk_fit(data, method, solver, q, weighted):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.integers(30, 80))
    X = rng.standard_normal((n, 2))
    y = np.sin(X.sum(1)) + 0.1 * rng.standard_normal(n)
    Y = y if q == 1 else np.c_[y, np.cos(X[:, 0])]
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    chunks = data.draw(chunkings(n))

    def fit(row_chunks):
        Xd = da.from_array(X, chunks=(row_chunks, 2))
        Yd = da.from_array(Y, chunks=(row_chunks,) if q == 1 else (row_chunks, q))
        return nd.nytro_path(Xd, Yd, 1.0, n_centers=8, seed=3, validation_fraction=0.25, method=method,
                             max_iter=8, solver=solver, sample_weight=w, n_threads=1)

    got, one = fit(chunks), fit((n,))
    np.testing.assert_array_equal(got.center_rows, one.center_rows)
    assert (got.n_train, got.n_val) == (one.n_train, one.n_val)
    assert (got.result.n_iter, got.result.iterations_run) == (one.result.n_iter, one.result.iterations_run)
    # cg and hybrid amplify the sums' rounding as they near convergence (test_dask.py).
    tol = 1e-8 if method in ("gd", "nu") else 1e-6
    assert_close(got.result.validation_rmse, one.result.validation_rmse, tol, "validation path")
    assert_close(got.result.coef, one.result.coef, tol, "coef")
    Z = da.from_array(X, chunks=(chunks, 2))
    predicted = nd.predict(Z, got.centers, got.result.coef, 1.0).compute()
    assert_close(predicted, nytro.kernel_predict(X, got.centers, got.result.coef, 1.0), 1e-10, "predict")


@given(data=st.data(), estimator=st.sampled_from(["regressor", "classifier"]))
def test_estimators_take_any_chunking(data, estimator):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.integers(30, 60))
    X = rng.standard_normal((n, 2))
    y = np.sin(X.sum(1)) + 0.1 * rng.standard_normal(n)
    if estimator == "classifier":
        y = np.where(y > np.median(y), "b", "a")
    chunks = data.draw(chunkings(n))
    make = nytro.NytroClassifier if estimator == "classifier" else nytro.NytroRegressor
    models = [make(8, 1.0, method="cg", max_iter=6, random_state=0, n_threads=1).fit(
        da.from_array(X, chunks=(c, 2)), da.from_array(y, chunks=(c,))) for c in (chunks, (n,))]
    predicted = models[0].predict(da.from_array(X, chunks=(chunks, 2)))
    predicted = np.asarray(predicted.compute() if hasattr(predicted, "compute") else predicted)
    if estimator == "classifier":
        np.testing.assert_array_equal(predicted, models[0].predict(X))
        np.testing.assert_array_equal(predicted, models[1].predict(X))
    else:
        # A row's kernel depends, to a few ulps, on where it falls in the core's row tiles,
        # which the chunks move; coef sums those kernel values with cancellation.
        assert_close(predicted, models[0].predict(X), 1e-10, "predictions against in-memory predict")
        assert_close(predicted, models[1].predict(X), 1e-6, "predictions against the one-chunk model")
