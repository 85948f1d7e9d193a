// A kernel of one's own: NYTRO's path, the kernel matrix and predictions for a kernel type
// the caller defines, without editing nytro. Any copyable type with
//
//     void operator()(const nytro::MatrixCRef<T>& X, const nytro::MatrixCRef<T>& Z,
//                     nytro::MatrixRef<T> out) const;   // out(i, j) = k(X.row(i), Z.row(j))
//
// is one (out arrives X.rows() x Z.rows(), its entries to be overwritten). It is called on
// blocks of rows (at most kBlockElements entries of out at once), from the calling thread;
// it may use threads of its own. k must be symmetric and positive semidefinite on the
// centres, as a kernel is: k(C, C) is checked for symmetry, and the factor drops the
// directions it is not positive on, as for the built-in kernels.
//
// The path is NYTRO's, by the core's engine (operator_path: the same step, stopping rules,
// certified Lanczos iterates and hybrid lambda grid as nytro_path), fed by the Gram
// route: A = S k(X, C) R over blocks of rows into A^T A and A^T S (S Y), S the sample
// weights' row scales (as nytro_path's), then the hold-out errors of k(X_val, C) alpha. What the built-in
// kernels' fused passes add (the direct solver, float32 or float16 storage of K_nm,
// validation weights, the error-rate metric) is refused by name: the Gram route is the
// one that never keeps K_nm, whatever k costs to evaluate.
#pragma once

#include "nytro/errors.hpp"
#include "nytro/nystrom.hpp"
#include "nytro/options.hpp"
#include "nytro/solvers.hpp"
#include "nytro/types.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace nytro::user_kernel {

// The most entries of one block of k's output: 32 MiB of float64, as the built-in
// kernels' streamed passes.
constexpr Index kBlockElements = Index(1) << 22;

namespace detail {

inline Index rows_per_block(Index columns) { return std::max<Index>(1, kBlockElements / std::max<Index>(1, columns)); }

// k(X, Z) into out, checked: a non-finite value is the kernel's fault, named as such.
template <class T, class Kernel>
void evaluate(const Kernel& kernel, const MatrixCRef<T>& X, const MatrixCRef<T>& Z, Matrix<T>& out) {
    out.resize(X.rows(), Z.rows());
    kernel(X, Z, MatrixRef<T>(out));
    require(out.allFinite(), "kernel: the user kernel returned a value that is not finite (rows " +
                                 std::to_string(X.rows()) + " x " + std::to_string(Z.rows()) + ")");
}

// The rows' scales sqrt(w_i / max w * n / sum(w / max w)), whose squares sum to n (none
// without weights), as the built-in paths scale them: the same path whatever the weights'
// unit, and no overflow for weights near the ends of the range.
inline std::vector<double> row_scales(const std::vector<double>& weights, Index rows, const char* what) {
    if (weights.empty()) return {};
    require(Index(weights.size()) == rows, std::string(what) + ": " + std::to_string(weights.size()) +
                                               " weights for " + std::to_string(rows) + " rows");
    double largest = 0.0, sum = 0.0;
    for (double v : weights) {
        require(std::isfinite(v) && v >= 0, std::string(what) + ": weights must be finite and >= 0");
        largest = std::max(largest, v);
    }
    require(largest > 0, std::string(what) + ": all weights are 0");
    for (double v : weights) sum += v / largest;
    std::vector<double> scales(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) scales[i] = std::sqrt(weights[i] / largest * double(rows) / sum);
    return scales;
}

inline void check_rows(const char* what, Index rows, Index cols, Index features) {
    require(cols == features, std::string(what) + ": " + std::to_string(cols) + " features, expected " +
                                  std::to_string(features) + " (as the centres)");
    require(rows >= 0, std::string(what) + ": negative rows");
}

}  // namespace detail

