#include "paths/validation.hpp"

#include "passes/dense.hpp"
#include "runtime/machine_rates.hpp"
#include "runtime/parallel.hpp"
#include "runtime/input_checks.hpp"
#include "runtime/task_interruption.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace nytro::detail {

ErrorTally::ErrorTally(const Eigen::Ref<const Eigen::MatrixXd>& targets,
                       const Eigen::Ref<const Eigen::VectorXd>& row_weights)
    : rows_(targets.rows()), outputs_(targets.cols()), weights_(row_weights), truth_(std::size_t(targets.rows())) {
    if (weights_.size() > 0) {
        if (weights_.size() != rows_ || !(weights_.array() >= 0).all() || !(weights_.sum() > 0))
            throw std::logic_error("nytro internal error: ErrorTally's row weights do not match its rows");
        total_ = weights_.sum();
    } else if (rows_ > 0) {
        total_ = double(rows_);
    }
    for (Index i = 0; i < rows_; ++i) {
        if (outputs_ == 1) {
            truth_[std::size_t(i)] = targets(i, 0) > 0 ? 1 : 0;
        } else {
            Index c = 0;
            targets.row(i).maxCoeff(&c);
            truth_[std::size_t(i)] = c;
        }
    }
}

void ErrorTally::reset(Index models) {
    models_ = models;
    blocks_ = std::max<Index>(1, (rows_ + kBlockRows - 1) / kBlockRows);
    if (outputs_ == 1) {
        wrong_.assign(std::size_t(blocks_ * models), 0.0);
    } else {
        best_.resize(rows_, models);
        argmax_.setZero(rows_, models);
    }
}

void ErrorTally::add(Index column, const Eigen::Ref<const Eigen::MatrixXd>& P, Index r0) {
    if (outputs_ == 1) {
        // Block by block of the count, each block's sums accumulated in place.
        for (Index begin = 0; begin < P.rows();) {
            const Index block = (r0 + begin) / kBlockRows;
            const Index end = std::min(P.rows(), (block + 1) * kBlockRows - r0);
            for (Index k = 0; k < P.cols(); ++k) {
                double& wrong = wrong_[std::size_t(block * models_ + k)];
                for (Index i = begin; i < end; ++i)
                    if ((P(i, k) > 0) != (truth_[std::size_t(r0 + i)] == 1)) wrong += weight(r0 + i);
            }
            begin = end;
        }
        return;
    }
    auto best = best_.middleRows(r0, P.rows());
    auto argmax = argmax_.middleRows(r0, P.rows());
    if (column == 0) {
        best = P;
        argmax.setZero();
        return;
    }
    for (Index k = 0; k < P.cols(); ++k)
        for (Index i = 0; i < P.rows(); ++i)
            if (P(i, k) > best(i, k)) {  // strictly: the first column keeps a tie
                best(i, k) = P(i, k);
                argmax(i, k) = column;
            }
}

void ErrorTally::add_product(Index column, const Eigen::Ref<const Eigen::MatrixXd>& Q,
                             const Eigen::Ref<const Eigen::MatrixXd>& W, int n_threads) {
    const Index k = W.rows();
    const int threads = std::min<int>(resolve_threads(threads_for(2.0 * double(rows_) * double(k) * double(W.cols()),
                                                                  n_threads)),
                                      int(blocks_));
    // One block of predictions per thread, kept from call to call: the path calls this at
    // every k.
    if (Index(scratch_.size()) < threads) scratch_.resize(std::size_t(threads));
    for (int t = 0; t < threads; ++t)
        if (scratch_[std::size_t(t)].rows() != kBlockRows || scratch_[std::size_t(t)].cols() != W.cols())
            scratch_[std::size_t(t)].resize(kBlockRows, W.cols());
    parallel_for(blocks_, threads, [&](Index block, int thread) {
        const Index r0 = block * kBlockRows, rows = std::min(kBlockRows, rows_ - r0);
        auto P = scratch_[std::size_t(thread)].topRows(rows);
        P.noalias() = Q.block(r0, 0, rows, k) * W;
        add(column, P, r0);
    });
}

double ErrorTally::misclassified(Index model) const {
    if (outputs_ == 1) {
        double wrong = 0.0;
        for (Index b = 0; b < blocks_; ++b) wrong += wrong_[std::size_t(b * models_ + model)];
        return wrong;
    }
    double wrong = 0.0;
    for (Index i = 0; i < rows_; ++i)
        if (argmax_(i, model) != truth_[std::size_t(i)]) wrong += weight(i);
    return wrong;
}

