#include "runtime/huge_pages.hpp"

#include "runtime/parallel.hpp"
#include "runtime/task_interruption.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace nytro::detail {
namespace {

#if defined(__linux__)
constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE, absent from older headers
constexpr std::uintptr_t kHugePage = std::uintptr_t(1) << 21;

std::uintptr_t small_page() {
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return page;
}

// The part of [data, data + bytes) aligned to `alignment` (a power of two) at both ends,
// as [begin, end): empty where end <= begin.
std::pair<std::uintptr_t, std::uintptr_t> aligned_interior(void* data, std::size_t bytes, std::uintptr_t alignment) {
    const auto start = reinterpret_cast<std::uintptr_t>(data);
    return {(start + alignment - 1) & ~(alignment - 1), (start + bytes) & ~(alignment - 1)};
}

// madvise over that interior; advice only, so its result is ignored.
void advise_aligned_interior(void* data, std::size_t bytes, std::uintptr_t alignment, int advice) {
    const auto [begin, end] = aligned_interior(data, bytes, alignment);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}
#endif

}  // namespace

void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (data == nullptr || bytes < kHugePageAdviceBytes) return;
    advise_aligned_interior(data, bytes, kHugePage, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

void populate_in_parallel(void* data, std::size_t bytes, int n_threads, const std::function<void()>& between) {
#if defined(__linux__)
    if (data == nullptr || bytes < kPopulateBytes) return;
    // Chunks of whole huge pages where advise_huge_pages applies, so that no huge page is
    // split between two calls.
    constexpr std::uintptr_t chunk = std::uintptr_t(16) << 20;
    const auto [begin, end] = aligned_interior(data, bytes, bytes >= kHugePageAdviceBytes ? kHugePage : small_page());
    if (end <= begin) return;
    TaskInterruption interruption(between);
    parallel_for(Index((end - begin + chunk - 1) / chunk), n_threads, [&, begin = begin, end = end](Index c, int thread) {
        const std::uintptr_t first = begin + std::uintptr_t(c) * chunk, last = std::min(end, first + chunk);
        madvise(reinterpret_cast<void*>(first), last - first, kPopulateWrite);
        interruption.after_task(thread);
    });
#else
    (void)data;
    (void)bytes;
    (void)n_threads;
    (void)between;
#endif
}

void populate_pages(void* data, std::size_t bytes) {
#if defined(__linux__)
    if (data == nullptr || bytes < kPopulateBytes || bytes >= kPopulateOnceLimitBytes) return;
    advise_aligned_interior(data, bytes, small_page(), kPopulateWrite);
#else
    (void)data;
    (void)bytes;
#endif
}

}  // namespace nytro::detail
