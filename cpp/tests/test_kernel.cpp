// gaussian_kernel and kernel_predict against the definition, in float and double.
#include "check.hpp"
#include "support.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

using namespace support;

namespace {

// Shapes that cross the kernel's 128 x 512 blocks, with ragged edges.
template <class T>
void kernel_matches_definition(double tol) {
    const MatrixD X = normal(300, 5, 11), Z = normal(700, 5, 12);
    const double sigma = 1.7;
    // The reference sees exactly the inputs the core sees (rounded to T).
    const MatrixD Xt = X.cast<T>().template cast<double>(), Zt = Z.cast<T>().template cast<double>();
    const MatrixD expected = direct_kernel(Xt, Zt, sigma);
    const Matrix<T> K = nytro::gaussian_kernel<T>(X.cast<T>(), Z.cast<T>(), sigma, 2);
    REQUIRE(K.rows() == 300 && K.cols() == 700);
    const double err = (K.template cast<double>() - expected).cwiseAbs().maxCoeff();
    CHECK_NEAR(err, 0.0, tol);
    CHECK(K.allFinite());
    CHECK(K.minCoeff() >= T(0) && K.maxCoeff() <= T(1));

    // Into a preallocated matrix: the same values.
    Matrix<T> out(300, 700);
    nytro::gaussian_kernel_into<T>(X.cast<T>(), Z.cast<T>(), sigma, out, 1);
    CHECK_BITWISE(out, K);

    // k(x, x) = 1 on the diagonal of K(X, X).
    const Matrix<T> KXX = nytro::gaussian_kernel<T>(X.cast<T>(), X.cast<T>(), sigma);
    const double diag_err = (KXX.diagonal().template cast<double>().array() - 1.0).abs().maxCoeff();
    CHECK_NEAR(diag_err, 0.0, tol);
}

template <class T>
void predict_matches_kernel_times_coef(double rtol) {
    // m = 2100 makes kernel_predict stream X in blocks of ~2000 rows: 3 blocks here.
    const MatrixD X = normal(4500, 2, 21), C = normal(2100, 2, 22);
    const double sigma = 0.8;
    for (Index q : {1, 3}) {
        const MatrixD coef = normal(2100, q, 23 + std::uint64_t(q));
        const MatrixD expected =
            nytro::gaussian_kernel<double>(X.cast<T>().template cast<double>(),
                                           C.cast<T>().template cast<double>(), sigma) *
            coef.cast<T>().template cast<double>();
        Index calls = 0, last_done = 0;
        const Matrix<T> got = nytro::kernel_predict<T>(
            X.cast<T>(), C.cast<T>(), coef.cast<T>(), sigma, 2, [&](const nytro::Progress& p) {
                ++calls;
                CHECK(p.done > last_done && p.done <= p.total && p.total == 4500);
                last_done = p.done;
            });
        CHECK_CLOSE(got, expected, rtol);
        CHECK(calls >= 2);
        CHECK_EQ(last_done, Index(4500));
    }
}

// Results of 64 MiB and more are written with non-temporal stores, each row's first
// entries up to a packet boundary plainly: the same bits as row blocks small enough to
// be stored plainly. m odd puts the rows' starts at every offset from the packets.
template <class T>
void streamed_kernel_matches_plain_blocks() {
    const Index m = 2049, n = Index((std::size_t(64) << 20) / (sizeof(T) * std::size_t(m))) + 3;
    const Matrix<T> X = normal(n, 4, 41).cast<T>(), Z = normal(m, 4, 42).cast<T>();
    const double sigma = 1.3;
    const Matrix<T> K = nytro::gaussian_kernel<T>(X, Z, sigma, 2);
    Matrix<T> into(n, m);
    nytro::gaussian_kernel_into<T>(X, Z, sigma, into, 2);
    Matrix<T> block(1000, m);
    bool same = true;
    for (Index r0 = 0; r0 < n; r0 += block.rows()) {
        const Index rows = std::min(block.rows(), n - r0);
        auto part = block.topRows(rows);
        nytro::gaussian_kernel_into<T>(X.middleRows(r0, rows), Z, sigma, part, 1);
        same = same && part == K.middleRows(r0, rows) && part == into.middleRows(r0, rows);
    }
    CHECK_MSG(same, std::string("the streamed kernel differs from its row blocks"));
}

// A kernel formed with a callback (called between the calling thread's tasks: Ctrl-C's
// interruption point) has the bits of one formed without, for 1 and 2 threads, whole or
// into an array; the callback sees "kernel" with the rows done, in order, up to all of
// them; a throw from it comes out of the call. A Matern kernel: a square root and a
// polynomial beside the exp, so that every step of the entries is compared.
template <class T>
void kernel_with_callback_keeps_its_bits() {
    // Some tens of milliseconds on one core: long enough for calls while it is formed.
    const Index n = 3000, m = 1100, d = 300;
    const Matrix<T> X = normal(n, d, 51).cast<T>(), Z = normal(m, d, 52).cast<T>();
    const nytro::KernelSpec spec(nytro::KernelType::matern, 1.5, {20.0});
    for (int threads : {1, 2}) {
        const Matrix<T> plain = nytro::kernel_matrix<T>(X, Z, spec, threads);
        Index last = -1;
        bool ordered = true;
        const nytro::Callback record = [&](const nytro::Progress& p) {
            ordered = ordered && std::string(p.stage) == "kernel" && p.total == n && p.done >= last && p.done <= n;
            last = p.done;
        };
        CHECK_BITWISE(nytro::kernel_matrix<T>(X, Z, spec, threads, record), plain);
        CHECK_MSG(ordered && last == n, "kernel progress out of order or short of n: last " + std::to_string(last));
        last = -1;
        Matrix<T> into(n, m);
        nytro::kernel_matrix_into<T>(X, Z, spec, into, threads, record);
        CHECK_BITWISE(into, plain);
        CHECK_MSG(ordered && last == n, std::string("kernel_matrix_into's progress out of order or short of n"));
        CHECK_THROWS_WITH(nytro::kernel_matrix<T>(X, Z, spec, threads,
                                                  [](const nytro::Progress&) { throw std::runtime_error("stop"); }),
                          std::runtime_error, "stop");
    }
}

}  // namespace

