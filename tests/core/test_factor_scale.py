"""Issue 26, defect 7: the automatic step at any scale of the factor, and no diverged
path returned as a model.

factor="cholesky" with a huge jitter makes R ~ jitter^(-1/2) I, so A^T A's entries are
~1 / jitter. gd and nu with the automatic step are invariant to that scale (the step
scales with it and alpha = R beta does not change), so every jitter must give the
reference's model. The Ritz values of the automatic step's Lanczos used to come from
Eigen's tridiagonal QR, whose deflation test is not scale-invariant: at jitter 1e40 it
returned lambda_max 13% low, gd's coefficients moved 8% and nu diverged (validation RMSE
1e34), silently."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import SERIAL, assert_close, make_problem


@pytest.mark.parametrize("jitter", [1e40, 1e150, 1e300])
@pytest.mark.parametrize("method", ["gd", "nu"])
@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
def test_automatic_step_at_any_jitter_matches_reference(jitter, method, solver):
    p = make_problem()
    args = (p.X, p.y, p.centers, p.sigma)
    common = {"method": method, "factor": "cholesky", "jitter": jitter, "max_iter": 100}
    ours = nytro.nytro_path(*args, **p.holdout, solver=solver, **common, **SERIAL)
    theirs = ref.nytro_path(*args, **p.holdout, **common)
    assert ours.step_size == pytest.approx(theirs.step_size, rel=1e-12)
    assert (ours.n_iter, ours.iterations_run) == (theirs.n_iter, theirs.iterations_run)
    assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")
    # ... which is the model of a moderate jitter, where K_mm is lost to rounding as well.
    moderate = ref.nytro_path(*args, **p.holdout, **{**common, "jitter": 1e20})
    assert_close(ours.coef, moderate.coef, np.float64, what="coef against jitter 1e20")


def test_reference_refuses_a_diverging_path():
    """The twin's guard, as the core's (cpp/tests/test_lanczos.cpp): a step past the stable
    range raises instead of returning growing iterates."""
    p = make_problem()
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    top = np.linalg.eigvalsh(K)[-1]
    with pytest.raises(RuntimeError, match="diverged"):
        ref.landweber_path(p.X, p.y, p.sigma, step_size=2.5 / top, max_iter=200)
    stable = ref.landweber_path(p.X, p.y, p.sigma, step_size=1.0 / top, max_iter=200)
    assert np.all(np.isfinite(stable.coef))
