// Problems and dense reference computations shared by the core tests. The references
// are written for clarity, always in double, with Eigen's own solvers.
#pragma once

#include <nytro/nytro.hpp>

#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace support {

using nytro::Index;
using MatrixD = nytro::Matrix<double>;
using VectorD = Eigen::VectorXd;
template <class T>
using Matrix = nytro::Matrix<T>;

// n x d standard normal entries, reproducible from `seed`.
inline MatrixD normal(Index n, Index d, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::normal_distribution<double> draw(0.0, 1.0);
    MatrixD X(n, d);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < d; ++j) X(i, j) = draw(engine);
    return X;
}

// A smooth target with noise: q columns.
inline MatrixD target(const MatrixD& X, Index q, double noise, std::uint64_t seed) {
    const MatrixD eps = normal(X.rows(), q, seed);
    MatrixD Y(X.rows(), q);
    for (Index i = 0; i < X.rows(); ++i) {
        const double s = X.row(i).sum() / std::sqrt(double(X.cols()));
        for (Index j = 0; j < q; ++j)
            Y(i, j) = (j == 0 ? std::sin(s) : std::cos(X(i, 0)) * X(i, (j + 1) % X.cols())) + noise * eps(i, j);
    }
    return Y;
}

// A regression problem in the style of the Python tests' conftest: standard normal
// features in 4 dimensions and sigma = 1.5 keep cond(K_mm) moderate.
struct Problem {
    MatrixD X, Y, X_val, Y_val, centers;
    double sigma = 1.5;

    template <class T>
    Matrix<T> as(const MatrixD& A) const { return A.cast<T>(); }
};

inline Problem make_problem(Index n = 200, Index d = 4, Index m = 30, Index n_val = 80, Index q = 1,
                            std::uint64_t seed = 1) {
    Problem p;
    p.X = normal(n, d, seed);
    p.X_val = normal(n_val, d, seed + 100);
    p.Y = target(p.X, q, 0.1, seed + 200);
    p.Y_val = target(p.X_val, q, 0.1, seed + 300);
    const auto rows = nytro::sample_centers(n, m, seed + 400);
    p.centers.resize(m, d);
    for (Index i = 0; i < m; ++i) p.centers.row(i) = p.X.row(rows[std::size_t(i)]);
    return p;
}

// A validation path (one RMSE per iterate or lambda) as a 1 x t matrix, for CHECK_CLOSE.
inline MatrixD path_of(const std::vector<double>& rmse) {
    return Eigen::Map<const MatrixD>(rmse.data(), 1, Index(rmse.size()));
}

// k(x, z) entry by entry, straight from the definition.
inline MatrixD direct_kernel(const MatrixD& X, const MatrixD& Z, double sigma) {
    MatrixD K(X.rows(), Z.rows());
    for (Index i = 0; i < X.rows(); ++i)
        for (Index j = 0; j < Z.rows(); ++j) {
            double squared = 0;
            for (Index c = 0; c < X.cols(); ++c) squared += (X(i, c) - Z(j, c)) * (X(i, c) - Z(j, c));
            K(i, j) = std::exp(-squared / (2 * sigma * sigma));
        }
    return K;
}

// f(A) = V diag(f(w)) V^T for symmetric A.
template <class F>
MatrixD spectral(const MatrixD& A, F f) {
    Eigen::SelfAdjointEigenSolver<MatrixD> eig(A);
    VectorD w = eig.eigenvalues();
    for (Index i = 0; i < w.size(); ++i) w[i] = f(w[i]);
    return eig.eigenvectors() * w.asDiagonal() * eig.eigenvectors().transpose();
}

inline double largest_eigenvalue(const MatrixD& A) {
    return Eigen::SelfAdjointEigenSolver<MatrixD>(A, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff();
}

inline double condition_number(const MatrixD& A) {
    const VectorD w = Eigen::SelfAdjointEigenSolver<MatrixD>(A, Eigen::EigenvaluesOnly).eigenvalues();
    return w.maxCoeff() / w.minCoeff();
}

// The gradient-descent filter (1 - (1 - step s)^t) / s, accurate for tiny s. At the top
// of the spectrum a step of 1 / lambda_max estimated from below gives step s just above
// 1 (seen in a build for Haswell), where log1p(-step s) is NaN; there 1 - step s is at
// most 0 and the direct form has no cancellation.
inline double gd_filter(double s, double step, Index t) {
    if (s <= 0) return step * double(t);
    if (step * s >= 1) return (1 - std::pow(1 - step * s, double(t))) / s;
    return -std::expm1(double(t) * std::log1p(-step * s)) / s;
}

// Closed form of t steps of beta <- beta - step (H beta - C) from beta = 0, H = A^T A.
inline MatrixD gradient_descent(const MatrixD& H, const MatrixD& C, double step, Index t) {
    return spectral(H, [&](double s) { return gd_filter(std::max(s, 0.0), step, t); }) * C;
}

// Root mean squared entry.
inline double rmse(const MatrixD& residual) {
    return std::sqrt(residual.squaredNorm() / double(residual.size()));
}

}  // namespace support
