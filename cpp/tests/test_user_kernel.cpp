// A kernel of one's own (nytro/user_kernel.hpp): a Gaussian written as a caller would
// write it gives nytro_path's path for the built-in Gaussian, for every method, with
// sample weights and several outputs; predictions and kernel matrices by blocks; and the
// refusals, each naming its argument.
#include "check.hpp"
#include "support.hpp"

#include <nytro/user_kernel.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace support;
using nytro::Method;
using nytro::Solver;

namespace {

// The Gaussian exp(-|x - z|^2 / (2 sigma^2)), entry by entry: what a user would write.
template <class T>
struct MyGaussian {
    double sigma = 1.0;
    void operator()(const nytro::MatrixCRef<T>& X, const nytro::MatrixCRef<T>& Z, nytro::MatrixRef<T> out) const {
        for (Index i = 0; i < X.rows(); ++i)
            for (Index j = 0; j < Z.rows(); ++j) {
                double r2 = 0.0;
                for (Index f = 0; f < X.cols(); ++f) {
                    const double diff = double(X(i, f)) - double(Z(j, f));
                    r2 += diff * diff;
                }
                out(i, j) = T(std::exp(-r2 / (2.0 * sigma * sigma)));
            }
    }
};

// Counts its calls and the largest block it was given.
struct Counting {
    mutable Index calls = 0, largest = 0;
    void operator()(const nytro::MatrixCRef<double>& X, const nytro::MatrixCRef<double>& Z,
                    nytro::MatrixRef<double> out) const {
        ++calls;
        largest = std::max(largest, X.rows() * Z.rows());
        out = direct_kernel(MatrixD(X), MatrixD(Z), 1.5);
    }
};

template <class T>
nytro::NytroOptions options_for(Method method, Index max_iter) {
    nytro::NytroOptions o;
    o.method = method;
    o.max_iter = max_iter;
    o.solver = Solver::gram;
    o.n_threads = 2;
    return o;
}

// The built-in Gaussian's path and the user kernel's agree: the same selected t and
// (for hybrid) lambda, the hold-out path and the coefficients to the kernel's rounding
// amplified by the path (tol).
template <class T>
void check_agree(const Problem& p, const nytro::NytroOptions& o, double tol, const std::string& what) {
    const Matrix<T> X = p.as<T>(p.X), Y = p.as<T>(p.Y), C = p.as<T>(p.centers);
    const Matrix<T> Xv = p.as<T>(p.X_val), Yv = p.as<T>(p.Y_val);
    const auto want = nytro::nytro_path<T>(X, Y, C, p.sigma, Xv, Yv, o);
    const auto got = nytro::user_kernel::nytro_path<T>(X, Y, C, MyGaussian<T>{p.sigma}, Xv, Yv, o);
    CHECK_MSG(got.n_iter == want.n_iter, what + ": t " + check::str(got.n_iter) + " vs " + check::str(want.n_iter));
    CHECK_EQ(got.iterations_run, want.iterations_run);
    CHECK_EQ(got.rank, want.rank);
    CHECK_CLOSE(path_of(got.validation_rmse), path_of(want.validation_rmse), tol);
    CHECK_CLOSE(got.coef, want.coef, tol);
    CHECK_NEAR(got.lambda, want.lambda, tol * std::abs(want.lambda));
    CHECK_NEAR(got.step_size, want.step_size, tol * want.step_size);
    CHECK(got.solver == Solver::gram);
}

}  // namespace

NYTRO_TEST(user_gaussian_follows_the_builtin_path_for_every_method) {
    const Problem p = make_problem(300, 4, 40, 100, 2);
    for (Method method : {Method::gd, Method::nu, Method::cg, Method::hybrid})
        check_agree<double>(p, options_for<double>(method, 200), 1e-9, nytro::to_string(method));
    check_agree<float>(p, options_for<float>(Method::gd, 100), 2e-3, "gd float");
}

