"""NytroRegressor.partial_fit: batches add up exactly (nytro._batches), so k calls equal
one call on their concatenation, and both equal the in-memory path (the gram solver) and
the NumPy twin on the same split (nytro._holdout's hash of the row index) and centres.
NystromKRLSRegressor.partial_fit and NystromKRLSClassifier.partial_fit, on the same sums,
likewise against nytro.nkrls_path and its twin."""
import numpy as np
import pytest
from conftest import RTOL, SERIAL, assert_close
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

import nytro
from nytro import NystromKRLSClassifier, NystromKRLSRegressor, NytroClassifier, NytroRegressor, reference
from nytro._holdout import holdout_mask

# gd and nu at 150 iterations may select the last one: the path's cut is not what is checked here.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

METHODS = ["gd", "nu", "cg", "hybrid"]
SIGMA = 2.0


def problem(n=480, d=4, q=None, seed=0, offset=3.0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.randn(n) + offset
    if q is not None:
        y = np.column_stack([y] + [np.cos(X[:, j % d]) - 2.0 * j for j in range(1, q)])
    return X, y


def batches(n, cuts):
    edges = [0, *cuts, n]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


def fitted(X, y, cuts, w=None, **params):
    est = NytroRegressor(**params)
    for s in batches(len(X), cuts):
        est.partial_fit(X[s], y[s], None if w is None else w[s])
    return est


def split_of(est, n):
    """The hold-out rows of n rows under est's partial_fit split (the seed drawn from
    random_state as the first call draws it)."""
    seed = int(np.random.RandomState(est.random_state).randint(0, 2**63 - 1, dtype=np.int64))
    return holdout_mask(np.arange(n), est.validation_fraction, seed)


def params(method, X, dtype=np.float64, **extra):
    return dict(n_centers=40, centers=X[::12][:40], sigma=SIGMA, method=method, max_iter=150, random_state=0,
                dtype=dtype, n_threads=1, **extra)


def tolerance(dtype, method):
    # The paths of k calls and of one call differ by the order of the sums (float64)
    # rounded to the compute dtype; a Krylov path (cg, hybrid) carries that rounding
    # through its basis, gd and nu through their step.
    return RTOL[np.dtype(dtype)] * (10 if np.dtype(dtype) == np.float32 and method in ("cg", "hybrid") else 1)


@pytest.mark.parametrize("method", METHODS)
def test_batches_equal_one_call_on_their_concatenation(method, dtype):
    X, y = problem()
    X = X.astype(dtype)
    many = fitted(X, y, [100, 101, 350], **params(method, X, dtype))
    one = fitted(X, y, [], **params(method, X, dtype))
    assert many.n_iter_ == one.n_iter_
    assert_close(many.validation_rmse_, one.validation_rmse_, dtype, rtol=tolerance(dtype, method),
                 what="hold-out path")
    assert_close(many.predict(X), one.predict(X), dtype, rtol=tolerance(dtype, method), what="predictions")
    assert many.intercept_ == pytest.approx(one.intercept_, rel=RTOL[np.dtype(dtype)])


@pytest.mark.parametrize("method", METHODS)
def test_partial_fit_is_the_path_on_its_split(method):
    # The same training and hold-out rows and centres given to nytro.nytro_path (gram
    # solver) and to the twin: the same selected t and model, to rounding.
    X, y = problem(q=2)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    est = fitted(X, y, [150, 300], w=w, **params(method, X))
    held = split_of(est, len(X))
    mu = np.average(y, axis=0, weights=w)
    keywords = dict(X_val=X[held], y_val=y[held] - mu, method=method, max_iter=150, n_iter_no_change=50,
                    sample_weight=w[~held], sample_weight_val=w[held])
    core = nytro.nytro_path(X[~held], y[~held] - mu, est.centers_, SIGMA, solver="gram", **SERIAL, **keywords)
    twin = reference.nytro_path(X[~held], y[~held] - mu, est.centers_, SIGMA, **keywords)
    np.testing.assert_allclose(est.intercept_, mu, rtol=1e-12)
    for other in (core, twin):
        assert est.n_iter_ == other.n_iter
        assert_close(est.validation_rmse_, other.validation_rmse, np.float64, what="hold-out path")
        K = nytro.kernel_matrix(X, est.centers_, sigma=SIGMA)
        assert_close(K @ est.coef_, K @ other.coef, np.float64, what="predictions")
    if method == "hybrid":
        assert est.lambda_ == pytest.approx(core.lambda_, rel=1e-12)


def test_the_split_does_not_depend_on_the_batches():
    X, y = problem()
    ests = [fitted(X, y, cuts, **params("cg", X)) for cuts in ([], [7], [200, 201, 202], list(range(40, 480, 40)))]
    for est in ests[1:]:
        assert est.n_iter_ == ests[0].n_iter_
        assert_close(est.predict(X), ests[0].predict(X), np.float64)


def test_refit_on_every_row_seen():
    X, y = problem()
    est = fitted(X, y, [240], **params("gd", X, refit=True))
    mu = y.mean()
    again = nytro.nytro_path(X, y - mu, est.centers_, SIGMA, method="gd", max_iter=est.n_iter_, solver="gram")
    K = nytro.kernel_matrix(X, est.centers_, sigma=SIGMA)
    assert_close(K @ est.coef_, K @ again.coef, np.float64)


def test_weights_scale_and_integer_weights():
    # The weights' scale does not matter (1e-300 or 1e300 times them), down to the range's ends.
    X, y = problem()
    w = np.random.RandomState(2).randint(1, 4, len(X)).astype(float)
    base = fitted(X, y, [100, 300], w=w, **params("nu", X))
    for scale in (1e-300, 1e300):
        other = fitted(X, y, [100, 300], w=w * scale, **params("nu", X))
        assert other.n_iter_ == base.n_iter_
        assert_close(other.predict(X), base.predict(X), np.float64)


def test_extreme_target_magnitudes():
    # Targets near the ends of float64's range fit the scaled model, by the first batch's
    # powers of two; a later batch that leaves that range is refused by name.
    X, y = problem(offset=0.0)
    base = fitted(X, y, [200], **params("cg", X, fit_intercept=False))
    for scale in (1e-300, 1e300):
        big = fitted(X, y * scale, [200], **params("cg", X, fit_intercept=False))
        assert big.n_iter_ == base.n_iter_
        assert_close(big.coef_ / scale, base.coef_, np.float64)
    est = NytroRegressor(**params("cg", X, fit_intercept=False)).partial_fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="y of this batch"):
        est.partial_fit(X[200:], y[200:] * 1e300)


