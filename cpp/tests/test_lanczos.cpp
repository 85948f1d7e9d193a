// Gradient descent's iterates from a Lanczos basis (Iterates::lanczos) against the
// stepwise iterates, on the public paths (both NYTRO solvers, Landweber, every stopping
// rule, several outputs) and on diagonal problems with a closed form, including one whose
// spectrum is too flat for the basis to certify the path, which must then step, and one
// where a rule that can stop early outgrows the basis after a few certified stretches.
#include "check.hpp"
#include "support.hpp"

#include "paths/gradient_path.hpp"
#include "paths/holdout_images.hpp"
#include "paths/validation.hpp"

#include <cmath>
#include <limits>

using namespace support;
using nytro::Iterates;
using nytro::Solver;
using nytro::Stopping;

namespace {

template <class T>
nytro::PathResult<T> run(const Problem& p, nytro::NytroOptions o, Iterates iterates, bool holdout = true) {
    o.iterates = iterates;
    o.n_threads = 2;
    const Matrix<T> X = p.as<T>(p.X), Y = p.as<T>(p.Y), C = p.as<T>(p.centers);
    const Matrix<T> Xv = holdout ? p.as<T>(p.X_val) : Matrix<T>(0, p.X.cols());
    const Matrix<T> Yv = holdout ? p.as<T>(p.Y_val) : Matrix<T>(0, p.Y.cols());
    return nytro::nytro_path<T>(X, Y, C, p.sigma, Xv, Yv, o);
}

// The coefficients over the centres are ill-conditioned (float32 runs differ from float64
// by 1-2% in them, stepwise or not), so they are compared through their predictions.
template <class T>
void same_path(const Problem& p, const nytro::PathResult<T>& lanczos, const nytro::PathResult<T>& stepwise,
               double rtol) {
    CHECK_EQ(lanczos.n_iter, stepwise.n_iter);
    CHECK_EQ(lanczos.iterations_run, stepwise.iterations_run);
    // The automatic step's Lanczos runs in the basis' block products, whose rounding may
    // differ from single-column products (float32: its Ritz value settles at ~1e-7).
    CHECK_NEAR(lanczos.step_size, stepwise.step_size, rtol * stepwise.step_size);
    CHECK_EQ(stepwise.products, stepwise.iterations_run);
    CHECK_CLOSE(path_of(lanczos.validation_rmse), path_of(stepwise.validation_rmse), rtol);
    const MatrixD K_val = direct_kernel(p.X_val, lanczos.coef.rows() == p.centers.rows() ? p.centers : p.X, p.sigma);
    CHECK_CLOSE((K_val * lanczos.coef.template cast<double>()).eval(),
                (K_val * stepwise.coef.template cast<double>()).eval(), 10 * rtol);
}

// A diagonal H with eigenvalues `values` > 0 and c = 1: beta_t = (1 - (1 - s h)^t) / h.
struct Diagonal {
    Eigen::VectorXd values;
    nytro::detail::LinearProblem<double> problem;

    explicit Diagonal(const Eigen::VectorXd& h) : values(h) {
        problem.dim = problem.alpha_rows = h.size();
        problem.q = 1;
        problem.rhs = Matrix<double>::Ones(h.size(), 1);
        problem.apply = [this](const Matrix<double>& p, Matrix<double>& out) { out = values.asDiagonal() * p; };
        problem.to_alpha = [](const nytro::MatrixCRef<double>& betas, nytro::MatrixRef<double> alphas) { alphas = betas; };
        problem.iteration_bytes = 1e9;  // as costly as a large Gram product
    }

    MatrixD beta(double step, Index t) const {
        MatrixD out(values.size(), 1);
        for (Index i = 0; i < values.size(); ++i)
            // 1 - (1 - s h)^t without the cancellation for small s h
            out(i, 0) = -std::expm1(double(t) * std::log1p(-step * values[i])) / values[i];
        return out;
    }

