// NYTRO: an iterative regulariser on A = K_nm R (paper, eq. 13), by the direct or Gram
// solver. Both present the same linear problem H beta = c with H = A^T A, c = A^T y.
#include "dense.hpp"
#include "fused_pass.hpp"
#include "gradient_path.hpp"
#include "gram.hpp"
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
    // gram: A = K R per block (n k^2 triangular, 2 n k^2 dense) and A^T A (n k^2 with the
    // symmetric half), then one k x k matrix-vector product per iteration.
    const double gram = (upper ? 2.0 : 3.0) * double(n) * kk / kFlopsPerSecond + t_max * kk * size / kBytesPerSecond;
    // direct: a pass over the stored n x k kernel and two products with R per iteration.
    const double direct = t_max * (double(n) * double(k) + (upper ? 1.0 : 2.0) * kk) * size / kBytesPerSecond;
    if (double(n) * double(k) * size > 0.5 * double(physical_memory_bytes())) return Solver::gram;
    return direct <= gram ? Solver::direct : Solver::gram;
}

// Direct: K_nm stored; H p = R^T K^T K R p with one fused pass over K per product.
template <class T>
struct DirectSolver {
    Matrix<T> K, lifted;
    std::unique_ptr<detail::FusedPass<T>> pass;

    void build(detail::LinearProblem<T>& problem, const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
               const detail::NystromSetup<T>& setup, double sigma, int threads) {
        const Matrix<T>& R = setup.factor.R;
        const bool upper = setup.factor.upper_triangular;
        K = gaussian_kernel<T>(X, setup.used, sigma, threads);
        pass = std::make_unique<detail::FusedPass<T>>(K, threads);
        lifted.resize(R.rows(), Y.cols());
        problem.dim = setup.factor.rank();
        problem.apply = [this, &R, upper, threads](const Matrix<T>& p, Matrix<T>& out) {
            detail::multiply_left<T>(R, upper, p, lifted, threads);
            detail::multiply_left_transposed<T>(R, upper, pass->normal(lifted), out, threads);
        };
        // c = R^T K^T y, from the pass with a zero iterate: K^T (K 0 - y) = -K^T y.
        const Matrix<T> zero = Matrix<T>::Zero(R.rows(), Y.cols());
        problem.rhs.resize(problem.dim, Y.cols());
        detail::multiply_left_transposed<T>(R, upper, -pass->normal_residual(zero, Y), problem.rhs, threads);
        problem.to_alpha = [&R, upper, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            detail::multiply_left<T>(R, upper, betas, alphas, threads);
        };
    }
};

// Gram: H = A^T A and C = A^T y accumulated once from streamed kernel blocks (K_nm never
// stored), then every product is a k x k matrix-vector product.
template <class T>
struct GramSolver {
    detail::NormalEquations<T> normal;

    void build(detail::LinearProblem<T>& problem, const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
               const detail::NystromSetup<T>& setup, double sigma, int threads, const Callback& callback) {
        normal = detail::stream_normal_equations<T>(X, Y, setup.used, setup.factor, sigma, threads, callback);
        const Matrix<T>& R = setup.factor.R;
        const bool upper = setup.factor.upper_triangular;
        problem.dim = normal.H.rows();
        problem.apply = [this, threads](const Matrix<T>& p, Matrix<T>& out) {
            detail::multiply<T>(normal.H, p, out, threads);
        };
        problem.rhs = normal.C;
        problem.to_alpha = [&R, upper, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            detail::multiply_left<T>(R, upper, betas, alphas, threads);
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

    detail::LinearProblem<T> problem;
    problem.q = Y.cols();
    problem.alpha_rows = setup.used.rows();
    DirectSolver<T> direct;
    GramSolver<T> gram;
    if (result.solver == Solver::direct)
        direct.build(problem, X, Y, setup, sigma, threads);
    else
        gram.build(problem, X, Y, setup, sigma, threads, options.callback);

    const double step = detail::resolve_step(options, X.rows(), [&] {
        return detail::largest_eigenvalue<T>(problem.dim, problem.apply, options.callback);
    });
    IterativeOptions loop = options;
    loop.n_threads = threads;
    detail::run_path<T>(problem, step, setup.validation.get(), loop, result);
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
