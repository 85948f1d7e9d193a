#include "nytro/nystrom.hpp"

#include "dense.hpp"
#include "nystrom_setup.hpp"
#include "nytro/cholesky.hpp"
#include "nytro/eigen_solver.hpp"
#include "nytro/errors.hpp"
#include "nytro/pivoted_qr.hpp"
#include "parallel.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

namespace nytro {
namespace {

template <class T>
double default_rank_tol(Index m) {
    return static_cast<double>(m) * std::numeric_limits<T>::epsilon();
}

// Symmetric swap of indices a < b within the trailing part (rows and columns >= a, upper
// triangle kept) and within the rows `from`..a-1 of U finished in the current panel (the
// columns a and b there), as LAPACK's ?pstrf does for its stored triangle. Rows of U
// finished in earlier panels get the swap at the end (apply_later_swaps).
template <class T>
void swap_pivot(Matrix<T>& W, Index from, Index a, Index b, int n_threads) {
    const Index m = W.rows();
    for (Index i = from; i < a; ++i) std::swap(W(i, a), W(i, b));
    std::swap(W(a, a), W(b, b));
    // Column b is read down its rows, a cache line for each entry: the loop is bound by
    // the misses one core can have in flight, and two cores take it 1.55x faster (1000
    // swaps at m = 10000: 60 -> 38 ms; the other thread would wait for this serial step).
    const Index count = b - a - 1, parts = count >= 2048 ? 4 : 1;
    detail::parallel_for(parts, parts > 1 ? n_threads : 1, [&](Index part, int) {
        const Index i0 = a + 1 + detail::range_begin(count, parts, part);
        const Index i1 = a + 1 + detail::range_begin(count, parts, part + 1);
        for (Index i = i0; i < i1; ++i) std::swap(W(a, i), W(i, b));
    });
    if (b + 1 < m) W.row(a).tail(m - b - 1).swap(W.row(b).tail(m - b - 1));
}

// A panel of rows [begin, end) of U and the symmetric swaps (a, b) made while it was
// factored, in order.
struct PivotPanel {
    Index begin, end;
    std::vector<std::pair<Index, Index>> swaps;
};

// The rows of each panel, finished, still lack the column swaps of every later panel.
// They get them here, one gather per row: row'[c] = row[source[c]], with `source` the
// composition of the later swaps. (Replaying each panel's swaps on all earlier rows
// touched two cache lines per row and swap: 12 ms of the factor's 135 at m = 2000.)
template <class T>
void apply_later_swaps(Matrix<T>& W, const std::vector<PivotPanel>& panels) {
    const Index m = W.cols();
    // source[position[v]] == v: prepending a swap (a, b) exchanges the values a and b.
    std::vector<Index> source(static_cast<std::size_t>(m)), position(static_cast<std::size_t>(m));
    std::iota(source.begin(), source.end(), Index(0));
    std::iota(position.begin(), position.end(), Index(0));
    Vector<T> gathered(m);
    bool identity = true;
    for (auto panel = panels.rbegin(); panel != panels.rend(); ++panel) {
        const Index width = m - panel->end;
        if (!identity && width > 0) {
            for (Index i = panel->begin; i < panel->end; ++i) {
                for (Index c = panel->end; c < m; ++c) gathered[c] = W(i, source[std::size_t(c)]);
                W.row(i).tail(width) = gathered.tail(width).transpose();
            }
        }
        // This panel's swaps come before those already composed: prepend them, last first.
        for (auto swap = panel->swaps.rbegin(); swap != panel->swaps.rend(); ++swap) {
            const auto a = std::size_t(swap->first), b = std::size_t(swap->second);
            std::swap(source[std::size_t(position[a])], source[std::size_t(position[b])]);
            std::swap(position[a], position[b]);
            identity = false;
        }
    }
}

// Row j of U in a panel that starts at row j0: the row of the Schur complement, less
// the panel rows above it (their update of the trailing matrix is still pending),
// divided by the pivot; and the trailing diagonal d less the row's squares. The columns
// go in chunks fixed by their index alone, taken by the threads in any order, so the bits
// do not depend on the thread count. Serial, this matrix-vector work was a fifth of the
// factor at m = 5000 with panels of 64 rows.
template <class T>
void finish_row(Matrix<T>& W, Vector<T>& d, Index j0, Index j, T pivot, int n_threads) {
    const Index m = W.rows(), begin = j + 1, above = j - j0;
    if (begin >= m) return;
    constexpr Index kChunk = 512;
    const Index first_chunk = begin / kChunk, chunks = (m - 1) / kChunk - first_chunk + 1;
    const double work = double(above + 2) * double(m - begin);
    detail::parallel_for(chunks, work < 65536.0 ? 1 : n_threads, [&](Index c, int) {
        const Index c0 = std::max(begin, (first_chunk + c) * kChunk), c1 = std::min(m, (first_chunk + c + 1) * kChunk);
        auto row = W.row(j).segment(c0, c1 - c0);
        if (above > 0) row.noalias() -= W.col(j).segment(j0, above).transpose() * W.block(j0, c0, above, c1 - c0);
        row /= pivot;
        d.segment(c0, c1 - c0) -= row.transpose().cwiseAbs2();
    });
}

// Rank-revealing Cholesky with diagonal pivoting, K[P, P] = U^T U, blocked as in
// LAPACK's ?pstrf and kept in the upper triangle so that a row of U (a column of L) is
// contiguous in row-major storage. Within a panel of 128 rows each row is finished with
// a matrix-vector product (finish_row); the trailing triangle is updated once per panel
// by a parallel rank-128 update. Panels of 128 rather than 64 double the matrix-vector
// work but run the update's GEMMs at a deeper inner dimension: at m = 5000, 0.71 -> 0.60
// s for the two together, and at m = 10000, 5.65 -> 4.52 s (2 threads). Stops when the
// largest remaining Schur diagonal is <= rank_tol * max(diag K): a duplicated centre is
// never picked, its remaining diagonal being zero.
// W is K, overwritten by the factor (a fresh copy of a 32 MB K_mm costs 17 ms in page
// faults on the VMs measured here: the fit's own kernel is handed over instead).
template <class T>
NystromFactor<T> pivoted_factor(Matrix<T> W, double rank_tol, bool invert, int n_threads) {
    const Index m = W.rows(), panel = 128;
    Vector<T> d = W.diagonal();
    std::vector<Index> order(static_cast<std::size_t>(m));
    std::iota(order.begin(), order.end(), Index(0));
    std::vector<PivotPanel> panels;
    const T threshold = static_cast<T>(rank_tol) * d.maxCoeff();
    Index rank = 0;
    bool done = false;
    for (Index j0 = 0; j0 < m && !done; j0 += panel) {
        Index j1 = std::min(j0 + panel, m);
        std::vector<std::pair<Index, Index>> swaps;
        for (Index j = j0; j < j1; ++j) {
            Index p = 0;
            const T largest = d.segment(j, m - j).maxCoeff(&p);
            p += j;
            if (!(largest > threshold)) {
                done = true;
                j1 = j;
                break;
            }
            if (p != j) {
                swap_pivot(W, j0, j, p, n_threads);
                swaps.emplace_back(j, p);
                std::swap(d[j], d[p]);
                std::swap(order[j], order[p]);
            }
            const T pivot = std::sqrt(largest);
            W(j, j) = pivot;
            finish_row(W, d, j0, j, pivot, n_threads);
            rank = j + 1;
        }
        panels.push_back({j0, j1, std::move(swaps)});
        const Index rest = m - j1;
        if (rest > 0 && j1 > j0)
            detail::rank_update<T>(W.block(j0, j1, j1 - j0, rest), W.bottomRightCorner(rest, rest), T(-1), true,
                                   n_threads);
    }
    if (rank == 0) throw std::runtime_error("K_mm is numerically zero: no Nystrom centre can be used");
    apply_later_swaps(W, panels);
    NystromFactor<T> factor;
    factor.support.assign(order.begin(), order.begin() + rank);
    // At full rank R takes W's storage; else the leading rank x rank corner is copied out.
    // Without `invert`, R holds U itself (the caller's FitFactor inverts it if needed).
    if (rank == m) {
        if (invert) detail::invert_upper_triangular_in_place<T>(W, n_threads);
        factor.R = std::move(W);
    } else if (invert) {
        factor.R = detail::upper_triangular_inverse<T>(W.topLeftCorner(rank, rank), n_threads);
    } else {
        factor.R = W.topLeftCorner(rank, rank);  // its strict lower part is never read
    }
    factor.upper_triangular = true;
    return factor;
}

// The authors' code: R = L^-T with L L^T = K_mm + jitter I (without `invert`, R holds L^T).
template <class T>
NystromFactor<T> jittered_cholesky_factor(Matrix<T> shifted, double jitter, bool invert, int n_threads) {
    const Index m = shifted.rows();
    shifted.diagonal().array() += static_cast<T>(jitter);
    if (!cholesky_lower_in_place<T>(shifted))
        throw std::runtime_error("K_mm + jitter*I is not positive definite (jitter=" +
                                 format_number(jitter) + "): use a larger jitter or factor='pivoted'");
    NystromFactor<T> factor;
    factor.support.resize(static_cast<std::size_t>(m));
    std::iota(factor.support.begin(), factor.support.end(), Index(0));
    Matrix<T> U = shifted.template triangularView<Eigen::Lower>().transpose();
    if (invert) detail::invert_upper_triangular_in_place<T>(U, n_threads);
    factor.R = std::move(U);
    factor.upper_triangular = true;
    return factor;
}

// The paper's text: K_mm P = S D (column-pivoted economic QR, rank k), then
// T^T T = S^T K_mm S and R = S T^-1. When rounding leaves S^T K_mm S not quite positive
// definite, its eigendecomposition (positive part) replaces the Cholesky factor. The
// products, the Cholesky factor and T's inverse run on the core's threads (Eigen's own
// are single-threaded here): at m = 4000 they took 7-8 s of the factor's 18 s before.
template <class T>
NystromFactor<T> qr_factor(const MatrixCRef<T>& K, double rank_tol, int n_threads) {
    const Index m = K.rows();
    const auto Q = pivoted_qr_range<T>(K, rank_tol);  // column-major: its storage, read row-major, is S^T
    const Index k = Q.cols();
    if (k == 0) throw std::runtime_error("K_mm is numerically zero: no Nystrom centre can be used");
    const Matrix<T> S = Q;
    const Eigen::Map<const Matrix<T>> S_transposed(Q.data(), k, m);
    Matrix<T> KS(m, k), M(k, k);
    detail::multiply<T>(K, S, KS, n_threads);
    detail::multiply<T>(S_transposed, KS, M, n_threads);
    NystromFactor<T> factor;
    factor.support.resize(static_cast<std::size_t>(m));
    std::iota(factor.support.begin(), factor.support.end(), Index(0));
    Matrix<T> L = M;
    if (cholesky_lower_in_place<T>(L)) {  // M = L L^T = T^T T with T = L^T
        Matrix<T> inverse = L.template triangularView<Eigen::Lower>().transpose();
        detail::invert_upper_triangular_in_place<T>(inverse, n_threads);
        factor.R.resize(m, k);
        detail::multiply_right<T>(S, inverse, true, factor.R, n_threads);
    } else {
        Vector<T> w;
        Matrix<T> V;
        symmetric_eigen<T>(M, w, V);
        const T cut = static_cast<T>(rank_tol) * w.cwiseAbs().maxCoeff();
        Index keep = 0;
        while (keep < w.size() && w[w.size() - 1 - keep] > cut) ++keep;
        factor.R = S * (V.rightCols(keep) * w.tail(keep).cwiseSqrt().cwiseInverse().asDiagonal());
    }
    factor.upper_triangular = false;
    return factor;
}

// |K - K^T| <= 100 eps max|K|, compared in 64 x 64 tiles so that the transposed side
// is read from cache rather than one cache line per element.
template <class T>
bool is_symmetric(const MatrixCRef<T>& K) {
    const Index m = K.rows(), tile = 64;
    const T tolerance = 100 * std::numeric_limits<T>::epsilon() * K.cwiseAbs().maxCoeff();
    for (Index i = 0; i < m; i += tile)
        for (Index j = i; j < m; j += tile) {
            const Index rows = std::min(tile, m - i), cols = std::min(tile, m - j);
            const Matrix<T> mirrored = K.block(j, i, cols, rows).transpose();
            if ((K.block(i, j, rows, cols) - mirrored).cwiseAbs().maxCoeff() > tolerance) return false;
        }
    return true;
}

}  // namespace

template <class T>
Matrix<T> NystromFactor<T>::dense(Index m) const {
    Matrix<T> full = Matrix<T>::Zero(m, R.cols());
    for (std::size_t i = 0; i < support.size(); ++i) {
        if (upper_triangular)
            full.row(support[i]).tail(R.cols() - Index(i)) = R.row(Index(i)).tail(R.cols() - Index(i));
        else
            full.row(support[i]) = R.row(Index(i));
    }
    return full;
}

namespace {

// The factor of a K_mm known to be square, finite and symmetric, which it may overwrite.
// Without `invert`, the triangular factors (pivoted, cholesky) hold U rather than R = U^-1.
template <class T>
NystromFactor<T> factor_checked(Matrix<T>&& K_mm, const FactorOptions& options, bool invert, int n_threads) {
    const Index m = K_mm.rows();
    const double rank_tol = options.rank_tol < 0 ? default_rank_tol<T>(m) : options.rank_tol;
    require(rank_tol < 1, "rank_tol must be < 1, got " + format_number(rank_tol));
    require(options.jitter >= 0 && std::isfinite(options.jitter),
            "jitter must be finite and >= 0, got " + format_number(options.jitter));
    check_allocation(2.0 * double(m) * double(m) * sizeof(T),
                     "the Nystrom factor of a " + shape_text<T>(m, m) + " K_mm");
    switch (options.method) {
        case FactorMethod::pivoted: return pivoted_factor<T>(std::move(K_mm), rank_tol, invert, n_threads);
        case FactorMethod::cholesky:
            return jittered_cholesky_factor<T>(std::move(K_mm), options.jitter, invert, n_threads);
        case FactorMethod::qr: return qr_factor<T>(K_mm, rank_tol, n_threads);
    }
    throw std::invalid_argument("unknown factor method");
}

}  // namespace

template <class T>
NystromFactor<T> nystrom_factor(const MatrixCRef<T>& K_mm, const FactorOptions& options,
                                int n_threads) {
    const Index m = K_mm.rows();
    require(m >= 1 && K_mm.cols() == m, "K_mm must be a non-empty square matrix, got " +
                                            std::to_string(K_mm.rows()) + " x " +
                                            std::to_string(K_mm.cols()));
    require(K_mm.allFinite(), "K_mm contains NaN or infinity");
    require(is_symmetric<T>(K_mm), "K_mm must be symmetric");
    check_allocation(double(m) * double(m) * sizeof(T), "a copy of K_mm (" + shape_text<T>(m, m) + ")");
    return factor_checked<T>(Matrix<T>(K_mm), options, /*invert=*/true, n_threads);
}

namespace detail {

template <class T>
FitFactor<T> factor_of_kernel(Matrix<T>&& K_mm, const FactorOptions& options, int n_threads) {
    const bool triangular = options.method != FactorMethod::qr;
    return FitFactor<T>(factor_checked<T>(std::move(K_mm), options, /*invert=*/!triangular, n_threads), triangular);
}

template FitFactor<float> factor_of_kernel<float>(Matrix<float>&&, const FactorOptions&, int);
template FitFactor<double> factor_of_kernel<double>(Matrix<double>&&, const FactorOptions&, int);

}  // namespace detail

template struct NystromFactor<float>;
template struct NystromFactor<double>;
template NystromFactor<float> nystrom_factor<float>(const MatrixCRef<float>&, const FactorOptions&, int);
template NystromFactor<double> nystrom_factor<double>(const MatrixCRef<double>&, const FactorOptions&, int);

}  // namespace nytro
