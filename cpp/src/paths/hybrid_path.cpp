#include "paths/hybrid_path.hpp"

#include "paths/holdout_images.hpp"
#include "paths/lanczos_path.hpp"
#include "nytro/errors.hpp"
#include "runtime/input_checks.hpp"
#include "paths/stopping.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace nytro::detail {
namespace {

// Basis vectors added between two predictions of the hold-out set: the images of a
// stretch are one product with K_val (a matrix product, not 16 matrix-vector ones), and a
// stop wastes at most a stretch of products.
constexpr Index kStretch = 16;

// Z.col(l).head(k) = (T_k + shifts[l] I)^-1 norm e_1 for every l, for the tridiagonal T_k
// of a Lanczos process (its first k steps), by elimination without pivoting:
// T_k + shift I is symmetric positive definite for shift > 0 (T_k is H's compression), so
// the pivots stay positive; so is T_k itself (shift 0, cg) while the space is not
// invariant: no vector of it is in H's null space. The shifts are innermost (U and W are
// L x k or larger, a column per step), so that the divisions of a whole grid are vector
// operations rather than one dependent chain per shift.
void solve_shifted(const LanczosProcess& process, Index k, const std::vector<double>& shifts, double norm,
                   Eigen::MatrixXd& Z, Eigen::MatrixXd& U, Eigen::MatrixXd& W) {
    const auto& a = process.diagonal();
    const auto& b = process.off_diagonal();
    const Index L = Index(shifts.size());
    for (Index l = 0; l < L; ++l) {
        const double pivot = a[0] + shifts[std::size_t(l)];
        U(l, 0) = k > 1 ? b[0] / pivot : 0.0;
        W(l, 0) = norm / pivot;
    }
    for (Index i = 1; i < k; ++i) {
        const std::size_t u = std::size_t(i);
        const double next = i + 1 < k ? b[u] : 0.0;
        for (Index l = 0; l < L; ++l) {
            const double pivot = a[u] + shifts[std::size_t(l)] - b[u - 1] * U(l, i - 1);
            U(l, i) = next / pivot;
            W(l, i) = -b[u - 1] * W(l, i - 1) / pivot;
        }
    }
    for (Index i = k - 2; i >= 0; --i)
        for (Index l = 0; l < L; ++l) W(l, i) -= U(l, i) * W(l, i + 1);
    Z.topLeftCorner(k, L) = W.topLeftCorner(L, k).transpose();
}

// z = (T_k + shift I)^+ norm e_1 on the Ritz values of T_k above rounding, for a process
// whose Krylov space is invariant (k = its size). A singular H (duplicate rows) with c
// outside its range puts c's null-space part in the invariant space, and T_k then has a
// Ritz value that is rounding (|T| times eps or below): solving through it returned the
// null-space part over the shift (1e-15 n for the grid's first lambda), coefficients of
// 1e12 whose rounding moved the predictions. Dropped, the solution is V T_k^+ V^T c =
// H^+ c on the invariant space: the minimum-norm least-squares solution (shifted).
// Otherwise (no such Ritz value) the shifted elimination below, as for every other k.
class InvariantSolve {
public:
    // Decomposes T_k of a complete process; `singular()` says whether a Ritz value was dropped.
    explicit InvariantSolve(const LanczosProcess& process, double norm) {
        const Index k = process.size();
        Eigen::VectorXd a = Eigen::Map<const Eigen::VectorXd>(process.diagonal().data(), k);
        Eigen::VectorXd b = Eigen::Map<const Eigen::VectorXd>(process.off_diagonal().data(), k - 1);
        // At unit scale (a power of two: exact), as top_ritz_value does for Eigen's
        // tridiagonal QR, whose deflation test is not scale-invariant.
        const double largest = std::max(a.cwiseAbs().maxCoeff(), b.size() ? b.cwiseAbs().maxCoeff() : 0.0);
        if (!std::isfinite(largest)) return;
        if (!(largest > 0)) {  // T_k = 0 (c in H's null space, every product exactly 0): no Ritz value kept
            singular_ = true;
            theta_.resize(0);
            U_.resize(k, 0);
            projected_.resize(0);
            return;
        }
        const double unit = std::ldexp(1.0, -std::ilogb(largest));
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz;
        ritz.computeFromTridiagonal(a * unit, b * unit, Eigen::ComputeEigenvectors);
        const Eigen::VectorXd theta = ritz.eigenvalues() / unit;
        // Against |H| as the process measured it (its stop at a singular T_k used that).
        const double floor = kBreakdown * process.epsilon() * std::sqrt(double(k)) *
                             std::max(theta.cwiseAbs().maxCoeff(), process.scale());
        Index kept = 0;
        for (Index i = 0; i < k; ++i) kept += theta[i] > floor ? 1 : 0;
        singular_ = kept < k;
        if (!singular_) return;
        theta_.resize(kept);
        U_.resize(k, kept);
        for (Index i = 0, j = 0; i < k; ++i)
            if (theta[i] > floor) {
                theta_[j] = theta[i];
                U_.col(j++) = ritz.eigenvectors().col(i);
            }
        projected_ = norm * U_.row(0).transpose();  // U^T norm e_1
    }

