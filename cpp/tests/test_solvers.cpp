// The paths against dense closed forms computed here in double, input validation,
// memory limits and callbacks.
#include "check.hpp"
#include "support.hpp"

#include <Eigen/Cholesky>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

using namespace support;
using nytro::Solver;
using nytro::StepRule;
using nytro::Stopping;

static_assert(std::is_base_of<std::runtime_error, nytro::out_of_memory>::value,
              "out_of_memory is a runtime_error");

namespace {

const MatrixD kNone(0, 4), kNoneY(0, 1);

// The NYTRO problem in dense form: with R0 = K_mm^{-1/2} (K_mm is nonsingular here),
// A = K_nm R0, and alpha_t = R0 beta_t where beta_t is t gradient steps on A.
struct DenseNytro {
    MatrixD K_nm, K_val, R0, H, C;

    explicit DenseNytro(const Problem& p) {
        K_nm = direct_kernel(p.X, p.centers, p.sigma);
        K_val = direct_kernel(p.X_val, p.centers, p.sigma);
        R0 = spectral(direct_kernel(p.centers, p.centers, p.sigma), [](double w) { return 1 / std::sqrt(w); });
        const MatrixD A = K_nm * R0;
        H = A.transpose() * A;
        C = A.transpose() * p.Y;
    }
    MatrixD alpha(double step, Index t) const { return R0 * gradient_descent(H, C, step, t); }
    double lambda_max() const { return largest_eigenvalue(H); }
};

template <class T>
nytro::PathResult<T> run_nytro(const Problem& p, const nytro::NytroOptions& options, bool holdout) {
    const Matrix<T> X = p.as<T>(p.X), Y = p.as<T>(p.Y), C = p.as<T>(p.centers);
    const Matrix<T> Xv = holdout ? p.as<T>(p.X_val) : Matrix<T>(0, p.X.cols());
    const Matrix<T> Yv = holdout ? p.as<T>(p.Y_val) : Matrix<T>(0, p.Y.cols());
    return nytro::nytro_path<T>(X, Y, C, p.sigma, Xv, Yv, options);
}

nytro::NytroOptions fixed_step(double step, Index t, Solver solver) {
    nytro::NytroOptions o;
    o.step_rule = StepRule::fixed;
    o.step_size = step;
    o.max_iter = t;
    o.solver = solver;
    o.n_threads = 2;
    return o;
}

template <class T>
void nytro_equals_closed_form(double rtol_coef, double rtol_prediction) {
    const Problem p = make_problem();
    const DenseNytro dense(p);
    const double step = 0.7 / dense.lambda_max();
    for (Solver solver : {Solver::direct, Solver::gram}) {
        for (Index t : {1, 2, 37}) {
            const auto r = run_nytro<T>(p, fixed_step(step, t, solver), false);
            const MatrixD expected = dense.alpha(step, t);
            CHECK_EQ(r.solver, solver);
            CHECK_EQ(r.n_iter, t);
            CHECK_EQ(r.iterations_run, t);
            CHECK(r.validation_rmse.empty());
            CHECK_EQ(r.step_size, step);
            CHECK_EQ(r.rank, Index(30));
            CHECK_CLOSE(r.coef, expected, rtol_coef);
            CHECK_CLOSE((dense.K_nm * r.coef.template cast<double>()).eval(), (dense.K_nm * expected).eval(),
                        rtol_prediction);
        }
    }
}

}  // namespace

NYTRO_TEST(nytro_double_equals_gradient_descent_closed_form) { nytro_equals_closed_form<double>(1e-8, 1e-10); }
NYTRO_TEST(nytro_float_equals_gradient_descent_closed_form) { nytro_equals_closed_form<float>(2e-2, 1e-3); }

NYTRO_TEST(nytro_holdout_path_and_selection) {
    const Problem p = make_problem();
    const DenseNytro dense(p);
    const double step = 0.9 / dense.lambda_max();
    const Index t_max = 60;
    for (Solver solver : {Solver::direct, Solver::gram}) {
        const auto r = run_nytro<double>(p, fixed_step(step, t_max, solver), true);
        REQUIRE(Index(r.validation_rmse.size()) == t_max);
        CHECK_EQ(r.iterations_run, t_max);
        for (Index t : {Index(1), Index(2), Index(17), t_max}) {
            const double expected = rmse(dense.K_val * dense.alpha(step, t) - p.Y_val);
            CHECK_NEAR(r.validation_rmse[std::size_t(t - 1)], expected, 1e-10 * expected);
        }
        // stopping = best: the first minimum of the path.
        const auto best = std::min_element(r.validation_rmse.begin(), r.validation_rmse.end());
        CHECK_EQ(r.n_iter, Index(best - r.validation_rmse.begin()) + 1);
        CHECK_CLOSE(r.coef, dense.alpha(step, r.n_iter), 1e-8);
    }
}

