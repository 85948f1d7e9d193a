// out = M B for M stored in float32 and B, out in float64, on register tiles
// (micro_tile.hpp): the validation's products of the hold-out kernel with a few dozen
// coefficient vectors. Eigen's GEMM on M widened into a double buffer spent more time
// widening, packing and forking than multiplying. Each group of kRows rows of M is
// widened as it is packed,
// once, and B's panels are packed once for all the blocks (WidenedProduct).
#include "passes/dense.hpp"
#include "kernel/micro_tile.hpp"
#include "runtime/parallel.hpp"
#include "kernel/row_kernels.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nytro::detail {
namespace {

// Row groups per task, and the depth taken at a time: a task's groups, packed over one
// depth chunk (256 x 64 doubles, 128 KiB), and one chunk of a panel of B (48 KiB) stay
// in L2 while every tile of the task passes over them. Tiles over the whole depth at
// once read B's whole panel (1.9 MB at m = 10000) from L3 for every 8 rows: slower than
// the Eigen product they replace.
constexpr Index kGroupsPerTask = 8;
constexpr Index kDepthChunk = 256;
// One or two columns go through the matrix-vector row kernels (row_kernels.hpp), rows of
// M in tasks of kRowsPerTask: a tile would spend 23 or 22 of its 24 columns on padding.
constexpr Index kRowsPerTask = 64;

// Units (row groups, rows) per task: `most`, or fewer, in multiples of `step`, when `most`
// would leave some of the threads idle. Covertype's streamed hold-out kernel comes in
// blocks of 419 rows: 53 row groups, 7 tasks of 8 for 16 threads. How rows are split
// among tasks does not change any entry's arithmetic.
inline Index units_per_task(Index units, int threads, Index most, Index step) {
    const Index even = (units + threads - 1) / std::max(threads, 1);
    return std::clamp<Index>((even + step - 1) / step * step, step, most);
}

// out = M B for B's one or two columns, given as the rows of `columns` (contiguous).
template <class T, class S>
void multiply_one_or_two(const MatrixCRef<S>& M, const Matrix<T>& columns, MatrixRef<T> out, int threads) {
    const Index rows = M.rows(), depth = M.cols(), q = columns.rows(), stride = M.outerStride();
    const Index per_task = units_per_task(rows, threads, kRowsPerTask, 8);
    parallel_for((rows + per_task - 1) / per_task, threads, [&](Index task, int) {
        const Index r0 = task * per_task, count = std::min(per_task, rows - r0);
        T first[kRowsPerTask] = {}, second[kRowsPerTask] = {};
        const S* block = M.data() + r0 * stride;
        if (q == 1) rows::dots<T, S>(block, stride, count, columns.row(0).data(), 0, depth, first);
        else rows::dots2<T, S>(block, stride, count, columns.row(0).data(), columns.row(1).data(), 0, depth, first, second);
        for (Index i = 0; i < count; ++i) {
            out(r0 + i, 0) = first[i];
            if (q == 2) out(r0 + i, 1) = second[i];
        }
    });
}

// group[p * kRows + r] = M(r0 + r, p0 + p) in T, for r < count (zero above), p < length.
template <class T, class S>
void pack_rows_widened(const MatrixCRef<S>& M, Index r0, Index count, Index p0, Index length, T* group) {
    using Tile = MicroTile<T>;
    namespace ei = Eigen::internal;
    using Packet = typename Tile::Packet;
    constexpr Index kRows = Tile::kRows, kWidth = Tile::kWidth;
    const S* row[kRows];
    for (Index r = 0; r < kRows; ++r) row[r] = M.data() + (r0 + std::min(r, count - 1)) * M.outerStride() + p0;
    Index p = 0;
    // kRows == kWidth on every unit (8, 4, 2 doubles): a square block of packets, one per
    // row, transposed in registers.
    if constexpr (kRows == kWidth) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // the packet type's alignment, as in Eigen's own blocks
        using Block = ei::PacketBlock<Packet, int(kWidth)>;
#pragma GCC diagnostic pop
        for (; p + kWidth <= length; p += kWidth) {
            Block block;
            for (Index r = 0; r < kRows; ++r)
                block.packet[r] = r < count ? rows::load<T, S>(row[r] + p) : ei::pset1<Packet>(T(0));
            ei::ptranspose(block);
            for (Index i = 0; i < kWidth; ++i) ei::pstore(group + (p + i) * kRows, block.packet[i]);
        }
    }
    for (; p < length; ++p)
        for (Index r = 0; r < kRows; ++r) group[p * kRows + r] = r < count ? T(row[r][p]) : T(0);
}

