#include "huge_pages.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace nytro::detail {
namespace {

#if defined(__linux__)
// madvise over the part of [data, data + bytes) aligned to `alignment` (a power of two)
// at both ends; advice only, so its result is ignored.
void advise_aligned_interior(void* data, std::size_t bytes, std::uintptr_t alignment, int advice) {
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + alignment - 1) & ~(alignment - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(alignment - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}
#endif

}  // namespace

void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (data == nullptr || bytes < kHugePageAdviceBytes) return;
    advise_aligned_interior(data, bytes, std::uintptr_t(1) << 21, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

void populate_in_parallel(void* data, std::size_t bytes, int n_threads) {
#if defined(__linux__)
    constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE, absent from older headers
    if (data == nullptr || bytes < kPopulateBytes) return;
    // Chunks of whole huge pages where advise_huge_pages applies, so that no huge page is
    // split between two calls.
    static const auto small_page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t page = bytes >= kHugePageAdviceBytes ? std::uintptr_t(1) << 21 : small_page;
    constexpr std::uintptr_t chunk = std::uintptr_t(16) << 20;
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(page - 1);
    if (end <= begin) return;
    parallel_for(Index((end - begin + chunk - 1) / chunk), n_threads, [&](Index c, int) {
        const std::uintptr_t first = begin + std::uintptr_t(c) * chunk, last = std::min(end, first + chunk);
        madvise(reinterpret_cast<void*>(first), last - first, kPopulateWrite);
    });
#else
    (void)data;
    (void)bytes;
    (void)n_threads;
#endif
}

void populate_pages(void* data, std::size_t bytes) {
#if defined(__linux__)
    constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE, absent from older headers
    if (data == nullptr || bytes < kPopulateBytes || bytes >= kHugePageAdviceBytes) return;
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    advise_aligned_interior(data, bytes, page, kPopulateWrite);
#else
    (void)data;
    (void)bytes;
#endif
}

}  // namespace nytro::detail
