// nytro: NYstrom iTerative RegularizatiOn (Angles, Camoriano, Rudi, Rosasco) and the
// paper's baselines. Include this one header to use the whole C++ core.
#pragma once

#include "nytro/centers.hpp"
#include "nytro/cholesky.hpp"
#include "nytro/eigen_solver.hpp"
#include "nytro/errors.hpp"
#include "nytro/isa.hpp"
#include "nytro/kernel.hpp"
#include "nytro/lapack.hpp"
#include "nytro/normal_equations.hpp"
#include "nytro/nystrom.hpp"
#include "nytro/pivoted_qr.hpp"
#include "nytro/options.hpp"
#include "nytro/resources.hpp"
#include "nytro/solvers.hpp"
#include "nytro/types.hpp"
#include "nytro/user_kernel.hpp"
