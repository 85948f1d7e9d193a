"""nystrom_factor on degenerate K_mm (duplicate centres, rank 1, nearly singular) and the
factor choice inside nytro_path: the defining identities of R to a tolerance derived from
the rank cut, or a clear error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import nytro
import nytro.reference as ref

from ._support import SERIAL, eps, exact_kernel, outcome, problems, relative_error


@pytest.mark.parametrize("method", ["pivoted", "qr"])
@given(data=problems(max_n=16, max_m=12), dt=st.sampled_from([np.float64, np.float32]))
def test_factor_identities_on_degenerate_k_mm(method, data, dt):
    # R R^T K R R^T = R R^T (R^T K R = I) and K R R^T K = K: R R^T is a reflexive
    # generalised inverse of K_mm, whatever its rank.
    K = nytro.gaussian_kernel(data.centers.astype(dt), data.centers.astype(dt), data.sigma, **SERIAL)
    R = outcome(lambda: nytro.nystrom_factor(K, method=method, **SERIAL), {"K_mm", "method"})
    assert R is not None
    m, k = R.shape
    assert m == K.shape[0] and 1 <= k <= m and np.all(np.isfinite(R))
    K64, R64 = K.astype(np.float64), R.astype(np.float64)
    # The factor stops where the Schur complement's largest diagonal is below m eps max
    # diag: what it leaves out of K is at most m of those, and R's entries are at most
    # 1 / sqrt of the smallest pivot kept.
    e = eps(dt)
    leftover = m * m * e * float(np.diag(K64).max())
    amplification = float(np.linalg.norm(R64, 2)) ** 2 * float(np.linalg.norm(K64, 2))
    identity_error = float(np.abs(R64.T @ K64 @ R64 - np.eye(k)).max())
    assert identity_error <= 64 * m * e * amplification, f"R^T K R - I: {identity_error:.3e}"
    residual = float(np.abs(K64 @ R64 @ R64.T @ K64 - K64).max())
    assert residual <= 64 * (leftover + m * e * amplification * float(np.linalg.norm(K64, 2))), \
        f"K R R^T K - K: {residual:.3e}"


@pytest.mark.parametrize("method", ["pivoted", "qr", "cholesky"])
def test_indefinite_k_mm_is_refused(method):
    # A K_mm with a clearly negative eigenvalue is no kernel matrix (a wrong argument):
    # refused with a message naming K_mm, not factored into an empty or partial R.
    K = -np.eye(4)
    with pytest.raises(ValueError, match="K_mm"):
        nytro.nystrom_factor(K, method=method)


@pytest.mark.parametrize("size", ["moderate", "huge"])
@given(data=problems(max_n=16, max_m=8, holdout=False, outputs=(1,), kinds=("normal", "duplicates")),
       exponent=st.data())
def test_cholesky_jitter_gives_reference_or_error(size, data, exponent):
    # factor="cholesky" factors K_mm + jitter I: for any jitter, the reference's model on
    # the same jitter, or an error naming jitter; never a diverged path.
    e = exponent.draw(st.integers(-12, 6) if size == "moderate" else st.integers(30, 100))
    jitter = 10.0 ** e
    got = outcome(lambda: nytro.nytro_path(data.X, data.y, data.centers, data.sigma, method="gd", max_iter=6,
                                           factor="cholesky", jitter=jitter, **SERIAL), {"jitter", "factor"})
    if got is None:
        return
    expected = ref.nytro_path(data.X, data.y, data.centers, data.sigma, method="gd", max_iter=6,
                              factor="cholesky", jitter=jitter)
    K = exact_kernel(data.centers, data.centers, data.sigma).astype(np.float64)
    w = np.linalg.eigvalsh(K + jitter * np.eye(len(K)))
    tol = 64 * eps(np.float64) * (w[-1] / w[0]) * (1 + len(K))
    if tol < 0.05:
        assert relative_error(got.coef, expected.coef) <= tol, \
            f"jitter 1e{e}: coef {np.abs(got.coef).max():.3g} against {np.abs(expected.coef).max():.3g}"
