#include "nytro/nystrom.hpp"

#include "passes/dense.hpp"
#include "factor/fit_factor.hpp"
#include "factor/owned_cholesky.hpp"
#include "nytro/eigen_solver.hpp"
#include "nytro/errors.hpp"
#include "nytro/pivoted_qr.hpp"
#include "runtime/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace nytro {
namespace {

template <class T>
double default_rank_tol(Index m) {
    return static_cast<double>(m) * std::numeric_limits<T>::epsilon();
}

// Pivots per panel of the blocked pivoted Cholesky (see pivoted_factor).
constexpr Index kPivotPanel = 128;
// Columns per chunk of a row of U: the chunks are fixed by the column index alone, so an
// entry's arithmetic, and its bits, do not depend on how many threads share the panel.
constexpr Index kChunk = 256;
// A panel whose trailing part is narrower than this is factored by one thread: its
// per-pivot work (about 64 x this many multiply-adds) would not pay for the barriers.
constexpr Index kTeamColumns = 1024;

// Symmetric swap of indices a < b within the trailing part (rows and columns >= a, upper
// triangle kept) and within the rows `from`..a-1 of U finished in the current panel (the
// columns a and b there), as LAPACK's ?pstrf does for its stored triangle. Rows of U
// finished in earlier panels get the swap at the end (apply_later_swaps). Columns a and
// b are read down their rows, a cache miss for each entry, so the team shares those rows
// in equal parts (the panel rows' and those between a and b); each thread swaps the
// tails of rows a and b in its own columns [begin, end). No two threads touch the same
// entry. (Thread 0 alone taking the panel rows, and the rows between a and b split by
// column ownership, was slower.)
template <class T>
void swap_pivot(Matrix<T>& W, Index from, Index a, Index b, Index begin, Index end, const detail::Team& team) {
    const auto [above_begin, above_end] = team.share(a - from);
    for (Index i = from + above_begin; i < from + above_end; ++i) std::swap(W(i, a), W(i, b));
    if (team.thread == 0) std::swap(W(a, a), W(b, b));
    const auto [middle_begin, middle_end] = team.share(b - a - 1);
    for (Index i = a + 1 + middle_begin; i < a + 1 + middle_end; ++i) std::swap(W(a, i), W(i, b));
    const Index tail = std::max(begin, b + 1);
    if (tail < end) W.row(a).segment(tail, end - tail).swap(W.row(b).segment(tail, end - tail));
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
// touched two cache lines per row and swap.)
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

// Row j of U in a panel that starts at row j0, in the columns [begin, end): the row of
// the Schur complement, less the panel rows above it (their update of the trailing matrix
// is still pending), divided by the pivot; and the trailing diagonal d less the row's
// squares. The panel rows are taken four at a time in a fixed order, chunk by chunk.
template <class T>
void finish_row(Matrix<T>& W, Vector<T>& d, Index j0, Index j, T pivot, Index begin, Index end) {
    const Index above = j - j0;
    alignas(64) T x[kPivotPanel];  // column j of the panel rows, read once rather than per chunk
    for (Index k = 0; k < above; ++k) x[k] = W(j0 + k, j);
    for (Index c0 = begin; c0 < end;) {
        const Index c1 = std::min(end, (c0 / kChunk + 1) * kChunk), width = c1 - c0;
        auto row = W.row(j).segment(c0, width);
        auto panel_row = [&](Index k) { return W.row(j0 + k).segment(c0, width); };
        Index k = 0;
        for (; k + 4 <= above; k += 4)
            row -= x[k] * panel_row(k) + x[k + 1] * panel_row(k + 1) + x[k + 2] * panel_row(k + 2) +
                   x[k + 3] * panel_row(k + 3);
        for (; k < above; ++k) row -= x[k] * panel_row(k);
        row /= pivot;
        d.segment(c0, width) -= row.transpose().cwiseAbs2();
        c0 = c1;
    }
}

// One thread's best pivot: the largest remaining diagonal entry among its columns (index
// -1 when it has none left), on a cache line of its own.
template <class T>
struct alignas(64) Candidate {
    T value;
    Index index;
};

// How often, at most, a panel calls the progress callback (its interruption point): a
// pivot costs the team one or two barriers, each of which can wait a scheduler slice on
// a loaded machine, so a panel's 128 pivots took 5-8 s at a load average of 20 on 2
// cores (m = 6000), and Ctrl-C waited for the panel's end. Timed rather than counted:
// one pivot takes microseconds on a quiet machine, where a call per pivot would cost
// more than the pivot.
constexpr std::chrono::milliseconds kPanelCallbackEvery{50};

// The pivots j0, j0 + 1, ... < j1 of one panel; returns the end of the panel, j1 or the
// pivot at which the remaining diagonal fell to `threshold` (the rank). The panel runs on
// one team of threads, each owning a fixed range of whole column chunks of the trailing
// part for the whole panel, so that its slab of the panel's rows stays in its cache. A
// pivot costs the team one barrier (to compare the threads' candidates), two when it
// swaps; a fork and join per pivot, as before, cost more than the row itself past four
// threads. Thread 0 (the calling thread) calls `callback` between pivots, at most every
// kPanelCallbackEvery; an exception from it (Ctrl-C) stops every thread at the next
// barrier and is rethrown once the team has joined (a throw inside the team would leave
// the others waiting at a barrier).
template <class T>
Index factor_panel(Matrix<T>& W, Vector<T>& d, std::vector<Index>& order, std::vector<std::pair<Index, Index>>& swaps,
                   Index j0, Index j1, T threshold, int n_threads, const Callback& callback) {
    const Index m = W.rows(), first_chunk = j0 / kChunk, chunks = (m - 1) / kChunk - first_chunk + 1;
    const int threads = m - j0 < kTeamColumns ? 1 : int(std::min<Index>(detail::resolve_threads(n_threads), chunks));
    // Two rounds of candidates: one pivot's are read while the next one's are written.
    std::vector<Candidate<T>> candidates(std::size_t(2 * threads));
    swaps.reserve(std::size_t(j1 - j0));  // no allocation, so nothing thrown, inside the team
    Index end = j1;
    std::exception_ptr interrupted;
    std::atomic<bool> stop{false};
    auto last_call = std::chrono::steady_clock::now();
    detail::parallel_team(threads, [&](const detail::Team& team) {
        const auto [begin_chunk, end_chunk] = team.share(chunks);
        const Index own_begin = std::max(j0, (first_chunk + begin_chunk) * kChunk);
        const Index own_end = std::min(m, (first_chunk + end_chunk) * kChunk);
        for (Index j = j0; j < j1; ++j) {
            if (team.thread == 0 && callback && std::chrono::steady_clock::now() - last_call >= kPanelCallbackEvery) {
                try {
                    callback({"factor", j, m});
                } catch (...) {
                    interrupted = std::current_exception();
                    stop.store(true, std::memory_order_relaxed);
                }
                last_call = std::chrono::steady_clock::now();
            }
            Candidate<T>* round = candidates.data() + (j % 2) * team.size;
            Candidate<T>& mine = round[team.thread];
            mine.index = -1;
            if (const Index from = std::max(own_begin, j); from < own_end) {
                Index at = 0;
                mine.value = d.segment(from, own_end - from).maxCoeff(&at);
                mine.index = from + at;
            }
            team.barrier();
            // The barrier orders thread 0's store before every thread's load: all leave
            // at the same pivot.
            if (stop.load(std::memory_order_relaxed)) break;
            // Every thread picks the same pivot: the largest, the first column on ties.
            Index p = -1;
            T largest = 0;
            for (int t = 0; t < team.size; ++t)
                if (round[t].index >= 0 && (p < 0 || round[t].value > largest)) {
                    largest = round[t].value;
                    p = round[t].index;
                }
            if (!(largest > threshold)) {
                if (team.thread == 0) end = j;
                break;
            }
            if (p != j) {
                swap_pivot(W, j0, j, p, own_begin, own_end, team);
                if (team.thread == 0) {
                    swaps.emplace_back(j, p);
                    std::swap(d[j], d[p]);
                    std::swap(order[std::size_t(j)], order[std::size_t(p)]);
                }
                team.barrier();
            }
            const T pivot = std::sqrt(largest);
            if (team.thread == 0) W(j, j) = pivot;
            finish_row(W, d, j0, j, pivot, std::max(own_begin, j + 1), own_end);
        }
    });
    if (interrupted) std::rethrow_exception(interrupted);
    return end;
}

// Rank-revealing Cholesky with diagonal pivoting, K[P, P] = U^T U, blocked as in
// LAPACK's ?pstrf and kept in the upper triangle so that a row of U (a column of L) is
// contiguous in row-major storage. Within a panel of 128 rows each row is finished with
// a matrix-vector product (finish_row, by a team of threads: factor_panel); the trailing
// triangle is updated once per panel by a parallel rank-128 update. Panels of 128 rather
// than 64 double the matrix-vector work but run the update's GEMMs at a deeper inner
// dimension, which wins overall. Stops when the largest remaining Schur diagonal is
// <= rank_tol * max(diag K): a duplicated centre is never picked, its remaining diagonal
// being zero.
// W is K, overwritten by the factor (a fresh copy of K_mm would pay its page faults: the
// fit's own kernel is handed over instead).
template <class T>
NystromFactor<T> pivoted_factor(Matrix<T> W, double rank_tol, bool invert, int n_threads,
                                const Callback& callback) {
    const Index m = W.rows();
    Vector<T> d = W.diagonal();
    std::vector<Index> order(static_cast<std::size_t>(m));
    std::iota(order.begin(), order.end(), Index(0));
    std::vector<PivotPanel> panels;
    const T threshold = static_cast<T>(rank_tol) * d.maxCoeff();
    Index rank = 0;
    for (Index j0 = 0; j0 < m; j0 += kPivotPanel) {
        std::vector<std::pair<Index, Index>> swaps;
        const Index panel_end = std::min(j0 + kPivotPanel, m);
        const Index j1 = factor_panel(W, d, order, swaps, j0, panel_end, threshold, n_threads, callback);
        rank = j1;
        panels.push_back({j0, j1, std::move(swaps)});
        if (j1 < panel_end) break;  // the rank is reached: the trailing part is not used
        const Index rest = m - j1;
        // The trailing update (O(rest^2 panel) flops, seconds at m = 8000 under load) calls
        // back between batches of its blocks: the factor's interruption points.
        const auto interrupt = [&] { callback({"factor", j1, m}); };
        if (rest > 0)
            detail::rank_update<T>(W.block(j0, j1, j1 - j0, rest), W.bottomRightCorner(rest, rest), T(-1), true,
                                   n_threads, callback ? std::function<void()>(interrupt) : std::function<void()>());
    }
    if (rank == 0) throw std::runtime_error("K_mm is numerically zero: no Nystrom centre can be used");
    apply_later_swaps(W, panels);
    NystromFactor<T> factor;
    factor.support.assign(order.begin(), order.begin() + rank);
    // At full rank R takes W's storage; else the leading rank x rank corner is copied out.
    // Without `invert`, R holds U itself (the caller's FitFactor inverts it if needed).
    if (rank == m) {
        if (invert) detail::invert_upper_triangular_in_place<T>(W, n_threads, detail::inverse_interruption(callback));
        factor.R = std::move(W);
    } else if (invert) {
        factor.R = detail::upper_triangular_inverse<T>(W.topLeftCorner(rank, rank), n_threads,
                                                       detail::inverse_interruption(callback));
    } else {
        factor.R = W.topLeftCorner(rank, rank);  // its strict lower part is never read
    }
    factor.upper_triangular = true;
    return factor;
}

// The authors' code: R = L^-T with L L^T = K_mm + jitter I (without `invert`, R holds L^T).
template <class T>
NystromFactor<T> jittered_cholesky_factor(Matrix<T> shifted, double jitter, bool invert, int n_threads,
                                          const Callback& callback) {
    const Index m = shifted.rows();
    shifted.diagonal().array() += static_cast<T>(jitter);
    // ?potrf has no interruption point: it runs on a worker that Ctrl-C abandons.
    if (!detail::cholesky_lower_owned<T>(shifted, callback, {"factor", 0, 1}))
        throw std::runtime_error("K_mm + jitter*I is not positive definite (jitter=" +
                                 format_number(jitter) + "): use a larger jitter or factor='pivoted'");
    NystromFactor<T> factor;
    factor.support.resize(static_cast<std::size_t>(m));
    std::iota(factor.support.begin(), factor.support.end(), Index(0));
    Matrix<T> U = shifted.template triangularView<Eigen::Lower>().transpose();
    if (invert) detail::invert_upper_triangular_in_place<T>(U, n_threads, detail::inverse_interruption(callback));
    factor.R = std::move(U);
    factor.upper_triangular = true;
    return factor;
}

// The paper's text: K_mm P = S D (column-pivoted economic QR, rank k), then
// T^T T = S^T K_mm S and R = S T^-1. When rounding leaves S^T K_mm S not quite positive
// definite, its eigendecomposition (positive part) replaces the Cholesky factor. The
// products, the Cholesky factor and T's inverse run on the core's threads (Eigen's own
// are single-threaded here). Interruption points: the QR and the Cholesky factor run on
// a worker that Ctrl-C abandons; the products (4 m^2 k flops, seconds at m = 5000 under
// load) call back between batches of their blocks, the inverse between its leaves.
template <class T>
NystromFactor<T> qr_factor(const MatrixCRef<T>& K, double rank_tol, int n_threads, const Callback& callback) {
    const Index m = K.rows();
    const auto Q = pivoted_qr_range<T>(K, rank_tol, callback);  // column-major: its storage, read row-major, is S^T
    const Index k = Q.cols();
    if (k == 0) throw std::runtime_error("K_mm is numerically zero: no Nystrom centre can be used");
    const Matrix<T> S = Q;
    const Eigen::Map<const Matrix<T>> S_transposed(Q.data(), k, m);
    // Reported as a stage of its own, so that a test can aim Ctrl-C at the products.
    const auto products = [&] { callback({"factor products", 0, 1}); };
    const std::function<void()> between = callback ? std::function<void()>(products) : std::function<void()>();
    Matrix<T> KS(m, k), M(k, k);
    detail::multiply<T>(K, S, KS, n_threads, between);
    detail::multiply<T>(S_transposed, KS, M, n_threads, between);
    NystromFactor<T> factor;
    factor.support.resize(static_cast<std::size_t>(m));
    std::iota(factor.support.begin(), factor.support.end(), Index(0));
    Matrix<T> L = M;
    if (detail::cholesky_lower_owned<T>(L, callback, {"factor", 0, 1})) {  // M = L L^T = T^T T with T = L^T
        Matrix<T> inverse = L.template triangularView<Eigen::Lower>().transpose();
        detail::invert_upper_triangular_in_place<T>(inverse, n_threads, detail::inverse_interruption(callback));
        factor.R.resize(m, k);
        detail::multiply_right<T>(S, inverse, true, factor.R, n_threads, between);
    } else {
        Vector<T> w;
        Matrix<T> V;
        symmetric_eigen<T>(M, w, V, callback);
        const T cut = static_cast<T>(rank_tol) * w.cwiseAbs().maxCoeff();
        Index keep = 0;
        while (keep < w.size() && w[w.size() - 1 - keep] > cut) ++keep;
        factor.R = S * (V.rightCols(keep) * w.tail(keep).cwiseSqrt().cwiseInverse().asDiagonal());
    }
    factor.upper_triangular = false;
    return factor;
}

// Rows of K_mm between two calls of the callback in the passes over the whole of it
// before the factor (the finiteness and symmetry checks, the copy): each pass reads or
// writes m^2 entries, 800 MB at m = 10000, over a second under load.
constexpr Index kRowsBetweenCalls = 256;

// |K - K^T| <= 100 eps max|K|, compared in 64 x 64 tiles so that the transposed side
// is read from cache rather than one cache line per element. Calls `callback` between
// bands of rows (its interruption points), as does the scan for max|K| before it.
template <class T>
bool is_symmetric(const MatrixCRef<T>& K, const Callback& callback) {
    const Index m = K.rows(), tile = 64;
    T largest = 0;
    for (Index i = 0; i < m; i += kRowsBetweenCalls) {
        largest = std::max(largest, K.middleRows(i, std::min(kRowsBetweenCalls, m - i)).cwiseAbs().maxCoeff());
        if (callback) callback({"factor", 0, m});
    }
    const T tolerance = 100 * std::numeric_limits<T>::epsilon() * largest;
    for (Index i = 0; i < m; i += tile) {
        for (Index j = i; j < m; j += tile) {
            const Index rows = std::min(tile, m - i), cols = std::min(tile, m - j);
            const Matrix<T> mirrored = K.block(j, i, cols, rows).transpose();
            if ((K.block(i, j, rows, cols) - mirrored).cwiseAbs().maxCoeff() > tolerance) return false;
        }
        if (callback && (i / tile) % (kRowsBetweenCalls / tile) == 0) callback({"factor", 0, m});
    }
    return true;
}

// Whether every entry of K is finite, and a copy of K, a band of rows at a time with a
// call of `callback` between bands.
template <class T>
bool all_finite(const MatrixCRef<T>& K, const Callback& callback) {
    for (Index i = 0; i < K.rows(); i += kRowsBetweenCalls) {
        if (!K.middleRows(i, std::min(kRowsBetweenCalls, K.rows() - i)).allFinite()) return false;
        if (callback) callback({"factor", 0, K.rows()});
    }
    return true;
}

template <class T>
Matrix<T> copy_of(const MatrixCRef<T>& K, const Callback& callback) {
    Matrix<T> copy(K.rows(), K.cols());
    for (Index i = 0; i < K.rows(); i += kRowsBetweenCalls) {
        const Index rows = std::min(kRowsBetweenCalls, K.rows() - i);
        copy.middleRows(i, rows) = K.middleRows(i, rows);
        if (callback) callback({"factor", 0, K.rows()});
    }
    return copy;
}

}  // namespace

template <class T>
Matrix<T> NystromFactor<T>::dense(Index m) const {
    // A support index at or past m would be written outside `full` (heap corruption).
    for (const Index i : support)
        require(i >= 0 && i < m, "m=" + std::to_string(m) + " is too few centres for this factor: its support "
                                 "holds centre " + std::to_string(i));
    require(Index(support.size()) == R.rows(), "the factor's support has " + std::to_string(support.size()) +
                                                   " entries but R has " + std::to_string(R.rows()) + " rows");
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
NystromFactor<T> factor_checked(Matrix<T>&& K_mm, const FactorOptions& options, bool invert, int n_threads,
                                const Callback& callback) {
    const Index m = K_mm.rows();
    const double rank_tol = options.rank_tol < 0 ? default_rank_tol<T>(m) : options.rank_tol;
    require(rank_tol < 1, "rank_tol must be < 1, got " + format_number(rank_tol));
    require(options.jitter >= 0 && std::isfinite(options.jitter),
            "jitter must be finite and >= 0, got " + format_number(options.jitter));
    check_allocation(2.0 * double(m) * double(m) * sizeof(T),
                     "the Nystrom factor of a " + shape_text<T>(m, m) + " K_mm");
    switch (options.method) {
        case FactorMethod::pivoted: return pivoted_factor<T>(std::move(K_mm), rank_tol, invert, n_threads, callback);
        case FactorMethod::cholesky:
            return jittered_cholesky_factor<T>(std::move(K_mm), options.jitter, invert, n_threads, callback);
        case FactorMethod::qr: return qr_factor<T>(K_mm, rank_tol, n_threads, callback);
    }
    throw std::invalid_argument("unknown factor method");
}

}  // namespace

template <class T>
NystromFactor<T> nystrom_factor(const MatrixCRef<T>& K_mm, const FactorOptions& options, int n_threads,
                                const Callback& callback) {
    const Index m = K_mm.rows();
    require(m >= 1 && K_mm.cols() == m, "K_mm must be a non-empty square matrix, got " +
                                            std::to_string(K_mm.rows()) + " x " +
                                            std::to_string(K_mm.cols()));
    require(all_finite<T>(K_mm, callback), "K_mm contains NaN or infinity");
    require(is_symmetric<T>(K_mm, callback), "K_mm must be symmetric");
    check_allocation(double(m) * double(m) * sizeof(T), "a copy of K_mm (" + shape_text<T>(m, m) + ")");
    return factor_checked<T>(copy_of<T>(K_mm, callback), options, /*invert=*/true, n_threads, callback);
}

namespace detail {

template <class T>
FitFactor<T> factor_of_kernel(Matrix<T>&& K_mm, const FactorOptions& options, int n_threads,
                              const Callback& callback) {
    const bool triangular = options.method != FactorMethod::qr;
    return FitFactor<T>(factor_checked<T>(std::move(K_mm), options, /*invert=*/!triangular, n_threads, callback),
                        triangular);
}

template FitFactor<float> factor_of_kernel<float>(Matrix<float>&&, const FactorOptions&, int, const Callback&);
template FitFactor<double> factor_of_kernel<double>(Matrix<double>&&, const FactorOptions&, int, const Callback&);

}  // namespace detail

template struct NystromFactor<float>;
template struct NystromFactor<double>;
template NystromFactor<float> nystrom_factor<float>(const MatrixCRef<float>&, const FactorOptions&, int,
                                                     const Callback&);
template NystromFactor<double> nystrom_factor<double>(const MatrixCRef<double>&, const FactorOptions&, int,
                                                       const Callback&);

}  // namespace nytro
