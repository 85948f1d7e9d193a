#include "nytro/kernel.hpp"

#include "nytro/errors.hpp"
#include "runtime/huge_pages.hpp"
#include "runtime/memory_plan.hpp"
#include "kernel/micro_tile.hpp"
#include "kernel/packed_centers.hpp"
#include "runtime/parallel.hpp"
#include "runtime/task_interruption.hpp"
#include "kernel/row_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace nytro {
namespace {

// Tasks of 128 rows x about 512 centres: the centres' panels of a block (512 x d) stay in
// L2 while the block's rows pass, kRows at a time, through the register tiles.
constexpr Index kRowBlock = 128;
constexpr Index kColBlock = 512;

// Whole kernel matrices from this size on are written with non-temporal stores: a plain
// store first reads the line it writes (read for ownership), so writing K moved twice
// its bytes. Measured on the 2-core benchmark machine, d = 90, m = 2000, 2 threads,
// interleaved runs: into an existing 200000-row (3.2 GB) float64 array 2-28% faster
// (median pair ratios of four runs, this VM being noisy), into a fresh one 3-9%; at 20000
// rows (320 MB, about the VM's L3) 1-5%. Half-precision results (O != T) are stored
// plainly: streamed 32 bytes at a time they measured no faster.
constexpr double kStreamBytes = double(64 << 20);

// The peel before the streamed packets (kernel_of_distances) reaches a packet
// boundary only from an address that is a whole number of entries: a caller's array that
// is not (a NumPy view at a byte offset) is stored plainly, as unaligned stores allow.
template <class T, class O>
bool streams_output(const O* data, Index rows, Index cols) {
    return std::is_same_v<O, T> && reinterpret_cast<std::uintptr_t>(data) % alignof(O) == 0 &&
           double(rows) * double(cols) * double(sizeof(O)) >= kStreamBytes;
}

// The progress report that ends a whole kernel matrix: "kernel", all of its rows done.
void report_formed(const Callback& callback, Index rows) {
    if (callback) callback({"kernel", rows, rows});
}

void check_features(Index x_features, Index center_features) {
    require(x_features == center_features, "X has " + std::to_string(x_features) +
                                               " features but the centres have " + std::to_string(center_features));
}

template <class T>
void check_kernel_arguments(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel) {
    check_kernel(kernel, Z.cols());
    check_features(X.cols(), Z.cols());
}

// The data less `shift` (the centres' mean, PackedCenters::shift), each feature times
// inverse[j] (see PackedCenters::inverse), so that the kernel is a function of the plain
// distance of the scaled rows: the squares then stay finite for data of any magnitude
// comparable to sigma (1e200 and 1e200 included). One scaling per feature is the whole of
// ARD: the isotropic kernel on data divided by sigma_j, the tiles unchanged.
template <class T>
Matrix<T> scaled(const MatrixCRef<T>& A, const Vector<T>& shift, const Vector<T>& inverse, const char* name) {
    // Checked first, so that NaN in the data is not reported as an overflow of X / sigma.
    if (!A.allFinite()) throw std::invalid_argument(std::string(name) + " contains NaN or infinity");
    Matrix<T> out = ((A.rowwise() - shift.transpose()).array().rowwise() * inverse.transpose().array()).matrix();
    if (!out.allFinite() || !out.rowwise().squaredNorm().allFinite())
        throw std::invalid_argument(std::string(name) +
                                    " / sigma overflows (or its squared norm does, for the linear kernel): "
                                    "rescale the features or use a larger sigma");
    return out;
}

// Squared norms summed as the register tiles sum a dot product (one fused multiply-add
// per feature, in order, as MicroTile::accumulate and rows::fused make them), so that for
// x = z bit for bit 2 x.z - ||x||^2 - ||z||^2 is exactly 0: the kernels of r =
// sqrt(d^2) would otherwise see sqrt of the rounding, ~sqrt(eps) ||x||, on the diagonal of
// K_mm (1 - 1e-8 instead of 1 for the Laplacian in float64).
template <class T>
Vector<T> tile_norms(const Matrix<T>& A) {
    Vector<T> norms(A.rows());
    for (Index i = 0; i < A.rows(); ++i) {
        const T* row = A.data() + i * A.cols();
        T sum = T(0);
        for (Index p = 0; p < A.cols(); ++p) sum = detail::rows::fused(row[p], row[p], sum);
        norms[i] = sum;
    }
    return norms;
}

// p 2^n for an integer-valued n with 2^n and p 2^n normal numbers, so exact. Eigen's
// pldexp splits 2^n into four factors to serve any n; the instruction sets below build
// it in one or two operations, with the same bits. Measured on one core of the benchmark
// machine, the whole exp below: AVX-512 1.3 -> 0.78 ns an entry (vscalefpd), AVX2 (built
// for Haswell) 4.3 -> 2.0 ns (2^n from its exponent bits); no result differed from
// pldexp's in sweeps of 7.9 (AVX-512) and 3.9 (AVX2) million x over [-720, 0].
template <class Packet>
EIGEN_STRONG_INLINE Packet times_power_of_two(const Packet& p, const Packet& n) {
    return Eigen::internal::pldexp(p, n);
}
#if defined(EIGEN_VECTORIZE_AVX512)
template <>
EIGEN_STRONG_INLINE Eigen::internal::Packet8d times_power_of_two(const Eigen::internal::Packet8d& p,
                                                                 const Eigen::internal::Packet8d& n) {
    return _mm512_scalef_pd(p, n);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX2)
template <>
EIGEN_STRONG_INLINE Eigen::internal::Packet4d times_power_of_two(const Eigen::internal::Packet4d& p,
                                                                 const Eigen::internal::Packet4d& n) {
    const __m256i biased = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), _mm256_set1_epi64x(1023));
    return _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52)));
}
#endif

