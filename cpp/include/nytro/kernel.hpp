// The kernels, evaluated blockwise: the distance GEMM of a cache-sized block and the
// kernel's function of it happen together, so K is written once and never re-read.
//   gaussian   exp(-r^2 / 2)
//   laplacian  exp(-r)                          (= matern with nu = 1/2)
//   matern     nu = 1/2: exp(-u), 3/2: (1 + u) exp(-u), 5/2: (1 + u + u^2 / 3) exp(-u),
//              u = sqrt(2 nu) r (scikit-learn's Matern with length_scale = sigma)
//   linear     x.z (sigma unused)
// with r = ||(x - z) / sigma||, sigma one bandwidth or one per feature (ARD).
#pragma once

#include "nytro/types.hpp"

#include <string>
#include <vector>

namespace nytro {

enum class KernelType { gaussian, laplacian, matern, linear };

struct KernelSpec {
    KernelType type = KernelType::gaussian;
    double nu = 1.5;            // matern only: 0.5, 1.5 or 2.5
    std::vector<double> sigma;  // one bandwidth, or one per feature (ARD); empty for linear
    KernelSpec() : sigma{1.0} {}
    // The Gaussian with one bandwidth: every function taking a KernelSpec takes a sigma.
    KernelSpec(double gaussian_sigma) : sigma{gaussian_sigma} {}  // NOLINT: implicit on purpose
    KernelSpec(KernelType kind, double matern_nu, std::vector<double> bandwidths)
        : type(kind), nu(matern_nu), sigma(std::move(bandwidths)) {}
    // Distance-based kernels have k(x, x) = 1; the linear kernel ||x||^2.
    bool distance_based() const { return type != KernelType::linear; }
};

// Throws std::invalid_argument naming the argument for an unknown nu, a bandwidth that is
// not finite and > 0, or a bandwidth vector whose length is neither 1 nor `features`
// (features < 0: not checked).
void check_kernel(const KernelSpec& kernel, Index features = -1);
KernelType parse_kernel_type(const std::string& value);

// K(X, Z): X is n x d, Z is m x d, the result n x m. `callback`, if given, is called as
// {"kernel", rows done, n} while the matrix is formed (at most every 20 ms, from the
// calling thread, between its blocks) and once it is done; an exception from it (Ctrl-C
// in the Python bindings) abandons the matrix. The bits do not depend on it.
template <class T>
Matrix<T> kernel_matrix(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel,
                        int n_threads = 0, const Callback& callback = {});

// The same, written into `out` (n x m, preallocated; partly written if `callback` throws).
template <class T>
void kernel_matrix_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel,
                        MatrixRef<T> out, int n_threads = 0, const Callback& callback = {});

// The Gaussian kernel exp(-||x - z||^2 / (2 sigma^2)), sigma finite and > 0: kernel_matrix
// of KernelSpec(sigma).
template <class T>
Matrix<T> gaussian_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          int n_threads = 0, const Callback& callback = {});

template <class T>
void gaussian_kernel_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          MatrixRef<T> out, int n_threads = 0, const Callback& callback = {});

// k(X, centers) @ coef without storing the n x m kernel: rows of X are streamed in
// blocks. coef is m x q; the result n x q.
template <class T>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers,
                         const MatrixCRef<T>& coef, const KernelSpec& kernel, int n_threads = 0,
                         const Callback& callback = {});

}  // namespace nytro
