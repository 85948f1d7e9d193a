#include "passes/fused_pass.hpp"

#include "runtime/parallel.hpp"
#include "kernel/row_kernels.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace nytro::detail {

template <class T, class S>
FusedPass<T, S>::FusedPass(const MatrixCRef<S>& K, int n_threads)
    : K_(K), threads_(threads_for(4.0 * K.rows() * K.cols(), resolve_threads(n_threads))) {
    // The row kernels step from row to row by the column count.
    if (K.rows() > 1 && K.outerStride() != K.cols())
        throw std::logic_error("nytro internal error: fused pass over a kernel whose rows are not contiguous");
    const Index n = K.rows(), k = std::max<Index>(K.cols(), 1);
    // Blocks of 16 rows (8 where 16 would pass 512 KiB): read from memory by the first
    // product, from L2 by the second. Multiples of 8, the row kernels' group.
    block_rows_ = Index(16) * k * Index(sizeof(S)) <= (Index(1) << 19) ? 16 : 8;
    slots_ = std::clamp<Index>(n / (4 * block_rows_), 1, 64);
    partial_.resize(static_cast<std::size_t>(slots_));
    residual_.resize(static_cast<std::size_t>(threads_));
    previous_.resize(static_cast<std::size_t>(threads_));
    // Sized once (block_rows_ x k per thread); a short last block uses its top rows.
    if constexpr (!std::is_same_v<S, T>)
        widened_.assign(static_cast<std::size_t>(threads_), Matrix<T>(block_rows_, K.cols()));
}

template <class T, class S>
void FusedPass<T, S>::run(const MatrixCRef<T>& a, const MatrixCRef<T>* Y) {
    const Index n = K_.rows(), k = K_.cols(), q = a.cols();
    // The row kernels index a and Y without bounds checks: a mismatch is a caller's bug,
    // reported instead of read past the end.
    if (a.rows() != k || (Y && (Y->rows() != n || Y->cols() != q)))
        throw std::logic_error("nytro internal error: fused pass over a " + std::to_string(n) + "x" +
                               std::to_string(k) + " kernel with an iterate of " + std::to_string(a.rows()) +
                               " rows");
    // Up to kRowColumns outputs go through the row kernels, one column after the other
    // while the block stays in cache: Eigen's GEMM on a 16-row block with a one- or
    // two-column right side runs several times slower than matrix-vector products. Their
    // shares are
    // kept transposed (q x k), so that each output's is contiguous.
    const bool by_rows = q <= kRowColumns;
    if (by_rows) a_rows_ = a.transpose();
    parallel_for(slots_, threads_, [&](Index slot, int thread) {
        Matrix<T>& share = partial_[slot];
        const Index begin = range_begin(n, slots_, slot), end = range_begin(n, slots_, slot + 1);
        if (by_rows) {
            share.setZero(q, k);
            rows_of_slot(begin, end, Y, share, thread);
            return;
        }
        share.setZero(k, q);
        Matrix<T>& residual = residual_[thread];
        residual.resize(block_rows_, q);
        // residual = block a - Y[r0:], share += block^T residual, block still in cache.
        auto accumulate = [&](const auto& block, Index r0, Index rows) {
            auto r = residual.topRows(rows);
            r.noalias() = block * a;
            if (Y) r -= Y->middleRows(r0, rows);
            share.noalias() += block.transpose() * r;
        };
        for (Index r0 = begin; r0 < end; r0 += block_rows_) {
            const Index rows = std::min(block_rows_, end - r0);
            if constexpr (std::is_same_v<S, T>) {
                accumulate(K_.middleRows(r0, rows), r0, rows);
            } else {
                auto block = widened_[thread].topRows(rows);
                block = K_.middleRows(r0, rows).template cast<T>();
                accumulate(block, r0, rows);
            }
        }
    });
    Matrix<T>& sum = by_rows ? sum_ : result_;  // the row kernels' shares are q x k
    sum = partial_[0];
    for (Index slot = 1; slot < slots_; ++slot) sum += partial_[slot];
    if (by_rows) result_ = sum_.transpose();
}

// The row kernels read the stored entries straight into registers (widened there when
// S != T), outputs in pairs, each entry read once per pair. Pipelined by one block: the
// sweep that computes block b's residual (its entries coming from memory) also adds block
// b-1's share of the gradient (its entries still in L2, read by the previous sweep). Done
// one after the other, the second sweep left the memory bus idle. Each share receives the
// same additions in the same order either way, so the bits do not change.
template <class T, class S>
void FusedPass<T, S>::rows_of_slot(Index begin, Index end, const MatrixCRef<T>* Y, Matrix<T>& share, int thread) {
    const Index k = K_.cols(), q = a_rows_.rows();
    Matrix<T>& residual = residual_[thread];
    Matrix<T>& previous_residual = previous_[thread];
    residual.resize(block_rows_, q);
    previous_residual.resize(block_rows_, q);
    // Column-major use of both buffers: output j of a block of `rows` at offset j * rows.
    // They swap roles after each block: this block's residual becomes the previous one.
    T* r = residual.data();
    T* pr = previous_residual.data();
    const S* previous = nullptr;  // the block whose share is still to be added
    Index previous_rows = 0;
    auto add_previous = [&]() {
        for (Index j = 0; j < q; j += 2) {
            const T* pj = pr + j * previous_rows;
            if (j + 1 < q)
                rows::add_weighted2<T, S>(previous, k, previous_rows, pj, pj + previous_rows, share.row(j).data(),
                                          share.row(j + 1).data(), 0, k);
            else
                rows::add_weighted<T, S>(previous, k, previous_rows, pj, share.row(j).data(), 0, k);
        }
    };
    for (Index r0 = begin; r0 < end; r0 += block_rows_) {
        const Index rows = std::min(block_rows_, end - r0);
        const S* block = K_.data() + r0 * k;
        std::fill(r, r + rows * q, T(0));
        // The kernels pair rows of equal index, so a short last block goes on its own.
        const bool pipelined = previous && previous_rows == rows;
        if (previous && !pipelined) add_previous();
        for (Index j = 0; j < q; j += 2) {
            T* rj = r + j * rows;
            const T* pj = pr + j * rows;
            const T* x0 = a_rows_.row(j).data();
            if (j + 1 < q) {
                const T* x1 = a_rows_.row(j + 1).data();
                if (pipelined)
                    rows::dots2_next_add2_previous<T, S>(block, previous, k, rows, x0, x1, pj, pj + rows, rj,
                                                         rj + rows, share.row(j).data(), share.row(j + 1).data(), 0,
                                                         k);
                else
                    rows::dots2<T, S>(block, k, rows, x0, x1, 0, k, rj, rj + rows);
            } else if (pipelined) {
                rows::dots_next_add_previous<T, S>(block, previous, k, rows, x0, pj, rj, share.row(j).data(), 0, k);
            } else {
                rows::dots<T, S>(block, k, rows, x0, 0, k, rj);
            }
        }
        if (Y)
            for (Index j = 0; j < q; ++j)
                for (Index i = 0; i < rows; ++i) r[j * rows + i] -= (*Y)(r0 + i, j);
        std::swap(r, pr);
        previous = block;
        previous_rows = rows;
    }
    if (previous) add_previous();
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
template class FusedPass<double, Eigen::half>;
template class FusedPass<float, Eigen::half>;

}  // namespace nytro::detail
