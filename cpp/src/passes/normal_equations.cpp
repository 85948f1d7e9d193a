// The public entry to the Gram solver's streamed normal equations (passes/gram.hpp), for
// callers that hold the rows in blocks of their own.
#include "nytro/normal_equations.hpp"

#include "passes/gram.hpp"

#include <stdexcept>
#include <string>

namespace nytro {

namespace {

std::string shape(Index rows, Index cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

template <class T>
void check_arguments(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                     const NystromFactor<T>* factor, const KernelSpec& kernel, const Vector<T>& row_scale,
                     const NormalEquationsOptions& options) {
    if (Y.rows() != X.rows())
        throw std::invalid_argument("Y has " + std::to_string(Y.rows()) + " rows but X has " +
                                    std::to_string(X.rows()));
    if (centers.rows() < 1 || centers.cols() != X.cols())
        throw std::invalid_argument("centers must have at least one row and X's " + std::to_string(X.cols()) +
                                    " columns, got " + shape(centers.rows(), centers.cols()));
    if (row_scale.size() != 0 && row_scale.size() != X.rows())
        throw std::invalid_argument("row_scale must have one entry per row of X (" + std::to_string(X.rows()) +
                                    ") or none, got " + std::to_string(row_scale.size()));
    // X and centers are checked by the kernel; NaN in Y or row_scale would reach H or C silently.
    if (!Y.allFinite()) throw std::invalid_argument("Y contains NaN or infinity");
    if (!row_scale.allFinite()) throw std::invalid_argument("row_scale contains NaN or infinity");
    check_kernel(kernel, X.cols());
    if (!factor) return;
    if (Index(factor->support.size()) != factor->R.rows() || factor->R.cols() < 1)
        throw std::invalid_argument("factor: R has " + shape(factor->R.rows(), factor->R.cols()) + " for " +
                                    std::to_string(factor->support.size()) + " support centres");
    if (factor->upper_triangular && factor->R.rows() != factor->R.cols())
        throw std::invalid_argument("factor: an upper triangular R must be square, got " +
                                    shape(factor->R.rows(), factor->R.cols()));
    for (const Index i : factor->support)
        if (i < 0 || i >= centers.rows())
            throw std::invalid_argument("factor: support index " + std::to_string(i) + " out of range for " +
                                        std::to_string(centers.rows()) + " centres");
    if (options.kernel_first && !options.low_precision && !factor->upper_triangular)
        throw std::invalid_argument("kernel_first needs an upper triangular factor (R applied as a triangle)");
}

}  // namespace

template <class T>
NormalEquationsResult<T> normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                          const MatrixCRef<T>& centers, const NystromFactor<T>* factor,
                                          const KernelSpec& kernel, const Vector<T>& row_scale,
                                          const NormalEquationsOptions& options) {
    check_arguments<T>(X, Y, centers, factor, kernel, row_scale, options);
    const Vector<T>* scale = row_scale.size() ? &row_scale : nullptr;
    if (!factor) {
        // K^T K and K^T Y on the given centres: the kernel-first route's sums, no factor
        // (nor an identity in its place: m^3 flops of products with I).
        const Index m = centers.rows();
        if (X.rows() == 0) return {Matrix<T>::Zero(m, m), Matrix<T>::Zero(m, Y.cols())};
        auto normal = detail::stream_kernel_normal_equations<T>(X, Y, centers, kernel, options.n_threads,
                                                                options.callback, options.low_precision, scale);
        return {std::move(normal.H), std::move(normal.C)};
    }
    if (X.rows() == 0) {  // a block with no rows (a Dask chunk all held out) adds nothing
        const Index k = factor->rank();
        return {Matrix<T>::Zero(k, k), Matrix<T>::Zero(k, Y.cols())};
    }
    Matrix<T> used(Index(factor->support.size()), centers.cols());
    for (std::size_t i = 0; i < factor->support.size(); ++i) used.row(Index(i)) = centers.row(factor->support[i]);
    auto normal = detail::stream_normal_equations<T>(X, Y, used, *factor, kernel, options.n_threads, options.callback,
                                                     options.low_precision, true, options.kernel_first, scale);
    return {std::move(normal.H), std::move(normal.C)};
}

template NormalEquationsResult<float> normal_equations<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                              const MatrixCRef<float>&, const NystromFactor<float>*,
                                                              const KernelSpec&, const Vector<float>&,
                                                              const NormalEquationsOptions&);
template NormalEquationsResult<double> normal_equations<double>(const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const NystromFactor<double>*, const KernelSpec&,
                                                                const Vector<double>&,
                                                                const NormalEquationsOptions&);

}  // namespace nytro