    nytro::PathResult<double> run(double step, Index t, Iterates iterates,
                                  const nytro::detail::Validation<double>* validation = nullptr,
                                  Index patience = 0) const {
        nytro::IterativeOptions o;
        o.max_iter = t;
        o.iterates = iterates;
        o.patience = patience;
        o.n_threads = 2;
        nytro::PathResult<double> result;
        nytro::detail::run_path<double>(problem, step, validation, o, result);
        return result;
    }
};

}  // namespace

NYTRO_TEST(lanczos_equals_stepwise_for_both_solvers) {
    const Problem p = make_problem(600, 4, 150, 120, 2);
    for (Solver solver : {Solver::direct, Solver::gram}) {
        nytro::NytroOptions o;
        o.solver = solver;
        o.max_iter = 400;
        const auto lanczos = run<double>(p, o, Iterates::lanczos);
        const auto stepwise = run<double>(p, o, Iterates::stepwise);
        same_path(p, lanczos, stepwise, 1e-11);
        CHECK(lanczos.products < 100);  // against 400 stepwise
        // The automatic choice takes the basis for both solvers at this size.
        CHECK_EQ(run<double>(p, o, Iterates::automatic).products, lanczos.products);

        const auto lanczos_f = run<float>(p, o, Iterates::lanczos);
        const auto stepwise_f = run<float>(p, o, Iterates::stepwise);
        // float32 rounding enters the projected system once per product and 400 iterates
        // amplify it (why "auto" steps in float32): the validation paths differ by 1.2e-5
        // in the Release build (AVX-512), 1.4e-4 in a sanitizer build (-O2) and 4.0e-4 in a
        // portable SSE2 build without fused multiply-adds (predictions: 1.3e-3, -, 3.4e-3).
        same_path(p, lanczos_f, stepwise_f, 1e-3);

        const auto no_holdout = run<double>(p, o, Iterates::lanczos, false);
        CHECK(no_holdout.validation_rmse.empty());
        CHECK_EQ(no_holdout.n_iter, Index(400));
        CHECK_CLOSE(no_holdout.coef, run<double>(p, o, Iterates::stepwise, false).coef, 1e-9);
    }
}

NYTRO_TEST(lanczos_follows_every_stopping_rule) {
    const Problem p = make_problem(600, 4, 150, 120, 1);
    for (Stopping rule : {Stopping::relative, Stopping::window, Stopping::best}) {
        nytro::NytroOptions o;
        o.solver = Solver::gram;
        o.max_iter = 300;
        o.stopping = rule;
        o.tol = rule == Stopping::relative ? 1e-3 : 1e-6;
        if (rule == Stopping::best) o.patience = 20;
        same_path(p, run<double>(p, o, Iterates::lanczos), run<double>(p, o, Iterates::stepwise), 1e-11);
    }
}

NYTRO_TEST(lanczos_zero_output_column_stays_zero) {
    Problem p = make_problem(400, 3, 80, 60, 2);
    p.Y.col(1).setZero();
    nytro::NytroOptions o;
    o.solver = Solver::gram;
    o.max_iter = 200;
    const auto both = run<double>(p, o, Iterates::lanczos);
    CHECK(both.coef.col(1).isZero(0));
    Problem first = p;
    first.Y = p.Y.leftCols(1);
    first.Y_val = p.Y_val.leftCols(1);
    const auto alone = run<double>(first, o, Iterates::lanczos);
    CHECK_CLOSE(MatrixD(both.coef.col(0)), alone.coef, 1e-12);
}

NYTRO_TEST(lanczos_landweber_equals_stepwise) {
    const Problem p = make_problem(300, 4, 30, 60, 1);
    nytro::IterativeOptions o;
    o.max_iter = 300;
    o.n_threads = 2;
    nytro::PathResult<double> r[2];
    for (int i = 0; i < 2; ++i) {
        o.iterates = i == 0 ? Iterates::lanczos : Iterates::stepwise;
        r[i] = nytro::landweber_path<double>(p.X, p.Y, p.sigma, p.X_val, p.Y_val, o);
    }
    same_path(p, r[0], r[1], 1e-11);
    CHECK(r[0].products < 150);
}