def test_linear_kernel_and_multiple_outputs():
    X, y = problem(q=3)
    est = fitted(X, y, [300], **params("hybrid", X, kernel="linear"))
    held = split_of(est, len(X))
    mu = y.mean(axis=0)
    core = nytro.nytro_path(X[~held], y[~held] - mu, est.centers_, None, kernel="linear", X_val=X[held],
                            y_val=y[held] - mu, method="hybrid", max_iter=150, n_iter_no_change=50, solver="gram")
    assert est.coef_.shape == (40, 3) and est.n_iter_ == core.n_iter
    assert_close(est.validation_rmse_, core.validation_rmse, np.float64)


def test_first_call_draws_centres_and_auto_sigma_from_the_first_batch():
    X, y = problem()
    est = NytroRegressor(n_centers=30, random_state=0, max_iter=100).partial_fit(X[:120], y[:120])
    assert est.n_centers_ == 30 and est.sigma_.shape == (4,)
    assert np.isnan(est.sigma_scores_).all()  # the distance heuristic alone
    rows = {tuple(r) for r in X[:120]}
    assert all(tuple(c) in rows for c in est.centers_)
    sigma, centers = est.sigma_.copy(), est.centers_.copy()
    est.partial_fit(X[120:], y[120:])
    np.testing.assert_array_equal(est.sigma_, sigma)
    np.testing.assert_array_equal(est.centers_, centers)