NYTRO_TEST(nytro_direct_and_gram_agree) {
    const Problem p = make_problem(300, 4, 50, 100, 2);
    nytro::NytroOptions o;
    o.max_iter = 150;
    o.n_threads = 2;
    o.solver = Solver::direct;
    const auto direct = run_nytro<double>(p, o, true);
    o.solver = Solver::gram;
    const auto gram = run_nytro<double>(p, o, true);
    CHECK_EQ(direct.solver, Solver::direct);
    CHECK_EQ(gram.solver, Solver::gram);
    CHECK_NEAR(direct.step_size, gram.step_size, 1e-10 * gram.step_size);
    CHECK_EQ(direct.n_iter, gram.n_iter);
    CHECK_EQ(direct.rank, gram.rank);
    REQUIRE(direct.validation_rmse.size() == gram.validation_rmse.size());
    const Eigen::Map<const VectorD> a(direct.validation_rmse.data(), Index(direct.validation_rmse.size()));
    const Eigen::Map<const VectorD> b(gram.validation_rmse.data(), Index(gram.validation_rmse.size()));
    CHECK_CLOSE(a, b, 1e-10);
    CHECK_CLOSE(direct.coef, gram.coef, 1e-8);

    // float, no hold-out: same t, close coefficients.
    o.max_iter = 40;
    o.solver = Solver::direct;
    const auto direct_f = run_nytro<float>(p, o, false);
    o.solver = Solver::gram;
    const auto gram_f = run_nytro<float>(p, o, false);
    const MatrixD K_nm = direct_kernel(p.X, p.centers, p.sigma);
    CHECK_CLOSE((K_nm * direct_f.coef.cast<double>()).eval(), (K_nm * gram_f.coef.cast<double>()).eval(), 1e-3);

    o.solver = Solver::automatic;
    const auto chosen = run_nytro<double>(p, o, false);
    CHECK(chosen.solver == Solver::direct || chosen.solver == Solver::gram);
}

// float16 storage: the factor cut at kFloat16RankTol, K_nm in half precision. Against
// float32 storage at the same cut (the same model, rounded 2^-11 instead of 2^-24): the
// same rank and t, paths within that rounding; the same bits on 1 and 3 threads; only
// the direct solver and rank-revealing factors.
NYTRO_TEST(nytro_float16_storage) {
    Problem p = make_problem(500, 2, 90, 120, 1);  // many centres in 2-d: K_mm near singular
    nytro::NytroOptions o;
    o.max_iter = 60;
    o.n_threads = 1;
    o.storage = nytro::Storage::float16;
    const auto half = run_nytro<double>(p, o, true);
    CHECK_EQ(half.solver, Solver::direct);
    CHECK(half.rank < 90);
    o.storage = nytro::Storage::float32;
    o.factor.rank_tol = nytro::kFloat16RankTol;
    const auto single = run_nytro<double>(p, o, true);
    CHECK_EQ(half.rank, single.rank);
    CHECK_EQ(half.n_iter, single.n_iter);
    CHECK_CLOSE(path_of(half.validation_rmse), path_of(single.validation_rmse), 1e-3);
    const MatrixD K_val = direct_kernel(p.X_val, p.centers, p.sigma);
    CHECK_CLOSE((K_val * half.coef).eval(), (K_val * single.coef).eval(), 1e-2);

    o.storage = nytro::Storage::float16;
    o.factor.rank_tol = -1.0;
    o.n_threads = 3;
    const auto threaded = run_nytro<double>(p, o, true);
    CHECK_BITWISE(threaded.coef, half.coef);
    const auto half_f = run_nytro<float>(p, o, true);
    CHECK_EQ(half_f.rank, half.rank);
    CHECK_CLOSE(path_of(half_f.validation_rmse), path_of(half.validation_rmse), 1e-3);

    o.solver = Solver::gram;
    CHECK_THROWS_WITH(run_nytro<double>(p, o, true), std::invalid_argument, "storage='float16' stores K_nm");
    o.solver = Solver::automatic;
    o.factor.method = nytro::FactorMethod::cholesky;
    CHECK_THROWS_WITH(run_nytro<double>(p, o, true), std::invalid_argument, "rank-revealing factor");
}

// float16 storage with the linear kernel, whose values scale as |x|^2: features of 1e-4
// (entries ~1e-8, below half's smallest subnormal 6e-8) and features in [100, 200]
// (entries up to 1.2e5, beyond half's 65504). Stored at half's range and folded back,
// the model is float32 storage's at the same cut, to half's rounding (2^-11 relative to
// the largest entries, times the few units of R's conditioning here).
NYTRO_TEST(nytro_float16_storage_linear_kernel_at_any_scale) {
    const nytro::KernelSpec linear(nytro::KernelType::linear, 1.5, {});
    for (const auto& [scale, shift] : {std::pair<double, double>{1e-4, 0.0}, std::pair<double, double>{50.0, 150.0}}) {
        MatrixD U = normal(400, 3, 7).array().tanh().matrix();  // in (-1, 1)
        const VectorD w = (VectorD(3) << 1.0, -1.0, 0.5).finished();
        const MatrixD Y = U * w;
        const MatrixD X = (U.array() * scale + shift).matrix();
        const MatrixD train = X.topRows(300), val = X.bottomRows(100), centers = X.topRows(40);
        nytro::NytroOptions o;
        o.max_iter = 50;
        o.n_threads = 1;
        o.method = nytro::Method::cg;
        o.factor.rank_tol = nytro::kFloat16RankTol;
        auto fit = [&](nytro::Storage storage) {
            o.storage = storage;
            return nytro::nytro_path<double>(train, Y.topRows(300), centers, linear, val, Y.bottomRows(100), o);
        };
        const auto half = fit(nytro::Storage::float16), single = fit(nytro::Storage::float32);
        CHECK_EQ(half.rank, single.rank);
        const MatrixD K_val = val * centers.transpose();
        const MatrixD predicted = K_val * half.coef, expected = K_val * single.coef;
        CHECK(expected.norm() > 0.5 * Y.bottomRows(100).norm());  // float32 storage fits the model
        CHECK_CLOSE(predicted, expected, 64.0 * std::ldexp(1.0, -11));
    }
}

