// The steps NYTRO and NKRLS share: kernel of the centres, the factor, the centres the
// factor keeps, and the hold-out set (built once the solver's own memory is known).
#pragma once

#include "factor/fit_factor.hpp"
#include "nytro/kernel.hpp"
#include "nytro/nystrom.hpp"
#include "paths/validation.hpp"

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

template <class T>
NystromSetup<T> prepare_nystrom(const MatrixCRef<T>& centers, const KernelSpec& kernel, const FactorOptions& factor, int threads,
                                const Callback& callback);

// The hold-out set (null without one), its kernel stored if it fits what is available
// once `reserved_bytes` more are allocated by the solver; with `defer`, stored only once
// recomputing it has cost about its first touch (Validation, which calls `callback` while
// it forms the kernel).
template <class T>
std::unique_ptr<Validation<T>> make_validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                                               const Matrix<T>& centers, const KernelSpec& kernel, int threads,
                                               bool low_precision, double reserved_bytes, bool defer,
                                               const Callback& callback);

// Coefficients over the support rows, scattered back to all m centres (0 elsewhere).
template <class T>
Matrix<T> scatter_rows(const Matrix<T>& coef, const std::vector<Index>& support, Index m);

// The hold-out errors as `options` ask for them (any options struct with the three
// fields): per-column weights, the hold-out rows' sample weights, the metric. A null
// validation (no hold-out set) is left alone.
template <class T, class Options>
void configure_validation(Validation<T>* validation, const Options& options) {
    if (validation == nullptr) return;
    validation->set_weights(options.validation_weights);
    validation->set_row_weights(options.validation_sample_weights);
    validation->set_metric(options.metric);
}

}  // namespace nytro::detail
