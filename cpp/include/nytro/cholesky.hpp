// Dense Cholesky factorisation A = L L^T of a symmetric positive definite matrix, with an
// optional LAPACK backend. Eigen's LLT runs its rank updates on one thread, well below a
// multithreaded LAPACK ?potrf, so callers that have a LAPACK (the Python bindings take
// SciPy's) register its ?potrf here. The paper's NKRLS factors one such matrix per lambda.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// LAPACK's dpotrf_/spotrf_ (Fortran calling convention, 32-bit integers).
using dpotrf_fn = void (*)(char* uplo, int* n, double* a, int* lda, int* info);
using spotrf_fn = void (*)(char* uplo, int* n, float* a, int* lda, int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines; set once at start-up,
// like set_lapack_syevd.
void set_lapack_potrf(dpotrf_fn dpotrf, spotrf_fn spotrf);
bool has_lapack_potrf();

// Overwrites the lower triangle of the symmetric matrix A with L, A = L L^T (the strict
// upper triangle is left unspecified). Returns false, with A unspecified, when A is not
// numerically positive definite (a pivot <= 0 or NaN), as Eigen's LLT reports it.
template <class T>
bool cholesky_lower_in_place(Matrix<T>& A);

}  // namespace nytro
