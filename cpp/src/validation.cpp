#include "validation.hpp"

#include "dense.hpp"

#include <algorithm>
#include <cmath>

namespace nytro::detail {

template <class T>
Validation<T> Validation<T>::explicit_kernel(Matrix<T> K_val, Matrix<T> Y_val) {
    Validation v;
    v.explicit_ = true;
    v.n_val_ = K_val.rows();
    v.K_or_G_ = std::move(K_val);
    v.Y_or_B_ = std::move(Y_val);
    return v;
}

template <class T>
Validation<T> Validation<T>::quadratic(Matrix<T> G_val, Matrix<T> B_val, double y_squared,
                                       Index n_val) {
    Validation v;
    v.explicit_ = false;
    v.K_or_G_ = std::move(G_val);
    v.Y_or_B_ = std::move(B_val);
    v.y_squared_ = y_squared;
    v.n_val_ = n_val;
    return v;
}

template <class T>
void Validation<T>::rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out,
                         int n_threads) const {
    const Index blocks = alphas.cols() / q;
    Matrix<T> product(K_or_G_.rows(), alphas.cols());
    multiply<T>(K_or_G_, alphas, product, n_threads);
    const double entries = double(n_val_) * double(q);
    for (Index j = 0; j < blocks; ++j) {
        double squared = 0;
        for (Index c = 0; c < q; ++c) {
            const Index col = j * q + c;
            if (explicit_) {
                squared += (product.col(col) - Y_or_B_.col(c)).template cast<double>().squaredNorm();
            } else {
                const auto a = alphas.col(col).template cast<double>();
                squared += a.dot(product.col(col).template cast<double>()) -
                           2.0 * a.dot(Y_or_B_.col(c).template cast<double>());
            }
        }
        if (!explicit_) squared = std::max(0.0, squared + y_squared_);
        out.push_back(std::sqrt(squared / entries));
    }
}

template class Validation<float>;
template class Validation<double>;

}  // namespace nytro::detail
