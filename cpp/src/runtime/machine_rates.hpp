// The rates of the choices made by cost (the solver, when to store the hold-out kernel):
// nytro::machine_rates (nytro/resources.hpp), measured on this machine or pinned. Only
// their ratios matter.
#pragma once

#include "nytro/resources.hpp"

namespace nytro::detail {

// The eigendecomposition of a k x k matrix (LAPACK's or Eigen's divide and conquer)
// runs at about a tenth of the rate of the products that form it.
constexpr double kEigenRateFraction = 0.1;

}  // namespace nytro::detail
