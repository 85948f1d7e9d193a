// The interruptible eigendecomposition of a matrix the caller has already copied (a
// float32 matrix widened to float64, say): the worker that may be abandoned on Ctrl-C
// takes that copy itself instead of making another.
#pragma once

#include "nytro/eigen_solver.hpp"

#include <memory>

namespace nytro::detail {

template <class T>
void symmetric_eigen_owned(std::shared_ptr<const Matrix<T>> A, Vector<T>& w, Matrix<T>& V, const Callback& callback);

}  // namespace nytro::detail
