"""Sparse X (scipy.sparse CSR/CSC, matrices and arrays): NytroRegressor and NytroClassifier
fit what they fit on the same rows dense, without densifying X (nytro._sparse), and the
sparse kernel blocks equal the reference's on the densified rows, hostile ones included.

Tolerances. The sparse blocks' squared distances are accurate to a few eps relative
(nytro._sparse_kernel), the dense core's to about eps times the squared spread of the
rows about the centres' mean over sigma^2, s2 below; a kernel value moves by at most its
squared distance's error over 2 (|dk/ds| <= 1/2 for k = exp(-s/2), and for the Matern
orders 1.5 and 2.5 in s = distance^2), so the blocks agree within 64 eps (1 + s2)
absolute; the Laplacian (Matern 0.5, exp(-sqrt(s))) within its square root, since an
error e in s near 0 moves sqrt(s) by sqrt(e). A fit amplifies the kernel's rounding by the conditioning of
its path (K_mm's factor, t iterations): the problems here are the well-conditioned ones
of conftest (cond(K_mm) ~ 1e2-1e3), and the fits agree within conftest's float64 RTOL,
1e-9 relative, as a callable kernel's do (test_user_kernel.py).
"""
from __future__ import annotations

import lzma
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import RTOL, assert_close
from sklearn.datasets import load_digits, load_svmlight_file

import nytro
import nytro.reference as ref
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)
from nytro import _sparse, _sparse_kernel

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

EPS = np.finfo(np.float64).eps
FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "csr_array": sp.csr_array}
D = 30


def sparse_problem(n=300, d=D, density=0.2, outputs=1, seed=0):
    """Rows with about density * d stored entries, a smooth target of them."""
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng, data_rvs=rng.standard_normal).toarray()
    X[:5] = 0.0  # all-zero rows
    X[:, 3] = 0.0  # an empty column
    X[10:14] = X[20]  # duplicate rows
    s = X @ rng.standard_normal(d) / np.sqrt(density * d)
    Y = np.column_stack([np.sin(s), np.cos(0.5 * s) + 0.1 * s][:outputs]) + 0.05 * rng.standard_normal((n, outputs))
    return X, (Y[:, 0] if outputs == 1 else Y)


# kernel, its keywords: every built-in kernel, the ARD Gaussian's sigma one per feature.
KERNELS = {
    "gaussian": dict(kernel="gaussian", sigma=2.0),
    "laplacian": dict(kernel="laplacian", sigma=3.0),
    "matern": dict(kernel="matern", sigma=2.5, matern_nu=2.5),
    "linear": dict(kernel="linear"),
    "ard": dict(kernel="gaussian", sigma=np.linspace(1.0, 4.0, D)),
}


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_regressor_fits_sparse_x_as_dense(name, fmt):
    X, Y = sparse_problem(outputs=2)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    common = dict(n_centers=40, method="cg", max_iter=60, random_state=0, **KERNELS[name])
    dense = NytroRegressor(**common).fit(X, Y, sample_weight=w)
    Xs = FORMATS[fmt](X)
    sparse = NytroRegressor(**common).fit(Xs, Y, sample_weight=w)
    np.testing.assert_array_equal(sparse.centers_, dense.centers_)  # the same draw, densified exactly
    assert sparse.n_iter_ == dense.n_iter_ and isinstance(sparse.centers_, np.ndarray)
    assert_close(sparse.validation_rmse_, dense.validation_rmse_, np.float64, what="hold-out path")
    assert_close(sparse.intercept_, dense.intercept_, np.float64, what="intercept")
    assert_close(sparse.predict(Xs), dense.predict(X), np.float64, what="predictions")
    assert_close(sparse.predict(X), dense.predict(X), np.float64, what="dense predictions of the sparse fit")
    assert sparse.score(Xs, Y) == pytest.approx(dense.score(X, Y), rel=RTOL[np.dtype(np.float64)])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_classifier_fits_sparse_x_as_dense(name, fmt):
    X, Y = sparse_problem()
    y = np.digitize(Y, [-0.3, 0.3])  # three classes
    common = dict(n_centers=40, max_iter=60, random_state=0, **KERNELS[name])
    dense = NytroClassifier(**common).fit(X, y)
    Xs = FORMATS[fmt](X)
    sparse = NytroClassifier(**common).fit(Xs, y)
    assert sparse.n_iter_ == dense.n_iter_
    np.testing.assert_array_equal(sparse.centers_, dense.centers_)
    assert_close(sparse.decision_function(Xs), dense.decision_function(X), np.float64, what="decision values")
    assert sparse.calibration_scale_ == pytest.approx(dense.calibration_scale_, rel=RTOL[np.dtype(np.float64)])
    assert_close(sparse.predict_proba(Xs), dense.predict_proba(X), np.float64, what="probabilities")
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(X))
    assert sparse.score(Xs, y) == dense.score(X, y)


