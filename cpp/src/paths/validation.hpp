// Validation RMSE of many coefficient vectors at once: predictions K_val a are formed
// explicitly and compared with Y_val. K_val = k(X_val, centres) is stored when it fits
// the memory budget the caller leaves it, and otherwise recomputed in row blocks at each
// call (memory O(block x m) for any n_val).
//
// The tempting shortcut ||K_val a - y||^2 = a^T G_val a - 2 a^T b + y^T y (store only
// the m x m Gram matrix) is not used: it cancels catastrophically when ||a|| is large,
// which is exactly the case of the tiny lambdas and late iterations the selection has to
// reject (seen on cpuSmall: a garbage lambda with test RMSE 6e6 looked best).
#pragma once

#include "nytro/options.hpp"
#include "nytro/types.hpp"
#include "kernel/packed_centers.hpp"

#include <algorithm>
#include <memory>

#include <vector>

namespace nytro::detail {

// The misclassified hold-out rows of several candidate models, for targets coding
// classes as +-1 (Metric::error). A row's class is the sign of its one column (binary: a
// prediction f > 0 is the positive class), or the column of its largest entry
// (one-vs-all; the first such column on a tie, as numpy.argmax): the classifiers'
// predict reads decision values the same way. Predictions come output column by output
// column (0, 1, ..., q - 1), in row blocks, as the paths form them.
// With row weights w_v the count is sum_v w_v [wrong_v] and the rate divides it by
// sum_v w_v, as the weighted RMSE weighs squared errors: a row of weight 0 counts for
// nothing either way. The classes are read from the targets as given, so they must not
// be scaled by the weights (a row scaled to 0 would lose its class); predictions may be
// scaled by any positive factor per row (sqrt(w_v), as the paths that sum their own
// errors scale them), which changes no class.
class ErrorTally {
public:
    // row_weights: empty (every row counts 1) or one per row, >= 0, not all 0.
    explicit ErrorTally(const Eigen::Ref<const Eigen::MatrixXd>& targets,
                        const Eigen::Ref<const Eigen::VectorXd>& row_weights = Eigen::VectorXd());

    // Starts a count for `models` candidate models.
    void reset(Index models);

    // P(i, k): model k's prediction of output column `column` for hold-out row r0 + i.
    // Calls for disjoint row blocks of kBlockRows rows (r0 a multiple of it) may run on
    // different threads at once.
    void add(Index column, const Eigen::Ref<const Eigen::MatrixXd>& P, Index r0 = 0);

    // add(column, Q W) for Q's first W.rows() columns (Q: rows() x at least that many), the
    // product formed and counted block by block of rows, in parallel on up to n_threads:
    // the predictions of many models never held at once, and the same count whatever the
    // thread count.
    void add_product(Index column, const Eigen::Ref<const Eigen::MatrixXd>& Q,
                     const Eigen::Ref<const Eigen::MatrixXd>& W, int n_threads);

    // Rows of one block of the binary count: each block's misclassified rows are summed
    // apart, then the blocks in order, so that parallel blocks give the serial value.
    static constexpr Index kBlockRows = 1024;

    // Model k's misclassified rows, weighted (after every column of every row was added).
    // Summed in row order within a block, then block by block: models that misclassify
    // the same rows get the same value.
    double misclassified(Index model) const;
    double rate(Index model) const { return misclassified(model) / total_; }
    Index rows() const { return rows_; }

private:
    double weight(Index row) const { return weights_.size() == 0 ? 1.0 : weights_[row]; }