NYTRO_TEST(nytro_step_rules) {
    const Problem p = make_problem();
    const DenseNytro dense(p);
    nytro::NytroOptions o;
    o.max_iter = 10;
    o.step_rule = StepRule::automatic;
    const auto automatic = run_nytro<double>(p, o, false);
    CHECK_NEAR(automatic.step_size, 1 / dense.lambda_max(), 1e-9 / dense.lambda_max());
    CHECK_CLOSE(automatic.coef, dense.alpha(automatic.step_size, 10), 1e-8);
    o.step_rule = StepRule::paper;
    const auto paper = run_nytro<double>(p, o, false);
    CHECK_EQ(paper.step_size, 1.0 / 200);
    CHECK_CLOSE(paper.coef, dense.alpha(1.0 / 200, 10), 1e-8);
}

NYTRO_TEST(nytro_multi_output_is_columnwise) {
    const Problem p = make_problem(200, 4, 30, 80, 3);
    const auto both = run_nytro<double>(p, fixed_step(0.01, 25, Solver::direct), false);
    REQUIRE(both.coef.rows() == 30 && both.coef.cols() == 3);
    for (Index j = 0; j < 3; ++j) {
        Problem single = p;
        single.Y = p.Y.col(j);
        single.Y_val = p.Y_val.col(j);
        const auto one = run_nytro<double>(single, fixed_step(0.01, 25, Solver::direct), false);
        CHECK_CLOSE(both.coef.col(j), one.coef.col(0), 1e-12);
    }
}

NYTRO_TEST(nytro_stopping_rules_invariants) {
    const Problem p = make_problem(200, 4, 60, 80);
    const DenseNytro dense(p);
    for (Stopping rule : {Stopping::best, Stopping::relative, Stopping::window}) {
        nytro::NytroOptions o = fixed_step(1.0 / dense.lambda_max(), 400, Solver::gram);
        o.stopping = rule;
        const auto r = run_nytro<double>(p, o, true);
        CHECK(r.iterations_run >= 1 && r.iterations_run <= 400);
        CHECK_EQ(Index(r.validation_rmse.size()), r.iterations_run);
        CHECK(r.n_iter >= 1 && r.n_iter <= r.iterations_run);
        if (rule == Stopping::best) CHECK_EQ(r.iterations_run, Index(400));
        if (rule == Stopping::window) CHECK_EQ(r.n_iter, r.iterations_run);
        if (rule != Stopping::window) {
            const auto best = std::min_element(r.validation_rmse.begin(), r.validation_rmse.end());
            CHECK_EQ(r.n_iter, Index(best - r.validation_rmse.begin()) + 1);
        }
        CHECK_CLOSE(r.coef, dense.alpha(r.step_size, r.n_iter), 1e-7);
    }
}

NYTRO_TEST(nytro_duplicated_centres_same_fit_for_every_factor) {
    Problem p = make_problem(200, 4, 30, 80);
    p.centers.bottomRows(10) = p.centers.topRows(10);
    const MatrixD K_nm = direct_kernel(p.X, p.centers, p.sigma);
    MatrixD reference;
    for (nytro::FactorMethod method : {nytro::FactorMethod::pivoted, nytro::FactorMethod::qr}) {
        nytro::NytroOptions o = fixed_step(0.02, 30, Solver::gram);
        o.factor.method = method;
        const auto r = run_nytro<double>(p, o, false);
        CHECK_EQ(r.rank, Index(20));
        const MatrixD fitted = K_nm * r.coef;
        if (reference.size() == 0) reference = fitted;
        else CHECK_CLOSE(fitted, reference, 1e-8);
    }
}

NYTRO_TEST(landweber_equals_closed_form) {
    const Problem p = make_problem(120, 4, 10, 50);
    const MatrixD K = direct_kernel(p.X, p.X, p.sigma), K_val = direct_kernel(p.X_val, p.X, p.sigma);
    const double step = 0.8 / largest_eigenvalue(K);
    nytro::IterativeOptions o;
    o.step_rule = StepRule::fixed;
    o.step_size = step;
    o.n_threads = 2;
    for (Index t : {1, 3, 50}) {
        o.max_iter = t;
        const auto r = nytro::landweber_path<double>(p.X, p.Y, p.sigma, kNone, kNoneY, o);
        CHECK_EQ(r.n_iter, t);
        CHECK_EQ(r.rank, Index(120));
        CHECK(r.validation_rmse.empty());
        CHECK_CLOSE(r.coef, gradient_descent(K, p.Y, step, t), 1e-9);
        const auto rf = nytro::landweber_path<float>(p.X.cast<float>(), p.Y.cast<float>(), p.sigma,
                                                     kNone.cast<float>(), kNoneY.cast<float>(), o);
        CHECK_CLOSE((K * rf.coef.cast<double>()).eval(), (K * gradient_descent(K, p.Y, step, t)).eval(), 1e-4);
    }
    // With a hold-out set: the RMSE of every iterate, the first minimum selected.
    o.max_iter = 40;
    const auto r = nytro::landweber_path<double>(p.X, p.Y, p.sigma, p.X_val, p.Y_val, o);
    REQUIRE(r.validation_rmse.size() == 40);
    for (Index t : {1, 20, 40}) {
        const double expected = rmse(K_val * gradient_descent(K, p.Y, step, t) - p.Y_val);
        CHECK_NEAR(r.validation_rmse[std::size_t(t - 1)], expected, 1e-10 * expected);
    }
    CHECK_CLOSE(r.coef, gradient_descent(K, p.Y, step, r.n_iter), 1e-9);
    // Step rules.
    o.max_iter = 5;
    o.step_rule = StepRule::automatic;
    const double top = largest_eigenvalue(K);
    CHECK_NEAR(nytro::landweber_path<double>(p.X, p.Y, p.sigma, kNone, kNoneY, o).step_size, 1 / top, 1e-9 / top);
    o.step_rule = StepRule::paper;
    CHECK_EQ(nytro::landweber_path<double>(p.X, p.Y, p.sigma, kNone, kNoneY, o).step_size, 1.0 / 120);
}

