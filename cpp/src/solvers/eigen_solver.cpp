#include "nytro/eigen_solver.hpp"
#include "nytro/lapack.hpp"

#include "runtime/abandonable.hpp"
#include "solvers/owned_eigen.hpp"
#include "nytro/errors.hpp"

#include <Eigen/Eigenvalues>

#include <atomic>
#include <limits>
#include <memory>
#include <utility>
#include <string>
#include <vector>

namespace nytro {
namespace {

std::atomic<dsyevd_fn> lapack_dsyevd{nullptr};
std::atomic<ssyevd_fn> lapack_ssyevd{nullptr};

template <class T, class Fn>
bool lapack_eigen(Fn syevd, const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V) {
    const Index n = A.rows();
    if (n > std::numeric_limits<int>::max() / 4) return false;  // 32-bit LAPACK integers
    // A symmetric row-major matrix is its own column-major transpose, so LAPACK can
    // read it as is; the eigenvectors come back column-major.
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor> a = A;
    int size = static_cast<int>(n), lwork = -1, liwork = -1, info = 0, iwork_query = 0;
    char jobz = 'V', uplo = 'L';
    T work_query = 0;
    w.resize(n);
    syevd(&jobz, &uplo, &size, a.data(), &size, w.data(), &work_query, &lwork, &iwork_query,
          &liwork, &info);
    if (info != 0) return false;
    lwork = static_cast<int>(work_query) + 1;
    liwork = iwork_query;
    std::vector<T> work(static_cast<std::size_t>(lwork));
    std::vector<int> iwork(static_cast<std::size_t>(liwork));
    syevd(&jobz, &uplo, &size, a.data(), &size, w.data(), work.data(), &lwork, iwork.data(),
          &liwork, &info);
    if (info < 0) throw std::invalid_argument("LAPACK ?syevd rejected argument " + std::to_string(-info));
    if (info > 0) throw std::runtime_error("the eigendecomposition did not converge (LAPACK ?syevd info=" +
                                           std::to_string(info) + ")");
    V = a;
    return true;
}

}  // namespace

void set_lapack_syevd(dsyevd_fn dsyevd, ssyevd_fn ssyevd) {
    lapack_dsyevd.store(dsyevd);
    lapack_ssyevd.store(ssyevd);
}

bool has_lapack_syevd() { return lapack_dsyevd.load() != nullptr; }

template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V) {
    require(A.rows() == A.cols(), "symmetric_eigen needs a square matrix");
    if (A.rows() == 0) {  // Eigen's solver does not take an empty matrix
        w.resize(0);
        V.resize(0, 0);
        return;
    }
    check_allocation(3.0 * double(A.rows()) * double(A.rows()) * sizeof(T),
                     "an eigendecomposition of a " + shape_text<T>(A.rows(), A.rows()) + " matrix");
    if constexpr (std::is_same_v<T, double>) {
        if (auto fn = lapack_dsyevd.load(); fn && lapack_eigen<T>(fn, A, w, V)) return;
    } else {
        if (auto fn = lapack_ssyevd.load(); fn && lapack_eigen<T>(fn, A, w, V)) return;
    }
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>> solver(
        A, Eigen::ComputeEigenvectors);
    if (solver.info() != Eigen::Success)
        throw std::runtime_error("the eigendecomposition did not converge");
    w = solver.eigenvalues();
    V = solver.eigenvectors();
}

template <class T>
void detail::symmetric_eigen_owned(std::shared_ptr<const Matrix<T>> A, Vector<T>& w, Matrix<T>& V,
                                   const Callback& callback) {
    if (!callback) return symmetric_eigen<T>(*A, w, V);
    auto result = detail::run_abandonable(callback, "eigendecomposition", [A] {
        std::pair<Vector<T>, Matrix<T>> out;
        symmetric_eigen<T>(*A, out.first, out.second);
        return out;
    });
    w = std::move(result.first);
    V = std::move(result.second);
}

template <class T>
void symmetric_eigen(const MatrixCRef<T>& A, Vector<T>& w, Matrix<T>& V, const Callback& callback) {
    if (!callback) return symmetric_eigen<T>(A, w, V);
    check_allocation(double(A.rows()) * double(A.rows()) * sizeof(T),
                     "a copy of a " + shape_text<T>(A.rows(), A.rows()) + " matrix to eigendecompose");
    detail::symmetric_eigen_owned<T>(std::make_shared<const Matrix<T>>(A), w, V, callback);
}

template void symmetric_eigen<float>(const MatrixCRef<float>&, Vector<float>&, Matrix<float>&);
template void symmetric_eigen<float>(const MatrixCRef<float>&, Vector<float>&, Matrix<float>&, const Callback&);
template void symmetric_eigen<double>(const MatrixCRef<double>&, Vector<double>&, Matrix<double>&,
                                      const Callback&);
template void symmetric_eigen<double>(const MatrixCRef<double>&, Vector<double>&, Matrix<double>&);
template void detail::symmetric_eigen_owned<float>(std::shared_ptr<const Matrix<float>>, Vector<float>&,
                                                   Matrix<float>&, const Callback&);
template void detail::symmetric_eigen_owned<double>(std::shared_ptr<const Matrix<double>>, Vector<double>&,
                                                    Matrix<double>&, const Callback&);

}  // namespace nytro