// exp(x) for double packets x <= 0. Eigen's vectorised double exp is a Pade form with a
// division; this one has none: Cody-Waite reduction x = n ln2 + r with |r| <= ln2 / 2,
// the degree-13 Taylor polynomial of e^r (truncation below 1e-17 relative), and 2^n by
// times_power_of_two (its measured gain: benchmarks/results/bench_kernels/history.md,
// "The kernel's exp"). x is clamped at -708, where
// 2^n (n >= -1021) is still a normal number: below, the result is exp(-708) = 3e-308
// instead of a subnormal or 0.
template <class Packet>
EIGEN_STRONG_INLINE Packet exp_of_nonpositive(const Packet& x_in) {
    namespace ei = Eigen::internal;
    const Packet x = ei::pmax(x_in, ei::pset1<Packet>(-708.0));
    const Packet n = ei::pfloor(ei::pmadd(x, ei::pset1<Packet>(1.4426950408889634), ei::pset1<Packet>(0.5)));
    Packet r = ei::pmadd(n, ei::pset1<Packet>(-0.693145751953125), x);  // ln2's leading bits: n ln2_hi exact
    r = ei::pmadd(n, ei::pset1<Packet>(-1.42860682030941723212e-6), r);
    constexpr double inverse_factorial[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
                                            1.0 / 3628800.0,    1.0 / 362880.0,    1.0 / 40320.0,
                                            1.0 / 5040.0,       1.0 / 720.0,       1.0 / 120.0,
                                            1.0 / 24.0,         1.0 / 6.0,         0.5,
                                            1.0,                1.0};
    Packet p = ei::pset1<Packet>(inverse_factorial[0]);
    for (int i = 1; i < 14; ++i) p = ei::pmadd(p, r, ei::pset1<Packet>(inverse_factorial[i]));
    return times_power_of_two(p, n);
}

template <class T, class Packet>
EIGEN_STRONG_INLINE Packet exp_packet(const Packet& x) {
    if constexpr (std::is_same_v<T, double>) return exp_of_nonpositive(x);
    else return Eigen::internal::pexp(x);  // float: a polynomial already
}