NYTRO_TEST(nkrls_equals_dense_solve) {
    const Problem p = make_problem();
    const MatrixD K_nm = direct_kernel(p.X, p.centers, p.sigma), K_mm = direct_kernel(p.centers, p.centers, p.sigma);
    const MatrixD K_val = direct_kernel(p.X_val, p.centers, p.sigma);
    // alpha = (K_nm^T K_nm + lambda n K_mm)^-1 K_nm^T y (R R^T = K_mm^-1 here).
    auto solve = [&](double lambda) {
        const MatrixD M = K_nm.transpose() * K_nm + lambda * 200 * K_mm;
        return MatrixD(M.ldlt().solve(K_nm.transpose() * p.Y));
    };
    for (nytro::TikhonovSolver solver : {nytro::TikhonovSolver::eigh, nytro::TikhonovSolver::cholesky}) {
        nytro::TikhonovOptions o;
        o.solver = solver;
        o.n_threads = 2;
        const auto r = nytro::nkrls_path<double>(p.X, p.Y, p.centers, p.sigma, {1e-3}, kNone, kNoneY, o);
        CHECK_EQ(r.selected, Index(0));
        CHECK(r.validation_rmse.empty());
        CHECK_EQ(r.rank, Index(30));
        CHECK_CLOSE(r.coef, solve(1e-3), 1e-8);
        const auto rf = nytro::nkrls_path<float>(p.X.cast<float>(), p.Y.cast<float>(), p.centers.cast<float>(),
                                                 p.sigma, {1e-3}, kNone.cast<float>(), kNoneY.cast<float>(), o);
        CHECK_CLOSE((K_nm * rf.coef.cast<double>()).eval(), (K_nm * solve(1e-3)).eval(), 3e-3);

        const std::vector<double> grid = {1e-7, 1e-5, 1e-3, 1e-1, 10};
        const auto g = nytro::nkrls_path<double>(p.X, p.Y, p.centers, p.sigma, grid, p.X_val, p.Y_val, o);
        REQUIRE(g.validation_rmse.size() == grid.size());
        for (std::size_t l = 0; l < grid.size(); ++l) {
            const double expected = rmse(K_val * solve(grid[l]) - p.Y_val);
            CHECK_NEAR(g.validation_rmse[l], expected, 1e-7 * expected);
        }
        const auto best = std::min_element(g.validation_rmse.begin(), g.validation_rmse.end());
        CHECK_EQ(g.selected, Index(best - g.validation_rmse.begin()));
        CHECK_CLOSE(g.coef, solve(grid[std::size_t(g.selected)]), 1e-7);
    }
}

// Method hybrid: with a basis spanning the space (k = m) the projected Tikhonov solutions
// are NKRLS's, so the path's value there is the best dense Tikhonov RMSE over the paper's
// grid; past k = m it stays there; the selected coefficients give the selected RMSE; and
// without a hold-out set it runs max_iter steps with the smallest lambda.
NYTRO_TEST(hybrid_full_basis_equals_dense_tikhonov) {
    const Problem p = make_problem();
    const MatrixD K_nm = direct_kernel(p.X, p.centers, p.sigma), K_mm = direct_kernel(p.centers, p.centers, p.sigma);
    const MatrixD K_val = direct_kernel(p.X_val, p.centers, p.sigma);
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 100; ++i) {
        const double lambda = std::pow(10.0, (15.0 * i) / 99.0 - 15.0);
        const MatrixD M = K_nm.transpose() * K_nm + lambda * 200 * K_mm;
        best = std::min(best, rmse(K_val * MatrixD(M.ldlt().solve(K_nm.transpose() * p.Y)) - p.Y_val));
    }
    nytro::NytroOptions o;
    o.method = nytro::Method::hybrid;
    o.max_iter = 40;
    o.n_threads = 2;
    for (Solver solver : {Solver::direct, Solver::gram, Solver::spectral}) {
        o.solver = solver;
        const auto r = nytro::nytro_path<double>(p.X, p.Y, p.centers, p.sigma, p.X_val, p.Y_val, o);
        // The basis spans the whole space at k = 30: the path ends there, before max_iter.
        REQUIRE(r.validation_rmse.size() == 30u);
        CHECK_EQ(r.iterations_run, Index(30));
        CHECK_NEAR(r.validation_rmse[29], best, 1e-6 * best);
        CHECK(r.products <= 30);
        CHECK_EQ(r.step_size, 0.0);
        const double selected = r.validation_rmse[std::size_t(r.n_iter - 1)];
        CHECK_NEAR(rmse(K_val * r.coef - p.Y_val), selected, 1e-8 * selected);
        CHECK(selected <= r.validation_rmse[29]);
    }
    o.solver = Solver::automatic;
    o.max_iter = 12;
    const auto none = nytro::nytro_path<double>(p.X, p.Y, p.centers, p.sigma, kNone, kNoneY, o);
    CHECK_EQ(none.n_iter, Index(12));
    CHECK_EQ(none.lambda, 1e-15);
    CHECK(none.validation_rmse.empty());
}

