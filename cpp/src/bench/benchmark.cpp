#include "bench/timing.hpp"

#include "solvers/nystrom_setup.hpp"
#include "passes/dense.hpp"
#include "passes/fused_pass.hpp"
#include "runtime/huge_pages.hpp"
#include "passes/symmetric_pass.hpp"
#include "nytro/errors.hpp"
#include "nytro/options.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace nytro {

namespace {

// Median seconds of `repeats` calls of `step`, after one warm-up call (first touch of the
// scratch space); `prepare` runs before each call, outside the timed span.
template <class Step, class Prepare>
double median_seconds(int repeats, Step&& step, Prepare&& prepare) {
    require(repeats >= 1, "repeats must be >= 1");
    prepare();
    step();
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
        prepare();
        const auto start = std::chrono::steady_clock::now();
        step();
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    return seconds[seconds.size() / 2];
}

template <class Step>
double median_seconds(int repeats, Step&& step) {
    return median_seconds(repeats, step, [] {});
}

}  // namespace

template <class T, class S>
double fused_pass_seconds(const Matrix<S>& K, const MatrixCRef<T>& a, const MatrixCRef<T>& y, int n_threads,
                          int repeats) {
    require(a.rows() == K.cols() && y.rows() == K.rows() && a.cols() == y.cols(), "fused pass: shapes differ");
    detail::FusedPass<T, S> pass(K, n_threads);
    return median_seconds(repeats, [&] { pass.normal_residual(a, y); });
}

template <class T, class S>
double symmetric_pass_seconds(const Matrix<S>& H, const MatrixCRef<T>& b, int n_threads, int repeats) {
    require(H.rows() == H.cols() && b.rows() == H.rows(), "symmetric pass: shapes differ");
    detail::SymmetricPass<T, S> pass(H, n_threads);
    Matrix<T> out(b.rows(), b.cols());
    return median_seconds(repeats, [&] { pass.apply(b, out); });
}

template <class T>
double factor_seconds(const MatrixCRef<T>& K_mm, int n_threads, int repeats) {
    require(K_mm.rows() == K_mm.cols(), "factor: K_mm must be square");
    const FactorOptions options;  // pivoted, as a fit's default
    Matrix<T> copy;
    return median_seconds(
        repeats, [&] { detail::factor_of_kernel<T>(std::move(copy), options, n_threads); },
        [&] {
            // As the fit's K_mm, which gaussian_kernel allocates: on huge pages where the
            // system gives them (the factor reads columns down their rows).
            copy.resize(K_mm.rows(), K_mm.cols());
            detail::advise_huge_pages(copy.data(), std::size_t(copy.size()) * sizeof(T));
            copy = K_mm;
        });
}

template <class T>
double rank_update_seconds(const MatrixCRef<T>& B, int n_threads, int repeats) {
    Matrix<T> G = Matrix<T>::Zero(B.cols(), B.cols());
    return median_seconds(repeats, [&] { detail::rank_update<T>(B, G, T(-1), true, n_threads); });
}

template double fused_pass_seconds<float, float>(const Matrix<float>&, const MatrixCRef<float>&,
                                                 const MatrixCRef<float>&, int, int);
template double fused_pass_seconds<double, double>(const Matrix<double>&, const MatrixCRef<double>&,
                                                   const MatrixCRef<double>&, int, int);
template double fused_pass_seconds<double, float>(const Matrix<float>&, const MatrixCRef<double>&,
                                                  const MatrixCRef<double>&, int, int);
template double symmetric_pass_seconds<float, float>(const Matrix<float>&, const MatrixCRef<float>&, int, int);
template double symmetric_pass_seconds<double, double>(const Matrix<double>&, const MatrixCRef<double>&, int, int);
template double symmetric_pass_seconds<double, float>(const Matrix<float>&, const MatrixCRef<double>&, int, int);
template double factor_seconds<float>(const MatrixCRef<float>&, int, int);
template double factor_seconds<double>(const MatrixCRef<double>&, int, int);
template double rank_update_seconds<float>(const MatrixCRef<float>&, int, int);
template double rank_update_seconds<double>(const MatrixCRef<double>&, int, int);

}  // namespace nytro
