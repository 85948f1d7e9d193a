// The centres of a Gaussian kernel prepared once for many calls on blocks of rows (the
// streamed hold-out kernel, prediction, the Gram solver's blocks): shifted by their mean
// (see shift()), scaled to units of sqrt(2) sigma, packed in the register tiles' column panels (micro_tile.hpp), with
// their squared norms. Repacked at every call, the m x d centres cost a serial copy per
// block: at m = 2000, d = 85, 128-row calls ran 9% slower than with Eigen's GEMM.
#pragma once

#include "kernel/micro_tile.hpp"
#include "nytro/types.hpp"

namespace nytro::detail {

template <class T>
class PackedCenters {
public:
    // Throws std::invalid_argument as gaussian_kernel does for a bad sigma or centres
    // that overflow once scaled.
    PackedCenters(const MatrixCRef<T>& Z, double sigma);

    Index count() const { return count_; }
    Index depth() const { return depth_; }
    double sigma() const { return sigma_; }
    double inverse() const { return inverse_; }  // 1 / (sqrt(2) sigma)
    // The centres' mean (rounded to T), subtracted from the centres and from every row of
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
    double sigma_, inverse_;
    Vector<T> shift_;
    AlignedVector<T> panels_, norms_;
};

// K(X, centres) into out (n x count), as gaussian_kernel_into; computed in T and stored
// as O (T, or Eigen::half for T = float: float16 storage). `streamed`: write out with
// non-temporal stores, for results far larger than the caches that nothing reads right
// away (see streams_output); blocks a caller reuses at once stay in cache without it.
// (O is named, never deduced: callers pass Matrix<T> objects that convert to the Ref.)
template <class O>
struct KernelOutput {
    using type = MatrixRef<O>;
};
template <class T, class O = T>
void gaussian_kernel_packed(const MatrixCRef<T>& X, const PackedCenters<T>& centers,
                            typename KernelOutput<O>::type out, int n_threads, bool streamed = false);

// gaussian_kernel computed in T and stored as O (T, or Eigen::half for T = float), in a
// fresh matrix whose pages are mapped before the kernel writes them.
template <class T, class O>
Matrix<O> gaussian_kernel_stored(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma, int n_threads);

}  // namespace nytro::detail