NYTRO_TEST(krls_equals_dense_solve) {
    const Problem p = make_problem(150, 4, 10, 60);
    const MatrixD K = direct_kernel(p.X, p.X, p.sigma), K_val = direct_kernel(p.X_val, p.X, p.sigma);
    auto solve = [&](double lambda) {
        MatrixD M = K;
        M.diagonal().array() += lambda * 150;
        return MatrixD(M.llt().solve(p.Y));
    };
    for (nytro::TikhonovSolver solver : {nytro::TikhonovSolver::eigh, nytro::TikhonovSolver::cholesky}) {
        nytro::TikhonovOptions o;
        o.solver = solver;
        const auto r = nytro::krls_path<double>(p.X, p.Y, p.sigma, {1e-4}, kNone, kNoneY, o);
        CHECK_CLOSE(r.coef, solve(1e-4), 1e-9);
        const auto rf = nytro::krls_path<float>(p.X.cast<float>(), p.Y.cast<float>(), p.sigma, {1e-2},
                                                kNone.cast<float>(), kNoneY.cast<float>(), o);
        CHECK_CLOSE(rf.coef, solve(1e-2), 1e-4);
        const std::vector<double> grid = {1e-6, 1e-4, 1e-2, 1};
        const auto g = nytro::krls_path<double>(p.X, p.Y, p.sigma, grid, p.X_val, p.Y_val, o);
        REQUIRE(g.validation_rmse.size() == grid.size());
        for (std::size_t l = 0; l < grid.size(); ++l) {
            const double expected = rmse(K_val * solve(grid[l]) - p.Y_val);
            CHECK_NEAR(g.validation_rmse[l], expected, 1e-8 * expected);
        }
        CHECK_CLOSE(g.coef, solve(grid[std::size_t(g.selected)]), 1e-8);
    }
}

NYTRO_TEST(kols_equals_inverse_solve) {
    // Points far apart relative to sigma: K is close to the identity, well conditioned.
    const MatrixD X = 3.0 * normal(40, 3, 71), Y = target(X, 2, 0.1, 72);
    const double sigma = 0.8;
    const MatrixD K = direct_kernel(X, X, sigma);
    const double cond = condition_number(K);
    REQUIRE(cond < 1e4);
    const MatrixD expected = K.llt().solve(Y);
    CHECK_CLOSE(nytro::kols<double>(X, Y, sigma, -1.0, 2), expected, 1e-12 * cond);
    CHECK_CLOSE(nytro::kols<float>(X.cast<float>(), Y.cast<float>(), sigma), expected, 1e-5 * cond);
}

NYTRO_TEST(kols_singular_is_pseudo_inverse) {
    // Duplicated rows make K exactly singular: KOLS is the minimum-norm solution.
    MatrixD X = 3.0 * normal(30, 3, 81);
    X.bottomRows(10) = X.topRows(10);
    const MatrixD Y = target(X, 1, 0.0, 82);
    const MatrixD K = direct_kernel(X, X, 0.8);
    const double top = largest_eigenvalue(K);
    const MatrixD pinv = spectral(K, [&](double w) { return w > 1e-8 * top ? 1 / w : 0.0; });
    CHECK_CLOSE(nytro::kols<double>(X, Y, 0.8), (pinv * Y).eval(), 1e-9);
}

