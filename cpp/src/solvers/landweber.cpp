// Landweber iteration (early stopping on the full kernel), the paper's eq. (8).
#include "passes/dense.hpp"
#include "paths/gradient_path.hpp"
#include "runtime/input_checks.hpp"
#include "solvers/nystrom_setup.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "kernel/packed_centers.hpp"
#include "nytro/solvers.hpp"
#include "runtime/parallel.hpp"

#include <memory>

namespace nytro {

template <class T>
PathResult<T> landweber_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                             const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                             const IterativeOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_iterative_options(options);
    const int threads = detail::resolve_threads(options.n_threads);
    const Index n = X.rows(), q = Y.cols();
    const Matrix<T> K = kernel_matrix<T>(X, X, kernel, threads);
    const Matrix<T> centers = X;
    const auto validation = detail::make_validation<T>(X_val, Y_val, centers, kernel, threads, false, 0.0);
    if (validation) validation->set_weights(options.validation_weights);
    if (validation) validation->set_metric(options.metric);

    // The iterations solve K alpha = y directly (K is symmetric positive semidefinite).
    detail::LinearProblem<T> problem;
    problem.dim = problem.alpha_rows = n;
    problem.q = q;
    problem.apply = [&](const Matrix<T>& p, Matrix<T>& out) { detail::multiply<T>(K, p, out, threads); };
    problem.iteration_bytes = double(K.size()) * sizeof(T);
    problem.rhs = Y;
    problem.to_alpha = [](const MatrixCRef<T>& betas, MatrixRef<T> alphas) { alphas = betas; };
    PathResult<T> result;
    result.rank = n;
    result.solver = Solver::direct;
    IterativeOptions loop = options;
    loop.n_threads = threads;
    detail::run_path_with_step<T>(problem, n, validation.get(), loop, result, detail::kernel_bound<T>(X, kernel));
    return result;
}

template PathResult<float> landweber_path<float>(const MatrixCRef<float>&, const MatrixCRef<float>&, const KernelSpec&,
                                                 const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                 const IterativeOptions&);
template PathResult<double> landweber_path<double>(const MatrixCRef<double>&, const MatrixCRef<double>&, const KernelSpec&,
                                                   const MatrixCRef<double>&, const MatrixCRef<double>&,
                                                   const IterativeOptions&);

}  // namespace nytro
