// The solvers' inner products against plain dense ones. The Gram solver's symmetric
// product reads only H's lower triangle, and must equal H b for every shape that crosses
// its blocking (slots of equal triangle area; blocks of up to 16 rows, fewer from
// k = 2048 on), for one and several right-hand columns, in float, double, and float
// storage with double compute; and give the same bits for any thread count.
//
// These tests reach into the library's private headers (cpp/src): the passes are
// internal, and testing them alone localises a failure that the path tests only show
// as a different iterate.
#include "check.hpp"
#include "support.hpp"

#include "symmetric_pass.hpp"

#include <limits>
#include <stdexcept>

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