def test_sigma_auto_reads_the_spreads_of_sparse_x():
    # The spreads from the stored entries (weighted, with implicit zeros) equal the dense
    # ones; the screening fits then select the same scale.
    X, y = sparse_problem()
    w = np.random.RandomState(2).uniform(0.0, 3.0, len(X))
    for weights in (None, w):
        got = _sparse_kernel.feature_deviations(sp.csc_matrix(X), weights)
        want = nytro._memory.feature_deviations(X, weights)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    common = dict(n_centers=40, random_state=0)
    dense = NytroRegressor(**common).fit(X, y, sample_weight=w)
    sparse = NytroRegressor(**common).fit(sp.csr_matrix(X), y, sample_weight=w)
    assert_close(sparse.sigma_, dense.sigma_, np.float64, what="sigma_")
    assert sparse.sigma_spread_ == dense.sigma_spread_
    ranges = (sp.csr_matrix(X).max(axis=0).toarray() - sp.csr_matrix(X).min(axis=0).toarray()).ravel()
    assert_close(nytro._memory.MEMORY.feature_ranges(type("Split", (), {"X_train": sp.csr_matrix(X), "w_train": None})),
                 X.max(axis=0) - X.min(axis=0), np.float64, what="ranges")
    assert_close(ranges, X.max(axis=0) - X.min(axis=0), np.float64, what="ranges by scipy")
    np.testing.assert_array_equal(sparse.sigma_candidates_ > 0, True)
    assert_close(sparse.sigma_scores_, dense.sigma_scores_, np.float64, what="screening scores")
    assert_close(sparse.predict(sp.csr_matrix(X)), dense.predict(X), np.float64)


def test_given_centres_and_refit():
    X, y = sparse_problem()
    for centers in (np.arange(0, 60, 2), X[100:130] + 0.5):
        common = dict(centers=centers, sigma=2.0, method="nu", refit=True, random_state=3)
        dense = NytroRegressor(**common).fit(X, y)
        sparse = NytroRegressor(**common).fit(sp.csr_matrix(X), y)
        np.testing.assert_array_equal(sparse.centers_, dense.centers_)
        assert_close(sparse.predict(sp.csr_matrix(X)), dense.predict(X), np.float64)


# ------------------------------------------------------------------ kernel blocks
def block_tolerance(X, Z, sigma):
    """64 eps (1 + s2): s2 the squared scaled spread of the rows about Z's mean (the
    dense reference's cancellation scale; see the module's docstring)."""
    shift = Z.mean(axis=0)
    scaled = lambda A: (A - shift) / sigma  # noqa: E731
    s2 = max(np.max(np.sum(scaled(X) ** 2, axis=1)), np.max(np.sum(scaled(Z) ** 2, axis=1)))
    return 64 * EPS * (1.0 + s2)


def hostile_rows():
    X, _ = sparse_problem(n=120)
    return X


@pytest.mark.parametrize("kernel, nu", [("gaussian", 1.5), ("laplacian", 1.5), ("matern", 0.5), ("matern", 1.5),
                                        ("matern", 2.5)])
