// The solvers' inner products against plain dense ones. The Gram solver's symmetric
// product reads only H's lower triangle, and must equal H b for every shape that crosses
// its blocking (slots of equal triangle area; blocks of up to 16 rows, fewer from
// k = 2048 on), for one and several right-hand columns, in float, double, and float
// storage with double compute; and give the same bits for any thread count. The Gram
// solver's normal equations (both routes) and the tiled A * R they are built from are
// checked here too, and so is the direct solver's fused pass K^T (K a - Y).
//
// These tests reach into the library's private headers (cpp/src): the passes are
// internal, and testing them alone localises a failure that the path tests only show
// as a different iterate.
#include "check.hpp"
#include "support.hpp"

#include "passes/dense.hpp"
#include "passes/fused_pass.hpp"
#include "passes/gram.hpp"
#include "kernel/packed_centers.hpp"
#include "passes/symmetric_pass.hpp"
#include "factor/owned_cholesky.hpp"
#include "factor/triangular_solve.hpp"
#include "kernel/row_kernels.hpp"
#include "nytro/resources.hpp"
#include "paths/validation.hpp"

#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

using namespace support;

namespace {

// The lower triangle of a symmetric k x k matrix, with the strict upper triangle set to
// NaN: the product must never use it.
MatrixD lower_with_poisoned_upper(Index k, std::uint64_t seed) {
    MatrixD H = normal(k, k, seed);
    for (Index i = 0; i < k; ++i)
        for (Index j = i + 1; j < k; ++j) H(i, j) = std::numeric_limits<double>::quiet_NaN();
    return H;
}

template <class T, class S>
void matches_dense(Index k, Index q, double tolerance) {
    const MatrixD H = lower_with_poisoned_upper(k, 7 + k);
    const MatrixD full = H.selfadjointView<Eigen::Lower>();
    const Matrix<S> stored = H.cast<S>();
    const Matrix<T> b = normal(k, q, 11 + q).cast<T>();
    const MatrixD expected = full.cast<S>().template cast<double>() * b.template cast<double>();

    Matrix<T> reference_bits;
    for (int threads : {1, 2, 3}) {
        nytro::detail::SymmetricPass<T, S> pass(stored, threads);
        Matrix<T> out(k, q);
        pass.apply(b, out);
        const std::string label = "k=" + check::str(k) + " q=" + check::str(q) + " threads=" + check::str(threads);
        CHECK_MSG(check::relative_error(out, expected) <= tolerance,
                  label + ": relative error " + check::str(check::relative_error(out, expected)));
        if (threads == 1) reference_bits = out;
        else CHECK_MSG(check::bitwise_equal(out, reference_bits), label + ": differs from 1 thread");
        // A second call on the same pass (its scratch space reused) gives the same bits.
        Matrix<T> again(k, q);
        pass.apply(b, again);
        CHECK_MSG(check::bitwise_equal(again, out), label + ": a repeated call differs");
    }
}

template <class T, class S>
void all_shapes(double tolerance) {
    for (Index k : {1, 2, 5, 17, 127, 128, 129, 300, 1000, 2100})
        for (Index q : {1, 3}) matches_dense<T, S>(k, q, tolerance);
}

}  // namespace

NYTRO_TEST(symmetric_pass_double) { all_shapes<double, double>(1e-12); }
NYTRO_TEST(symmetric_pass_float) { all_shapes<float, float>(1e-4); }
NYTRO_TEST(symmetric_pass_float_storage_double_compute) { all_shapes<double, float>(1e-12); }

NYTRO_TEST(symmetric_pass_rejects_mismatched_shapes) {
    const Matrix<double> H = MatrixD::Identity(4, 4);
    nytro::detail::SymmetricPass<double, double> pass(H, 1);
    Matrix<double> b(3, 1), out(4, 1);
    b.setOnes();
    CHECK_THROWS(pass.apply(b, out), std::logic_error);
}

// The fused pass reads its iterate without bounds checks inside: a mismatched one (the
// direct solver once sized it by the rank instead of the qr factor's rows) is refused.
NYTRO_TEST(fused_pass_rejects_mismatched_shapes) {
    const Matrix<double> K = MatrixD::Ones(40, 6);
    nytro::detail::FusedPass<double, double> pass(K, 2);
    const Matrix<double> short_a = MatrixD::Ones(5, 1), a = MatrixD::Ones(6, 2), Y = MatrixD::Ones(40, 1);
    CHECK_THROWS(pass.normal(short_a), std::logic_error);
    CHECK_THROWS(pass.normal_residual(a, Y), std::logic_error);
    CHECK_EQ(pass.normal(a).rows(), Index(6));
}

