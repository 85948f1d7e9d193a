"""The C++-backed functions in `nytro` against their plain-NumPy twins in `nytro.reference`."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import (SERIAL, SIGMA, assert_close, column_error, make_noisy_problem, make_problem,
                      relative_error, shifted_solve_tolerance, widened)

FACTORS = ["pivoted", "qr", "cholesky"]
SOLVERS = ["direct", "gram"]


def run_both(name, *args, **kwargs):
    """(C++ result, reference result) of the function `name` on the same arguments."""
    return getattr(nytro, name)(*args, **SERIAL, **kwargs), getattr(ref, name)(*args, **kwargs)


def assert_same_path(actual, expected, dtype):
    """Two PathResults agree: the integer fields exactly, the floating ones to tolerance."""
    assert actual.n_iter == expected.n_iter
    assert actual.iterations_run == expected.iterations_run
    assert actual.rank == expected.rank
    assert_close(actual.step_size, expected.step_size, dtype, what="step_size")
    assert_close(actual.validation_rmse, expected.validation_rmse, dtype, what="validation_rmse")
    assert_close(actual.coef, expected.coef, dtype, what="coef")


def assert_same_tikhonov(actual, expected, dtype):
    assert actual.selected == expected.selected
    assert actual.lambda_ == expected.lambda_
    assert actual.rank == expected.rank
    assert_close(actual.validation_rmse, expected.validation_rmse, dtype, what="validation_rmse")
    assert_close(actual.coef, expected.coef, dtype, what="coef")


# --------------------------------------------------------------------------- kernel
@pytest.mark.parametrize("n, p, d", [(50, 50, 4), (37, 11, 3), (1, 20, 5), (40, 25, 1)])
@pytest.mark.parametrize("sigma", [0.3, 1.25, 20.0])
def test_gaussian_kernel(dtype, n, p, d, sigma):
    rng = np.random.default_rng(n * p + d)
    X = rng.standard_normal((n, d)).astype(dtype)
    Z = rng.standard_normal((p, d)).astype(dtype)
    K = nytro.gaussian_kernel(X, Z, sigma)
    assert K.dtype == dtype
    assert_close(K, ref.gaussian_kernel(X, Z, sigma), dtype)


def test_gaussian_kernel_into_out_equals_the_fresh_result(dtype):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((700, 6)).astype(dtype)
    Z = rng.standard_normal((530, 6)).astype(dtype)
    out = np.full((700, 530), np.nan, dtype=dtype)  # every entry must be written
    returned = nytro.gaussian_kernel(X, Z, 1.1, out=out)
    assert returned is out
    np.testing.assert_array_equal(out, nytro.gaussian_kernel(X, Z, 1.1))
    assert_close(out, ref.gaussian_kernel(X, Z, 1.1), dtype)


def test_gaussian_kernel_streamed_result_equals_its_row_blocks(dtype):
    # Results of 64 MiB and more are written with non-temporal stores (each row's entries
    # before a packet boundary plainly); blocks of 1000 rows are below that size. m odd
    # puts the rows' starts at every offset from a packet, and out= sees a base one entry
    # off as well.
    m = 2049
    n = (64 << 20) // (np.dtype(dtype).itemsize * m) + 3
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, 4)).astype(dtype)
    Z = rng.standard_normal((m, 4)).astype(dtype)
    K = nytro.gaussian_kernel(X, Z, 1.3)
    blocks = np.vstack([nytro.gaussian_kernel(X[r:r + 1000], Z, 1.3) for r in range(0, n, 1000)])
    np.testing.assert_array_equal(K, blocks)
    shifted = np.full(n * m + 1, np.nan, dtype=dtype)[1:].reshape(n, m)
    np.testing.assert_array_equal(nytro.gaussian_kernel(X, Z, 1.3, out=shifted), blocks)
    rows = rng.choice(n, 300, replace=False)
    assert_close(K[rows], ref.gaussian_kernel(X[rows], Z, 1.3), dtype)
    # An array whose start is not a whole number of entries (a byte offset into a buffer)
    # cannot be brought to a packet boundary: stored plainly, the same bits, no crash.
    unaligned = np.empty(n * m * np.dtype(dtype).itemsize + 1, dtype=np.uint8)[1:].view(dtype).reshape(n, m)
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(nytro.gaussian_kernel(X, Z, 1.3, out=unaligned), blocks)


def test_gaussian_kernel_of_a_set_with_itself_has_unit_diagonal(dtype):
    X = np.random.default_rng(1).standard_normal((30, 4)).astype(dtype)
    K = nytro.gaussian_kernel(X, X, 0.7)
    # ||x - x||^2 computed as |x|^2 + |x|^2 - 2 x.x may round to a small nonzero value.
    np.testing.assert_allclose(np.diag(K), 1, rtol=0, atol=10 * np.finfo(dtype).eps)
    assert_close(K, K.T, dtype)


# -------------------------------------------------------------------------- centres
@pytest.mark.parametrize("n, m", [(1, 1), (10, 10), (300, 30), (1000, 7)])
@pytest.mark.parametrize("seed", [0, 1, 12345, 2**64 - 1])
def test_sample_centers(n, m, seed):
    idx = nytro.sample_centers(n, m, seed)
    np.testing.assert_array_equal(idx, ref.sample_centers(n, m, seed))
    assert len(idx) == m
    assert len(np.unique(idx)) == m
    assert idx.min() >= 0 and idx.max() < n


def test_sample_centers_depends_on_seed():
    assert not np.array_equal(nytro.sample_centers(300, 30, 0), nytro.sample_centers(300, 30, 1))


def _dense_fisher_yates(n, m, seed):
    """The partial Fisher-Yates shuffle of an explicit arange(n), SplitMix64-driven."""
    stream = ref._splitmix64(seed)
    order = list(range(n))
    for i in range(m):
        bound = n - i
        limit = ((2**64 - 1) // bound) * bound
        x = next(stream)
        while x >= limit:
            x = next(stream)
        j = i + x % bound
        order[i], order[j] = order[j], order[i]
    return np.array(order[:m])


@pytest.mark.parametrize("n, m, seed", [(1, 1, 0), (7, 7, 3), (300, 30, 1), (1000, 999, 2**64 - 1)])
def test_sample_centers_is_the_dense_shuffle(n, m, seed):
    """The draw keeps only the positions its swaps touched, with the same result as the
    shuffle of an explicit arange(n); a shorter draw is a prefix of a longer one."""
    expected = _dense_fisher_yates(n, m, seed)
    np.testing.assert_array_equal(nytro.sample_centers(n, m, seed), expected)
    np.testing.assert_array_equal(ref.sample_centers(n, m, seed), expected)
    np.testing.assert_array_equal(nytro.sample_centers(n, max(1, m // 2), seed), expected[:max(1, m // 2)])


def test_sample_centers_among_more_rows_than_memory():
    """Drawing 50 of 10^15 rows costs what drawing 50 of 100 does: a Dask fit's client
    draws its centres among all the training rows, and a shuffle of an explicit index
    array (8 bytes a row) would not fit in memory past about 10^9 of them."""
    idx = nytro.sample_centers(10**15, 50, 3)
    assert len(np.unique(idx)) == 50 and idx.min() >= 0 and idx.max() < 10**15
    np.testing.assert_array_equal(idx, ref.sample_centers(10**15, 50, 3))


# ------------------------------------------------------------------- Nystrom factor
def kernel_of_centers(problem):
    return nytro.gaussian_kernel(problem.centers, problem.centers, problem.sigma)


def assert_generalised_inverse(R, K, dtype):
    """R R^T is a reflexive generalised inverse of K: G K G = G and K G K = K."""
    G = R @ R.T
    assert_close(G @ K @ G, G, dtype, what="G K G")
    assert_close(K @ G @ K, K, dtype, what="K G K")


@pytest.mark.parametrize("method", FACTORS)
def test_nystrom_factor(dtype, method):
    problem = make_problem(dtype=dtype)
    K = kernel_of_centers(problem)
    # cholesky's jitter (default 1e-10) shifts the identities by jitter * ||K^-1|| ~ 3e-9;
    # without it they hold to rounding.
    assert_generalised_inverse(nytro.nystrom_factor(K, method=method, jitter=0), K, dtype)
    R = nytro.nystrom_factor(K, method=method)
    assert R.dtype == dtype and R.shape == (30, 30)
    # R itself is not unique (any R Q with Q orthogonal will do); R R^T is.
    R_ref = ref.nystrom_factor(K, method=method)
    assert_close(R @ R.T, R_ref @ R_ref.T, dtype, what="R R^T")


def duplicated_centers(dtype, n_distinct=20, copies=(0, 3, 3, 7, 19, 11)):
    """Centres with exact duplicate rows (so K_mm is exactly singular) in shuffled order."""
    distinct = make_problem(m=n_distinct, dtype=dtype).centers
    centers = np.concatenate([distinct, distinct[list(copies)]])
    return centers[np.random.default_rng(0).permutation(len(centers))], n_distinct


@pytest.mark.parametrize("method", ["pivoted", "qr"])
def test_nystrom_factor_with_duplicated_centres(dtype, method):
    centers, n_distinct = duplicated_centers(dtype)
    K = nytro.gaussian_kernel(centers, centers, SIGMA)
    R = nytro.nystrom_factor(K, method=method)
    assert R.shape == (len(centers), n_distinct)
    assert_generalised_inverse(R, K, dtype)


def test_qr_factor_with_duplicated_centres_is_the_pseudo_inverse(dtype):
    # qr gives pinv(K_mm), which is unique even when K_mm is singular.
    centers, _ = duplicated_centers(dtype)
    K = nytro.gaussian_kernel(centers, centers, SIGMA)
    R, R_ref = nytro.nystrom_factor(K, method="qr"), ref.nystrom_factor(K, method="qr")
    assert_close(R @ R.T, R_ref @ R_ref.T, dtype, what="R R^T")
    w, V = np.linalg.eigh(K.astype(np.float64))
    keep = w > len(K) * np.finfo(dtype).eps * w.max()  # the exact zeros of K, at rounding level
    assert_close(R @ R.T, (V[:, keep] / w[keep]) @ V[:, keep].T, dtype, what="pinv")


def test_scipy_lapack_is_registered():
    # SciPy is a dependency: its LAPACK must be the one the core uses (a missing name
    # would fall back to Eigen's unblocked pivoted QR silently, 2-3x slower at m >= 2000).
    from nytro import _core
    assert _core.has_lapack() and _core.has_lapack_qr()


# ------------------------------------------------------------------------- NYTRO
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("stopping", ["best", "relative", "window"])
@pytest.mark.parametrize("step_size", ["auto", "paper", 5e-3])
def test_nytro_path_with_holdout(dtype, solver, stopping, step_size):
    p = make_noisy_problem(dtype)
    got, want = run_both("nytro_path", p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=80,
                         step_size=step_size, stopping=stopping, solver=solver)
    assert got.solver == solver
    assert got.coef.dtype == dtype
    assert len(got.validation_rmse) == got.iterations_run
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("n_outputs", [None, 1, 3])
@pytest.mark.parametrize("holdout", [True, False], ids=["holdout", "no-holdout"])
def test_nytro_path_outputs(dtype, solver, n_outputs, holdout):
    p = make_problem(n_outputs=n_outputs, dtype=dtype)
    got, want = run_both("nytro_path", p.X, p.y, p.centers, p.sigma, **(p.holdout if holdout else {}),
                         max_iter=40, solver=solver)
    assert got.coef.shape == ((30,) if n_outputs is None else (30, n_outputs))
    if not holdout:
        # Without a hold-out set the loop runs exactly max_iter iterations.
        assert got.n_iter == got.iterations_run == 40 and got.validation_rmse.size == 0
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("n_val", [10, 200])
def test_nytro_path_validation_forms(dtype, solver, n_val):
    # n_val <= m keeps K_val explicitly; n_val > m keeps only K_val^T K_val, K_val^T y_val
    # and ||y_val||^2 (the "quadratic" form): both must give the reference's RMSEs.
    p = make_problem(n_val=n_val, dtype=dtype)
    got, want = run_both("nytro_path", p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=60,
                         solver=solver)
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("factor", FACTORS)
def test_nytro_path_factors(dtype, factor):
    p = make_problem(dtype=dtype)
    got, want = run_both("nytro_path", p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=50,
                         factor=factor)
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("factor", ["pivoted", "cholesky"])
@pytest.mark.parametrize("n_outputs", [None, 3])
def test_direct_solver_lifts_by_solves_across_steps(dtype, factor, n_outputs):
    """The direct solver keeps the triangular factors as U and lifts by triangular solves
    (in steps of 256 rows) instead of forming R = U^-1: 600 centres in 8 dimensions cross
    the steps, on 2 threads, against the reference's explicit R."""
    p = make_problem(n=900, d=8, m=600, n_outputs=n_outputs, dtype=dtype)
    got = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=40, factor=factor,
                           solver="direct", n_threads=2)
    want = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=40, factor=factor)
    assert got.rank > 256
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("factor", ["pivoted", "qr"])
@pytest.mark.parametrize("solver", ["direct", "gram"])
def test_nytro_path_with_duplicated_centres(dtype, factor, solver):
    # The rank is the number of distinct centres; the fitted function is that of the
    # distinct centres, so compare predictions (coef on the duplicates is not unique).
    # direct lifts by solves with the rank x rank corner of U, gram forms R from it.
    centers, n_distinct = duplicated_centers(dtype)
    p = make_problem(dtype=dtype)
    got, want = run_both("nytro_path", p.X, p.y, centers, p.sigma, **p.holdout, max_iter=50,
                         factor=factor, solver=solver)
    assert got.rank == want.rank == n_distinct
    assert got.n_iter == want.n_iter
    assert_close(got.validation_rmse, want.validation_rmse, dtype)
    K_val = nytro.gaussian_kernel(p.X_val, centers, p.sigma)
    assert_close(K_val @ got.coef, K_val @ want.coef, dtype, what="predictions")


