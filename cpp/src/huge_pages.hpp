// Memory advice for fresh buffers: transparent huge pages for the few buffers of a
// gigabyte and more (the stored K_nm of the direct solver: 16.7 GB on Covertype), and
// population in one call for mid-sized ones (populate_pages). On the Linux VMs measured
// here the first write to a fresh page costs 1.6 us per 4 KiB at 4 GiB and more per page
// as the buffer grows: writing a fresh 16.7 GB K_nm took 35 s against 5.6 s for the same
// kernel into memory already touched, and a 16 GiB first touch took 36.5 s with 4 KiB
// pages against 13.0 s with huge pages. Huge pages are not requested below a gigabyte:
// with the kernel's "madvise" defragmentation mode a huge-page fault may compact memory
// first, which stalled single calls by 0.3-0.4 s in a trial with a 320 MB kernel.
#pragma once

#include <cstddef>

namespace nytro::detail {

// Buffers from this size on are advised.
constexpr std::size_t kHugePageAdviceBytes = std::size_t(1) << 30;

// Buffers from this size up to kHugePageAdviceBytes are populated in one call.
constexpr std::size_t kPopulateBytes = std::size_t(4) << 20;

// Maps the pages of a fresh buffer [data, data + bytes) in one madvise call
// (MADV_POPULATE_WRITE, Linux 5.14 and later) before its first write, where a fault per
// 4 KiB page costs about twice as much on the VMs measured here (a fresh 32 MiB: 11.6-13
// ms of faults against 5-6 ms). Worth it where one thread writes the buffer first (a
// zero fill, a cast, the triangular inverse): Insurance's float64 fit, 0.72 -> 0.70 s.
// Where parallel code writes it first, its threads fault side by side and populating on
// one thread measured no faster (the kernel matrices, the Gram stream's blocks). Only
// for sizes in [kPopulateBytes, kHugePageAdviceBytes): the larger ones get huge pages
// instead. Advice only: a no-op elsewhere or where the kernel refuses it.
void populate_pages(void* data, std::size_t bytes);

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