namespace {

// FusedPass against K^T (K a - Y) formed densely (on the stored, rounded K), over shapes
// that cross its blocking: row blocks of 16 or 8 rows (8 once 16 rows pass 512 KiB, here
// from k = 4097 in double), groups of 8 rows in the row kernels, packet tails in k, and
// slots of n / (4 block) rows; one right-hand column, two and three (the row kernels take
// them in pairs) and nine (past the row kernels' 8, Eigen's products); bits equal for any
// thread count and on a second call.
template <class T, class S>
void fused_pass_matches_dense(Index n, Index k, Index q, double tolerance) {
    const Matrix<S> K = normal(n, k, 3 + n + k).cast<S>();
    const Matrix<T> a = normal(k, q, 5 + q).cast<T>(), Y = normal(n, q, 6 + q).cast<T>();
    const MatrixD Kd = K.template cast<double>(), ad = a.template cast<double>();
    const MatrixD expected = Kd.transpose() * (Kd * ad - Y.template cast<double>());
    const MatrixD expected_normal = Kd.transpose() * (Kd * ad);
    Matrix<T> reference_bits;
    for (int threads : {1, 2, 3}) {
        nytro::detail::FusedPass<T, S> pass(K, threads);
        const Matrix<T> out = pass.normal_residual(a, Y);
        const std::string label = "n=" + check::str(n) + " k=" + check::str(k) + " q=" + check::str(q) +
                                  " threads=" + check::str(threads);
        CHECK_MSG(check::relative_error(out, expected) <= tolerance,
                  label + ": relative error " + check::str(check::relative_error(out, expected)));
        CHECK_MSG(check::relative_error(pass.normal(a), expected_normal) <= tolerance, label + ": K^T K a");
        if (threads == 1) reference_bits = out;
        else CHECK_MSG(check::bitwise_equal(out, reference_bits), label + ": differs from 1 thread");
        CHECK_MSG(check::bitwise_equal(pass.normal_residual(a, Y), out), label + ": a repeated call differs");
    }
}

template <class T, class S>
void fused_pass_shapes(double tolerance) {
    for (const auto& [n, k] : {std::pair<Index, Index>{1, 1}, {7, 3}, {8, 8}, {9, 17}, {100, 31}, {1000, 300},
                               {203, 4100}})
        for (Index q : {1, 2, 3, 9}) fused_pass_matches_dense<T, S>(n, k, q, tolerance);
}

}  // namespace

// The public entry for kept blocks (nytro.dask's direct mode): the fused pass's bits on
// a view of the caller's memory, for every storage; zero rows give zeros; a B of the wrong
// height and a K whose rows are not contiguous are refused by name.
template <class T, class S>
void block_normal_product_is_the_fused_pass() {
    const Matrix<S> K = normal(300, 31, 17).cast<S>();
    const Matrix<T> B = normal(31, 3, 18).cast<T>();
    const Eigen::Map<const Matrix<S>> kept(K.data(), K.rows(), K.cols());
    const auto product = [](const nytro::MatrixCRef<S>& k, const nytro::MatrixCRef<T>& b, int threads) {
        return nytro::block_normal_product<T, S>(k, b, threads);
    };
    for (int threads : {1, 2}) {
        nytro::detail::FusedPass<T, S> pass(K, threads);
        CHECK(check::bitwise_equal(product(kept, B, threads), pass.normal(B)));
    }
    CHECK(product(K.topRows(0), B, 1).isZero());
    CHECK_EQ(product(K.topRows(0), B, 1).rows(), Index(31));
    CHECK_THROWS_WITH(product(K, B.topRows(30), 1), std::invalid_argument, "B must");
    const Matrix<S> wide = normal(300, 40, 19).cast<S>();
    CHECK_THROWS_WITH(product(wide.leftCols(31), B, 1), std::invalid_argument, "K's rows");
}

NYTRO_TEST(block_normal_product_double) { block_normal_product_is_the_fused_pass<double, double>(); }
NYTRO_TEST(block_normal_product_float) { block_normal_product_is_the_fused_pass<float, float>(); }
NYTRO_TEST(block_normal_product_float_storage_double_compute) {
    block_normal_product_is_the_fused_pass<double, float>();
}

NYTRO_TEST(fused_pass_double) { fused_pass_shapes<double, double>(1e-12); }
NYTRO_TEST(fused_pass_float) { fused_pass_shapes<float, float>(1e-4); }
NYTRO_TEST(fused_pass_float_storage_double_compute) { fused_pass_shapes<double, float>(1e-12); }

namespace {

// The pipelined row kernels against the two sweeps they merge: the next block's dots
// and the previous block's weighted sum must come out bit for bit as dots and
// add_weighted (or their two-output forms) give them, one sweep after the other. That is
// what keeps the fused pass's bits unchanged by the pipelining. Rows from 1 to 17 cross
// the groups of 8; k crosses the packet tail.
template <class T, class S>
void pipelined_kernels_equal_separate_sweeps() {
    namespace rows = nytro::detail::rows;
    for (Index n_rows : {1, 5, 8, 9, 16, 17})
        for (Index k : {1, 7, 8, 29, 64, 203}) {
            const Matrix<S> next = normal(n_rows, k, 11 + k).cast<S>(), prev = normal(n_rows, k, 12 + k).cast<S>();
            const Matrix<T> x = normal(2, k, 13).cast<T>(), w = normal(2, n_rows, 14).cast<T>();
            const Matrix<T> start = normal(2, k, 15).cast<T>(), out_start = normal(2, n_rows, 16).cast<T>();
            Matrix<T> out = out_start, dst = start, out_expected = out_start, dst_expected = start;
            const std::string label = "rows=" + check::str(n_rows) + " k=" + check::str(k);
            rows::dots<T, S>(next.data(), k, n_rows, x.row(0).data(), 0, k, out_expected.row(0).data());
            rows::add_weighted<T, S>(prev.data(), k, n_rows, w.row(0).data(), dst_expected.row(0).data(), 0, k);
            rows::dots_next_add_previous<T, S>(next.data(), prev.data(), k, n_rows, x.row(0).data(), w.row(0).data(),
                                               out.row(0).data(), dst.row(0).data(), 0, k);
            CHECK_MSG(check::bitwise_equal(out.row(0), out_expected.row(0)), label + ": one output, dots");
            CHECK_MSG(check::bitwise_equal(dst.row(0), dst_expected.row(0)), label + ": one output, sums");
            out = out_start, dst = start, out_expected = out_start, dst_expected = start;
            rows::dots2<T, S>(next.data(), k, n_rows, x.row(0).data(), x.row(1).data(), 0, k,
                              out_expected.row(0).data(), out_expected.row(1).data());
            rows::add_weighted2<T, S>(prev.data(), k, n_rows, w.row(0).data(), w.row(1).data(),
                                      dst_expected.row(0).data(), dst_expected.row(1).data(), 0, k);
            rows::dots2_next_add2_previous<T, S>(next.data(), prev.data(), k, n_rows, x.row(0).data(),
                                                 x.row(1).data(), w.row(0).data(), w.row(1).data(), out.row(0).data(),
                                                 out.row(1).data(), dst.row(0).data(), dst.row(1).data(), 0, k);
            CHECK_MSG(check::bitwise_equal(out, out_expected), label + ": two outputs, dots");
            CHECK_MSG(check::bitwise_equal(dst, dst_expected), label + ": two outputs, sums");
        }
}

}  // namespace

