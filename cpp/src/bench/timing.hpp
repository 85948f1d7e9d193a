// Timing hooks for the roofline and scaling reports (benchmarks/bench_kernels.py, bench_scaling.py): the inner loops of
// the solvers in isolation, timed inside C++ so no Python overhead is counted.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// Median seconds of `repeats` fused passes K^T (K a - y) (the direct solver's iteration
// without its two products with R), for K stored in S and computed in T.
template <class T, class S = T>
double fused_pass_seconds(const Matrix<S>& K, const MatrixCRef<T>& a, const MatrixCRef<T>& y, int n_threads,
                          int repeats);

// Median seconds of `repeats` products H b reading only the lower triangle of the
// symmetric H (the Gram solver's iteration), for H stored in S and computed in T.
template <class T, class S = T>
double symmetric_pass_seconds(const Matrix<S>& H, const MatrixCRef<T>& b, int n_threads, int repeats);

// Median seconds of `repeats` pivoted Nystrom factors of K_mm as a fit makes them (the
// pivoted Cholesky's U, not inverted; about m^3 / 3 flops), each of a fresh copy of K_mm
// (on huge pages, as the fit's K_mm) made outside the timed span.
template <class T>
double factor_seconds(const MatrixCRef<T>& K_mm, int n_threads, int repeats);

// Median seconds of `repeats` updates of the upper triangle G -= B^T B (B: depth x size),
// the factor's update of its trailing triangle after each panel of pivots.
template <class T>
double rank_update_seconds(const MatrixCRef<T>& B, int n_threads, int repeats);

}  // namespace nytro
