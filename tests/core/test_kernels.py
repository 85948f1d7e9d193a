"""The kernels beside the Gaussian (Laplacian, Matern 1/2, 3/2, 5/2, linear) and per-feature
bandwidths (ARD): the core against its NumPy twin (nytro.reference) and against formulas
computed directly from the differences (scipy's cdist, scikit-learn's kernels), through
every entry point that evaluates a kernel."""
from __future__ import annotations

import numpy as np
import pytest
import sklearn.gaussian_process.kernels as skk
from scipy.spatial.distance import cdist
from sklearn.base import clone

import nytro
import nytro.reference as ref
from conftest import RTOL, SERIAL, assert_close, make_problem

# (kernel, matern_nu): every function the core evaluates.
KERNELS = [("gaussian", 1.5), ("laplacian", 1.5), ("matern", 0.5), ("matern", 1.5), ("matern", 2.5),
           ("linear", 1.5)]
IDS = ["gaussian", "laplacian", "matern12", "matern32", "matern52", "linear"]


def exact_kernel(X, Z, kernel, sigma, matern_nu):
    """k(X, Z) in float64 from the differences themselves (no norms-and-products form)."""
    X, Z = np.asarray(X, np.float64), np.asarray(Z, np.float64)
    if kernel == "linear":
        return X @ Z.T
    bandwidths = np.broadcast_to(np.asarray(sigma, np.float64), (X.shape[1],))
    r = cdist(X / bandwidths, Z / bandwidths)
    if kernel == "gaussian":
        return np.exp(-r * r / 2)
    nu = 0.5 if kernel == "laplacian" else matern_nu
    u = np.sqrt(2 * nu) * r
    return {0.5: 1.0, 1.5: 1 + u, 2.5: 1 + u + u * u / 3}[nu] * np.exp(-u)


def tolerance(X, Z, kernel, sigma, matern_nu, dtype):
    """Per-entry bound on |computed - exact| from the problem: the squared distance comes
    from ||x'||^2 + ||z'||^2 - 2 x'.z' of the shifted, scaled rows, whose rounding is at
    most delta = 4 d eps (||x'||^2 + ||z'||^2). The Gaussian passes it on times
    |d exp(-s/2) / ds| <= 1/2; the Matern family, a function of u = sqrt(2 nu s) with
    |df/du| <= 1, as |du| <= 2 nu delta / max(u, sqrt(2 nu delta)) (the square root's
    slope at small u: there the error is sqrt(delta), the Laplacian's cusp). The linear
    kernel is a plain dot product: 2 d eps |x| |z|. 16 eps covers the function's own
    rounding."""
    X, Z = np.asarray(X, np.float64), np.asarray(Z, np.float64)
    eps, d = np.finfo(dtype).eps, X.shape[1]
    if kernel == "linear":
        return 2 * d * eps * np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(Z, axis=1)[None, :] + 16 * eps
    bandwidths = np.broadcast_to(np.asarray(sigma, np.float64), (d,))
    shift = Z.mean(0)
    xs, zs = (X - shift) / bandwidths, (Z - shift) / bandwidths
    delta = 4 * d * eps * ((xs * xs).sum(1)[:, None] + (zs * zs).sum(1)[None, :])
    if kernel == "gaussian":
        return delta / 2 + 16 * eps
    nu = 0.5 if kernel == "laplacian" else matern_nu
    u = np.sqrt(2 * nu) * cdist(xs, zs)
    return 2 * nu * delta / np.maximum(u, np.sqrt(2 * nu * delta)) + 16 * eps


def assert_within(actual, expected, bound, what):
    excess = np.abs(np.asarray(actual, np.float64) - expected) - bound
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, f"{what}: |difference| exceeds its bound by {excess.max():.3e} at {worst}"