// k(X, Z), X.rows() x Z.rows(), evaluated by blocks of rows of X.
template <class T, class Kernel>
Matrix<T> kernel_matrix(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const Kernel& kernel) {
    require(X.cols() == Z.cols(), "Z: " + std::to_string(Z.cols()) + " features, X has " + std::to_string(X.cols()));
    check_allocation(double(X.rows()) * double(Z.rows()) * sizeof(T), "the kernel matrix k(X, Z)");
    Matrix<T> out(X.rows(), Z.rows()), block;
    const Index step = detail::rows_per_block(Z.rows());
    for (Index r0 = 0; r0 < X.rows(); r0 += step) {
        const Index rows = std::min(step, X.rows() - r0);
        detail::evaluate<T>(kernel, X.middleRows(r0, rows), Z, block);
        out.middleRows(r0, rows) = block;
    }
    return out;
}

// k(X, centers) coef, by blocks of rows of X: memory O(block m), not O(n m).
template <class T, class Kernel>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers, const MatrixCRef<T>& coef,
                         const Kernel& kernel) {
    require(coef.rows() == centers.rows(), "coef: " + std::to_string(coef.rows()) + " rows, expected one per centre (" +
                                               std::to_string(centers.rows()) + ")");
    detail::check_rows("X", X.rows(), X.cols(), centers.cols());
    Matrix<T> out(X.rows(), coef.cols()), block;
    const Index step = detail::rows_per_block(centers.rows());
    for (Index r0 = 0; r0 < X.rows(); r0 += step) {
        const Index rows = std::min(step, X.rows() - r0);
        detail::evaluate<T>(kernel, X.middleRows(r0, rows), centers, block);
        out.middleRows(r0, rows).noalias() = block * coef;
    }
    return out;
}