def test_small_first_batch_caps_the_centres():
    X, y = problem()
    with pytest.warns(UserWarning, match="more than the"):
        est = NytroRegressor(n_centers=1000, sigma=SIGMA, random_state=0).partial_fit(X[:50], y[:50])
    assert est.n_centers_ < 50


def test_no_holdout_row_yet_warns():
    X, y = problem()
    est = NytroRegressor(**params("gd", X, validation_fraction=0.01))
    held = split_of(est, len(X))
    first = int(np.argmax(held))
    assert first > 2
    with pytest.warns(UserWarning, match="none of the"):
        est.partial_fit(X[:first], y[:first])
    assert est.n_iter_ == 150 and len(est.validation_rmse_) == 0
    est.partial_fit(X[first:], y[first:])
    assert len(est.validation_rmse_) > 0


def test_fit_discards_the_batches():
    X, y = problem()
    est = NytroRegressor(**params("cg", X)).partial_fit(X[:200], y[:200])
    est.fit(X[200:], y[200:])
    after = est.partial_fit(X[:200], y[:200])
    fresh = NytroRegressor(**params("cg", X)).partial_fit(X[:200], y[:200])
    assert_close(after.predict(X), fresh.predict(X), np.float64)


def test_partial_fit_refuses_by_name():
    X, y = problem()
    # What the sums cannot honour, refused by name (a ValueError, and the NotImplementedError
    # these refusals raised before), however it is set.
    for bad, words in (
            (dict(solver="direct"), "solver='direct'"),
            (dict(solver="spectral"), "solver='spectral'"),
            (dict(options=nytro.NytroOptions(solver="direct")), "solver='direct'"),
            (dict(storage="float32"), "storage='float32'"),
            (dict(storage="float16"), "storage='float16'"),
            (dict(options=nytro.NytroOptions(storage="float32")), "storage='float32'"),
            (dict(n_centers="auto", centers=None), 'n_centers="auto"'),
    ):
        for error in (ValueError, NotImplementedError):
            with pytest.raises(error, match=f"{words} is not supported by partial_fit"):
                NytroRegressor(**{**params("gd", X), **bad}).partial_fit(X, y)
    # What they do anyway is accepted: the same model as the defaults'.
    want = NytroRegressor(**params("cg", X)).partial_fit(X, y)
    for same in (dict(solver="gram"), dict(options=nytro.NytroOptions(solver="gram")), dict(storage=None)):
        got = NytroRegressor(**params("cg", X, **same)).partial_fit(X, y)
        assert got.solver_ == "gram" and got.n_iter_ == want.n_iter_
        assert_close(got.predict(X), want.predict(X), np.float64, what=str(same))
    est = NytroRegressor(**params("gd", X)).partial_fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="outputs"):
        est.partial_fit(X[200:], np.column_stack([y[200:], y[200:]]))
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[200:, :3], y[200:])
    est = NytroRegressor(**params("gd", X, validation_fraction=0.2))
    held = split_of(est, len(X))
    if held[0]:
        with pytest.raises(ValueError, match="all of them held out"):
            est.partial_fit(X[:1], y[:1])


def test_diabetes_in_batches():
    # Real data as it comes: the bandwidths of one call's sigma="auto" given to ten calls,
    # which then fit its model.
    X, y = load_diabetes(return_X_y=True)
    common = dict(n_centers=100, centers=X[:100], random_state=0, n_threads=1)
    one = fitted(X, y, [], **common)
    many = fitted(X, y, list(range(44, 442, 44)), sigma=one.sigma_, **common)
    assert many.n_iter_ == one.n_iter_
    assert_close(many.predict(X), one.predict(X), np.float64)


