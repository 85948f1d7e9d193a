// Tikhonov regularisation along a lambda grid: NKRLS (paper, eq. 12), KRLS (eq. 6), and
// KOLS (eq. 3) as the pseudo-inverse limit.
#include "passes/dense.hpp"
#include "runtime/input_checks.hpp"
#include "runtime/memory_plan.hpp"
#include "passes/gram.hpp"
#include "solvers/nystrom_setup.hpp"
#include "factor/owned_cholesky.hpp"
#include "nytro/eigen_solver.hpp"
#include "solvers/owned_eigen.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "nytro/solvers.hpp"
#include "runtime/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace nytro {
namespace {

// The eigendecomposition behind the eigh solves, always in float64. A float32 ?syevd is
// only backward stable to a few float32 epsilons of ||H||, and (H + shift I)^-1 amplifies
// that by up to cond(H + shift I): on a kernel with cond ~ 1e5 the coefficients then
// drift 10-40x further from the float64 answer than the rounding of H itself implies
// (and than NumPy's float32 eigh), by an amount that depends on the LAPACK's kernels and
// so on the CPU. In float64 the only float32 errors left are those of H and of the result.
struct Eigenbasis {
    Eigen::VectorXd values;
    Matrix<double> vectors;
};

template <class T>
Eigenbasis eigenbasis(const Matrix<T>& H, const Callback& callback) {
    Eigenbasis basis;
    if constexpr (std::is_same_v<T, double>) {
        symmetric_eigen<double>(H, basis.values, basis.vectors, callback);
    } else {
        check_allocation(double(H.size()) * sizeof(double),
                         "the float64 copy of " + shape_text<T>(H.rows(), H.cols()));
        // The widened copy is the one an interruptible worker needs: not copied again.
        detail::symmetric_eigen_owned<double>(std::make_shared<const Matrix<double>>(H.template cast<double>()),
                                              basis.values, basis.vectors, callback);
    }
    return basis;
}

// Solutions (H + shift I)^-1 C for every shift = lambda n, side by side (k x q*L).
// eigh: one eigendecomposition H = V diag(s) V^T serves every lambda exactly, with s
// clipped at 0 so the tiny end of the grid keeps pseudo-inverse semantics.
// cholesky: the paper's form, one factorisation per lambda; a lambda whose shifted
// matrix is numerically singular falls back to the eigendecomposition.
template <class T>
class ShiftedSolves {
public:
    ShiftedSolves(const Matrix<T>& H, const Matrix<T>& C, TikhonovSolver solver)
        : H_(H), C_(C), solver_(solver) {}

    Matrix<T> solve_all(const std::vector<double>& shifts, const Callback& callback) {
        // A linear kernel on |x| ~ 1e120 overflows A^T A: said here, not as an
        // eigendecomposition that "did not converge".
        if (!H_.allFinite())
            throw std::runtime_error(std::string("A^T A is not finite: ") + detail::kOverflowAdvice);
        const Index k = H_.rows(), q = C_.cols(), L = static_cast<Index>(shifts.size());
        Matrix<T> out(k, q * L), M;  // M: H + shift I, factored in place; one buffer for all shifts
        for (Index l = 0; l < L; ++l) {
            auto block = out.middleCols(l * q, q);
            if (solver_ == TikhonovSolver::cholesky) {
                M = H_;
                M.diagonal().array() += static_cast<T>(shifts[l]);
                // On a worker that Ctrl-C abandons (k^3 / 3 flops, seconds at k = 10000).
                if (detail::cholesky_lower_owned<T>(M, callback, {"lambda", l, L})) {
                    const Matrix<T>& factor = M;  // H + shift I = L L^T, L in the lower triangle
                    block = C_;
                    factor.template triangularView<Eigen::Lower>().solveInPlace(block);
                    factor.template triangularView<Eigen::Lower>().transpose().solveInPlace(block);
                    if (block.allFinite()) {
                        if (callback) callback({"lambda", l + 1, L});
                        continue;
                    }
                }
            }
            decompose(callback);
            Matrix<double> scaled = projected_;
            for (Index i = 0; i < k; ++i) scaled.row(i) /= basis_.values[i] + shifts[l];
            block = (basis_.vectors * scaled).template cast<T>();
            if (callback) callback({"lambda", l + 1, L});
        }
        return out;
    }

private:
    void decompose(const Callback& callback) {
        if (decomposed_) return;
        basis_ = eigenbasis<T>(H_, callback);
        basis_.values = basis_.values.cwiseMax(0.0);
        projected_ = basis_.vectors.transpose() * C_.template cast<double>();
        decomposed_ = true;
    }

