#include "nytro/cholesky.hpp"
#include "nytro/lapack.hpp"

#include "factor/owned_cholesky.hpp"
#include "nytro/errors.hpp"
#include "runtime/abandonable.hpp"

#include <Eigen/Cholesky>

#include <atomic>
#include <limits>
#include <string>
#include <utility>

namespace nytro {
namespace {

std::atomic<dpotrf_fn> lapack_dpotrf{nullptr};
std::atomic<spotrf_fn> lapack_spotrf{nullptr};

// A row-major symmetric matrix read column-major is the same matrix, and the upper
// factor U (A = U^T U) that LAPACK leaves in the column-major upper triangle is, read
// row-major, L = U^T in the lower triangle: no copy either way.
template <class T, class Fn>
bool lapack_cholesky(Fn potrf, Matrix<T>& A, bool& positive_definite) {
    if (A.rows() > std::numeric_limits<int>::max() / 4) return false;  // 32-bit LAPACK integers
    int size = static_cast<int>(A.rows()), info = 0;
    char uplo = 'U';
    potrf(&uplo, &size, A.data(), &size, &info);
    if (info < 0) throw std::invalid_argument("LAPACK ?potrf rejected argument " + std::to_string(-info));
    positive_definite = info == 0;
    return true;
}

}  // namespace

void set_lapack_potrf(dpotrf_fn dpotrf, spotrf_fn spotrf) {
    lapack_dpotrf.store(dpotrf);
    lapack_spotrf.store(spotrf);
}

bool has_lapack_potrf() { return lapack_dpotrf.load() != nullptr; }

template <class T>
bool cholesky_lower_in_place(Matrix<T>& A) {
    require(A.rows() == A.cols(), "a Cholesky factorisation needs a square matrix");
    if (A.rows() == 0) return true;
    bool positive_definite = false;
    if constexpr (std::is_same_v<T, double>) {
        if (auto fn = lapack_dpotrf.load(); fn && lapack_cholesky<T>(fn, A, positive_definite))
            return positive_definite;
    } else {
        if (auto fn = lapack_spotrf.load(); fn && lapack_cholesky<T>(fn, A, positive_definite))
            return positive_definite;
    }
    Eigen::LLT<Eigen::Ref<Matrix<T>>> llt(A);  // in place: factors into A's lower triangle
    // Eigen's pivot test (<= 0) passes NaN, which LAPACK's refuses: a NaN in A reaches
    // L's diagonal at or after its row.
    return llt.info() == Eigen::Success && A.diagonal().allFinite();
}

template bool cholesky_lower_in_place<float>(Matrix<float>&);
template bool cholesky_lower_in_place<double>(Matrix<double>&);

template <class T>
bool detail::cholesky_lower_owned(Matrix<T>& A, const Callback& callback, const Progress& report) {
    if (!callback) return cholesky_lower_in_place<T>(A);
    // The worker takes A's storage (a move, no copy) and gives it back with the outcome.
    auto [positive_definite, factored] =
        detail::run_abandonable(callback, report, [owned = std::move(A)]() mutable {
            const bool ok = cholesky_lower_in_place<T>(owned);
            return std::make_pair(ok, std::move(owned));
        });
    A = std::move(factored);
    return positive_definite;
}

template bool detail::cholesky_lower_owned<float>(Matrix<float>&, const Callback&, const Progress&);
template bool detail::cholesky_lower_owned<double>(Matrix<double>&, const Callback&, const Progress&);

}  // namespace nytro
