// The steps NYTRO and NKRLS share: kernel of the centres, the factor, the centres the
// factor keeps, and the hold-out set (built once the solver's own memory is known).
#pragma once

#include "fit_factor.hpp"
#include "nytro/nystrom.hpp"
#include "validation.hpp"

#include <memory>
#include <optional>

namespace nytro::detail {

template <class T>
struct NystromSetup {
    FitFactor<T> factor;
    Matrix<T> used;                               // the centres in factor.support
    std::unique_ptr<Validation<T>> validation;    // null without a hold-out set
    std::optional<bool> kernel_first;             // the normal equations' route, once decided
    const Vector<T>* row_scale = nullptr;         // sample weights' row scales of K_nm (null: none)
};

// nystrom_factor without its input checks, for a K_mm computed here (square, finite,
// symmetric), which it overwrites instead of copying; the triangular factors are kept
// as U (FitFactor).
template <class T>
FitFactor<T> factor_of_kernel(Matrix<T>&& K_mm, const FactorOptions& options, int n_threads,
                              const Callback& callback = {});

template <class T>
NystromSetup<T> prepare_nystrom(const MatrixCRef<T>& centers, double sigma, const FactorOptions& factor, int threads,
                                const Callback& callback);

// The hold-out set (null without one), its kernel stored if it fits what is available
// once `reserved_bytes` more are allocated by the solver; with `defer`, stored only once
// recomputing it has cost about its first touch (Validation).
template <class T>
std::unique_ptr<Validation<T>> make_validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                                               const Matrix<T>& centers, double sigma, int threads,
                                               bool low_precision, double reserved_bytes, bool defer = false);

// Coefficients over the support rows, scattered back to all m centres (0 elsewhere).
template <class T>
Matrix<T> scatter_rows(const Matrix<T>& coef, const std::vector<Index>& support, Index m);

}  // namespace nytro::detail
