#include "paths/lanczos.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace nytro::detail {

void LanczosProcess::start(const Eigen::VectorXd& start, Index most_steps, double epsilon, bool stop_when_singular) {
    basis_.resize(start.size(), std::min(most_steps, start.size()) + 1);
    basis_.col(0) = start / start.stableNorm();
    diagonal_.clear();
    off_.clear();
    coupling_ = 0;
    scale_ = 0;
    epsilon_ = epsilon;
    stop_when_singular_ = stop_when_singular;
    complete_ = false;
}

void LanczosProcess::absorb(Eigen::VectorXd w) {
    const Index k = size(), dim = basis_.rows();
    scale_ = std::max(scale_, w.stableNorm());
    diagonal_.push_back(w.dot(basis_.col(k)));
    if (k > 0) off_.push_back(coupling_);
    const double floor = kBreakdown * epsilon_ * std::sqrt(double(k + 1)) * scale_;
    if (stop_when_singular_ && has_ritz_value_below(floor)) {
        complete_ = true;
        coupling_ = 0;
        return;
    }
    const auto V = basis_.leftCols(k + 1);
    for (int pass = 0; pass < 2; ++pass) w -= V * (V.transpose() * w);
    const double b = w.stableNorm();
    // What two passes of Gram-Schmidt leave of an H v in the span of V is rounding of the
    // size of eps sqrt(k) |H|, whatever |H v_k| itself: measured against |H v_k| alone (tiny
    // where v_k is near H's null space, past the Krylov space of a singular H) the noise
    // passed for a direction and the process ran on it. |H| is estimated by the largest
    // |H v_i| met (a lower bound, within a small factor once the top Ritz value settles).
    if (!(b > floor) ||
        k + 1 == dim) {
        complete_ = true;
        coupling_ = 0;
        return;
    }
    if (k + 1 > most_steps()) throw std::logic_error("nytro internal error: Lanczos basis full");
    coupling_ = b;
    basis_.col(k + 1) = w / b;
}

bool LanczosProcess::has_ritz_value_below(double x) const {
    double pivot = 1.0;
    for (std::size_t i = 0; i < diagonal_.size(); ++i) {
        pivot = diagonal_[i] - x - (i > 0 ? off_[i - 1] * (off_[i - 1] / pivot) : 0.0);
        if (!(pivot > 0)) return true;  // a pivot <= 0: an eigenvalue <= x (NaN counts too)
    }
    return false;
}

double LanczosProcess::top_ritz_value() const {
    Eigen::VectorXd diagonal = Eigen::Map<const Eigen::VectorXd>(diagonal_.data(), size());
    Eigen::VectorXd off = Eigen::Map<const Eigen::VectorXd>(off_.data(), size() - 1);
    // Eigen's tridiagonal QR drops an off-diagonal entry b when (b / eps)^2 <= |a_i| +
    // |a_i+1|, a test that is not scale-invariant: at the scale of an A^T A with
    // entries ~1e-38 (factor="cholesky" with jitter 1e40) it dropped them all and
    // returned the largest diagonal entry, 13% below lambda_max, which made the
    // automatic step unstable. T is brought to unit scale first (a power of two: exact).
    const double largest = std::max(diagonal.cwiseAbs().maxCoeff(), off.size() ? off.cwiseAbs().maxCoeff() : 0.0);
    if (!(largest > 0 && std::isfinite(largest))) return diagonal.maxCoeff();  // 0, or not finite
    const double unit = std::ldexp(1.0, -std::ilogb(largest));
    diagonal *= unit;
    off *= unit;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz;
    ritz.computeFromTridiagonal(diagonal, off, Eigen::EigenvaluesOnly);
    return ritz.eigenvalues().maxCoeff() / unit;
}

TopEigenvalue::TopEigenvalue(Index dim, double tolerance)
    : tolerance_(tolerance) {
    Eigen::VectorXd v(dim);
    for (Index i = 0; i < dim; ++i) v[i] = std::fmod(0.6180339887498949 * double(i + 1), 1.0) - 0.5;
    process_.start(v, 120);
}

void TopEigenvalue::absorb(const Eigen::VectorXd& product) {
    process_.absorb(product);
    const double top = process_.top_ritz_value();
    // Converged: the Ritz value moved by at most the tolerance (from the third step on),
    // or the Krylov space is invariant, or the step budget is spent.
    if ((steps() >= 3 && std::abs(top - value_) <= tolerance_ * std::abs(top)) || process_.complete() ||
        steps() == most_steps())
        done_ = true;
    value_ = top;
}

}  // namespace nytro::detail