NYTRO_TEST(lanczos_diagonal_closed_form) {
    // Two well separated clusters: the Krylov space is nearly two-dimensional.
    Eigen::VectorXd h(1000);
    for (Index i = 0; i < h.size(); ++i) h[i] = i % 2 ? 1.0 - 1e-3 * double(i) / 1000 : 1e-3 * double(i + 1) / 1000;
    const Diagonal diagonal(h);
    const double step = 1.0 / h.maxCoeff();
    for (Index t : {1, 5, 300, 2000}) {
        const auto r = diagonal.run(step, t, Iterates::lanczos);
        CHECK_CLOSE(r.coef, diagonal.beta(step, t), 1e-12);
        CHECK(r.products < 60);
        CHECK_EQ(r.iterations_run, t);
    }
}

NYTRO_TEST(unstable_step_is_an_error_not_a_model) {
    // lambda_max = 1 and a step of 2.5: the top mode grows as 1.5^t, still finite after 100
    // iterations (4e17), and was returned as the model. The residual c - H beta exceeds
    // |c| as soon as the step is unstable, on the stepwise path and on the projected one.
    Eigen::VectorXd h(10);
    for (Index i = 0; i < h.size(); ++i) h[i] = double(i + 1) / double(h.size());
    const Diagonal diagonal(h);
    for (Iterates iterates : {Iterates::stepwise, Iterates::lanczos})
        CHECK_THROWS_WITH(diagonal.run(2.5, 100, iterates), std::runtime_error, "diverged");
    // A stable step up to the limit 2 / lambda_max passes (the top mode's factor is -1).
    for (Iterates iterates : {Iterates::stepwise, Iterates::lanczos})
        CHECK_CLOSE(diagonal.run(2.0, 100, iterates).coef, diagonal.beta(2.0, 100), 1e-9);
}

NYTRO_TEST(non_finite_rhs_is_an_error_not_a_crash) {
    // A^T y of inf or NaN (a linear kernel on |x| ~ 1e120, with the spectral solver and
    // LAPACK's eigensolver): the Krylov column was left unstarted yet open, and its first
    // step read past the empty basis (a segfault from Python).
    Eigen::VectorXd h(10);
    for (Index i = 0; i < h.size(); ++i) h[i] = double(i + 1) / double(h.size());
    for (const double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
        Diagonal diagonal(h);
        diagonal.problem.rhs(3, 0) = bad;
        CHECK_THROWS_WITH(diagonal.run(0.5, 20, Iterates::lanczos), std::runtime_error, "not finite");
        nytro::IterativeOptions cg;
        cg.method = nytro::Method::cg;
        cg.max_iter = 20;
        nytro::PathResult<double> result;
        CHECK_THROWS_WITH(nytro::detail::run_path<double>(diagonal.problem, 0.0, nullptr, cg, result),
                          std::runtime_error, "not finite");
    }
}

NYTRO_TEST(lanczos_flat_spectrum_falls_back_to_steps) {
    // Eigenvalues spread evenly over (0, 1]: 70 iterates need more than the 35 steps the
    // basis may take for them, so the path is stepped, and pays for the attempt.
    Eigen::VectorXd h(3000);
    for (Index i = 0; i < h.size(); ++i) h[i] = double(i + 1) / double(h.size());
    const Diagonal diagonal(h);
    const auto r = diagonal.run(1.0, 70, Iterates::lanczos);
    const auto stepwise = diagonal.run(1.0, 70, Iterates::stepwise);
    CHECK_BITWISE(r.coef, stepwise.coef);
    CHECK(r.products > 70);
    CHECK(r.products <= 70 + 35);
    CHECK_EQ(stepwise.products, Index(70));
    CHECK_CLOSE(r.coef, diagonal.beta(1.0, 70), 1e-12);
    // A short path on the same spectrum is within the basis: exact for t <= k.
    const auto short_path = diagonal.run(1.0, 20, Iterates::lanczos);
    CHECK(short_path.products <= 20);
    CHECK_CLOSE(short_path.coef, diagonal.beta(1.0, 20), 1e-12);
}