NYTRO_TEST(kernel_double_with_callback_keeps_its_bits) { kernel_with_callback_keeps_its_bits<double>(); }
NYTRO_TEST(kernel_float_with_callback_keeps_its_bits) { kernel_with_callback_keeps_its_bits<float>(); }

NYTRO_TEST(kernel_streamed_double_matches_blocks) { streamed_kernel_matches_plain_blocks<double>(); }
NYTRO_TEST(kernel_streamed_float_matches_blocks) { streamed_kernel_matches_plain_blocks<float>(); }

NYTRO_TEST(kernel_double_matches_definition) { kernel_matches_definition<double>(1e-12); }
NYTRO_TEST(kernel_float_matches_definition) { kernel_matches_definition<float>(4e-6); }

// Relative accuracy down to the smallest values the double kernel keeps: one point at 0
// and centres at distances that put the exponent t on [0, 700], against std::exp(-t)
// of the very t the core forms (x and z less the centres' mean, scaled by
// 1 / (sqrt(2) sigma), t = x'^2 + z'^2 - 2 x' z' in the core's order), so that only the
// exp's own error is left: a few ulp (its polynomial is written here, not Eigen's: a
// wrong coefficient shows as 1e-10 and more).
NYTRO_TEST(kernel_double_exp_relative_accuracy) {
    const Index count = 7001;
    MatrixD Z(count, 1), X = MatrixD::Zero(1, 1);
    const double sigma = 0.8, inverse = 1.0 / (std::sqrt(2.0) * sigma);
    for (Index j = 0; j < count; ++j) Z(j, 0) = std::sqrt(700.0 * double(j) / double(count - 1)) / inverse;
    const MatrixD K = nytro::gaussian_kernel<double>(X, Z, sigma, 2);
    const double shift = Z.colwise().mean()(0), x = (0.0 - shift) * inverse;
    double worst = 0;
    for (Index j = 0; j < count; ++j) {
        const double z = (Z(j, 0) - shift) * inverse;
        const double t = std::max(-((2.0 * (x * z) - z * z) - x * x), 0.0), expected = std::exp(-t);
        worst = std::max(worst, std::abs(K(0, j) - expected) / expected);
    }
    CHECK_MSG(worst <= 8 * std::numeric_limits<double>::epsilon(), "relative error " + check::str(worst));
    CHECK(K(0, 0) == 1.0);
}