// One packet of entries stored at out: as they are, or rounded to half precision (to
// nearest even, as Eigen::half(float) rounds one entry) for float16 storage. kStream:
// non-temporal, out aligned to a whole packet of O (see kStreamBytes); the portable
// build's SSE2 stores stay plain.
template <class T, class O, bool kStream = false, class Packet>
EIGEN_STRONG_INLINE void store_entries(O* out, const Packet& e) {
    namespace ei = Eigen::internal;
    if constexpr (std::is_same_v<O, T>) {
#if defined(EIGEN_VECTORIZE_AVX512)
        if constexpr (kStream && std::is_same_v<T, double>) return _mm512_stream_pd(out, e);
        if constexpr (kStream && std::is_same_v<T, float>) return _mm512_stream_ps(out, e);
#elif defined(EIGEN_VECTORIZE_AVX)
        if constexpr (kStream && std::is_same_v<T, double>) return _mm256_stream_pd(out, e);
        if constexpr (kStream && std::is_same_v<T, float>) return _mm256_stream_ps(out, e);
#endif
        ei::pstoreu(out, e);
    } else {
        static_assert(std::is_same_v<T, float> && std::is_same_v<O, Eigen::half>, "only float -> half rounding");
#if defined(EIGEN_VECTORIZE_AVX512)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtps_ph(e, _MM_FROUND_TO_NEAREST_INT));
#elif defined(EIGEN_VECTORIZE_AVX) && defined(__F16C__)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(e, _MM_FROUND_TO_NEAREST_INT));
#else
        constexpr Index width = ei::unpacket_traits<Packet>::size;
        alignas(64) T values[width];
        ei::pstoreu(values, e);
        for (Index i = 0; i < width; ++i) out[i] = Eigen::half(values[i]);
#endif
    }
}

// Non-temporal stores are weakly ordered: fenced before a task counts as done, so that
// whoever reads out after the parallel loop sees them.
inline void fence_streamed_stores() {
#if defined(EIGEN_VECTORIZE_AVX)
    _mm_sfence();
#endif
}

// The kernel's value from the scaled rows' dot product and squared norms, one packet of
// entries: sq = 2 dots - z_norms - x_norm = -||x' - z'||^2 (clamped at 0 against rounding);
//   exp_square: exp(sq)                                  (Gaussian, x' in units of sqrt(2) sigma)
//   matern*:    u = sqrt(-sq), exp(-u) (1/2), (1 + u) exp(-u) (3/2), (1 + u + u^2/3) exp(-u) (5/2)
//               (x' in units of sigma / sqrt(2 nu))
//   dot:        dots, the linear kernel (x' the data unscaled)
// Past u = kCut the Matern values are below the type's smallest normal number and are 0:
// the clamped exp (exp_of_nonpositive) would otherwise leave 3e-308 times a polynomial.
template <detail::KernelFunction F, class T, class Packet>
EIGEN_STRONG_INLINE Packet kernel_of_packet(const Packet& dots, const Packet& z_norms, const Packet& x_norm) {
    namespace ei = Eigen::internal;
    using detail::KernelFunction;
    if constexpr (F == KernelFunction::dot) {
        return dots;
    } else {
        const Packet sq = ei::psub(ei::psub(ei::pmul(ei::pset1<Packet>(T(2)), dots), z_norms), x_norm);
        if constexpr (F == KernelFunction::exp_square) {
            return exp_packet<T>(ei::pmin(sq, ei::pset1<Packet>(T(0))));
        } else {
            constexpr T kCut = std::is_same_v<T, double> ? T(708) : T(87);
            const Packet u = ei::psqrt(ei::pmax(ei::pnegate(sq), ei::pset1<Packet>(T(0))));
            const Packet e = exp_packet<T>(ei::pnegate(ei::pmin(u, ei::pset1<Packet>(kCut))));
            Packet value = e;
            if constexpr (F == KernelFunction::matern32) {
                value = ei::pmul(ei::padd(ei::pset1<Packet>(T(1)), u), e);
            } else if constexpr (F == KernelFunction::matern52) {
                const Packet poly = ei::pmadd(ei::pmul(u, ei::pset1<Packet>(T(1) / T(3))), u,
                                              ei::padd(ei::pset1<Packet>(T(1)), u));
                value = ei::pmul(poly, e);
            }
            return ei::pselect(ei::pcmp_lt(u, ei::pset1<Packet>(kCut)), value, ei::pset1<Packet>(T(0)));
        }
    }
}

