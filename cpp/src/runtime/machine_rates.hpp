// Rough rates of a current core pair, for the choices made by cost (the solver, when to
// store the hold-out kernel). Only their ratios matter.
#pragma once

namespace nytro::detail {

// A flop in a GEMM.
constexpr double kFlopsPerSecond = 1e11;
// A byte of a matrix streamed through a matrix-vector product.
constexpr double kBytesPerSecond = 3e10;
// A byte of freshly allocated memory at its first write (page faults), for buffers of a
// few hundred MB (measured: docs/design.md, "Measurements behind the code").
constexpr double kFreshBytesPerSecond = 3e9;

}  // namespace nytro::detail
