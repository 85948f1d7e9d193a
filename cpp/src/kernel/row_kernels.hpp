// Matrix-vector kernels over a few rows (<= 16) of a row-major block, for the streamed
// passes (FusedPass, SymmetricPass). The block is stored in precision S and the products
// run in T: with S = float and T = double (float32 storage, float64 sums) each entry is
// widened in a register as it is loaded. Widening the block into a double buffer first
// and running Eigen's products on that buffer held the float32-storage pass to 45% of
// the read bandwidth: the copy doubled the bytes each product moved through the cache.
//
// Rows go in groups of 8: 8 row sums or 8 broadcast weights stay in registers while
// one packet of each row is loaded. A short group is padded with a real row at weight 0,
// whose sum is dropped. The *_next_add*_previous kernels run one block's dots and the
// previous block's weighted sums in one sweep, for the fused pass's pipelining; they
// make the same additions in the same order as the separate kernels.
#pragma once

#include "nytro/types.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace nytro::detail::rows {

namespace ei = Eigen::internal;
template <class T>
using Packet = typename ei::packet_traits<T>::type;
template <class T>
constexpr Index width = ei::packet_traits<T>::size;
constexpr Index group = 8;

// One packet of T from width<T> consecutive entries stored as S: float widened to double,
// or half (float16 storage) widened to float, and on to double for T = double.
template <class T, class S>
EIGEN_STRONG_INLINE Packet<T> load(const S* p) {
    if constexpr (std::is_same_v<S, T>) {
        return ei::ploadu<Packet<T>>(p);
    } else if constexpr (std::is_same_v<S, float>) {
        static_assert(std::is_same_v<T, double>, "only float -> double widening");
#if defined(EIGEN_VECTORIZE_AVX512)
        return _mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif defined(EIGEN_VECTORIZE_AVX)
        return _mm256_cvtps_pd(_mm_loadu_ps(p));
#elif defined(EIGEN_VECTORIZE_SSE2)
        return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#else
        T widened[width<T>];
        for (Index i = 0; i < width<T>; ++i) widened[i] = T(p[i]);
        return ei::ploadu<Packet<T>>(widened);
#endif
    } else {
        static_assert(std::is_same_v<S, Eigen::half>, "stored entries are T, float or half");
#if defined(EIGEN_VECTORIZE_AVX512)
        if constexpr (std::is_same_v<T, double>)
            return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
        else
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(EIGEN_VECTORIZE_AVX) && defined(__F16C__)
        if constexpr (std::is_same_v<T, double>)
            return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
        else
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
        // Without F16C: Eigen's exact software conversion, one entry at a time.
        alignas(64) T widened[width<T>];
        for (Index i = 0; i < width<T>; ++i) widened[i] = T(float(p[i]));
        return ei::ploadu<Packet<T>>(widened);
#endif
    }
}

// acc + a b in the scalar column tails, where every kernel must make the same roundings
// as the others (the merged sweeps are tested bit for bit against the separate ones).
// Written as a plain a * b + acc, the compiler may contract it into an FMA in one kernel
// and not in another: a build for Haswell did so. Without an FMA instruction there is
// nothing to contract into.
template <class T>
EIGEN_STRONG_INLINE T fused(T a, T b, T acc) {
#if defined(__FMA__)
    return std::fma(a, b, acc);
#else
    return a * b + acc;
#endif
}

// The rows of group g0 (row pointers padded with the group's first row).
template <class S>
EIGEN_STRONG_INLINE void group_rows(const S* block, Index stride, Index g0, Index count, const S* (&row)[group]) {
    for (Index i = 0; i < group; ++i) row[i] = block + (g0 + (i < count ? i : 0)) * stride;
}

// The weights of group g0, padded with 0 for the padding rows.
template <class T>
EIGEN_STRONG_INLINE void group_weights(const T* w, Index g0, Index count, T (&weight)[group]) {
    for (Index i = 0; i < group; ++i) weight[i] = i < count ? w[g0 + i] : T(0);
}

// How far ahead of the sweeps the rows they stream are prefetched. One thread's sweep
// waits on memory: it has only as many lines on their way as its out-of-order window
// holds loads for, and AVX2's packets, half AVX-512's, put twice the instructions between
// two lines, so without prefetches its fused pass read K well below the bandwidth that
// AVX-512's reached (measured: benchmarks/results/bench_kernels/history.md, "Prefetching
// the streamed rows"). A prefetch a few
// lines ahead of each of the group's rows keeps more lines coming whatever the width.
constexpr Index kPrefetchBytes = 512;