NYTRO_TEST(invalid_input_throws_invalid_argument) {
    const Problem p = make_problem(50, 4, 10, 20);
    const MatrixD &X = p.X, &Y = p.Y, &C = p.centers, &Xv = p.X_val, &Yv = p.Y_val;
    const double s = p.sigma;
    auto nytro_call = [&](const MatrixD& X_, const MatrixD& Y_, const MatrixD& C_, double sigma, const MatrixD& Xv_,
                          const MatrixD& Yv_, const nytro::NytroOptions& o) {
        nytro::nytro_path<double>(X_, Y_, C_, sigma, Xv_, Yv_, o);
    };
    const nytro::NytroOptions o;
    MatrixD X_nan = X, Y_inf = Y;
    X_nan(3, 1) = std::nan("");
    Y_inf(4, 0) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(nytro_call(MatrixD(0, 4), MatrixD(0, 1), C, s, Xv, Yv, o), std::invalid_argument, "X");
    CHECK_THROWS_WITH(nytro_call(X, Y.topRows(49), C, s, Xv, Yv, o), std::invalid_argument, "y");
    CHECK_THROWS_WITH(nytro_call(X_nan, Y, C, s, Xv, Yv, o), std::invalid_argument, "X");
    CHECK_THROWS_WITH(nytro_call(X, Y_inf, C, s, Xv, Yv, o), std::invalid_argument, "y");
    CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv.leftCols(3), Yv, o), std::invalid_argument, "X_val");
    CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv.topRows(5), o), std::invalid_argument, "y_val");
    CHECK_THROWS_WITH(nytro_call(X, Y, normal(51, 4, 1), s, Xv, Yv, o), std::invalid_argument, "centres");
    CHECK_THROWS_WITH(nytro_call(X, Y, C.leftCols(2), s, Xv, Yv, o), std::invalid_argument, "centres");
    CHECK_THROWS_WITH(nytro_call(X, Y, C, 0.0, Xv, Yv, o), std::invalid_argument, "sigma");
    CHECK_THROWS_WITH(nytro_call(X, Y, C, std::nan(""), Xv, Yv, o), std::invalid_argument, "sigma");
    {
        nytro::NytroOptions bad;
        bad.max_iter = 0;
        CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument, "max_iter");
        bad = {};
        bad.window = 1;
        CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument, "window");
        bad = {};
        bad.step_rule = StepRule::fixed;
        for (double step : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
            bad.step_size = step;
            CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument, "step_size");
        }
        bad = {};
        bad.tol = std::nan("");
        CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument, "tol");
        // Enum values cast from out-of-range integers: method 9 returned the zero model,
        // stopping 9 selected t = 0, step_rule 9 took a step of 0, all without an error.
        using Set = void (*)(nytro::NytroOptions&);
        const std::pair<const char*, Set> casts[] = {
            {"method", [](nytro::NytroOptions& o) { o.method = static_cast<nytro::Method>(9); }},
            {"step_rule", [](nytro::NytroOptions& o) { o.step_rule = static_cast<StepRule>(9); }},
            {"stopping", [](nytro::NytroOptions& o) { o.stopping = static_cast<Stopping>(9); }},
            {"iterates", [](nytro::NytroOptions& o) { o.iterates = static_cast<nytro::Iterates>(9); }},
            {"metric", [](nytro::NytroOptions& o) { o.metric = static_cast<nytro::Metric>(9); }},
            {"solver", [](nytro::NytroOptions& o) { o.solver = static_cast<Solver>(9); }},
            {"storage", [](nytro::NytroOptions& o) { o.storage = static_cast<nytro::Storage>(9); }},
            {"factor", [](nytro::NytroOptions& o) { o.factor.method = static_cast<nytro::FactorMethod>(9); }},
        };
        for (const auto& [name, set] : casts) {
            bad = {};
            set(bad);
            CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument,
                              std::string(name) + " has no valid value");
        }
        // NaN passed for the grid's smallest lambda and inf fitted the zero model.
        for (const double lambda : {std::nan(""), std::numeric_limits<double>::infinity()}) {
            bad = {};
            bad.method = nytro::Method::hybrid;
            bad.hybrid_lambda = lambda;
            CHECK_THROWS_WITH(nytro_call(X, Y, C, s, kNone, kNoneY, bad), std::invalid_argument, "hybrid_lambda");
        }
        // All-zero validation_weights made every hold-out RMSE 0 and selected t = 1.
        bad = {};
        bad.validation_weights = {0.0};
        CHECK_THROWS_WITH(nytro_call(X, Y, C, s, Xv, Yv, bad), std::invalid_argument, "validation_weights");
        nytro::TikhonovOptions tikhonov;
        tikhonov.validation_weights = {0.0};
        CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, C, s, {1e-3}, Xv, Yv, tikhonov), std::invalid_argument,
                          "validation_weights");
        tikhonov = {};
        tikhonov.solver = static_cast<nytro::TikhonovSolver>(9);
        CHECK_THROWS_WITH(nytro::krls_path<double>(X, Y, s, {1e-3}, Xv, Yv, tikhonov), std::invalid_argument,
                          "solver has no valid value");
    }
    nytro::IterativeOptions lw;
    lw.max_iter = 0;
    CHECK_THROWS_WITH(nytro::landweber_path<double>(X, Y, s, Xv, Yv, lw), std::invalid_argument, "max_iter");
    CHECK_THROWS_WITH(nytro::landweber_path<double>(X, Y, -1.0, Xv, Yv, {}), std::invalid_argument, "sigma");
    CHECK_THROWS_WITH(nytro::landweber_path<double>(X, Y.topRows(3), s, Xv, Yv, {}), std::invalid_argument, "y");

    CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, C, s, {}, Xv, Yv), std::invalid_argument, "lambdas");
    CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, C, s, {1e-3, -1.0}, Xv, Yv), std::invalid_argument, "lambda");
    CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, C, s, {1e-3, 1e-2}, kNone, kNoneY), std::invalid_argument,
                      "lambda");
    CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, C, 0.0, {1e-3}, Xv, Yv), std::invalid_argument, "sigma");
    CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Y, normal(60, 4, 2), s, {1e-3}, Xv, Yv), std::invalid_argument,
                      "centres");
    CHECK_THROWS_WITH(nytro::krls_path<double>(X, Y, s, {}, Xv, Yv), std::invalid_argument, "lambdas");
    CHECK_THROWS_WITH(nytro::krls_path<double>(X, Y, s, {std::nan("")}, Xv, Yv), std::invalid_argument, "lambda");
    CHECK_THROWS_WITH(nytro::krls_path<double>(X, Y, s, {1.0, 2.0}, kNone, kNoneY), std::invalid_argument, "lambda");
    CHECK_THROWS_WITH(nytro::kols<double>(X, Y, s, 1.0), std::invalid_argument, "rcond");
    CHECK_THROWS_WITH(nytro::kols<double>(X_nan, Y, s), std::invalid_argument, "X");
    CHECK_THROWS_WITH(nytro::kols<double>(X, Y, 0.0), std::invalid_argument, "sigma");

    CHECK_THROWS_WITH(nytro::parse_solver("fast"), std::invalid_argument, "fast");
    CHECK_THROWS_WITH(nytro::parse_stopping("never"), std::invalid_argument, "never");
    CHECK_THROWS_WITH(nytro::parse_step_rule("huge"), std::invalid_argument, "huge");
    CHECK_THROWS_WITH(nytro::parse_factor_method("lu"), std::invalid_argument, "lu");
    CHECK_THROWS_WITH(nytro::parse_tikhonov_solver("cg"), std::invalid_argument, "cg");
    CHECK(nytro::parse_solver("gram") == Solver::gram);
    CHECK(nytro::parse_stopping("window") == Stopping::window);
}

