#include "passes/dense.hpp"

#include "runtime/huge_pages.hpp"
#include "runtime/parallel.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nytro::detail {
namespace {

constexpr Index kTile = 256;
constexpr Index kOutputTile = 512;  // multiply_right: outputs per task, each way

Index panels(Index rows) { return (rows + kPanel - 1) / kPanel; }
Index tiles_of(Index size) { return (size + kOutputTile - 1) / kOutputTile; }

// Flops between two calls of a product's `between` (its interruption point): about 0.1 s
// on one core, a few hundredths on the machine's.
constexpr double kBatchFlops = 2e9;

// body(task, thread) for task in [0, n_tasks) as parallel_for does it, in batches of
// about kBatchFlops of the product's `flops` with `between` called after each (outside
// the parallel regions, on the calling thread), or in one go without `between`. Every
// task is computed the same way whatever the batches: the same bits.
template <class Body>
void parallel_batches(Index n_tasks, double flops, int n_threads, const std::function<void()>& between,
                      Body&& body) {
    const Index batches = between ? std::clamp<Index>(Index(flops / kBatchFlops), 1, std::max<Index>(n_tasks, 1)) : 1;
    const int threads = threads_for(flops, n_threads);
    for (Index batch = 0; batch < batches; ++batch) {
        const Index first = n_tasks * batch / batches, last = n_tasks * (batch + 1) / batches;
        parallel_for(last - first, threads, [&](Index task, int thread) { body(first + task, thread); });
        if (between) between();
    }
}

// out (+)= lhs * B. A single right-hand column goes through Eigen's matrix-vector
// kernels: as a dynamic row-major matrix it would take the GEMM path, several times
// slower for one column, and that is the shape of every iteration of the paths.
template <class Lhs, class T>
void product(const Lhs& lhs, const MatrixCRef<T>& B, MatrixRef<T> out, bool accumulate = false) {
    // A Ref cannot be resized: a mismatched output would be written out of bounds.
    if (lhs.rows() != out.rows() || lhs.cols() != B.rows() || B.cols() != out.cols())
        throw std::logic_error("nytro internal error: product of shapes " + std::to_string(lhs.rows()) + "x" +
                               std::to_string(lhs.cols()) + " and " + std::to_string(B.rows()) + "x" +
                               std::to_string(B.cols()) + " into " + std::to_string(out.rows()) + "x" +
                               std::to_string(out.cols()));
    if (B.cols() == 1 && B.outerStride() == 1 && out.outerStride() == 1) {
        const Eigen::Map<const Vector<T>> b(B.data(), B.rows());
        Eigen::Map<Vector<T>> o(out.data(), out.rows());
        if (accumulate) o.noalias() += lhs * b;
        else o.noalias() = lhs * b;
    } else if (accumulate) {
        out.noalias() += lhs * B;
    } else {
        out.noalias() = lhs * B;
    }
}

}  // namespace


template <class T, class S>
void multiply_widened_panels(const MatrixCRef<S>& M, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) {
    const double flops = 2.0 * M.rows() * M.cols() * B.cols();
    const int threads = threads_for(flops, resolve_threads(n_threads));
    // Widened in blocks of up to 2 MiB (128 rows at m = 2000, 26 at 10000), which stay in
    // L2/L3 between the conversion and the product, so M costs one read from memory, in
    // S. Blocks of 16 rows spent more on Eigen repacking B for each block than on the
    // product when B has a few dozen columns (the validation of a chunk of iterates).
    // One buffer per thread, sized once: a short last block reuses its top rows (assigning
    // a block of another shape would reallocate 2 MiB twice per panel at m = 10000).
    const Index wide_rows = std::clamp<Index>(
        (Index(1) << 21) / (std::max<Index>(M.cols(), 1) * Index(sizeof(T))), 16, kPanel);
    std::vector<Matrix<T>> widened(static_cast<std::size_t>(threads),
                                   Matrix<T>(std::min(wide_rows, M.rows()), M.cols()));
    parallel_for(panels(M.rows()), threads, [&](Index p, int thread) {
        const Index r0 = p * kPanel, end = std::min(r0 + kPanel, M.rows());
        for (Index b0 = r0; b0 < end; b0 += wide_rows) {
            const Index rows = std::min(wide_rows, end - b0);
            auto block = widened[thread].topRows(rows);
            block = M.middleRows(b0, rows).template cast<T>();
            product<decltype(block), T>(block, B, out.middleRows(b0, rows));
        }
    });
}

