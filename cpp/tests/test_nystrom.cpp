// nystrom_factor: for every method P = R R^T is a generalised inverse of K_mm
// (P K P = P and K P K = K); duplicated centres are detected by the rank-revealing ones.
#include "check.hpp"
#include "support.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

using namespace support;
using nytro::FactorMethod;

namespace {

constexpr double kJitter = 1e-10;
const FactorMethod kMethods[] = {FactorMethod::pivoted, FactorMethod::qr, FactorMethod::cholesky};

const char* name(FactorMethod method) {
    switch (method) {
        case FactorMethod::pivoted: return "pivoted";
        case FactorMethod::qr: return "qr";
        case FactorMethod::cholesky: return "cholesky";
    }
    return "?";
}

// max|a - b| / max|b| <= tol, the failure message naming `what`.
void expect_close(const MatrixD& a, const MatrixD& b, double tol, const std::string& what) {
    const double err = check::relative_error(a, b);
    if (check::verbose()) check::note(__FILE__, __LINE__, what + ": relative error " + check::str(err));
    CHECK_MSG(err <= tol, what + ": relative error " + check::str(err) + " > " + check::str(tol));
}

// The factor's structure as documented in nystrom.hpp; returns the dense m x k R.
template <class T>
MatrixD checked_dense(const nytro::NystromFactor<T>& factor, Index m, FactorMethod method) {
    CHECK_EQ(Index(factor.support.size()), factor.R.rows());
    CHECK_EQ(factor.rank(), factor.R.cols());
    for (Index s : factor.support) CHECK(s >= 0 && s < m);
    CHECK_EQ(factor.upper_triangular, method != FactorMethod::qr);
    if (method != FactorMethod::pivoted) CHECK_EQ(Index(factor.support.size()), m);
    CHECK(factor.R.allFinite());
    // Upper triangular R is stored with zeros below the diagonal (at full rank the
    // pivoted factor inverts in K_mm's storage, whose lower part held K_mm).
    if (factor.upper_triangular)
        CHECK_MSG(factor.R.template triangularView<Eigen::StrictlyLower>().toDenseMatrix().isZero(0),
                  std::string(name(method)) + ": R has entries below its diagonal");
    return factor.dense(m).template cast<double>();
}

template <class T>
void generalised_inverse(double tol) {
    // cond(K_mm) in the low thousands (standard normal centres, sigma = 1.5, m = 40).
    const MatrixD C = normal(40, 4, 5);
    const MatrixD K = direct_kernel(C, C, 1.5);
    const MatrixD K_t = K.cast<T>().template cast<double>();
    const MatrixD pinv = spectral(K_t, [](double w) { return 1.0 / w; });
    for (FactorMethod method : kMethods) {
        const auto factor = nytro::nystrom_factor<T>(K.cast<T>(), {method, -1.0, kJitter}, 2);
        const MatrixD R = checked_dense(factor, 40, method);
        const MatrixD P = R * R.transpose();
        const std::string what = std::string(name(method)) + " " + (sizeof(T) == 4 ? "float" : "double");
        // cholesky inverts K_mm + jitter I: off by about jitter * ||inv(K_mm)|| relative.
        const double tol_m = method == FactorMethod::cholesky ? tol + 10 * kJitter * largest_eigenvalue(pinv) : tol;
        expect_close(P * K_t * P, P, tol_m, what + ": P K P = P");
        expect_close(K_t * P * K_t, K_t, tol_m, what + ": K P K = K");
        // K_mm is nonsingular: every method gives the inverse itself.
        CHECK_EQ(factor.rank(), Index(40));
        expect_close(P, pinv, tol_m, what + ": R R^T = inv(K_mm)");
    }
}

// 25 distinct centres, 15 of them repeated once, the copies spread among the originals.
MatrixD duplicated_centres() {
    const MatrixD distinct = normal(25, 3, 8);
    MatrixD C(40, 3);
    const auto order = nytro::sample_centers(40, 40, 9);
    for (Index i = 0; i < 40; ++i) C.row(order[std::size_t(i)]) = distinct.row(i < 25 ? i : i - 25);
    return C;
}

template <class T>
void duplicates_rank(double tol) {
    const MatrixD C = duplicated_centres();
    const MatrixD K_t = direct_kernel(C, C, 1.5).cast<T>().template cast<double>();
    for (FactorMethod method : {FactorMethod::pivoted, FactorMethod::qr}) {
        const auto factor = nytro::nystrom_factor<T>(K_t.cast<T>(), {method, -1.0, kJitter}, 2);
        const std::string what = std::string(name(method)) + " " + (sizeof(T) == 4 ? "float" : "double");
        CHECK_MSG(factor.rank() == 25, what + ": rank " + check::str(factor.rank()));
        const MatrixD R = checked_dense(factor, 40, method);
        const MatrixD P = R * R.transpose();
        expect_close(P * K_t * P, P, tol, what + ": P K P = P");
        expect_close(K_t * P * K_t, K_t, tol, what + ": K P K = K");
    }
}

// m = 300 (five 64-row panels of the blocked pivoted factor, whose rows get the later
// panels' swaps at the end): 200 distinct centres in 10 dimensions, 100 of them repeated,
// the copies spread among the originals so that pivots swap across panels.
template <class T>
void pivoted_across_panels(double tol) {
    const MatrixD distinct = normal(200, 10, 12);
    MatrixD C(300, 10);
    const auto order = nytro::sample_centers(300, 300, 13);
    for (Index i = 0; i < 300; ++i) C.row(order[std::size_t(i)]) = distinct.row(i < 200 ? i : i - 200);
    const MatrixD K_t = direct_kernel(C, C, 2.0).cast<T>().template cast<double>();
    const auto factor = nytro::nystrom_factor<T>(K_t.cast<T>(), {FactorMethod::pivoted, -1.0, kJitter}, 2);
    const std::string what = std::string("pivoted m=300 ") + (sizeof(T) == 4 ? "float" : "double");
    CHECK_MSG(factor.rank() == 200, what + ": rank " + check::str(factor.rank()));
    const MatrixD R = checked_dense(factor, 300, FactorMethod::pivoted);
    const MatrixD P = R * R.transpose();
    expect_close(P * K_t * P, P, tol, what + ": P K P = P");
    expect_close(K_t * P * K_t, K_t, tol, what + ": K P K = K");
}

}  // namespace