// out[j] = the kernel of centre j (kernel_of_packet), stored as O. Every entry goes
// through the same vectorised code, the last few through a padded packet: Eigen's scalar
// exp differs from its vectorised one in the last bit, and an array expression peels
// scalar iterations up to the destination's alignment, which would make the bits depend
// on where the caller's output array starts.
template <detail::KernelFunction F, class T, class O>
void kernel_of_distances(const T* dots, const T* z_norms, T x_norm, O* out, Index count, bool stream) {
    using Packet = typename Eigen::internal::packet_traits<T>::type;
    constexpr Index width = Eigen::internal::packet_traits<T>::size;
    namespace ei = Eigen::internal;
    const Packet x = ei::pset1<Packet>(x_norm);
    auto exp_of = [&](const T* d, const T* z) {
        return kernel_of_packet<F, T>(ei::ploadu<Packet>(d), ei::ploadu<Packet>(z), x);
    };
    // Fewer than a packet of entries through one padded packet, so that they get the same
    // vectorised exp as the others.
    auto exp_padded = [&](Index from, Index to) {
        alignas(64) T d[width] = {}, z[width] = {};
        alignas(64) O e[width];
        std::copy(dots + from, dots + to, d);
        std::copy(z_norms + from, z_norms + to, z);
        store_entries<T>(e, exp_of(d, z));
        std::copy(e, e + (to - from), out + from);
    };
    Index j = 0;
    // Streamed stores need out + j aligned to a packet: the entries before go padded.
    if (stream) {
        const auto entry = reinterpret_cast<std::uintptr_t>(out) / sizeof(O);
        j = std::min(Index((width - entry % width) % width), count);
        if (j > 0) exp_padded(0, j);
    }
    // Four packets at a time: one exp is a chain of about 20 dependent operations, so with
    // one packet per iteration the out-of-order window, not the arithmetic, set the pace.
    // The exp loop alone, one core: 0.97 -> 0.78 ns an entry; the kernel at d = 90, 20000
    // x 2000: 1-2% (medians of 25 interleaved pairs). Same operations on every entry, so
    // the same bits as one at a time.
    auto run = [&](auto streamed) {
        constexpr bool kStream = decltype(streamed)::value;
        for (; j + 4 * width <= count; j += 4 * width) {
            const Packet e0 = exp_of(dots + j, z_norms + j), e1 = exp_of(dots + j + width, z_norms + j + width);
            const Packet e2 = exp_of(dots + j + 2 * width, z_norms + j + 2 * width);
            const Packet e3 = exp_of(dots + j + 3 * width, z_norms + j + 3 * width);
            store_entries<T, O, kStream>(out + j, e0);
            store_entries<T, O, kStream>(out + j + width, e1);
            store_entries<T, O, kStream>(out + j + 2 * width, e2);
            store_entries<T, O, kStream>(out + j + 3 * width, e3);
        }
        for (; j + width <= count; j += width) store_entries<T, O, kStream>(out + j, exp_of(dots + j, z_norms + j));
    };
    if (stream) run(std::true_type{});
    else run(std::false_type{});
    if (j < count) exp_padded(j, count);
}

}  // namespace

