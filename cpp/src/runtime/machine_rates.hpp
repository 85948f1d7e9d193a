// The rates of the choices made by cost (the solver, when to store the hold-out kernel):
// nytro::machine_rates (nytro/resources.hpp), measured on this machine or pinned. Only
// their ratios matter.
#pragma once

#include "nytro/resources.hpp"

#include <algorithm>
#include <cmath>

namespace nytro::detail {

// The eigendecomposition of a k x k matrix (LAPACK's ?syevd), counted as 9 k^3 flops,
// runs at about a fifth of the rate of the products that form it (measured:
// benchmarks/results/auto/history.md, "Measurements behind the code", and
// benchmarks/results/spectral/history.md, "The spectral solver's stages").
constexpr double kEigenRateFraction = 0.2;

// A fit whose solver took more than kDepartureFactor times the cost model's price of the
// path it ran, or less than its 1 / kDepartureFactor, was priced with rates that are not
// this moment's: probed or cached under a load that has gone, or before one that came.
// The model leaves out terms (the kernel's exponentials, the threads' start), so only a
// large factor says more than that, and only over fits of at least kDepartureSeconds
// (the longer of the two times): below that, the unpriced terms dominate.
constexpr double kDepartureFactor = 3.0;
constexpr double kDepartureSeconds = 1.0;

inline bool departs_from_model(double predicted, double measured) {
    if (!(predicted > 0 && measured > 0 && std::isfinite(predicted) && std::isfinite(measured))) return false;
    if (std::max(predicted, measured) < kDepartureSeconds) return false;
    return measured > kDepartureFactor * predicted || kDepartureFactor * measured < predicted;
}

// A fit priced with `rates` (as machine_rates returned them) took `measured` seconds
// against the model's `predicted`. Where the two depart (departs_from_model) and the
// rates were measured (probed or read from the cache; pinned ones are the user's), they
// are forgotten in this process: the next machine_rates for their thread count probes
// again instead of reading the cache, and writes what it measured as any probe does
// (not under load). Once per process and thread count: a departure after that probe is
// the model's, not the rates'. Returns whether the rates were forgotten.
bool note_fit_seconds(const MachineRates& rates, double predicted, double measured);

}  // namespace nytro::detail
