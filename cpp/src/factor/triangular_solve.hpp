// Solves with an upper triangular U (its strict lower part ignored) in place of products
// with its inverse R = U^-1. The pivoted and jittered-Cholesky Nystrom factors are kept
// as U (FitFactor), and a fit whose solver only lifts vectors (R p and R^T g: the direct
// solver) never forms R, saving the inverse's k^3 / 3 flops, a third of the factor's
// cost. A solve reads U's triangle once, as a
// product with R does. The blocks and tasks are fixed by the shapes alone, so the bits
// do not depend on the thread count.
#pragma once

#include "nytro/types.hpp"

namespace nytro::detail {

// out = U^-1 B (back substitution).
template <class T>
void solve_upper(const MatrixCRef<T>& U, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads);

// out = U^-T B (forward substitution with U^T).
template <class T>
void solve_upper_transposed(const MatrixCRef<T>& U, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads);

}  // namespace nytro::detail
