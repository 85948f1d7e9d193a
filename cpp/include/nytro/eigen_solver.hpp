// Symmetric eigendecomposition, with an optional LAPACK backend. Eigen's own dense
// solver is several times slower than LAPACK's divide and conquer, so callers that have
// a LAPACK (the Python bindings take SciPy's) register its ?syevd here.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// LAPACK's dsyevd_/ssyevd_ (Fortran calling convention, 32-bit integers).
using dsyevd_fn = void (*)(char* jobz, char* uplo, int* n, double* a, int* lda, double* w,
                           double* work, int* lwork, int* iwork, int* liwork, int* info);
using ssyevd_fn = void (*)(char* jobz, char* uplo, int* n, float* a, int* lda, float* w,
                           float* work, int* lwork, int* iwork, int* liwork, int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines. Set once at start-up:
// the registry is read by every later call and is not meant to change under them.
void set_lapack_syevd(dsyevd_fn dsyevd, ssyevd_fn ssyevd);
bool has_lapack_syevd();

// A = V diag(w) V^T with w ascending. Throws std::runtime_error if it does not converge.
template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V);

// The same with an interruption point: while it runs (on a worker thread, on a copy of
// A), `callback` is called with {"eigendecomposition", 0, 1} about every 20 ms and may
// throw to abandon it (the worker then finishes in the background). An empty callback
// runs it here, without the copy.
template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V, const Callback& callback);

}  // namespace nytro