def test_nytro_solvers_agree(dtype):
    p = make_problem(n_outputs=2, dtype=dtype)
    direct, gram = (nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=100, solver=s, **SERIAL)
                    for s in SOLVERS)
    assert (direct.solver, gram.solver) == ("direct", "gram")
    assert_same_path(gram, direct, dtype)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("n_outputs", [None, 2])
def test_nytro_lanczos_iterates_follow_the_reference_path(dtype, solver, n_outputs):
    # m = 150 centres and 400 iterations: the Lanczos basis stays far smaller than m, so
    # the iterates beyond its size come from the error bound, not from an exact basis.
    # The coefficients over 150 centres are ill-conditioned (the Gram route's own rounding
    # moves them by 2e-9 in float64, stepwise or not): compare the fitted functions. In
    # float32 the basis amplifies each product's rounding coherently (predictions 5e-4 to
    # 1e-3 off for the direct solver, against 7e-5 to 3e-4 stepwise), hence the wider
    # tolerance there, and the automatic choice steps.
    p = make_problem(n=600, m=150, n_val=120, n_outputs=n_outputs, dtype=dtype)
    got, want = run_both("nytro_path", p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=400,
                         solver=solver, iterates="lanczos")
    stepwise = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=400, solver=solver,
                                iterates="stepwise", **SERIAL)
    assert got.products < 100 < got.iterations_run == 400
    assert stepwise.products == stepwise.iterations_run == 400
    rtol = None if dtype == np.float64 else 5e-3
    K_val = ref.gaussian_kernel(p.X_val, p.centers, p.sigma)
    for other in (want, stepwise):
        assert got.n_iter == other.n_iter
        assert_close(got.validation_rmse, other.validation_rmse, dtype, rtol=rtol, what="validation_rmse")
        assert_close(K_val @ got.coef, K_val @ other.coef, dtype, rtol=rtol, what="predictions")
    auto = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=400, solver=solver, **SERIAL)
    assert (auto.products < 100) if dtype == np.float64 else (auto.products == 400)