NYTRO_TEST(lanczos_growth_failing_midway_steps_from_the_start) {
    // A rule that can stop early (best with patience) but does not, on a diagonal H with
    // eigenvalues ((i + 1) / 3000)^2: the basis is certified a stretch at a time (64
    // iterates, then twice as far). 1000 iterates fit in a basis of a few hundred vectors;
    // 20000 need more than its 512. The growth then fails in a later stretch and the path
    // is stepped from t = 0: the same bits, validation path and selection as stepping
    // alone. The hold-out targets are the predictions of the limit H^-1 c, so that the
    // selected iterate is a late one.
    Eigen::VectorXd h(3000);
    for (Index i = 0; i < h.size(); ++i) h[i] = std::pow(double(i + 1) / double(h.size()), 2.0);
    const Diagonal diagonal(h);
    const MatrixD X_val = normal(40, 2, 5), centers = normal(3000, 2, 6);
    const MatrixD Y_val = direct_kernel(X_val, centers, 1.0) * h.cwiseInverse();
    const nytro::detail::Validation<double> validation(X_val, Y_val, centers, 1.0, 2, false, 1e12);
    const Index patience = 100000;
    const auto early = diagonal.run(1.0, 1000, Iterates::lanczos, &validation, patience);
    CHECK(early.products < 1000);  // certified, not stepped
    CHECK(early.n_iter > 900);
    CHECK_CLOSE(early.coef, diagonal.beta(1.0, early.n_iter), 1e-12);

    const auto r = diagonal.run(1.0, 20000, Iterates::lanczos, &validation, patience);
    const auto stepwise = diagonal.run(1.0, 20000, Iterates::stepwise, &validation, patience);
    CHECK_EQ(stepwise.products, Index(20000));
    CHECK_EQ(r.iterations_run, Index(20000));
    CHECK(r.products > 20000 + early.products);  // the attempt grew past the first stretches
    CHECK(r.products <= 20000 + 512);
    CHECK(r.n_iter > 19000);
    CHECK_EQ(r.n_iter, stepwise.n_iter);
    CHECK(r.validation_rmse == stepwise.validation_rmse);
    CHECK_BITWISE(r.coef, stepwise.coef);
    CHECK_CLOSE(r.coef, diagonal.beta(1.0, r.n_iter), 1e-10);
}

NYTRO_TEST(cg_past_an_invariant_space_is_the_pseudo_inverse_solution) {
    // H singular with c outside its range: c = 1 on a diagonal with zeros. The Krylov
    // space of (H, c) is invariant after (distinct nonzero eigenvalues) + 1 = 5 steps;
    // from there cg's iterate is H^+ c (1 / h where h > 0, 0 where h = 0), the
    // minimum-norm least-squares solution, whatever max_iter. CG's recursion divided the
    // null-space part by a curvature of rounding there.
    Eigen::VectorXd h(8);
    h << 1.0, 2.0, 3.0, 0.0, 0.0, 0.5, 0.0, 2.0;
    const Diagonal diagonal(h);
    MatrixD exact(h.size(), 1);
    for (Index i = 0; i < h.size(); ++i) exact(i, 0) = h[i] > 0 ? 1.0 / h[i] : 0.0;
    for (Index t : {5, 6, 8, 1000}) {
        nytro::IterativeOptions o;
        o.method = nytro::Method::cg;
        o.max_iter = t;
        o.n_threads = 2;
        nytro::PathResult<double> result;
        nytro::detail::run_path<double>(diagonal.problem, 0.0, nullptr, o, result);
        // cond(H) = 6 on its range: a few epsilons of |H^+ c| = 2.
        CHECK_CLOSE(result.coef, exact, 1e-13);
        CHECK(result.products <= 5);
        CHECK_EQ(result.iterations_run, t);
    }
}