def data(dtype, d=5, n=120, m=40, seed=0):
    """Rows X, centres Z (the first 10 of them rows of X, so that x = z occurs) and an
    ARD bandwidth per feature, spread over a factor 6."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(0.5, 3, d) + 2.0
    Z = np.vstack([X[:10], rng.standard_normal((m - 10, d)) + 2.0])
    return X.astype(dtype), Z.astype(dtype), np.linspace(0.5, 3.0, d)


@pytest.mark.parametrize("ard", [False, True], ids=["isotropic", "ard"])
@pytest.mark.parametrize("kernel,matern_nu", KERNELS, ids=IDS)
def test_kernel_matrix_matches_exact_formula_and_reference(kernel, matern_nu, ard, dtype):
    X, Z, bandwidths = data(dtype)
    sigma = bandwidths if ard else 1.3
    got = nytro.kernel_matrix(X, Z, kernel=kernel, sigma=sigma, matern_nu=matern_nu, **SERIAL)
    assert got.dtype == dtype
    bound = tolerance(X, Z, kernel, sigma, matern_nu, dtype)
    assert_within(got, exact_kernel(X, Z, kernel, sigma, matern_nu), bound, "core vs exact")
    twin = ref.kernel_matrix(X, Z, kernel=kernel, sigma=sigma, matern_nu=matern_nu)
    assert twin.dtype == dtype
    assert_within(got, twin, 2 * bound, "core vs reference")
    # Away from coincident points the bound is far below the dtypes' usual 1e-9 / 1e-4.
    assert_close(got[10:], twin[10:], dtype, what="core vs reference, distinct points")


@pytest.mark.parametrize("kernel,matern_nu", KERNELS[:5], ids=IDS[:5])
def test_distance_kernels_are_exactly_one_where_x_equals_z(kernel, matern_nu, dtype):
    """K_mm's diagonal is 1 to the last bit (the Laplacian and Matern kernels take the
    square root of the squared distance, where a rounding of 1e-16 would become 1e-8)."""
    _, Z, bandwidths = data(dtype, m=300)
    for sigma in (0.7, bandwidths):
        K = nytro.kernel_matrix(Z, Z, kernel=kernel, sigma=sigma, matern_nu=matern_nu, **SERIAL)
        if kernel != "gaussian":
            assert np.all(np.diagonal(K) == 1), np.diagonal(K).min()
        assert np.all(K <= 1) and np.all(K >= 0)
        assert_close(K, K.T, dtype, what="symmetry")


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_is_scikit_learns_with_length_scale_sigma(nu):
    X, Z, bandwidths = data(np.float64)
    for sigma in (1.7, bandwidths):
        want = skk.Matern(length_scale=sigma, nu=nu)(X, Z)
        assert_close(nytro.kernel_matrix(X, Z, kernel="matern", sigma=sigma, matern_nu=nu), want, np.float64)
    want = skk.RBF(length_scale=bandwidths)(X, Z)
    assert_close(nytro.kernel_matrix(X, Z, sigma=bandwidths), want, np.float64)
    assert_close(nytro.kernel_matrix(X, Z, kernel="laplacian", sigma=1.7),
                 skk.Matern(length_scale=1.7, nu=0.5)(X, Z), np.float64)


def test_ard_is_the_isotropic_kernel_on_features_divided_by_their_bandwidths():
    X, Z, bandwidths = data(np.float64)
    for kernel in ("gaussian", "laplacian", "matern"):
        assert_close(nytro.kernel_matrix(X, Z, kernel=kernel, sigma=bandwidths),
                     nytro.kernel_matrix(X / bandwidths, Z / bandwidths, kernel=kernel, sigma=1.0), np.float64)


def test_linear_kernel_is_not_shifted_by_the_centres_mean(dtype):
    """The distance kernels are evaluated on data less the centres' mean; x.z is not
    translation invariant, so the linear kernel must not be: with an offset of 1000 a
    shifted product would be off by ~1e6."""
    rng = np.random.default_rng(3)
    X = (rng.standard_normal((50, 3)) + 1000).astype(dtype)
    Z = (rng.standard_normal((20, 3)) + 1000).astype(dtype)
    got = nytro.kernel_matrix(X, Z, kernel="linear", **SERIAL)
    assert_within(got, X.astype(np.float64) @ Z.T.astype(np.float64),
                  tolerance(X, Z, "linear", None, None, dtype), "linear")


def test_gaussian_kernel_is_the_kernel_matrix_shorthand(dtype):
    X, Z, _ = data(dtype)
    np.testing.assert_array_equal(nytro.gaussian_kernel(X, Z, 0.9), nytro.kernel_matrix(X, Z, sigma=0.9))
    out = np.empty((len(X), len(Z)), dtype)
    nytro.kernel_matrix(X, Z, kernel="matern", sigma=0.9, matern_nu=2.5, out=out)
    np.testing.assert_array_equal(out, nytro.kernel_matrix(X, Z, kernel="matern", sigma=0.9, matern_nu=2.5))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_kernel_with_progress_keeps_its_bits(n_threads, dtype):
    """With progress the kernel is formed with interruption points between the calling
    thread's blocks (Ctrl-C, issue 26): the same bits as without, progress("kernel", rows
    done, n) in order up to n, and an exception from progress ends the call."""
    rng = np.random.default_rng(7)
    # Tens of milliseconds on one core: long enough for reports while it is formed.
    X = rng.standard_normal((3000, 200)).astype(dtype)
    Z = rng.standard_normal((900, 200)).astype(dtype)
    sigma = 12.0
    plain = nytro.gaussian_kernel(X, Z, sigma, n_threads=n_threads)
    calls = []
    got = nytro.gaussian_kernel(X, Z, sigma, n_threads=n_threads, progress=lambda *call: calls.append(call))
    np.testing.assert_array_equal(got, plain)
    assert {stage for stage, _, _ in calls} == {"kernel"} and {total for _, _, total in calls} == {len(X)}
    done = [d for _, d, _ in calls]
    assert done == sorted(done) and done[-1] == len(X), done
    out = np.empty_like(plain)
    nytro.kernel_matrix(X, Z, sigma=sigma, n_threads=n_threads, out=out, progress=lambda *call: None)
    np.testing.assert_array_equal(out, plain)
    assert_within(got, ref.gaussian_kernel(X, Z, sigma), 2 * tolerance(X, Z, "gaussian", sigma, None, dtype),
                  "core vs reference")

    def stop(stage, done, total):
        raise RuntimeError("stopped by progress")

    with pytest.raises(RuntimeError, match="stopped by progress"):
        nytro.gaussian_kernel(X, Z, sigma, n_threads=n_threads, progress=stop)
    with pytest.raises(ValueError, match="progress"):
        nytro.kernel_matrix(X, Z, progress="yes")


def test_matern_values_far_out_are_zero_not_nan(dtype):
    """Beyond exp's range the Matern polynomial times the clamped exp must give 0 (not
    a tiny positive number times a huge polynomial, nor inf * 0)."""
    X = np.zeros((1, 1), dtype)
    for kernel, nu in KERNELS[1:5]:
        for far in (1e3, 1e18):  # one centre each: the centres' mean shifts the data
            K = nytro.kernel_matrix(X, np.full((1, 1), far, dtype), kernel=kernel, sigma=1.0, matern_nu=nu)
            assert np.isfinite(K[0, 0]) and K[0, 0] == 0, (kernel, nu, far, K)


# ----------------------------------------------------------------------- paths
def exact_reference(name, monkeypatch, *args, **kwargs):
    """nytro.reference's `name` with its kernel computed by exact_kernel (from the
    differences, in float64, rounded once to the dtype) instead of the twin's formula."""
    def exact(X, Z, *, kernel="gaussian", sigma=1.0, matern_nu=1.5, **_):
        return exact_kernel(X, Z, kernel, sigma, matern_nu).astype(np.asarray(X).dtype)
    with monkeypatch.context() as patch:
        patch.setattr(ref, "kernel_matrix", exact)
        return getattr(ref, name)(*args, **kwargs)


