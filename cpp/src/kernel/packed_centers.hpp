// The centres of a kernel (nytro/kernel.hpp) prepared once for many calls on blocks of
// rows (the streamed hold-out kernel, prediction, the Gram solver's blocks): shifted by
// their mean (see shift()), scaled per feature to the kernel's units (see inverse()), packed in the register tiles' column panels (micro_tile.hpp), with
// their squared norms. Repacked at every call, the m x d centres cost a serial copy per
// block: at m = 2000, d = 85, 128-row calls ran 9% slower than with Eigen's GEMM.
#pragma once

#include "kernel/micro_tile.hpp"
#include "nytro/kernel.hpp"
#include "nytro/types.hpp"

namespace nytro::detail {

// What the kernel does with the scaled rows' dot products (kernel.cpp, kernel_of_packet).
enum class KernelFunction { exp_square, matern12, matern32, matern52, dot };

template <class T>
class PackedCenters {
public:
    // Throws std::invalid_argument as kernel_matrix does for a bad kernel or centres
    // that overflow once scaled. `callback`, if given, is called as {"kernel", 0, rows}
    // between panels (at most every 20 ms: an interruption point, as kernel_packed's, for
    // the serial copies of many centres of many features; it may throw).
    PackedCenters(const MatrixCRef<T>& Z, const KernelSpec& kernel, const Callback& callback = {},
                  Index rows = 0);

    Index count() const { return count_; }
    Index depth() const { return depth_; }
    KernelFunction function() const { return function_; }
    // Per feature: 1 / (sqrt(2) sigma_j) for the Gaussian, sqrt(2 nu) / sigma_j for the
    // Matern family (the Laplacian nu = 1/2), 1 for the linear kernel.
    const Vector<T>& inverse() const { return inverse_; }
    // Rows of X less shift(), times inverse(), checked for overflow.
    Matrix<T> scale(const MatrixCRef<T>& X) const;
    // Squared norms of scaled rows as the kernel needs them (for the kernels of
    // sqrt(d^2), summed in the tiles' order, so that x = z gives a distance of exactly 0).
    Vector<T> row_norms(const Matrix<T>& scaled_rows) const;
    // The centres' mean (rounded to T; zero for the linear kernel, which a shift changes), subtracted from the centres and from every row of
    // X before the distances: the kernel is translation invariant, and the distances come
    // from ||x||^2 + ||z||^2 - 2 x.z, which for data with a common offset c cancels away
    // everything below eps ||c||^2 (an offset of 1e8 lost the kernel in float64, of 1000
    // in float32). Shifted, the rounding is relative to the data's spread around the
    // centres. Depends on the centres alone, so fit and predict see the same kernel.
    const Vector<T>& shift() const { return shift_; }
    // The panel holding centres first..first + kCols - 1 (first a multiple of kCols).
    const T* panel(Index first) const { return panels_.data() + first * depth_; }
    // Squared norms of the scaled centres, zero-padded to whole panels.
    const T* norms() const { return norms_.data(); }

private:
    Index count_, depth_;
    KernelFunction function_;
    Vector<T> inverse_, shift_;
    AlignedVector<T> panels_, norms_;
};

// K(X, centres) into out (n x count), as kernel_matrix_into; computed in T and stored
// as O (T, or Eigen::half for T = float: float16 storage). `streamed`: write out with
// non-temporal stores, for results far larger than the caches that nothing reads right
// away (see streams_output); blocks a caller reuses at once stay in cache without it.
// `callback`, if given, is called as {"kernel", rows done, rows} between the calling
// thread's tasks (runtime/task_interruption.hpp: an interruption point; it may throw,
// leaving out partly written); the bits do not depend on it.
// (O is named, never deduced: callers pass Matrix<T> objects that convert to the Ref.)
template <class O>
struct KernelOutput {
    using type = MatrixRef<O>;
};
template <class T, class O = T>
void kernel_packed(const MatrixCRef<T>& X, const PackedCenters<T>& centers, typename KernelOutput<O>::type out,
                   int n_threads, bool streamed = false, const Callback& callback = {});

// kernel_matrix computed in T and stored as O (T, or Eigen::half for T = float), in a
// fresh matrix whose pages are mapped before the kernel writes them; `callback` as
// kernel_matrix's.
template <class T, class O>
Matrix<O> kernel_stored(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, int n_threads,
                        const Callback& callback = {});

// max_i k(x_i, x_i) over the rows of X: 1 for the distance-based kernels, max ||x_i||^2
// for the linear one (the paper's step gamma / n has gamma = 1 / this bound).
template <class T>
double kernel_bound(const MatrixCRef<T>& X, const KernelSpec& kernel);

}  // namespace nytro::detail