template void multiply_widened_panels<double, float>(const MatrixCRef<float>&, const MatrixCRef<double>&,
                                                     MatrixRef<double>, int);

template <class T>
void multiply_right(const MatrixCRef<T>& A, const MatrixCRef<T>& R, bool upper, MatrixRef<T> out,
                    int n_threads, const std::function<void()>& between) {
    // Tiles of 512 x 512 outputs: each task packs a 512-column slice of R and a 512-row
    // slice of A, where 128-row panels against the whole of R spent much of their time
    // packing R (measured: benchmarks/results/bench_stages/history.md, "Measurements behind
    // the code"). The widest
    // column tiles, the most work, go first.
    const Index k = R.cols(), row_tiles = tiles_of(A.rows()), col_tiles = tiles_of(k);
    const double flops = 2.0 * A.rows() * R.rows() * R.cols();
    parallel_batches(row_tiles * col_tiles, flops, n_threads, between, [&](Index task, int) {
        const Index r0 = (task / col_tiles) * kOutputTile, c0 = (col_tiles - 1 - task % col_tiles) * kOutputTile;
        const Index rows = std::min(kOutputTile, A.rows() - r0), cols = std::min(kOutputTile, k - c0);
        auto target = out.block(r0, c0, rows, cols);
        if (!upper) {
            target.noalias() = A.middleRows(r0, rows) * R.middleCols(c0, cols);
            return;
        }
        // Columns c0.. of an upper triangular R: dense above row c0, a triangle on the
        // diagonal, zero below.
        const auto triangle = R.block(c0, c0, cols, cols).template triangularView<Eigen::Upper>();
        target.noalias() = A.block(r0, c0, rows, cols) * triangle;
        if (c0 > 0) target.noalias() += A.block(r0, 0, rows, c0) * R.block(0, c0, c0, cols);
    });
}

namespace {

// Output blocks for a product with B: panels of kPanel rows across all of B's columns
// when B is narrow (the iterations' one or two columns), else tiles of kOutputTile x
// kOutputTile, so that a task packs a slice of B instead of the whole of it (panels each
// packing the whole of a wide B held the triangular inverse's products far below the GEMM
// rate). body(r0, rows, c0, cols) for every block; last_rows_first
// hands out the last row blocks first, where those of a triangular factor are the
// heaviest. With `between`, the blocks run in batches (parallel_batches).
template <class Body>
void for_output_blocks(Index rows, Index cols, double flops, int n_threads, bool last_rows_first, Body&& body,
                       const std::function<void()>& between = {}) {
    const bool tiled = cols >= kOutputTile;
    const Index row_step = tiled ? kOutputTile : kPanel, col_step = tiled ? kOutputTile : std::max<Index>(cols, 1);
    const Index row_blocks = (rows + row_step - 1) / row_step, col_blocks = (cols + col_step - 1) / col_step;
    parallel_batches(row_blocks * col_blocks, flops, n_threads, between, [&](Index task, int) {
        Index row_block = task / col_blocks;
        if (last_rows_first) row_block = row_blocks - 1 - row_block;
        const Index r0 = row_block * row_step, c0 = (task % col_blocks) * col_step;
        body(r0, std::min(row_step, rows - r0), c0, std::min(col_step, cols - c0));
    });
}

}  // namespace

template <class T>
void multiply(const MatrixCRef<T>& A, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads,
              const std::function<void()>& between) {
    const double flops = 2.0 * A.rows() * A.cols() * B.cols();
    for_output_blocks(
        A.rows(), B.cols(), flops, n_threads, false,
        [&](Index r0, Index rows, Index c0, Index cols) {
            product<decltype(A.middleRows(r0, rows)), T>(A.middleRows(r0, rows), B.middleCols(c0, cols),
                                                          out.block(r0, c0, rows, cols));
        },
        between);
}

template <class T>
void multiply_left(const MatrixCRef<T>& R, bool upper, const MatrixCRef<T>& B, MatrixRef<T> out,
                   int n_threads, const std::function<void()>& between) {
    const Index k = R.cols();
    const double flops = 2.0 * R.rows() * k * B.cols();
    for_output_blocks(R.rows(), B.cols(), flops, n_threads, false, [&](Index r0, Index rows, Index c0, Index cols) {
        auto target = out.block(r0, c0, rows, cols);
        if (!upper) {
            product<decltype(R.middleRows(r0, rows)), T>(R.middleRows(r0, rows), B.middleCols(c0, cols), target);
            return;
        }
        // Rows r0..r0+rows of an upper triangular R: a triangle on the diagonal, dense
        // to its right, zero to its left.
        const Index right = k - r0 - rows;
        const auto triangle = R.block(r0, r0, rows, rows).template triangularView<Eigen::Upper>();
        product<decltype(triangle), T>(triangle, B.block(r0, c0, rows, cols), target);
        if (right > 0) {
            const auto dense = R.block(r0, r0 + rows, rows, right);
            product<decltype(dense), T>(dense, B.block(r0 + rows, c0, right, cols), target, true);
        }
    }, between);
}

