// sample_centers: m distinct indices in [0, n), a function of the seed alone.
#include "check.hpp"

#include <nytro/nytro.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

using nytro::Index;

namespace {

bool distinct_in_range(std::vector<Index> rows, Index n) {
    for (Index r : rows)
        if (r < 0 || r >= n) return false;
    std::sort(rows.begin(), rows.end());
    return std::adjacent_find(rows.begin(), rows.end()) == rows.end();
}

// The documented algorithm, replayed independently (nytro.reference.sample_centers does
// the same in Python, so a change here breaks the Python reference too): SplitMix64,
// unbiased bounded draws by rejection, a partial Fisher-Yates shuffle.
std::vector<Index> replay(Index n, Index m, std::uint64_t seed) {
    std::uint64_t state = seed;
    auto next = [&] {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    };
    std::vector<Index> order(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) order[std::size_t(i)] = i;
    for (Index i = 0; i < m; ++i) {
        const std::uint64_t bound = std::uint64_t(n - i), limit = (~std::uint64_t(0) / bound) * bound;
        std::uint64_t x;
        do x = next(); while (x >= limit);
        std::swap(order[std::size_t(i)], order[std::size_t(i + Index(x % bound))]);
    }
    order.resize(std::size_t(m));
    return order;
}

}  // namespace

NYTRO_TEST(centers_distinct_and_in_range) {
    const Index cases[][2] = {{1, 1}, {2, 1}, {2, 2}, {10, 10}, {1000, 1}, {1000, 37}, {1000, 999}, {5000, 5000}};
    for (const auto& c : cases) {
        for (std::uint64_t seed : {0ULL, 1ULL, 42ULL, ~0ULL}) {
            const auto rows = nytro::sample_centers(c[0], c[1], seed);
            CHECK_EQ(Index(rows.size()), c[1]);
            CHECK_MSG(distinct_in_range(rows, c[0]), "n=" + check::str(c[0]) + " m=" + check::str(c[1]));
        }
    }
}

NYTRO_TEST(centers_deterministic_per_seed) {
    for (std::uint64_t seed : {0ULL, 7ULL, 123456789ULL}) {
        CHECK(nytro::sample_centers(1000, 50, seed) == nytro::sample_centers(1000, 50, seed));
    }
    CHECK(nytro::sample_centers(1000, 50, 1) != nytro::sample_centers(1000, 50, 2));
    // A partial shuffle: fewer centres are a prefix of more, for the same seed.
    const auto small = nytro::sample_centers(1000, 20, 5), large = nytro::sample_centers(1000, 200, 5);
    CHECK(std::equal(small.begin(), small.end(), large.begin()));
}

NYTRO_TEST(centers_follow_documented_algorithm) {
    for (std::uint64_t seed : {0ULL, 3ULL, 0xDEADBEEFULL})
        for (Index m : {1, 17, 100}) CHECK(nytro::sample_centers(100, m, seed) == replay(100, m, seed));
}

NYTRO_TEST(centers_uniform) {
    // One centre out of 10, 20000 seeds: every index about 2000 times (5 sigma ~ 212).
    std::vector<int> counts(10, 0);
    for (std::uint64_t seed = 0; seed < 20000; ++seed) ++counts[std::size_t(nytro::sample_centers(10, 1, seed)[0])];
    for (int c : counts) CHECK_MSG(std::abs(c - 2000) < 212, "count " + check::str(c));
}

NYTRO_TEST(centers_reject_bad_arguments) {
    CHECK_THROWS_WITH(nytro::sample_centers(0, 1, 0), std::invalid_argument, "n");
    CHECK_THROWS_WITH(nytro::sample_centers(-5, 1, 0), std::invalid_argument, "n");
    CHECK_THROWS_WITH(nytro::sample_centers(10, 0, 0), std::invalid_argument, "n_centers");
    CHECK_THROWS_WITH(nytro::sample_centers(10, -1, 0), std::invalid_argument, "n_centers");
    CHECK_THROWS_WITH(nytro::sample_centers(10, 11, 0), std::invalid_argument, "n_centers");
    // 10^12 centres need about 96 TB: refused before reserving (std::bad_alloc before).
    if (nytro::physical_memory_bytes() > 0)
        CHECK_THROWS_WITH(nytro::sample_centers(Index(1e12), Index(1e12), 0), nytro::out_of_memory, "n_centers");
}