    bool singular() const { return singular_; }

    void solve(double shift, double* z) const {
        Eigen::Map<Eigen::VectorXd>(z, U_.rows()) = U_ * (projected_.array() / (theta_.array() + shift)).matrix();
    }

private:
    bool singular_ = false;
    Eigen::VectorXd theta_, projected_;
    Eigen::MatrixXd U_;
};

// The projected solutions at k steps for every shift, into Z's columns: through
// InvariantSolve where the column's space is invariant at k and T_k singular, else
// solve_shifted.
void solve_projected(const KrylovColumn& column, const std::optional<InvariantSolve>& invariant, Index k,
                     const std::vector<double>& shifts, Eigen::MatrixXd& Z, Eigen::MatrixXd& U,
                     Eigen::MatrixXd& W) {
    if (invariant && invariant->singular() && k == column.size()) {
        for (std::size_t l = 0; l < shifts.size(); ++l) invariant->solve(shifts[l], Z.col(Index(l)).data());
        return;
    }
    solve_shifted(column.process, k, shifts, column.norm_c, Z, U, W);
}

// One shift's projected solution at k steps, into z (k entries).
void solve_projected(const KrylovColumn& column, const std::optional<InvariantSolve>& invariant, Index k,
                     double shift, Eigen::VectorXd& z) {
    Eigen::MatrixXd Z(k, 1), U(1, k), W(1, k);
    solve_projected(column, invariant, k, std::vector<double>{shift}, Z, U, W);
    z = Z.col(0);
}

}  // namespace

std::vector<double> paper_lambda_grid() {
    // Exponents 15 i / 99 - 15: a quotient minus a constant, which no compiler contracts
    // into a fused multiply-add, so the reference reproduces every bit. numpy.logspace's
    // exponents and power may differ in the last bit (8 of the 100 values on an AVX-512
    // machine), so lambda_ matches NystromKRLSRegressor's grid to rounding.
    std::vector<double> grid(100);
    for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = std::pow(10.0, (15.0 * double(i)) / 99.0 - 15.0);
    return grid;
}

std::vector<double> hybrid_lambda_grid(double kernel_bound) {
    std::vector<double> grid = paper_lambda_grid();
    if (kernel_bound > 0 && std::isfinite(kernel_bound))
        for (double& lambda : grid) lambda *= kernel_bound;
    return grid;
}