NYTRO_TEST(factor_double_is_generalised_inverse) { generalised_inverse<double>(1e-8); }
NYTRO_TEST(factor_float_is_generalised_inverse) { generalised_inverse<float>(2e-2); }
NYTRO_TEST(factor_double_duplicated_centres_rank) { duplicates_rank<double>(1e-8); }
NYTRO_TEST(factor_float_duplicated_centres_rank) { duplicates_rank<float>(2e-2); }

NYTRO_TEST(factor_double_pivoted_across_panels) { pivoted_across_panels<double>(1e-8); }
NYTRO_TEST(factor_float_pivoted_across_panels) { pivoted_across_panels<float>(2e-2); }

NYTRO_TEST(factor_pivoted_support_skips_duplicates) {
    const MatrixD C = duplicated_centres();
    const auto factor = nytro::nystrom_factor<double>(direct_kernel(C, C, 1.5));
    std::vector<Index> support = factor.support;
    std::sort(support.begin(), support.end());
    CHECK(std::adjacent_find(support.begin(), support.end()) == support.end());
    // No two supported centres are the same point.
    for (std::size_t a = 0; a < support.size(); ++a)
        for (std::size_t b = a + 1; b < support.size(); ++b)
            CHECK(C.row(support[a]) != C.row(support[b]));
}