@pytest.mark.parametrize("loader", [load_breast_cancer, load_digits], ids=["two classes", "ten classes"])
@pytest.mark.parametrize("selection", ["error", "rmse"])
def test_classifier_batches_equal_one_call_and_the_path(loader, selection):
    # The +-1 codes' path on the same split and centres (nytro.nytro_path with the
    # selection's metric), and the probabilities' scale fitted on the same hold-out rows.
    X, y = loader(return_X_y=True)
    sigma = 4.0 * X.std(0) + 1e-3
    common = dict(n_centers=100, centers=X[:100], sigma=sigma, random_state=0, selection=selection, max_iter=200,
                  n_threads=1)
    many = NytroClassifier(**common)
    for rows in np.array_split(np.arange(len(X)), 5):
        many.partial_fit(X[rows], y[rows], classes=np.unique(y))
    one = NytroClassifier(**common).partial_fit(X, y, classes=np.unique(y))
    assert many.n_iter_ == one.n_iter_
    assert_close(many.decision_function(X), one.decision_function(X), np.float64)
    assert many.calibration_scale_ == pytest.approx(one.calibration_scale_, rel=1e-9)
    held = split_of(many, len(X))
    _, Y = nytro.estimators.classifiers.encode_labels(y)
    core = nytro.nytro_path(X[~held], Y[~held], many.centers_, sigma, X_val=X[held], y_val=Y[held], method="hybrid",
                            max_iter=200, n_iter_no_change=50, metric=selection, solver="gram")
    assert many.n_iter_ == core.n_iter
    path = many.validation_error_ if selection == "error" else many.validation_rmse_
    assert_close(path, core.validation_rmse, np.float64)
    K = nytro.kernel_matrix(X, many.centers_, sigma=sigma)
    assert_close(many.decision_function(X), (K @ core.coef).reshape(many.decision_function(X).shape), np.float64)
    assert_close(many.predict_proba(X).sum(axis=1), np.ones(len(X)), np.float64)


