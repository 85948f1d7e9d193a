// Fit NYTRO on a small synthetic regression problem and report the early-stopping
// iteration chosen on a hold-out set, with the built-in Gaussian and with a kernel of
// one's own.
#include <nytro/nytro.hpp>

#include <cmath>
#include <cstdio>
#include <random>

// A kernel of one's own (nytro/user_kernel.hpp): the rational quadratic
// (1 + |x - z|^2 / (2 a l^2))^-a, which nytro does not build in, as a type with a call
// operator that fills a block of the kernel matrix.
struct RationalQuadratic {
    double length = 0.7, alpha = 2.0;
    void operator()(const nytro::MatrixCRef<double>& X, const nytro::MatrixCRef<double>& Z,
                    nytro::MatrixRef<double> out) const {
        for (nytro::Index i = 0; i < X.rows(); ++i)
            for (nytro::Index j = 0; j < Z.rows(); ++j)
                out(i, j) = std::pow(1.0 + (X.row(i) - Z.row(j)).squaredNorm() / (2.0 * alpha * length * length),
                                     -alpha);
    }
};

int main() {
    using Matrix = nytro::Matrix<double>;
    const nytro::Index n_train = 2000, n_val = 500, n_test = 1000, d = 3, m = 200;
    const double sigma = 0.7, noise = 0.3;

    // y = sin(x0) + cos(x1 x2) / 2 + noise, x standard normal.
    std::mt19937_64 rng(2016);
    std::normal_distribution<double> normal(0.0, 1.0);
    auto draw = [&](nytro::Index n, Matrix& X, Matrix& y) {
        X.resize(n, d);
        y.resize(n, 1);
        for (nytro::Index i = 0; i < n; ++i) {
            for (nytro::Index j = 0; j < d; ++j) X(i, j) = normal(rng);
            y(i, 0) = std::sin(X(i, 0)) + 0.5 * std::cos(X(i, 1) * X(i, 2)) + noise * normal(rng);
        }
    };
    Matrix X, y, X_val, y_val, X_test, y_test;
    draw(n_train, X, y);
    draw(n_val, X_val, y_val);
    draw(n_test, X_test, y_test);

    // m Nystrom centres drawn uniformly from the training rows.
    const auto rows = nytro::sample_centers(n_train, m, /*seed=*/0);
    Matrix centers(m, d);
    for (nytro::Index i = 0; i < m; ++i) centers.row(i) = X.row(rows[static_cast<std::size_t>(i)]);

    nytro::NytroOptions options;  // step 1/lambda_max, t picked as the validation minimum
    options.max_iter = 1000;
    try {
        const auto fit = nytro::nytro_path<double>(X, y, centers, sigma, X_val, y_val, options);
        const Matrix prediction = nytro::kernel_predict<double>(X_test, centers, fit.coef, sigma);
        const double test_rmse = std::sqrt((prediction - y_test).squaredNorm() / double(n_test));
        std::printf("n=%ld m=%ld rank=%ld solver=%s step=%.4g\n", long(n_train), long(m), long(fit.rank),
                    nytro::to_string(fit.solver), fit.step_size);
        std::printf("selected t = %ld of %ld\n", long(fit.n_iter), long(fit.iterations_run));
        std::printf("validation RMSE = %.4f (%.4f after all %ld iterations)\n",
                    fit.validation_rmse[static_cast<std::size_t>(fit.n_iter - 1)], fit.validation_rmse.back(),
                    long(fit.iterations_run));
        std::printf("test RMSE = %.4f (noise level %.2f)\n", test_rmse, noise);

        const RationalQuadratic kernel;
        const auto own = nytro::user_kernel::nytro_path<double>(X, y, centers, kernel, X_val, y_val, options);
        const Matrix own_prediction = nytro::user_kernel::kernel_predict<double>(X_test, centers, own.coef, kernel);
        const double own_rmse = std::sqrt((own_prediction - y_test).squaredNorm() / double(n_test));
        std::printf("rational quadratic kernel (user-defined): selected t = %ld, test RMSE = %.4f\n",
                    long(own.n_iter), own_rmse);
        return test_rmse < 2 * noise && own_rmse < 2 * noise ? 0 : 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "nytro failed: %s\n", error.what());
        return 2;
    }
}
