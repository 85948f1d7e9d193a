// Uniform sampling of Nystrom centres without replacement.
#pragma once

#include "nytro/types.hpp"

#include <cstdint>
#include <vector>

namespace nytro {

// m distinct row indices drawn uniformly from [0, n): a partial Fisher-Yates shuffle
// driven by SplitMix64 seeded with `seed`, in O(m) memory whatever n. Serial, so the draw
// depends on the seed alone (never on the thread count); the first m' <= m indices are
// those of the draw of m'; nytro.reference.sample_centers replays it exactly.
std::vector<Index> sample_centers(Index n, Index m, std::uint64_t seed);

}  // namespace nytro