NYTRO_TEST(kernel_single_row_and_column) {
    MatrixD x(1, 3), z(1, 3);
    x << 1, 2, 3;
    z << 1, 0, 3;
    const MatrixD K = nytro::gaussian_kernel<double>(x, z, 2.0);
    REQUIRE(K.rows() == 1 && K.cols() == 1);
    CHECK_NEAR(K(0, 0), std::exp(-4.0 / 8.0), 1e-15);
}

NYTRO_TEST(kernel_rejects_bad_arguments) {
    const MatrixD X = normal(5, 3, 1), Z = normal(4, 3, 2), Z2 = normal(4, 2, 3);
    for (double sigma : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
        CHECK_THROWS_WITH(nytro::gaussian_kernel<double>(X, Z, sigma), std::invalid_argument, "sigma");
    CHECK_THROWS(nytro::gaussian_kernel<double>(X, Z2, 1.0), std::invalid_argument);
    MatrixD wrong(5, 5);
    CHECK_THROWS(nytro::gaussian_kernel_into<double>(X, Z, 1.0, wrong), std::invalid_argument);
    const MatrixD coef = normal(3, 1, 4);  // 3 rows for 4 centres
    CHECK_THROWS_WITH(nytro::kernel_predict<double>(X, Z, coef, 1.0), std::invalid_argument, "coef");
    CHECK_THROWS(nytro::kernel_predict<double>(X, Z, normal(4, 1, 5), -2.0), std::invalid_argument);
}

NYTRO_TEST(kernel_absurd_size_is_out_of_memory) {
    if (nytro::physical_memory_bytes() == 0) return;  // nothing to compare with
    // 1e6 x 1e6 doubles = 8 TB: refused before allocating.
    const MatrixD X = MatrixD::Zero(1000000, 1);
    CHECK_THROWS_WITH(nytro::gaussian_kernel<double>(X, X, 1.0), nytro::out_of_memory, "kernel");
}

NYTRO_TEST(predict_double_matches_kernel_times_coef) { predict_matches_kernel_times_coef<double>(1e-12); }
NYTRO_TEST(predict_float_matches_kernel_times_coef) { predict_matches_kernel_times_coef<float>(1e-4); }

NYTRO_TEST(predict_callback_exception_propagates) {
    struct Stop {};
    const MatrixD X = normal(4500, 2, 31), C = normal(2100, 2, 32), coef = normal(2100, 1, 33);
    Index calls = 0;
    bool caught = false;
    try {
        nytro::kernel_predict<double>(X, C, coef, 1.0, 2, [&](const nytro::Progress&) {
            ++calls;
            throw Stop{};
        });
    } catch (const Stop&) {
        caught = true;
    }
    CHECK(caught);
    CHECK_EQ(calls, Index(1));
}

namespace {

// The Matern family and the linear kernel, with one bandwidth and one per feature,
// against their definitions from the differences (no norms-and-products form), shapes
// crossing the 128 x 512 blocks. Away from coincident points (the rows of X and Z are
// distinct draws) the rounding of the squared distance passes on as for the Gaussian.
template <class T>
void other_kernels_match_definition(double tol) {
    const MatrixD X = normal(300, 5, 51), Z = normal(700, 5, 52);
    const MatrixD Xt = X.cast<T>().template cast<double>(), Zt = Z.cast<T>().template cast<double>();
    const std::vector<double> one{1.3}, per_feature{0.5, 1.0, 1.5, 2.0, 2.5};
    for (const auto& sigma : {one, per_feature}) {
        for (const double nu : {0.5, 1.5, 2.5}) {
            const nytro::KernelSpec spec(nytro::KernelType::matern, nu, sigma);
            const Matrix<T> K = nytro::kernel_matrix<T>(X.cast<T>(), Z.cast<T>(), spec, 2);
            // Each entry's error against its own bound: the blocked evaluation rounds the
            // squared distance by about (d + 3) eps (|x|^2 + |z|^2) (scaled features), and
            // the kernel passes that on through dk/dr2, which for nu = 1/2 grows like
            // 1 / sqrt(r2) at close pairs; `tol` covers the kernel function's own rounding.
            const double gamma = double(X.cols() + 3) * double(std::numeric_limits<T>::epsilon());
            double worst = 0;
            for (Index i = 0; i < X.rows(); ++i)
                for (Index j = 0; j < Z.rows(); ++j) {
                    double r2 = 0, norms = 0;
                    for (Index p = 0; p < X.cols(); ++p) {
                        const double s = sigma[sigma.size() == 1 ? 0 : std::size_t(p)];
                        const double diff = (Xt(i, p) - Zt(j, p)) / s;
                        r2 += diff * diff;
                        norms += (Xt(i, p) / s) * (Xt(i, p) / s) + (Zt(j, p) / s) * (Zt(j, p) / s);
                    }
                    const double u = std::sqrt(2 * nu * r2);
                    const double poly = nu == 0.5 ? 1.0 : nu == 1.5 ? 1 + u : 1 + u + u * u / 3;
                    const double dpoly = nu == 0.5 ? 0.0 : nu == 1.5 ? 1.0 : 1 + 2 * u / 3;
                    const double dk_dr2 = std::abs(dpoly - poly) * std::exp(-u) * std::sqrt(2 * nu) / (2 * std::sqrt(r2));
                    const double error = std::abs(double(K(i, j)) - poly * std::exp(-u));
                    worst = std::max(worst, error / (tol + gamma * norms * dk_dr2));
                }
            CHECK_MSG(worst <= 1, "nu " + check::str(nu) + ": error " + check::str(worst) + " of its bound");
            // The Laplacian is Matern 1/2, to the bit.
            if (nu == 0.5)
                CHECK_BITWISE(K, nytro::kernel_matrix<T>(X.cast<T>(), Z.cast<T>(),
                                                         nytro::KernelSpec(nytro::KernelType::laplacian, 1.5, sigma)));
            // x = z gives exactly 1, however the sum of squares rounds.
            const Matrix<T> KZZ = nytro::kernel_matrix<T>(Z.cast<T>(), Z.cast<T>(), spec, 2);
            CHECK(KZZ.diagonal() == Matrix<T>::Ones(Z.rows(), 1));
        }
    }
    const Matrix<T> L = nytro::kernel_matrix<T>(X.cast<T>(), Z.cast<T>(),
                                                nytro::KernelSpec(nytro::KernelType::linear, 1.5, {}), 2);
    CHECK_NEAR((L.template cast<double>() - Xt * Zt.transpose()).cwiseAbs().maxCoeff(), 0.0, 10 * tol);
}

}  // namespace

NYTRO_TEST(other_kernels_double_match_definition) { other_kernels_match_definition<double>(16 * 2.220446049250313e-16); }
NYTRO_TEST(other_kernels_float_match_definition) { other_kernels_match_definition<float>(16 * 1.1920929e-07); }

NYTRO_TEST(kernel_spec_rejects_bad_values) {
    const MatrixD X = normal(4, 3, 61);
    using nytro::KernelSpec;
    using nytro::KernelType;
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(X, X, KernelSpec(KernelType::matern, 1.0, {1.0})),
                      std::invalid_argument, "nu");
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(X, X, KernelSpec(KernelType::laplacian, 1.5, {1.0, 2.0})),
                      std::invalid_argument, "sigma has 2 entries");
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(X, X, KernelSpec(KernelType::gaussian, 1.5, {1.0, 0.0, 1.0})),
                      std::invalid_argument, "sigma must be a finite number > 0");
    CHECK_THROWS_WITH(nytro::parse_kernel_type("rbf"), std::invalid_argument, "kernel must be");
    // A type cast from an out-of-range integer was computed as some other kernel.
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(X, X, KernelSpec(static_cast<KernelType>(9), 1.5, {1.0})),
                      std::invalid_argument, "kernel has no valid type");
    // NaN in the data was reported as "X / sigma overflows".
    MatrixD with_nan = X;
    with_nan(1, 2) = std::nan("");
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(with_nan, X, 1.0), std::invalid_argument, "X contains NaN");
    CHECK_THROWS_WITH(nytro::kernel_matrix<double>(X, with_nan, 1.0), std::invalid_argument, "Z contains NaN");
    // The linear kernel has no bandwidth to check.
    CHECK(nytro::kernel_matrix<double>(X, X, KernelSpec(KernelType::linear, 1.5, {})).allFinite());
}