@pytest.mark.parametrize("sigma", ["scalar", "ard"])
def test_sparse_blocks_equal_the_reference(kernel, nu, sigma):
    X = hostile_rows()
    bandwidth = 1.7 if sigma == "scalar" else np.linspace(0.5, 3.0, X.shape[1])
    Z = np.vstack([X[20], X[0], X[60:70]])  # a duplicated row, the zero row, others
    got = _sparse_kernel.block(sp.csr_matrix(X), Z, kernel=kernel, sigma=bandwidth, matern_nu=nu)
    want = ref.kernel_matrix(X, Z, kernel=kernel, sigma=bandwidth, matern_nu=nu)
    tol = block_tolerance(X, Z, bandwidth)
    if kernel == "laplacian" or nu == 0.5:
        # exp(-sqrt(s)): an error e in s near s = 0 (the reference's duplicates) moves
        # sqrt(s) by up to sqrt(e); the other Matern orders are flat there (k' ~ -u du).
        tol = np.sqrt(tol)
    assert np.max(np.abs(got - want)) <= tol
    # A row equal to a centre is at distance 0: k = 1 exactly, not 1 less rounding.
    for i, j in ((20, 0), (10, 0), (0, 1), (1, 1), (65, 7)):
        assert got[i, j] == 1.0, (i, j, got[i, j])


def test_the_linear_block():
    X = hostile_rows()
    Z = X[30:45] * 3.0
    got = _sparse_kernel.block(sp.csc_matrix(X), Z, kernel="linear", sigma=None, matern_nu=1.5)
    want = X @ Z.T
    bound = X.shape[1] * EPS * np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(Z, axis=1)[None, :]
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("exponent", [150, -150])
def test_magnitudes_far_from_one(exponent):
    # Features of 1e150 and 1e-150 with bandwidths of their own (ARD): the norms' squares
    # stay in range only because the rows are divided by the bandwidths first.
    X = hostile_rows()
    scale = np.where(np.arange(X.shape[1]) % 2 == 0, 10.0 ** exponent, 1.0)
    sigma = 2.0 * scale
    Xs, Z = X * scale, X[[20, 40, 50]] * scale
    got = _sparse_kernel.block(sp.csr_matrix(Xs), Z, kernel="gaussian", sigma=sigma, matern_nu=1.5)
    want = ref.kernel_matrix(Xs, Z, kernel="gaussian", sigma=sigma)
    assert np.all(np.isfinite(got)) and got[20, 0] == 1.0
    assert np.max(np.abs(got - want)) <= block_tolerance(X, X[[20, 40, 50]], 2.0)


def test_rows_far_from_the_origin(monkeypatch):
    # X + 1e6 on every stored column: the norms are 1e12 d, the distances O(d); the norms
    # alone would leave errors of eps 1e12 d ~ 1e-3 in them. The pairs refined by sums
    # of non-negative terms give the reference's answer (which shifts by the centres' mean).
    rng = np.random.RandomState(4)
    X = 1e6 + rng.standard_normal((80, 6))
    Z = X[:10] + 0.01 * rng.standard_normal((10, 6))
    got = _sparse_kernel.block(sp.csr_matrix(X), Z, kernel="gaussian", sigma=1.5, matern_nu=1.5)
    want = ref.kernel_matrix(X, Z, sigma=1.5)
    tol = block_tolerance(X, Z, 1.5)
    assert np.max(np.abs(got - want)) <= tol
    monkeypatch.setattr(_sparse_kernel, "REFINE", -np.inf)  # the norms' formula alone fails: the test can fail
    unrefined = _sparse_kernel.block(sp.csr_matrix(X), Z, kernel="gaussian", sigma=1.5, matern_nu=1.5)
    assert np.max(np.abs(unrefined - want)) > 1e3 * tol