// Only the weights' ratios matter (w' = w n / sum w): the same ratios at the ends of the
// range, subnormal (their sum's n / sum overflowed to inf and crashed the fit) or near
// the largest double (their sum overflowed and was refused), give the fit of ordinary ones.
NYTRO_TEST(sample_weights_matter_only_by_ratio) {
    const Problem p = make_problem(60, 4, 12, 20);
    const MatrixD &X = p.X, &Y = p.Y, &C = p.centers, &Xv = p.X_val, &Yv = p.Y_val;
    auto weights = [](Index n, int exponent) {
        std::vector<double> w(static_cast<std::size_t>(n));
        for (Index i = 0; i < n; ++i) w[std::size_t(i)] = std::ldexp(double(1 + i % 3), exponent);
        return w;
    };
    nytro::NytroOptions ordinary;
    ordinary.max_iter = 40;
    ordinary.sample_weights = weights(X.rows(), 0);
    ordinary.validation_sample_weights = weights(Xv.rows(), 0);
    nytro::TikhonovOptions tikhonov;
    tikhonov.sample_weights = ordinary.sample_weights;
    tikhonov.validation_sample_weights = ordinary.validation_sample_weights;
    for (const Solver solver : {Solver::direct, Solver::gram}) {
        ordinary.solver = solver;
        const auto expected = nytro::nytro_path<double>(X, Y, C, p.sigma, Xv, Yv, ordinary);
        const auto expected_nkrls = nytro::nkrls_path<double>(X, Y, C, p.sigma, {1e-4, 1e-2}, Xv, Yv, tikhonov);
        for (const int exponent : {-1060, -1030, 1020}) {  // 2^-1060 is subnormal, 3 x 2^1020 near the top
            const std::string label = std::string(nytro::to_string(solver)) + " 2^" + std::to_string(exponent);
            nytro::NytroOptions scaled = ordinary;
            scaled.sample_weights = weights(X.rows(), exponent);
            scaled.validation_sample_weights = weights(Xv.rows(), exponent);
            nytro::TikhonovOptions scaled_tikhonov = tikhonov;
            scaled_tikhonov.sample_weights = scaled.sample_weights;
            scaled_tikhonov.validation_sample_weights = scaled.validation_sample_weights;
            try {
                const auto fit = nytro::nytro_path<double>(X, Y, C, p.sigma, Xv, Yv, scaled);
                CHECK_MSG(fit.n_iter == expected.n_iter, label);
                CHECK_CLOSE(fit.coef, expected.coef, 1e-12);
                CHECK_CLOSE(path_of(fit.validation_rmse), path_of(expected.validation_rmse), 1e-12);
                const auto nkrls = nytro::nkrls_path<double>(X, Y, C, p.sigma, {1e-4, 1e-2}, Xv, Yv, scaled_tikhonov);
                CHECK_CLOSE(nkrls.coef, expected_nkrls.coef, 1e-12);
                CHECK_CLOSE(path_of(nkrls.validation_rmse), path_of(expected_nkrls.validation_rmse), 1e-12);
            } catch (const std::exception& error) {
                CHECK_MSG(false, label + ": " + error.what());
            }
        }
    }
}

// Targets of 2^+-600: their squared errors over- or underflow float64, and the paths came
// out silently wrong (every hold-out RMSE 0: t = 1; inf: cg's zero model) or with a false
// "diverged" error. Refused by name; 2^+-300 still fit as the scaled ordinary targets.
NYTRO_TEST(targets_at_the_ends_of_float64_are_refused_by_name) {
    const Problem p = make_problem(60, 4, 12, 20);
    const MatrixD &X = p.X, &Y = p.Y, &C = p.centers, &Xv = p.X_val, &Yv = p.Y_val;
    nytro::NytroOptions cg;
    cg.method = nytro::Method::cg;
    cg.max_iter = 10;
    nytro::IterativeOptions lw;
    lw.max_iter = 10;
    const std::vector<double> lambdas{1e-4, 1e-2};
    for (const int exponent : {-600, 600}) {
        const double s = std::ldexp(1.0, exponent);
        const MatrixD Ys = Y * s, Yvs = Yv * s;
        CHECK_THROWS_WITH(nytro::nytro_path<double>(X, Ys, C, p.sigma, Xv, Yvs, cg), std::invalid_argument, "y's");
        CHECK_THROWS_WITH(nytro::nytro_path<double>(X, Y, C, p.sigma, Xv, Yvs, cg), std::invalid_argument, "y_val's");
        CHECK_THROWS_WITH(nytro::nytro_path<double>(X, Ys, C, p.sigma, kNone, kNoneY, {}), std::invalid_argument,
                          "y's");
        CHECK_THROWS_WITH(nytro::landweber_path<double>(X, Ys, p.sigma, Xv, Yvs, lw), std::invalid_argument, "y's");
        CHECK_THROWS_WITH(nytro::nkrls_path<double>(X, Ys, C, p.sigma, lambdas, Xv, Yvs), std::invalid_argument,
                          "y's");
        CHECK_THROWS_WITH(nytro::krls_path<double>(X, Ys, p.sigma, lambdas, Xv, Yvs), std::invalid_argument, "y's");
    }
    const auto expected = nytro::nytro_path<double>(X, Y, C, p.sigma, Xv, Yv, cg);
    for (const int exponent : {-300, 300}) {
        const double s = std::ldexp(1.0, exponent);
        const auto fit = nytro::nytro_path<double>(X, Y * s, C, p.sigma, Xv, Yv * s, cg);
        CHECK_EQ(fit.n_iter, expected.n_iter);
        CHECK_CLOSE((fit.coef / s).eval(), expected.coef, 1e-12);
    }
    // All-zero targets are in range (their model is 0).
    CHECK(nytro::nytro_path<double>(X, MatrixD::Zero(X.rows(), 1), C, p.sigma, kNone, kNoneY, cg).coef.isZero());
}

// A linear kernel on |x| ~ 1e120: K^T K overflows, the hold-out error of cg's and hybrid's
// every t was inf, and they returned t = 1 with the zero model as the fit.
NYTRO_TEST(krylov_paths_refuse_a_hold_out_error_that_overflows) {
    const Problem p = make_problem(60, 4, 12, 20);
    const double s = 1e120;
    const MatrixD X = p.X * s, C = p.centers * s, Xv = p.X_val * s;
    const nytro::KernelSpec linear(nytro::KernelType::linear, 1.5, {});
    for (const nytro::Method method : {nytro::Method::cg, nytro::Method::hybrid})
        for (const Solver solver : {Solver::direct, Solver::gram}) {
            nytro::NytroOptions o;
            o.method = method;
            o.solver = solver;
            o.max_iter = 10;
            CHECK_THROWS_WITH(nytro::nytro_path<double>(X, p.Y, C, linear, Xv, p.Y_val, o), std::runtime_error,
                              "not finite");
        }
}

