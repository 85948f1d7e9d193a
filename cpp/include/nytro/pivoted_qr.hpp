// Column-pivoted QR of a symmetric matrix, with an optional LAPACK backend (?geqp3, then
// ?orgqr for Q). Eigen's ColPivHouseholderQR is unblocked and runs on one thread, which
// dominates the "qr" Nystrom factor. Callers that have a LAPACK (the Python bindings
// take SciPy's, as the reference's scipy.linalg.qr does) register it here.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// LAPACK's ?geqp3_ and ?orgqr_ (Fortran calling convention, 32-bit integers).
using dgeqp3_fn = void (*)(int* m, int* n, double* a, int* lda, int* jpvt, double* tau, double* work, int* lwork,
                           int* info);
using sgeqp3_fn = void (*)(int* m, int* n, float* a, int* lda, int* jpvt, float* tau, float* work, int* lwork,
                           int* info);
using dorgqr_fn = void (*)(int* m, int* n, int* k, double* a, int* lda, double* tau, double* work, int* lwork,
                           int* info);
using sorgqr_fn = void (*)(int* m, int* n, int* k, float* a, int* lda, float* tau, float* work, int* lwork,
                           int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines; set once at start-up,
// like set_lapack_syevd.
void set_lapack_qr(dgeqp3_fn dgeqp3, sgeqp3_fn sgeqp3, dorgqr_fn dorgqr, sorgqr_fn sorgqr);
bool has_lapack_qr();

// For a symmetric K (m x m): K P = Q D with column pivoting; returns the first k columns
// of Q (m x k, orthonormal), k the number of |D_ii| > rank_tol |D_00|. k = 0 when K is
// numerically zero.
// With a callback it runs on a worker thread on a copy of K, and the callback is called
// about every 20 ms and may throw to abandon it (see src/abandonable.hpp).
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range(const MatrixCRef<T>& K, double rank_tol,
                                                                   const Callback& callback = {});

}  // namespace nytro