NYTRO_TEST(pipelined_row_kernels_equal_separate_sweeps) {
    pipelined_kernels_equal_separate_sweeps<double, double>();
    pipelined_kernels_equal_separate_sweeps<float, float>();
    pipelined_kernels_equal_separate_sweeps<double, float>();
}

namespace {

// The row kernels sweep whole cache lines (one prefetch per line and row), then single
// packets, then a scalar tail. Over column ranges [c0, c1) that start and end anywhere
// in a line they must still take every column of the range once and no other: each dot
// against its sum in long double, within the rounding of a sum of that many terms; each
// weighted column of dst the same, and dst outside the range untouched. The merged sweep
// (the symmetric pass's, on such ranges) gives the separate kernels' bits.
template <class T, class S>
void row_kernels_cover_ranges() {
    namespace rows = nytro::detail::rows;
    const long double eps = std::numeric_limits<T>::epsilon();
    const Index k = 300;
    for (Index n_rows : {1, 5, 8, 13})
        for (Index c0 : {0, 1, 3, 7, 17})
            for (Index length : {0, 1, 5, 16, 33, 250}) {
                const Index c1 = c0 + length;
                const Matrix<S> block = normal(n_rows, k, 21 + n_rows).cast<S>();
                const Matrix<T> x = normal(1, k, 22).cast<T>(), w = normal(1, n_rows, 23).cast<T>();
                const T sentinel = T(0.5);
                Matrix<T> out = Matrix<T>::Zero(1, n_rows), dst = Matrix<T>::Constant(1, k, sentinel);
                rows::dots<T, S>(block.data(), k, n_rows, x.data(), c0, c1, out.data());
                rows::add_weighted<T, S>(block.data(), k, n_rows, w.data(), dst.data(), c0, c1);
                const std::string label = "rows=" + check::str(n_rows) + " c0=" + check::str(c0) +
                                          " c1=" + check::str(c1);
                for (Index i = 0; i < n_rows; ++i) {
                    long double exact = 0, bound = 0;
                    for (Index c = c0; c < c1; ++c) {
                        const long double term = (long double)T(block(i, c)) * x(0, c);
                        exact += term;
                        bound += std::abs(term);
                    }
                    CHECK_MSG(std::abs(out(0, i) - exact) <= (length + 1) * eps * bound, label + ": dot of row " +
                                                                                            check::str(i));
                }
                for (Index c = 0; c < k; ++c) {
                    if (c < c0 || c >= c1) {
                        CHECK_MSG(dst(0, c) == sentinel, label + ": column " + check::str(c) + " outside written");
                        continue;
                    }
                    long double exact = sentinel, bound = sentinel;
                    for (Index i = 0; i < n_rows; ++i) {
                        const long double term = (long double)T(block(i, c)) * w(0, i);
                        exact += term;
                        bound += std::abs(term);
                    }
                    CHECK_MSG(std::abs(dst(0, c) - exact) <= (n_rows + 1) * eps * bound,
                              label + ": weighted column " + check::str(c));
                }
                Matrix<T> merged_out = Matrix<T>::Zero(1, n_rows), merged_dst = Matrix<T>::Constant(1, k, sentinel);
                rows::dots_and_add_weighted<T, S>(block.data(), k, n_rows, w.data(), x.data(), merged_dst.data(), c0,
                                                  c1, merged_out.data());
                CHECK_MSG(check::bitwise_equal(merged_out, out), label + ": merged sweep, dots");
                CHECK_MSG(check::bitwise_equal(merged_dst, dst), label + ": merged sweep, sums");
            }
}

}  // namespace

NYTRO_TEST(row_kernels_cover_column_ranges) {
    row_kernels_cover_ranges<double, double>();
    row_kernels_cover_ranges<float, float>();
    row_kernels_cover_ranges<double, float>();
}

