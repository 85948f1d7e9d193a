#include "validation.hpp"

#include "dense.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

#include <algorithm>
#include <cmath>

namespace nytro::detail {

template <class T>
Validation<T>::Validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val, const Matrix<T>& centers,
                          double sigma, int n_threads)
    : X_val_(X_val), Y_val_(Y_val), centers_(centers), sigma_(sigma) {
    const double bytes = double(X_val.rows()) * double(centers.rows()) * sizeof(T);
    if (bytes <= 0.25 * double(physical_memory_bytes()))
        K_val_ = gaussian_kernel<T>(X_val, centers, sigma, n_threads);
}

template <class T>
void Validation<T>::add_squared_errors(const MatrixCRef<T>& K_block, Index r0, const MatrixCRef<T>& alphas,
                                       Index q, std::vector<double>& squared, int n_threads) const {
    Matrix<T> predictions(K_block.rows(), alphas.cols());
    multiply<T>(K_block, alphas, predictions, n_threads);
    const auto targets = Y_val_.middleRows(r0, K_block.rows());
    for (Index col = 0; col < alphas.cols(); ++col)
        squared[col / q] += (predictions.col(col) - targets.col(col % q)).template cast<double>().squaredNorm();
}

template <class T>
void Validation<T>::rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int n_threads) const {
    const Index n_val = Y_val_.rows(), blocks = alphas.cols() / q;
    std::vector<double> squared(static_cast<std::size_t>(blocks), 0.0);
    if (stored()) {
        add_squared_errors(K_val_, 0, alphas, q, squared, n_threads);
    } else {
        const Index rows = std::max<Index>(256, (Index(1) << 22) / std::max<Index>(centers_.rows(), 1));
        Matrix<T> K(std::min(rows, n_val), centers_.rows());
        for (Index r0 = 0; r0 < n_val; r0 += rows) {
            const Index count = std::min(rows, n_val - r0);
            auto block = K.topRows(count);
            gaussian_kernel_into<T>(X_val_.middleRows(r0, count), centers_, sigma_, block, n_threads);
            add_squared_errors(block, r0, alphas, q, squared, n_threads);
        }
    }
    for (double s : squared) out.push_back(std::sqrt(s / (double(n_val) * double(q))));
}

template class Validation<float>;
template class Validation<double>;

}  // namespace nytro::detail
