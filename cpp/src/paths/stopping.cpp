#include "paths/stopping.hpp"

#include "nytro/errors.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace nytro::detail {

double StoppingRule::default_tol(Stopping kind) {
    return kind == Stopping::window ? 1e-4 : 0.05;
}

StoppingRule::StoppingRule(Stopping kind, double tol, Index window, Index patience, Metric metric)
    : kind_(kind), tol_(tol < 0 ? default_tol(kind) : tol), window_(window), patience_(patience),
      by_error_(metric == Metric::error) {
    if (!std::isfinite(tol_)) throw std::invalid_argument("tol must be finite, got " + format_number(tol));
    if (window_ < 2) throw std::invalid_argument("window must be >= 2, got " + std::to_string(window));
}

StoppingRule::Verdict StoppingRule::push(double rmse) {
    path_.push_back(rmse);
    const Index t = static_cast<Index>(path_.size());
    const bool improved = selected_ == 0 || rmse < path_[selected_ - 1];
    // Iterations since the count began: since t = 0, or (Metric::error) since the end of
    // the starting plateau, which a path that has not left it has not reached.
    if (by_error_ && !left_plateau_) {
        if (rmse == path_.front()) plateau_ = t;
        else left_plateau_ = true;
    }
    const Index counted = t - plateau_;
    const bool judged = !by_error_ || left_plateau_;
    switch (kind_) {
        case Stopping::best:
            if (improved) selected_ = t;
            return {judged && patience_ > 0 && t - std::max(selected_, plateau_) >= patience_, improved};
        case Stopping::relative: {
            if (improved) selected_ = t;
            if (t <= window_ || !judged || counted < window_) return {false, improved};
            // Best before the window against best inside it.
            const double before = *std::min_element(path_.begin(), path_.end() - window_);
            const double inside = *std::min_element(path_.end() - window_, path_.end());
            return {before - inside <= tol_ * before, improved};
        }
        case Stopping::window: {
            selected_ = t;
            if (t < window_ || !judged || counted < window_) return {false, true};
            // Least-squares slope of the last `window` RMSEs against their index.
            const double mean_x = 0.5 * double(window_ - 1);
            double mean_y = 0, sxy = 0, sxx = 0;
            for (Index i = 0; i < window_; ++i) mean_y += path_[t - window_ + i];
            mean_y /= double(window_);
            for (Index i = 0; i < window_; ++i) {
                const double dx = double(i) - mean_x;
                sxy += dx * (path_[t - window_ + i] - mean_y);
                sxx += dx * dx;
            }
            const double fitted_decrease = -double(window_) * sxy / sxx;
            if (by_error_) return {fitted_decrease <= tol_ * mean_y, true};
            return {fitted_decrease < tol_, true};
        }
    }
    return {false, false};
}

}  // namespace nytro::detail
