// Transparent huge pages for the few buffers of a gigabyte and more (the stored K_nm of
// the direct solver: 16.7 GB on Covertype). On the Linux VMs measured here the first
// write to a fresh page costs 1.6 us per 4 KiB at 4 GiB and more per page as the
// buffer grows: writing a fresh 16.7 GB K_nm took 35 s against 5.6 s for the same
// kernel into memory already touched, and a 16 GiB first touch took 36.5 s with 4 KiB
// pages against 13.0 s with huge pages. Smaller buffers are left alone: with the kernel's
// "madvise" defragmentation mode a huge-page fault may compact memory first, which
// stalled single calls by 0.3-0.4 s in a trial with a 320 MB kernel.
#pragma once

#include <cstddef>

namespace nytro::detail {

// Buffers from this size on are advised.
constexpr std::size_t kHugePageAdviceBytes = std::size_t(1) << 30;

// Advises the kernel to back the 2 MiB-aligned interior of [data, data + bytes) with huge
// pages, before its first write. Advice only: a no-op below kHugePageAdviceBytes, on
// systems without madvise, or where the kernel declines.
void advise_huge_pages(void* data, std::size_t bytes);

}  // namespace nytro::detail