NYTRO_TEST(user_gaussian_follows_the_builtin_path_with_weights) {
    const Problem p = make_problem(250, 3, 30, 90, 1, 7);
    auto o = options_for<double>(Method::gd, 300);
    o.sample_weights.resize(250);
    o.validation_sample_weights.resize(90);
    for (std::size_t i = 0; i < o.sample_weights.size(); ++i) o.sample_weights[i] = 1e-300 * double(1 + i % 5);
    for (std::size_t i = 0; i < o.validation_sample_weights.size(); ++i) o.validation_sample_weights[i] = double(i % 3);
    check_agree<double>(p, o, 1e-9, "weighted gd");
    o.method = Method::hybrid;
    check_agree<double>(p, o, 1e-9, "weighted hybrid");
    o.step_rule = nytro::StepRule::paper;
    o.method = Method::gd;
    check_agree<double>(p, o, 1e-9, "weighted gd, the paper's step");
}

NYTRO_TEST(user_kernel_blocks_and_predictions) {
    // 2048 centres: blocks of 2048 rows, so 5000 rows take three calls.
    const Problem p = make_problem(5000, 3, 2048, 0, 1, 3);
    Counting counting;
    const MatrixD K = nytro::user_kernel::kernel_matrix<double>(p.X, p.centers, counting);
    CHECK_EQ(counting.calls, Index(3));
    CHECK(counting.largest <= nytro::user_kernel::kBlockElements);
    CHECK_CLOSE(K, direct_kernel(p.X, p.centers, 1.5), 0.0);
    const MatrixD coef = normal(2048, 2, 11);
    const MatrixD predicted = nytro::user_kernel::kernel_predict<double>(p.X, p.centers, coef, counting);
    CHECK_CLOSE(predicted, MatrixD(direct_kernel(p.X, p.centers, 1.5) * coef), 1e-13);
    CHECK_CLOSE(predicted, nytro::kernel_predict<double>(p.X, p.centers, coef, 1.5), 1e-12);
}

NYTRO_TEST(user_kernel_refusals_name_their_argument) {
    const Problem p = make_problem(60, 3, 10, 20);
    const MyGaussian<double> k{1.5};
    auto run = [&](const nytro::NytroOptions& o) {
        return nytro::user_kernel::nytro_path<double>(p.X, p.Y, p.centers, k, p.X_val, p.Y_val, o);
    };
    auto o = options_for<double>(Method::gd, 10);
    o.solver = Solver::direct;
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "solver");
    o = options_for<double>(Method::gd, 10);
    o.storage = nytro::Storage::float32;
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "storage");
    o = options_for<double>(Method::gd, 10);
    o.metric = nytro::Metric::error;
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "metric");
    o = options_for<double>(Method::gd, 10);
    o.validation_weights = {1.0};
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "validation_weights");
    o = options_for<double>(Method::gd, 10);
    o.sample_weights = {1.0, 2.0};
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "sample_weights");
    o.sample_weights.assign(60, 0.0);
    CHECK_THROWS_WITH(run(o), std::invalid_argument, "sample_weights");
    o = options_for<double>(Method::gd, 10);
    const MatrixD wrong(20, 2);
    CHECK_THROWS_WITH(nytro::user_kernel::nytro_path<double>(p.X, p.Y, p.centers, k, wrong, p.Y_val, o),
                      std::invalid_argument, "X_val");
    CHECK_THROWS_WITH(nytro::user_kernel::nytro_path<double>(p.X, p.Y.topRows(59), p.centers, k, p.X_val, p.Y_val, o),
                      std::invalid_argument, "Y");
    // A kernel that is not symmetric on the centres, and one that returns NaN.
    auto skewed = [](const nytro::MatrixCRef<double>& X, const nytro::MatrixCRef<double>& Z,
                     nytro::MatrixRef<double> out) { out = X * Z.transpose() + X.rowwise().sum() * MatrixD::Ones(1, Z.rows()); };
    CHECK_THROWS_WITH(nytro::user_kernel::nytro_path<double>(p.X, p.Y, p.centers, skewed, p.X_val, p.Y_val, o),
                      std::invalid_argument, "symmetric");
    auto broken = [](const nytro::MatrixCRef<double>& X, const nytro::MatrixCRef<double>& Z,
                     nytro::MatrixRef<double> out) {
        out.setConstant(std::numeric_limits<double>::quiet_NaN());
        (void)X;
        (void)Z;
    };
    CHECK_THROWS_WITH(nytro::user_kernel::nytro_path<double>(p.X, p.Y, p.centers, broken, p.X_val, p.Y_val, o),
                      std::invalid_argument, "not finite");
}
