// A register-blocked tile of dot products, the inner loop of the kernel's GEMM and of the
// factor's rank-k update. Eigen's own GEMM kernel keeps 24 x 4 doubles in registers on
// AVX-512 (12 of the 32 vector registers) and ran the factor's rank-k updates well below
// OpenBLAS's dpotrf doing the same flops (measured: benchmarks/results/bench_kernels/history.md,
// "Register tiles"). Here the tile is kRows x (kPackets packets) accumulators, sized to the register file,
// and both operands come pre-packed so that every load is contiguous.
//
// Operands ("panels") are stored depth-major and zero-padded to their full width: the
// vector side b[p * kCols + c], the broadcast side a[p * a_stride + r] (a_stride = kCols
// when both sides are cut from panels of the same kind, as in the rank-k update, where
// kRows divides kCols). Every entry is the same sequence of fused multiply-adds over
// p = 0..depth-1 whatever its position in the tile or the tile's place in the matrix, so
// the bits do not depend on the blocking or on the thread count.
#pragma once

#include "nytro/types.hpp"

#include <Eigen/Core>

#include <vector>

namespace nytro::detail {

// Keeps a loaded packet in a register from here on. Left alone, GCC tuning for Zen 3
// (-march=znver3, a native build there) folds each use of a packet into its fused
// multiply-add as a memory operand: kRows loads of every packet instead of one, and the
// AVX2 tile then waits on loads rather than on its multiply-adds (measured:
// benchmarks/results/bench_kernels/history.md, "Register tiles"). The empty asm says the
// register may have changed, so the compiler cannot reload the packet from memory; the arithmetic is unchanged. AVX2 only: the
// portable AVX-512 variant keeps its packets in registers as it is, and "x" names only
// the first 16 of its 32 registers.
template <class Packet>
EIGEN_STRONG_INLINE void in_register(Packet& packet) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(EIGEN_VECTORIZE_AVX) && \
    !defined(EIGEN_VECTORIZE_AVX512)
    asm("" : "+x"(packet));
#else
    (void)packet;
#endif
}

template <class T>
struct MicroTile {
    using Packet = typename Eigen::internal::packet_traits<T>::type;
    static constexpr int kWidth = Eigen::internal::unpacket_traits<Packet>::size;
#if defined(EIGEN_VECTORIZE_AVX512)
    // 24 accumulators + 3 loaded packets + 1 broadcast of the 32 registers.
    static constexpr int kRows = 8, kPackets = 3;
#elif defined(EIGEN_VECTORIZE_AVX)
    // 12 + 3 + 1 of the 16 registers.
    static constexpr int kRows = 4, kPackets = 3;
#else
    static constexpr int kRows = 2, kPackets = 2;
#endif
    static constexpr int kCols = kPackets * kWidth;

    Packet acc[kRows][kPackets];

    static_assert(kCols % kRows == 0, "a row group must lie inside one column panel");

    // acc = sum over p < depth of a[p, r] b[p, c].
    EIGEN_STRONG_INLINE void dots(Index depth, const T* a, Index a_stride, const T* b) {
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < kPackets; ++v) acc[r][v] = Eigen::internal::pset1<Packet>(T(0));
        accumulate(depth, a, a_stride, b);
    }

    // acc += sum over p < depth of a[p, r] b[p, c], one fused multiply-add per p in order:
    // a sum split over several calls (acc saved and reloaded between them) makes the
    // same roundings as one call over the whole depth.
    EIGEN_STRONG_INLINE void accumulate(Index depth, const T* a, Index a_stride, const T* b) {
        namespace ei = Eigen::internal;
        for (Index p = 0; p < depth; ++p, a += a_stride, b += kCols) {
            Packet bv[kPackets];
#pragma GCC unroll 4
            for (int v = 0; v < kPackets; ++v) {
                bv[v] = ei::pload<Packet>(b + v * kWidth);
                in_register(bv[v]);
            }
#pragma GCC unroll 8
            for (int r = 0; r < kRows; ++r) {
                const Packet ar = ei::pset1<Packet>(a[r]);
#pragma GCC unroll 4
                for (int v = 0; v < kPackets; ++v) acc[r][v] = ei::pmadd(ar, bv[v], acc[r][v]);
            }
        }
    }

    // The tile from `in`, as store() left it.
    EIGEN_STRONG_INLINE void load(const T* in, Index row_stride = kCols) {
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < kPackets; ++v) acc[r][v] = Eigen::internal::pload<Packet>(in + r * row_stride + v * kWidth);
    }

    // The tile into `out`, row-major with row_stride between rows (out and row_stride
    // aligned to a packet).
    EIGEN_STRONG_INLINE void store(T* out, Index row_stride = kCols) const {
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
            for (int v = 0; v < kPackets; ++v) Eigen::internal::pstore(out + r * row_stride + v * kWidth, acc[r][v]);
    }
};

template <class T>
using AlignedVector = std::vector<T, Eigen::aligned_allocator<T>>;

// Packs `count` (<= width) vectors of length `depth` into a depth-major panel of the
// given width: panel[p * width + i] = source(i, p) = source[i * vector_stride +
// p * depth_stride], zero for i >= count.
template <class T>
void pack_panel(const T* source, Index vector_stride, Index depth_stride, Index count, Index depth, int width,
                T* panel) {
    for (Index p = 0; p < depth; ++p) {
        T* row = panel + p * width;
        const T* from = source + p * depth_stride;
        for (Index i = 0; i < count; ++i) row[i] = from[i * vector_stride];
        for (Index i = count; i < width; ++i) row[i] = T(0);
    }
}

}  // namespace nytro::detail