def test_a_fit_far_from_the_origin():
    X, y = sparse_problem(n=200, d=8, density=1.0)
    X = X + 1e6
    common = dict(n_centers=30, sigma=2.0, random_state=0)
    dense = NytroRegressor(**common).fit(X, y)
    sparse = NytroRegressor(**common).fit(sp.csr_matrix(X), y)
    assert sparse.n_iter_ == dense.n_iter_
    # The dense core's own kernel error is eps times the spread (~1) here: the fits agree
    # as the well-scaled ones do.
    assert_close(sparse.predict(sp.csr_matrix(X)), dense.predict(X), np.float64)


# ------------------------------------------------------------------ real data
def test_digits_as_sparse():
    # 8x8 digit images: about half their pixels are 0.
    X, y = load_digits(return_X_y=True)
    Xs = sp.csr_matrix(X)
    assert Xs.nnz < 0.55 * X.size
    common = dict(n_centers=100, random_state=0)  # few: K_mm well conditioned at the sigma_ selected
    dense = NytroClassifier(**common).fit(X, y)
    sparse = NytroClassifier(**common).fit(Xs, y)
    assert sparse.n_iter_ == dense.n_iter_
    assert_close(sparse.sigma_, dense.sigma_, np.float64, what="sigma_")
    assert_close(sparse.decision_function(Xs), dense.decision_function(X), np.float64)
    assert sparse.score(Xs, y) == dense.score(X, y) > 0.95


def _adult():
    folder = os.environ.get("NYTRO_DATA")
    path = Path(folder or "/nonexistent") / "adult_a9a"
    return path if (path / "a9a.xz").is_file() and (path / "a9a.t.xz").is_file() else None


@pytest.mark.skipif(_adult() is None, reason="NYTRO_DATA does not hold adult_a9a")
def test_adult_read_as_sparse_gives_the_dense_answer():
    # The paper's Adult (LIBSVM a9a, 123 binary features, about 11% stored), read as CSR.
    path = _adult()
    with lzma.open(path / "a9a.xz") as f:
        X, y = load_svmlight_file(f, n_features=123)
    with lzma.open(path / "a9a.t.xz") as f:
        X_test, y_test = load_svmlight_file(f, n_features=123)
    assert sp.issparse(X) and X.nnz < 0.12 * X.shape[0] * X.shape[1]
    common = dict(n_centers=300, sigma=4.0, random_state=0)
    sparse = NytroClassifier(**common).fit(X, y)
    dense = NytroClassifier(**common).fit(X.toarray(), y)
    assert sparse.n_iter_ == dense.n_iter_
    assert_close(sparse.decision_function(X_test), dense.decision_function(X_test.toarray()), np.float64)
    assert sparse.score(X_test, y_test) == dense.score(X_test.toarray(), y_test) > 0.83


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("est", [NystromKRLSRegressor(n_centers=10), KRLSRegressor(), LandweberRegressor(),
                                 KOLSRegressor(), NystromKRLSClassifier(n_centers=10)])
def test_the_other_estimators_refuse_sparse_x(est):
    X, y = sparse_problem(n=60)
    with pytest.raises(TypeError, match=f"{type(est).__name__} does not take sparse X"):
        est.fit(sp.csr_matrix(X), np.sign(y) if "Classifier" in type(est).__name__ else y)


def test_what_sparse_x_refuses_by_name():
    X, y = sparse_problem(n=60)
    Xs = sp.csr_matrix(X)
    with pytest.raises(NotImplementedError, match="center_selection='leverage' is not supported on sparse X"):
        NytroRegressor(n_centers=10, sigma=1.0, center_selection="leverage").fit(Xs, y)
    with pytest.raises(NotImplementedError, match="n_centers='auto' is fitted in memory only"):
        NytroRegressor(n_centers="auto", sigma=1.0).fit(Xs, y)
    with pytest.raises(TypeError, match="kernel of one's own .* not supported on sparse X"):
        NytroRegressor(n_centers=10, kernel=lambda A, B: A @ B.T).fit(Xs, y)
    with pytest.raises(TypeError, match="Sparse data"):
        NytroRegressor(n_centers=10, sigma=1.0).partial_fit(Xs, y)
    for call in (lambda: nytro.nytro_path(Xs, y, 10, 1.0), lambda: nytro.kernel_matrix(Xs, X[:3]),
                 lambda: nytro.nkrls_path(Xs, y, 10, 1.0)):
        with pytest.raises(TypeError, match="X is a scipy.sparse matrix"):
            call()
    fitted = NystromKRLSRegressor(n_centers=10, sigma=1.0, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="NystromKRLSRegressor does not take sparse X"):
        fitted.predict(Xs)