    const Matrix<T>& H_;
    const Matrix<T>& C_;
    TikhonovSolver solver_;
    bool decomposed_ = false;
    Eigenbasis basis_;
    Matrix<double> projected_;
};

std::vector<double> scaled(const std::vector<double>& lambdas, Index n) {
    std::vector<double> shifts(lambdas);
    for (double& s : shifts) s *= double(n);
    return shifts;
}

// Picks the lambda with the smallest validation RMSE (the only one without hold-out), or
// error rate (Metric::error), where ties are common: among equal error rates, the largest
// lambda (the stronger regularisation).
template <class T>
void select(const Matrix<T>& alphas, Index q, const std::vector<double>& lambdas,
            const detail::Validation<T>* validation, int threads, TikhonovResult<T>& result) {
    result.selected = -1;
    if (validation) {
        validation->rmse(alphas, q, result.validation_rmse, threads);
        const bool by_error = validation->metric() == Metric::error;
        const auto& path = result.validation_rmse;
        for (std::size_t l = 0; l < path.size(); ++l) {
            const double r = path[l];
            if (!std::isfinite(r)) continue;
            const auto s = std::size_t(result.selected);
            if (result.selected < 0 || r < path[s] || (by_error && r == path[s] && lambdas[l] > lambdas[s]))
                result.selected = Index(l);
        }
    } else {
        result.selected = 0;
    }
    if (result.selected < 0 || !alphas.middleCols(result.selected * q, q).allFinite())
        throw std::runtime_error("the solution is not finite for any lambda of the grid (overflow)");
    result.coef = alphas.middleCols(result.selected * q, q);
}

void check_tikhonov_options(const TikhonovOptions& options) {
    detail::check_named(to_string(options.solver), "solver", int(options.solver));
    detail::check_named(to_string(options.storage), "storage", int(options.storage));
    detail::check_named(to_string(options.metric), "metric", int(options.metric));
    detail::check_named(to_string(options.factor.method), "factor", int(options.factor.method));
}

}  // namespace