def test_nytro_iterates_auto_uses_lanczos_except_for_spectral():
    p = make_problem(n=600, m=150, n_val=120)
    runs = {s: nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=400, solver=s, **SERIAL)
            for s in ("direct", "gram", "spectral")}
    assert runs["direct"].products < 100 and runs["gram"].products < 100
    assert runs["spectral"].products == 400
    # nu and cg always step.
    nu = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=50, method="nu",
                          iterates="lanczos", **SERIAL)
    assert nu.products == nu.iterations_run == 50


# --------------------------------------------------------------------- Landweber
@pytest.mark.parametrize("stopping", ["best", "relative", "window"])
@pytest.mark.parametrize("step_size", ["auto", "paper"])
def test_landweber_path(dtype, stopping, step_size):
    p = make_problem(n=200, dtype=dtype)
    got, want = run_both("landweber_path", p.X, p.y, p.sigma, **p.holdout, max_iter=60,
                         step_size=step_size, stopping=stopping)
    assert got.rank == 200
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("iterates", ["lanczos", "stepwise"])
def test_landweber_path_long(dtype, iterates):
    p = make_problem(n=300, dtype=dtype)
    got, want = run_both("landweber_path", p.X, p.y, p.sigma, **p.holdout, max_iter=300, step_size="auto",
                         iterates=iterates)
    assert (got.products < 150) if iterates == "lanczos" else (got.products == 300)
    assert_same_path(got, want, dtype)


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_landweber_path_without_holdout(dtype, n_outputs):
    p = make_problem(n=200, n_outputs=n_outputs, dtype=dtype)
    got, want = run_both("landweber_path", p.X, p.y, p.sigma, max_iter=30, step_size=2e-3)
    assert got.n_iter == 30
    assert_same_path(got, want, dtype)


