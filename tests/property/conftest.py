"""Hypothesis profiles of the property suite, and the table of its known defects.

Profiles (chosen by the HYPOTHESIS_PROFILE environment variable, default "ci"):
  ci       derandomized (the same examples on every run and machine), few examples per
           property, no shrinking: the whole suite in well under two minutes on 2 cores.
  dev      as ci, with shrinking: a failing example is reduced to a minimal one.
  nightly  random, 20x the examples, shrinking: the long search, e.g. once a night
           HYPOTHESIS_PROFILE=nightly python -m pytest tests/property -q
           (its failures print a @reproduce_failure blob to replay them).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

# Inputs are built from a drawn seed with NumPy, and the core's timing varies with the
# load of the machine: neither the health check on slow data generation nor a deadline
# says anything about correctness here.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
               print_blob=True)
# ci and dev keep no example database: derandomized, they find the same examples anyway.
settings.register_profile("ci", max_examples=12, derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate], **_COMMON)
settings.register_profile("dev", max_examples=12, derandomize=True, database=None, **_COMMON)
settings.register_profile("nightly", max_examples=240, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Properties that fail today only because of a defect of issue 26 that is being fixed on
# another branch. Keys are test names, with the parameter id where only some variants
# are affected. When a fix is merged, delete its rows: the test must then pass (XPASS
# already shows where one does, as the marks are not strict).
KNOWN_DEFECTS = {
    # 1: hybrid hold-out errors by Gram-Schmidt in R^n_val, wrong once the Krylov
    #    dimension passes n_val.
    "test_hybrid_path_matches_reference[nytro_path-krylov_past_n_val]":
        "issue 26 defect 1: hybrid hold-out errors wrong once the Krylov dimension passes n_val",
    "test_hybrid_path_matches_reference[landweber_path-krylov_past_n_val]":
        "issue 26 defect 1: hybrid hold-out errors wrong once the Krylov dimension passes n_val",
    "test_holdout_rmse_is_that_of_the_returned_coef[nytro_path-hybrid]":
        "issue 26 defect 1: hybrid hold-out errors wrong once the Krylov dimension passes n_val",
    "test_holdout_rmse_is_that_of_the_returned_coef[landweber_path-hybrid]":
        "issue 26 defect 1: hybrid hold-out errors wrong once the Krylov dimension passes n_val",
    # 4: multi-output targets scaled by one power of two for all columns.
    "test_multi_output_columns_of_any_magnitude":
        "issue 26 defect 4: multi-output targets share one scale, small columns lost",
    "test_estimator_multi_output_columns_of_any_magnitude":
        "issue 26 defect 4: multi-output targets share one scale, small columns lost",
    # 5: kernel distances as ||x||^2 + ||z||^2 - 2 x.z, cancelling with a common offset
    #    (the NumPy twin uses the same formula).
    "test_kernel_matches_direct_differences[large]":
        "issue 26 defect 5: kernel cancellation with a large common offset",
    "test_reference_kernel_matches_direct_differences[large]":
        "issue 26 defect 5: the twin's kernel cancels with a large common offset too",
    "test_path_invariant_under_feature_offset":
        "issue 26 defect 5: kernel cancellation with a large common offset",
    # 6: concurrent fits with n_threads below the core count leave the BLAS pool shrunk.
    "test_concurrent_fits_leave_the_blas_pool_alone":
        "issue 26 defect 6: BLAS pool left shrunk by concurrent fits",
    # 7: factor="cholesky" with a huge jitter: wrong automatic step, gd diverges silently.
    "test_cholesky_jitter_gives_reference_or_error[huge]":
        "issue 26 defect 7: cholesky with a huge jitter diverges silently",
    # Messages: NumPy scalars refused (threadpoolctl's limit applied before n_threads
    # is checked), validation_fraction=np.float32 refused; integers past the C++ type
    # give pybind11's dump; an indefinite K_mm factored silently.
    "test_numpy_scalar_parameters[nkrls_path]":
        "issue 26 messages: n_threads=np.int64 refused (BLAS limit applied before the check)",
    "test_numpy_scalar_parameters[krls_path]":
        "issue 26 messages: n_threads=np.int64 refused (BLAS limit applied before the check)",
    "test_numpy_scalar_parameters[kols]":
        "issue 26 messages: n_threads=np.int64 refused (BLAS limit applied before the check)",
    "test_numpy_scalar_parameters[nystrom_factor]":
        "issue 26 messages: n_threads=np.int64 refused (BLAS limit applied before the check)",
    "test_estimator_numpy_scalar_parameters":
        "issue 26 messages: NumPy-scalar n_threads / validation_fraction refused by the estimators",
    "test_integers_past_the_core_types_name_the_argument":
        "issue 26 messages: integers past the C++ type give pybind11's dump naming no argument",
    "test_indefinite_k_mm_is_refused":
        "issue 26 messages: an indefinite K_mm is factored silently (0 columns with qr)",
    "test_estimator_centers_are_not_the_callers_array":
        "issue 26 messages: KOLS, KRLS / Landweber without hold-out keep the caller's X as centers_",
    # Found by this suite, not on the list: on a singular K (duplicate rows) with
    # y outside K's range, T_k of the Krylov space becomes singular once the space is
    # invariant. Hybrid now solves through T_k's pseudo-inverse there (the minimum-norm
    # least-squares model: group means); CG still steps through the null Ritz direction
    # or stops before it, so the two differ (CG is the one that is wrong).
    "test_hybrid_without_holdout_is_cg[landweber_path]":
        "open defect: CG past an invariant Krylov space with y outside K's range (not min-norm)",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        # Only this package's tests: the names are not unique across the suite.
        if "property" not in item.path.parts:
            continue
        reason = KNOWN_DEFECTS.get(item.name) or KNOWN_DEFECTS.get(item.originalname)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=False, reason=reason))