    Index rows_ = 0, outputs_ = 0;
    Eigen::VectorXd weights_;         // empty: all 1
    double total_ = 1.0;              // sum of the weights (1 for no rows: a rate of 0)
    std::vector<Index> truth_;        // each row's class: 0 / 1 (binary) or its column
    Index models_ = 0, blocks_ = 0;
    std::vector<double> wrong_;       // binary: weighted misclassified rows per block and model
    std::vector<Eigen::MatrixXd> scratch_;  // add_product's predictions, one block per thread
    Eigen::MatrixXd best_;            // one-vs-all: the largest prediction so far (rows x models)
    Eigen::Matrix<Index, Eigen::Dynamic, Eigen::Dynamic> argmax_;  // and its column
};

template <class T>
class Validation;

// The hold-out side of a path as the paths read it: the hold-out values (pooled RMSE, or
// error rate with Metric::error) of blocks of coefficient sets. Validation below is the
// in-memory one; a caller whose hold-out rows live elsewhere (nytro.dask's chunks, through
// operator_path) supplies its own, and the paths then validate every iterate through it.
template <class T>
class HoldOut {
public:
    virtual ~HoldOut() = default;

    // alphas holds c coefficient blocks of q columns each (block j = columns [jq, jq+q));
    // appends c values to `out`.
    virtual void rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int n_threads) const = 0;
    virtual Metric metric() const = 0;
    // What one call costs, in bytes read (the stepwise path's chunk of iterates per call).
    virtual double bytes() const = 0;
    // The most coefficient sets one call should take (0: the path's own limit). A call
    // that is a round trip to other machines wants more of them at once.
    virtual Index most_per_call() const { return 0; }
    // The in-memory hold-out set, or null. The Krylov paths keep its images of their
    // basis vectors (K_val times each, n_val x k), from which every iterate's errors cost
    // O(n_val k); without it they form each iterate's coefficients and call rmse.
    virtual const Validation<T>* in_memory() const { return nullptr; }

    // Whether image_factors below is supplied (a holder whose rows live elsewhere). The
    // hybrid path then grows its Krylov spaces to the end (max_iter, or invariance) and
    // validates every (k, lambda) from one call, instead of a call per stretch of k.
    virtual bool has_image_factors() const { return false; }
    // For each output column c, the R factor of [W K_val B_c, W y_c], (k_c + 1) x (k_c + 1)
    // upper triangular, times sqrt of the column's weight: B_c the coefficients of its
    // basis (alpha_rows x k_c, k_c >= 0), W the rows' weight scales. From it every
    // squared error ||W (y_c - K_val B_c z)||^2 is a k_c x k_c triangular product
    // (HoldoutImages), the rows being read once for the whole path.
    virtual std::vector<Eigen::MatrixXd> image_factors(const std::vector<Matrix<T>>& bases) const {
        (void)bases;
        return {};
    }
    // The hold-out rows the pooled RMSE divides by (with image_factors).
    virtual double rows() const { return 0.0; }
};

