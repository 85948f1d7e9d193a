// The rules that pick t from the validation path (see nytro::Stopping).
#pragma once

#include "nytro/options.hpp"

#include <vector>

namespace nytro::detail {

// With Metric::error the path is a step function of t, flat for stretches, and often
// flat from t = 1 while the first iterates still predict one class for every row (the
// majority of an imbalanced set): such a starting plateau is not judged. The rules
// count `window` and `patience` from the first t whose value differs from the first
// value, and "window" compares its fitted decrease with tol times the window's mean
// error (an error rate is no RMSE in units of y); a tie is no improvement (a flat
// window stops "relative" and "window", even at an error of 0). Metric::rmse keeps the
// rules as stated in nytro::Stopping.
class StoppingRule {
public:
    StoppingRule(Stopping kind, double tol, Index window, Index patience = 0, Metric metric = Metric::rmse);

    struct Verdict {
        bool stop;       // end the iterations after this one
        bool candidate;  // this iteration is now the selected one
    };
    // The RMSE after the next iteration (t = 1, 2, ... in order).
    Verdict push(double rmse);
    // The selected iteration t (1-based) among those pushed.
    Index selected() const { return selected_; }
    const std::vector<double>& path() const { return path_; }

    static double default_tol(Stopping kind);

private:
    Stopping kind_;
    double tol_;
    Index window_;
    Index patience_;
    bool by_error_;
    // Metric::error: the last t of the starting plateau (the path's values equal to the
    // first one), while the path has not left it; the count of window and patience
    // starts after it.
    Index plateau_ = 0;
    bool left_plateau_ = false;
    Index selected_ = 0;
    std::vector<double> path_;
};

}  // namespace nytro::detail
