// The rates of the choices made by cost (the solver, when to store the hold-out kernel):
// nytro::machine_rates (nytro/resources.hpp), measured on this machine or pinned. Only
// their ratios matter.
#pragma once

#include "nytro/resources.hpp"

namespace nytro::detail {

// The eigendecomposition of a k x k matrix (LAPACK's ?syevd), counted as 9 k^3 flops,
// runs at about a fifth of the rate of the products that form it (measured:
// benchmarks/results/auto/history.md, "Measurements behind the code", and
// benchmarks/results/spectral/history.md, "The spectral solver's stages").
constexpr double kEigenRateFraction = 0.2;

}  // namespace nytro::detail