# ---------------------------------------------------------------------- Tikhonov
@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("factor", FACTORS)
def test_nkrls_path_default_grid(dtype, solver, factor):
    # The paper's grid reaches lambda = 1e-15, far below rounding: the selected lambda
    # must still give a finite coef equal to the reference's.
    p = make_noisy_problem(dtype)
    got, want = run_both("nkrls_path", p.X, p.y, p.centers, p.sigma, **p.holdout, solver=solver,
                         factor=factor)
    assert 0 < got.selected < 99
    assert len(got.validation_rmse) == 100
    assert np.all(np.isfinite(got.coef))
    assert_same_tikhonov(got, want, dtype)


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("n_outputs", [None, 3])
def test_nkrls_path_single_lambda_without_holdout(dtype, solver, n_outputs):
    p = make_problem(n_outputs=n_outputs, dtype=dtype)
    got, want = run_both("nkrls_path", p.X, p.y, p.centers, p.sigma, lambdas=[1e-4], solver=solver)
    assert got.lambda_ == 1e-4 and got.validation_rmse.size == 0
    assert_same_tikhonov(got, want, dtype)


# KRLS on the full n x n kernel: K is far worse conditioned than K_mm, so the grid stops
# at 1e-6, where lambda n I still dominates rounding in the small eigenvalues.
KRLS_GRID = np.logspace(-6, 0, 13)


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("n_outputs", [None, 2])
def test_krls_path(dtype, solver, n_outputs):
    p = make_problem(n=150, n_outputs=n_outputs, dtype=dtype)
    lambdas = KRLS_GRID if dtype == np.float64 else KRLS_GRID[4:]
    got, want = run_both("krls_path", p.X, p.y, p.sigma, lambdas=lambdas, **p.holdout, solver=solver)
    assert_same_tikhonov(got, want, dtype)


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("n_outputs", [None, 2])
@pytest.mark.parametrize("lam", KRLS_GRID[4:7])
def test_krls_accuracy_against_the_float64_answer(dtype, solver, n_outputs, lam):
    # cond(K + lambda n I) reaches 1e4 at the smallest of these lambdas. The coefficients
    # must be as close to the float64 answer (of the same, dtype-rounded, data) as the
    # rounding of K and of the result allow, whatever the CPU's LAPACK kernels: a float32
    # eigendecomposition, backward stable only to a few float32 epsilons of ||K||, was
    # 10-40x further off (and than NumPy's float32 eigh), by how much depending on the CPU.
    p = make_problem(n=150, n_outputs=n_outputs, dtype=dtype)
    exact = ref.krls_path(*(widened(p).X, widened(p).y, p.sigma), lambdas=[lam])
    got = nytro.krls_path(p.X, p.y, p.sigma, lambdas=[lam], solver=solver, **SERIAL)
    tol = shifted_solve_tolerance(widened(p).X, p.sigma, exact.coef, lam * p.X.shape[0], dtype)
    assert column_error(got.coef, exact.coef) <= tol
    # NumPy's own computation in this dtype meets the same bound (the bound is fair).
    assert column_error(ref.krls_path(p.X, p.y, p.sigma, lambdas=[lam]).coef, exact.coef) <= tol


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
def test_nkrls_float32_accuracy_no_worse_than_numpys(solver):
    # Against the float64 answer of the same data, the core's float32 coefficients (for
    # every lambda of a grid reaching cond(A^T A + lambda n I) ~ 1e6) are no further off
    # than NumPy's own float32 computation, up to a factor of 2 and the result's rounding.
    dtype = np.dtype(np.float32)
    p = make_noisy_problem(dtype, n=300)
    w = widened(p)
    eps = float(np.finfo(dtype).eps)
    for lam in np.logspace(-7, -3, 5):
        exact = ref.nkrls_path(w.X, w.y, w.centers, p.sigma, lambdas=[lam]).coef
        core = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[lam], solver=solver, **SERIAL).coef
        numpy_own = ref.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[lam]).coef
        allowed = 2 * relative_error(numpy_own, exact) + 8 * eps
        assert relative_error(core, exact) <= allowed, lam


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_kols_accuracy_against_the_float64_answer(dtype, n_outputs):
    p = well_conditioned_kernel_problem(dtype, n_outputs)
    w = widened(p)
    exact = ref.kols(w.X, w.y, p.sigma)
    tol = shifted_solve_tolerance(w.X, p.sigma, exact, 0.0, dtype)
    assert column_error(nytro.kols(p.X, p.y, p.sigma, **SERIAL), exact) <= tol
    assert column_error(ref.kols(p.X, p.y, p.sigma), exact) <= tol


def well_conditioned_kernel_problem(dtype, n_outputs=None):
    """n = 60 points in 4 dimensions with a narrow kernel: cond(K) ~ 10."""
    return make_problem(n=60, sigma=0.5, n_outputs=n_outputs, dtype=dtype)


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_kols(dtype, n_outputs):
    p = well_conditioned_kernel_problem(dtype, n_outputs)
    got, want = run_both("kols", p.X, p.y, p.sigma)
    assert_close(got, want, dtype)


def test_kols_with_rank_cut():
    # rcond is put in the widest gap of the spectrum between 1e-4 and 1e-2 (relative),
    # so that both sides drop the same eigenvalues and the kept ones are not tiny.
    p = make_problem(n=120)
    w = np.linalg.eigvalsh(ref.gaussian_kernel(p.X, p.X, p.sigma))
    w = np.sort(w[(w >= 1e-4 * w.max()) & (w <= 1e-2 * w.max())] / w.max())
    k = int(np.argmax(w[1:] / w[:-1]))
    rcond = float(np.sqrt(w[k] * w[k + 1]))
    got, want = run_both("kols", p.X, p.y, p.sigma, rcond=rcond)
    assert_close(got, want, np.float64)
