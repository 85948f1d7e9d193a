// Argument checks shared by the solvers; each throws std::invalid_argument naming the
// argument and the offending value.
#pragma once

#include "nytro/types.hpp"

#include <vector>

namespace nytro::detail {

// The remedy the paths give when the kernel's products overflow float64 (a linear
// kernel on |x| ~ 1e120), whichever quantity shows it first.
inline constexpr const char* kOverflowAdvice =
    "an overflow (the features or targets are too large or too small for the kernel's products); rescale X "
    "or y";

// X (n x d, n >= 1), Y (n x q), X_val/Y_val (0 rows, or n_val x d / n_val x q); all finite.
template <class T>
void check_training_data(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& X_val,
                         const MatrixCRef<T>& Y_val);

// The largest |y| and |y_val| within [2^-kTargetExponent, 2^kTargetExponent] (or 0): the
// paths square the targets' errors (hold-out RMSE) and their Krylov methods the norms
// of A^T y, which over- or underflow float64 for targets of 2^+-600: the fits then came
// out silently wrong (every RMSE 0 or inf: t = 1, or cg's zero model) or as a false
// "diverged" error. nytro's Python API divides such targets by a power of two first.
template <class T>
void check_target_range(const MatrixCRef<T>& Y, const MatrixCRef<T>& Y_val);
constexpr int kTargetExponent = 400;

// 1 <= m <= n centres with X's feature count, all finite.
template <class T>
void check_centers(const MatrixCRef<T>& centers, const MatrixCRef<T>& X);

// sqrt(w_i n / sum(w)) for the n rows (empty for empty weights): the row scale that turns
// the weighted least-squares problem into the unweighted one (see
// TikhonovOptions::sample_weights). Throws std::invalid_argument naming `name` unless
// there is one weight per row, each finite and >= 0, and their sum is > 0.
template <class T>
Vector<T> row_scales(const std::vector<double>& weights, Index n, const char* name);

// `name` is an option's to_string (nytro/options.hpp): "?" for a value outside the enum's
// names, as a cast from an integer read elsewhere gives: the paths would run no step or
// select no iterate on such a value. Throws naming `argument`.
void check_named(const char* name, const char* argument, int value);

// Every lambda finite and > 0; exactly one when there is no hold-out set.
void check_lambdas(const std::vector<double>& lambdas, bool has_validation);

// The largest of ||a_i|| max(1, scale_i) over A's rows (scale: none where null); 0 for no rows.
template <class T>
double largest_row_norm(const MatrixCRef<T>& A, const Vector<T>* row_scale = nullptr);

// The linear kernel kept in float32 (`kept`, under storage='`storage`') of rows whose
// largest norm is `largest`: its entries x.c are at most largest^2, which must neither
// overflow float (with room for the sums of its products) nor fall below float's normal
// range, where the spacing of subnormals exceeds float's relative rounding of even the
// largest entries, and the smaller ones round to 0: a silently wrong (at the extreme,
// zero) kernel. A zero kernel (largest 0) is exact. Throws std::invalid_argument naming
// storage and the way out.
void check_float_linear_kernel(double largest, const char* storage, const std::string& kept);

}  // namespace nytro::detail
