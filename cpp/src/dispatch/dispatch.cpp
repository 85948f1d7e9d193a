// The public entry points of a dispatching build: each calls the same function of the
// variant isa.cpp selected (dispatch_table.hpp). The definitions themselves are compiled
// once per variant; nothing here computes.
#include "dispatch/dispatch_table.hpp"

#include <type_traits>

namespace nytro {
namespace {

using detail::api;

// The float or the double entry of a pair.
template <class T, class F, class D>
auto pick(F f, D d) {
    if constexpr (std::is_same_v<T, float>)
        return f;
    else
        return d;
}
#define NYTRO_ENTRY(T, name) pick<T>(api().name##_f, api().name##_d)

// The (float, float), (double, double) or (double, float) entry.
template <class T, class S, class FF, class DD, class DF>
auto pick_storage(FF ff, DD dd, DF df) {
    if constexpr (std::is_same_v<T, float>)
        return ff;
    else if constexpr (std::is_same_v<S, double>)
        return dd;
    else
        return df;
}
#define NYTRO_STORAGE_ENTRY(T, S, name) pick_storage<T, S>(api().name##_ff, api().name##_dd, api().name##_df)

}  // namespace

template <class T>
Matrix<T> gaussian_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma, int n_threads,
                          const Callback& callback) {
    return NYTRO_ENTRY(T, gaussian_kernel)(X, Z, sigma, n_threads, callback);
}

template <class T>
Matrix<T> kernel_matrix(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, int n_threads,
                        const Callback& callback) {
    return NYTRO_ENTRY(T, kernel_matrix)(X, Z, kernel, n_threads, callback);
}

template <class T>
void kernel_matrix_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, const KernelSpec& kernel, MatrixRef<T> out,
                        int n_threads, const Callback& callback) {
    NYTRO_ENTRY(T, kernel_matrix_into)(X, Z, kernel, out, n_threads, callback);
}

void check_kernel(const KernelSpec& kernel, Index features) { api().check_kernel(kernel, features); }
KernelType parse_kernel_type(const std::string& value) { return api().parse_kernel_type(value); }

template <class T>
void gaussian_kernel_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma, MatrixRef<T> out,
                          int n_threads, const Callback& callback) {
    NYTRO_ENTRY(T, gaussian_kernel_into)(X, Z, sigma, out, n_threads, callback);
}

template <class T>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers, const MatrixCRef<T>& coef,
                         const KernelSpec& kernel, int n_threads, const Callback& callback) {
    return NYTRO_ENTRY(T, kernel_predict)(X, centers, coef, kernel, n_threads, callback);
}

template <class T>
NormalEquationsResult<T> normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                                          const NystromFactor<T>* factor, const KernelSpec& kernel,
                                          const Vector<T>& row_scale, const NormalEquationsOptions& options) {
    return NYTRO_ENTRY(T, normal_equations)(X, Y, centers, factor, kernel, row_scale, options);
}

template <class T, class S>
Matrix<T> block_normal_product(const MatrixCRef<S>& K, const MatrixCRef<T>& B, int n_threads) {
    return NYTRO_STORAGE_ENTRY(T, S, block_normal_product)(K, B, n_threads);
}

template <class T>
NystromFactor<T> nystrom_factor(const MatrixCRef<T>& K_mm, const FactorOptions& options, int n_threads,
                                const Callback& callback) {
    return NYTRO_ENTRY(T, nystrom_factor)(K_mm, options, n_threads, callback);
}

template <class T>
Matrix<T> NystromFactor<T>::dense(Index m) const {
    return (this->*NYTRO_ENTRY(T, factor_dense))(m);
}

template <class T>
PathResult<T> operator_path(const OperatorProblem<T>& problem, const IterativeOptions& options) {
    return NYTRO_ENTRY(T, operator_path)(problem, options);
}

template <class T>
PathLength expected_path_length(const IterativeOptions& options, Index k, bool validated) {
    return NYTRO_ENTRY(T, expected_path_length)(options, k, validated);
}

