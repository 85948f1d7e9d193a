#include "nytro/centers.hpp"

#include "nytro/errors.hpp"

#include <unordered_map>
#include <string>

namespace nytro {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, full-period, and easy to replay in Python.
struct SplitMix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // Uniform on [0, bound) by rejection, so no value is favoured.
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t limit = (~std::uint64_t(0) / bound) * bound;
        std::uint64_t x;
        do x = next(); while (x >= limit);
        return x % bound;
    }
};

}  // namespace

std::vector<Index> sample_centers(Index n, Index m, std::uint64_t seed) {
    require(n >= 1, "n must be >= 1, got " + std::to_string(n));
    require(m >= 1 && m <= n, "n_centers must be between 1 and n = " + std::to_string(n) +
                                  ", got " + std::to_string(m));
    // Planned first: a draw of 10^9 centres would reserve and fill tens of GB (a bad_alloc
    // at best, the OOM killer at worst). About 96 bytes a centre: its index, and up to two
    // map nodes (32 bytes each with malloc's header) and their buckets. Small draws skip
    // the check (it reads the memory limits from /proc).
    if (double(m) * 96.0 >= double(1 << 26))
        check_allocation(double(m) * 96.0, "the draw of n_centers = " + std::to_string(m) + " centres");
    // The shuffle of [0, n) kept sparse: only the positions a swap has touched are stored
    // (at most 2m), so the draw costs O(m) memory whatever n (a Dask fit draws its centres
    // among 10^9 rows on the client). The swaps, and so the draw, are those of the dense
    // shuffle.
    std::unordered_map<Index, Index> moved;
    moved.reserve(static_cast<std::size_t>(2 * m));
    const auto at = [&](Index i) {
        const auto found = moved.find(i);
        return found == moved.end() ? i : found->second;
    };
    std::vector<Index> drawn(static_cast<std::size_t>(m));
    SplitMix64 rng{seed};
    for (Index i = 0; i < m; ++i) {
        const Index j = i + static_cast<Index>(rng.below(static_cast<std::uint64_t>(n - i)));
        const Index value_i = at(i), value_j = at(j);
        moved[j] = value_i;  // position i is never read again
        drawn[static_cast<std::size_t>(i)] = value_j;
    }
    return drawn;
}

}  // namespace nytro
