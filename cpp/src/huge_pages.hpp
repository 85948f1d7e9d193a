// Memory advice for fresh buffers: transparent huge pages for kernel matrices (the
// stored K_nm of the direct solver: 16.7 GB on Covertype; K_mm; gaussian_kernel's
// results), and population in one call for other mid-sized ones (populate_pages). On the
// Linux VMs measured here the first write to a fresh page costs 1.6 us per 4 KiB at 4 GiB
// and more per page as the buffer grows: writing a fresh 16.7 GB K_nm took 35 s against
// 5.6 s for the same kernel into memory already touched, and a 16 GiB first touch took
// 36.5 s with 4 KiB pages against 13.0 s with huge pages.
#pragma once

#include <cstddef>

namespace nytro::detail {

// Kernel matrices from this size on are advised, as NumPy advises its own arrays. Until
// 2026-11-27 only from 1 GiB: a trial with a 320 MB kernel had seen single calls stall
// 0.3-0.4 s while the "madvise" defragmentation mode compacted memory for a huge-page
// fault. Measured since (2 threads, d = 90, m = 2000, 12 interleaved rounds), a fresh
// 320 MB kernel: 195 -> 140 ms median (133 ms into memory already touched), with 2 of 12
// calls at 244-252 ms; NumPy's own X @ Z.T into its advised result stalled as often. 144
// MB: 84 -> 68 ms; 64 MB: 48 -> 41 ms; float32 320 MB: 104 -> 79 ms.
constexpr std::size_t kHugePageAdviceBytes = std::size_t(4) << 20;

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
