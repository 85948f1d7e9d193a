#include "nytro/kernel.hpp"

#include "nytro/errors.hpp"
#include "huge_pages.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace nytro {
namespace {

// A block of 128 x 512 doubles is 512 KiB: the GEMM result stays in L2 while the exp
// is applied and the block is written to its final place.
constexpr Index kRowBlock = 128;
constexpr Index kColBlock = 512;

template <class T>
void check_kernel_arguments(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma) {
    require(std::isfinite(sigma) && sigma > 0, "sigma must be a finite number > 0, got " + format_number(sigma));
    require(X.cols() == Z.cols(), "X has " + std::to_string(X.cols()) +
                                      " features but the centres have " + std::to_string(Z.cols()));
}

// The data in units of sqrt(2) sigma, so that K = exp(-||x' - z'||^2): the squares then
// stay finite for data of any magnitude comparable to sigma (1e200 and 1e200 included).
template <class T>
Matrix<T> scaled(const MatrixCRef<T>& A, double inverse, const char* name, double sigma) {
    Matrix<T> out = A * static_cast<T>(inverse);
    if (!out.allFinite() || !out.rowwise().squaredNorm().allFinite())
        throw std::invalid_argument(std::string(name) + " / sigma overflows (sigma=" + format_number(sigma) +
                                    "): rescale the features or use a larger sigma");
    return out;
}

// out[j] = exp(min(2 dots[j] - z_norms[j] - x_norm, 0)) = exp(-||x' - z'_j||^2), clamped
// at 0 against rounding. Every entry goes through the same vectorised exp, the last few
// through a padded packet: Eigen's scalar exp differs from its vectorised one in the last
// bit, and an array expression peels scalar iterations up to the destination's alignment,
// which would make the bits depend on where the caller's output array starts.
template <class T>
void exp_of_negative_distances(const T* dots, const T* z_norms, T x_norm, T* out, Index count) {
    using Packet = typename Eigen::internal::packet_traits<T>::type;
    constexpr Index width = Eigen::internal::packet_traits<T>::size;
    namespace ei = Eigen::internal;
    const Packet two = ei::pset1<Packet>(T(2)), x = ei::pset1<Packet>(x_norm), zero = ei::pset1<Packet>(T(0));
    auto exp_of = [&](const T* d, const T* z) {
        return ei::pexp(ei::pmin(ei::psub(ei::psub(ei::pmul(two, ei::ploadu<Packet>(d)), ei::ploadu<Packet>(z)), x), zero));
    };
    Index j = 0;
    for (; j + width <= count; j += width) ei::pstoreu(out + j, exp_of(dots + j, z_norms + j));
    if (j == count) return;
    alignas(64) T d[width] = {}, z[width] = {}, e[width];
    std::copy(dots + j, dots + count, d);
    std::copy(z_norms + j, z_norms + count, z);
    ei::pstoreu(e, exp_of(d, z));
    std::copy(e, e + (count - j), out + j);
}

}  // namespace

template <class T>
void gaussian_kernel_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          MatrixRef<T> out, int n_threads) {
    check_kernel_arguments<T>(X, Z, sigma);
    require(out.rows() == X.rows() && out.cols() == Z.rows(), "kernel output has the wrong shape");
    const Index n = X.rows(), m = Z.rows();
    if (n == 0 || m == 0) return;
    const double inverse = 1.0 / (std::sqrt(2.0) * sigma);
    require(std::isfinite(inverse) && static_cast<T>(inverse) < std::numeric_limits<T>::infinity(),
            "sigma=" + format_number(sigma) + " is too small to represent 1 / (2 sigma^2)");
    const Matrix<T> Zs = scaled<T>(Z, inverse, "Z", sigma);
    const Vector<T> z_norms = Zs.rowwise().squaredNorm();
    const Index row_blocks = (n + kRowBlock - 1) / kRowBlock;
    const Index col_blocks = (m + kColBlock - 1) / kColBlock;
    const int threads = detail::threads_for(2.0 * n * m * (X.cols() + 10), detail::resolve_threads(n_threads));
    std::vector<Matrix<T>> dots(threads);
    detail::parallel_for(row_blocks * col_blocks, threads, [&](Index task, int thread) {
        const Index r0 = (task / col_blocks) * kRowBlock, c0 = (task % col_blocks) * kColBlock;
        const Index rows = std::min(kRowBlock, n - r0), cols = std::min(kColBlock, m - c0);
        const Matrix<T> Xs = scaled<T>(X.middleRows(r0, rows), inverse, "X", sigma);
        const Vector<T> x_norms = Xs.rowwise().squaredNorm();
        Matrix<T>& block = dots[thread];
        block.noalias() = Xs * Zs.middleRows(c0, cols).transpose();
        for (Index i = 0; i < rows; ++i)
            exp_of_negative_distances<T>(block.row(i).data(), z_norms.data() + c0, x_norms[i], &out(r0 + i, c0), cols);
    });
}

template <class T>
Matrix<T> gaussian_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          int n_threads) {
    check_kernel_arguments<T>(X, Z, sigma);
    check_allocation(double(X.rows()) * double(Z.rows()) * sizeof(T),
                     "the kernel matrix (" + shape_text<T>(X.rows(), Z.rows()) + ")");
    Matrix<T> K(X.rows(), Z.rows());
    detail::advise_huge_pages(K.data(), std::size_t(K.size()) * sizeof(T));  // before the first write
    gaussian_kernel_into<T>(X, Z, sigma, K, n_threads);
    return K;
}

template <class T>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers,
                         const MatrixCRef<T>& coef, double sigma, int n_threads,
                         const Callback& callback) {
    check_kernel_arguments<T>(X, centers, sigma);
    require(coef.rows() == centers.rows(), "coef has " + std::to_string(coef.rows()) +
                                               " rows but there are " +
                                               std::to_string(centers.rows()) + " centres");
    const Index n = X.rows(), m = centers.rows();
    Matrix<T> out(n, coef.cols());
    // Blocks of about 32 MiB of kernel, so memory stays bounded for any n.
    const Index block = std::max<Index>(kRowBlock, (Index(1) << 22) / std::max<Index>(m, 1));
    Matrix<T> K;
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        K.resize(rows, m);
        gaussian_kernel_into<T>(X.middleRows(r0, rows), centers, sigma, K, n_threads);
        out.middleRows(r0, rows).noalias() = K * coef;
        if (callback) callback({"predict", r0 + rows, n});
    }
    return out;
}

#define NYTRO_INSTANTIATE(T)                                                                   \
    template void gaussian_kernel_into<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, \
                                          MatrixRef<T>, int);                                 \
    template Matrix<T> gaussian_kernel<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, \
                                          int);                                               \
    template Matrix<T> kernel_predict<T>(const MatrixCRef<T>&, const MatrixCRef<T>&,          \
                                         const MatrixCRef<T>&, double, int, const Callback&);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)

}  // namespace nytro