namespace detail {

namespace {

// The function applied to the scaled distances, and the per-feature scale that puts the
// data in the units it expects (see kernel_of_packet).
KernelFunction function_of(const KernelSpec& kernel) {
    switch (kernel.type) {
        case KernelType::gaussian: return KernelFunction::exp_square;
        case KernelType::laplacian: return KernelFunction::matern12;
        case KernelType::linear: return KernelFunction::dot;
        case KernelType::matern: break;
    }
    return kernel.nu == 0.5 ? KernelFunction::matern12
                            : kernel.nu == 1.5 ? KernelFunction::matern32 : KernelFunction::matern52;
}

// x' = x / (c sigma): c = sqrt(2) for the Gaussian (exp(-||x' - z'||^2)), 1 / sqrt(2 nu)
// for the Matern family (u = ||x' - z'||), the Laplacian being nu = 1/2.
double units(const KernelSpec& kernel) {
    switch (kernel.type) {
        case KernelType::gaussian: return std::sqrt(2.0);
        case KernelType::laplacian: return 1.0;
        case KernelType::matern: return 1.0 / std::sqrt(2.0 * kernel.nu);
        case KernelType::linear: break;
    }
    return 1.0;
}

}  // namespace

template <class T>
PackedCenters<T>::PackedCenters(const MatrixCRef<T>& Z, const KernelSpec& kernel, const Callback& callback,
                                Index rows)
    : count_(Z.rows()), depth_(Z.cols()), function_(function_of(kernel)) {
    using Tile = MicroTile<T>;
    constexpr Index kCols = Tile::kCols;
    check_kernel(kernel, Z.cols());
    inverse_ = Vector<T>::Ones(depth_);
    if (function_ != KernelFunction::dot) {
        for (Index j = 0; j < depth_; ++j) {
            const double sigma = kernel.sigma[kernel.sigma.size() == 1 ? 0 : std::size_t(j)];
            const double inverse = 1.0 / (units(kernel) * sigma);
            require(std::isfinite(inverse) && static_cast<T>(inverse) < std::numeric_limits<T>::infinity(),
                    "sigma=" + format_number(sigma) + " is too small: 1 / sigma overflows the compute type");
            inverse_[j] = static_cast<T>(inverse);
        }
    }
    // The mean accumulated in double (float32 centres) and rounded once to T: any shift
    // leaves a distance-based kernel unchanged, the nearer the mean the smaller the
    // rounding. The linear kernel changes under a shift: its data stay as they are, and
    // its accuracy is a plain GEMM's.
    shift_ = Z.rows() > 0 && function_ != KernelFunction::dot
                 ? Vector<T>(Z.template cast<double>().colwise().mean().transpose().template cast<T>())
                 : Vector<T>(Vector<T>::Zero(Z.cols()));
    if (!shift_.allFinite()) shift_.setZero();  // a sum past the range: unshifted, and checked below
    const Index groups = (count_ + kCols - 1) / kCols;
    panels_.resize(std::size_t(groups * kCols * std::max<Index>(depth_, 1)));
    norms_.assign(std::size_t(groups * kCols), T(0));
    // Panel by panel, with the interruption point between them. kCols rows of d entries
    // are a whole number of packets, so a panel's rows lie at the offsets from an aligned
    // block, modulo a packet, that they had in one block of all the centres: their norms
    // (Eigen's reductions peel to an alignment) keep their bits.
    TaskInterruption interruption(callback ? std::function<void()>([&] { callback({"kernel", 0, rows}); })
                                           : std::function<void()>());
    for (Index g = 0; g < groups; ++g) {
        const Index first = g * kCols, count = std::min(kCols, count_ - first);
        const Matrix<T> Zs = scaled<T>(Z.middleRows(first, count), shift_, inverse_, "Z");
        pack_panel<T>(Zs.data(), depth_, 1, count, depth_, int(kCols), panels_.data() + first * depth_);
        Eigen::Map<Vector<T>>(norms_.data() + first, count) = row_norms(Zs);
        interruption.after_task(0);
    }
}

template <class T>
Vector<T> PackedCenters<T>::row_norms(const Matrix<T>& scaled_rows) const {
    // The Gaussian's exp is smooth at 0, where the rounding of its norms costs nothing.
    if (function_ == KernelFunction::exp_square) return scaled_rows.rowwise().squaredNorm();
    return tile_norms<T>(scaled_rows);
}

template <class T>
Matrix<T> PackedCenters<T>::scale(const MatrixCRef<T>& X) const {
    return scaled<T>(X, shift_, inverse_, "X");
}

namespace {

template <KernelFunction F, class T, class O>
void kernel_rows(const T* strip, Index strip_stride, const T* z_norms, const T* x_norms, Index rows, O* out,
                 Index out_stride, Index cols, bool streamed) {
    for (Index i = 0; i < rows; ++i)
        kernel_of_distances<F, T>(strip + i * strip_stride, z_norms, x_norms[i], out + i * out_stride, cols,
                                  streamed);
}

}  // namespace

template <class T, class O>
void kernel_packed(const MatrixCRef<T>& X, const PackedCenters<T>& centers, typename KernelOutput<O>::type out,
                   int n_threads, bool streamed, const Callback& callback) {
    using Tile = MicroTile<T>;
    constexpr Index kRows = Tile::kRows, kCols = Tile::kCols;
    const Index n = X.rows(), m = centers.count(), d = centers.depth();
    check_features(X.cols(), d);
    require(out.rows() == n && out.cols() == m, "kernel output has the wrong shape");
    if (n == 0 || m == 0) return;
    // Column blocks of whole panels, about kColBlock wide.
    const Index block_cols = (kColBlock + kCols - 1) / kCols * kCols;
    const Index row_blocks = (n + kRowBlock - 1) / kRowBlock;
    const Index col_blocks = (m + block_cols - 1) / block_cols;
    const int threads = threads_for(2.0 * n * m * (d + 10), resolve_threads(n_threads));
    // Per thread: the block's rows in broadcast panels, and one strip of kRows x
    // block_cols dots, turned into kernel values row by row once its tiles are done.
    struct Scratch {
        AlignedVector<T> x_panels, strip;
    };
    std::vector<Scratch> scratch(static_cast<std::size_t>(threads),
                                 Scratch{AlignedVector<T>(std::size_t(kRowBlock * std::max<Index>(d, 1))),
                                         AlignedVector<T>(std::size_t(kRows * block_cols))});
    auto rows_of = [&]() {
        switch (centers.function()) {
            case KernelFunction::exp_square: return &kernel_rows<KernelFunction::exp_square, T, O>;
            case KernelFunction::matern12: return &kernel_rows<KernelFunction::matern12, T, O>;
            case KernelFunction::matern32: return &kernel_rows<KernelFunction::matern32, T, O>;
            case KernelFunction::matern52: return &kernel_rows<KernelFunction::matern52, T, O>;
            case KernelFunction::dot: break;
        }
        return &kernel_rows<KernelFunction::dot, T, O>;
    }();
    // Ctrl-C between the calling thread's tasks (task_interruption.hpp), with the rows done
    // so far: the entries of finished tasks, over m.
    std::atomic<Index> finished{0};
    TaskInterruption interruption(callback ? std::function<void()>([&] {
        callback({"kernel", finished.load(std::memory_order_relaxed) / m, n});
    })
                                           : std::function<void()>());
    parallel_for(row_blocks * col_blocks, threads, [&](Index task, int thread) {
        const Index r0 = (task / col_blocks) * kRowBlock, c0 = (task % col_blocks) * block_cols;
        const Index rows = std::min(kRowBlock, n - r0), cols = std::min(block_cols, m - c0);
        const Matrix<T> Xs = centers.scale(X.middleRows(r0, rows));
        const Vector<T> x_norms = centers.row_norms(Xs);
        Scratch& own = scratch[std::size_t(thread)];
        Tile tile;
        for (Index i0 = 0; i0 < rows; i0 += kRows) {
            const Index group_rows = std::min(kRows, rows - i0);
            T* a = own.x_panels.data() + i0 * d;
            pack_panel<T>(Xs.data() + i0 * d, d, 1, group_rows, d, int(kRows), a);
            for (Index c = 0; c < cols; c += kCols) {
                tile.dots(d, a, kRows, centers.panel(c0 + c));
                tile.store(own.strip.data() + c, block_cols);
            }
            rows_of(own.strip.data(), block_cols, centers.norms() + c0, x_norms.data() + i0, group_rows,
                    &out(r0 + i0, c0), out.outerStride(), cols, streamed);
        }
        if (streamed) fence_streamed_stores();
        if (interruption) {
            finished.fetch_add(rows * cols, std::memory_order_relaxed);
            interruption.after_task(thread);
        }
    });
}

template class PackedCenters<float>;
template class PackedCenters<double>;
template void kernel_packed<float, float>(const MatrixCRef<float>&, const PackedCenters<float>&, MatrixRef<float>,
                                          int, bool, const Callback&);
template void kernel_packed<double, double>(const MatrixCRef<double>&, const PackedCenters<double>&,
                                            MatrixRef<double>, int, bool, const Callback&);
template void kernel_packed<float, Eigen::half>(const MatrixCRef<float>&, const PackedCenters<float>&,
                                                MatrixRef<Eigen::half>, int, bool, const Callback&);

}  // namespace detail

