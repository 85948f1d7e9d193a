// The hybrid path's hold-out images (hybrid_path.cpp), in a header of their own so that
// the core's tests can check their factorisation directly (cpp/tests/test_lanczos.cpp).
#pragma once

#include "nytro/types.hpp"
#include "passes/dense.hpp"
#include "paths/validation.hpp"

#include <Eigen/Core>

#include <cmath>
#include <vector>

namespace nytro::detail {

// The hold-out images P = K_val R V of a column's basis, kept as P = Q S (S upper
// triangular, Q's columns orthonormal or zero) with g = Q^T y, so that
// ||y - P_k z||^2 = ||y - Q_k g_k||^2 + ||g_k - S_k z||^2: a sum of two nonnegative terms
// (no cancellation), the second O(k^2) per z instead of O(n_val k). The identity needs
// Q^T Q = I on the columns in use, and the images span at most n_val dimensions: past
// n_val basis vectors (or earlier, where K_val R V is rank deficient) a new image lies in
// the span of the previous ones, and what Gram-Schmidt leaves of it is rounding, which
// normalised would be a column far from orthogonal to the others. Such a column is kept
// as a zero column of Q with S(k, k) = 0 and g[k] = 0: row k of S is then zero too (it
// holds Q_k^T of later images), Q^T Q is the identity on the rows of S that are not zero,
// and the identity holds exactly. Q, S and g are allocated once for the basis' capacity,
// as the basis itself is: resizing them at every stretch copied Q (n_val x k, 400 MB at
// Covertype's k = 500) and briefly held it twice.
struct HoldoutImages {
    Eigen::MatrixXd Q, S;  // n_val x capacity, capacity x capacity: the first `size` columns in use
    Eigen::VectorXd g;
    Index size = 0;
    std::vector<double> residual;  // residual[k] = ||y - Q_k g_k||^2

    void reserve(Index rows, Index capacity) {
        Q.resize(rows, capacity);
        S.setZero(capacity, capacity);
        g.resize(capacity);
        residual.reserve(std::size_t(capacity + 1));
    }

    void append(const Matrix<double>& P, const Eigen::VectorXd& y, int n_threads) {
        // Gram-Schmidt twice, and Kahan and Parlett's test of what it leaves: a pass that
        // keeps more than 1/sqrt(2) of its input's norm has removed no more than rounding
        // can corrupt, while two passes that each keep less show the image in the span of
        // the previous ones to rounding (what remains is noise, not a direction). The
        // stretch is orthogonalised as a block against the columns it finds (two passes,
        // each two matrix products: Q is read four times per stretch, not four times per
        // column), then column by column within the block, each stage with its own test.
        // The second stage subtracts the block's earlier columns, which are orthogonal to
        // the first stage's only to rounding: it moves a column along those by up to eps
        // times what it removes. Where its first pass keeps at least 1/k of the column,
        // that is at most k eps of what remains, the rounding that the k-term sums of
        // either stage carry anyway; otherwise (the column almost in the span of the
        // block's earlier columns) the column is orthogonalised again against every
        // column in use, as one column at a time.
        const double keep = std::sqrt(0.5);
        const Index have = size, b = P.cols();
        Matrix<double> W = P;  // row-major, as the core's parallel products take their operands
        Eigen::ArrayXd norm = W.colwise().norm().transpose().array();
        std::vector<char> kept(std::size_t(b), have == 0);
        if (have > 0) {
            // Q_have^T as a row-major have x n_val matrix: the same memory as Q's first columns.
            const Eigen::Map<const Matrix<double>, 0, Eigen::OuterStride<>> Qt(Q.data(), have, Q.rows(),
                                                                              Eigen::OuterStride<>(Q.rows()));
            Matrix<double> H(have, b), QH(W.rows(), b);
            for (int pass = 0; pass < 2; ++pass) {
                multiply<double>(Qt, W, H, n_threads);
                multiply_left_transposed<double>(Qt, false, H, QH, n_threads);
                W -= QH;
                S.block(0, have, have, b) += H;  // the stretch's components on the columns it found
                const Eigen::ArrayXd after = W.colwise().norm().transpose().array();
                for (Index i = 0; i < b; ++i)
                    if (after[i] >= keep * norm[i]) kept[std::size_t(i)] = 1;
                norm = after;
            }
        }
        // Two passes of w against the columns [first, first + count) of Q, their components
        // added to S's column k; current: w's norm, updated. Returns whether a pass kept at
        // least 1/sqrt(2) of its input, and what the first pass kept of it.
        struct Passes {
            bool kept;
            double first;
        };
        auto twice = [&](Eigen::VectorXd& w, Index k, Index first, Index count, double& current) {
            const auto basis = Q.middleCols(first, count);
            Passes out{false, 1.0};
            for (int pass = 0; pass < 2; ++pass) {
                const Eigen::VectorXd h = basis.transpose() * w;
                w.noalias() -= basis * h;
                S.col(k).segment(first, count) += h;
                const double before = current;
                current = w.norm();
                if (current >= keep * before) out.kept = true;
                if (pass == 0 && before > 0) out.first = current / before;
            }
            return out;
        };
        for (Index i = 0; i < b; ++i) {
            const Index k = have + i;
            Eigen::VectorXd w = W.col(i);
            double current = norm[i];
            bool dependent = !kept[std::size_t(i)];
            if (i > 0) {  // within the block
                const Passes within = twice(w, k, have, i, current);
                dependent = dependent || !within.kept;
                if (!dependent && have > 0 && within.first * double(k) < 1.0) {
                    w = P.col(i);  // as one column at a time, against every column in use
                    S.col(k).head(k).setZero();
                    current = w.norm();
                    dependent = !twice(w, k, 0, k, current).kept;
                }
            }
            if (!(current > 0)) dependent = true;
            if (dependent) {
                S(k, k) = 0;
                Q.col(k).setZero();
                g[k] = 0;
            } else {
                S(k, k) = current;
                Q.col(k) = w / current;
                g[k] = Q.col(k).dot(y);
            }
        }
        size = have + b;
        // ||y - Q g||^2 at the new size computed directly, then back to the first new size
        // by adding the squares of g (nonnegative terms).
        residual.resize(std::size_t(size + 1));
        residual[std::size_t(size)] = (y - Q.leftCols(size) * g.head(size)).squaredNorm();
        for (Index k = size - 1; k >= have; --k) residual[std::size_t(k)] = residual[std::size_t(k + 1)] + g[k] * g[k];
    }