def assert_paths_agree(got, want, exact, dtype, what):
    """got (core) and want (twin) agree to the dtype's tolerance, or, where the problem
    amplifies the kernel's rounding more (K_mm's conditioning, a small lambda, many
    iterations), to 10 times what that rounding alone moves the twin: its distance to
    the same computation on the exactly computed kernel."""
    for field in ("validation_rmse", "coef"):
        a, b, c = (np.asarray(getattr(r, field)) for r in (got, want, exact))
        if b.size == 0:
            continue
        amplified = np.abs(b - c).max() / max(np.abs(b).max(), np.finfo(np.float64).tiny)
        assert_close(a, b, dtype, rtol=max(RTOL[np.dtype(dtype)], 10 * amplified), what=f"{what} {field}")


@pytest.mark.parametrize("kernel,matern_nu", KERNELS, ids=IDS)
def test_paths_match_reference(kernel, matern_nu, dtype, monkeypatch):
    p = make_problem(dtype=dtype)
    sigma = np.array([1.0, 1.5, 2.0, 1.2]) if kernel != "linear" else p.sigma
    k = {"kernel": kernel, "matern_nu": matern_nu}
    lambdas = [1e-3, 3e-2, 1e-1]  # float32 solves K + lambda n I to about eps / (lambda n)
    # The full-kernel paths on a third of the rows: their n x n eigendecomposition (core,
    # twin and exact) is what this test spends under CI's CPU emulation (.ci/emulated).
    X, y = p.X[:100], p.y[:100]
    runs = {
        "nytro_path": ((p.X, p.y, p.centers, sigma), {**p.holdout, "max_iter": 40, "method": "gd"}),
        "nkrls_path": ((p.X, p.y, p.centers, sigma), {**p.holdout, "lambdas": lambdas}),
        "krls_path": ((X, y, sigma), {**p.holdout, "lambdas": lambdas}),
        "landweber_path": ((X, y, sigma), {**p.holdout, "max_iter": 30, "method": "gd"}),
    }
    for name, (args, kwargs) in runs.items():
        got = getattr(nytro, name)(*args, **k, **kwargs, **SERIAL)
        want = getattr(ref, name)(*args, **k, **kwargs)
        exact = exact_reference(name, monkeypatch, *args, **k, **kwargs)
        assert got.rank == want.rank, name
        if hasattr(got, "n_iter"):
            assert got.n_iter == want.n_iter, name
            assert_close(got.step_size, want.step_size, dtype, what=f"{name} step")
        else:
            assert got.selected == want.selected, name
        assert_paths_agree(got, want, exact, dtype, name)
    coef = nytro.nytro_path(p.X, p.y, p.centers, sigma, **k, max_iter=5, **SERIAL).coef
    assert_close(nytro.kernel_predict(p.X_val, p.centers, coef, sigma, **k, **SERIAL),
                 ref.kernel_predict(p.X_val, p.centers, coef, sigma, **k), dtype, what="predict")