namespace {

// A copy of A in U, in row blocks of about a million entries with `interruption` between
// them: a hold-out set of gigabytes takes seconds to copy into fresh memory on a loaded
// machine. The same entries as one whole copy.
template <class U, class T>
Matrix<U> copy_in_blocks(const MatrixCRef<T>& A, TaskInterruption& interruption) {
    Matrix<U> out(A.rows(), A.cols());
    const Index block = std::max<Index>(1, (Index(1) << 20) / std::max<Index>(A.cols(), 1));
    for (Index r0 = 0; r0 < A.rows(); r0 += block) {
        const Index rows = std::min(block, A.rows() - r0);
        out.middleRows(r0, rows) = A.middleRows(r0, rows).template cast<U>();
        interruption.after_task(0);
    }
    return out;
}

}  // namespace

template <class T>
Validation<T>::Validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val, const Matrix<T>& centers,
                          const KernelSpec& kernel, int n_threads, bool low_precision, double budget_bytes, bool defer,
                          Callback callback)
    : Y_val_(Y_val), centers_(centers), kernel_(kernel), callback_(std::move(callback)) {
    TaskInterruption interruption(callback_ ? std::function<void()>([this, &X_val] {
        callback_({"kernel", 0, X_val.rows()});
    })
                                            : std::function<void()>());
    X_val_ = copy_in_blocks<T, T>(X_val, interruption);
    low_ = low_precision && !std::is_same_v<T, float>;
    if (low_) {  // cast once: the streamed form computes its float32 blocks from these
        X_val_low_ = copy_in_blocks<float, T>(X_val, interruption);
        centers_low_ = centers.template cast<float>();
    }
    const double bytes = stored_bytes();
    if (bytes > budget_bytes || defer) {  // streamed at each call, or until stored
        if (low_) packed_low_ = std::make_unique<PackedCenters<float>>(centers_low_, kernel_, callback_, X_val.rows());
        else packed_ = std::make_unique<PackedCenters<T>>(centers_, kernel_, callback_, X_val.rows());
    }
    if (bytes > budget_bytes) return;  // streamed at each call
    if (defer) {
        // One first touch of the stored kernel against one recomputation: its distance
        // GEMM, and the exp and the write of each entry, which cost about as much as 50
        // more features (measured, with where the break-even falls:
        // benchmarks/results/auto/history.md, "Storing the hold-out kernel"). A float32
        // kernel (low_) is computed at about twice the rate.
        const MachineRates rates = machine_rates(n_threads);
        const double first_touch = bytes / rates.fresh_bytes;
        const double recompute = 2.0 * double(X_val.rows()) * double(centers.rows()) * double(X_val.cols() + 50) /
                                 (low_ ? rates.flops32 : rates.flops);
        store_after_ = static_cast<Index>(std::floor(first_touch / recompute));
    }
    if (!deferred()) store(n_threads);
}

template <class T>
void Validation<T>::store(int n_threads) const {
    if (low_)  // computed in float32 directly: no float64 copy at the peak
        K_val_low_ = kernel_matrix<float>(X_val_low_, centers_low_, kernel_, n_threads, callback_);
    else
        K_val_ = kernel_matrix<T>(X_val_, centers_, kernel_, n_threads, callback_);
}

template <class T>
void Validation<T>::set_weights(const std::vector<double>& weights) {
    if (weights.empty()) return;
    require(Index(weights.size()) == Y_val_.cols(), "validation_weights has " + std::to_string(weights.size()) +
                                                        " entries but y_val has " + std::to_string(Y_val_.cols()) +
                                                        " columns");
    double sum = 0.0;
    for (double w : weights) {
        require(std::isfinite(w) && w >= 0, "validation_weights must be finite and >= 0, got " + format_number(w));
        sum += w;
    }
    // All zero made every hold-out RMSE 0 and selected t = 1 (or the first lambda).
    require(sum > 0, "validation_weights must not be all zero");
    weights_ = weights;
}

template <class T>
void Validation<T>::set_row_weights(const std::vector<double>& weights) {
    const Vector<double> scales = row_scales<double>(weights, Y_val_.rows(), "validation sample weights");
    row_weights_ = scales.array().square().matrix();
}

template <class T>
void Validation<T>::add_squared_errors(const Matrix<T>& predictions, Index r0, Index q,
                                       std::vector<double>& squared) const {
    const auto targets = Y_val_.middleRows(r0, predictions.rows());
    for (Index col = 0; col < predictions.cols(); ++col) {
        const auto errors = (predictions.col(col) - targets.col(col % q)).template cast<double>();
        const double sum = row_weights_.size() == 0
                               ? errors.squaredNorm()
                               : (errors.array().square() *
                                  row_weights_.segment(r0, predictions.rows()).array()).sum();
        squared[col / q] += weight(col % q) * sum;
    }
}

