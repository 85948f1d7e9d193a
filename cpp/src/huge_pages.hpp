// Memory advice for fresh buffers: transparent huge pages for the largest kernel
// matrices (the stored K_nm of the direct solver: 16.7 GB on Covertype), and population
// in one call for mid-sized ones (populate_pages). On the Linux VMs measured here the
// first write to a fresh page costs 1.6 us per 4 KiB at 4 GiB and more per page as the
// buffer grows: writing a fresh 16.7 GB K_nm took 35 s against 5.6 s for the same kernel
// into memory already touched, and a 16 GiB first touch took 36.5 s with 4 KiB pages
// against 13.0 s with huge pages.
#pragma once

#include <cstddef>

namespace nytro::detail {

// Kernel matrices from this size on are advised. What a fresh buffer's first touch costs
// depends on where its pages come from. This VM hands free 2 MiB blocks back to its host
// (free page reporting, order 9) about 2 s after they are freed: a huge page is such a
// block and is then backed by the host anew, while 4 KiB pages come first from smaller
// free fragments the host still backs. Measured on 2026-11-27 (2 threads, kernel into a
// fresh array, each call after 3 s idle, 4 KiB / huge pages): 320 MB 104-179 / 260-312
// ms, 1.6 GB 440 / 985 ms, 4 GB 1192 / 2977 ms, 8 GB 2734 / 4221 ms; Ijcnn's float64 fit
// in a fresh process, its 1.6 GB K_nm stage 0.67-0.73 / 1.48-1.50 s (Covertype's
// float16 5.6 GB: 5.3-5.6 / 6.2-6.9 s, its passes about 1 s slower on 4 KiB pages).
// Covertype's 16.7 GB K_nm measured the other way at 535c317 (36.6 s with 4 KiB pages,
// 27.9 s with huge pages). Between them, cold, medians of 4 (4 KiB / huge): 10 GB 3.15 /
// 4.00 s, 14 GB 5.07 / 5.31 s (a tie within the spread), while passes over a matrix this
// large run faster on huge pages (Covertype float32: 12.6 and 10.9 s against 14.1 and
// 17.3 s with 4 KiB pages forced). With memory freed moments before (repeated calls in
// one process) huge pages win instead (320 MB: 195 -> 140 ms), and single calls can stall
// in the "madvise" defragmentation mode's compaction.
constexpr std::size_t kHugePageAdviceBytes = std::size_t(12) << 30;

// Buffers from this size up to kPopulateOnceLimitBytes are populated in one call.
constexpr std::size_t kPopulateBytes = std::size_t(4) << 20;
constexpr std::size_t kPopulateOnceLimitBytes = std::size_t(1) << 30;

// Maps the pages of a fresh buffer [data, data + bytes) in one madvise call
// (MADV_POPULATE_WRITE, Linux 5.14 and later) before its first write, where a fault per
// 4 KiB page costs about twice as much on the VMs measured here (a fresh 32 MiB: 11.6-13
// ms of faults against 5-6 ms). Worth it where one thread writes the buffer first (a
// zero fill, a cast, the triangular inverse): Insurance's float64 fit, 0.72 -> 0.70 s.
// Where parallel code writes it first, populating on one thread measured no faster (the
// kernel matrices, the Gram stream's blocks): see populate_in_parallel. Only for sizes in
// [kPopulateBytes, kPopulateOnceLimitBytes). Advice only: a no-op elsewhere or where the
// kernel refuses it.
void populate_pages(void* data, std::size_t bytes);

// Maps the pages of a fresh buffer of kPopulateBytes or more before parallel code writes
// it, in 16 MiB chunks taken by n_threads threads (huge pages where advise_huge_pages was
// called first). Faulting them in while computing costs more than faulting them in
// first: each fault zeroes its page through the cache the computation is using. Fresh
// kernels, medians of 9, 2 threads: 144 MB 86 -> 60-65 ms, 320 MB 190-194 -> 130-165 ms,
// 1.6 GB 390-410 -> 305-330 ms; Covertype's 16.7 GB float32 K_nm 6.5-8.3 -> 4.7-5.6 s
// (4 interleaved pairs), against 3.8 s for the same kernel written into memory already
// touched. Advice only, as above.
void populate_in_parallel(void* data, std::size_t bytes, int n_threads);

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
