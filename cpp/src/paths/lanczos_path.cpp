#include "paths/lanczos_path.hpp"

#include "nytro/errors.hpp"
#include "runtime/input_checks.hpp"
#include "paths/stopping.hpp"
#include "paths/validation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace nytro::detail {
namespace {

// Beyond this the full reorthogonalisation (4 dim k flops a step, reading the basis)
// costs about as much as a product with a Gram matrix of the same dim.
constexpr Index kMostSteps = 512;
constexpr double kBasisBytes = 256.0 * 1024 * 1024;
// Iterates validated together (one product with the basis images per chunk).
constexpr Index kChunk = 64;
// Steps taken when the process starts, before any certification.
constexpr Index kFirstSteps = 4;
// Iterates of the projected system stepped by a certification between two calls of the
// progress callback (its interruption point): O(k) flops each, k <= kMostSteps.
constexpr Index kCertifyBetweenCalls = 4096;

}  // namespace

template <class T>
std::vector<KrylovColumn> start_columns(const Matrix<T>& c, Index most_steps, double epsilon,
                                        bool stop_when_singular) {
    std::vector<KrylovColumn> columns(static_cast<std::size_t>(c.cols()));
    for (Index j = 0; j < c.cols(); ++j) {
        KrylovColumn& column = columns[std::size_t(j)];
        const Eigen::VectorXd cj = c.col(j).template cast<double>();
        column.norm_c = cj.stableNorm();
        // A non-finite A^T y (products of a kernel near the ends of the range, e.g. a
        // linear kernel on |x| ~ 1e120) left the process unstarted yet open, and the
        // first step read past its empty basis.
        if (!std::isfinite(column.norm_c))
            throw std::runtime_error(std::string("A^T y is not finite: ") + kOverflowAdvice);
        if (column.norm_c > 0) column.process.start(cj, most_steps, epsilon, stop_when_singular);
    }
    return columns;
}

template <class T>
Matrix<T> basis_as_coefficients(const LinearProblem<T>& problem, const KrylovColumn& column, Index first) {
    const Index count = column.size() - first;
    if (count == 0) return Matrix<T>(problem.alpha_rows, 0);
    const Matrix<T> basis = column.process.basis().middleCols(first, count).template cast<T>();
    Matrix<T> alphas(problem.alpha_rows, count);
    problem.to_alpha(basis, alphas);
    return alphas;
}

template <class T>
LanczosGradient<T>::LanczosGradient(const LinearProblem<T>& problem, Index max_iter, const Callback& callback,
                                    bool estimate_top)
    : problem_(problem), max_iter_(max_iter), capacity_(basis_limit(problem, max_iter)), callback_(callback),
      // An iterate off by this much relative is within the rounding of the stepwise path
      // itself (about t eps after t steps), or of H where it is stored in float32: the
      // stepwise path on float32 K_nm is that far from the one on K_nm in T. Covertype's
      // window rule (float32 storage): 30 -> 22 products, the same t* and test RMSE.
      tolerance_(64.0 * std::max(double(std::numeric_limits<T>::epsilon()), problem.storage_epsilon)) {
    check_allocation(double(problem.dim) * double(capacity_ + 1) * double(problem.q) * sizeof(double),
                     "the Lanczos basis");
    columns_ = start_columns(problem.rhs, capacity_);
    if (estimate_top) top_.emplace(problem.dim, top_eigenvalue_tolerance<T>());
    // A few steps to start; certify() grows the basis only as far as its horizon needs.
    extend(std::min(capacity_, kFirstSteps));
}

template <class T>
double LanczosGradient<T>::top_eigenvalue() {
    if (!top_) top_.emplace(problem_.dim, top_eigenvalue_tolerance<T>());
    while (!top_->done()) extend(1);
    return top_->value();
}