// rank_update works on register tiles of B's columns in depth chunks: sizes below, at and
// across a tile and a task block, depths below and across a chunk (128 for doubles on
// AVX-512), both triangles. The other triangle is never written (a sentinel, finite so
// that an update would change it, stays as it was), and the bits are the same on 1, 2
// and 3 threads.
template <class T>
void rank_update_shapes(double tolerance) {
    using M = nytro::Matrix<T>;
    for (const auto& [depth, size] : {std::pair<Index, Index>{1, 1}, {3, 7}, {128, 24}, {129, 300}, {300, 531}}) {
        const M B = normal(depth, size, 31).template cast<T>();
        const M start = normal(size, size, 32).template cast<T>();
        const MatrixD exact = start.template cast<double>() - 0.5 * (B.transpose() * B).template cast<double>();
        for (bool upper : {true, false}) {
            M G = start;
            for (Index i = 0; i < size; ++i)
                for (Index j = 0; j < size; ++j)
                    if (upper ? i > j : i < j) G(i, j) = T(7);
            const M poisoned = G;
            M one = G;
            nytro::detail::rank_update<T>(B, one, T(-0.5), upper, 1);
            const std::string shape = check::str(depth) + " x " + check::str(size) + (upper ? " upper" : " lower");
            double worst = 0, scale = exact.cwiseAbs().maxCoeff();
            bool other_untouched = true;
            for (Index i = 0; i < size; ++i)
                for (Index j = 0; j < size; ++j) {
                    if (upper ? i <= j : i >= j) worst = std::max(worst, std::abs(double(one(i, j)) - exact(i, j)));
                    else other_untouched = other_untouched && one(i, j) == T(7);
                }
            CHECK_MSG(worst <= tolerance * scale, "rank_update " + shape + ": error " + check::str(worst / scale));
            CHECK_MSG(other_untouched, "rank_update wrote the other triangle: " + shape);
            for (int threads : {2, 3}) {
                M again = poisoned;
                nytro::detail::rank_update<T>(B, again, T(-0.5), upper, threads);
                bool same = true;
                for (Index i = 0; i < size; ++i)
                    for (Index j = 0; j < size; ++j)
                        if ((upper ? i <= j : i >= j) && again(i, j) != one(i, j)) same = false;
                CHECK_MSG(same, "rank_update " + shape + " differs on " + check::str(threads) + " threads");
            }
        }
    }
}

NYTRO_TEST(rank_update_matches_dense_products) {
    rank_update_shapes<double>(1e-13);
    rank_update_shapes<float>(1e-5);
}

// The centres packed once and rows in blocks of 37 (ragged against the kernel's 128-row
// tasks and its register tiles; the streamed hold-out kernel, prediction and the Gram
// solver's blocks call it so): the same bits as the whole kernel, on 1 and 2 threads.
template <class T>
void packed_kernel_blocks_equal_whole() {
    using M = nytro::Matrix<T>;
    const M X = normal(300, 7, 41).template cast<T>(), Z = normal(700, 7, 42).template cast<T>();
    const double sigma = 1.3;
    const M whole = nytro::gaussian_kernel<T>(X, Z, sigma, 2);
    const nytro::detail::PackedCenters<T> packed(Z, sigma);
    for (int threads : {1, 2}) {
        M blocks(300, 700);
        for (Index r0 = 0; r0 < 300; r0 += 37) {
            const Index rows = std::min<Index>(37, 300 - r0);
            nytro::detail::kernel_packed<T>(X.middleRows(r0, rows), packed, blocks.middleRows(r0, rows),
                                                     threads);
        }
        CHECK_BITWISE(blocks, whole);
    }
    M wrong(300, 5);
    CHECK_THROWS(nytro::detail::kernel_packed<T>(X, packed, wrong, 1), std::invalid_argument);
    CHECK_THROWS(nytro::detail::PackedCenters<T>(Z, 0.0), std::invalid_argument);
}

NYTRO_TEST(packed_kernel_blocks_equal_whole_kernel) {
    packed_kernel_blocks_equal_whole<double>();
    packed_kernel_blocks_equal_whole<float>();
}

// multiply_right works on 512 x 512 output tiles: shapes below, at and across a tile,
// for an upper triangular R (strict lower part NaN: never read) and a dense one.
NYTRO_TEST(multiply_right_matches_dense_products) {
    for (const auto& [rows, k] : {std::pair<Index, Index>{1, 1}, {37, 5}, {512, 512}, {600, 513}, {1030, 1100}}) {
        const MatrixD A = normal(rows, k, 7);
        MatrixD R = normal(k, k, 8);
        const MatrixD upper = R.triangularView<Eigen::Upper>();
        for (Index i = 0; i < k; ++i)
            for (Index j = 0; j < i; ++j) R(i, j) = std::numeric_limits<double>::quiet_NaN();
        MatrixD out(rows, k), again(rows, k);
        nytro::detail::multiply_right<double>(A, R, true, out, 2);
        CHECK_CLOSE(out, (A * upper).eval(), 1e-12);
        nytro::detail::multiply_right<double>(A, R, true, again, 3);
        CHECK_BITWISE(again, out);
        const MatrixD dense = normal(k, k + 3, 9);
        MatrixD wide(rows, k + 3);
        nytro::detail::multiply_right<double>(A, dense, false, wide, 2);
        CHECK_CLOSE(wide, (A * dense).eval(), 1e-12);
    }
}