template <class T>
PathResult<T> nytro_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                         const KernelSpec& kernel, const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                         const NytroOptions& options) {
    return NYTRO_ENTRY(T, nytro_path)(X, Y, centers, kernel, X_val, Y_val, options);
}

template <class T>
PathResult<T> landweber_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                             const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                             const IterativeOptions& options) {
    return NYTRO_ENTRY(T, landweber_path)(X, Y, kernel, X_val, Y_val, options);
}

template <class T>
TikhonovResult<T> nkrls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                             const KernelSpec& kernel, const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                             const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    return NYTRO_ENTRY(T, nkrls_path)(X, Y, centers, kernel, lambdas, X_val, Y_val, options);
}

template <class T>
TikhonovResult<T> krls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                            const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                            const MatrixCRef<T>& Y_val, const TikhonovOptions& options) {
    return NYTRO_ENTRY(T, krls_path)(X, Y, kernel, lambdas, X_val, Y_val, options);
}

template <class T>
Matrix<T> kols(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel, double rcond, int n_threads,
               const Callback& callback, const std::vector<double>& sample_weights) {
    return NYTRO_ENTRY(T, kols)(X, Y, kernel, rcond, n_threads, callback, sample_weights);
}

template <class T>
bool cholesky_lower_in_place(Matrix<T>& A) {
    return NYTRO_ENTRY(T, cholesky_lower_in_place)(A);
}

template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V) {
    NYTRO_ENTRY(T, symmetric_eigen)(A, w, V);
}

