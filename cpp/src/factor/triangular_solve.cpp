#include "factor/triangular_solve.hpp"

#include "runtime/parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nytro::detail {
namespace {

// Rows of U per substitution step: each step solves a diagonal block and updates with a
// product whose inner size is the rows already solved (or the rows still to come).
constexpr Index kStep = 256;
// Right-hand sides up to kNarrow columns go column by column through matrix-vector
// kernels (Eigen's GEMM on one or two columns is several times slower); the update is
// then split into tasks of kNarrowRows outputs. Wider ones go in tiles of kTileColumns
// columns by kWideRows rows: a step has several tasks even for one tile (the
// validation's chunk of iterates), which whole steps as tasks did not give.
constexpr Index kNarrow = 4;
constexpr Index kNarrowRows = 32;
constexpr Index kWideRows = 64;
constexpr Index kTileColumns = 512;

Index count_of(Index size, Index per) { return (size + per - 1) / per; }

// Checks the shapes and starts out as B (solved in place); returns the threads to use.
template <class T>
int start_solve(const MatrixCRef<T>& U, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) {
    const Index k = U.rows();
    if (U.cols() != k || B.rows() != k || out.rows() != k || out.cols() != B.cols())
        throw std::logic_error("nytro internal error: triangular solve with U " + std::to_string(k) + "x" +
                               std::to_string(U.cols()) + ", B " + std::to_string(B.rows()) + "x" +
                               std::to_string(B.cols()) + " into " + std::to_string(out.rows()) + "x" +
                               std::to_string(out.cols()));
    out = B;
    return threads_for(double(k) * double(k) * double(B.cols()), resolve_threads(n_threads));
}

// Column c of a row-major block, as a vector with the block's row stride.
template <class Block>
auto column_of(Block&& block, Index c) {
    using Scalar = typename std::decay_t<Block>::Scalar;
    using Strided = Eigen::Map<std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(block.data())>>,
                                                  const Vector<Scalar>, Vector<Scalar>>,
                               0, Eigen::InnerStride<>>;
    return Strided(block.data() + c, block.rows(), Eigen::InnerStride<>(block.outerStride()));
}

// out -= lhs * rhs, a narrow rhs one column at a time through matrix-vector kernels.
template <class Lhs, class Rhs, class Out>
void subtract_product(const Lhs& lhs, const Rhs& rhs, Out&& out) {
    if (rhs.cols() <= kNarrow) {
        for (Index c = 0; c < rhs.cols(); ++c) column_of(out, c).noalias() -= lhs * column_of(rhs, c);
    } else {
        out.noalias() -= lhs * rhs;
    }
}

// x = D^-1 x (kTransposed: D^-T x) for the diagonal block D, tiles of columns in parallel.
template <class T, bool kTransposed>
void solve_diagonal(const MatrixCRef<T>& D, MatrixRef<T> x, int threads) {
    const Index q = x.cols(), tiles = count_of(q, kTileColumns);
    parallel_for(tiles, q > kNarrow ? threads : 1, [&](Index tile, int) {
        const Index c0 = tile * kTileColumns;
        auto part = x.middleCols(c0, std::min(kTileColumns, q - c0));
        if constexpr (kTransposed) D.transpose().template triangularView<Eigen::Lower>().solveInPlace(part);
        else D.template triangularView<Eigen::Upper>().solveInPlace(part);
    });
}

// body(i0, n_rows, c0, n_cols) over tasks tiling a rows x q update, row_step x col_step each.
template <class Body>
void for_update_tiles(Index rows, Index q, Index row_step, Index col_step, int threads, Body&& body) {
    const Index row_tasks = count_of(rows, row_step), col_tasks = count_of(q, col_step);
    parallel_for(row_tasks * col_tasks, threads, [&](Index task, int) {
        const Index i0 = (task / col_tasks) * row_step, c0 = (task % col_tasks) * col_step;
        body(i0, std::min(row_step, rows - i0), c0, std::min(col_step, q - c0));
    });
}

}  // namespace

// Left-looking, from the last step up: the rows of step s less U[s, after] times the
// rows solved after it, then the diagonal block's solve.
template <class T>
void solve_upper(const MatrixCRef<T>& U, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) {
    const Index k = U.rows(), q = B.cols();
    const int threads = start_solve<T>(U, B, out, n_threads);
    const bool narrow = q <= kNarrow;
    const Index row_step = narrow ? kNarrowRows : kWideRows, col_step = narrow ? q : kTileColumns;
    for (Index step = count_of(k, kStep) - 1; step >= 0; --step) {
        const Index r0 = step * kStep, rows = std::min(kStep, k - r0), r1 = r0 + rows, after = k - r1;
        auto x = out.middleRows(r0, rows);
        if (after > 0) {
            const auto solved = out.bottomRows(after);
            for_update_tiles(rows, q, row_step, col_step, threads, [&](Index i0, Index n_rows, Index c0, Index n_cols) {
                subtract_product(U.block(r0 + i0, r1, n_rows, after), solved.middleCols(c0, n_cols),
                                 x.block(i0, c0, n_rows, n_cols));
            });
        }
        solve_diagonal<T, false>(U.block(r0, r0, rows, rows), x, threads);
    }
}

// With U^T lower triangular, from the first step down. Narrow right-hand sides go
// right-looking: once a step is solved, U[s, after]^T times it leaves every later row,
// reading U's rows (contiguous) once. Wide ones go left-looking, as solve_upper: a step
// less U[before, s]^T times the rows solved before it, one GEMM per tile of columns,
// writing only the step's own rows (right-looking would rewrite every later row at
// every step).
template <class T>
void solve_upper_transposed(const MatrixCRef<T>& U, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) {
    const Index k = U.rows(), q = B.cols();
    const int threads = start_solve<T>(U, B, out, n_threads);
    const bool narrow = q <= kNarrow;
    const Index steps = count_of(k, kStep);
    for (Index step = 0; step < steps; ++step) {
        const Index r0 = step * kStep, rows = std::min(kStep, k - r0), r1 = r0 + rows, after = k - r1;
        auto x = out.middleRows(r0, rows);
        if (!narrow && r0 > 0) {
            const auto solved = out.topRows(r0);
            for_update_tiles(rows, q, kWideRows, kTileColumns, threads,
                             [&](Index i0, Index n_rows, Index c0, Index n_cols) {
                                 subtract_product(U.block(0, r0 + i0, r0, n_rows).transpose(),
                                                  solved.middleCols(c0, n_cols), x.block(i0, c0, n_rows, n_cols));
                             });
        }
        solve_diagonal<T, true>(U.block(r0, r0, rows, rows), x, threads);
        if (narrow && after > 0) {
            const auto done = out.middleRows(r0, rows);
            parallel_for(count_of(after, kStep), threads, [&](Index task, int) {
                const Index j0 = task * kStep, n_rows = std::min(kStep, after - j0);
                subtract_product(U.block(r0, r1 + j0, rows, n_rows).transpose(), done,
                                 out.middleRows(r1 + j0, n_rows));
            });
        }
    }
}

template void solve_upper<float>(const MatrixCRef<float>&, const MatrixCRef<float>&, MatrixRef<float>, int);
template void solve_upper<double>(const MatrixCRef<double>&, const MatrixCRef<double>&, MatrixRef<double>, int);
template void solve_upper_transposed<float>(const MatrixCRef<float>&, const MatrixCRef<float>&, MatrixRef<float>,
                                            int);
template void solve_upper_transposed<double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                             MatrixRef<double>, int);

}  // namespace nytro::detail
