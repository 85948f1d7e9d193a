// The table of the library's public entry points, one per instruction-set variant of a
// dispatching build (NYTRO_DISPATCH, see cmake/NytroDispatch.cmake). Every source that
// computes is compiled once per variant (baseline x86-64, x86-64-v3, x86-64-v4), each
// variant partially linked into one object whose symbols are then made local, so the
// Eigen and standard-library code each variant instantiates never meets another's; each
// exports only its table. dispatch.cpp defines the public functions by calling through
// the table chosen at first use (isa.cpp).
#pragma once

#include "nytro/nytro.hpp"
#include "nytro/resources.hpp"

#include "bench/timing.hpp"

#include <vector>

namespace nytro::detail {

// symmetric_eigen is overloaded (with and without an interruption callback): these pick
// one overload's address by its exact type.
template <class T>
using EigenPlain = void (*)(const MatrixCRef<T>&, Vector<T>&, Matrix<T>&);
template <class T>
using EigenInterruptible = void (*)(const MatrixCRef<T>&, Vector<T>&, Matrix<T>&, const Callback&);
template <class T>
constexpr EigenPlain<T> eigen_plain(EigenPlain<T> f) { return f; }
template <class T>
constexpr EigenInterruptible<T> eigen_interruptible(EigenInterruptible<T> f) { return f; }

// X(member, address): every public function and member function whose definition lives
// in a dispatched source, with each instantiation the library provides.
#define NYTRO_DISPATCHED_API(X)                                                           \
    X(gaussian_kernel_f, &nytro::gaussian_kernel<float>)                                         \
    X(gaussian_kernel_d, &nytro::gaussian_kernel<double>)                                        \
    X(gaussian_kernel_into_f, &nytro::gaussian_kernel_into<float>)                               \
    X(gaussian_kernel_into_d, &nytro::gaussian_kernel_into<double>)                              \
    X(kernel_matrix_f, &nytro::kernel_matrix<float>)                                             \
    X(kernel_matrix_d, &nytro::kernel_matrix<double>)                                            \
    X(kernel_matrix_into_f, &nytro::kernel_matrix_into<float>)                                   \
    X(kernel_matrix_into_d, &nytro::kernel_matrix_into<double>)                                  \
    X(check_kernel, &nytro::check_kernel)                                                        \
    X(parse_kernel_type, &nytro::parse_kernel_type)                                              \
    X(kernel_predict_f, &nytro::kernel_predict<float>)                                           \
    X(kernel_predict_d, &nytro::kernel_predict<double>)                                          \
    X(normal_equations_f, &nytro::normal_equations<float>)                                       \
    X(normal_equations_d, &nytro::normal_equations<double>)                                      \
    X(block_normal_product_ff, (&nytro::block_normal_product<float, float>))                     \
    X(block_normal_product_dd, (&nytro::block_normal_product<double, double>))                   \
    X(block_normal_product_df, (&nytro::block_normal_product<double, float>))                    \
    X(nystrom_factor_f, &nytro::nystrom_factor<float>)                                           \
    X(nystrom_factor_d, &nytro::nystrom_factor<double>)                                          \
    X(factor_dense_f, &nytro::NystromFactor<float>::dense)                                       \
    X(factor_dense_d, &nytro::NystromFactor<double>::dense)                                      \
    X(nytro_path_f, &nytro::nytro_path<float>)                                                   \
    X(nytro_path_d, &nytro::nytro_path<double>)                                                  \
    X(operator_path_f, &nytro::operator_path<float>)                                             \
    X(operator_path_d, &nytro::operator_path<double>)                                            \
    X(expected_path_length_f, &nytro::expected_path_length<float>)                               \
    X(expected_path_length_d, &nytro::expected_path_length<double>)                              \
    X(landweber_path_f, &nytro::landweber_path<float>)                                           \
    X(landweber_path_d, &nytro::landweber_path<double>)                                          \
    X(nkrls_path_f, &nytro::nkrls_path<float>)                                                   \
    X(nkrls_path_d, &nytro::nkrls_path<double>)                                                  \
    X(krls_path_f, &nytro::krls_path<float>)                                                     \
    X(krls_path_d, &nytro::krls_path<double>)                                                    \
    X(kols_f, &nytro::kols<float>)                                                               \
    X(kols_d, &nytro::kols<double>)                                                              \
    X(cholesky_lower_in_place_f, &nytro::cholesky_lower_in_place<float>)                         \
    X(cholesky_lower_in_place_d, &nytro::cholesky_lower_in_place<double>)                        \
    X(symmetric_eigen_f, nytro::detail::eigen_plain<float>(&nytro::symmetric_eigen<float>))              \
    X(symmetric_eigen_d, nytro::detail::eigen_plain<double>(&nytro::symmetric_eigen<double>))            \
    X(symmetric_eigen_interruptible_f, nytro::detail::eigen_interruptible<float>(&nytro::symmetric_eigen<float>)) \
    X(symmetric_eigen_interruptible_d, nytro::detail::eigen_interruptible<double>(&nytro::symmetric_eigen<double>)) \
    X(pivoted_qr_range_f, &nytro::pivoted_qr_range<float>)                                       \
    X(pivoted_qr_range_d, &nytro::pivoted_qr_range<double>)                                      \
    X(fused_pass_seconds_ff, (&nytro::fused_pass_seconds<float, float>))                         \
    X(fused_pass_seconds_dd, (&nytro::fused_pass_seconds<double, double>))                       \
    X(fused_pass_seconds_df, (&nytro::fused_pass_seconds<double, float>))                        \
    X(symmetric_pass_seconds_ff, (&nytro::symmetric_pass_seconds<float, float>))                 \
    X(symmetric_pass_seconds_dd, (&nytro::symmetric_pass_seconds<double, double>))               \
    X(symmetric_pass_seconds_df, (&nytro::symmetric_pass_seconds<double, float>))                \
    X(factor_seconds_f, &nytro::factor_seconds<float>)                                           \
    X(factor_seconds_d, &nytro::factor_seconds<double>)                                          \
    X(rank_update_seconds_f, &nytro::rank_update_seconds<float>)                                 \
    X(rank_update_seconds_d, &nytro::rank_update_seconds<double>)                                \
    X(set_lapack_potrf, &nytro::set_lapack_potrf)                                                \
    X(has_lapack_potrf, &nytro::has_lapack_potrf)                                                \
    X(set_lapack_syevd, &nytro::set_lapack_syevd)                                                \
    X(has_lapack_syevd, &nytro::has_lapack_syevd)                                                \
    X(set_lapack_qr, &nytro::set_lapack_qr)                                                      \
    X(has_lapack_qr, &nytro::has_lapack_qr)                                                      \
    X(default_threads, &nytro::default_threads)                                                  \
    X(cgroup_cpu_limit, &nytro::cgroup_cpu_limit)                                                \
    X(machine_rates, &nytro::machine_rates)                                                      \
    X(set_machine_rates, &nytro::set_machine_rates)

struct ApiTable {
#define NYTRO_TABLE_MEMBER(member, address) decltype(address) member;
    NYTRO_DISPATCHED_API(NYTRO_TABLE_MEMBER)
#undef NYTRO_TABLE_MEMBER
};

// The selected variant's table (isa.cpp: chosen at the first call), and every table this
// machine can run (the LAPACK setters store into each, so a later select_isa keeps them).
const ApiTable& api();
std::vector<const ApiTable*> runnable_tables();

}  // namespace nytro::detail

// One per variant, the only symbols a variant's object exports (the rest are made local).
extern "C" {
const nytro::detail::ApiTable* nytro_api_table_baseline();
const nytro::detail::ApiTable* nytro_api_table_avx2();
const nytro::detail::ApiTable* nytro_api_table_avx512();
}
