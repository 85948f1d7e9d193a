// Validation RMSE of many coefficient vectors at once. Two representations:
//   explicit : K_val = k(X_val, centres) is stored; predictions are one GEMM.
//   quadratic: only G_val = K_val^T K_val, B_val = K_val^T Y_val and ||Y_val||^2 are
//              stored (memory O(m^2) for any n_val), and ||K_val a - y||^2 =
//              a^T G_val a - 2 a^T b + y^T y.
// The explicit form is cheaper while n_val <= m; solvers pick with prefer_explicit().
#pragma once

#include "nytro/types.hpp"

#include <vector>

namespace nytro::detail {

template <class T>
class Validation {
public:
    static Validation explicit_kernel(Matrix<T> K_val, Matrix<T> Y_val);
    static Validation quadratic(Matrix<T> G_val, Matrix<T> B_val, double y_squared, Index n_val);
    static bool prefer_explicit(Index n_val, Index m) { return n_val <= m; }

    // alphas holds c coefficient blocks of q columns each (block j = columns [jq, jq+q));
    // appends c RMSEs to `out`.
    void rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int n_threads) const;

private:
    bool explicit_ = true;
    Matrix<T> K_or_G_;  // K_val (n_val x m) or G_val (m x m)
    Matrix<T> Y_or_B_;  // Y_val (n_val x q) or B_val (m x q)
    double y_squared_ = 0;
    Index n_val_ = 0;
};

}  // namespace nytro::detail
