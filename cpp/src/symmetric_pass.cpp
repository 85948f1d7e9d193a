#include "symmetric_pass.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace nytro::detail {

template <class T, class S>
SymmetricPass<T, S>::SymmetricPass(const Matrix<S>& H, int n_threads)
    : H_(H), threads_(threads_for(double(H.rows()) * double(H.rows()), resolve_threads(n_threads))) {
    const Index k = H.rows();
    // Blocks of up to 16 rows of the triangle (at most 256 KiB): read from memory by the
    // first product, from cache by the second.
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
    widened_.resize(static_cast<std::size_t>(threads_));
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
            // block = rows r0.. of the lower triangle: `off` strictly left of the
            // diagonal block, `diagonal` (lower half used) on it.
            auto products = [&](const auto& block, const auto& x, auto& y, auto& above) {
                const auto off = block.leftCols(r0);
                const auto diagonal = block.rightCols(rows).template selfadjointView<Eigen::Lower>();
                const Index own = r0 - begin;  // rows of this slot above the block
                const auto x_block = x.middleRows(r0, rows);
                y.middleRows(r0, rows).noalias() = diagonal * x_block;
                if (r0 == 0) return;
                y.middleRows(r0, rows).noalias() += off * x.topRows(r0);
                if (own > 0) y.middleRows(begin, own).noalias() += off.rightCols(own).transpose() * x_block;
                if (begin > 0) above.noalias() += off.leftCols(begin).transpose() * x_block;
            };
            // One output column goes through vector maps, so that Eigen uses its
            // matrix-vector kernels (a one-column dynamic matrix takes the GEMM path).
            auto on = [&](const auto& block) {
                if (vector) {
                    const Eigen::Map<const Vector<T>> x(b.data(), k);
                    Eigen::Map<Vector<T>> y(out.data(), k), above(share.data(), begin);
                    products(block, x, y, above);
                } else {
                    products(block, b, out, share);
                }
            };
            if constexpr (std::is_same_v<S, T>) {
                on(H_.block(r0, 0, rows, width));
            } else {
                Matrix<T>& widened = widened_[thread];
                widened = H_.block(r0, 0, rows, width).template cast<T>();
                on(widened);
            }
        }
    });
    // The rows above each slot receive its transposed share, in slot order.
    for (Index slot = 1; slot < slots; ++slot) out.topRows(bounds_[slot]) += transposed_[slot];
}

template class SymmetricPass<float, float>;
template class SymmetricPass<double, double>;
template class SymmetricPass<double, float>;

}  // namespace nytro::detail