namespace {

// A hold-out set of a caller's, as operator_path's: the errors of `inner`, without its
// images of the Krylov bases, so that the paths validate the coefficients of their
// iterates through rmse.
class WithoutImages final : public nytro::detail::HoldOut<double> {
public:
    explicit WithoutImages(const nytro::detail::Validation<double>& inner) : inner_(inner) {}
    void rmse(const nytro::MatrixCRef<double>& alphas, Index q, std::vector<double>& out,
              int n_threads) const override {
        ++calls;
        inner_.rmse(alphas, q, out, n_threads);
    }
    nytro::Metric metric() const override { return inner_.metric(); }
    double bytes() const override { return inner_.bytes(); }
    mutable Index calls = 0;

private:
    const nytro::detail::Validation<double>& inner_;
};

}  // namespace

NYTRO_TEST(paths_validate_coefficients_where_the_holdout_set_has_no_images) {
    // The same path, selection and coefficients by either route, for every method: gd's
    // certified Lanczos iterates, nu stepwise, cg's and hybrid's Krylov bases.
    Eigen::VectorXd h(60);
    for (Index i = 0; i < h.size(); ++i) h[i] = std::pow(0.9, double(i));
    const Diagonal diagonal(h);
    const MatrixD X_val = normal(50, 2, 7), centers = normal(60, 2, 8);
    const MatrixD Y_val = direct_kernel(X_val, centers, 1.0) * MatrixD::Ones(60, 1) + normal(50, 1, 9);
    const nytro::detail::Validation<double> validation(X_val, Y_val, centers, 1.0, 2, false, 1e12);
    for (nytro::Method method : {nytro::Method::gd, nytro::Method::nu, nytro::Method::cg, nytro::Method::hybrid}) {
        nytro::IterativeOptions o;
        o.method = method;
        o.max_iter = 300;
        o.patience = 20;
        o.n_threads = 2;
        o.iterates = method == nytro::Method::gd ? Iterates::lanczos : Iterates::automatic;
        const WithoutImages without(validation);
        nytro::PathResult<double> in_memory, by_coefficients;
        nytro::detail::run_path_with_step<double>(diagonal.problem, 100, &validation, o, in_memory);
        nytro::detail::run_path_with_step<double>(diagonal.problem, 100, &without, o, by_coefficients);
        CHECK(without.calls > 0);
        CHECK(without.calls < by_coefficients.iterations_run);  // a chunk of iterates per call
        CHECK_CLOSE(path_of(by_coefficients.validation_rmse), path_of(in_memory.validation_rmse), 1e-9);
        if (method == nytro::Method::hybrid) continue;  // lambdas within rounding of each other may swap
        CHECK_EQ(by_coefficients.n_iter, in_memory.n_iter);
        CHECK_EQ(by_coefficients.iterations_run, in_memory.iterations_run);
        CHECK_EQ(by_coefficients.products, in_memory.products);
        CHECK_CLOSE(by_coefficients.coef, in_memory.coef, 1e-9);
    }
}