NYTRO_TEST(factor_rejects_bad_arguments) {
    const MatrixD K = MatrixD::Identity(4, 4);
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(MatrixD(3, 4)), std::invalid_argument, "K_mm");
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(MatrixD(0, 0)), std::invalid_argument, "K_mm");
    MatrixD with_nan = K;
    with_nan(1, 2) = std::nan("");
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(with_nan), std::invalid_argument, "K_mm");
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(K, {FactorMethod::pivoted, 1.0, 1e-10}), std::invalid_argument,
                      "rank_tol");
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(K, {FactorMethod::cholesky, -1.0, -1.0}),
                      std::invalid_argument, "jitter");
    // dense(m) with fewer rows than the support's centres wrote past its result.
    for (const FactorMethod method : {FactorMethod::pivoted, FactorMethod::qr, FactorMethod::cholesky}) {
        const auto factor = nytro::nystrom_factor<double>(K, {method, -1.0, 1e-10});
        CHECK_EQ(factor.dense(4).rows(), Index(4));
        CHECK_THROWS_WITH(factor.dense(2), std::invalid_argument, "m=2");
    }
}

NYTRO_TEST(factor_numerical_failures_are_runtime_errors) {
    for (FactorMethod method : {FactorMethod::pivoted, FactorMethod::qr})
        CHECK_THROWS(nytro::nystrom_factor<double>(MatrixD::Zero(3, 3), {method, -1.0, kJitter}), std::runtime_error);
    MatrixD indefinite(2, 2);
    indefinite << 1, 2, 2, 1;
    CHECK_THROWS_WITH(nytro::nystrom_factor<double>(indefinite, {FactorMethod::cholesky, -1.0, 0.0}),
                      std::runtime_error, "jitter");
}

namespace {

// A stand-in for LAPACK's dpotrf (column-major, uplo = 'U', unblocked), so that the
// layout conversion in cholesky_lower_in_place is tested without a LAPACK at hand: the
// Python tests run the same code against SciPy's real ?potrf.
void column_major_upper_potrf(char* uplo, int* n, double* a, int* lda, int* info) {
    CHECK_EQ(*uplo, 'U');
    const int size = *n, ld = *lda;
    auto at = [&](int i, int j) -> double& { return a[i + std::size_t(j) * ld]; };
    *info = 0;
    for (int j = 0; j < size; ++j) {
        double d = at(j, j);
        for (int k = 0; k < j; ++k) d -= at(k, j) * at(k, j);
        if (!(d > 0)) {
            *info = j + 1;
            return;
        }
        at(j, j) = std::sqrt(d);
        for (int i = j + 1; i < size; ++i) {
            double s = at(j, i);
            for (int k = 0; k < j; ++k) s -= at(k, j) * at(k, i);
            at(j, i) = s / at(j, j);
        }
    }
}

template <class T>
void cholesky_factors(double tol) {
    const MatrixD B = normal(50, 50, 11);
    const MatrixD A = B * B.transpose() + 50 * MatrixD::Identity(50, 50);
    nytro::Matrix<T> F = A.cast<T>();
    CHECK(nytro::cholesky_lower_in_place<T>(F));
    const MatrixD L = F.template triangularView<Eigen::Lower>().toDenseMatrix().template cast<double>();
    expect_close(L * L.transpose(), A, tol, "L L^T = A");
    MatrixD indefinite = A;
    indefinite(7, 7) = -1.0;
    nytro::Matrix<T> G = indefinite.cast<T>();
    CHECK(!nytro::cholesky_lower_in_place<T>(G));
    // NaN is no positive pivot: Eigen's test (<= 0) passed it and reported success.
    for (const auto& [row, col] : {std::pair<Index, Index>{7, 7}, {30, 12}}) {
        MatrixD with_nan = A;
        with_nan(row, col) = with_nan(col, row) = std::nan("");
        nytro::Matrix<T> H = with_nan.cast<T>();
        CHECK(!nytro::cholesky_lower_in_place<T>(H));
    }
    nytro::Matrix<T> empty(0, 0);
    CHECK(nytro::cholesky_lower_in_place<T>(empty));
}

}  // namespace

NYTRO_TEST(cholesky_factors_and_reports_indefinite) {
    CHECK(!nytro::has_lapack_potrf());
    cholesky_factors<double>(1e-14);
    cholesky_factors<float>(1e-6);
    nytro::set_lapack_potrf(column_major_upper_potrf, nullptr);
    CHECK(nytro::has_lapack_potrf());
    cholesky_factors<double>(1e-14);
    nytro::set_lapack_potrf(nullptr, nullptr);
}