template <class T>
void multiply_left_transposed(const MatrixCRef<T>& R, bool upper, const MatrixCRef<T>& B,
                              MatrixRef<T> out, int n_threads) {
    const Index k = R.cols();
    const double flops = 2.0 * R.rows() * k * B.cols();
    for_output_blocks(k, B.cols(), flops, n_threads, upper, [&](Index r0, Index rows, Index c0, Index cols) {
        // Output rows r0.. come from columns r0..r0+rows of R.
        auto target = out.block(r0, c0, rows, cols);
        if (!upper) {
            const auto columns = R.middleCols(r0, rows).transpose();
            product<decltype(columns), T>(columns, B.middleCols(c0, cols), target);
            return;
        }
        // Columns r0.. of an upper triangular R: dense above row r0, a triangle on the
        // diagonal, zero below.
        const auto triangle = R.block(r0, r0, rows, rows).transpose().template triangularView<Eigen::Lower>();
        product<decltype(triangle), T>(triangle, B.block(r0, c0, rows, cols), target);
        if (r0 > 0) {
            const auto dense = R.block(0, r0, r0, rows).transpose();
            product<decltype(dense), T>(dense, B.block(0, c0, r0, cols), target, true);
        }
    });
}

template <class T, class S>
void rank_update_widened(const MatrixCRef<S>& B, MatrixRef<T> G, int n_threads) {
    const Index k = B.cols(), tiles = (k + kTile - 1) / kTile;
    const double flops = double(B.rows()) * k * k;
    const int threads = threads_for(flops, resolve_threads(n_threads));
    std::vector<Matrix<S>> tile(static_cast<std::size_t>(threads));
    parallel_for(tiles * (tiles + 1) / 2, threads, [&](Index task, int thread) {
        Index i = 0;
        while ((i + 1) * (i + 2) / 2 <= task) ++i;
        const Index j = task - i * (i + 1) / 2;
        const Index r0 = i * kTile, c0 = j * kTile;
        const Index rows = std::min(kTile, k - r0), cols = std::min(kTile, k - c0);
        tile[thread].noalias() = B.middleCols(r0, rows).transpose() * B.middleCols(c0, cols);
        G.block(r0, c0, rows, cols) += tile[thread].template cast<T>();
    });
}

template void rank_update_widened<double, float>(const MatrixCRef<float>&, MatrixRef<double>, int);

template <class T>
void mirror_lower(MatrixRef<T> G) {
    for (Index i = 0; i < G.rows(); ++i)
        for (Index j = i + 1; j < G.cols(); ++j) G(i, j) = G(j, i);
}