namespace {

// The projected path of hybrid (grid: hybrid_lambda_grid, shift_scale n) and of cg (grid
// {0}, the projected system solved as it is), as run_hybrid_path and run_cg_path describe.
template <class T>
void run_projected_path(const LinearProblem<T>& problem, const std::vector<double>& grid, double shift_scale,
                        const char* method, const HoldOut<T>* holdout, const IterativeOptions& options,
                        PathResult<T>& result) {
    const Index q = problem.q, capacity = std::min(problem.dim, options.max_iter);
    // The images of the basis need the hold-out rows in memory; a caller's hold-out set
    // (HoldOut without them) validates the coefficients of every (k, lambda) instead, a
    // stretch of k per call.
    const Validation<T>* validation = holdout ? holdout->in_memory() : nullptr;
    const bool by_error = holdout && holdout->metric() == Metric::error;
    // A holder that gives the images' R factors (HoldOut::image_factors) is read once,
    // after the Krylov spaces have grown to the end: each of its calls is a pass over rows
    // held elsewhere. Its error rates need the predictions themselves, so they are read
    // per stretch of k like any caller's values.
    const bool factored = holdout && !validation && !by_error && holdout->has_image_factors();
    const bool by_images = validation || factored;
    check_allocation(double(problem.dim) * double(capacity + 1) * double(q) * sizeof(double),
                     std::string("the Krylov basis of method '") + method + "'");
    // Rounding of a product with H: T's, or float's where H is stored in float32.
    const double epsilon = std::max(double(std::numeric_limits<T>::epsilon()), problem.storage_epsilon);
    std::vector<KrylovColumn> columns = start_columns(problem.rhs, capacity, epsilon, true);
    const Index L = Index(grid.size());
    const double n = shift_scale;
    // Without a hold-out set: max_iter steps, then the grid's smallest lambda (for hybrid,
    // the projected least-squares solution, CG's max_iter-th iterate in exact arithmetic).
    Eigen::MatrixXd targets;
    if (validation) {
        targets = validation->targets().template cast<double>();
        validation->weigh_rows(targets);
    }
    const double n_val = validation ? double(targets.rows()) : holdout ? holdout->rows() : 0.0;
    // A column's weight in the pooled RMSE: a holder's factors carry it already.
    auto weight = [&](Index c) { return validation ? validation->weight(c) : 1.0; };

    // The basis as coefficients (alpha_rows x capacity) and their hold-out predictions, for
    // the first described[c] basis vectors of column c; allocated once, like the basis.
    std::vector<Matrix<T>> coefficients(columns.size(), Matrix<T>(problem.alpha_rows, capacity));
    std::vector<Index> described(columns.size(), 0);
    std::vector<HoldoutImages> images(columns.size());
    if (validation) {
        check_allocation(n_val * double(capacity) * double(q) * sizeof(double),
                         std::string("the hold-out images of method '") + method + "'");
        for (HoldoutImages& image : images) image.reserve(targets.rows(), capacity);
    }
    StoppingRule rule(options.stopping, options.tol, options.window, options.patience,
                      holdout ? holdout->metric() : Metric::rmse);
    std::vector<Eigen::VectorXd> selected(columns.size());  // z at the selected (k, lambda)
    std::vector<std::optional<InvariantSolve>> invariant(columns.size());  // once a column's space is
    Index selected_lambda = 0, products = 0, k = 0;
    // The projected solutions for every lambda at one k, and the work of their errors: sized
    // once for the largest k (the first kc rows are used).
    Eigen::MatrixXd Z(capacity, L), errors(capacity, L), pivots(L, capacity), solved(L, capacity);
    std::vector<double> shifts(grid.size());  // lambda n, each lambda of the grid
    for (std::size_t l = 0; l < grid.size(); ++l) shifts[l] = grid[l] * n;
    Eigen::ArrayXd squared(L);
    // Metric::error: the misclassified rows of every lambda at one k, from the predictions
    // (scaled as the targets are, which changes no class; the tally reads the classes from
    // the unscaled targets and weighs the rows itself).
    std::optional<ErrorTally> tally;
    if (validation && validation->metric() == Metric::error) tally = validation->error_tally();
    std::vector<KrylovColumn*> growing;
    Matrix<T> vectors, out, alphas;
    std::vector<double> values;
    bool stop = false;

    // The path at k = size: the best lambda's hold-out RMSE (or error rate), from the
    // images (in memory, or a holder's factors) or from the caller's values of the
    // stretch that began after k = base.
    auto evaluate = [&](Index size, Index base) {
        squared.setZero();
        if (tally) tally->reset(L);
        if (!by_images)  // the caller's values themselves (pooled RMSE or error rate), not sums of squares
            for (Index l = 0; l < L; ++l) squared[l] = values[std::size_t((size - base - 1) * L + l)];
        for (std::size_t c = 0; c < columns.size() && by_images; ++c) {
            const Index kc = std::min(size, columns[c].size());
            if (kc == 0) {  // c = 0: every prediction is 0
                squared += factored ? images[c].residual[0] : weight(Index(c)) * targets.col(Index(c)).squaredNorm();
                if (tally) tally->add(Index(c), Eigen::MatrixXd::Zero(targets.rows(), L));
                continue;
            }
            solve_projected(columns[c], invariant[c], kc, shifts, Z, pivots, solved);
            if (tally) {
                images[c].tally_predictions(Z.topRows(kc), errors, *tally, Index(c), options.n_threads);
            } else {
                images[c].add_errors(Z.topRows(kc), weight(Index(c)), squared, errors);
            }
        }
        // Error rates tie often: the tie goes to the larger lambda (the grid ascends),
        // the stronger regularisation; the RMSE's to the first.
        if (tally)
            for (Index l = 0; l < L; ++l) squared[l] = tally->rate(l);
        Index best = -1;
        for (Index l = 0; l < L; ++l)
            if (std::isfinite(squared[l]) &&
                (best < 0 || squared[l] < squared[best] || (by_error && squared[l] == squared[best])))
                best = l;
        const double rmse = best < 0                 ? std::numeric_limits<double>::infinity()
                            : tally || !by_images ? squared[best]
                                                  : std::sqrt(squared[best] / (n_val * double(q)));
        const auto verdict = rule.push(rmse);
        if (verdict.candidate && best >= 0) {
            selected_lambda = best;
            for (std::size_t c = 0; c < columns.size(); ++c) {
                const Index kc = std::min(size, columns[c].size());
                selected[c].resize(kc);
                if (kc > 0)
                    solve_projected(columns[c], invariant[c], kc, shifts[std::size_t(best)], selected[c]);
            }
        }
        stop = verdict.stop;
        if (options.callback) options.callback({"iterate", size, capacity});
    };
    while (k < capacity && !stop) {
        // Grow every open process by up to a stretch, one block product per step.
        Index reached = k;
        for (Index step = 0; step < kStretch; ++step) {
            growing.clear();
            for (KrylovColumn& column : columns)
                if (!column.complete() && column.size() < capacity) growing.push_back(&column);
            if (growing.empty()) break;
            vectors.resize(problem.dim, Index(growing.size()));
            out.resize(problem.dim, Index(growing.size()));
            for (std::size_t i = 0; i < growing.size(); ++i)
                vectors.col(Index(i)) = growing[i]->process.next_vector().template cast<T>();
            problem.apply(vectors, out);
            ++products;
            for (std::size_t i = 0; i < growing.size(); ++i)
                growing[i]->process.absorb(out.col(Index(i)).template cast<double>());
            if (options.callback) options.callback({"lanczos", products, capacity});
        }
        for (std::size_t c = 0; c < columns.size(); ++c) {
            reached = std::max(reached, columns[c].size());
            if (columns[c].norm_c > 0 && columns[c].process.complete() && !invariant[c])
                invariant[c].emplace(columns[c].process, columns[c].norm_c);
        }
        if (reached == k) break;  // every Krylov space is invariant: later t repeat the last solution
        // Coefficients and hold-out images of the new basis vectors.
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const Index have = described[c], size = columns[c].size();
            if (size == have) continue;
            const Matrix<T> added = basis_as_coefficients(problem, columns[c], have);
            coefficients[c].middleCols(have, size - have) = added;
            described[c] = size;
            if (!validation) continue;
            // Row-major, as append's block products take it.
            Matrix<double> predicted = validation->predict(added, options.n_threads).template cast<double>();
            validation->weigh_rows(predicted);
            images[c].append(predicted, targets.col(Index(c)), options.n_threads);
        }
        if (!holdout || factored) {
            k = reached;
            continue;
        }
        if (!validation) {  // block ((size - k - 1) L + l) holds the coefficients at (size, lambda_l)
            alphas.setZero(problem.alpha_rows, (reached - k) * L * q);
            for (Index size = k + 1; size <= reached; ++size)
                for (std::size_t c = 0; c < columns.size(); ++c) {
                    const Index kc = std::min(size, columns[c].size());
                    if (kc == 0) continue;  // c = 0: every prediction is 0
                    solve_projected(columns[c], invariant[c], kc, shifts, Z, pivots, solved);
                    for (Index l = 0; l < L; ++l)
                        alphas.col(((size - k - 1) * L + l) * q + Index(c)) =
                            coefficients[c].leftCols(kc) * Z.col(l).head(kc).cast<T>();
                }
            values.clear();
            holdout->rmse(alphas, q, values, options.n_threads);
        }
        for (Index size = k + 1; size <= reached && !stop; ++size) evaluate(size, k);
        k = reached;
    }
    if (factored && k > 0) {  // the whole path from one call of the holder
        std::vector<Matrix<T>> bases(columns.size());
        for (std::size_t c = 0; c < columns.size(); ++c) bases[c] = coefficients[c].leftCols(described[c]);
        const std::vector<Eigen::MatrixXd> factors = holdout->image_factors(bases);
        require(factors.size() == columns.size(), "image_factors must return one factor per output column");
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const Index rows = described[c] + 1;
            require(factors[c].rows() == rows && factors[c].cols() == rows,
                    "image_factors must return a (k + 1) x (k + 1) factor for a basis of k vectors: " +
                        std::to_string(rows) + " x " + std::to_string(rows) + " expected for output " +
                        std::to_string(c));
            images[c].assign_factor(factors[c]);
        }
        for (Index size = 1; size <= k && !stop; ++size) evaluate(size, 0);
    }
    // Past an invariant Krylov space (at the latest t = dim) every t gives the same solution
    // and the same hold-out RMSE: the path ends there, as a rule's stop would end it (no
    // later t can be selected over an earlier one with the same value). Running it on to
    // max_iter would take no products but one value per t: unbounded memory and time for
    // a large max_iter. Where every column of c is 0 the space is {0} from the start, and
    // the path holds t = 1 alone (every prediction 0).
    if (holdout && rule.path().empty()) {
        if (!validation) {
            values.clear();
            holdout->rmse(Matrix<T>::Zero(problem.alpha_rows, q), q, values, options.n_threads);
            rule.push(values[0]);
        } else if (tally) {
            tally->reset(1);
            for (Index j = 0; j < q; ++j) tally->add(j, Eigen::MatrixXd::Zero(targets.rows(), 1));
            rule.push(tally->rate(0));
        } else {
            double zero_error = 0.0;
            for (Index j = 0; j < q; ++j) zero_error += validation->weight(j) * targets.col(j).squaredNorm();
            rule.push(std::sqrt(zero_error / (n_val * double(q))));
        }
    }
    // A hold-out error that overflows at every t (data or kernel values near the ends of
    // the range: a linear kernel on |x| ~ 1e120) selects no model; 0 is not one.
    if (holdout && (rule.selected() < 1 || !std::isfinite(rule.path()[std::size_t(rule.selected() - 1)])))
        throw std::runtime_error(std::string("method '") + method + "': the hold-out error is not finite at any "
                                 "t: " + kOverflowAdvice);
    // Without a hold-out set: the lambda given (a refit at a selected (t, lambda)), else the
    // grid's smallest.
    const double fixed_lambda = options.hybrid_lambda > 0 ? options.hybrid_lambda : grid[0];
    if (!holdout) {
        for (std::size_t c = 0; c < columns.size(); ++c) {
            selected[c].resize(columns[c].size());
            if (columns[c].size() > 0)
                solve_projected(columns[c], invariant[c], columns[c].size(), fixed_lambda * double(n), selected[c]);
        }
    }
    Matrix<T> alpha = Matrix<T>::Zero(problem.alpha_rows, q);
    for (Index j = 0; j < q; ++j) {
        const auto& z = selected[std::size_t(j)];
        if (z.size() > 0) alpha.col(j) = coefficients[std::size_t(j)].leftCols(z.size()) * z.template cast<T>();
    }
    result.coef = problem.finish ? problem.finish(alpha) : std::move(alpha);
    result.validation_rmse = rule.path();
    result.iterations_run = holdout ? Index(rule.path().size()) : options.max_iter;
    result.n_iter = holdout ? rule.selected() : options.max_iter;
    result.products = products;
    result.step_size = 0.0;
    result.lambda = holdout ? grid[std::size_t(selected_lambda)] : fixed_lambda;
}

}  // namespace