KernelType parse_kernel_type(const std::string& value) {
    if (value == "gaussian") return KernelType::gaussian;
    if (value == "laplacian") return KernelType::laplacian;
    if (value == "matern") return KernelType::matern;
    if (value == "linear") return KernelType::linear;
    throw std::invalid_argument("kernel must be 'gaussian', 'laplacian', 'matern' or 'linear', got '" + value + "'");
}

void check_kernel(const KernelSpec& kernel, Index features) {
    // A type outside the enum (a cast from an integer) would be computed as some other kernel.
    require(kernel.type == KernelType::gaussian || kernel.type == KernelType::laplacian ||
                kernel.type == KernelType::matern || kernel.type == KernelType::linear,
            "kernel has no valid type (the enum holds " + std::to_string(int(kernel.type)) + ")");
    if (kernel.type == KernelType::matern)
        require(kernel.nu == 0.5 || kernel.nu == 1.5 || kernel.nu == 2.5,
                "nu (the Matern kernel's order) must be 0.5, 1.5 or 2.5, got " + format_number(kernel.nu));
    if (kernel.type == KernelType::linear) return;  // no bandwidth
    require(!kernel.sigma.empty(), "sigma must have one entry, or one per feature");
    if (features >= 0 && kernel.sigma.size() != 1)
        require(Index(kernel.sigma.size()) == features,
                "sigma has " + std::to_string(kernel.sigma.size()) + " entries but the data have " +
                    std::to_string(features) + " features: give one bandwidth, or one per feature");
    for (const double sigma : kernel.sigma)
        require(std::isfinite(sigma) && sigma > 0, "sigma must be a finite number > 0, got " + format_number(sigma));
}

