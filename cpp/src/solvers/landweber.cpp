// Landweber iteration (early stopping on the full kernel), the paper's eq. (8).
#include "passes/dense.hpp"
#include "paths/gradient_path.hpp"
#include "runtime/input_checks.hpp"
#include "runtime/memory_plan.hpp"
#include "solvers/nystrom_setup.hpp"
#include "passes/gram.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "kernel/packed_centers.hpp"
#include "nytro/solvers.hpp"
#include "runtime/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace nytro {

template <class T>
PathResult<T> landweber_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                             const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                             const IterativeOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_target_range<T>(Y, Y_val);
    detail::check_iterative_options(options);
    const int threads = detail::resolve_threads(options.n_threads);
    const Index n = X.rows(), q = Y.cols();
    // Planned before K, the n x n kernel, is formed; the hold-out kernel is streamed
    // (never stored), and gd's Lanczos basis holds at most min(max_iter, n) + 1 vectors.
    const double nn = double(n), d = double(X.cols());
    const double basis_per_row = double(std::min<Index>(options.max_iter, n) + 1) * double(q) * 8.0;
    detail::MemoryPlan plan("Landweber on n = " + std::to_string(n) + " rows (its kernel is n x n)");
    plan.add(detail::MemoryPlan::whole, "K (" + shape_text<T>(nn, nn) + ")", nn * nn * sizeof(T));
    plan.add(detail::MemoryPlan::whole, "a copy of X as the centres (n x d)", nn * d * sizeof(T));
    plan.add(detail::MemoryPlan::solve, "the Krylov basis (at most)", nn * basis_per_row);
    const double budget = double(available_memory_bytes());
    const double most_rows = (-(d * sizeof(T) + basis_per_row) +
                              std::sqrt(std::pow(d * sizeof(T) + basis_per_row, 2) + 4.0 * sizeof(T) * budget)) /
                             (2.0 * sizeof(T));
    plan.advise("NytroRegressor or nytro_path (Nystrom centres: memory O(n m), not O(n^2))");
    plan.advise("at most " + std::to_string(static_cast<long long>(std::max(0.0, std::floor(most_rows)))) +
                " training rows");
    if (sizeof(T) == 8) plan.advise("float32 data (dtype=np.float32: K in 4 bytes an entry)");
    plan.check();
    return plan.guard([&] {
        const Vector<T> row_scale = detail::row_scales<T>(options.sample_weights, n, "sample_weights");
        Matrix<T> K = kernel_matrix<T>(X, X, kernel, threads, options.callback);
        Matrix<T> rhs = Y;
        // Sample weights: the weighted iteration alpha_t = alpha - s S^2 (K alpha - y) is, with
        // alpha = S beta, the unweighted one on S K S and S y (S = diag(sqrt(w'))).
        if (row_scale.size() > 0) detail::scale_both_sides<T>(K, rhs, row_scale);
        const Matrix<T> centers = X;
        const auto validation =
            detail::make_validation<T>(X_val, Y_val, centers, kernel, threads, false, 0.0, false, options.callback);
        detail::configure_validation(validation.get(), options);

        // The iterations solve K alpha = y directly (K is symmetric positive semidefinite).
        detail::LinearProblem<T> problem;
        problem.dim = problem.alpha_rows = n;
        problem.q = q;
        problem.apply = [&](const Matrix<T>& p, Matrix<T>& out) { detail::multiply<T>(K, p, out, threads); };
        problem.iteration_bytes = double(K.size()) * sizeof(T);
        problem.rhs = std::move(rhs);
        problem.to_alpha = [&row_scale](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            alphas = betas;
            if (row_scale.size() > 0) detail::scale_rows<T>(alphas, row_scale);
        };
        PathResult<T> result;
        result.rank = n;
        result.solver = Solver::direct;
        IterativeOptions loop = options;
        loop.n_threads = threads;
        detail::run_path_with_step<T>(problem, n, validation.get(), loop, result, detail::kernel_bound<T>(X, kernel));
        return result;
    });
}

template PathResult<float> landweber_path<float>(const MatrixCRef<float>&, const MatrixCRef<float>&, const KernelSpec&,
                                                 const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                 const IterativeOptions&);
template PathResult<double> landweber_path<double>(const MatrixCRef<double>&, const MatrixCRef<double>&, const KernelSpec&,
                                                   const MatrixCRef<double>&, const MatrixCRef<double>&,
                                                   const IterativeOptions&);

}  // namespace nytro