template <class T>
void LanczosGradient<T>::certify(double step, Index horizon) {
    step_ = step;
    horizon = std::min(horizon, max_iter_);
    while (true) {
        certified_ = max_iter_;
        Index largest = 0;
        bool growing = false;
        for (const Column& column : columns_) {
            certified_ = std::min(certified_, certified(column));
            largest = std::max(largest, column.size());
            growing = growing || open(column);
        }
        if (certified_ >= horizon || !growing) return;
        // Each step is a product with H whatever the increment, while a check costs
        // O(k max_iter) flops per column: small increments, so that the basis overshoots
        // what the bound needs by at most a 16th. Growing by max(8, k / 4) from
        // sqrt(max_iter) steps instead, Covertype's window rule took 22 products where 16
        // certify its first 64 iterates.
        extend(std::max<Index>(1, largest / 16));
    }
}

template <class T>
Index LanczosGradient<T>::basis_limit(const LinearProblem<T>& problem, Index max_iter) {
    const double per_step = double(problem.dim) * double(problem.q) * sizeof(double);
    const Index by_memory = std::max<Index>(1, Index(kBasisBytes / per_step) - 1);
    // At most half the products of the stepwise path, which runs instead when the basis
    // falls short.
    const Index by_path = std::min(max_iter, std::max<Index>(32, max_iter / 2));
    return std::min({problem.dim, by_path, kMostSteps, by_memory});
}

template <class T>
void LanczosGradient<T>::extend(Index steps) {
    std::vector<LanczosProcess*> growing;
    Matrix<T> vectors, products;
    for (Index done = 0; done < steps; ++done) {
        growing.clear();
        for (Column& column : columns_)
            if (open(column)) growing.push_back(&column.process);
        const bool top = top_ && !top_->done();
        const Index count = Index(growing.size()) + (top ? 1 : 0);
        if (count == 0) return;
        // One block product for every open process: H is read once whatever their number.
        vectors.resize(problem_.dim, count);
        products.resize(problem_.dim, count);
        for (std::size_t i = 0; i < growing.size(); ++i)
            vectors.col(Index(i)) = growing[i]->next_vector().template cast<T>();
        if (top) vectors.col(count - 1) = top_->next_vector().template cast<T>();
        problem_.apply(vectors, products);
        ++products_;
        for (std::size_t i = 0; i < growing.size(); ++i)
            growing[i]->absorb(products.col(Index(i)).template cast<double>());
        if (top) top_->absorb(products.col(count - 1).template cast<double>());
        if (!callback_) continue;
        if (top) callback_({"step_size", top_->steps(), top_->most_steps()});
        else callback_({"lanczos", products_, capacity_});
    }
}

template <class T>
void LanczosGradient<T>::step_projected(const Column& column, Eigen::VectorXd& z) const {
    const Index k = column.size();
    if (k == 0) return;  // c = 0
    const auto& diagonal = column.process.diagonal();
    const auto& off = column.process.off_diagonal();
    double before = 0;  // z[i - 1] before this step
    for (Index i = 0; i < k; ++i) {
        double Tz = diagonal[std::size_t(i)] * z[i];
        if (i > 0) Tz += off[std::size_t(i - 1)] * before;
        if (i + 1 < k) Tz += off[std::size_t(i)] * z[i + 1];
        before = z[i];
        z[i] -= step_ * Tz;
    }
    z[0] += step_ * column.norm_c;
}

template <class T>
bool LanczosGradient<T>::diverging(const std::vector<Eigen::VectorXd>& z) const {
    // The projected residual |c| e_1 - T z: for a stable step at most |c| (the residual
    // polynomial is at most 1 on T's spectrum, within H's), as on the stepwise path.
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        const Column& column = columns_[c];
        const Index k = std::min(column.size(), Index(z[c].size()));
        if (k == 0) continue;
        const auto& diagonal = column.process.diagonal();
        const auto& off = column.process.off_diagonal();
        double squared = 0;
        for (Index i = 0; i < k; ++i) {
            double r = (i == 0 ? column.norm_c : 0.0) - diagonal[std::size_t(i)] * z[c][i];
            if (i > 0) r -= off[std::size_t(i - 1)] * z[c][i - 1];
            if (i + 1 < k) r -= off[std::size_t(i)] * z[c][i + 1];
            squared += r * r;
        }
        if (!(std::sqrt(squared) <= 2 * column.norm_c)) return true;
    }
    return false;
}

