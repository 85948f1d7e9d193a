#include "fused_pass.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <type_traits>

namespace nytro::detail {

template <class T, class S>
FusedPass<T, S>::FusedPass(const Matrix<S>& K, int n_threads)
    : K_(K), threads_(threads_for(4.0 * K.rows() * K.cols(), resolve_threads(n_threads))) {
    const Index n = K.rows(), k = std::max<Index>(K.cols(), 1);
    // Blocks of 16 rows: read from memory by the first product, from L1/L2 by the second.
    block_rows_ = std::clamp<Index>((Index(1) << 18) / (k * Index(sizeof(T))), 4, 16);
    slots_ = std::clamp<Index>(n / (4 * block_rows_), 1, 64);
    partial_.resize(static_cast<std::size_t>(slots_));
    residual_.resize(static_cast<std::size_t>(threads_));
    widened_.resize(static_cast<std::size_t>(threads_));
}

template <class T, class S>
void FusedPass<T, S>::run(const MatrixCRef<T>& a, const MatrixCRef<T>* Y) {
    const Index n = K_.rows(), k = K_.cols(), q = a.cols();
    // One output: vectors, so Eigen uses its matrix-vector kernels (the GEMM path that a
    // one-column row-major matrix would take is several times slower).
    const bool vector = q == 1 && a.outerStride() == 1 && (!Y || Y->outerStride() == 1);
    parallel_for(slots_, threads_, [&](Index slot, int thread) {
        Matrix<T>& share = partial_[slot];
        Matrix<T>& residual = residual_[thread];
        share.setZero(k, q);
        residual.resize(block_rows_, q);
        // residual = block a - Y[r0:], share += block^T residual, block still in cache.
        auto accumulate = [&](const auto& block, Index r0, Index rows) {
            if (vector) {
                Eigen::Map<Vector<T>> r(residual.data(), rows);
                r.noalias() = block * Eigen::Map<const Vector<T>>(a.data(), k);
                if (Y) r -= Eigen::Map<const Vector<T>>(Y->data() + r0, rows);
                Eigen::Map<Vector<T>>(share.data(), k).noalias() += block.transpose() * r;
            } else {
                auto r = residual.topRows(rows);
                r.noalias() = block * a;
                if (Y) r -= Y->middleRows(r0, rows);
                share.noalias() += block.transpose() * r;
            }
        };
        const Index begin = range_begin(n, slots_, slot), end = range_begin(n, slots_, slot + 1);
        for (Index r0 = begin; r0 < end; r0 += block_rows_) {
            const Index rows = std::min(block_rows_, end - r0);
            if constexpr (std::is_same_v<S, T>) {
                accumulate(K_.middleRows(r0, rows), r0, rows);
            } else {
                Matrix<T>& widened = widened_[thread];
                widened = K_.middleRows(r0, rows).template cast<T>();
                accumulate(widened, r0, rows);
            }
        }
    });
    result_ = partial_[0];
    for (Index slot = 1; slot < slots_; ++slot) result_ += partial_[slot];
}

template <class T, class S>
const Matrix<T>& FusedPass<T, S>::normal_residual(const MatrixCRef<T>& a, const MatrixCRef<T>& Y) {
    run(a, &Y);
    return result_;
}

template <class T, class S>
const Matrix<T>& FusedPass<T, S>::normal(const MatrixCRef<T>& a) {
    run(a, nullptr);
    return result_;
}

template class FusedPass<float, float>;
template class FusedPass<double, double>;
template class FusedPass<double, float>;

}  // namespace nytro::detail