@pytest.mark.parametrize("kernel,matern_nu", KERNELS[1:5], ids=IDS[1:5])
def test_duplicated_centres_give_a_rank_deficient_factor_and_the_reference_path(kernel, matern_nu):
    """Duplicated centres make K_mm singular (its rows repeat exactly: the diagonal and
    the duplicates' entries are computed alike); the pivoted factor drops them."""
    p = make_problem()
    centers = np.vstack([p.centers, p.centers[:10]])
    k = {"kernel": kernel, "matern_nu": matern_nu}
    got = nytro.nytro_path(p.X, p.y, centers, 1.1, **k, **p.holdout, max_iter=40, method="gd", **SERIAL)
    want = ref.nytro_path(p.X, p.y, centers, 1.1, **k, **p.holdout, max_iter=40, method="gd")
    assert got.rank == want.rank == len(p.centers)
    assert got.n_iter == want.n_iter
    assert_close(got.validation_rmse, want.validation_rmse, np.float64, what="path")


def test_linear_kernel_paper_step_uses_the_largest_squared_norm():
    """gamma / n with gamma = 1 / max_i k(x_i, x_i) = 1 / max ||x_i||^2 for the linear
    kernel (1 for the distance kernels): 1 / n alone is unstable once ||x|| > sqrt(2)."""
    p = make_problem()
    X = 3 * p.X
    bound = float((X ** 2).sum(1).max())
    for fit in (lambda **k: nytro.landweber_path(X, p.y, 1.0, **k, max_iter=50, step_size="paper", **SERIAL),
                lambda **k: nytro.nytro_path(X, p.y, 3 * p.centers, 1.0, **k, max_iter=50, method="gd",
                                             step_size="paper", **SERIAL)):
        assert fit(kernel="linear").step_size == pytest.approx(1 / (len(X) * bound), rel=1e-12)
        assert fit(kernel="matern").step_size == pytest.approx(1 / len(X), rel=1e-12)
        assert np.all(np.isfinite(fit(kernel="linear").coef))


