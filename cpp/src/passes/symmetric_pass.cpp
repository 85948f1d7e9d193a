#include "passes/symmetric_pass.hpp"

#include "runtime/parallel.hpp"
#include "kernel/row_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace nytro::detail {

template <class T, class S>
SymmetricPass<T, S>::SymmetricPass(const Matrix<S>& H, int n_threads)
    : H_(H), threads_(threads_for(double(H.rows()) * double(H.rows()), resolve_threads(n_threads))) {
    const Index k = H.rows();
    // Blocks of up to 16 rows of the triangle (at most 256 KiB): the matrix path's second
    // product reads them from cache; the vector path reads each entry once
    // (rows::dots_and_add_weighted) and keeps one row sum per block row on the stack,
    // hence at most 16.
    block_rows_ = std::clamp<Index>((Index(1) << 18) / (std::max<Index>(k, 1) * Index(sizeof(T))), 4, 16);
    // Slot s ends at row k sqrt((s + 1) / slots): every slot holds the same area of the
    // triangle.
    const Index slots = std::clamp<Index>(k / 128, 1, 32);
    bounds_.push_back(0);
    for (Index s = 1; s <= slots; ++s) {
        const Index bound = s == slots ? k : Index(std::llround(double(k) * std::sqrt(double(s) / double(slots))));
        if (bound > bounds_.back()) bounds_.push_back(bound);
    }
    transposed_.resize(bounds_.size() - 1);
    if constexpr (!std::is_same_v<S, T>) widened_.assign(static_cast<std::size_t>(threads_), Matrix<T>(block_rows_, k));
}

template <class T, class S>
void SymmetricPass<T, S>::apply(const MatrixCRef<T>& b, MatrixRef<T> out) {
    const Index k = H_.rows(), q = b.cols(), slots = Index(transposed_.size());
    if (b.rows() != k || out.rows() != k || out.cols() != q)
        throw std::logic_error("nytro internal error: symmetric product of a " + std::to_string(k) +
                               "-square matrix with mismatched shapes");
    const bool vector = q == 1 && b.outerStride() == 1 && out.outerStride() == 1;
    parallel_for(slots, threads_, [&](Index slot, int thread) {
        const Index begin = bounds_[slot], end = bounds_[slot + 1];
        Matrix<T>& share = transposed_[slot];
        share.setZero(begin, q);
        for (Index r0 = begin; r0 < end; r0 += block_rows_) {
            const Index rows = std::min(block_rows_, end - r0), width = r0 + rows;
            if (vector) {
                // The diagonal block (widened into a small buffer when S != T) through
                // Eigen's selfadjoint matrix-vector kernel on vector maps (a one-column
                // dynamic matrix would take the GEMM path); the part left of it through
                // the row kernels, reading each stored entry once for both products:
                // into the share above the slot, then into own rows.
                const T* x = b.data();
                T* y = out.data();
                const S* block = H_.data() + r0 * k;
                auto multiply_diagonal = [&](const auto& diagonal) {
                    Eigen::Map<Vector<T>>(y + r0, rows).noalias() =
                        diagonal.template selfadjointView<Eigen::Lower>() * Eigen::Map<const Vector<T>>(x + r0, rows);
                };
                if constexpr (std::is_same_v<S, T>) {
                    multiply_diagonal(H_.block(r0, r0, rows, rows));
                } else {
                    auto diagonal = widened_[thread].topLeftCorner(rows, rows);
                    diagonal = H_.block(r0, r0, rows, rows).template cast<T>();
                    multiply_diagonal(diagonal);
                }
                T dots[16] = {};
                if (begin > 0)
                    rows::dots_and_add_weighted<T, S>(block, k, rows, x + r0, x, share.data(), 0, begin, dots);
                if (r0 > begin) rows::dots_and_add_weighted<T, S>(block, k, rows, x + r0, x, y, begin, r0, dots);
                for (Index i = 0; i < rows; ++i) y[r0 + i] += dots[i];
                continue;
            }
            // block = rows r0.. of the lower triangle: `off` strictly left of the diagonal
            // block, `diagonal` (lower half used) on it; `own` rows of this slot lie above.
            auto on = [&](const auto& block) {
                const auto diagonal = block.rightCols(rows).template selfadjointView<Eigen::Lower>();
                const auto off = block.leftCols(r0);
                const auto x_block = b.middleRows(r0, rows);
                const Index own = r0 - begin;
                out.middleRows(r0, rows).noalias() = diagonal * x_block;
                if (r0 == 0) return;
                out.middleRows(r0, rows).noalias() += off * b.topRows(r0);
                if (own > 0) out.middleRows(begin, own).noalias() += off.rightCols(own).transpose() * x_block;
                if (begin > 0) share.noalias() += off.leftCols(begin).transpose() * x_block;
            };
            if constexpr (std::is_same_v<S, T>) {
                on(H_.block(r0, 0, rows, width));
            } else {
                // Widened into a buffer sized once (block_rows_ x k): no allocation per block.
                auto widened = widened_[thread].topLeftCorner(rows, width);
                widened = H_.block(r0, 0, rows, width).template cast<T>();
                on(widened);
            }
        }
    });
    // The rows above each slot receive its transposed share, in slot order. Contiguous
    // rows are added as one flat vector: through the strided Ref, Eigen loops row by row,
    // which for one column was a fifth of the pass at k = 1910.
    const bool contiguous = out.outerStride() == q;
    for (Index slot = 1; slot < slots; ++slot) {
        const Index above = bounds_[slot];
        if (contiguous)
            Eigen::Map<Vector<T>>(out.data(), above * q) +=
                Eigen::Map<const Vector<T>>(transposed_[slot].data(), above * q);
        else
            out.topRows(above) += transposed_[slot];
    }
}

template class SymmetricPass<float, float>;
template class SymmetricPass<double, double>;
template class SymmetricPass<double, float>;

}  // namespace nytro::detail