// body(c) for c = c0, c0 + width, ... while c + width <= c1, in that order, a cache line
// of S at a time with a prefetch of each of the group's streamed rows; returns the first
// column left for the scalar tail. The packets and their order are those of a plain loop,
// so the bits are too.
template <class T, class S, class Body>
EIGEN_STRONG_INLINE Index sweep_packets(const S* (&streamed)[group], Index c0, Index c1, Body&& body) {
    constexpr Index line = Index(64 / sizeof(S));  // a whole number of packets of T
    static_assert(line % width<T> == 0, "a cache line holds whole packets");
    Index c = c0;
    for (; c + line <= c1; c += line) {
#if defined(__GNUC__)
        if constexpr (kPrefetchBytes > 0)
            for (Index i = 0; i < group; ++i)
                __builtin_prefetch(reinterpret_cast<const char*>(streamed[i] + c) + kPrefetchBytes, 0, 3);
#endif
        for (Index u = 0; u < line; u += width<T>) body(c + u);
    }
    for (; c + width<T> <= c1; c += width<T>) body(c);
    return c;
}

// dots[i] += sum_{c in [c0, c1)} block(i, c) x[c] for i < rows.
template <class T, class S>
void dots(const S* block, Index stride, Index rows, const T* x, Index c0, Index c1, T* out) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row[group];
        group_rows(block, stride, g0, count, row);
        Packet<T> sum[group];
        for (Index i = 0; i < group; ++i) sum[i] = ei::pset1<Packet<T>>(T(0));
        Index c = sweep_packets<T>(row, c0, c1, [&](Index c) {
            const Packet<T> xc = ei::ploadu<Packet<T>>(x + c);
            for (Index i = 0; i < group; ++i) sum[i] = ei::pmadd(load<T>(row[i] + c), xc, sum[i]);
        });
        T tail[group] = {};
        for (; c < c1; ++c)
            for (Index i = 0; i < group; ++i) tail[i] = fused(T(row[i][c]), x[c], tail[i]);
        for (Index i = 0; i < count; ++i) out[g0 + i] += ei::predux(sum[i]) + tail[i];
    }
}

// dst[c] += sum_{i < rows} block(i, c) w[i] for c in [c0, c1).
template <class T, class S>
void add_weighted(const S* block, Index stride, Index rows, const T* w, T* dst, Index c0, Index c1) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row[group];
        group_rows(block, stride, g0, count, row);
        T weight[group];
        Packet<T> scale[group];
        group_weights(w, g0, count, weight);
        for (Index i = 0; i < group; ++i) scale[i] = ei::pset1<Packet<T>>(weight[i]);
        Index c = sweep_packets<T>(row, c0, c1, [&](Index c) {
            Packet<T> t = ei::ploadu<Packet<T>>(dst + c);
            for (Index i = 0; i < group; ++i) t = ei::pmadd(load<T>(row[i] + c), scale[i], t);
            ei::pstoreu(dst + c, t);
        });
        for (; c < c1; ++c) {
            T t = dst[c];
            for (Index i = 0; i < group; ++i) t = fused(T(row[i][c]), weight[i], t);
            dst[c] = t;
        }
    }
}

// dots for two vectors at once, reading each entry once: out0[i] += block(i, :) x0,
// out1[i] += block(i, :) x1 over columns [c0, c1). 16 sums stay in registers (AVX-512
// has 32; narrower units spill some, which costs speed, not accuracy).
template <class T, class S>
void dots2(const S* block, Index stride, Index rows, const T* x0, const T* x1, Index c0, Index c1, T* out0,
           T* out1) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row[group];
        group_rows(block, stride, g0, count, row);
        Packet<T> sum0[group], sum1[group];
        for (Index i = 0; i < group; ++i) sum0[i] = sum1[i] = ei::pset1<Packet<T>>(T(0));
        Index c = sweep_packets<T>(row, c0, c1, [&](Index c) {
            const Packet<T> a = ei::ploadu<Packet<T>>(x0 + c), b = ei::ploadu<Packet<T>>(x1 + c);
            for (Index i = 0; i < group; ++i) {
                const Packet<T> h = load<T>(row[i] + c);
                sum0[i] = ei::pmadd(h, a, sum0[i]);
                sum1[i] = ei::pmadd(h, b, sum1[i]);
            }
        });
        T tail0[group] = {}, tail1[group] = {};
        for (; c < c1; ++c)
            for (Index i = 0; i < group; ++i) {
                tail0[i] = fused(T(row[i][c]), x0[c], tail0[i]);
                tail1[i] = fused(T(row[i][c]), x1[c], tail1[i]);
            }
        for (Index i = 0; i < count; ++i) {
            out0[g0 + i] += ei::predux(sum0[i]) + tail0[i];
            out1[g0 + i] += ei::predux(sum1[i]) + tail1[i];
        }
    }
}

