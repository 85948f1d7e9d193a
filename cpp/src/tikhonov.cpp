// Tikhonov regularisation along a lambda grid: NKRLS (paper, eq. 12), KRLS (eq. 6), and
// KOLS (eq. 3) as the pseudo-inverse limit.
#include "dense.hpp"
#include "input_checks.hpp"
#include "gram.hpp"
#include "nystrom_setup.hpp"
#include "nytro/cholesky.hpp"
#include "nytro/eigen_solver.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "nytro/solvers.hpp"
#include "parallel.hpp"

#include <cmath>
#include <limits>

namespace nytro {
namespace {

// Solutions (H + shift I)^-1 C for every shift = lambda n, side by side (k x q*L).
// eigh: one eigendecomposition H = V diag(s) V^T serves every lambda exactly, with s
// clipped at 0 so the tiny end of the grid keeps pseudo-inverse semantics.
// cholesky: the paper's form, one factorisation per lambda; a lambda whose shifted
// matrix is numerically singular falls back to the eigendecomposition.
template <class T>
class ShiftedSolves {
public:
    ShiftedSolves(const Matrix<T>& H, const Matrix<T>& C, TikhonovSolver solver)
        : H_(H), C_(C), solver_(solver) {}

    Matrix<T> solve_all(const std::vector<double>& shifts, const Callback& callback) {
        const Index k = H_.rows(), q = C_.cols(), L = static_cast<Index>(shifts.size());
        Matrix<T> out(k, q * L), M;  // M: H + shift I, factored in place; one buffer for all shifts
        for (Index l = 0; l < L; ++l) {
            auto block = out.middleCols(l * q, q);
            if (solver_ == TikhonovSolver::cholesky) {
                M = H_;
                M.diagonal().array() += static_cast<T>(shifts[l]);
                if (cholesky_lower_in_place<T>(M)) {
                    const Matrix<T>& factor = M;  // H + shift I = L L^T, L in the lower triangle
                    block = C_;
                    factor.template triangularView<Eigen::Lower>().solveInPlace(block);
                    factor.template triangularView<Eigen::Lower>().transpose().solveInPlace(block);
                    if (block.allFinite()) {
                        if (callback) callback({"lambda", l + 1, L});
                        continue;
                    }
                }
            }
            decompose();
            Matrix<T> scaled = projected_;
            for (Index i = 0; i < k; ++i) scaled.row(i) /= static_cast<T>(values_[i] + shifts[l]);
            block.noalias() = vectors_ * scaled;
            if (callback) callback({"lambda", l + 1, L});
        }
        return out;
    }

private:
    void decompose() {
        if (decomposed_) return;
        Vector<T> w;
        symmetric_eigen<T>(H_, w, vectors_);
        values_ = w.template cast<double>().cwiseMax(0.0);
        projected_ = vectors_.transpose() * C_;
        decomposed_ = true;
    }

    const Matrix<T>& H_;
    const Matrix<T>& C_;
    TikhonovSolver solver_;
    bool decomposed_ = false;
    Eigen::VectorXd values_;
    Matrix<T> vectors_, projected_;
};

std::vector<double> scaled(const std::vector<double>& lambdas, Index n) {
    std::vector<double> shifts(lambdas);
    for (double& s : shifts) s *= double(n);
    return shifts;
}

// Picks the lambda with the smallest validation RMSE (the only one without hold-out).
template <class T>
void select(const Matrix<T>& alphas, Index q, const detail::Validation<T>* validation, int threads,
            TikhonovResult<T>& result) {
    result.selected = -1;
    if (validation) {
        validation->rmse(alphas, q, result.validation_rmse, threads);
        for (std::size_t l = 0; l < result.validation_rmse.size(); ++l) {
            const double r = result.validation_rmse[l];
            if (std::isfinite(r) && (result.selected < 0 || r < result.validation_rmse[result.selected]))
                result.selected = Index(l);
        }
    } else {
        result.selected = 0;
    }
    if (result.selected < 0 || !alphas.middleCols(result.selected * q, q).allFinite())
        throw std::runtime_error("the solution is not finite for any lambda of the grid (overflow)");
    result.coef = alphas.middleCols(result.selected * q, q);
}

}  // namespace

template <class T>
TikhonovResult<T> nkrls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                             double sigma, const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                             const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_centers<T>(centers, X);
    detail::check_lambdas(lambdas, X_val.rows() > 0);
    const int threads = detail::resolve_threads(options.n_threads);
    const Index q = Y.cols();
    require(options.storage != Storage::float16,
            "storage='float16' is for NYTRO's stored K_nm; NKRLS takes None or 'float32'");
    const bool low = options.storage == Storage::float32;
    auto setup = detail::prepare_nystrom<T>(centers, sigma, options.factor, threads, options.callback);
    const double k = double(setup.factor.rank());
    setup.validation = detail::make_validation<T>(X_val, Y_val, setup.used, sigma, threads, low,
                                                  4.0 * k * k * sizeof(T));  // H, its eigenvectors, solves
    if (setup.validation) setup.validation->set_weights(options.validation_weights);
    const auto normal =
        detail::stream_normal_equations<T>(X, Y, setup.used, setup.factor.formed(threads), sigma, threads,
                                           options.callback, low);
    ShiftedSolves<T> solves(normal.H, normal.C, options.solver);
    const Matrix<T> betas = solves.solve_all(scaled(lambdas, X.rows()), options.callback);
    Matrix<T> alphas(setup.used.rows(), betas.cols());
    setup.factor.lift(betas, alphas, threads);

