// Dense Cholesky factorisation A = L L^T of a symmetric positive definite matrix; LAPACK's
// ?potrf when one is registered (nytro/lapack.hpp), Eigen's LLT otherwise.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// Overwrites the lower triangle of the symmetric matrix A with L, A = L L^T (the strict
// upper triangle is left unspecified). Returns false, with A unspecified, when A is not
// numerically positive definite (a pivot <= 0 or NaN), as Eigen's LLT reports it.
template <class T>
bool cholesky_lower_in_place(Matrix<T>& A);

}  // namespace nytro
