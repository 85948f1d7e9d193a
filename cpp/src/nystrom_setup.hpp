// The steps NYTRO and NKRLS share: kernel of the centres, the factor, the centres the
// factor keeps, and the hold-out set.
#pragma once

#include "nytro/nystrom.hpp"
#include "validation.hpp"

#include <memory>

namespace nytro::detail {

template <class T>
struct NystromSetup {
    NystromFactor<T> factor;
    Matrix<T> used;                               // the centres in factor.support
    std::unique_ptr<Validation<T>> validation;    // null without a hold-out set
};

template <class T>
NystromSetup<T> prepare_nystrom(const MatrixCRef<T>& centers, double sigma, const FactorOptions& factor,
                                const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val, int threads,
                                const Callback& callback, bool low_precision);

// Coefficients over the support rows, scattered back to all m centres (0 elsewhere).
template <class T>
Matrix<T> scatter_rows(const Matrix<T>& coef, const std::vector<Index>& support, Index m);

}  // namespace nytro::detail