    TikhonovResult<T> result;
    result.rank = setup.factor.rank();
    select<T>(alphas, q, setup.validation.get(), threads, result);
    result.coef = detail::scatter_rows<T>(result.coef, setup.factor.support(), centers.rows());
    return result;
}

template <class T>
TikhonovResult<T> krls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, double sigma,
                            const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                            const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_lambdas(lambdas, X_val.rows() > 0);
    const int threads = detail::resolve_threads(options.n_threads);
    const Matrix<T> K = gaussian_kernel<T>(X, X, sigma, threads);
    const Matrix<T> Yc = Y;
    ShiftedSolves<T> solves(K, Yc, options.solver);
    const Matrix<T> alphas = solves.solve_all(scaled(lambdas, X.rows()), options.callback);
    const Matrix<T> centers = X;
    const auto validation = detail::make_validation<T>(X_val, Y_val, centers, sigma, threads, false, 0.0);
    if (validation) validation->set_weights(options.validation_weights);
    TikhonovResult<T> result;
    result.rank = X.rows();
    select<T>(alphas, Y.cols(), validation.get(), threads, result);
    return result;
}

template <class T>
Matrix<T> kols(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, double sigma, double rcond, int n_threads) {
    const Matrix<T> none(0, X.cols()), none_y(0, Y.cols());
    detail::check_training_data<T>(X, Y, none, none_y);
    const Index n = X.rows();
    const double cut_ratio = rcond < 0 ? double(n) * std::numeric_limits<T>::epsilon() : rcond;
    require(cut_ratio < 1, "rcond must be < 1, got " + format_number(rcond));
    const Matrix<T> K = gaussian_kernel<T>(X, X, sigma, detail::resolve_threads(n_threads));
    Vector<T> w;
    Matrix<T> V;
    symmetric_eigen<T>(K, w, V);
    const double cut = cut_ratio * double(w.cwiseAbs().maxCoeff());
    Matrix<T> projected = V.transpose() * Y;
    for (Index i = 0; i < n; ++i) {
        if (double(w[i]) > cut) projected.row(i) /= w[i];
        else projected.row(i).setZero();
    }
    Matrix<T> coef = V * projected;
    if (!coef.allFinite()) throw std::runtime_error("pinv(K) y is not finite (overflow)");
    return coef;
}

#define NYTRO_INSTANTIATE(T)                                                                                 \
    template TikhonovResult<T> nkrls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&,                    \
                                             const MatrixCRef<T>&, double, const std::vector<double>&,       \
                                             const MatrixCRef<T>&, const MatrixCRef<T>&,                     \
                                             const TikhonovOptions&);                                        \
    template TikhonovResult<T> krls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double,             \
                                            const std::vector<double>&, const MatrixCRef<T>&,                \
                                            const MatrixCRef<T>&, const TikhonovOptions&);                   \
    template Matrix<T> kols<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, double, int);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)

}  // namespace nytro