// add_weighted for two weight vectors at once, reading each entry once:
// dst0[c] += sum_i block(i, c) w0[i], dst1[c] += sum_i block(i, c) w1[i].
template <class T, class S>
void add_weighted2(const S* block, Index stride, Index rows, const T* w0, const T* w1, T* dst0, T* dst1, Index c0,
                   Index c1) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row[group];
        group_rows(block, stride, g0, count, row);
        T weight0[group], weight1[group];
        Packet<T> scale0[group], scale1[group];
        group_weights(w0, g0, count, weight0);
        group_weights(w1, g0, count, weight1);
        for (Index i = 0; i < group; ++i) {
            scale0[i] = ei::pset1<Packet<T>>(weight0[i]);
            scale1[i] = ei::pset1<Packet<T>>(weight1[i]);
        }
        Index c = sweep_packets<T>(row, c0, c1, [&](Index c) {
            Packet<T> t0 = ei::ploadu<Packet<T>>(dst0 + c), t1 = ei::ploadu<Packet<T>>(dst1 + c);
            for (Index i = 0; i < group; ++i) {
                const Packet<T> h = load<T>(row[i] + c);
                t0 = ei::pmadd(h, scale0[i], t0);
                t1 = ei::pmadd(h, scale1[i], t1);
            }
            ei::pstoreu(dst0 + c, t0);
            ei::pstoreu(dst1 + c, t1);
        });
        for (; c < c1; ++c) {
            T t0 = dst0[c], t1 = dst1[c];
            for (Index i = 0; i < group; ++i) {
                t0 = fused(T(row[i][c]), weight0[i], t0);
                t1 = fused(T(row[i][c]), weight1[i], t1);
            }
            dst0[c] = t0;
            dst1[c] = t1;
        }
    }
}

// out[i] += sum_c dotted(i, c) x[c] and dst[c] += sum_i weighted(i, c) w[i] over columns
// [c0, c1), in one sweep, for two blocks of the same shape; kSame: they are one block,
// whose entries are then loaded (and widened) once for both.
template <class T, class S, bool kSame>
void dots_and_add_weighted_sweep(const S* dotted, const S* weighted, Index stride, Index rows, const T* x,
                                 const T* w, T* out, T* dst, Index c0, Index c1) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row_dotted[group];
        const S* row_weighted[group];
        group_rows(dotted, stride, g0, count, row_dotted);
        group_rows(weighted, stride, g0, count, row_weighted);
        T weight[group];
        Packet<T> scale[group], sum[group];
        group_weights(w, g0, count, weight);
        for (Index i = 0; i < group; ++i) {
            scale[i] = ei::pset1<Packet<T>>(weight[i]);
            sum[i] = ei::pset1<Packet<T>>(T(0));
        }
        Index c = sweep_packets<T>(row_dotted, c0, c1, [&](Index c) {
            const Packet<T> xc = ei::ploadu<Packet<T>>(x + c);
            Packet<T> t = ei::ploadu<Packet<T>>(dst + c);
            for (Index i = 0; i < group; ++i) {
                const Packet<T> h = load<T>(row_dotted[i] + c);
                sum[i] = ei::pmadd(h, xc, sum[i]);
                t = ei::pmadd(kSame ? h : load<T>(row_weighted[i] + c), scale[i], t);
            }
            ei::pstoreu(dst + c, t);
        });
        T tail[group] = {};
        for (; c < c1; ++c) {
            T t = dst[c];
            for (Index i = 0; i < group; ++i) {
                tail[i] = fused(T(row_dotted[i][c]), x[c], tail[i]);
                t = fused(T(row_weighted[i][c]), weight[i], t);
            }
            dst[c] = t;
        }
        for (Index i = 0; i < count; ++i) out[g0 + i] += ei::predux(sum[i]) + tail[i];
    }
}

