// Memory advice for fresh buffers: transparent huge pages for the largest kernel
// matrices (the stored K_nm of the direct solver: 16.7 GB on Covertype), and population
// in one call for mid-sized ones (populate_pages). On the virtual machines measured, the
// first write to a fresh page is expensive and grows per page with the buffer, and huge
// pages cut it for the largest buffers (measured: benchmarks/results/bench_kernels/history.md,
// "Measurements behind the code").
#pragma once

#include <cstddef>
#include <functional>

namespace nytro::detail {

// Kernel matrices from this size on are advised. What a fresh buffer's first touch costs
// depends on where its pages come from. A VM that hands free 2 MiB blocks back to its
// host (free page reporting) makes a huge page a block the host backs anew, while 4 KiB
// pages come first from smaller free fragments the host still backs: below this size
// 4 KiB pages were faster cold, at about this size the two tied, and above it huge pages
// won (also for the passes over the matrix). With memory freed moments before, huge pages
// win at every size, and single calls can stall in the "madvise" defragmentation mode's
// compaction. The measurements: benchmarks/results/bench_kernels/history.md,
// "Measurements behind the code" and "Roofline"; the reason: docs/design.md, "Fresh memory".
constexpr std::size_t kHugePageAdviceBytes = std::size_t(12) << 30;

// Buffers from this size up to kPopulateOnceLimitBytes are populated in one call.
constexpr std::size_t kPopulateBytes = std::size_t(4) << 20;
constexpr std::size_t kPopulateOnceLimitBytes = std::size_t(1) << 30;

// Maps the pages of a fresh buffer [data, data + bytes) in one madvise call
// (MADV_POPULATE_WRITE, Linux 5.14 and later) before its first write, where a fault per
// 4 KiB page costs about twice as much on the VMs measured. Worth it where one thread
// writes the buffer first (a zero fill, a cast, the triangular inverse).
// Where parallel code writes it first, populating on one thread measured no faster (the
// kernel matrices, the Gram stream's blocks): see populate_in_parallel. Only for sizes in
// [kPopulateBytes, kPopulateOnceLimitBytes). Advice only: a no-op elsewhere or where the
// kernel refuses it.
void populate_pages(void* data, std::size_t bytes);

// Maps the pages of a fresh buffer of kPopulateBytes or more before parallel code writes
// it, in 16 MiB chunks taken by n_threads threads (huge pages where advise_huge_pages was
// called first). Faulting them in while computing costs more than faulting them in
// first: each fault zeroes its page through the cache the computation is using. Advice
// only, as above. `between`, if given, is called on the calling thread between its chunks
// (task_interruption.hpp: an interruption point, for the seconds that gigabytes take; it
// may throw, leaving the rest unpopulated).
void populate_in_parallel(void* data, std::size_t bytes, int n_threads,
                          const std::function<void()>& between = {});

// populate_pages over a freshly allocated matrix's storage.
template <class M>
void populate(M& matrix) {
    populate_pages(matrix.data(), std::size_t(matrix.size()) * sizeof(typename M::Scalar));
}

// Advises the kernel to back the 2 MiB-aligned interior of [data, data + bytes) with huge
// pages, before its first write. Advice only: a no-op below kHugePageAdviceBytes, on
// systems without madvise, or where the kernel declines.
void advise_huge_pages(void* data, std::size_t bytes);

}  // namespace nytro::detail