// multiply, multiply_left and multiply_left_transposed take B in panels of 128 rows when
// it has fewer than 512 columns (the iterations' one or two), else in 512 x 512 output
// tiles: shapes on both sides, with k across a tile, for an upper triangular R (strict
// lower part NaN: never read) and a dense one; the same bits on 1, 2 and 3 threads.
NYTRO_TEST(left_products_match_dense_products) {
    for (const auto& [k, cols] : {std::pair<Index, Index>{1, 1}, {37, 2}, {300, 511}, {513, 512}, {1100, 700}}) {
        MatrixD R = normal(k, k, 21);
        const MatrixD upper = R.triangularView<Eigen::Upper>();
        const MatrixD dense = R;
        for (Index i = 0; i < k; ++i)
            for (Index j = 0; j < i; ++j) R(i, j) = std::numeric_limits<double>::quiet_NaN();
        const MatrixD B = normal(k, cols, 22);
        const std::string shape = check::str(k) + " x " + check::str(cols);
        MatrixD out(k, cols);
        for (int threads : {1, 2, 3}) {
            nytro::detail::multiply_left<double>(R, true, B, out, threads);
            CHECK_MSG(check::relative_error(out, (upper * B).eval()) <= 1e-12, "multiply_left upper " + shape);
            nytro::detail::multiply_left_transposed<double>(R, true, B, out, threads);
            CHECK_MSG(check::relative_error(out, (upper.transpose() * B).eval()) <= 1e-12, "multiply_left_transposed upper " + shape);
            nytro::detail::multiply_left<double>(dense, false, B, out, threads);
            CHECK_MSG(check::relative_error(out, (dense * B).eval()) <= 1e-12, "multiply_left dense " + shape);
            nytro::detail::multiply_left_transposed<double>(dense, false, B, out, threads);
            CHECK_MSG(check::relative_error(out, (dense.transpose() * B).eval()) <= 1e-12, "multiply_left_transposed dense " + shape);
            nytro::detail::multiply<double>(dense, B, out, threads);
            CHECK_MSG(check::relative_error(out, (dense * B).eval()) <= 1e-12, "multiply " + shape);
        }
        MatrixD one(k, cols), three(k, cols);
        nytro::detail::multiply_left_transposed<double>(R, true, B, one, 1);
        nytro::detail::multiply_left_transposed<double>(R, true, B, three, 3);
        CHECK_BITWISE(three, one);
        nytro::detail::multiply<double>(dense, B, one, 1);
        nytro::detail::multiply<double>(dense, B, three, 3);
        CHECK_BITWISE(three, one);
    }
}

// upper_triangular_inverse recurses by halves down to blocks of 128: sizes below, at and
// across the leaf and two levels of splits, on a well-conditioned U (strict lower part
// NaN: never read). The result is upper triangular, U R = I, and its bits do not depend
// on the thread count (the two halves run side by side on 2 threads, in turn on 1 or 3),
// nor on whether it is computed in U's own storage.
NYTRO_TEST(upper_triangular_inverse_by_halves) {
    for (Index k : {1, 2, 64, 128, 129, 200, 257, 700}) {
        MatrixD U = MatrixD(normal(k, k, 12 + k).triangularView<Eigen::Upper>());
        U.diagonal().array() = U.diagonal().array().abs() + 2.0 * std::sqrt(double(k));
        const MatrixD clean = U;
        for (Index i = 0; i < k; ++i)
            for (Index j = 0; j < i; ++j) U(i, j) = std::numeric_limits<double>::quiet_NaN();
        const MatrixD R = nytro::detail::upper_triangular_inverse<double>(U, 2);
        CHECK_CLOSE((clean * R).eval(), MatrixD::Identity(k, k), 1e-12);
        CHECK_MSG(R.triangularView<Eigen::StrictlyLower>().toDenseMatrix().isZero(0.0),
                  "k=" + check::str(k) + ": R has entries below its diagonal");
        for (int threads : {1, 3}) CHECK_BITWISE(nytro::detail::upper_triangular_inverse<double>(U, threads), R);
        // In U's own storage (the factor's route at full rank): the same bits, NaNs below
        // the diagonal replaced by zeros.
        for (int threads : {1, 2, 3}) {
            MatrixD in_place = U;
            nytro::detail::invert_upper_triangular_in_place<double>(in_place, threads);
            CHECK_MSG(check::bitwise_equal(in_place, R),
                      "k=" + check::str(k) + " threads=" + check::str(threads) + ": the in-place inverse differs");
        }
    }
}

// The inverse's interruption points: `between` is called only on the calling thread (a
// Python callback needs it), after each leaf and between batches of the products' blocks
// (k = 2600: the top-level products are past one batch), leaves the bits unchanged, and an
// exception from it ends the inverse early and is the one thrown, for 1, 2 (the halves side
// by side) and 3 threads.
NYTRO_TEST(upper_triangular_inverse_interruption_points) {
    struct Stop : std::runtime_error {
        Stop() : std::runtime_error("stop") {}
    };
    for (Index k : {700, 2600}) {
        MatrixD U = MatrixD(normal(k, k, 40 + k).triangularView<Eigen::Upper>());
        U.diagonal().array() = U.diagonal().array().abs() + 2.0 * std::sqrt(double(k));
        const MatrixD R = nytro::detail::upper_triangular_inverse<double>(U, 1);
        const auto caller = std::this_thread::get_id();
        for (int threads : {1, 2, 3}) {
            Index calls = 0;
            bool elsewhere = false;
            const std::function<void()> count = [&] {
                ++calls;
                elsewhere = elsewhere || std::this_thread::get_id() != caller;
            };
            MatrixD in_place = U;
            nytro::detail::invert_upper_triangular_in_place<double>(in_place, threads, count);
            const std::string where = "k=" + check::str(k) + " threads=" + check::str(threads);
            CHECK_MSG(check::bitwise_equal(in_place, R), where + ": the inverse with interruption points differs");
            CHECK_MSG(!elsewhere, where + ": between called off the calling thread");
            // Each leaf of 128 columns or fewer calls once (half of them on the other thread
            // when the halves run side by side), the products at least once each.
            CHECK_MSG(calls >= (k + 127) / 128 / (threads == 2 ? 2 : 1), where + ": too few interruption points");
            const Index stop_at = calls / 2;
            Index seen = 0;
            const std::function<void()> stop = [&] {
                if (++seen > stop_at) throw Stop{};
            };
            CHECK_THROWS(nytro::detail::upper_triangular_inverse<double>(U, threads, stop), Stop);
            CHECK_MSG(seen == stop_at + 1, where + ": the inverse went on calling back after the throw");
        }
    }
}

