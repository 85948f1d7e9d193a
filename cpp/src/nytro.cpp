// NYTRO: gradient descent on A = K_nm R (paper, eq. 13), by the direct or Gram solver.
#include "dense.hpp"
#include "fused_pass.hpp"
#include "gradient_path.hpp"
#include "input_checks.hpp"
#include "nystrom_setup.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "nytro/solvers.hpp"
#include "parallel.hpp"

#include <memory>

namespace nytro {
namespace {

// Rough rates of a current core pair: a flop costs 1/1e11 s in a GEMM, a byte 1/3e10 s
// in a streamed matrix-vector product. Only their ratio matters for the choice.
constexpr double kFlopsPerSecond = 1e11;
constexpr double kBytesPerSecond = 3e10;

template <class T>
Solver choose_solver(Index n, Index k, Index max_iter, bool upper) {
    const double t_max = double(max_iter), size = sizeof(T), kk = double(k) * double(k);
    // gram: K^T K (n k^2 flops with the symmetric half), R^T G R (2 k^3 triangular,
    // 4 k^3 dense), then one k x k matrix-vector product per iteration.
    const double gram = (double(n) * kk + (upper ? 2.0 : 4.0) * kk * double(k)) / kFlopsPerSecond +
                        t_max * kk * size / kBytesPerSecond;
    // direct: a pass over the stored n x k kernel and two products with R per iteration.
    const double direct = t_max * (double(n) * double(k) + (upper ? 1.0 : 2.0) * kk) * size / kBytesPerSecond;
    if (double(n) * double(k) * size > 0.5 * double(physical_memory_bytes())) return Solver::gram;
    return direct <= gram ? Solver::direct : Solver::gram;
}

// Direct: iterate on alpha = R beta, alpha <- alpha - s R R^T K^T (K alpha - y), so an
// iteration reads the stored K once (fused pass) plus two products with R.
template <class T>
struct DirectSolver {
    Matrix<T> K;
    std::unique_ptr<detail::FusedPass<T>> pass;
    Matrix<T> scratch;

    void build(detail::GradientProblem<T>& problem, std::function<double()>& lambda_max,
               const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const detail::NystromSetup<T>& setup,
               double sigma, int threads, const Callback& callback) {
        const Matrix<T>& R = setup.factor.R;
        const bool upper = setup.factor.upper_triangular;
        const Index k = setup.factor.rank(), q = Y.cols();
        K = gaussian_kernel<T>(X, setup.used, sigma, threads);
        pass = std::make_unique<detail::FusedPass<T>>(K, threads);
        scratch.resize(k, q);
        problem.dim = setup.used.rows();
        problem.gradient = [this, &R, upper, &Y, threads](const Matrix<T>& alpha, Matrix<T>& grad) {
            const Matrix<T>& normal = pass->normal_residual(alpha, Y);
            detail::multiply_left_transposed<T>(R, upper, normal, scratch, threads);
            detail::multiply_left<T>(R, upper, scratch, grad, threads);
        };
        problem.to_alpha = [](const MatrixCRef<T>& betas, MatrixRef<T> alphas) { alphas = betas; };
        lambda_max = [this, &R, upper, k, threads, callback] {
            Matrix<T> lifted(R.rows(), 1);
            return detail::largest_eigenvalue<T>(
                k,
                [&](const Matrix<T>& v, Matrix<T>& out) {
                    detail::multiply_left<T>(R, upper, v, lifted, threads);
                    detail::multiply_left_transposed<T>(R, upper, pass->normal(lifted), out, threads);
                },
                callback);
        };
    }
};

// Gram: H = A^T A and C = A^T y formed once from streamed kernel blocks (K_nm never
// stored), then beta <- beta - s (H beta - C) in k dimensions.
template <class T>
struct GramSolver {
    Matrix<T> H, C;

    void build(detail::GradientProblem<T>& problem, std::function<double()>& lambda_max,
               const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const detail::NystromSetup<T>& setup,
               double sigma, int threads, const Callback& callback) {
        auto gram = detail::stream_gram<T>(X, Y, setup.used, sigma, threads, callback);
        detail::project_gram<T>(gram, setup.factor, H, C, threads);
        const Matrix<T>& R = setup.factor.R;
        const bool upper = setup.factor.upper_triangular;
        problem.dim = H.rows();
        problem.gradient = [this, threads](const Matrix<T>& beta, Matrix<T>& grad) {
            detail::multiply<T>(H, beta, grad, threads);
            grad -= C;
        };
        problem.to_alpha = [&R, upper, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            detail::multiply_left<T>(R, upper, betas, alphas, threads);
        };
        lambda_max = [this, threads, callback] {
            return detail::largest_eigenvalue<T>(
                H.rows(), [&](const Matrix<T>& v, Matrix<T>& out) { detail::multiply<T>(H, v, out, threads); },
                callback);
        };
    }
};

}  // namespace

template <class T>
PathResult<T> nytro_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                         double sigma, const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                         const NytroOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_centers<T>(centers, X);
    detail::check_iterative_options(options);
    const int threads = detail::resolve_threads(options.n_threads);
    const auto setup = detail::prepare_nystrom<T>(centers, sigma, options.factor, X_val, Y_val, threads,
                                                  options.callback);
    PathResult<T> result;
    result.rank = setup.factor.rank();
    result.solver = options.solver != Solver::automatic
                        ? options.solver
                        : choose_solver<T>(X.rows(), setup.used.rows(), options.max_iter,
                                           setup.factor.upper_triangular);

    detail::GradientProblem<T> problem;
    problem.q = Y.cols();
    problem.alpha_rows = setup.used.rows();
    std::function<double()> lambda_max;
    DirectSolver<T> direct;
    GramSolver<T> gram;
    if (result.solver == Solver::direct)
        direct.build(problem, lambda_max, X, Y, setup, sigma, threads, options.callback);
    else
        gram.build(problem, lambda_max, X, Y, setup, sigma, threads, options.callback);

    const double step = detail::resolve_step(options, X.rows(), lambda_max);
    IterativeOptions loop = options;
    loop.n_threads = threads;
    detail::run_gradient_path<T>(problem, step, setup.validation.get(), loop, result);
    result.coef = detail::scatter_rows<T>(result.coef, setup.factor.support, centers.rows());
    return result;
}

template PathResult<float> nytro_path<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                             const MatrixCRef<float>&, double, const MatrixCRef<float>&,
                                             const MatrixCRef<float>&, const NytroOptions&);
template PathResult<double> nytro_path<double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                               const MatrixCRef<double>&, double, const MatrixCRef<double>&,
                                               const MatrixCRef<double>&, const NytroOptions&);

}  // namespace nytro