template <class T>
void kernel_matrix_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, MatrixRef<T> out,
                        int n_threads, const Callback& callback) {
    check_kernel_arguments<T>(X, Z, kernel);
    require(out.rows() == X.rows() && out.cols() == Z.rows(), "kernel output has the wrong shape");
    if (X.rows() == 0 || Z.rows() == 0) return;
    detail::kernel_packed<T>(X, detail::PackedCenters<T>(Z, kernel, callback, X.rows()), out, n_threads,
                             streams_output<T, T>(out.data(), out.rows(), out.cols()), callback);
    report_formed(callback, X.rows());
}

template <class T>
void gaussian_kernel_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma, MatrixRef<T> out,
                          int n_threads, const Callback& callback) {
    kernel_matrix_into<T>(X, Z, KernelSpec(sigma), out, n_threads, callback);
}

namespace detail {

template <class T, class O>
Matrix<O> kernel_stored(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, int n_threads,
                        const Callback& callback) {
    check_kernel_arguments<T>(X, Z, kernel);
    check_allocation(double(X.rows()) * double(Z.rows()) * sizeof(O),
                     "the kernel matrix (" + shape_text<O>(X.rows(), Z.rows()) + ")");
    Matrix<O> K(X.rows(), Z.rows());
    // Before the first write: huge pages where advised, mapped by all threads.
    advise_huge_pages(K.data(), std::size_t(K.size()) * sizeof(O));
    // Gigabytes of fresh pages take seconds: Ctrl-C between their chunks too.
    const auto between_chunks = [&] { callback({"kernel", 0, X.rows()}); };
    populate_in_parallel(K.data(), std::size_t(K.size()) * sizeof(O), n_threads,
                         callback ? std::function<void()>(between_chunks) : std::function<void()>());
    if (X.rows() > 0 && Z.rows() > 0)
        kernel_packed<T, O>(X, PackedCenters<T>(Z, kernel, callback, X.rows()), K, n_threads,
                            streams_output<T, O>(K.data(), K.rows(), K.cols()), callback);
    report_formed(callback, X.rows());
    return K;
}

template Matrix<float> kernel_stored<float, float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                   const KernelSpec&, int, const Callback&);
template Matrix<double> kernel_stored<double, double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                                      const KernelSpec&, int, const Callback&);
template Matrix<Eigen::half> kernel_stored<float, Eigen::half>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                               const KernelSpec&, int, const Callback&);

