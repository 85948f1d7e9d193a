#include "nytro/benchmark.hpp"

#include "fused_pass.hpp"
#include "nytro/errors.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace nytro {

template <class T, class S>
double fused_pass_seconds(const Matrix<S>& K, const MatrixCRef<T>& a, const MatrixCRef<T>& y, int n_threads,
                          int repeats) {
    require(a.rows() == K.cols() && y.rows() == K.rows() && a.cols() == y.cols(), "fused pass: shapes differ");
    require(repeats >= 1, "repeats must be >= 1");
    detail::FusedPass<T, S> pass(K, n_threads);
    pass.normal_residual(a, y);  // warm-up: first touch of the scratch space
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        pass.normal_residual(a, y);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    return seconds[seconds.size() / 2];
}

template double fused_pass_seconds<float, float>(const Matrix<float>&, const MatrixCRef<float>&,
                                                 const MatrixCRef<float>&, int, int);
template double fused_pass_seconds<double, double>(const Matrix<double>&, const MatrixCRef<double>&,
                                                   const MatrixCRef<double>&, int, int);
template double fused_pass_seconds<double, float>(const Matrix<float>&, const MatrixCRef<double>&,
                                                  const MatrixCRef<double>&, int, int);

}  // namespace nytro