template <class T>
TikhonovResult<T> nkrls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                             const KernelSpec& kernel, const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                             const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_target_range<T>(Y, Y_val);
    detail::check_centers<T>(centers, X);
    detail::check_lambdas(lambdas, X_val.rows() > 0);
    check_tikhonov_options(options);
    const int threads = detail::resolve_threads(options.n_threads);
    const Index q = Y.cols();
    require(options.storage != Storage::float16,
            "storage='float16' is for NYTRO's stored K_nm; NKRLS takes None or 'float32'");
    const bool low = options.storage == Storage::float32;
    if (low && !kernel.distance_based())
        detail::check_float_linear_kernel(std::max({detail::largest_row_norm<T>(X), detail::largest_row_norm<T>(X_val),
                                                    detail::largest_row_norm<T>(centers)}),
                                          "float32", "the kernel blocks of A^T A and the hold-out kernel");
    const double m = double(centers.rows()), m2 = m * m, L = double(lambdas.size());
    detail::MemoryPlan plan("Nystrom KRLS on m = " + std::to_string(centers.rows()) + " centres (n_centers)");
    plan.add(detail::MemoryPlan::factor, "K_mm and its factor (2 x m x m)", 2.0 * m2 * sizeof(T));
    plan.add(detail::MemoryPlan::solve, "the factor, R and A^T A (3 x m x m)", 3.0 * m2 * sizeof(T));
    if (options.solver == TikhonovSolver::eigh)
        plan.add(detail::MemoryPlan::solve, "the float64 eigendecomposition of A^T A (4 x m x m)", 4.0 * m2 * 8.0);
    else
        plan.add(detail::MemoryPlan::solve, "A^T A + lambda n I, factored (m x m)", m2 * sizeof(T));
    plan.add(detail::MemoryPlan::solve, "the solutions for every lambda (2 x m x q L)",
             2.0 * m * double(Y.cols()) * L * sizeof(T));
    plan.advise("n_centers <= " + std::to_string(Index(std::sqrt(double(available_memory_bytes()) /
                                                                  (3.0 * sizeof(T) + 32.0)))));
    plan.check();
    // Sample weights: the unweighted problem on the rows of K_nm and Y scaled by sqrt(w'_i).
    const Vector<T> row_scale = detail::row_scales<T>(options.sample_weights, X.rows(), "sample_weights");
    const Matrix<T> Y_scaled = row_scale.size() > 0 ? Matrix<T>(row_scale.asDiagonal() * Y) : Matrix<T>();
    const MatrixCRef<T> Yw = row_scale.size() > 0 ? MatrixCRef<T>(Y_scaled) : Y;
    return plan.guard([&] {
        auto setup = detail::prepare_nystrom<T>(centers, kernel, options.factor, threads, options.callback);
        const double k = double(setup.factor.rank());
        setup.validation = detail::make_validation<T>(X_val, Y_val, setup.used, kernel, threads, low,
                                                      4.0 * k * k * sizeof(T),  // H, its eigenvectors, solves
                                                      false, options.callback);
        detail::configure_validation(setup.validation.get(), options);
        const auto normal = detail::stream_normal_equations<T>(
            X, Yw, setup.used, setup.factor.formed(threads, options.callback), kernel, threads, options.callback, low, true,
            std::nullopt, row_scale.size() > 0 ? &row_scale : nullptr);
        ShiftedSolves<T> solves(normal.H, normal.C, options.solver);
        const Matrix<T> betas = solves.solve_all(scaled(lambdas, X.rows()), options.callback);
        Matrix<T> alphas(setup.used.rows(), betas.cols());
        setup.factor.lift(betas, alphas, threads);

        TikhonovResult<T> result;
        result.rank = setup.factor.rank();
        select<T>(alphas, q, lambdas, setup.validation.get(), threads, result);
        result.coef = detail::scatter_rows<T>(result.coef, setup.factor.support(), centers.rows());
        return result;
    });
}