template <class T>
template <class Consumer>
void Validation<T>::predict_blocks(const MatrixCRef<T>& alphas, int n_threads, Consumer&& consume) const {
    const Index n_val = Y_val_.rows();
    if (deferred() && !stored() && streamed_calls_++ == store_after_) {
        // Stored only if it still fits: the solver and the path have allocated since.
        if (stored_bytes() <= 0.8 * double(available_memory_bytes())) store(n_threads);
    }
    Matrix<T> predictions;
    if (stored()) {
        predictions.resize(n_val, alphas.cols());
        if constexpr (std::is_same_v<T, double>) {
            if (K_val_low_.size() > 0) multiply_widened<T, float>(K_val_low_, alphas, predictions, n_threads);
            else multiply<T>(K_val_, alphas, predictions, n_threads);
        } else {
            multiply<T>(K_val_, alphas, predictions, n_threads);
        }
        consume(predictions, Index(0));
        return;
    }
    const Index rows = std::max<Index>(256, (Index(1) << 22) / std::max<Index>(centers_.rows(), 1));
    // The kernel of the rows block by block into K, each block multiplied by `product`.
    auto stream = [&](auto& K, const auto& packed, const auto& X, auto&& product) {
        using U = typename std::decay_t<decltype(K)>::Scalar;
        for (Index r0 = 0; r0 < n_val; r0 += rows) {
            const Index count = std::min(rows, n_val - r0);
            auto block = K.topRows(count);
            kernel_packed<U>(X.middleRows(r0, count), packed, block, n_threads, false, callback_);
            predictions.resize(count, alphas.cols());
            product(block);
            consume(predictions, r0);
        }
    };
    if constexpr (std::is_same_v<T, double>) {
        if (low_) {
            // Computed in float32, as store() keeps it, and multiplied as the stored kernel
            // is: the predictions do not depend on whether K_val fits (the same bits), and
            // the distance GEMM and the exp run at float32's rate (Covertype's 104582 x
            // 10000 hold-out kernel, streamed beside its 16.7 GB K_nm).
            Matrix<float> low(std::min(rows, n_val), centers_.rows());
            const WidenedProduct<T, float> by_alphas(alphas);  // alphas packed once for all blocks
            stream(low, *packed_low_, X_val_low_,
                   [&](const auto& block) { by_alphas.apply(block, predictions, n_threads); });
            return;
        }
    }
    Matrix<T> K(std::min(rows, n_val), centers_.rows());
    stream(K, *packed_, X_val_, [&](const auto& block) { multiply<T>(block, alphas, predictions, n_threads); });
}

template <class T>
void Validation<T>::rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int n_threads) const {
    const Index n_val = Y_val_.rows(), blocks = alphas.cols() / q;
    if (metric_ == Metric::error) {
        ErrorTally tally = error_tally();
        tally.reset(blocks);
        Eigen::MatrixXd column;
        predict_blocks(alphas, n_threads, [&](const Matrix<T>& predictions, Index r0) {
            column.resize(predictions.rows(), blocks);
            for (Index j = 0; j < q; ++j) {
                for (Index b = 0; b < blocks; ++b) column.col(b) = predictions.col(b * q + j).template cast<double>();
                tally.add(j, column, r0);
            }
        });
        for (Index b = 0; b < blocks; ++b) out.push_back(tally.rate(b));
        return;
    }
    std::vector<double> squared(static_cast<std::size_t>(blocks), 0.0);
    predict_blocks(alphas, n_threads,
                   [&](const Matrix<T>& predictions, Index r0) { add_squared_errors(predictions, r0, q, squared); });
    for (double s : squared) out.push_back(std::sqrt(s / (double(n_val) * double(q))));
}

template <class T>
Matrix<T> Validation<T>::predict(const MatrixCRef<T>& alphas, int n_threads) const {
    Matrix<T> out(Y_val_.rows(), alphas.cols());
    predict_blocks(alphas, n_threads,
                   [&](const Matrix<T>& predictions, Index r0) { out.middleRows(r0, predictions.rows()) = predictions; });
    return out;
}

template <class T>
double Validation<T>::bytes() const {
    // A deferred kernel is stored after a few calls: counted at its stored size.
    if (stored() || deferred()) return stored_bytes();
    return 4.0 * double(Y_val_.rows()) * double(centers_.rows()) * sizeof(T);
}

template <class T>
bool Validation<T>::change_basis(const Matrix<T>& W, int n_threads) {
    if (!stored()) return false;
    Matrix<T> projected(Y_val_.rows(), W.cols());
    if constexpr (std::is_same_v<T, double>) {
        if (K_val_low_.size() > 0) {
            multiply_widened<T, float>(K_val_low_, W, projected, n_threads);
            K_val_low_ = projected.template cast<float>();
            return true;
        }
    }
    multiply<T>(K_val_, W, projected, n_threads);
    K_val_ = std::move(projected);
    return true;
}

template class Validation<float>;
template class Validation<double>;

}  // namespace nytro::detail