# Options the path from partial_fit's sums cannot honour, each set as a keyword or in the
# options object: refused by name (nytro._batches.refuse_options) rather than ignored.
REFUSED_OPTIONS = {
    "solver=direct": (dict(solver="direct"), "solver='direct'"),
    "solver=spectral": (dict(solver="spectral"), "solver='spectral'"),
    "storage=float32": (dict(storage="float32"), "storage='float32'"),
    "storage=float16": (dict(storage=np.float16), "storage=<class 'numpy.float16'>"),
    "options.solver": (dict(options=nytro.NytroOptions(solver="direct")), "solver='direct'"),
    "options.storage": (dict(options=nytro.NytroOptions(storage="float32")), "storage='float32'"),
}


@pytest.mark.parametrize("estimator", [NytroRegressor, NytroClassifier])
@pytest.mark.parametrize("name", sorted(REFUSED_OPTIONS))
def test_options_sparse_x_cannot_honour_are_refused_by_name(name, estimator, monkeypatch):
    X, y = sparse_problem(n=60)
    given, words = REFUSED_OPTIONS[name]
    # Refused before any work on the rows: they are not even checked.
    monkeypatch.setattr(_sparse.SPARSE, "start", lambda *a, **k: pytest.fail("the rows were read"))
    with pytest.raises(ValueError, match=f"{re.escape(words)} is not supported on sparse X.*supported: "):
        estimator(n_centers=10, sigma=1.0, random_state=0, **given).fit(sp.csr_matrix(X), np.sign(y))


def test_the_options_sparse_x_does_anyway_are_accepted():
    # The defaults, and solver="gram" (what the sparse path runs), as a keyword or an
    # options field: the same model.
    X, y = sparse_problem(n=120)
    Xs = sp.csr_matrix(X)
    common = dict(n_centers=20, sigma=2.0, method="cg", random_state=0)
    want = NytroRegressor(**common).fit(Xs, y)
    assert want.solver_ == "gram"
    for given in (dict(solver="auto", storage=None), dict(solver="gram"),
                  dict(options=nytro.NytroOptions(solver="gram", iterates="stepwise", factor="qr"))):
        got = NytroRegressor(**common, **given).fit(Xs, y)
        assert got.solver_ == "gram" and got.n_iter_ == want.n_iter_
        assert_close(got.predict(Xs), want.predict(Xs), np.float64, what=str(given))


def test_float32():
    # float32 X computes in float32 as dense X does (the sparse blocks in float64, the sums
    # and path in float32): the fits agree within conftest's float32 tolerance.
    X, y = sparse_problem(n=200)
    common = dict(n_centers=30, sigma=2.0, random_state=0)
    dense = NytroRegressor(**common).fit(X.astype(np.float32), y)
    sparse = NytroRegressor(**common).fit(sp.csr_matrix(X, dtype=np.float32), y)
    assert sparse.coef_.dtype == sparse.centers_.dtype == dense.coef_.dtype == np.float32
    assert_close(sparse.predict(sp.csr_matrix(X, dtype=np.float32)), dense.predict(X.astype(np.float32)), np.float32)


def test_other_sparse_formats_and_index_widths_are_converted():
    X, y = sparse_problem(n=100)
    common = dict(n_centers=20, sigma=2.0, random_state=0)
    want = NytroRegressor(**common).fit(X, y).predict(X)
    wide = sp.csr_matrix(X)
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    for Xs in (sp.coo_matrix(X), sp.lil_matrix(X), sp.csc_array(X), wide):
        assert_close(NytroRegressor(**common).fit(Xs, y).predict(Xs), want, np.float64, what=type(Xs).__name__)
