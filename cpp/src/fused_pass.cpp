#include "fused_pass.hpp"

#include "parallel.hpp"
#include "row_kernels.hpp"

#include <algorithm>
#include <type_traits>

namespace nytro::detail {

template <class T, class S>
FusedPass<T, S>::FusedPass(const Matrix<S>& K, int n_threads)
    : K_(K), threads_(threads_for(4.0 * K.rows() * K.cols(), resolve_threads(n_threads))) {
    const Index n = K.rows(), k = std::max<Index>(K.cols(), 1);
    // Blocks of 16 rows (8 where 16 would pass 512 KiB): read from memory by the first
    // product, from L2 by the second. Multiples of 8, the row kernels' group.
    block_rows_ = Index(16) * k * Index(sizeof(S)) <= (Index(1) << 19) ? 16 : 8;
    slots_ = std::clamp<Index>(n / (4 * block_rows_), 1, 64);
    partial_.resize(static_cast<std::size_t>(slots_));
    residual_.resize(static_cast<std::size_t>(threads_));
    // Sized once (block_rows_ x k per thread); a short last block uses its top rows.
    if constexpr (!std::is_same_v<S, T>)
        widened_.assign(static_cast<std::size_t>(threads_), Matrix<T>(block_rows_, K.cols()));
}

template <class T, class S>
void FusedPass<T, S>::run(const MatrixCRef<T>& a, const MatrixCRef<T>* Y) {
    const Index n = K_.rows(), k = K_.cols(), q = a.cols();
    // One output: the row kernels (a one-column row-major matrix would take Eigen's
    // GEMM path, several times slower than a matrix-vector product).
    const bool vector = q == 1 && a.outerStride() == 1 && (!Y || Y->outerStride() == 1);
    parallel_for(slots_, threads_, [&](Index slot, int thread) {
        Matrix<T>& share = partial_[slot];
        Matrix<T>& residual = residual_[thread];
        share.setZero(k, q);
        residual.resize(block_rows_, q);
        // residual = block a - Y[r0:], share += block^T residual, block still in cache.
        auto accumulate = [&](const auto& block, Index r0, Index rows) {
            auto r = residual.topRows(rows);
            r.noalias() = block * a;
            if (Y) r -= Y->middleRows(r0, rows);
            share.noalias() += block.transpose() * r;
        };
        const Index begin = range_begin(n, slots_, slot), end = range_begin(n, slots_, slot + 1);
        for (Index r0 = begin; r0 < end; r0 += block_rows_) {
            const Index rows = std::min(block_rows_, end - r0);
            if (vector) {
                // The row kernels read the stored entries straight into registers (widened
                // there when S != T): residual, then its share of the gradient.
                const S* block = K_.data() + r0 * k;
                T* r = residual.data();
                std::fill(r, r + rows, T(0));
                rows::dots<T, S>(block, k, rows, a.data(), 0, k, r);
                if (Y)
                    for (Index i = 0; i < rows; ++i) r[i] -= Y->data()[r0 + i];
                rows::add_weighted<T, S>(block, k, rows, r, share.data(), 0, k);
            } else if constexpr (std::is_same_v<S, T>) {
                accumulate(K_.middleRows(r0, rows), r0, rows);
            } else {
                auto block = widened_[thread].topRows(rows);
                block = K_.middleRows(r0, rows).template cast<T>();
                accumulate(block, r0, rows);
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