template <class T>
TikhonovResult<T> krls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                            const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                            const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_target_range<T>(Y, Y_val);
    detail::check_lambdas(lambdas, X_val.rows() > 0);
    check_tikhonov_options(options);
    const int threads = detail::resolve_threads(options.n_threads);
    const double n = double(X.rows()), n2 = n * n;
    detail::MemoryPlan plan("KRLS on n = " + std::to_string(X.rows()) + " rows (its kernel is n x n)");
    plan.add(detail::MemoryPlan::whole, "K (n x n)", n2 * sizeof(T));
    if (options.solver == TikhonovSolver::eigh)
        plan.add(detail::MemoryPlan::solve, "its float64 eigendecomposition (4 x n x n)", 4.0 * n2 * 8.0);
    else
        plan.add(detail::MemoryPlan::solve, "K + lambda n I, factored (n x n)", n2 * sizeof(T));
    plan.add(detail::MemoryPlan::solve, "the solutions for every lambda (2 x n x q L)",
             2.0 * n * double(Y.cols()) * double(lambdas.size()) * sizeof(T));
    plan.advise("NystromKRLSRegressor or NytroRegressor, whose memory is O(n m)");
    plan.check();
    const Vector<T> row_scale = detail::row_scales<T>(options.sample_weights, X.rows(), "sample_weights");
    return plan.guard([&] {
        Matrix<T> K = kernel_matrix<T>(X, X, kernel, threads, options.callback);
        Matrix<T> Yc = Y;
        // Sample weights: (S K S + lambda n I) beta = S y, alpha = S beta with S = diag(sqrt(w'))
        // solves (S^2 K + lambda n I) alpha = S^2 y, the weighted problem's normal equations.
        if (row_scale.size() > 0) detail::scale_both_sides<T>(K, Yc, row_scale);
        ShiftedSolves<T> solves(K, Yc, options.solver);
        Matrix<T> alphas = solves.solve_all(scaled(lambdas, X.rows()), options.callback);
        if (row_scale.size() > 0) detail::scale_rows<T>(alphas, row_scale);
        const Matrix<T> centers = X;
        const auto validation =
            detail::make_validation<T>(X_val, Y_val, centers, kernel, threads, false, 0.0, false, options.callback);
        detail::configure_validation(validation.get(), options);
        TikhonovResult<T> result;
        result.rank = X.rows();
        select<T>(alphas, Y.cols(), lambdas, validation.get(), threads, result);
        return result;
    });
}

template <class T>
Matrix<T> kols(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel, double rcond, int n_threads,
               const Callback& callback, const std::vector<double>& sample_weights) {
    const Matrix<T> none(0, X.cols()), none_y(0, Y.cols());
    detail::check_training_data<T>(X, Y, none, none_y);
    const Index n = X.rows();
    const double cut_ratio = rcond < 0 ? double(n) * std::numeric_limits<T>::epsilon() : rcond;
    require(cut_ratio < 1, "rcond must be < 1, got " + format_number(rcond));
    const Vector<T> row_scale = detail::row_scales<T>(sample_weights, n, "sample_weights");
    Matrix<T> K = kernel_matrix<T>(X, X, kernel, detail::resolve_threads(n_threads), callback);
    Matrix<T> Ys = Y;
    // Sample weights: alpha = S pinv(S K S) S y (S = diag(sqrt(w'))), the weighted
    // least-squares solution of least norm in the metric of the scaled problem.
    if (row_scale.size() > 0) detail::scale_both_sides<T>(K, Ys, row_scale);
    const auto [w, V] = eigenbasis<T>(K, callback);  // float64, as for the Tikhonov solves
    const double cut = cut_ratio * w.cwiseAbs().maxCoeff();
    Matrix<double> projected = V.transpose() * Ys.template cast<double>();
    for (Index i = 0; i < n; ++i) {
        if (w[i] > cut) projected.row(i) /= w[i];
        else projected.row(i).setZero();
    }
    Matrix<T> coef = (V * projected).template cast<T>();
    if (row_scale.size() > 0) detail::scale_rows<T>(coef, row_scale);
    if (!coef.allFinite()) throw std::runtime_error("pinv(K) y is not finite (overflow)");
    return coef;
}

#define NYTRO_INSTANTIATE(T)                                                                                 \
    template TikhonovResult<T> nkrls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&,                    \
                                             const MatrixCRef<T>&, const KernelSpec&, const std::vector<double>&, \
                                             const MatrixCRef<T>&, const MatrixCRef<T>&,                     \
                                             const TikhonovOptions&);                                        \
    template TikhonovResult<T> krls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&,  \
                                            const std::vector<double>&, const MatrixCRef<T>&,                \
                                            const MatrixCRef<T>&, const TikhonovOptions&);                   \
    template Matrix<T> kols<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&, double, int, const Callback&, \
                               const std::vector<double>&);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)
#undef NYTRO_INSTANTIATE  // unity builds put several sources in one unit

}  // namespace nytro