// Both at once, reading each entry once: dst[c] += sum_i block(i, c) w[i] and
// dots[i] += sum_c block(i, c) x[c], over columns [c0, c1).
template <class T, class S>
void dots_and_add_weighted(const S* block, Index stride, Index rows, const T* w, const T* x, T* dst, Index c0,
                           Index c1, T* out) {
    dots_and_add_weighted_sweep<T, S, true>(block, block, stride, rows, x, w, out, dst, c0, c1);
}

// The next block's dots and the previous block's weighted sum in one sweep over the
// columns: out[i] += sum_c next(i, c) x[c] and dst[c] += sum_i prev(i, c) w[i], for two
// blocks of the same shape. The next block streams from memory while the previous one,
// read a moment ago, is still in cache: the memory reads overlap the cached block's
// arithmetic instead of waiting for it. dst sees the same additions in the same order as
// add_weighted(prev) alone, and out the same as dots(next), so the bits are unchanged.
template <class T, class S>
void dots_next_add_previous(const S* next, const S* prev, Index stride, Index rows, const T* x, const T* w, T* out,
                            T* dst, Index c0, Index c1) {
    dots_and_add_weighted_sweep<T, S, false>(next, prev, stride, rows, x, w, out, dst, c0, c1);
}

// dots_next_add_previous for two outputs: out0/out1 from next with x0/x1, dst0/dst1 from
// prev with w0/w1. 16 row sums stay in registers; the 16 weights are broadcast from
// memory inside each FMA (AVX-512 has 32 registers, too few to keep both sets).
template <class T, class S>
void dots2_next_add2_previous(const S* next, const S* prev, Index stride, Index rows, const T* x0, const T* x1,
                              const T* w0, const T* w1, T* out0, T* out1, T* dst0, T* dst1, Index c0, Index c1) {
    for (Index g0 = 0; g0 < rows; g0 += group) {
        const Index count = std::min(group, rows - g0);
        const S* row_next[group];
        const S* row_prev[group];
        group_rows(next, stride, g0, count, row_next);
        group_rows(prev, stride, g0, count, row_prev);
        T weight0[group], weight1[group];
        Packet<T> sum0[group], sum1[group];
        group_weights(w0, g0, count, weight0);
        group_weights(w1, g0, count, weight1);
        for (Index i = 0; i < group; ++i) sum0[i] = sum1[i] = ei::pset1<Packet<T>>(T(0));
        Index c = sweep_packets<T>(row_next, c0, c1, [&](Index c) {
            const Packet<T> a = ei::ploadu<Packet<T>>(x0 + c), b = ei::ploadu<Packet<T>>(x1 + c);
            Packet<T> t0 = ei::ploadu<Packet<T>>(dst0 + c), t1 = ei::ploadu<Packet<T>>(dst1 + c);
            for (Index i = 0; i < group; ++i) {
                const Packet<T> h = load<T>(row_next[i] + c);
                sum0[i] = ei::pmadd(h, a, sum0[i]);
                sum1[i] = ei::pmadd(h, b, sum1[i]);
                const Packet<T> g = load<T>(row_prev[i] + c);
                t0 = ei::pmadd(g, ei::pset1<Packet<T>>(weight0[i]), t0);
                t1 = ei::pmadd(g, ei::pset1<Packet<T>>(weight1[i]), t1);
            }
            ei::pstoreu(dst0 + c, t0);
            ei::pstoreu(dst1 + c, t1);
        });
        T tail0[group] = {}, tail1[group] = {};
        for (; c < c1; ++c) {
            T t0 = dst0[c], t1 = dst1[c];
            for (Index i = 0; i < group; ++i) {
                const T h = T(row_next[i][c]), g = T(row_prev[i][c]);
                tail0[i] = fused(h, x0[c], tail0[i]);
                tail1[i] = fused(h, x1[c], tail1[i]);
                t0 = fused(g, weight0[i], t0);
                t1 = fused(g, weight1[i], t1);
            }
            dst0[c] = t0;
            dst1[c] = t1;
        }
        for (Index i = 0; i < count; ++i) {
            out0[g0 + i] += ei::predux(sum0[i]) + tail0[i];
            out1[g0 + i] += ei::predux(sum1[i]) + tail1[i];
        }
    }
}


}  // namespace nytro::detail::rows