template <class T>
Index LanczosGradient<T>::certified(const Column& column) const {
    if (column.complete()) return max_iter_;
    Eigen::VectorXd z = Eigen::VectorXd::Zero(column.size());
    double sum = 0;
    for (Index t = 1; t <= max_iter_; ++t) {
        sum += std::abs(z[column.size() - 1]);
        step_projected(column, z);
        if (step_ * column.process.coupling() * sum > tolerance_ * z.norm()) return t - 1;
        // O(k) per t: an interruption point now and then (max_iter is at most
        // kMostCertified here, see by_lanczos).
        if (callback_ && t % kCertifyBetweenCalls == 0) callback_({"certify", t, max_iter_});
    }
    return max_iter_;
}

template <class T>
bool LanczosGradient<T>::run(const HoldOut<T>* holdout, const IterativeOptions& options,
                             PathResult<T>& result) {
    const Index q = problem_.q;
    // The images of the basis need the hold-out rows in memory; a caller's hold-out set
    // (HoldOut without them) validates the coefficients of each chunk's iterates instead.
    const Validation<T>* validation = holdout ? holdout->in_memory() : nullptr;
    std::vector<Matrix<T>> coefficients(columns_.size());  // per column: alpha_rows x k
    std::vector<Eigen::MatrixXd> images(columns_.size());  // per column: n_val x k, K_val times those
    std::vector<Eigen::VectorXd> z(columns_.size());       // per column: the projected iterate
    // Brings the coefficient bases and the hold-out images up to the current basis, and
    // z_t to it (recomputed from z_0: T has grown).
    auto follow_basis = [&](Index t) {
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const Index have = coefficients[c].cols(), size = columns_[c].size();
            if (size > have) {
                const Matrix<T> added = basis_as_coefficients(problem_, columns_[c], have);
                coefficients[c].conservativeResize(problem_.alpha_rows, size);
                coefficients[c].rightCols(size - have) = added;
                if (validation) {
                    images[c].conservativeResize(validation->targets().rows(), size);
                    Eigen::MatrixXd predicted = validation->predict(added, options.n_threads).template cast<double>();
                    validation->weigh_rows(predicted);
                    images[c].rightCols(size - have) = predicted;
                }
            }
            z[c] = Eigen::VectorXd::Zero(size);
            for (Index i = 0; i < t; ++i) step_projected(columns_[c], z[c]);
        }
    };
    follow_basis(0);
    auto coefficients_of = [&](const std::vector<Eigen::VectorXd>& at) {
        Matrix<T> alpha(problem_.alpha_rows, q);
        for (Index j = 0; j < q; ++j) {
            const auto& W = coefficients[std::size_t(j)];
            const auto& zj = at[std::size_t(j)];
            if (W.cols() == 0) alpha.col(j).setZero();
            else alpha.col(j) = W.leftCols(zj.size()) * zj.template cast<T>();
        }
        return problem_.finish ? problem_.finish(alpha) : alpha;
    };
    result.step_size = step_;
    result.validation_rmse.clear();

    if (holdout == nullptr) {
        if (certified_ < max_iter_) return false;
        for (Index t = 1; t <= max_iter_; ++t) {
            for (Index j = 0; j < q; ++j) step_projected(columns_[std::size_t(j)], z[std::size_t(j)]);
            if ((t % kChunk == 0 || t == max_iter_) && diverging(z)) throw_diverged(t, step_);
            if (options.callback) options.callback({"iterate", t, max_iter_});
        }
        result.coef = coefficients_of(z);
        result.n_iter = result.iterations_run = max_iter_;
        result.products = products_;
        return true;
    }

    Eigen::MatrixXd targets;
    if (validation) {
        targets = validation->targets().template cast<double>();
        validation->weigh_rows(targets);
    }
    const Index n_val = targets.rows();
    StoppingRule rule(options.stopping, options.tol, options.window, options.patience, holdout->metric());
    std::vector<Eigen::MatrixXd> chunk(static_cast<std::size_t>(q));
    std::vector<Eigen::VectorXd> selected = z;  // z of the selected iterate, in a basis' first columns
    Eigen::ArrayXd squared(kChunk);
    Eigen::MatrixXd errors;
    // Metric::error: the misclassified rows of each iterate of a chunk, from the predictions
    // (scaled as the targets are, which changes no class; the tally reads the classes from
    // the unscaled targets and weighs the rows itself).
    std::optional<ErrorTally> tally;
    if (validation && validation->metric() == Metric::error) tally = validation->error_tally();
    // A caller's hold-out set: each call may be a round trip, so chunks of up to its
    // most_per_call iterates (within the certified stretch).
    const Index per_chunk = validation ? kChunk : std::max(kChunk, holdout->most_per_call());
    Matrix<T> alphas;
    std::vector<double> values;
    Index t = 0;
    bool stop = false;
    while (t < max_iter_ && !stop) {
        if (t == certified_) {
            // A rule that stops early has not stopped within the certified stretch: certify
            // twice as far (the basis grows by a few vectors).
            certify(step_, 2 * t);
            if (certified_ == t) return false;  // the basis can grow no further
            follow_basis(t);
        }
        const Index count = std::min({per_chunk, max_iter_ - t, certified_ - t});
        if (squared.size() < count) squared.resize(count);
        squared.setZero();
        if (!validation) alphas.setZero(problem_.alpha_rows, count * q);
        for (Index j = 0; j < q; ++j) {
            const std::size_t c = std::size_t(j);
            chunk[c].resize(z[c].size(), count);
            for (Index i = 0; i < count; ++i) {
                step_projected(columns_[c], z[c]);
                chunk[c].col(i) = z[c];
            }
            if (!validation) {  // column j of every iterate's coefficients (0 where c_j = 0)
                const auto& W = coefficients[c];
                if (W.cols() > 0)
                    for (Index i = 0; i < count; ++i)
                        alphas.col(i * q + j) = W.leftCols(z[c].size()) * chunk[c].col(i).template cast<T>();
                continue;
            }
            if (images[c].cols() == 0) {  // c = 0: every prediction is 0
                errors.setZero(n_val, count);
            } else {
                errors.noalias() = images[c] * chunk[c];
            }
            if (tally) {
                if (j == 0) tally->reset(count);
                tally->add(j, errors);
                continue;
            }
            errors.colwise() -= targets.col(j);
            squared.head(count) += validation->weight(j) * errors.colwise().squaredNorm().transpose().array();
        }
        if (diverging(z)) throw_diverged(t + count, step_);
        if (!validation) {
            values.clear();
            holdout->rmse(alphas, q, values, options.n_threads);
        }
        for (Index i = 0; i < count && !stop; ++i) {
            ++t;
            const auto verdict = rule.push(!validation ? values[std::size_t(i)]
                                           : tally     ? tally->rate(i)
                                                       : std::sqrt(squared[i] / (double(n_val) * double(q))));
            if (verdict.candidate)
                for (std::size_t c = 0; c < chunk.size(); ++c) selected[c] = chunk[c].col(i);
            stop = verdict.stop;
            if (options.callback) options.callback({"iterate", t, max_iter_});
        }
    }
    result.validation_rmse = rule.path();
    result.iterations_run = t;
    result.n_iter = rule.selected();
    result.coef = coefficients_of(selected);
    result.products = products_;
    return true;
}

template class LanczosGradient<float>;
template class LanczosGradient<double>;
template std::vector<KrylovColumn> start_columns<float>(const Matrix<float>&, Index, double, bool);
template std::vector<KrylovColumn> start_columns<double>(const Matrix<double>&, Index, double, bool);
template Matrix<float> basis_as_coefficients<float>(const LinearProblem<float>&, const KrylovColumn&, Index);
template Matrix<double> basis_as_coefficients<double>(const LinearProblem<double>&, const KrylovColumn&, Index);

}  // namespace nytro::detail