// max_iter as "until the rule stops" (2^63 - 1) with two outputs: the columns the path
// may validate, max_iter q, overflowed (undefined; UBSan stops tools/sanitize.sh there).
NYTRO_TEST(unbounded_max_iter_with_several_outputs_stops_by_its_rule) {
    const Problem p = make_problem(60, 4, 12, 20, 2);
    for (const Solver solver : {Solver::direct, Solver::gram, Solver::spectral}) {
        nytro::NytroOptions o;
        o.solver = solver;
        o.max_iter = std::numeric_limits<Index>::max();
        o.patience = 5;
        const auto fit = nytro::nytro_path<double>(p.X, p.Y, p.centers, p.sigma, p.X_val, p.Y_val, o);
        CHECK_EQ(fit.iterations_run, fit.n_iter + 5);
        CHECK(fit.coef.allFinite());
    }
}

NYTRO_TEST(absurd_allocation_throws_out_of_memory) {
    if (nytro::physical_memory_bytes() == 0) return;  // nothing to compare with
    // n = 1e6: the n x n kernel is 8 TB (4 TB in float), refused before allocating.
    const MatrixD X = MatrixD::Zero(1000000, 1), Y = MatrixD::Zero(1000000, 1);
    const MatrixD none(0, 1);
    CHECK_THROWS(nytro::landweber_path<double>(X, Y, 1.0, none, none), nytro::out_of_memory);
    CHECK_THROWS(nytro::krls_path<double>(X, Y, 1.0, {1e-3}, none, none), nytro::out_of_memory);
    CHECK_THROWS(nytro::kols<double>(X, Y, 1.0), nytro::out_of_memory);
    // m = n centres: K_mm alone is 8 TB.
    CHECK_THROWS(nytro::nytro_path<double>(X, Y, X, 1.0, none, none), nytro::out_of_memory);
    CHECK_THROWS(nytro::nkrls_path<double>(X, Y, X, 1.0, {1e-3}, none, none), nytro::out_of_memory);
    const nytro::Matrix<float> Xf = X.cast<float>(), Yf = Y.cast<float>(), nonef(0, 1);
    CHECK_THROWS(nytro::landweber_path<float>(Xf, Yf, 1.0, nonef, nonef), nytro::out_of_memory);
}

namespace {

struct Stop {
    const char* stage;
};

// Runs `call` with a callback that throws Stop at the `at`-th report of `stage`;
// checks that Stop comes out, unchanged, and that nothing more was reported after it.
template <class Call>
void check_abort(const char* what, const char* stage, Index at, Call call) {
    const auto caller = std::this_thread::get_id();
    Index seen = 0, after = 0;
    bool stopped = false, caught = false, other_thread = false;
    nytro::Callback callback = [&](const nytro::Progress& progress) {
        if (std::this_thread::get_id() != caller) other_thread = true;
        if (stopped) ++after;
        if (std::string(progress.stage) == stage && ++seen == at) {
            stopped = true;
            throw Stop{stage};
        }
    };
    try {
        call(callback);
    } catch (const Stop& stop) {
        caught = std::string(stop.stage) == stage;
    }
    CHECK_MSG(caught, std::string(what) + ": Stop at stage " + stage + " did not propagate (" + check::str(seen) +
                          " reports of that stage)");
    CHECK_MSG(after == 0, std::string(what) + ": " + check::str(after) + " reports after the throw");
    CHECK_MSG(!other_thread, std::string(what) + ": callback called from another thread");
}

}  // namespace

NYTRO_TEST(callback_exception_aborts_path) {
    const Problem p = make_problem();
    for (Solver solver : {Solver::direct, Solver::gram}) {
        for (bool holdout : {false, true}) {
            const std::string what = std::string("nytro ") + nytro::to_string(solver) + (holdout ? " hold-out" : "");
            // "factor" is reported once, the Lanczos "step_size" steps a few times.
            const std::pair<const char*, Index> stops[] = {{"factor", 1}, {"step_size", 2}, {"iterate", 5}};
            for (const auto& [stage, at] : stops) {
                check_abort(what.c_str(), stage, at, [&](const nytro::Callback& cb) {
                    nytro::NytroOptions o;
                    o.solver = solver;
                    o.max_iter = 100;
                    o.callback = cb;
                    run_nytro<double>(p, o, holdout);
                });
            }
        }
    }
    check_abort("nytro gram", "gram", 1, [&](const nytro::Callback& cb) {
        nytro::NytroOptions o = fixed_step(0.01, 10, Solver::gram);
        o.callback = cb;
        run_nytro<float>(p, o, false);
    });
    check_abort("landweber", "iterate", 7, [&](const nytro::Callback& cb) {
        nytro::IterativeOptions o;
        o.callback = cb;
        nytro::landweber_path<double>(p.X, p.Y, p.sigma, p.X_val, p.Y_val, o);
    });
    check_abort("nkrls", "lambda", 2, [&](const nytro::Callback& cb) {
        nytro::TikhonovOptions o;
        o.callback = cb;
        nytro::nkrls_path<double>(p.X, p.Y, p.centers, p.sigma, {1e-6, 1e-4, 1e-2}, p.X_val, p.Y_val, o);
    });
    check_abort("krls", "lambda", 1, [&](const nytro::Callback& cb) {
        nytro::TikhonovOptions o;
        o.callback = cb;
        o.solver = nytro::TikhonovSolver::cholesky;
        nytro::krls_path<double>(p.X, p.Y, p.sigma, {1e-6, 1e-4, 1e-2}, p.X_val, p.Y_val, o);
    });
}