def test_classifier_partial_fit_refuses_by_name():
    X, y = load_breast_cancer(return_X_y=True)
    common = dict(n_centers=20, sigma=100.0, random_state=0)
    with pytest.raises(ValueError, match="needs classes at its first call"):
        NytroClassifier(**common).partial_fit(X, y)
    est = NytroClassifier(**common).partial_fit(X[:100], y[:100], classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        est.partial_fit(X[100:], y[100:] + 1)
    with pytest.raises(ValueError, match="fixed at the first call"):
        est.partial_fit(X[100:], y[100:], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="one class"):
        NytroClassifier(**common).partial_fit(X, y, classes=[1])


def test_classifier_has_no_probabilities_before_a_holdout_row():
    X, y = load_breast_cancer(return_X_y=True)
    est = NytroClassifier(n_centers=10, sigma=100.0, random_state=0, validation_fraction=0.01)
    held = split_of(est, len(X))
    first = int(np.argmax(held))
    assert first > 20
    with pytest.warns(UserWarning, match="none of the"):
        est.partial_fit(X[:first], y[:first], classes=[0, 1])
    assert not hasattr(est, "predict_proba")
    est.partial_fit(X[first:], y[first:])
    assert est.predict_proba(X[:3]).shape == (3, 2)


# ------------------------------------------------------------------ Nystrom KRLS
def nkrls_fitted(X, y, cuts, w=None, estimator=NystromKRLSRegressor, classes=None, **params):
    est = estimator(**params)
    extra = {} if classes is None else dict(classes=classes)
    for s in batches(len(X), cuts):
        est.partial_fit(X[s], y[s], sample_weight=None if w is None else w[s], **extra)
    return est


def nkrls_params(X, dtype=np.float64, **extra):
    return dict(n_centers=40, centers=X[::12][:40], sigma=SIGMA, random_state=0, dtype=dtype, n_threads=1, **extra)


def test_nkrls_batches_equal_one_call_on_their_concatenation(dtype):
    # float32 on a grid that float32's eigendecomposition resolves (the paper's smallest
    # lambdas sit below its rounding of A^T A).
    X, y = problem(q=2)
    X = X.astype(dtype)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    grid = None if dtype == np.float64 else np.logspace(-6, 0, 13)
    many = nkrls_fitted(X, y, [100, 101, 350], w=w, **nkrls_params(X, dtype, lambdas=grid))
    one = nkrls_fitted(X, y, [], w=w, **nkrls_params(X, dtype, lambdas=grid))
    assert many.lambda_ == one.lambda_ and many.coef_.dtype == dtype
    np.testing.assert_array_equal(many.lambdas_, one.lambdas_)
    assert_close(many.validation_rmse_, one.validation_rmse_, dtype, what="hold-out path")
    assert_close(many.predict(X), one.predict(X), dtype, what="predictions")
    assert_close(many.intercept_, one.intercept_, dtype, what="intercept")


@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_nkrls_partial_fit_is_the_path_on_its_split(kernel):
    # The same training and hold-out rows and centres given to nytro.nkrls_path and to the
    # twin: the same lambda grid (the linear kernel's scaled by max ||x||^2 over the
    # training rows), selected lambda and model, to rounding.
    X, y = problem(q=2)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    est = nkrls_fitted(X, y, [150, 300], w=w, **nkrls_params(X, kernel=kernel))
    held = split_of(est, len(X))
    mu = np.average(y, axis=0, weights=w)
    keywords = dict(X_val=X[held], y_val=y[held] - mu, kernel=kernel, sample_weight=w[~held],
                    sample_weight_val=w[held])
    core = nytro.nkrls_path(X[~held], y[~held] - mu, est.centers_, SIGMA, **SERIAL, **keywords)
    twin = reference.nkrls_path(X[~held], y[~held] - mu, est.centers_, SIGMA, **keywords)
    np.testing.assert_allclose(est.intercept_, mu, rtol=1e-12)
    np.testing.assert_allclose(est.lambdas_, nytro._checks.check_lambdas(None, kernel, X[~held]), rtol=1e-15)
    K = nytro.kernel_matrix(X, est.centers_, sigma=SIGMA, kernel=kernel)
    for other in (core, twin):
        assert est.lambda_ == other.lambda_
        assert_close(est.validation_rmse_, other.validation_rmse, np.float64, what="hold-out path")
        assert_close(K @ est.coef_, K @ other.coef, np.float64, what="predictions")


def test_nkrls_refit_and_no_holdout_set():
    X, y = problem()
    est = nkrls_fitted(X, y, [240], **nkrls_params(X, refit=True, lambdas=np.logspace(-8, 0, 9)))
    mu = y.mean()
    again = nytro.nkrls_path(X, y - mu, est.centers_, SIGMA, lambdas=[est.lambda_])
    K = nytro.kernel_matrix(X, est.centers_, sigma=SIGMA)
    assert_close(K @ est.coef_, K @ again.coef, np.float64, what="refit")
    # Without a hold-out set: exactly one lambda, fitted on every row; the default grid is refused.
    none = nkrls_fitted(X, y, [100, 300], **nkrls_params(X, validation_fraction=None, lambdas=[1e-4]))
    alone = nytro.nkrls_path(X, y - mu, none.centers_, SIGMA, lambdas=[1e-4])
    assert none.lambda_ == 1e-4 and len(none.validation_rmse_) == 0
    assert_close(K @ none.coef_, K @ alone.coef, np.float64, what="no hold-out set")
    with pytest.raises(ValueError, match="exactly one lambda is needed, got 100"):
        NystromKRLSRegressor(**nkrls_params(X, validation_fraction=None)).partial_fit(X, y)


def test_nkrls_no_holdout_row_yet_warns_and_fit_discards_the_batches():
    X, y = problem()
    est = NystromKRLSRegressor(**nkrls_params(X, validation_fraction=0.01))
    held = split_of(est, len(X))
    first = int(np.argmax(held))
    assert first > 40
    with pytest.warns(UserWarning, match="the grid's first lambda's"):
        est.partial_fit(X[:first], y[:first])
    assert est.lambda_ == est.lambdas_[0] and len(est.validation_rmse_) == 0
    est.partial_fit(X[first:], y[first:])
    assert len(est.validation_rmse_) == len(est.lambdas_)
    est.fit(X[200:], y[200:])
    after = est.partial_fit(X[:200], y[:200])
    fresh = NystromKRLSRegressor(**nkrls_params(X, validation_fraction=0.01)).partial_fit(X[:200], y[:200])
    assert_close(after.predict(X), fresh.predict(X), np.float64)


@pytest.mark.parametrize("selection", ["error", "rmse"])
def test_nkrls_classifier_batches_equal_one_call_and_the_path(selection):
    X, y = load_digits(return_X_y=True)
    sigma = 4.0 * X.std(0) + 1e-3
    common = dict(n_centers=100, centers=X[:100], sigma=sigma, random_state=0, selection=selection, n_threads=1)
    many = nkrls_fitted(X, y, list(range(360, 1797, 360)), estimator=NystromKRLSClassifier, classes=np.unique(y),
                        **common)
    one = nkrls_fitted(X, y, [], estimator=NystromKRLSClassifier, classes=np.unique(y), **common)
    assert many.lambda_ == one.lambda_
    assert_close(many.decision_function(X), one.decision_function(X), np.float64)
    assert many.calibration_scale_ == pytest.approx(one.calibration_scale_, rel=1e-9)
    held = split_of(many, len(X))
    _, Y = nytro.estimators.classifiers.encode_labels(y)
    core = nytro.nkrls_path(X[~held], Y[~held], many.centers_, sigma, X_val=X[held], y_val=Y[held], metric=selection)
    assert many.lambda_ == core.lambda_
    path = many.validation_error_ if selection == "error" else many.validation_rmse_
    assert_close(path, core.validation_rmse, np.float64, what="hold-out path")
    K = nytro.kernel_matrix(X, many.centers_, sigma=sigma)
    assert_close(many.decision_function(X), K @ core.coef, np.float64, what="decision values")
    assert_close(many.predict_proba(X).sum(axis=1), np.ones(len(X)), np.float64)


def test_nkrls_partial_fit_refuses_by_name():
    X, y = problem()
    for bad, words in (
            (dict(solver="cholesky"), "solver='cholesky'"),
            (dict(options=nytro.TikhonovOptions(solver="cholesky")), "solver='cholesky'"),
            (dict(storage="float32"), "storage='float32'"),
            (dict(options=nytro.TikhonovOptions(storage="float32")), "storage='float32'"),
            (dict(n_centers="auto", centers=None), 'n_centers="auto"'),
    ):
        for error in (ValueError, NotImplementedError):
            with pytest.raises(error, match=f"{words} is not supported by partial_fit"):
                NystromKRLSRegressor(**{**nkrls_params(X), **bad}).partial_fit(X, y)
    with pytest.raises(ValueError, match="a kernel of one's own is taken by NytroRegressor and NytroClassifier only"):
        NystromKRLSRegressor(**nkrls_params(X, kernel=lambda A, B: A @ B.T)).partial_fit(X, y)
    with pytest.raises(ValueError, match="needs classes at its first call"):
        NystromKRLSClassifier(**nkrls_params(X)).partial_fit(X, y > 3)
    want = NystromKRLSRegressor(**nkrls_params(X)).partial_fit(X, y)
    got = NystromKRLSRegressor(**nkrls_params(X, solver="eigh", storage=None)).partial_fit(X, y)
    assert got.lambda_ == want.lambda_
    assert_close(got.predict(X), want.predict(X), np.float64)