template <class T>
double kernel_bound(const MatrixCRef<T>& X, const KernelSpec& kernel) {
    if (kernel.distance_based() || X.rows() == 0) return 1.0;
    return X.template cast<double>().rowwise().squaredNorm().maxCoeff();
}

template double kernel_bound<float>(const MatrixCRef<float>&, const KernelSpec&);
template double kernel_bound<double>(const MatrixCRef<double>&, const KernelSpec&);

}  // namespace detail

template <class T>
Matrix<T> kernel_matrix(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, int n_threads,
                        const Callback& callback) {
    // Planned before the n x m result is allocated; refused with what to change: rows
    // of X in blocks that fit (or kernel_predict, which streams them for K @ coef).
    const double rows = double(X.rows()), cols = double(Z.rows());
    // Small results skip the plan (it reads the memory limits from /proc three times).
    if (rows * cols * sizeof(T) < double(1 << 26))
        return detail::kernel_stored<T, T>(X, Z, kernel, n_threads, callback);
    detail::MemoryPlan plan("the kernel matrix of " + std::to_string(X.rows()) + " x " + std::to_string(Z.rows()));
    plan.add(detail::MemoryPlan::whole, "K (" + shape_text<T>(rows, cols) + ")", rows * cols * sizeof(T));
    const double most_rows = cols > 0 ? std::floor(double(available_memory_bytes()) / (cols * sizeof(T))) : rows;
    plan.advise("X in blocks of at most " + std::to_string(static_cast<long long>(std::max(0.0, most_rows))) +
                " rows (or kernel_predict, which streams them, for K @ coef)");
    if (sizeof(T) == 8) plan.advise("float32 data (dtype=np.float32: 4 bytes an entry)");
    plan.check();
    return plan.guard([&] { return detail::kernel_stored<T, T>(X, Z, kernel, n_threads, callback); });
}

template <class T>
Matrix<T> gaussian_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma, int n_threads,
                          const Callback& callback) {
    return detail::kernel_stored<T, T>(X, Z, KernelSpec(sigma), n_threads, callback);
}

template <class T>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers, const MatrixCRef<T>& coef,
                         const KernelSpec& kernel, int n_threads, const Callback& callback) {
    check_kernel_arguments<T>(X, centers, kernel);
    require(coef.rows() == centers.rows(), "coef has " + std::to_string(coef.rows()) +
                                               " rows but there are " +
                                               std::to_string(centers.rows()) + " centres");
    const Index n = X.rows(), m = centers.rows();
    Matrix<T> out(n, coef.cols());
    // Blocks of about 32 MiB of kernel, so memory stays bounded for any n.
    const Index block = std::max<Index>(kRowBlock, (Index(1) << 22) / std::max<Index>(m, 1));
    if (n == 0 || m == 0) return Matrix<T>::Zero(n, coef.cols());
    const detail::PackedCenters<T> packed(centers, kernel, callback, n);
    Matrix<T> K;
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        K.resize(rows, m);
        detail::kernel_packed<T>(X.middleRows(r0, rows), packed, K, n_threads);
        out.middleRows(r0, rows).noalias() = K * coef;
        if (callback) callback({"predict", r0 + rows, n});
    }
    return out;
}

#define NYTRO_INSTANTIATE(T)                                                                                       \
    template void kernel_matrix_into<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&,          \
                                        MatrixRef<T>, int, const Callback&);                                    \
    template Matrix<T> kernel_matrix<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&, int,     \
                                        const Callback&);                                                       \
    template void gaussian_kernel_into<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, MatrixRef<T>, int, \
                                          const Callback&);                                                     \
    template Matrix<T> gaussian_kernel<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, int,              \
                                          const Callback&);                                                     \
    template Matrix<T> kernel_predict<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const MatrixCRef<T>&,      \
                                         const KernelSpec&, int, const Callback&);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)
#undef NYTRO_INSTANTIATE  // unity builds put several sources in one unit

}  // namespace nytro