// multiply's interruption points (the QR factor's products): `between` is called on the
// calling thread between batches of blocks (4.4e9 flops: two batches), leaves the bits
// unchanged, and an exception from it ends the product and is the one thrown.
NYTRO_TEST(multiply_interruption_points) {
    struct Stop : std::runtime_error {
        Stop() : std::runtime_error("stop") {}
    };
    const Index n = 1300;
    const MatrixD A = normal(n, n, 71), B = normal(n, n, 72);
    MatrixD plain(n, n), counted(n, n);
    nytro::detail::multiply<double>(A, B, plain, 2);
    Index calls = 0;
    bool elsewhere = false;
    const auto caller = std::this_thread::get_id();
    nytro::detail::multiply<double>(A, B, counted, 2, [&] {
        ++calls;
        elsewhere = elsewhere || std::this_thread::get_id() != caller;
    });
    CHECK_BITWISE(counted, plain);
    CHECK_MSG(calls >= 2, "too few interruption points: " + check::str(calls));
    CHECK_MSG(!elsewhere, std::string("between called off the calling thread"));
    Index seen = 0;
    CHECK_THROWS(nytro::detail::multiply<double>(A, B, counted, 2, [&] {
        ++seen;
        throw Stop{};
    }), Stop);
    CHECK_EQ(seen, Index(1));
}

// The Cholesky factorisation on an abandonable worker (factor="cholesky", the Tikhonov
// solver "cholesky"): the same bits as in place, the callback polled on the calling
// thread with the report given, and a throw from it returns at once (Eigen's LLT of
// m = 2000 takes well over the 20 ms poll; the worker finishes in the background).
NYTRO_TEST(cholesky_on_an_abandonable_worker) {
    struct Stop : std::runtime_error {
        Stop() : std::runtime_error("stop") {}
    };
    const auto spd = [](Index m) {
        const MatrixD G = normal(m, m, 73);
        MatrixD A = G * G.transpose() / double(m);
        A.diagonal().array() += 1.0;
        return A;
    };
    const MatrixD A = spd(1000);
    MatrixD in_place = A, owned = A;
    CHECK(nytro::cholesky_lower_in_place<double>(in_place));
    Index calls = 0;
    bool reported = true, elsewhere = false;
    const auto caller = std::this_thread::get_id();
    const nytro::Callback count = [&](const nytro::Progress& p) {
        ++calls;
        reported = reported && std::string(p.stage) == "lambda" && p.done == 3 && p.total == 7;
        elsewhere = elsewhere || std::this_thread::get_id() != caller;
    };
    CHECK(nytro::detail::cholesky_lower_owned<double>(owned, count, {"lambda", 3, 7}));
    CHECK_BITWISE(owned, in_place);
    CHECK_MSG(reported && !elsewhere, std::string("the poll's report or thread is wrong"));
    MatrixD indefinite = -A;
    CHECK(!nytro::detail::cholesky_lower_owned<double>(indefinite, count, {"lambda", 3, 7}));
    MatrixD abandoned = spd(2000);
    const nytro::Callback stop = [](const nytro::Progress&) { throw Stop{}; };
    CHECK_THROWS(nytro::detail::cholesky_lower_owned<double>(abandoned, stop, {"factor", 0, 1}), Stop);
}

// The solves with U that stand in for products with R = U^-1 (FitFactor): sizes below,
// at and across the steps of 256 rows, right-hand sides narrow (column by column,
// right-looking for U^-T) and wide (tiles of columns, left-looking), the strict lower
// part of U NaN (never read), in double and float. Each against the dense solve, and the
// same bits for any thread count.
template <class T>
void solves_match_dense(double tolerance) {
    for (Index k : {1, 3, 255, 256, 257, 700, 1100}) {
        MatrixD clean = MatrixD(normal(k, k, 31 + k).triangularView<Eigen::Upper>());
        clean.diagonal().array() = clean.diagonal().array().abs() + 2.0 * std::sqrt(double(k));
        Matrix<T> U = clean.cast<T>();
        for (Index i = 0; i < k; ++i)
            for (Index j = 0; j < i; ++j) U(i, j) = std::numeric_limits<T>::quiet_NaN();
        const MatrixD exact = U.template cast<double>().template triangularView<Eigen::Upper>();
        for (Index q : {1, 2, 4, 5, 600}) {
            const Matrix<T> B = normal(k, q, 5 + q).cast<T>();
            const MatrixD expected = exact.triangularView<Eigen::Upper>().solve(B.template cast<double>());
            const MatrixD expected_t =
                exact.transpose().triangularView<Eigen::Lower>().solve(B.template cast<double>());
            Matrix<T> first, first_t;
            for (int threads : {1, 2, 3}) {
                const std::string label = "k=" + check::str(k) + " q=" + check::str(q) + " threads=" +
                                          check::str(threads);
                Matrix<T> out(k, q), out_t(k, q);
                nytro::detail::solve_upper<T>(U, B, out, threads);
                nytro::detail::solve_upper_transposed<T>(U, B, out_t, threads);
                const double error = check::relative_error(out, expected);
                const double error_t = check::relative_error(out_t, expected_t);
                CHECK_MSG(error <= tolerance, label + ": U^-1 B relative error " + check::str(error));
                CHECK_MSG(error_t <= tolerance, label + ": U^-T B relative error " + check::str(error_t));
                if (threads == 1) {
                    first = out;
                    first_t = out_t;
                } else {
                    CHECK_MSG(check::bitwise_equal(out, first), label + ": U^-1 B differs from 1 thread");
                    CHECK_MSG(check::bitwise_equal(out_t, first_t), label + ": U^-T B differs from 1 thread");
                }
            }
        }
    }
}