// NYTRO's path for a kernel of one's own: as nytro::nytro_path (nytro/solvers.hpp), with
// `kernel` in place of a KernelSpec. options.solver must be automatic or gram (the Gram
// route), options.storage same; options.sample_weights and validation_sample_weights
// weigh the rows as nytro_path does; validation_weights and Metric::error are refused.
template <class T, class Kernel>
PathResult<T> nytro_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                         const Kernel& kernel, const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                         const NytroOptions& options = {}) {
    const Index n = X.rows(), m = centers.rows(), d = centers.cols(), q = Y.cols(), n_val = X_val.rows();
    require(n >= 1, "X: no training rows");
    require(m >= 1, "centers: no centres");
    detail::check_rows("X", n, X.cols(), d);
    require(Y.rows() == n, "Y: " + std::to_string(Y.rows()) + " rows, X has " + std::to_string(n));
    require(q >= 1, "Y: no outputs");
    if (n_val > 0) detail::check_rows("X_val", n_val, X_val.cols(), d);
    require(Y_val.rows() == n_val, "Y_val: " + std::to_string(Y_val.rows()) + " rows, X_val has " +
                                       std::to_string(n_val));
    require(n_val == 0 || Y_val.cols() == q, "Y_val: " + std::to_string(Y_val.cols()) + " outputs, Y has " +
                                                 std::to_string(q));
    require(X.allFinite() && Y.allFinite() && centers.allFinite() && X_val.allFinite() && Y_val.allFinite(),
            "X, Y, centers, X_val, Y_val: values must be finite");
    require(options.solver == Solver::automatic || options.solver == Solver::gram,
            std::string("solver: a user kernel fits by the Gram route (automatic or gram), not ") +
                to_string(options.solver));
    require(options.storage == Storage::same, "storage: a user kernel keeps no K_nm to store in another precision");
    require(options.validation_weights.empty(), "validation_weights: not supported with a user kernel");
    require(options.metric == Metric::rmse, "metric: a user kernel's path is validated by the RMSE");
    const std::vector<double> scale = detail::row_scales(options.sample_weights, n, "sample_weights");
    const std::vector<double> scale_val = detail::row_scales(options.validation_sample_weights, n_val,
                                                             "validation_sample_weights");
    const int threads = options.n_threads > 0 ? options.n_threads : default_threads();
    const auto report = [&](const char* stage, Index done, Index total) {
        if (options.callback) options.callback(Progress{stage, done, total});
    };

    // The factor of k(C, C), which must be symmetric (to its own rounding).
    Matrix<T> K_mm;
    detail::evaluate<T>(kernel, centers, centers, K_mm);
    const T largest = std::max(K_mm.cwiseAbs().maxCoeff(), std::numeric_limits<T>::min());
    const T asymmetry = (K_mm - K_mm.transpose()).cwiseAbs().maxCoeff();
    require(asymmetry <= T(64) * std::numeric_limits<T>::epsilon() * largest,
            "kernel: k(centers, centers) is not symmetric (largest |k(c_i, c_j) - k(c_j, c_i)| " +
                format_number(double(asymmetry)) + " of " + format_number(double(largest)) + ")");
    K_mm = (T(0.5) * (K_mm + K_mm.transpose())).eval();
    const NystromFactor<T> factor = nystrom_factor<T>(K_mm, options.factor, threads, options.callback);
    const Index k = factor.rank();
    Matrix<T> C_support(Index(factor.support.size()), d);
    for (Index i = 0; i < C_support.rows(); ++i) C_support.row(i) = centers.row(factor.support[std::size_t(i)]);

    // A^T A and A^T S (S Y) over blocks of rows: A = S k(X, C_support) R.
    Matrix<T> H = Matrix<T>::Zero(k, k), c = Matrix<T>::Zero(k, q), block, A, SY, diagonal;
    const Index step = detail::rows_per_block(std::max<Index>(C_support.rows(), k));
    double bound = 0.0;  // max k(x, x) over the training rows, for StepRule::paper
    for (Index r0 = 0; r0 < n; r0 += step) {
        const Index rows = std::min(step, n - r0);
        detail::evaluate<T>(kernel, X.middleRows(r0, rows), C_support, block);
        A.noalias() = block * factor.R;
        SY = Y.middleRows(r0, rows);
        if (!scale.empty())
            for (Index i = 0; i < rows; ++i) {
                A.row(i) *= T(scale[std::size_t(r0 + i)]);
                SY.row(i) *= T(scale[std::size_t(r0 + i)]);
            }
        H.template selfadjointView<Eigen::Lower>().rankUpdate(A.transpose());
        c.noalias() += A.transpose() * SY;
        if (options.step_rule == StepRule::paper)
            for (Index i = 0; i < rows; ++i) {
                detail::evaluate<T>(kernel, X.middleRows(r0 + i, 1), X.middleRows(r0 + i, 1), diagonal);
                bound = std::max(bound, double(diagonal(0, 0)));
            }
        report("gram", r0 + rows, n);
    }
    H.template triangularView<Eigen::StrictlyUpper>() = H.transpose();

    // The hold-out rows' kernel, kept (n_val x m) for every iterate's RMSE.
    Matrix<T> K_val;
    if (n_val > 0) K_val = kernel_matrix<T>(X_val, centers, kernel);

    OperatorProblem<T> problem;
    problem.dim = k;
    problem.q = q;
    problem.apply = [&H](const Matrix<T>& p, Matrix<T>& out) { out.noalias() = H * p; };
    problem.rhs = c;
    problem.lift = factor.dense(m);
    if (n_val > 0)
        problem.holdout = [&](const Matrix<T>& alphas, Index outputs) {
            // The pooled RMSE of each set: sqrt(sum_i s_i^2 |K_val alpha - Y_val|_i^2 / (n_val q)).
            std::vector<double> rmse;
            const Matrix<T> predicted = K_val * alphas;
            for (Index s = 0; s * outputs < alphas.cols(); ++s) {
                double sum = 0.0;
                for (Index i = 0; i < n_val; ++i) {
                    const double row = (predicted.row(i).segment(s * outputs, outputs) - Y_val.row(i))
                                           .template cast<double>().squaredNorm();
                    sum += scale_val.empty() ? row : scale_val[std::size_t(i)] * scale_val[std::size_t(i)] * row;
                }
                rmse.push_back(std::sqrt(sum / (double(n_val) * double(outputs))));
            }
            return rmse;
        };
    problem.holdout_rows = double(n_val);
    problem.holdout_bytes = double(n_val) * double(m) * sizeof(T);
    problem.iteration_bytes = double(k) * double(k) * sizeof(T);
    problem.n = n;
    problem.kernel_bound = options.step_rule == StepRule::paper ? bound : 1.0;
    PathResult<T> result = operator_path<T>(problem, options);
    result.solver = Solver::gram;
    return result;
}

}  // namespace nytro::user_kernel
