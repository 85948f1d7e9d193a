#include "factor/fit_factor.hpp"

#include "passes/dense.hpp"
#include "factor/triangular_solve.hpp"

namespace nytro::detail {

template <class T>
double FitFactor<T>::lift_bytes() const {
    const double entries = double(factor_.R.size());
    return (factor_.upper_triangular ? 0.5 : 1.0) * entries * sizeof(T);
}

template <class T>
const NystromFactor<T>& FitFactor<T>::formed(int n_threads, const Callback& callback) const {
    if (holds_U_) {
        invert_upper_triangular_in_place<T>(factor_.R, n_threads, inverse_interruption(callback));
        holds_U_ = false;
    }
    return factor_;
}

template <class T>
void FitFactor<T>::lift(const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) const {
    if (holds_U_) solve_upper<T>(factor_.R, B, out, n_threads);
    else multiply_left<T>(factor_.R, factor_.upper_triangular, B, out, n_threads);
}

template <class T>
void FitFactor<T>::lift_transposed(const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) const {
    if (holds_U_) solve_upper_transposed<T>(factor_.R, B, out, n_threads);
    else multiply_left_transposed<T>(factor_.R, factor_.upper_triangular, B, out, n_threads);
}

template class FitFactor<float>;
template class FitFactor<double>;

}  // namespace nytro::detail