// normal_equations (nytro/normal_equations.hpp) with the factors nystrom_factor returns
// (upper triangular; the pivoted one's support a subset of the centres, duplicates
// dropped), by both routes, against A = S K R formed from the definition: the A route's
// error ~eps (n + m) and the kernel-first route's ~eps cond(K_mm) (relative to max|H|).
NYTRO_TEST(normal_equations_match_direct_products) {
    support::Problem p = make_problem(300, 4, 40, 1, 2);
    p.centers.row(7) = p.centers.row(3);  // a duplicate: the pivoted support leaves one out
    const Index n = p.X.rows(), m = p.centers.rows();
    VectorD scale(n);
    for (Index i = 0; i < n; ++i) scale[i] = 0.5 + double(i % 7) / 4;
    const MatrixD K_mm = direct_kernel(p.centers, p.centers, p.sigma);
    for (FactorMethod method : {FactorMethod::pivoted, FactorMethod::cholesky}) {
        const auto factor = nytro::nystrom_factor<double>(K_mm, {method, -1.0, kJitter});
        const MatrixD R = factor.dense(m);
        const MatrixD A = scale.asDiagonal() * direct_kernel(p.X, p.centers, p.sigma) * R;
        const MatrixD SY = scale.asDiagonal() * p.Y;
        const MatrixD H = A.transpose() * A, C = A.transpose() * SY;
        const double eps = std::numeric_limits<double>::epsilon();
        const double cond = double(R.cols()) * largest_eigenvalue(R.transpose() * R);  // k ||R||^2 >= cond
        for (bool kernel_first : {false, true}) {
            nytro::NormalEquationsOptions options;
            options.kernel_first = kernel_first;
            const auto got = nytro::normal_equations<double>(p.X, SY, p.centers, &factor, p.sigma, scale, options);
            const double tol = 16 * eps * (double(n + m) + (kernel_first ? cond : std::sqrt(cond)));
            const std::string what = std::string(name(method)) + (kernel_first ? " kernel-first" : " A route");
            CHECK(got.H == got.H.transpose());
            expect_close(got.H, H, tol, what + " H");
            expect_close(got.C, C, tol, what + " C");
        }
    }
    CHECK_THROWS_WITH(nytro::normal_equations<double>(p.X, p.Y.topRows(5), p.centers, nullptr, p.sigma, VectorD()),
                      std::invalid_argument, "Y");
    // NaN in Y or row_scale made C or H NaN without an error (X's is the kernel's to refuse).
    MatrixD Y_nan = p.Y;
    Y_nan(2, 0) = std::nan("");
    CHECK_THROWS_WITH(nytro::normal_equations<double>(p.X, Y_nan, p.centers, nullptr, p.sigma, VectorD()),
                      std::invalid_argument, "Y contains NaN");
    VectorD scale_nan = VectorD::Ones(p.X.rows());
    scale_nan[4] = std::nan("");
    CHECK_THROWS_WITH(nytro::normal_equations<double>(p.X, p.Y, p.centers, nullptr, p.sigma, scale_nan),
                      std::invalid_argument, "row_scale");
}

// The dense solvers on their edge cases: an empty matrix (Eigen's eigensolver crashed on
// it), and NaN given to the pivoted QR (an empty range, k = 0, without an error).
NYTRO_TEST(dense_solvers_edge_cases) {
    nytro::Vector<double> w;
    MatrixD V;
    nytro::symmetric_eigen<double>(MatrixD(0, 0), w, V);
    CHECK(w.size() == 0 && V.size() == 0);
    const MatrixD K = MatrixD::Identity(3, 3);
    CHECK_THROWS_WITH(nytro::pivoted_qr_range<double>(K, std::nan("")), std::invalid_argument, "rank_tol");
    MatrixD K_nan = K;
    K_nan(1, 1) = std::nan("");
    CHECK_THROWS_WITH(nytro::pivoted_qr_range<double>(K_nan, 1e-10), std::invalid_argument, "NaN");
    CHECK_EQ(nytro::pivoted_qr_range<double>(K, 1e-10).cols(), Index(3));
}