template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V, const Callback& callback) {
    NYTRO_ENTRY(T, symmetric_eigen_interruptible)(A, w, V, callback);
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range(const MatrixCRef<T>& K, double rank_tol,
                                                                   const Callback& callback) {
    return NYTRO_ENTRY(T, pivoted_qr_range)(K, rank_tol, callback);
}

template <class T, class S>
double fused_pass_seconds(const Matrix<S>& K, const MatrixCRef<T>& a, const MatrixCRef<T>& y, int n_threads,
                          int repeats) {
    return NYTRO_STORAGE_ENTRY(T, S, fused_pass_seconds)(K, a, y, n_threads, repeats);
}

template <class T, class S>
double symmetric_pass_seconds(const Matrix<S>& H, const MatrixCRef<T>& b, int n_threads, int repeats) {
    return NYTRO_STORAGE_ENTRY(T, S, symmetric_pass_seconds)(H, b, n_threads, repeats);
}

template <class T>
double factor_seconds(const MatrixCRef<T>& K_mm, int n_threads, int repeats) {
    return NYTRO_ENTRY(T, factor_seconds)(K_mm, n_threads, repeats);
}

template <class T>
double rank_update_seconds(const MatrixCRef<T>& B, int n_threads, int repeats) {
    return NYTRO_ENTRY(T, rank_update_seconds)(B, n_threads, repeats);
}

// The LAPACK routines are stored into every variant this machine runs, so that a
// variant selected later (select_isa) has them too.
void set_lapack_potrf(dpotrf_fn dpotrf, spotrf_fn spotrf) {
    for (const auto* table : detail::runnable_tables()) table->set_lapack_potrf(dpotrf, spotrf);
}
bool has_lapack_potrf() { return api().has_lapack_potrf(); }

void set_lapack_syevd(dsyevd_fn dsyevd, ssyevd_fn ssyevd) {
    for (const auto* table : detail::runnable_tables()) table->set_lapack_syevd(dsyevd, ssyevd);
}
bool has_lapack_syevd() { return api().has_lapack_syevd(); }

void set_lapack_qr(dgeqp3_fn dgeqp3, sgeqp3_fn sgeqp3, dorgqr_fn dorgqr, sorgqr_fn sorgqr) {
    for (const auto* table : detail::runnable_tables()) table->set_lapack_qr(dgeqp3, sgeqp3, dorgqr, sorgqr);
}
bool has_lapack_qr() { return api().has_lapack_qr(); }

int default_threads() { return api().default_threads(); }
int cgroup_cpu_limit() { return api().cgroup_cpu_limit(); }

// Each variant measures its own rates (its own kernels); a pin applies to every variant.
MachineRates machine_rates(int n_threads, bool refresh) { return api().machine_rates(n_threads, refresh); }
void set_machine_rates(const MachineRates& rates) {
    for (const auto* table : detail::runnable_tables()) table->set_machine_rates(rates);
}

#define NYTRO_INSTANTIATE(T)                                                                                      \
    template Matrix<T> gaussian_kernel<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, int,              \
                                          const Callback&);                                                     \
    template void gaussian_kernel_into<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, double, MatrixRef<T>, int, \
                                          const Callback&);                                                     \
    template Matrix<T> kernel_matrix<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&, int,     \
                                        const Callback&);                                                       \
    template void kernel_matrix_into<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&,          \
                                        MatrixRef<T>, int, const Callback&);                                    \
    template Matrix<T> kernel_predict<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const MatrixCRef<T>&,      \
                                         const KernelSpec&, int, const Callback&);                                        \
    template NormalEquationsResult<T> normal_equations<T>(const MatrixCRef<T>&, const MatrixCRef<T>&,             \
                                                          const MatrixCRef<T>&, const NystromFactor<T>*,           \
                                                          const KernelSpec&, const Vector<T>&,                     \
                                                          const NormalEquationsOptions&);                          \
    template NystromFactor<T> nystrom_factor<T>(const MatrixCRef<T>&, const FactorOptions&, int, const Callback&); \
    template Matrix<T> NystromFactor<T>::dense(Index) const;                                                    \
    template PathResult<T> nytro_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const MatrixCRef<T>&,     \
                                         const KernelSpec&, const MatrixCRef<T>&, const MatrixCRef<T>&,                  \
                                         const NytroOptions&);                                                 \
    template PathResult<T> operator_path<T>(const OperatorProblem<T>&, const IterativeOptions&);               \
    template PathLength expected_path_length<T>(const IterativeOptions&, Index, bool);                         \
    template PathResult<T> landweber_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&,               \
                                             const MatrixCRef<T>&, const MatrixCRef<T>&,                      \
                                             const IterativeOptions&);                                         \
    template TikhonovResult<T> nkrls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const MatrixCRef<T>&, \
                                             const KernelSpec&, const std::vector<double>&, const MatrixCRef<T>&,        \
                                             const MatrixCRef<T>&, const TikhonovOptions&);                    \
    template TikhonovResult<T> krls_path<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&,                \
                                            const std::vector<double>&, const MatrixCRef<T>&,                 \
                                            const MatrixCRef<T>&, const TikhonovOptions&);                     \
    template Matrix<T> kols<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, const KernelSpec&, double, int, const Callback&, \
                               const std::vector<double>&);                                                     \
    template bool cholesky_lower_in_place<T>(Matrix<T>&);                                                       \
    template void symmetric_eigen<T>(const MatrixCRef<T>&, Vector<T>&, Matrix<T>&);                             \
    template void symmetric_eigen<T>(const MatrixCRef<T>&, Vector<T>&, Matrix<T>&, const Callback&);            \
    template Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range<T>(const MatrixCRef<T>&, double,  \
                                                                                  const Callback&);           \
    template double factor_seconds<T>(const MatrixCRef<T>&, int, int);                                          \
    template double rank_update_seconds<T>(const MatrixCRef<T>&, int, int);                                     \
    template double fused_pass_seconds<T, T>(const Matrix<T>&, const MatrixCRef<T>&, const MatrixCRef<T>&, int, \
                                             int);                                                             \
    template double symmetric_pass_seconds<T, T>(const Matrix<T>&, const MatrixCRef<T>&, int, int);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)
template double fused_pass_seconds<double, float>(const Matrix<float>&, const MatrixCRef<double>&,
                                                  const MatrixCRef<double>&, int, int);
template double symmetric_pass_seconds<double, float>(const Matrix<float>&, const MatrixCRef<double>&, int, int);
template Matrix<float> block_normal_product<float, float>(const MatrixCRef<float>&, const MatrixCRef<float>&, int);
template Matrix<double> block_normal_product<double, double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                                             int);
template Matrix<double> block_normal_product<double, float>(const MatrixCRef<float>&, const MatrixCRef<double>&,
                                                            int);

}  // namespace nytro