template <class T>
class Validation final : public HoldOut<T> {
public:
    // low_precision: K_val in float32 (a T = double computation only), stored or, when
    // streamed, computed so block by block; it is stored only if it takes at most
    // budget_bytes. defer: store it only once recomputing
    // it has cost about what its first touch would (see store_after_), for callers that may
    // validate only a few times (gd's Lanczos path: once per stretch of the basis).
    // callback: the fit's, called while K_val is formed, stored or streamed (its interruption
    // points: kernel_packed's); copied, may be empty.
    Validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val, const Matrix<T>& centers, const KernelSpec& kernel,
               int n_threads, bool low_precision, double budget_bytes, bool defer = false, Callback callback = {});

    // alphas holds c coefficient blocks of q columns each (block j = columns [jq, jq+q));
    // appends c RMSEs to `out` (c error rates with Metric::error, see set_metric).
    void rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int n_threads) const override;

    // The predictions K_val a themselves (n_val x c).
    Matrix<T> predict(const MatrixCRef<T>& alphas, int n_threads) const;

    const Matrix<T>& targets() const { return Y_val_; }

    // Weights of the output columns' squared errors in every pooled RMSE (empty: all 1;
    // see TikhonovOptions::validation_weights). Throws unless there is one per column,
    // finite and >= 0.
    void set_weights(const std::vector<double>& weights);
    double weight(Index column) const { return weights_.empty() ? 1.0 : weights_[std::size_t(column)]; }

    // What rmse() measures: Metric::rmse (the default) or Metric::error, the fraction of
    // misclassified rows (see ErrorTally; the column weights do not apply to it, the row
    // weights do).
    void set_metric(Metric metric) { metric_ = metric; }
    Metric metric() const override { return metric_; }
    // A tally of the error rate over the hold-out rows with their row weights, from the
    // targets as given (see ErrorTally: not the rows weigh_rows scales).
    ErrorTally error_tally() const { return ErrorTally(Y_val_.template cast<double>(), row_weights_); }
    // Weights of the hold-out rows' squared errors (empty: all 1; see
    // TikhonovOptions::validation_sample_weights), rescaled to sum to n_val so that the
    // RMSE is sqrt(sum_v w_v r_v^2 / (sum_v w_v q)). Throws unless there is one per row,
    // finite and >= 0, not all 0.
    void set_row_weights(const std::vector<double>& weights);

    // Rows of a hold-out matrix (targets or predictions, n_val rows) multiplied by the
    // square roots of the row weights, for the paths that sum their own squared errors
    // (hybrid, gd's Lanczos iterates): their plain sums are then the weighted ones.
    template <class Rows>
    void weigh_rows(Rows& rows) const {
        if (row_weights_.size() > 0) rows.array().colwise() *= row_weights_.array().sqrt();
    }

    bool stored() const { return K_val_.size() > 0 || K_val_low_.size() > 0; }

    // Bytes one call reads: the stored kernel (or the one a deferred store will keep),
    // or, streamed, the kernel it recomputes counted at four times its size (a kernel
    // entry costs more than reading one).
    double bytes() const override;

    const Validation<T>* in_memory() const override { return this; }

    // Change of coordinates a = W b: later calls take b (K_val becomes K_val W, which has
    // as many columns as W). Only for a stored K_val; returns false (nothing changed) for
    // the streamed form.
    bool change_basis(const Matrix<T>& W, int n_threads);

private:
    // consume(predictions, first_row) for the whole hold-out set, or row block by block
    // when K_val is recomputed.
    template <class Consumer>
    void predict_blocks(const MatrixCRef<T>& alphas, int n_threads, Consumer&& consume) const;
    void add_squared_errors(const Matrix<T>& predictions, Index r0, Index q, std::vector<double>& squared) const;

    // Computes and stores K_val (in float32 when low_).
    void store(int n_threads) const;
    // What K_val takes stored: n_val x m entries, in float32 when low_.
    double stored_bytes() const { return double(Y_val_.rows()) * double(centers_.rows()) * (low_ ? 4.0 : sizeof(T)); }
    bool deferred() const { return store_after_ > 0; }

    // K_val is a cache, filled by a const call once deferred storage pays (store_after_).
    mutable Matrix<T> K_val_;          // n_val x m when stored in T, else empty
    mutable Matrix<float> K_val_low_;  // n_val x m when stored in float32 for T = double, else empty
    bool low_ = false;
    // Deferred storage (store_after_ > 0): K_val is recomputed for the first store_after_
    // calls and stored at the next, when the recomputations have cost about one first
    // touch of the stored kernel (a rent-or-buy rule: at most about twice the better of
    // the two in hindsight).
    Index store_after_ = 0;
    mutable Index streamed_calls_ = 0;
    Matrix<T> X_val_, Y_val_;  // kept for the streamed form and the targets
    std::vector<double> weights_;
    Metric metric_ = Metric::rmse;
    Vector<double> row_weights_;  // empty, or one per hold-out row summing to n_val
    Matrix<T> centers_;       // the streamed form recomputes k(X_val, centres)
    Matrix<float> X_val_low_, centers_low_;  // low_: both in float32, for the float32 kernel
    KernelSpec kernel_;
    Callback callback_;
    // The centres packed once for the streamed form (in float32 when low_); null while
    // K_val is stored from the start.
    std::unique_ptr<PackedCenters<T>> packed_;
    std::unique_ptr<PackedCenters<float>> packed_low_;
};

}  // namespace nytro::detail
