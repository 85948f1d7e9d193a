// Every routine gives bitwise the same result for n_threads = 1, 2, 3: work is split by
// shape, never by thread count. The shapes cross the blocking thresholds (kernel blocks
// of 128 x 512, panels of 128 rows, Gram tiles of 256, several fused-pass slots).
#include "check.hpp"
#include "support.hpp"

#include <functional>

using namespace support;

namespace {

template <class T>
void same_bits(const char* what, const std::function<Matrix<T>(int)>& run) {
    const Matrix<T> reference = run(1);
    for (int threads : {2, 3}) {
        const Matrix<T> other = run(threads);
        CHECK_MSG(check::bitwise_equal(other, reference),
                  std::string(what) + ": n_threads=" + check::str(threads) + " differs from 1 (relative " +
                      check::str(check::relative_error(other, reference)) + ")");
    }
}

template <class R>
void same_path(const char* what, const R& a, const R& b, int threads) {
    const std::string label = std::string(what) + " n_threads=" + check::str(threads);
    CHECK_MSG(check::bitwise_equal(a.coef, b.coef), label + ": coef differs");
    CHECK_MSG(a.validation_rmse == b.validation_rmse, label + ": validation path differs");
}

template <class T>
void all_routines() {
    const Problem p = make_problem(3000, 4, 300, 400, 2, 9);
    const Matrix<T> X = p.as<T>(p.X), Y = p.as<T>(p.Y), C = p.as<T>(p.centers);
    const Matrix<T> Xv = p.as<T>(p.X_val), Yv = p.as<T>(p.Y_val);
    const Matrix<T> coef = normal(300, 2, 10).cast<T>();

    same_bits<T>("gaussian_kernel", [&](int t) { return nytro::gaussian_kernel<T>(X.topRows(700), C, p.sigma, t); });
    same_bits<T>("kernel_predict", [&](int t) { return nytro::kernel_predict<T>(X, C, coef, p.sigma, t); });
    same_bits<T>("nystrom_factor", [&](int t) {
        return nytro::nystrom_factor<T>(nytro::gaussian_kernel<T>(C, C, p.sigma, 1), {}, t).R;
    });
    // 1100 centres: the first panel of the pivoted factor on a team of threads, each with
    // its own column chunks (256 each), and the triangular inverse's products in 512 x 512
    // tiles.
    const Matrix<T> C_wide = p.as<T>(normal(1100, 4, 31));
    same_bits<T>("nystrom_factor 1100 centres", [&](int t) {
        return nytro::nystrom_factor<T>(nytro::gaussian_kernel<T>(C_wide, C_wide, 2.0, 1), {}, t).R;
    });
    // 2100 centres, 1000 of them repeats of the other 1100: the numerical rank (1043 in
    // double, 252 in float) is reached inside a panel whose trailing part (over 1024
    // columns while the rank is below 1100) is still factored by a team, and the repeats
    // spread among the originals make pivots swap across the threads' columns.
    Matrix<T> C_repeated(2100, 4);
    const auto slots = nytro::sample_centers(2100, 2100, 32);
    for (Index i = 0; i < 2100; ++i) C_repeated.row(slots[std::size_t(i)]) = C_wide.row(i % 1100);
    same_bits<T>("nystrom_factor 2100 centres, 1100 distinct", [&](int t) {
        const auto factor = nytro::nystrom_factor<T>(nytro::gaussian_kernel<T>(C_repeated, C_repeated, 2.0, 1), {}, t);
        CHECK_MSG(factor.rank() < 1100 && factor.rank() % 128 != 0, "rank " + check::str(factor.rank()));
        return factor.R;
    });
    same_bits<T>("nystrom_factor qr", [&](int t) {
        return nytro::nystrom_factor<T>(nytro::gaussian_kernel<T>(C, C, p.sigma, 1), {nytro::FactorMethod::qr}, t).R;
    });

    for (nytro::Solver solver : {nytro::Solver::direct, nytro::Solver::gram}) {
        auto run = [&](int threads) {
            nytro::NytroOptions o;
            o.solver = solver;
            o.max_iter = 40;
            o.n_threads = threads;
            return nytro::nytro_path<T>(X, Y, C, p.sigma, Xv, Yv, o);
        };
        const auto one = run(1);
        for (int threads : {2, 3}) {
            const auto other = run(threads);
            same_path(solver == nytro::Solver::direct ? "nytro direct" : "nytro gram", one, other, threads);
            CHECK_EQ(other.step_size, one.step_size);
            CHECK_EQ(other.n_iter, one.n_iter);
        }
    }

    const Index n_full = 600;  // full-kernel methods: n x n
    const Matrix<T> Xs = X.topRows(n_full), Ys = Y.topRows(n_full);
    auto landweber = [&](int threads) {
        nytro::IterativeOptions o;
        o.max_iter = 30;
        o.n_threads = threads;
        return nytro::landweber_path<T>(Xs, Ys, p.sigma, Xv, Yv, o);
    };
    auto nkrls = [&](int threads) {
        nytro::TikhonovOptions o;
        o.n_threads = threads;
        return nytro::nkrls_path<T>(X, Y, C, p.sigma, {1e-6, 1e-4, 1e-2}, Xv, Yv, o);
    };
    auto krls = [&](int threads) {
        nytro::TikhonovOptions o;
        o.n_threads = threads;
        o.solver = nytro::TikhonovSolver::cholesky;
        return nytro::krls_path<T>(Xs, Ys, p.sigma, {1e-6, 1e-4, 1e-2}, Xv, Yv, o);
    };
    const auto lw1 = landweber(1), nk1 = nkrls(1), kr1 = krls(1);
    for (int threads : {2, 3}) {
        same_path("landweber", lw1, landweber(threads), threads);
        same_path("nkrls", nk1, nkrls(threads), threads);
        same_path("krls", kr1, krls(threads), threads);
    }
    same_bits<T>("kols", [&](int t) { return nytro::kols<T>(Xs.topRows(300), Ys.topRows(300), p.sigma, -1.0, t); });
}

}  // namespace

NYTRO_TEST(threads_bitwise_double) { all_routines<double>(); }
NYTRO_TEST(threads_bitwise_float) { all_routines<float>(); }
