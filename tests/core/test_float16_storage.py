"""storage="float16": NYTRO's K_nm in half precision with the factor's rank cut that goes
with it, against the reference (which rounds K_nm and cuts the rank alike), against
float32 storage, across thread counts, and its errors."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import SERIAL, assert_close, make_problem


def crowded_problem(dtype=np.float64, n_outputs=None, n=700):
    """Many centres in two dimensions: K_mm is near singular, so the float16 rank cut
    drops centres (a cut the tests check happens)."""
    return make_problem(n=n, d=2, m=160, n_val=150, sigma=0.8, n_outputs=n_outputs, dtype=dtype)


@pytest.mark.parametrize("n_outputs", [None, 2, 10])  # 10: past the row kernels' 8 columns
def test_float16_matches_reference(dtype, n_outputs):
    p = crowded_problem(dtype, n_outputs)
    args = (p.X, p.y, p.centers, p.sigma)
    ours = nytro.nytro_path(*args, **p.holdout, max_iter=80, storage="float16", iterates="stepwise", **SERIAL)
    theirs = ref.nytro_path(*args, **p.holdout, max_iter=80, storage="float16")
    assert ours.solver == "direct" and ours.coef.dtype == dtype
    assert ours.rank == theirs.rank < p.centers.shape[0]
    assert ours.n_iter == theirs.n_iter
    # The reference rounds a float64 kernel to half, the core a float32 one: an entry now
    # and then lands one half-ulp (2^-11) apart, which moves the path by far less.
    assert_close(ours.validation_rmse, theirs.validation_rmse, dtype, rtol=1e-4, what="validation_rmse")
    K_val = ref.gaussian_kernel(p.X_val, p.centers, p.sigma)
    assert_close(K_val @ ours.coef, K_val @ theirs.coef, dtype, rtol=1e-3, what="predictions")


def test_float16_rank_cut_is_the_factor_at_its_tolerance():
    p = crowded_problem()
    K_mm = ref.gaussian_kernel(p.centers, p.centers, p.sigma)
    expected = ref.nystrom_factor(K_mm, rank_tol=ref.FLOAT16_RANK_TOL).shape[1]
    half = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, max_iter=5, storage="float16")
    assert half.rank == expected < ref.nystrom_factor(K_mm).shape[1]
    # An explicit rank_tol overrides the cut.
    loose = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, max_iter=5, storage="float16", rank_tol=1e-2)
    assert loose.rank == ref.nystrom_factor(K_mm, rank_tol=1e-2).shape[1] < half.rank


def test_float16_keeps_the_float32_storage_path():
    """At the float16 cut the hold-out path stays within a small fraction of the float32
    one at the full rank (what bench_stages shows on Covertype: test RMSE 0.913269 against
    0.913370)."""
    p = make_problem(n=1500, d=6, m=200, n_val=300, sigma=2.0, noise=0.3)
    args = (p.X, p.y, p.centers, p.sigma)
    half = nytro.nytro_path(*args, **p.holdout, max_iter=150, storage="float16")
    single = nytro.nytro_path(*args, **p.holdout, max_iter=150, storage="float32")
    np.testing.assert_allclose(half.validation_rmse, single.validation_rmse, rtol=2e-3)


def test_float16_gives_the_same_bits_on_any_thread_count():
    p = crowded_problem(n=3000)
    args = (p.X, p.y, p.centers, p.sigma)
    runs = [nytro.nytro_path(*args, **p.holdout, max_iter=40, storage="float16", n_threads=t) for t in (1, 2, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.coef, runs[0].coef)
        np.testing.assert_array_equal(run.validation_rmse, runs[0].validation_rmse)


def test_float16_estimator():
    p = make_problem(n=400)
    est = nytro.NytroRegressor(40, p.sigma, storage="float16", random_state=0).fit(p.X, p.y)
    assert est.solver_ == "direct" and est.coef_.dtype == np.float64
    assert np.isfinite(est.predict(p.X_val)).all()
    spelled = nytro.NytroRegressor(40, p.sigma, storage=np.float16, random_state=0).fit(p.X, p.y)
    np.testing.assert_array_equal(spelled.coef_, est.coef_)


@pytest.mark.parametrize("options, message", [
    ({"solver": "gram"}, "storage='float16' stores K_nm"),
    ({"solver": "spectral"}, "storage='float16' stores K_nm"),
    ({"factor": "cholesky"}, "needs a rank-revealing factor"),
])
def test_float16_options_are_checked(options, message):
    p = make_problem()
    with pytest.raises(ValueError, match=message):
        nytro.nytro_path(p.X, p.y, p.centers, p.sigma, storage="float16", **options)


def test_float16_is_for_nytro_only():
    p = make_problem()
    with pytest.raises(ValueError, match="storage='float16' is not one of None, 'float32'"):
        nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, storage="float16")
    with pytest.raises(ValueError, match="storage='float16' is not one of None, 'float32'"):
        nytro.NystromKRLSRegressor(20, p.sigma, storage="float16").fit(p.X, p.y)


# The linear kernel's values scale as |x|^2: features of 1e-4 make entries of ~1e-8, below
# half precision's smallest subnormal (6e-8), and features in [100, 200] entries up to
# 1.2e5, beyond its largest value (65504). Half's unit roundoff, relative to the largest
# entries once they are stored at the top of its range.
HALF_EPS = float(np.finfo(np.float16).eps) / 2
LINEAR_SCALES = {"small": (1e-4, 0.0), "large": (50.0, 150.0)}


def linear_problem(scale, shift, n=400):
    """Features U in (-1, 1), scaled and shifted, and y exactly linear in them (no
    intercept), of order 1: the linear kernel fits it at any scale."""
    X = np.random.default_rng(3).uniform(-1, 1, (n, 3)) * scale + shift
    return X, X @ np.array([1.0, -1.0, 0.5]) / scale


@pytest.mark.parametrize("scale", LINEAR_SCALES)
def test_float16_linear_kernel_matches_reference_at_any_scale(scale):
    X, y = linear_problem(*LINEAR_SCALES[scale])
    args = (X[:300], y[:300], X[:40], 1.0)
    holdout = {"X_val": X[300:], "y_val": y[300:]}
    common = dict(kernel="linear", method="cg", max_iter=30, storage="float16")
    ours = nytro.nytro_path(*args, **holdout, **common, **SERIAL)
    theirs = ref.nytro_path(*args, **holdout, **common)
    exact = ref.nytro_path(*args, **holdout, **{**common, "storage": None}, rank_tol=ref.FLOAT16_RANK_TOL)
    assert ours.rank == theirs.rank == exact.rank
    K_val = X[300:] @ X[:40].T
    # The reference rounds a float64 kernel to half, the core a float32 one (an entry now
    # and then one half-ulp apart); against the unrounded kernel, the model moves by
    # half's rounding times R's conditioning, a few units here.
    assert_close(K_val @ ours.coef, K_val @ theirs.coef, np.float64, rtol=HALF_EPS, what="against the reference")
    assert_close(K_val @ ours.coef, K_val @ exact.coef, np.float64, rtol=8 * HALF_EPS, what="against float64")
    assert relative_rmse(K_val @ ours.coef, y[300:]) < 8 * HALF_EPS


def relative_rmse(predicted, y):
    return float(np.sqrt(np.mean((predicted - y) ** 2)) / np.sqrt(np.mean(y ** 2)))


@pytest.mark.parametrize("scale", LINEAR_SCALES)
def test_float16_linear_kernel_estimators_at_any_scale(scale):
    X, y = linear_problem(*LINEAR_SCALES[scale])
    # A target linear through the origin: the linear kernel's own model, no intercept.
    models = {storage: nytro.NytroRegressor(n_centers=40, kernel="linear", storage=storage, fit_intercept=False,
                                            random_state=0).fit(X, y)
              for storage in (None, "float16")}
    half, full = models["float16"].predict(X), models[None].predict(X)
    assert relative_rmse(full, y) < 8 * HALF_EPS  # the linear model is within reach
    assert relative_rmse(half, y) < 8 * HALF_EPS
    labels = y > np.median(y)
    classifiers = {storage: nytro.NytroClassifier(n_centers=40, kernel="linear", storage=storage,
                                                  random_state=0).fit(X, labels)
                   for storage in (None, "float16")}
    scores = {storage: c.decision_function(X) for storage, c in classifiers.items()}
    assert_close(scores["float16"], scores[None], np.float64, rtol=8 * HALF_EPS, what="decision_function")
    # Rows whose score is further from 0 than that tolerance get the same label.
    margin = np.abs(scores[None]) > 8 * HALF_EPS * np.abs(scores[None]).max()
    np.testing.assert_array_equal(classifiers["float16"].predict(X)[margin], classifiers[None].predict(X)[margin])
    assert classifiers["float16"].score(X, labels) > 0.9


@pytest.mark.parametrize("scale", LINEAR_SCALES)
def test_float16_linear_kernel_with_sample_weights(scale, dtype):
    """Sample weights scale the stored rows of K_nm by sqrt(w n / sum w): one weight 200
    times the others' mean puts a row scale near 14 on the largest entries, beyond half's
    range unless the stored scale allows for it. Against the reference, which scales the
    rows after the rounding (the core rounds the scaled rows again): a few half ulps."""
    X, y = linear_problem(*LINEAR_SCALES[scale])
    w = np.random.default_rng(5).exponential(size=300)
    w[np.argmax(np.linalg.norm(X[:300], axis=1))] = 200.0
    args = (X[:300], y[:300], X[:40], 1.0)
    common = dict(kernel="linear", method="cg", max_iter=30, storage="float16", sample_weight=w, dtype=dtype,
                  X_val=X[300:], y_val=y[300:])
    ours = nytro.nytro_path(*args, **common, **SERIAL)
    theirs = ref.nytro_path(*args, **common)
    assert ours.rank == theirs.rank
    K_val = X[300:] @ X[:40].T
    assert_close(K_val @ ours.coef, K_val @ theirs.coef, dtype, rtol=8 * HALF_EPS, what="predictions")


@pytest.mark.parametrize("storage, kept", [("float16", "the hold-out kernel"),
                                           ("float32", "K_nm and the hold-out kernel")])
def test_low_storage_names_itself_where_the_linear_kernel_overflows_float32(storage, kept):
    """The hold-out kernel of either storage (and float32's K_nm) is kept in float32,
    where ||x||^2 overflows from |x| ~ 1.8e19: the error named Z, the centres, and
    "sigma", which the linear kernel has none of, rather than the storage."""
    X, y = linear_problem(1e25, 0.0)
    message = f"storage='{storage}' keeps {kept} in float32.*rescale X, or use storage=None"
    with pytest.raises(ValueError, match=message):
        nytro.NytroRegressor(n_centers=40, kernel="linear", storage=storage, random_state=0).fit(X, y)
    # float16's K_nm is stored scaled: without a hold-out set it fits at any scale.
    if storage == "float16":
        fit = nytro.nytro_path(X, y, X[:40], 1.0, kernel="linear", method="cg", max_iter=10, storage=storage)
        assert relative_rmse(X @ X[:40].T @ fit.coef, y) < 8 * HALF_EPS
