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
