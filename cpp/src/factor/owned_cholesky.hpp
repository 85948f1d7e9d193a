// The Cholesky factorisation of a matrix the caller owns, interruptible: ?potrf (or
// Eigen's LLT) offers no interruption point of its own, and takes seconds at m = 10000
// (the jittered-Cholesky factor, the Tikhonov solver "cholesky" for each lambda).
#pragma once

#include "nytro/cholesky.hpp"

namespace nytro::detail {

// cholesky_lower_in_place(A), the same bits. With a callback, A's storage is moved to a
// worker thread that Ctrl-C may abandon (runtime/abandonable.hpp) and moved back when it
// ends, never copied; `report` goes to the callback about every 20 ms meanwhile. After
// a throw from the callback, A is empty (the abandoned worker still holds its storage).
template <class T>
bool cholesky_lower_owned(Matrix<T>& A, const Callback& callback, const Progress& report);

}  // namespace nytro::detail