def test_linear_kernel_has_rank_d_and_fits_a_linear_function():
    """K_mm of the linear kernel has rank <= d: the pivoted factor keeps d columns, and
    NKRLS / NYTRO on it are linear least squares (through the origin)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 4))
    w = np.array([1.0, -2.0, 0.5, 3.0])
    y = X @ w
    centers = X[:50]
    r = nytro.nkrls_path(X, y, centers, 1.0, kernel="linear", lambdas=[1e-12], **SERIAL)
    assert r.rank == 4
    assert_close(centers.T @ r.coef, w, np.float64, rtol=1e-7, what="recovered weights")
    for method in ("cg", "hybrid", "gd"):
        est = nytro.NytroRegressor(50, kernel="linear", fit_intercept=False, method=method, max_iter=2000,
                                   validation_fraction=None,
                                   random_state=0).fit(X, y)
        assert est.rank_ == 4
        assert est.score(X, y) > 1 - 1e-6, method


@pytest.mark.parametrize("cls", [nytro.NytroRegressor, nytro.NystromKRLSRegressor, nytro.KRLSRegressor,
                                 nytro.LandweberRegressor, nytro.KOLSRegressor])
def test_estimators_predict_with_their_kernel(cls):
    # n = 120: KRLS and KOLS factor the n x n kernel (slow under CI's CPU emulation).
    p = make_problem(n=120)
    kwargs = {"n_centers": 30} if "n_centers" in cls().get_params() else {}
    est = cls(sigma=np.array([1.0, 1.5, 2.0, 1.2]), kernel="matern", matern_nu=2.5, **kwargs)
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    if cls is nytro.LandweberRegressor:
        est.set_params(step_size="auto")  # the paper's 1/n is still falling at max_iter here
    est.fit(p.X, p.y)
    assert clone(est).get_params()["kernel"] == "matern"
    want = ref.kernel_matrix(p.X_val, est.centers_, kernel="matern", sigma=est.sigma, matern_nu=2.5) @ est.coef_
    want = want + est.intercept_
    assert_close(est.predict(p.X_val), want, np.float64)
    gaussian = clone(est).set_params(kernel="gaussian").fit(p.X, p.y)
    assert not np.allclose(gaussian.predict(p.X_val), est.predict(p.X_val))


# ------------------------------------------------------------------- bad input
BAD = {
    "unknown kernel": ({"kernel": "rbf"}, "kernel must be one of"),
    "kernel not a string": ({"kernel": 3}, "kernel must be one of"),
    "matern_nu not in the set": ({"kernel": "matern", "matern_nu": 1.0}, "matern_nu must be 0.5, 1.5 or 2.5"),
    "matern_nu not a number": ({"kernel": "matern", "matern_nu": "1.5"}, "matern_nu"),
    "sigma of the wrong length": ({"sigma": [1.0, 2.0]}, r"sigma has shape \(2,\) but the data have 4 features"),
    "sigma 2-D": ({"sigma": np.ones((4, 1))}, r"sigma has shape \(4, 1\)"),
    "sigma with a zero": ({"sigma": [1.0, 0.0, 1.0, 1.0]}, r"sigma must hold finite numbers > 0, got sigma\[1\]"),
    "sigma negative": ({"sigma": [1.0, 1.0, -1.0, 1.0], "kernel": "laplacian"}, r"sigma\[2\] = -1"),
    "sigma NaN": ({"sigma": [np.nan, 1.0, 1.0, 1.0], "kernel": "matern"}, r"sigma\[0\] = nan"),
    "sigma zero": ({"sigma": 0.0, "kernel": "matern"}, "sigma must be a finite number > 0"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_kernel_arguments_name_the_argument(case):
    kwargs, message = BAD[case]
    p = make_problem()
    kwargs = {"sigma": 1.0, **kwargs}
    calls = {
        "kernel_matrix": lambda: nytro.kernel_matrix(p.X, p.X, **kwargs),
        "nytro_path": lambda: nytro.nytro_path(p.X, p.y, p.centers, **kwargs),
        "estimator": lambda: nytro.NystromKRLSRegressor(30, **kwargs).fit(p.X, p.y),
        "kols": lambda: nytro.KOLSRegressor(**kwargs).fit(p.X, p.y),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=message):
            call()


def test_core_kernel_spec_rejects_bad_values():
    """The C++ check behind the spec, for callers of the core itself."""
    from nytro import _core
    with pytest.raises(ValueError, match="kernel must be"):
        _core.KernelSpec("cauchy", 1.5, [1.0])
    with pytest.raises(ValueError, match="nu .* must be 0.5, 1.5 or 2.5"):
        _core.KernelSpec("matern", 2.0, [1.0])
    with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
        _core.KernelSpec("laplacian", 1.5, [1.0, float("inf")])
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="sigma has 3 entries but the data have 2 features"):
        _core.kernel_matrix_float64(X=X, Z=X, kernel=_core.KernelSpec("gaussian", 1.5, [1.0, 1.0, 1.0]), n_threads=1)


def test_dask_arrays_predict_with_the_estimators_kernel():
    """predict on a Dask array evaluates the fitted kernel (Laplacian, ARD bandwidths), as
    on a NumPy array (the Dask fits themselves: tests/nytro_dask/test_dask.py)."""
    da = pytest.importorskip("dask.array")
    p = make_problem()
    X = da.from_array(p.X, chunks=100)
    for params in (dict(kernel="laplacian"), dict(sigma=np.array([0.5, 1.0, 2.0, 1.5]))):
        est = nytro.NytroRegressor(30, random_state=0, **params).fit(p.X, p.y)
        np.testing.assert_allclose(est.predict(X).compute(scheduler="synchronous"), est.predict(p.X), rtol=1e-12,
                                   atol=1e-12)
