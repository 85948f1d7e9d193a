#include "nytro/pivoted_qr.hpp"
#include "nytro/lapack.hpp"

#include "runtime/abandonable.hpp"
#include "nytro/errors.hpp"

#include <Eigen/QR>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace nytro {
namespace {

std::atomic<dgeqp3_fn> lapack_dgeqp3{nullptr};
std::atomic<sgeqp3_fn> lapack_sgeqp3{nullptr};
std::atomic<dorgqr_fn> lapack_dorgqr{nullptr};
std::atomic<sorgqr_fn> lapack_sorgqr{nullptr};

template <class T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
Index rank_of(const ColMatrix<T>& D, double rank_tol) {
    const double first = std::abs(double(D(0, 0)));
    Index rank = 0;
    for (Index i = 0; i < D.rows(); ++i)
        if (std::abs(double(D(i, i))) > rank_tol * first) ++rank;
    return rank;
}

void check_info(int info, const char* routine) {
    if (info < 0) throw std::invalid_argument(std::string("LAPACK ") + routine + " rejected argument " +
                                              std::to_string(-info));
}

// ?geqp3 then ?orgqr on a column-major copy of K (K symmetric: its row-major storage
// read column-major is K itself). Returns false where no LAPACK is registered or 32-bit
// LAPACK sizes do not fit.
template <class T, class Geqp3, class Orgqr>
bool lapack_range(Geqp3 geqp3, Orgqr orgqr, const MatrixCRef<T>& K, double rank_tol, ColMatrix<T>& Q) {
    if (!geqp3 || !orgqr || K.rows() > std::numeric_limits<int>::max() / 4) return false;
    int m = static_cast<int>(K.rows()), info = 0, lwork = -1;
    check_allocation(double(m) * double(m) * sizeof(T), "the pivoted QR of K_mm (" + shape_text<T>(m, m) + ")");
    ColMatrix<T> A = Eigen::Map<const ColMatrix<T>>(K.data(), m, m);
    std::vector<int> pivots(std::size_t(m), 0);  // 0: every column free to move
    std::vector<T> tau(static_cast<std::size_t>(m));
    T query = 0;
    geqp3(&m, &m, A.data(), &m, pivots.data(), tau.data(), &query, &lwork, &info);
    check_info(info, "?geqp3");
    lwork = static_cast<int>(query);
    std::vector<T> work(std::size_t(std::max(lwork, 1)));
    geqp3(&m, &m, A.data(), &m, pivots.data(), tau.data(), work.data(), &lwork, &info);
    check_info(info, "?geqp3");
    int rank = static_cast<int>(rank_of<T>(A, rank_tol));
    if (rank == 0) {
        Q.resize(m, 0);
        return true;
    }
    lwork = -1;
    orgqr(&m, &rank, &rank, A.data(), &m, tau.data(), &query, &lwork, &info);
    check_info(info, "?orgqr");
    lwork = static_cast<int>(query);
    work.assign(std::size_t(std::max(lwork, 1)), T(0));
    orgqr(&m, &rank, &rank, A.data(), &m, tau.data(), work.data(), &lwork, &info);
    check_info(info, "?orgqr");
    Q = A.leftCols(rank);
    return true;
}

}  // namespace

void set_lapack_qr(dgeqp3_fn dgeqp3, sgeqp3_fn sgeqp3, dorgqr_fn dorgqr, sorgqr_fn sorgqr) {
    lapack_dgeqp3.store(dgeqp3);
    lapack_sgeqp3.store(sgeqp3);
    lapack_dorgqr.store(dorgqr);
    lapack_sorgqr.store(sorgqr);
}

bool has_lapack_qr() { return lapack_dgeqp3.load() != nullptr && lapack_dorgqr.load() != nullptr; }

namespace {

// K's range by pivoted QR: LAPACK's where registered, else Eigen's.
template <class T>
ColMatrix<T> range_of(const MatrixCRef<T>& K, double rank_tol) {
    ColMatrix<T> Q;
    bool by_lapack = false;
    if constexpr (std::is_same_v<T, double>)
        by_lapack = lapack_range<T>(lapack_dgeqp3.load(), lapack_dorgqr.load(), K, rank_tol, Q);
    else
        by_lapack = lapack_range<T>(lapack_sgeqp3.load(), lapack_sorgqr.load(), K, rank_tol, Q);
    if (by_lapack) return Q;
    const Index m = K.rows();
    Eigen::ColPivHouseholderQR<ColMatrix<T>> qr(m, m);
    qr.compute(ColMatrix<T>(K));
    const Index rank = rank_of<T>(qr.matrixQR(), rank_tol);
    Q = ColMatrix<T>::Identity(m, rank);
    if (rank > 0) Q.applyOnTheLeft(qr.householderQ());
    return Q;
}

}  // namespace

template <class T>
ColMatrix<T> pivoted_qr_range(const MatrixCRef<T>& K, double rank_tol, const Callback& callback) {
    require(K.rows() == K.cols() && K.rows() > 0, "a pivoted QR here needs a non-empty square matrix");
    // Either would give an empty range (k = 0) and no error.
    require(!std::isnan(rank_tol), "rank_tol must be a number, got nan");
    require(K.allFinite(), "K contains NaN or infinity");
    if (!callback) return range_of<T>(K, rank_tol);
    check_allocation(double(K.rows()) * double(K.rows()) * sizeof(T),
                     "a copy of K_mm (" + shape_text<T>(K.rows(), K.rows()) + ") for its pivoted QR");
    auto input = std::make_shared<const Matrix<T>>(K);
    return detail::run_abandonable(callback, "factor", [input, rank_tol] { return range_of<T>(*input, rank_tol); });
}

template Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range<float>(const MatrixCRef<float>&, double,
                                                                                        const Callback&);
template Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range<double>(const MatrixCRef<double>&,
                                                                                          double, const Callback&);

}  // namespace nytro
