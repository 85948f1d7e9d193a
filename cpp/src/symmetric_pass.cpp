#include "symmetric_pass.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace nytro::detail {
namespace {

// For `rows` (<= 16) rows of a row-major block (row stride `stride`) and its columns
// [c0, c1): dst[c] += sum_i block(i, c) x_block[i] and dots[i] += sum_c block(i, c) x[c],
// reading each entry once, straight into registers, for both products. (Two Eigen
// matrix-vector products per block run at ~22 GB/s on one core, a plain one at ~32.)
// Rows go in groups of 8: 8 row sums and 8 broadcasts stay in registers; a short group is
// padded with a real row at weight 0, whose sum is dropped.
template <class T>
void fused_columns(const T* block, Index stride, Index rows, const T* x_block, const T* x, T* dst, Index c0,
                   Index c1, T* dots) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;
    constexpr Index width = ei::packet_traits<T>::size, group = 8;
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const T* row[group];
        T weight[group];
        Packet scale[group], sum[group];
        for (Index i = 0; i < group; ++i) {
            row[i] = block + (g0 + (i < count ? i : 0)) * stride;
            weight[i] = i < count ? x_block[g0 + i] : T(0);
            scale[i] = ei::pset1<Packet>(weight[i]);
            sum[i] = ei::pset1<Packet>(T(0));
        }
        Index c = c0;
        for (; c + width <= c1; c += width) {
            const Packet xc = ei::ploadu<Packet>(x + c);
            Packet t = ei::ploadu<Packet>(dst + c);
            for (Index i = 0; i < group; ++i) {
                const Packet h = ei::ploadu<Packet>(row[i] + c);
                sum[i] = ei::pmadd(h, xc, sum[i]);
                t = ei::pmadd(h, scale[i], t);
            }
            ei::pstoreu(dst + c, t);
        }
        T tail[group] = {};
        for (; c < c1; ++c) {
            T t = dst[c];
            for (Index i = 0; i < group; ++i) {
                tail[i] += row[i][c] * x[c];
                t += row[i][c] * weight[i];
            }
            dst[c] = t;
        }
        for (Index i = 0; i < count; ++i) dots[g0 + i] += ei::predux(sum[i]) + tail[i];
    }
}

}  // namespace

template <class T, class S>
SymmetricPass<T, S>::SymmetricPass(const Matrix<S>& H, int n_threads)
    : H_(H), threads_(threads_for(double(H.rows()) * double(H.rows()), resolve_threads(n_threads))) {
    const Index k = H.rows();
    // Blocks of up to 16 rows of the triangle (at most 256 KiB): the matrix path's second
    // product reads them from cache; the vector path reads each entry once
    // (fused_columns) and keeps one row sum per block row on the stack, hence at most 16.
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
            // block = rows r0.. of the lower triangle: `off` strictly left of the diagonal
            // block, `diagonal` (lower half used) on it; `own` rows of this slot lie above.
            auto on = [&](const auto& block) {
                const auto diagonal = block.rightCols(rows).template selfadjointView<Eigen::Lower>();
                if (vector) {
                    // The diagonal through Eigen's matrix-vector kernel on vector maps (a
                    // one-column dynamic matrix would take the GEMM path), `off` through
                    // fused_columns: into the share above the slot, then into own rows.
                    const T* x = b.data();
                    T* y = out.data();
                    Eigen::Map<Vector<T>>(y + r0, rows).noalias() =
                        diagonal * Eigen::Map<const Vector<T>>(x + r0, rows);
                    T dots[16] = {};
                    if (begin > 0)
                        fused_columns<T>(block.data(), block.outerStride(), rows, x + r0, x, share.data(), 0, begin,
                                         dots);
                    if (r0 > begin)
                        fused_columns<T>(block.data(), block.outerStride(), rows, x + r0, x, y, begin, r0, dots);
                    for (Index i = 0; i < rows; ++i) y[r0 + i] += dots[i];
                    return;
                }
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
    // The rows above each slot receive its transposed share, in slot order.
    for (Index slot = 1; slot < slots; ++slot) out.topRows(bounds_[slot]) += transposed_[slot];
}

template class SymmetricPass<float, float>;
template class SymmetricPass<double, double>;
template class SymmetricPass<double, float>;

}  // namespace nytro::detail