template <class T>
void run_hybrid_path(const LinearProblem<T>& problem, Index n, const HoldOut<T>* validation,
                     const IterativeOptions& options, PathResult<T>& result, double kernel_bound) {
    run_projected_path(problem, hybrid_lambda_grid(kernel_bound), double(n), "hybrid", validation, options, result);
}

template <class T>
void run_cg_path(const LinearProblem<T>& problem, const HoldOut<T>* validation, const IterativeOptions& options,
                 PathResult<T>& result) {
    run_projected_path(problem, std::vector<double>{0.0}, 1.0, "cg", validation, options, result);
    // T_k is positive definite before the space is invariant, but a pivot of its
    // elimination may still round to zero: that is no model.
    if (!result.coef.allFinite())
        throw std::runtime_error("method 'cg': the coefficients are not finite (the projected system is singular "
                                 "to rounding); use method 'hybrid', or a smaller max_iter");
}

template void run_cg_path<float>(const LinearProblem<float>&, const HoldOut<float>*, const IterativeOptions&,
                                 PathResult<float>&);
template void run_cg_path<double>(const LinearProblem<double>&, const HoldOut<double>*, const IterativeOptions&,
                                  PathResult<double>&);
template void run_hybrid_path<float>(const LinearProblem<float>&, Index, const HoldOut<float>*,
                                     const IterativeOptions&, PathResult<float>&, double);
template void run_hybrid_path<double>(const LinearProblem<double>&, Index, const HoldOut<double>*,
                                      const IterativeOptions&, PathResult<double>&, double);

}  // namespace nytro::detail