// out = M B on register tiles, B in `packed` (depth-major panels of kCols columns,
// zero-padded).
template <class T, class S>
void multiply_tiles(const MatrixCRef<S>& M, const T* packed, Index q, MatrixRef<T> out, int threads) {
    using Tile = MicroTile<T>;
    constexpr Index kRows = Tile::kRows, kCols = Tile::kCols, kTileSize = kRows * kCols;
    const Index rows = M.rows(), depth = M.cols(), panels = (q + kCols - 1) / kCols;
    const Index groups = (rows + kRows - 1) / kRows, per_task = units_per_task(groups, threads, kGroupsPerTask, 1);
    const Index tasks = (groups + per_task - 1) / per_task;
    struct Scratch {
        AlignedVector<T> packed_rows, sums;  // a task's groups over one depth chunk; its tiles' running sums
    };
    std::vector<Scratch> scratch(static_cast<std::size_t>(threads));
    parallel_for(tasks, threads, [&](Index task, int thread) {
        Scratch& own = scratch[std::size_t(thread)];
        const Index g0 = task * per_task, g1 = std::min(groups, g0 + per_task), count = g1 - g0;
        own.packed_rows.resize(std::size_t(kGroupsPerTask * kDepthChunk * kRows));
        own.sums.assign(std::size_t(kGroupsPerTask * panels * kTileSize), T(0));
        Tile tile;
        for (Index p0 = 0; p0 < depth; p0 += kDepthChunk) {
            const Index length = std::min(kDepthChunk, depth - p0);
            for (Index g = 0; g < count; ++g) {
                const Index r0 = (g0 + g) * kRows;
                pack_rows_widened<T, S>(M, r0, std::min(kRows, rows - r0), p0, length,
                                        own.packed_rows.data() + g * length * kRows);
            }
            for (Index panel = 0; panel < panels; ++panel) {
                const T* b = packed + panel * kCols * depth + p0 * kCols;
                for (Index g = 0; g < count; ++g) {
                    T* sums = own.sums.data() + (g * panels + panel) * kTileSize;
                    tile.load(sums);
                    tile.accumulate(length, own.packed_rows.data() + g * length * kRows, kRows, b);
                    tile.store(sums);
                }
            }
        }
        for (Index g = 0; g < count; ++g) {
            const Index r0 = (g0 + g) * kRows, live = std::min(kRows, rows - r0);
            for (Index panel = 0; panel < panels; ++panel) {
                const T* sums = own.sums.data() + (g * panels + panel) * kTileSize;
                const Index c0 = panel * kCols, cols = std::min(kCols, q - c0);
                for (Index r = 0; r < live; ++r)
                    for (Index c = 0; c < cols; ++c) out(r0 + r, c0 + c) = sums[r * kCols + c];
            }
        }
    });
}

}  // namespace

template <class T, class S>
WidenedProduct<T, S>::WidenedProduct(const MatrixCRef<T>& B) : B_(B) {
    constexpr Index kCols = MicroTile<T>::kCols;
    const Index q = B.cols(), depth = B.rows();
    if (q <= 2) {
        columns_ = B.transpose();
    } else if (q <= kWidenedNarrowColumns) {
        const Index panels = (q + kCols - 1) / kCols;
        panels_.resize(std::size_t(panels * kCols * depth));
        for (Index g = 0; g < panels; ++g)
            pack_panel<T>(B.data() + g * kCols, 1, B.outerStride(), std::min(kCols, q - g * kCols), depth,
                          int(kCols), panels_.data() + g * kCols * depth);
    }
}

template <class T, class S>
void WidenedProduct<T, S>::apply(const MatrixCRef<S>& M, MatrixRef<T> out, int n_threads) const {
    const Index rows = M.rows(), depth = M.cols(), q = B_.cols();
    if (B_.rows() != depth || out.rows() != rows || out.cols() != q)
        throw std::logic_error("nytro internal error: widened product of shapes " + std::to_string(rows) + "x" +
                               std::to_string(depth) + " and " + std::to_string(B_.rows()) + "x" +
                               std::to_string(q) + " into " + std::to_string(out.rows()) + "x" +
                               std::to_string(out.cols()));
    if (q > kWidenedNarrowColumns) {
        multiply_widened_panels<T, S>(M, B_, out, n_threads);
        return;
    }
    if (rows == 0 || q == 0) return;
    if (depth == 0) {
        out.setZero();
        return;
    }
    const int threads = threads_for(2.0 * double(rows) * double(depth) * double(q), resolve_threads(n_threads));
    if (q <= 2) multiply_one_or_two<T, S>(M, columns_, out, threads);
    else multiply_tiles<T, S>(M, panels_.data(), q, out, threads);
}

template <class T, class S>
void multiply_widened(const MatrixCRef<S>& M, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) {
    WidenedProduct<T, S>(B).apply(M, out, n_threads);
}

template class WidenedProduct<double, float>;
template void multiply_widened<double, float>(const MatrixCRef<float>&, const MatrixCRef<double>&, MatrixRef<double>,
                                              int);

}  // namespace nytro::detail