// The hybrid path's hold-out images, kept as P = Q S with Q's columns orthonormal or zero:
// stretches appended as the path appends them (a block of 16 at a time), including a
// stretch whose columns each nearly repeat the block's previous column plus a part in the
// earlier stretches' span, where the block's in-block pass removes almost all of a column
// (it must then be redone against every column, or Q loses orthogonality by far more than
// rounding), and an exact repeat (rounding left: a zero column or a tiny one, never a
// column off orthogonal). The same bits on one thread and two.
namespace {

struct Images {
    Eigen::MatrixXd P;  // every image appended, in order
    nytro::detail::HoldoutImages one, two;  // on one thread and on two
};

void append(Images& images, const Eigen::MatrixXd& block, const Eigen::VectorXd& y) {
    const Eigen::Index have = images.P.cols();
    images.P.conservativeResize(block.rows(), have + block.cols());
    images.P.rightCols(block.cols()) = block;
    const Matrix<double> rows = block;  // row-major, as the path gives its predictions
    images.one.append(rows, y, 1);
    images.two.append(rows, y, 2);
}

}  // namespace

NYTRO_TEST(holdout_images_stay_orthonormal_by_blocks) {
    const Eigen::Index rows = 400, width = 16, capacity = 5 * width;
    std::srand(7);
    const Eigen::VectorXd y = Eigen::VectorXd::Random(rows);
    Images images;
    images.P.resize(rows, 0);
    images.one.reserve(rows, capacity);
    images.two.reserve(rows, capacity);
    append(images, Eigen::MatrixXd::Random(rows, width), y);
    append(images, Eigen::MatrixXd::Random(rows, width), y);
    Eigen::MatrixXd near(rows, width), repeat(rows, width);
    near.col(0) = Eigen::VectorXd::Random(rows);
    for (Eigen::Index j = 1; j < width; ++j)
        near.col(j) = near.col(j - 1) + images.P.leftCols(2 * width) * Eigen::VectorXd::Random(2 * width) +
                      1e-9 * Eigen::VectorXd::Random(rows);
    append(images, near, y);
    repeat.col(0) = Eigen::VectorXd::Random(rows);
    for (Eigen::Index j = 1; j < width; ++j) repeat.col(j) = repeat.col(0);
    append(images, repeat, y);
    append(images, Eigen::MatrixXd::Random(rows, width), y);

    const auto& im = images.one;
    REQUIRE(im.size == capacity);
    const Eigen::MatrixXd Q = im.Q.leftCols(capacity);
    const Eigen::MatrixXd S = im.S.topLeftCorner(capacity, capacity).triangularView<Eigen::Upper>();
    // The columns in use are orthonormal, or zero with a zero row of S.
    Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(capacity, capacity);
    for (Eigen::Index k = 0; k < capacity; ++k) {
        if (Q.col(k).squaredNorm() > 0) {
            expected(k, k) = 1.0;
        } else {
            CHECK_EQ(S(k, k), 0.0);
            CHECK(S.row(k).cwiseAbs().maxCoeff() == 0.0);
        }
    }
    const double orthogonality = (Q.transpose() * Q - expected).cwiseAbs().maxCoeff();
    CHECK_MSG(orthogonality <= 64 * capacity * std::numeric_limits<double>::epsilon(),
              "max |Q^T Q - I| = " + check::str(orthogonality));
    // P = Q S, column by column relative to the column.
    for (Eigen::Index k = 0; k < capacity; ++k) {
        const double error = (Q * S.col(k) - images.P.col(k)).norm() / images.P.col(k).norm();
        CHECK_MSG(error <= 64 * capacity * std::numeric_limits<double>::epsilon(),
                  "column " + check::str(k) + ": ||Q S - P|| / ||P|| = " + check::str(error));
    }
    // g = Q^T y, and the residuals ||y - Q_k g_k||^2.
    CHECK_CLOSE(im.g.head(capacity), (Q.transpose() * y).eval(), 1e-12);
    for (Eigen::Index k = 0; k <= capacity; k += width)
        CHECK_NEAR(im.residual[std::size_t(k)], (y - Q.leftCols(k) * im.g.head(k)).squaredNorm(),
                   1e-12 * y.squaredNorm());
    CHECK_BITWISE(images.two.Q, images.one.Q);
    CHECK_BITWISE(images.two.S, images.one.S);
}
