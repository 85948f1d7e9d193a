// The rules that pick t from the validation path (see nytro::Stopping).
#pragma once

#include "nytro/options.hpp"

#include <vector>

namespace nytro::detail {

class StoppingRule {
public:
    StoppingRule(Stopping kind, double tol, Index window, Index patience = 0);

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
    Index selected_ = 0;
    std::vector<double> path_;
};

}  // namespace nytro::detail