    // The images known only by the R factor of [P y] ((size + 1) x (size + 1), upper
    // triangular: HoldOut::image_factors), as a holder whose rows live elsewhere gives
    // them: S, g and the residuals, without Q (so add_errors only, not predict).
    void assign_factor(const Eigen::MatrixXd& R) {
        size = R.rows() - 1;
        S = R.topLeftCorner(size, size).triangularView<Eigen::Upper>();
        g = R.col(size).head(size);
        residual.assign(std::size_t(size + 1), 0.0);
        residual[std::size_t(size)] = R(size, size) * R(size, size);
        for (Index k = size - 1; k >= 0; --k) residual[std::size_t(k)] = residual[std::size_t(k + 1)] + g[k] * g[k];
    }

    // ||y - P_k z_l||^2 times `weight` (the column's, Validation::weight) for the columns
    // z_l of Z (k x L), added to `squared`; work has at least k rows and L columns.
    void add_errors(const Eigen::Ref<const Eigen::MatrixXd>& Z, double weight, Eigen::ArrayXd& squared,
                    Eigen::MatrixXd& work) const {
        const Index k = Z.rows();
        auto top = work.topRows(k);
        top.noalias() = S.topLeftCorner(k, k).triangularView<Eigen::Upper>() * Z;
        top.colwise() -= g.head(k);
        squared += weight * (top.colwise().squaredNorm().transpose().array() + residual[std::size_t(k)]);
    }

    // The predictions P_k z_l = Q_k (S_k z_l) counted by `tally` as output column
    // `column`'s, which the error rate (Metric::error) needs: O(n_val k L), against the
    // RMSE's O(k^2 L), so formed in parallel row blocks.
    void tally_predictions(const Eigen::Ref<const Eigen::MatrixXd>& Z, Eigen::MatrixXd& work, ErrorTally& tally,
                           Index column, int n_threads) const {
        const Index k = Z.rows();
        auto top = work.topRows(k);
        top.noalias() = S.topLeftCorner(k, k).triangularView<Eigen::Upper>() * Z;
        tally.add_product(column, Q, top, n_threads);
    }
};

}  // namespace nytro::detail