NYTRO_TEST(triangular_solves_double) { solves_match_dense<double>(1e-12); }
NYTRO_TEST(triangular_solves_float) { solves_match_dense<float>(1e-4); }

// The normal equations by both routes against H = A^T A, C = A^T Y formed densely here.
// The kernel-first route (K^T K, then R^T (K^T K) R) is taken only for float64, n >= 4k
// and cond(K_mm) <= 1 / sqrt(k eps) (1.1e7 at k = 40); its error is ~eps cond(K_mm),
// the other route's ~eps sqrt(cond(K_mm)).
NYTRO_TEST(normal_equations_by_both_routes) {
    struct Case {
        Index n, m;
        double sigma;
        bool kernel_first;
    };
    // On 4-d normal data with 40 centres, cond(K_mm) is 11 at sigma = 0.5, 1.6e6 at 3,
    // 1.5e7 at 4 and 3.6e8 at 6. n = 100 < 4 m: too few rows for the saving to matter.
    for (const Case& c : {Case{400, 40, 0.5, true}, Case{400, 40, 3.0, true}, Case{400, 40, 4.0, false},
                          Case{400, 40, 6.0, false}, Case{100, 40, 0.5, false}}) {
        const Problem p = make_problem(c.n, 4, c.m, 10, 2);
        const MatrixD K_mm = direct_kernel(p.centers, p.centers, c.sigma);
        const auto factor = nytro::nystrom_factor<double>(K_mm);
        MatrixD used(factor.rank(), 4);
        for (Index i = 0; i < factor.rank(); ++i) used.row(i) = p.centers.row(factor.support[std::size_t(i)]);
        CHECK_EQ(nytro::detail::kernel_first_is_accurate<double>(c.n, factor, 2), c.kernel_first);
        CHECK(!nytro::detail::kernel_first_is_accurate<float>(c.n, nytro::nystrom_factor<float>(K_mm.cast<float>()), 2));
        const MatrixD R = factor.R.triangularView<Eigen::Upper>();
        const MatrixD A = direct_kernel(p.X, used, c.sigma) * R;
        const auto normal = nytro::detail::stream_normal_equations<double>(p.X, p.Y, used, factor, c.sigma, 2, {});
        const double eps = std::numeric_limits<double>::epsilon(), cond = condition_number(K_mm);
        const double tol = c.kernel_first ? std::max(1e-13, 4 * eps * cond) : 1e-10;
        CHECK_NEAR((normal.H - A.transpose() * A).norm() / (A.transpose() * A).norm(), 0.0, tol);
        CHECK_BITWISE(normal.H, normal.H.transpose().eval());
        CHECK_NEAR((normal.C - A.transpose() * p.Y).norm() / (A.transpose() * p.Y).norm(), 0.0, tol);
    }
}

// The route without a factor (nytro::normal_equations with a null factor, nytro.dask's
// kernel-first chunks): K^T K and K^T Y on all the given centres, duplicates included,
// against the kernel from its definition; and the in-memory kernel-first route is those
// sums on the factor's support with R applied after them, bit for bit (one accumulation).
NYTRO_TEST(normal_equations_without_a_factor) {
    const Problem p = make_problem(400, 4, 30, 10, 2);
    MatrixD centers(40, 4);
    centers << p.centers, p.centers.topRows(10);
    nytro::NormalEquationsOptions options;
    options.n_threads = 2;
    const MatrixD K = direct_kernel(p.X, centers, p.sigma);
    const auto none = nytro::normal_equations<double>(p.X, p.Y, centers, nullptr, p.sigma, {}, options);
    CHECK_CLOSE(none.H, (K.transpose() * K).eval(), 1e-13);
    CHECK_BITWISE(none.H, none.H.transpose().eval());
    CHECK_CLOSE(none.C, (K.transpose() * p.Y).eval(), 1e-13);

    const auto factor = nytro::nystrom_factor<double>(direct_kernel(centers, centers, p.sigma));
    CHECK_EQ(factor.rank(), Index(30));
    CHECK(factor.upper_triangular);
    MatrixD used(30, 4);
    for (Index i = 0; i < 30; ++i) used.row(i) = centers.row(factor.support[std::size_t(i)]);
    CHECK(nytro::detail::kernel_first_is_accurate<double>(p.X.rows(), factor, 2));
    const auto first = nytro::detail::stream_normal_equations<double>(p.X, p.Y, used, factor, p.sigma, 2, {});
    const auto sums = nytro::normal_equations<double>(p.X, p.Y, used, nullptr, p.sigma, {}, options);
    MatrixD GR(30, 30), H(30, 30), C(30, 2);
    nytro::detail::multiply_right<double>(sums.H, factor.R, true, GR, 2);
    nytro::detail::multiply_left_transposed<double>(factor.R, true, GR, H, 2);
    nytro::detail::multiply_left_transposed<double>(factor.R, true, sums.C, C, 2);
    nytro::detail::mirror_lower<double>(H);
    CHECK_BITWISE(first.H, H);
    CHECK_BITWISE(first.C, C);
}