namespace {

constexpr Index kInverseLeaf = 128;

// Thrown in one of invert_upper_in_place's side-by-side halves once the other has failed
// (or the caller's `between` has thrown): it only unwinds that thread, and the first
// failure is the one rethrown.
struct HalfAbandoned {};

// U^-1 in U's own storage, by halves: with U = [U11 U12; 0 U22], R11 = U11^-1, R22 =
// U22^-1 and R12 = -R11 U12 R22, where the two products hold three quarters of the
// k^3 / 3 flops and run as parallel triangular GEMMs. The halves are independent: two
// threads take one each, and recurse alone (faster than parallel identity panels, each a
// single-threaded Eigen triangular solve, and than halves taken in turn with both threads
// on every product); more threads recurse
// together. U12 is read (into U12 R22) before R12 overwrites it, and each leaf is copied
// before it is solved in place. The split depends on k only, so the bits do not depend
// on the thread count. The strict lower part comes out zero.
// `between` (the interruption point) is called after each leaf and between batches of the
// products' blocks, only ever on the calling thread: where the halves run side by side,
// the other thread instead checks whether the caller's call threw (or its own half failed),
// and stops if so (a Python callback must run on the thread that holds the call).
template <class T>
void invert_upper_in_place(MatrixRef<T> U, int n_threads, const std::function<void()>& between) {
    const Index k = U.rows();
    if (k <= kInverseLeaf) {
        const Matrix<T> leaf = U.template triangularView<Eigen::Upper>();
        U.setIdentity();
        leaf.template triangularView<Eigen::Upper>().solveInPlace(U);
        if (between) between();
        return;
    }
    const Index h = std::max<Index>(kInverseLeaf, (k / 2 + 63) / 64 * 64), rest = k - h;
    const auto invert_half = [&](int half, int threads, const std::function<void()>& check) {
        if (half == 0) invert_upper_in_place<T>(U.topLeftCorner(h, h), threads, check);
        else invert_upper_in_place<T>(U.bottomRightCorner(rest, rest), threads, check);
    };
    if (n_threads != 2) {
        invert_half(0, n_threads, between);
        invert_half(1, n_threads, between);
    } else {
        // Thread t of the team takes half t (both, in a team of one), so that half 0, the
        // one that calls `between`, is on the calling thread.
        std::exception_ptr interrupted, errors[2];
        std::atomic<bool> stop{false};
        const std::function<void()> on_caller = [&] {
            if (stop.load(std::memory_order_relaxed)) throw HalfAbandoned{};
            try {
                between();
            } catch (...) {
                interrupted = std::current_exception();
                stop.store(true, std::memory_order_relaxed);
                throw;
            }
        };
        const std::function<void()> on_other = [&] {
            if (stop.load(std::memory_order_relaxed)) throw HalfAbandoned{};
        };
        parallel_team(2, [&](const Team& team) {
            for (int half = team.thread; half < 2; half += team.size) {
                try {
                    if (!between) invert_half(half, 1, between);
                    else invert_half(half, 1, team.thread == 0 ? on_caller : on_other);
                } catch (const HalfAbandoned&) {
                    // the other half's error is the one to report
                } catch (...) {
                    errors[half] = std::current_exception();
                    stop.store(true, std::memory_order_relaxed);
                }
            }
        });
        if (interrupted) std::rethrow_exception(interrupted);
        for (const auto& error : errors)
            if (error) std::rethrow_exception(error);
    }
    Matrix<T> U12_R22(h, rest);
    multiply_right<T>(U.topRightCorner(h, rest), U.bottomRightCorner(rest, rest), true, U12_R22, n_threads,
                      between);
    multiply_left<T>(U.topLeftCorner(h, h), true, U12_R22, U.topRightCorner(h, rest), n_threads, between);
    U.topRightCorner(h, rest) *= T(-1);
    U.bottomLeftCorner(rest, h).setZero();
}

int inverse_threads(Index k, int n_threads) {
    return threads_for(double(k) * k * k / 3.0, resolve_threads(n_threads));
}

}  // namespace

template <class T>
Matrix<T> upper_triangular_inverse(const MatrixCRef<T>& U, int n_threads, const std::function<void()>& between) {
    const Index k = U.rows();
    Matrix<T> R(k, k);
    populate(R);
    R.template triangularView<Eigen::Upper>() = U.template triangularView<Eigen::Upper>();
    invert_upper_in_place<T>(R, inverse_threads(k, n_threads), between);
    return R;
}

template <class T>
void invert_upper_triangular_in_place(Matrix<T>& U, int n_threads, const std::function<void()>& between) {
    if (U.rows() != U.cols())
        throw std::logic_error("nytro internal error: in-place inverse of a " + std::to_string(U.rows()) + "x" +
                               std::to_string(U.cols()) + " matrix");
    invert_upper_in_place<T>(U, inverse_threads(U.rows(), n_threads), between);
}

#define NYTRO_INSTANTIATE(T)                                                                      \
    template void multiply<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, MatrixRef<T>, int,      \
                              const std::function<void()>&);                                   \
    template void multiply_right<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, bool,            \
                                    MatrixRef<T>, int, const std::function<void()>&);            \
    template void multiply_left<T>(const MatrixCRef<T>&, bool, const MatrixCRef<T>&,             \
                                   MatrixRef<T>, int, const std::function<void()>&);             \
    template void multiply_left_transposed<T>(const MatrixCRef<T>&, bool, const MatrixCRef<T>&,  \
                                              MatrixRef<T>, int);                                \
    template void mirror_lower<T>(MatrixRef<T>);                                                 \
    template Matrix<T> upper_triangular_inverse<T>(const MatrixCRef<T>&, int,                     \
                                                   const std::function<void()>&);                \
    template void invert_upper_triangular_in_place<T>(Matrix<T>&, int, const std::function<void()>&);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)
#undef NYTRO_INSTANTIATE  // unity builds put several sources in one unit

}  // namespace nytro::detail
