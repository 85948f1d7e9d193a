#include "runtime/input_checks.hpp"

#include "nytro/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace nytro::detail {
namespace {

std::string shape(Index rows, Index cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

}  // namespace

template <class T>
void check_training_data(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& X_val,
                         const MatrixCRef<T>& Y_val) {
    require(X.rows() >= 1 && X.cols() >= 1, "X must have at least one row and one column, got " +
                                                shape(X.rows(), X.cols()));
    require(Y.rows() == X.rows() && Y.cols() >= 1,
            "y must have one row per row of X (" + std::to_string(X.rows()) + "), got " +
                shape(Y.rows(), Y.cols()));
    require(X.allFinite(), "X contains NaN or infinity");
    require(Y.allFinite(), "y contains NaN or infinity");
    if (X_val.rows() == 0 && Y_val.rows() == 0) return;
    require(X_val.cols() == X.cols(), "X_val has " + std::to_string(X_val.cols()) +
                                          " features but X has " + std::to_string(X.cols()));
    require(Y_val.rows() == X_val.rows() && Y_val.cols() == Y.cols(),
            "y_val must be " + shape(X_val.rows(), Y.cols()) + ", got " + shape(Y_val.rows(), Y_val.cols()));
    require(X_val.allFinite(), "X_val contains NaN or infinity");
    require(Y_val.allFinite(), "y_val contains NaN or infinity");
}

template <class T>
void check_target_range(const MatrixCRef<T>& Y, const MatrixCRef<T>& Y_val) {
    const double top = std::ldexp(1.0, kTargetExponent), bottom = std::ldexp(1.0, -kTargetExponent);
    auto check = [&](const MatrixCRef<T>& A, const char* name) {
        if (A.size() == 0) return;
        const double peak = double(A.cwiseAbs().maxCoeff());
        require(peak == 0 || (peak >= bottom && peak <= top),
                std::string(name) + "'s largest magnitude " + format_number(peak) + " is outside [2^-" +
                    std::to_string(kTargetExponent) + ", 2^" + std::to_string(kTargetExponent) +
                    "], where the squared errors of the path over- or underflow: divide y and y_val by a "
                    "power of two and multiply the coefficients by it");
    };
    check(Y, "y");
    check(Y_val, "y_val");
}

template <class T>
double largest_row_norm(const MatrixCRef<T>& A, const Vector<T>* row_scale) {
    double largest = 0.0;
    for (Index i = 0; i < A.rows(); ++i) {
        // stableNorm: the plain norm squares first, and overflows for rows near 1e154.
        const double norm = double(A.row(i).stableNorm());
        largest = std::max(largest, row_scale ? norm * std::max(1.0, double((*row_scale)[i])) : norm);
    }
    return largest;
}

void check_float_linear_kernel(double largest, const char* storage, const std::string& kept) {
    const double square = largest * largest;
    auto refuse = [&](const char* what, const std::string& bound) {
        throw std::invalid_argument("storage='" + std::string(storage) + "' keeps " + kept +
                                    " in float32, where the linear kernel of these features " + what +
                                    " (||x||^2 up to " + format_number(square) + bound +
                                    "): rescale X, or use storage=None");
    };
    if (!(square <= 0.5 * double(std::numeric_limits<float>::max()))) refuse("overflows", "");
    const double normal = 2.0 * double(std::numeric_limits<float>::min());
    if (largest > 0 && square < normal)
        refuse("underflows", ", below float's normal range from " + format_number(normal));
}

template <class T>
void check_centers(const MatrixCRef<T>& centers, const MatrixCRef<T>& X) {
    require(centers.rows() >= 1 && centers.rows() <= X.rows(),
            "the number of centres must be between 1 and n = " + std::to_string(X.rows()) + ", got " +
                std::to_string(centers.rows()));
    require(centers.cols() == X.cols(), "centres have " + std::to_string(centers.cols()) +
                                            " features but X has " + std::to_string(X.cols()));
    require(centers.allFinite(), "centres contain NaN or infinity");
}

void check_named(const char* name, const char* argument, int value) {
    require(std::string(name) != "?", std::string(argument) + " has no valid value (the enum holds " +
                                          std::to_string(value) + ")");
}

void check_lambdas(const std::vector<double>& lambdas, bool has_validation) {
    require(!lambdas.empty(), "lambdas must not be empty");
    for (double lambda : lambdas)
        require(std::isfinite(lambda) && lambda > 0,
                "every lambda must be a finite number > 0, got " + format_number(lambda));
    require(has_validation || lambdas.size() == 1,
            "without a hold-out set exactly one lambda is needed, got " + std::to_string(lambdas.size()) +
                " in lambdas: pass lambdas=[value], or a hold-out set to select among them");
}

template <class T>
Vector<T> row_scales(const std::vector<double>& weights, Index n, const char* name) {
    if (weights.empty()) return {};
    require(Index(weights.size()) == n, std::string(name) + " has " + std::to_string(weights.size()) +
                                            " entries but there are " + std::to_string(n) + " rows");
    double largest = 0.0;
    for (double w : weights) {
        require(std::isfinite(w) && w >= 0,
                std::string(name) + " must be finite and >= 0, got " + format_number(w));
        largest = std::max(largest, w);
    }
    require(largest > 0, std::string(name) + " must not be all zero");
    // Summed as w / max w, in [1, n]: n / sum(w) itself overflows to inf for subnormal
    // weights (1e-320 each: every row scaled by inf), and sum(w) for weights near the top
    // of the range (1e308 each), though only their ratios matter.
    double sum = 0.0;
    for (double w : weights) sum += w / largest;
    Vector<T> scales(n);
    const double unit = double(n) / sum;
    for (Index i = 0; i < n; ++i)
        scales[i] = static_cast<T>(std::sqrt(weights[std::size_t(i)] / largest * unit));
    return scales;
}

template Vector<float> row_scales<float>(const std::vector<double>&, Index, const char*);
template Vector<double> row_scales<double>(const std::vector<double>&, Index, const char*);
template void check_training_data<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                         const MatrixCRef<float>&, const MatrixCRef<float>&);
template void check_training_data<double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                          const MatrixCRef<double>&, const MatrixCRef<double>&);
template void check_target_range<float>(const MatrixCRef<float>&, const MatrixCRef<float>&);
template void check_target_range<double>(const MatrixCRef<double>&, const MatrixCRef<double>&);
template void check_centers<float>(const MatrixCRef<float>&, const MatrixCRef<float>&);
template double largest_row_norm<float>(const MatrixCRef<float>&, const Vector<float>*);
template double largest_row_norm<double>(const MatrixCRef<double>&, const Vector<double>*);
template void check_centers<double>(const MatrixCRef<double>&, const MatrixCRef<double>&);

}  // namespace nytro::detail