// A deferred hold-out kernel is recomputed for its first calls and stored at the call
// after store_after_, with the same RMSEs and predictions (up to the blocking of the
// products) as one stored at once. store_after_ is floor(first touch / recomputation)
// under the machine's rates, so they are pinned here (else the test reads whatever this
// machine measured): a first touch of 8 bytes per entry at 1e9 bytes/s against a
// recomputation of 2 (4 + 50) flops per entry at 3.375e10 flop/s is 2.5 recomputations.
NYTRO_TEST(deferred_validation_kernel_is_stored_after_recomputations) {
    nytro::MachineRates pinned;
    pinned.flops = 3.375e10;
    pinned.flops32 = 6.75e10;
    pinned.bytes = 1e10;
    pinned.fresh_bytes = 1e9;
    nytro::set_machine_rates(pinned);
    struct Unpin {
        ~Unpin() { nytro::set_machine_rates(nytro::MachineRates{}); }
    } unpin;
    const Problem p = make_problem(400, 4, 300, 500, 2);
    const MatrixD alphas = normal(300, 6, 41);
    const nytro::detail::Validation<double> eager(p.X_val, p.Y_val, p.centers, p.sigma, 2, false, 1e12);
    const nytro::detail::Validation<double> deferred(p.X_val, p.Y_val, p.centers, p.sigma, 2, false, 1e12, true);
    const nytro::detail::Validation<double> too_big(p.X_val, p.Y_val, p.centers, p.sigma, 2, false, 0.0, true);
    CHECK(eager.stored());
    for (int call = 1; call <= 4; ++call) {
        std::vector<double> expected, got, streamed;
        eager.rmse(alphas, 2, expected, 2);
        deferred.rmse(alphas, 2, got, 2);
        too_big.rmse(alphas, 2, streamed, 2);
        CHECK_CLOSE(path_of(got), path_of(expected), 1e-13);
        CHECK_CLOSE(path_of(streamed), path_of(expected), 1e-13);
        CHECK_EQ(deferred.stored(), call >= 3);
        CHECK(!too_big.stored());
    }
    CHECK_CLOSE(deferred.predict(alphas, 2), eager.predict(alphas, 2), 1e-13);
}

// A float32 hold-out kernel (storage="float32") that does not fit is streamed block by
// block in float32 too, and its blocks multiplied as the stored kernel is, so the
// predictions do not depend on whether it was stored: the same bits.
NYTRO_TEST(float32_validation_kernel_streams_as_stored) {
    // 2000 centres: streamed in blocks of 2097 rows, 3 of them.
    const Problem p = make_problem(2500, 4, 2000, 5000, 2);
    const MatrixD alphas = normal(2000, 6, 43);
    const nytro::detail::Validation<double> stored(p.X_val, p.Y_val, p.centers, p.sigma, 2, true, 1e12);
    const nytro::detail::Validation<double> streamed(p.X_val, p.Y_val, p.centers, p.sigma, 2, true, 0.0);
    const nytro::detail::Validation<double> float64(p.X_val, p.Y_val, p.centers, p.sigma, 2, false, 0.0);
    CHECK(stored.stored());
    CHECK(!streamed.stored());
    const MatrixD expected = stored.predict(alphas, 2);
    CHECK_BITWISE(streamed.predict(alphas, 2), expected);
    // The float64 kernel differs from the float32 one at float32's rounding.
    const double apart = check::relative_error(float64.predict(alphas, 2), expected);
    CHECK_MSG(apart > 1e-10 && apart < 1e-5, "float32 against float64 hold-out kernel: " + check::str(apart));
}

// multiply_widened: one and two columns by the row kernels, 3 to 96 on register tiles
// over depth chunks of 256 (depth below, at and across a chunk; 203 rows, ragged against
// the tiles' groups of 8 and tasks of 64), wider B by Eigen's GEMM on widened panels.
// Against the product of the widened matrix; the same bits on 1, 2 and 3 threads and,
// up to 96 columns, for any split of M's rows (the streamed hold-out kernel's blocks).
NYTRO_TEST(widened_products_match_double_products) {
    const Index rows = 203;
    for (const Index depth : {1, 7, 256, 600}) {
        const nytro::Matrix<float> M = normal(rows, depth, 51).cast<float>();
        for (const Index q : {1, 2, 3, 17, 25, 97}) {
            const MatrixD B = normal(depth, q, 52);
            const MatrixD expected = M.cast<double>() * B;
            MatrixD out(rows, q), again(rows, q), split(rows, q);
            nytro::detail::multiply_widened<double, float>(M, B, out, 2);
            CHECK_CLOSE(out, expected, 1e-13);
            nytro::detail::multiply_widened<double, float>(M, B, again, 3);
            CHECK_BITWISE(again, out);
            nytro::detail::multiply_widened<double, float>(M, B, again, 1);
            CHECK_BITWISE(again, out);
            if (q > nytro::detail::kWidenedNarrowColumns) continue;
            for (Index r0 = 0; r0 < rows; r0 += 37) {
                const Index count = std::min<Index>(37, rows - r0);
                nytro::detail::multiply_widened<double, float>(M.middleRows(r0, count), B, split.middleRows(r0, count),
                                                               2);
            }
            CHECK_BITWISE(split, out);
        }
    }
    const nytro::Matrix<float> M = normal(10, 5, 53).cast<float>();
    const MatrixD short_B = normal(4, 3, 54);
    MatrixD wrong(10, 3);
    CHECK_THROWS((nytro::detail::multiply_widened<double, float>(M, short_B, wrong, 1)), std::logic_error);
}
