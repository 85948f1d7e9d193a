// One triangle of G += scale B^T B on register tiles (micro_tile.hpp). The pivoted
// factor spends most of its time here (a rank-128 update per panel of 128 pivots), as
// does the Gram solver's accumulation of A^T A.
#include "passes/dense.hpp"
#include "kernel/micro_tile.hpp"
#include "runtime/parallel.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <functional>
#include <vector>

namespace nytro::detail {
namespace {

// Depth processed per packing: a column panel (depth x kCols) then takes 24 KiB for
// doubles on AVX-512, half of L1, and stays there while a block's row groups stream past.
constexpr Index kPanelBytes = 24 * 1024;
// Rows of G per task: their row groups (256 x depth) stay in L2 across the task's columns.
constexpr Index kTaskRows = 256;
constexpr Index kTaskColumnPanels = 11;
// Multiply-adds between two calls of an update's `between` (its interruption point):
// about 0.1 s on one core, a few hundredths on the machine's.
constexpr double kBatchFlops = 1e9;

// Whether G(i, j) is in the updated triangle.
inline bool wanted(Index i, Index j, bool upper) { return upper ? i <= j : i >= j; }

template <class T>
void update_chunk(const MatrixCRef<T>& B, MatrixRef<T> G, T scale, bool upper, int n_threads,
                  const std::function<void()>& between) {
    using Tile = MicroTile<T>;
    constexpr Index kRows = Tile::kRows, kCols = Tile::kCols;
    const Index depth = B.rows(), size = B.cols();
    const Index panels = (size + kCols - 1) / kCols;
    // B's columns in depth-major panels of kCols: the vector side of every tile, and the
    // broadcast side too (a row group of kRows sits inside one panel).
    AlignedVector<T> packed(std::size_t(panels * kCols * depth));
    const Index stride = B.outerStride();
    parallel_for(panels, threads_for(double(depth) * size * 64, n_threads), [&](Index g, int) {
        const Index c0 = g * kCols;
        pack_panel<T>(B.data() + c0, 1, stride, std::min(kCols, size - c0), depth, int(kCols),
                      packed.data() + g * kCols * depth);
    });
    auto panel_of = [&](Index index) { return packed.data() + (index / kCols) * kCols * depth + index % kCols; };

    // Blocks of kTaskRows x (kTaskColumnPanels kCols) that reach the triangle.
    const Index task_cols = kTaskColumnPanels * kCols;
    std::vector<std::pair<Index, Index>> blocks;
    for (Index r0 = 0; r0 < size; r0 += kTaskRows)
        for (Index c0 = 0; c0 < size; c0 += task_cols) {
            const Index r1 = std::min(size, r0 + kTaskRows), c1 = std::min(size, c0 + task_cols);
            if (upper ? r0 <= c1 - 1 : r1 - 1 >= c0) blocks.emplace_back(r0, c0);
        }
    const double flops = double(depth) * size * size;
    namespace ei = Eigen::internal;
    using Packet = typename Tile::Packet;
    auto update_block = [&](Index task) {
        // The scale made here, not captured: a captured packet is read from the caller's
        // frame at every use, the pointer to it reloaded after each store to G (which the
        // compiler cannot tell apart from the frame); in a register it costs nothing.
        const Packet s = ei::pset1<Packet>(scale);
        const auto [r0, c0] = blocks[std::size_t(task)];
        const Index r1 = std::min(size, r0 + kTaskRows), c1 = std::min(size, c0 + task_cols);
        Tile tile;
        alignas(64) T scratch[kRows * kCols];
        for (Index c = c0; c < c1; c += kCols) {
            const T* b = panel_of(c);
            const Index cols = std::min(kCols, size - c);
            for (Index r = r0; r < r1; r += kRows) {
                const Index rows = std::min(kRows, size - r);
                // Skip tiles wholly outside the triangle.
                if (upper ? r > c + cols - 1 : r + rows - 1 < c) continue;
                tile.dots(depth, panel_of(r), kCols, b);
                const bool whole = rows == kRows && cols == kCols &&
                                   (upper ? r + kRows - 1 <= c : r >= c + kCols - 1);
                if (whole) {
                    for (int i = 0; i < kRows; ++i) {
                        T* out = &G(r + i, c);
                        for (int v = 0; v < Tile::kPackets; ++v)
                            ei::pstoreu(out + v * Tile::kWidth,
                                        ei::pmadd(s, tile.acc[i][v], ei::ploadu<Packet>(out + v * Tile::kWidth)));
                    }
                    continue;
                }
                // On the diagonal or at an edge: the same packet arithmetic on a copy of
                // the rows, then only the wanted, existing entries written back.
                tile.store(scratch);
                alignas(64) T row[kCols];
                for (Index i = 0; i < rows; ++i) {
                    for (Index j = 0; j < kCols; ++j) row[j] = j < cols ? G(r + i, c + j) : T(0);
                    for (int v = 0; v < Tile::kPackets; ++v)
                        ei::pstore(row + v * Tile::kWidth,
                                   ei::pmadd(s, ei::pload<Packet>(scratch + i * kCols + v * Tile::kWidth),
                                             ei::pload<Packet>(row + v * Tile::kWidth)));
                    for (Index j = 0; j < cols; ++j)
                        if (wanted(r + i, c + j, upper)) G(r + i, c + j) = row[j];
                }
            }
        }
    };
    // With `between`, the blocks run in batches of about kBatchFlops, `between` called after
    // each: every entry is still one block's, computed the same way (the same bits).
    const Index count = Index(blocks.size());
    const Index batches = between ? std::clamp<Index>(Index(flops / kBatchFlops), 1, count) : 1;
    for (Index batch = 0; batch < batches; ++batch) {
        const Index first = batch * count / batches, last = (batch + 1) * count / batches;
        parallel_for(last - first, threads_for(flops * double(last - first) / double(count), n_threads),
                     [&](Index i, int) { update_block(first + i); });
        if (between) between();
    }
}

}  // namespace

template <class T>
void rank_update(const MatrixCRef<T>& B, MatrixRef<T> G, T scale, bool upper, int n_threads,
                 const std::function<void()>& between) {
    const Index depth = B.rows(), size = B.cols();
    if (depth == 0 || size == 0) return;
    const Index chunk = std::max<Index>(16, kPanelBytes / (Index(MicroTile<T>::kCols) * Index(sizeof(T))));
    for (Index p0 = 0; p0 < depth; p0 += chunk)
        update_chunk<T>(B.middleRows(p0, std::min(chunk, depth - p0)), G, scale, upper, n_threads, between);
}

template void rank_update<float>(const MatrixCRef<float>&, MatrixRef<float>, float, bool, int,
                                 const std::function<void()>&);
template void rank_update<double>(const MatrixCRef<double>&, MatrixRef<double>, double, bool, int,
                                  const std::function<void()>&);

}  // namespace nytro::detail
