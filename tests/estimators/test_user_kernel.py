"""kernel=<callable>: a kernel of one's own, evaluated by blocks (nytro._callable), fits
what the core's built-in kernel of the same formula fits, to rounding."""
import re

import numpy as np
import pytest
from conftest import assert_close
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes

import nytro
from nytro import NystromKRLSRegressor, NytroClassifier, NytroRegressor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def gaussian(sigma):
    def k(X, Z):
        squared = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        return np.exp(-squared / (2.0 * sigma * sigma))
    return k


def linear(X, Z):
    return X @ Z.T


def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X, y


@pytest.mark.parametrize("method", ["gd", "nu", "cg", "hybrid"])
def test_a_callable_gaussian_fits_the_builtin_one(method):
    X, y = diabetes()
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(X))
    Y = np.column_stack([y, -2.0 * y + 10.0])
    common = dict(n_centers=80, method=method, max_iter=200, random_state=0)
    builtin = NytroRegressor(sigma=0.5, **common).fit(X, Y, sample_weight=w)
    own = NytroRegressor(kernel=gaussian(0.5), **common).fit(X, Y, sample_weight=w)
    assert own.sigma_ is None and own.n_iter_ == builtin.n_iter_
    assert_close(own.validation_rmse_, builtin.validation_rmse_, np.float64, what="hold-out path")
    assert_close(own.predict(X), builtin.predict(X), np.float64, what="predictions")
    np.testing.assert_array_equal(own.centers_, builtin.centers_)


def test_a_callable_linear_kernel_fits_the_builtin_one():
    # Not a unit-diagonal kernel: hybrid's lambda grid scales with max k(x, x), here
    # read from the callable's diagonal blocks, as the core reads max ||x||^2.
    X, y = diabetes()
    common = dict(n_centers=60, method="hybrid", random_state=1)
    builtin = NytroRegressor(kernel="linear", **common).fit(X, y)
    own = NytroRegressor(kernel=linear, **common).fit(X, y)
    assert own.n_iter_ == builtin.n_iter_ and own.lambda_ == pytest.approx(builtin.lambda_, rel=1e-9)
    assert_close(own.predict(X), builtin.predict(X), np.float64)


@pytest.mark.parametrize("selection", ["error", "rmse"])
def test_a_callable_kernel_in_the_classifier(selection):
    X, y = load_breast_cancer(return_X_y=True)
    X = X / X.std(axis=0)
    common = dict(n_centers=80, selection=selection, random_state=0)
    builtin = NytroClassifier(sigma=3.0, **common).fit(X, y)
    own = NytroClassifier(kernel=gaussian(3.0), **common).fit(X, y)
    assert own.n_iter_ == builtin.n_iter_
    assert_close(own.decision_function(X), builtin.decision_function(X), np.float64)
    assert own.calibration_scale_ == pytest.approx(builtin.calibration_scale_, rel=1e-9)
    assert_close(own.predict_proba(X), builtin.predict_proba(X), np.float64)


def test_a_callable_kernel_in_partial_fit():
    X, y = diabetes()
    common = dict(n_centers=50, centers=X[:50], method="cg", random_state=0)
    builtin, own = NytroRegressor(sigma=0.5, **common), NytroRegressor(kernel=gaussian(0.5), **common)
    for rows in np.array_split(np.arange(len(X)), 4):
        builtin.partial_fit(X[rows], y[rows])
        own.partial_fit(X[rows], y[rows])
    assert own.n_iter_ == builtin.n_iter_
    assert_close(own.predict(X), builtin.predict(X), np.float64)


def test_a_callable_kernel_is_a_parameter_like_the_others():
    est = NytroRegressor(kernel=linear, n_centers=20)
    assert clone(est).get_params()["kernel"] is linear
    X, y = diabetes()
    fitted = NytroRegressor(kernel=linear, n_centers=20, verbose=1, random_state=0).fit(X, y)
    assert fitted.sigma_ is None and fitted.n_centers_ == 20


def test_what_a_callable_kernel_is_refused_by_name():
    X, y = diabetes()
    with pytest.raises(NotImplementedError, match="NystromKRLSRegressor does not take a kernel of one's own"):
        NystromKRLSRegressor(kernel=linear, n_centers=20).fit(X, y)
    for call in ("fit", "partial_fit"):
        with pytest.raises(ValueError, match="center_selection='leverage' is not supported with a kernel of one's"):
            getattr(NytroRegressor(kernel=linear, n_centers=20, center_selection="leverage"), call)(X, y)
    with pytest.raises(NotImplementedError, match="a kernel of one's own is taken by NytroRegressor"):
        nytro.kernel_matrix(X, X[:3], kernel=linear)
    with pytest.raises(ValueError, match="returned shape"):
        NytroRegressor(kernel=lambda A, B: A @ B[:1].T, n_centers=20).fit(X, y)
    with pytest.raises(ValueError, match="not finite"):
        NytroRegressor(kernel=lambda A, B: np.full((len(A), len(B)), np.nan), n_centers=20).fit(X, y)


# Options the path from partial_fit's sums cannot honour, each set as a keyword or in the
# options object: refused by name (nytro._batches.refuse_options) rather than ignored.
REFUSED_OPTIONS = {
    "solver=direct": (dict(solver="direct"), "solver='direct'"),
    "solver=spectral": (dict(solver="spectral"), "solver='spectral'"),
    "storage=float32": (dict(storage="float32"), "storage='float32'"),
    "storage=float16": (dict(storage="float16"), "storage='float16'"),
    "options.solver": (dict(options=nytro.NytroOptions(solver="spectral")), "solver='spectral'"),
    "options.storage": (dict(options=nytro.NytroOptions(storage="float16")), "storage='float16'"),
}


@pytest.mark.parametrize("estimator", [NytroRegressor, NytroClassifier])
@pytest.mark.parametrize("name", sorted(REFUSED_OPTIONS))
def test_options_a_callable_kernel_cannot_honour_are_refused_by_name(name, estimator):
    X, y = diabetes()
    given, words = REFUSED_OPTIONS[name]

    def never(A, B):  # refused before any work: the kernel is never called
        pytest.fail("the kernel was called")

    refusal = re.escape(words) + " is not supported with a kernel of one's own.*supported: "
    with pytest.raises(ValueError, match=refusal):
        estimator(kernel=never, n_centers=20, random_state=0, **given).fit(X, np.sign(y - y.mean()))


def test_the_options_a_callable_kernel_does_anyway_are_accepted():
    # The defaults, and solver="gram" (what the callable's path runs), as a keyword or an
    # options field: the same model.
    X, y = diabetes()
    common = dict(kernel=gaussian(0.5), n_centers=40, method="cg", random_state=0)
    want = NytroRegressor(**common).fit(X, y)
    assert want.solver_ == "gram"
    for given in (dict(solver="auto", storage=None), dict(solver="gram"),
                  dict(options=nytro.NytroOptions(solver="gram", iterates="stepwise"))):
        got = NytroRegressor(**common, **given).fit(X, y)
        assert got.solver_ == "gram" and got.n_iter_ == want.n_iter_
        assert_close(got.predict(X), want.predict(X), np.float64, what=str(given))


def test_dask_arrays_refuse_a_callable_kernel():
    da = pytest.importorskip("dask.array")
    X, y = diabetes()
    with pytest.raises(NotImplementedError, match="not supported on dask arrays"):
        NytroRegressor(kernel=linear, n_centers=20).fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
