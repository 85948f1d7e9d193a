"""nytro.dask against the in-memory fit for what issue 28 added: storage="float32" in
"gram" mode and for NKRLS, metric="error" (the weighted hold-out error rate),
iterates="auto" choosing gd's Lanczos iterates where the core does, and the gram mode's
chunks doing the in-memory gram solver's work (the kernel on the factor's support, R as a
triangle, or no factor on the kernel-first route). The same problems,
split, cluster and tolerances as tests/nytro_dask/test_dask.py (float64 1e-10 relative, float32
1e-4; a float32 storage fit in "gram" mode sums A^T A's float32 products in another
order than the core, so its coefficients are also held to float32's own distance from
float64, as test_dask's per-column float32 test does).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
from conftest import relative_error  # noqa: E402
from nytro.estimators.classifiers import encode_labels  # noqa: E402
import test_dask  # noqa: E402
from test_dask import FRACTION, SEED, assert_close, check_path, data, in_memory_fit, weights  # noqa: E402

client = test_dask.client  # its LocalCluster fixture (one cluster for this module)


def dask_fit(X, y, sigma, function=nd.nytro_path, chunks=70, **kwargs):
    Y = da.from_array(y, chunks=chunks if y.ndim == 1 else (chunks, y.shape[1]))
    return function(da.from_array(X, chunks=chunks), Y, sigma, n_centers=40, seed=SEED,
                    validation_fraction=FRACTION, **kwargs)


def assert_float32_storage_close(fit, expected, exact):
    """The in-memory storage="float32" answer to float32's tolerance, and within a few
    times the core's own distance from the float64-storage answer (the storage's rounding,
    summed in another order: Dask rounds the chunks' float32 products, then their float64
    sum to float32, where the core accumulates into its float32 A^T A)."""
    assert fit.result.coef.dtype == np.float64
    assert_close(fit.result.validation_rmse, expected.validation_rmse, np.float32, "validation path")
    assert_close(fit.result.coef, expected.coef, np.float32, "coef")
    own, err = relative_error(expected.coef, exact.coef), relative_error(fit.result.coef, exact.coef)
    assert 1e-9 < err <= 4 * own, f"coef: {err:.3e} from the float64-storage fit (core {own:.3e})"


# ------------------------------------------------------------ storage="float32"
def test_float32_gram_part_is_the_cores_low_precision_accumulation():
    """A chunk's share of [A^T A, A^T y] under storage="float32": the kernel block from the
    rows and centres rounded to float32, A = K R with R rounded to float32, A^T A and A^T y
    (y rounded to float32) in float32, then float64 (the core's accumulate<T, float>, which
    the chunk calls); against the same computed directly with NumPy (one row block, its own
    summation order: within float32's rounding over dot products of n + m terms), and away
    from the float64 share by float32's rounding."""
    X, y, sigma = data(n=120)
    C = X[:20]
    R = nytro.nystrom_factor(nytro.kernel_matrix(C, C, sigma=sigma))
    low = nd._data._Kernel("gaussian", sigma, 1.5, low=True)
    args = (X, y[:, None], 0, len(X), None, SEED, C, R)
    part = nd._passes._gram_part(*args, low, np.float64, None, 1, None)
    A = nytro.kernel_matrix(X.astype(np.float32), C.astype(np.float32), sigma=sigma) @ R.astype(np.float32)
    assert A.dtype == np.float32
    direct = np.hstack([A.T @ A, A.T @ y.astype(np.float32)[:, None]]).astype(np.float64)
    assert relative_error(part, direct) < 4 * np.finfo(np.float32).eps * (len(X) + len(C))
    wide = nd._passes._gram_part(*args, dataclasses.replace(low, low=False), np.float64, None, 1, None)
    assert relative_error(part, wide) > 1e-9


@pytest.mark.parametrize("method, max_iter, weighted", [("gd", 80, False), ("nu", 40, True), ("cg", 8, False),
                                                        ("hybrid", 20, True)])
def test_float32_storage_in_gram_mode_equals_in_memory(client, method, max_iter, weighted):
    """storage="float32" with solver="gram": the chunks' float32 products, A^T A kept in
    float32 on the client, its products and the path in float64, the hold-out kernel in
    float32; the in-memory storage="float32" gram fit (gd's Lanczos iterates certified to
    64 float32 epsilons, as the core's)."""
    X, y, sigma = data()
    w = weights(len(X)) if weighted else None
    args = dict(method=method, max_iter=max_iter, solver="gram", sample_weight=w)
    fit = dask_fit(X, y, sigma, chunks=100, storage="float32", **args)
    assert fit.result.solver == "gram"
    del args["sample_weight"]
    expected = in_memory_fit(X, y, sigma, fit, w, storage="float32", **args)
    assert (fit.result.n_iter, fit.result.iterations_run) == (expected.n_iter, expected.iterations_run)
    assert fit.result.products == expected.products
    if method in ("gd", "nu"):
        assert_close(fit.result.step_size, expected.step_size, np.float32, "step_size")
    assert_float32_storage_close(fit, expected, in_memory_fit(X, y, sigma, fit, w, **args))


def test_float32_storage_hybrid_direct_equals_in_memory(client):
    """Method "hybrid" in "direct" mode with storage="float32" (refused before): the
    workers' float32 K_i, its Lanczos processes stopping at float32's rounding, as the
    in-memory direct solver's; the same kernel values, so to float64's tolerance."""
    X, y, sigma = data(n_outputs=2)
    w = weights(len(X))
    args = dict(method="hybrid", max_iter=20, solver="direct", storage="float32")
    fit = dask_fit(X, y, sigma, sample_weight=w, **args)
    expected = in_memory_fit(X, y, sigma, fit, w, **args)
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_ and fit.result.products == expected.products
    assert relative_error(fit.result.coef, in_memory_fit(X, y, sigma, fit, w, method="hybrid", max_iter=20,
                                                         solver="direct").coef) > 1e-8


def test_float32_storage_with_solver_auto(client):
    """solver="auto" with storage="float32" (gram on this cluster, the round trips
    outweighing the small problem): the in-memory storage="float32" gram fit."""
    X, y, sigma = data(n_outputs=2)
    fit = dask_fit(X, y, sigma, method="nu", max_iter=30, storage="float32")
    assert fit.result.solver == "gram"
    expected = in_memory_fit(X, y, sigma, fit, method="nu", max_iter=30, solver="gram", storage="float32")
    assert fit.result.n_iter == expected.n_iter
    assert_float32_storage_close(fit, expected, in_memory_fit(X, y, sigma, fit, method="nu", max_iter=30,
                                                               solver="gram"))


@pytest.mark.parametrize("weighted", [False, True])
def test_nkrls_float32_storage_equals_in_memory(client, weighted):
    """NKRLS with storage="float32": float32 kernel blocks and products summed in float64,
    the eigendecomposition in float64, the hold-out kernel in float32; the in-memory
    storage="float32" fit."""
    X, y, sigma = data(n_outputs=2)
    w = weights(len(X)) if weighted else None
    fit = dask_fit(X, y, sigma, nd.nkrls_path, sample_weight=w, options=nytro.TikhonovOptions(storage="float32"))
    expected = in_memory_fit(X, y, sigma, fit, w, function=nytro.nkrls_path, storage="float32")
    assert fit.result.selected == expected.selected
    assert_float32_storage_close(fit, expected, in_memory_fit(X, y, sigma, fit, w, function=nytro.nkrls_path))


# ------------------------------------------------------------------ metric="error"
def classes(n_classes):
    """The regression problem's rows labelled by the quantile band of their target, coded
    as +-1 (one column for two classes, one-vs-all for three)."""
    X, y, sigma = data()
    labels = np.digitize(y, np.quantile(y, np.arange(1, n_classes) / n_classes))
    Y = encode_labels(labels)[1]
    return X, (Y[:, 0] if n_classes == 2 else Y), sigma


ERROR_PATHS = [("gd", "gram", dict(iterates="stepwise", max_iter=40)), ("gd", "direct", dict(max_iter=200)),
               ("nu", "gram", dict(max_iter=25)), ("cg", "direct", dict(max_iter=8)),
               ("hybrid", "gram", dict(max_iter=45)), ("hybrid", "direct", dict(max_iter=12, stopping="window"))]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method, solver, options", ERROR_PATHS, ids=[f"{m}-{s}" for m, s, _ in ERROR_PATHS])
def test_error_metric_equals_in_memory(client, n_classes, method, solver, options):
    """metric="error": each chunk sums the weights of the hold-out rows every iterate
    misclassifies, the rate is sum_v w_v [wrong] / sum_v w_v over all hold-out rows; the
    in-memory path of rates (weighted by the hold-out rows' weights), its selection and
    coefficients."""
    X, Y, sigma = classes(n_classes)
    w = weights(len(X))
    fit = dask_fit(X, Y, sigma, method=method, solver=solver, metric="error", sample_weight=w, **options)
    expected = in_memory_fit(X, Y, sigma, fit, w, method=method, solver=solver, metric="error", **options)
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_
    assert len(np.unique(fit.result.validation_rmse)) > 1  # a path of rates, not a plateau
    # A rate: the weights of wrong rows over all hold-out weights, a multiple of none of them.
    assert 0 < fit.result.validation_rmse.min() < fit.result.validation_rmse.max() < 1


@pytest.mark.parametrize("n_classes", [2, 3])
def test_error_metric_nkrls_equals_in_memory(client, n_classes):
    """NKRLS with metric="error": the rates of the lambda grid, the tie going to the
    larger lambda, as in memory."""
    X, Y, sigma = classes(n_classes)
    w = weights(len(X))
    fit = dask_fit(X, Y, sigma, nd.nkrls_path, metric="error", sample_weight=w)
    expected = in_memory_fit(X, Y, sigma, fit, w, function=nytro.nkrls_path, metric="error")
    assert fit.result.selected == expected.selected
    path = fit.result.validation_rmse
    assert len(np.unique(path)) < len(path)  # rates tie
    assert fit.result.selected == np.flatnonzero(path == path.min())[-1]  # the largest lambda of the best
    assert_close(path, expected.validation_rmse, X.dtype, "validation path")
    assert_close(fit.result.coef, expected.coef, X.dtype, "coef")


def _classifier_split(n, random_state):
    """The estimators' seed from random_state, and nytro.dask's split of n rows by it."""
    seed = int(np.random.RandomState(random_state).randint(0, 2**63 - 1, dtype=np.int64))
    held = nd.holdout_mask(np.arange(n), FRACTION, seed)
    return ~held, held


CLASSIFIERS = [("nytro", 2), ("nytro", 3), ("nkrls", 3)]


@pytest.mark.parametrize("kind, n_classes", CLASSIFIERS, ids=[f"{k}-{c}" for k, c in CLASSIFIERS])
def test_classifiers_on_dask_equal_in_memory(client, kind, n_classes):
    """NytroClassifier and NystromKRLSClassifier on Dask arrays (labels as strings, in a
    Dask array chunked unlike X): classes_, the coded targets' fit selected by the hold-out
    error rate, equal to the in-memory function on the same split, centres and coding;
    predict gives a Dask array of the labels the in-memory predict gives."""
    X, Y, sigma = classes(n_classes)
    names = np.array(["ash", "birch", "cedar"])
    index = (Y > 0).astype(int) if n_classes == 2 else np.argmax(Y, axis=1)
    labels = names[index]
    Xd, yd = da.from_array(X, chunks=70), da.from_array(labels, chunks=50)
    if kind == "nytro":
        est = nytro.NytroClassifier(40, sigma, method="cg", max_iter=8, n_iter_no_change=None,
                                    validation_fraction=FRACTION, random_state=3).fit(Xd, yd)
    else:
        est = nytro.NystromKRLSClassifier(40, sigma, validation_fraction=FRACTION, random_state=3).fit(Xd, yd)
    np.testing.assert_array_equal(est.classes_, names[:n_classes])
    train, held = _classifier_split(len(X), 3)
    Yc = encode_labels(labels)[1]
    Yc = Yc[:, 0] if n_classes == 2 else Yc
    if kind == "nytro":
        expected = nytro.nytro_path(X[train], Yc[train], est.centers_, sigma, X_val=X[held], y_val=Yc[held],
                                    method="cg", max_iter=8, solver=est.solver_, metric="error", n_threads=1)
        assert est.n_iter_ == expected.n_iter
    else:
        expected = nytro.nkrls_path(X[train], Yc[train], est.centers_, sigma, X_val=X[held], y_val=Yc[held],
                                    metric="error", n_threads=1)
        assert est.lambda_ == expected.lambda_
    assert est.validation_rmse_ is None
    assert_close(est.validation_error_, expected.validation_rmse, X.dtype, "validation_error_")
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    predicted = est.predict(Xd)
    assert isinstance(predicted, da.Array) and predicted.chunks == Xd.chunks[:1]
    np.testing.assert_array_equal(predicted.compute(), est.predict(X))
    assert 0 < np.mean(est.predict(X) == labels) < 1 and np.mean(est.predict(X) == labels) > 0.5


def test_classifier_on_dask_with_weights_selects_by_rmse(client):
    """sample_weight with selection="rmse": the weighted fit of the coded targets, the
    hold-out RMSE weighted alike, as nytro.dask's regression does; with selection="error"
    (whose in-memory rate counts every hold-out row once) it is refused."""
    X, Y, sigma = classes(2)
    labels = (Y > 0).astype(int)
    w = weights(len(X))
    Xd = da.from_array(X, chunks=70)
    est = nytro.NytroClassifier(40, sigma, method="cg", max_iter=8, n_iter_no_change=None, selection="rmse",
                                validation_fraction=FRACTION, random_state=3).fit(Xd, labels, sample_weight=w)
    train, held = _classifier_split(len(X), 3)
    expected = nytro.nytro_path(X[train], Y[train], est.centers_, sigma, X_val=X[held], y_val=Y[held], method="cg",
                                max_iter=8, solver=est.solver_, sample_weight=w[train], sample_weight_val=w[held],
                                n_threads=1)
    assert est.validation_error_ is None
    assert_close(est.validation_rmse_, expected.validation_rmse, X.dtype, "validation_rmse_")
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    with pytest.raises(NotImplementedError, match="sample_weight with selection='rmse' only"):
        nytro.NytroClassifier(40, sigma, random_state=3).fit(Xd, labels, sample_weight=w)


def test_classifier_on_dask_takes_a_column_of_labels_as_memory_does(client):
    """Labels as an (n, 1) column: scikit-learn's DataConversionWarning, then the fit of
    the 1-D labels."""
    from sklearn.exceptions import DataConversionWarning
    X, Y, sigma = classes(2)
    labels = (Y > 0).astype(int)
    Xd = da.from_array(X, chunks=70)
    est = nytro.NytroClassifier(20, sigma, method="cg", max_iter=4, n_iter_no_change=None, random_state=3)
    flat = est.fit(Xd, da.from_array(labels, chunks=70)).coef_
    for column in (labels[:, None], da.from_array(labels[:, None], chunks=(70, 1))):
        with pytest.warns(DataConversionWarning, match="column-vector y"):
            np.testing.assert_array_equal(est.fit(Xd, column).coef_, flat)


def test_classifier_on_dask_refuses_what_memory_refuses(client):
    """The labels' errors are the in-memory fit's (one class, continuous targets, mixed
    types, a class left alone with positive weight); the hash split, not stratified,
    must leave every class on both sides (ValueError naming the class and the fraction)."""
    X, Y, sigma = classes(3)
    Xd = da.from_array(X, chunks=70)
    est = nytro.NytroClassifier(10, sigma, method="cg", max_iter=4, selection="rmse", validation_fraction=FRACTION,
                                random_state=3)
    mixed = np.array([1, "a"] * (len(X) // 2) + [1] * (len(X) % 2), dtype=object)
    alternate = np.arange(len(X)) % 2
    for y, w in [(np.zeros(len(X), dtype=int), None), (np.linspace(0, 1, len(X)), None), (mixed, None),
                 (alternate, (alternate == 1).astype(float))]:
        with pytest.raises(ValueError) as in_memory:
            nytro.NytroClassifier(10, sigma, method="cg", max_iter=4, selection="rmse").fit(X, y, sample_weight=w)
        with pytest.raises(ValueError) as on_dask:
            est.fit(Xd, da.from_array(y, chunks=60), sample_weight=w)
        assert str(on_dask.value) == str(in_memory.value)
    train, held = _classifier_split(len(X), 3)
    for side, rows in (("hold-out", train), ("training", held)):
        rare = np.zeros(len(X), dtype=int)
        rare[np.flatnonzero(rows)[:2]] = 1  # two rows of class 1, both on the other side
        with pytest.raises(ValueError, match=f"class 1 has no row in the {side} part .*validation_fraction=0.25.*"
                                             "not stratified"):
            est.fit(Xd, rare)
# ---------------------------------------------------------------- iterates="auto"
AUTO_ITERATES = [("direct", np.float64, None, "gaussian"), ("gram", np.float64, None, "gaussian"),
                 ("gram", np.float64, "float32", "gaussian"), ("direct", np.float64, "float32", "gaussian"),
                 ("gram", np.float32, None, "gaussian"), ("gram", np.float64, None, "linear")]


@pytest.mark.parametrize("solver, dtype, storage, kernel", AUTO_ITERATES,
                         ids=["direct", "gram", "gram-float32-storage", "direct-float32-storage", "float32",
                              "gram-rank-4"])
def test_auto_iterates_are_the_cores_choice(client, solver, dtype, storage, kernel):
    """iterates="auto" for gd: Lanczos iterates where the core's "auto" takes them (float64
    compute; in gram mode from rank 5 on, 9 with float32 storage), the step's estimate in
    the same products; stepped where it steps (float32 compute; rank 4, the linear
    kernel on 4 features). The in-memory fit with the same products."""
    X, y, sigma = data(dtype=dtype)
    args = dict(method="gd", max_iter=500, solver=solver, storage=storage, kernel=kernel)
    fit = dask_fit(X, y, sigma, **args)
    expected = in_memory_fit(X, y, sigma, fit, **args)
    by_lanczos = dtype == np.float64 and kernel != "linear"
    assert fit.result.products == expected.products
    assert (fit.result.products < 60) if by_lanczos else (fit.result.products >= 500)
    if storage is None:
        check_path(fit, expected, dtype)
    else:  # certified to 64 float32 epsilons, as the core's
        assert fit.result.n_iter == expected.n_iter
        assert_close(fit.result.coef, expected.coef, np.float32, "coef")


# ------------------------------------------- the gram mode's chunks: the factor's support
# (dtype, storage, kernel-first route): float64 takes the kernel-first route on these
# well-conditioned problems; storage="float32" and float32 compute take the A route.
ROUTES = [(np.float64, None, True), (np.float64, "float32", False), (np.float32, None, False)]
ROUTE_IDS = ["kernel-first", "float32-storage", "float32"]


def duplicated_centers(X):
    """40 centres of which the last 10 repeat earlier ones: K_mm of rank 30."""
    return np.vstack([X[:30], X[5:15]])


def assert_route_close(fit, expected, dtype, storage):
    if storage is None:
        check_path(fit, expected, dtype)
    else:  # the float32 products summed in another order than the core's
        assert (fit.result.n_iter, fit.result.iterations_run) == (expected.n_iter, expected.iterations_run)
        assert_close(fit.result.validation_rmse, expected.validation_rmse, np.float32, "validation path")
        assert_close(fit.result.coef, expected.coef, np.float32, "coef")


@pytest.mark.parametrize("dtype, storage, kernel_first", ROUTES, ids=ROUTE_IDS)
def test_gram_chunks_evaluate_the_kernel_on_the_factors_support(monkeypatch, dtype, storage, kernel_first):
    """Centres with duplicates (m = 40, rank k = 30), the tasks run in this process: each
    chunk hands the core the k support centres only, and either the k x k triangle of R
    flagged upper triangular (the A route) or no factor (the kernel-first route, R then
    applied on the client), as the in-memory gram solver evaluates the kernel and applies
    R; and the fit is the in-memory one. (The code before sent all m centres and the dense
    m x k R to every chunk: on the kernel-first route the m x m K^T K.)"""
    X, y, sigma = data(dtype=dtype)
    seen = []
    core = nd._passes._block_normal_equations

    def spy(X, Y, C, R, *args, **kwargs):
        seen.append((C.shape[0], None if R is None else R.shape, kwargs.get("upper_triangular", False)))
        return core(X, Y, C, R, *args, **kwargs)

    monkeypatch.setattr(nd._passes, "_block_normal_equations", spy)
    monkeypatch.setattr(nd._cluster, "_client", lambda: None)  # no distributed client: the local scheduler
    args = dict(method="nu", max_iter=30, solver="gram", storage=storage)
    with dask.config.set(scheduler="sync"):
        fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=70), sigma,
                            centers=duplicated_centers(X), seed=SEED, validation_fraction=FRACTION, **args)
    assert len(seen) == 4  # one call per chunk
    assert set(seen) == {(30, None, False) if kernel_first else (30, (30, 30), True)}
    expected = in_memory_fit(X, y, sigma, fit, **args)
    assert fit.result.rank == expected.rank == 30
    assert_route_close(fit, expected, dtype, storage)


@pytest.mark.parametrize("dtype, storage, kernel_first", ROUTES, ids=ROUTE_IDS)
def test_duplicated_centres_equal_in_memory(client, dtype, storage, kernel_first):
    """The same rank-deficient centres on the cluster, NYTRO's gram mode (two outputs,
    weighted) and NKRLS, by each route: the in-memory fits."""
    X, y, sigma = data(dtype=dtype, n_outputs=2)
    w = weights(len(X))
    Xd, yd = da.from_array(X, chunks=70), da.from_array(y, chunks=(70, 2))
    centers = duplicated_centers(X)
    args = dict(method="cg", max_iter=8, solver="gram", storage=storage)
    fit = nd.nytro_path(Xd, yd, sigma, centers=centers, seed=SEED, validation_fraction=FRACTION, sample_weight=w,
                        **args)
    factor = nd._data._Factor(*nytro._api._nystrom_factor_parts(nytro.kernel_matrix(centers, centers, sigma=sigma)))
    rule = nd._passes._kernel_first_is_accurate(fit.n_train, factor, np.dtype(dtype))
    assert (rule and storage is None) is kernel_first  # the route this case exercises
    expected = in_memory_fit(X, y, sigma, fit, w, **args)
    assert fit.result.rank == expected.rank == 30
    assert_route_close(fit, expected, dtype, storage)
    fit = nd.nkrls_path(Xd, yd, sigma, centers=centers, seed=SEED, validation_fraction=FRACTION, sample_weight=w,
                        storage=storage)
    expected = in_memory_fit(X, y, sigma, fit, w, function=nytro.nkrls_path, storage=storage)
    assert fit.result.rank == expected.rank == 30 and fit.result.selected == expected.selected
    tol = np.float32 if storage else dtype
    assert_close(fit.result.validation_rmse, expected.validation_rmse, tol, "NKRLS validation path")
    assert_close(fit.result.coef, expected.coef, tol, "NKRLS coef")


@pytest.mark.parametrize("estimator", [nytro.NytroRegressor, nytro.NytroClassifier])
def test_predict_takes_empty_chunks_as_fit_does(client, estimator):
    """A Dask X with empty chunks (a filtered or concatenated array) is fitted, and
    predicted: the empty chunks give no rows, the others the in-memory prediction."""
    X, y, sigma = data()
    if estimator is nytro.NytroClassifier:
        y = np.where(y > np.median(y), "high", "low")
    chunks = ((0, 100, 0, 0, len(X) - 100),)
    Xd, yd = da.from_array(X, chunks=chunks + ((X.shape[1],))), da.from_array(y, chunks=chunks)
    model = estimator(40, sigma, method="cg", max_iter=8, random_state=0).fit(Xd, yd)
    predicted = model.predict(Xd)
    predicted = np.asarray(predicted.compute() if hasattr(predicted, "compute") else predicted)
    np.testing.assert_array_equal(predicted, model.predict(X))


@pytest.mark.parametrize("solver", ["gram", "direct"])
def test_weights_whose_sum_overflows_fit_as_their_ratios(client, solver):
    """Weights each finite whose sum overflows float64 (the chunks' sums too): the fit of
    their ratios, as in memory; the sums' overflow refused them as "all zero"."""
    X, y, sigma = data()
    w = np.round(8 * weights(len(X))) / 8
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.sum(np.ldexp(w[:70], 1021)))
    kwargs = dict(method="nu", max_iter=12, solver=solver)
    fit = dask_fit(X, y, sigma, sample_weight=np.ldexp(w, 1021), **kwargs)
    plain = dask_fit(X, y, sigma, sample_weight=w, **kwargs)
    np.testing.assert_allclose(fit.result.coef, plain.result.coef, rtol=1e-12, atol=0)
    check_path(fit, in_memory_fit(X, y, sigma, fit, w=w, solver=solver, method="nu", max_iter=12), X.dtype)
