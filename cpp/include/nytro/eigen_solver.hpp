// Symmetric eigendecomposition; LAPACK's ?syevd when one is registered (nytro/lapack.hpp),
// Eigen's own solver otherwise.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

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
