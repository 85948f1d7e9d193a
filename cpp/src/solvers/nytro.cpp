// NYTRO: an iterative regulariser on A = K_nm R (paper, eq. 13), by the direct or Gram
// solver. Both present the same linear problem H beta = c with H = A^T A, c = A^T y.
#include "passes/dense.hpp"
#include "passes/fused_pass.hpp"
#include "paths/gradient_path.hpp"
#include "passes/gram.hpp"
#include "runtime/input_checks.hpp"
#include "runtime/machine_rates.hpp"
#include "runtime/memory_plan.hpp"
#include "solvers/nystrom_setup.hpp"
#include "kernel/packed_centers.hpp"
#include "nytro/eigen_solver.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "nytro/solvers.hpp"
#include "runtime/parallel.hpp"
#include "passes/symmetric_pass.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nytro {
namespace {

// Products with H that gd's Lanczos basis takes for t_max iterates, at most k (a
// complete basis); the stepwise path takes t_max. Since the basis grows only as far as
// its bound needs, the counts grow about as t_max^(1/4) on kernel spectra: 26-34 for 500
// on Adult, Insurance and Ijcnn in float64 (16-22 with float32 storage), 46 and 70 for
// 20000 and 100000 on a 4000 x 1000 problem. A sqrt(t_max) model (41 at 500) sent Adult
// to the slower gram solver.
double lanczos_products(Index max_iter, Index k) {
    const double t = double(max_iter);
    return std::min({t, 8.0 + 4.0 * std::sqrt(std::sqrt(t)), double(k)});
}

// The iteration that "cg" and "hybrid" are expected to select on the hold-out set: what
// the model prices when the path ends `patience` iterations after its best. It is not
// known before the path runs, and it spreads over two orders of magnitude across
// problems; both solvers' costs are linear in it, so its mean prices their expected
// costs: its mean on the paper's datasets at m = 300-2000 (measured:
// benchmarks/results/auto/history.md, "How many products auto prices").
constexpr double kExpectedKrylovBest = 100.0;


// stored: bytes per stored K_nm or H entry; computed: sizeof(T). With float32 storage the
// GEMMs of the normal equations run in float (rates.flops32), and the direct
// pass pays for widening each float entry to double (see pass_bytes below). length: the
// products with H and the iterates validated (expected_path_length): gd's iterates come
// from a Lanczos basis, so its path takes tens of products and validates the basis (k
// vectors) rather than every iterate, which makes the direct solver's n k bytes per
// product cheaper than forming A^T A (2-3 n k^2 flops) wherever K_nm fits in memory.
// inverse_pending: the factor is held as U (FitFactor), and the solvers that need R as a
// matrix (gram, spectral) pay for its k^3 / 3-flop inverse, which direct never forms.
// q: the outputs (columns of Y). rates: the machine's (nytro::machine_rates): the choice
// is a function of the shapes and of these alone. The costs are seconds at these rates.
struct SolverCosts {
    double direct, gram, spectral;
    bool direct_fits;

    Solver cheapest() const {
        if (spectral < gram && (!direct_fits || spectral < direct)) return Solver::spectral;
        return direct_fits && direct <= gram ? Solver::direct : Solver::gram;
    }
    double of(Solver solver) const {
        return solver == Solver::direct ? direct : solver == Solver::spectral ? spectral : gram;
    }
};

SolverCosts solver_costs(Index n, Index n_val, Index k, Index q, PathLength length, bool upper, bool inverse_pending,
                         double stored, double computed, bool kernel_first, const MachineRates& rates) {
    const double kk = double(k) * double(k);
    const double products = length.products, iterations = length.iterations;
    const double flop_rate = stored < 8 ? rates.flops32 : rates.flops;
    // Validation: about 2 n_val k flops (as GEMMs) per iterate, or per basis vector.
    const double validation = products * 2.0 * double(n_val) * double(k) / rates.flops;
    // gram: A = K R per block (n k^2 triangular, 2 n k^2 dense) and A^T A (n k^2 with the
    // symmetric half), or by the kernel-first route K^T K (n k^2) and two k^3 products;
    // then one product with H per iteration, reading its lower half.
    const double normal_equations =
        (kernel_first ? double(n) * kk + 2.0 * kk * double(k) : (upper ? 2.0 : 3.0) * double(n) * kk) / flop_rate +
        (inverse_pending ? kk * double(k) / 3.0 / rates.flops : 0.0);
    const double gram = normal_equations + products * 0.5 * kk * stored / rates.bytes + validation;
    // spectral: the same, an eigendecomposition (~9 k^3 flops at kEigenRateFraction of
    // the product rate) and R V (k^3), then O(k) per iteration (it always steps: Lanczos
    // would save nothing there); each validated iterate costs 2 n_val k flops, plus either
    // its map to the centres (2 k^2 q) or, once, the hold-out kernel's (2 n_val k^2; see
    // SpectralSolver).
    const double validated = iterations * double(q);
    const double spectral =
        normal_equations +
        (9.0 / detail::kEigenRateFraction + 1.0) * kk * double(k) / rates.flops +
        (n_val > 0 ? std::min(validated, double(n_val)) * 2.0 * kk : 0.0) / rates.flops +
        iterations * 2.0 * double(n_val) * double(k) / rates.flops;
    // direct: a pass over the stored n x k kernel and two products with R (or solves
    // with U, reading as much; kept in T) per product. A float32 pass with float64 sums
    // widens each entry in registers, which costs it about 30% over a plain float32 pass
    // (bench_kernels, 40000 x 5000).
    const double pass_bytes = stored < computed ? 1.3 * stored : stored;
    // The stored kernel is fresh memory, and its first touch costs (fresh_bytes).
    const double first_touch = double(n) * double(k) * stored / rates.fresh_bytes;
    const double direct =
        products * (double(n) * double(k) * pass_bytes + (upper ? 1.0 : 2.0) * kk * computed) / rates.bytes +
        validation + first_touch;
    const bool direct_fits = double(n) * double(k) * stored <= 0.7 * double(available_memory_bytes());
    return {direct, gram, spectral, direct_fits};
}

using detail::largest_row_norm;

// The exponent e that brings the largest of ||a_i|| max(1, scale_i) over A's rows into
// [2^6, 2^7) when A is multiplied by 2^e (0 for a zero A). With e_x for X (its row
// scales included) and e_c for the centres, the linear kernel of the scaled rows, x.c
// 2^(e_x + e_c), is below 2^14 in magnitude (Cauchy-Schwarz), also once its rows are
// scaled: within half precision's largest value (65504) with room for the rounding of
// the float products, and with the largest entries at the top of half's range, whose
// relative rounding is the same at every magnitude.
template <class T>
int half_range_exponent(const MatrixCRef<T>& A, const Vector<T>* row_scale) {
    const double largest = largest_row_norm<T>(A, row_scale);
    if (!(largest > 0) || !std::isfinite(largest)) return 0;
    int exponent = 0;
    std::frexp(largest, &exponent);  // largest = f 2^exponent, f in [0.5, 1)
    return 7 - exponent;
}

// A's float copy, times 2^exponent: the power of two is applied in T (exactly), before
// the rounding to float, so that features beyond float's range come into it.
template <class T>
Matrix<float> float_copy_times(const MatrixCRef<T>& A, int exponent) {
    if (exponent == 0) return A.template cast<float>();
    return A.unaryExpr([exponent](T value) { return static_cast<float>(std::ldexp(value, exponent)); });
}

// Direct: K_nm stored (in precision S); H p = R^T K^T K R p with one fused pass over K.
// The linear kernel in half precision is stored as 2^e K_nm (see half_range_exponent):
// its values scale as |x|^2 and, kept as they are, features of 1e-4 rounded every entry
// to 0 and features of 150 overflowed half's 65504. Powers of two multiply exactly, so
// the products with the stored matrix are folded back by 2^-2e (H p) and 2^-e (c), and
// the problem is the one the unscaled kernel gives, rounded at half's relative precision.
template <class T, class S>
struct DirectSolver {
    Matrix<S> K;
    Matrix<T> lifted;
    std::unique_ptr<detail::FusedPass<T, S>> pass;
    int stored_exponent = 0;  // K holds 2^stored_exponent K_nm

    void build(detail::LinearProblem<T>& problem, const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
               const detail::NystromSetup<T>& setup, const KernelSpec& kernel, int threads, const Callback& callback) {
        const detail::FitFactor<T>& factor = setup.factor;
        if constexpr (std::is_same_v<S, T>) {
            K = kernel_matrix<T>(X, setup.used, kernel, threads, callback);
        } else {
            // Computed in float, stored as S (float or half); checked before X's float copy.
            check_allocation(double(X.rows()) * double(setup.used.rows()) * sizeof(S),
                             "K_nm (" + shape_text<S>(X.rows(), setup.used.rows()) + ")");
            int x_exponent = 0, c_exponent = 0;
            if (std::is_same_v<S, Eigen::half> && !kernel.distance_based()) {
                // The linear kernel is bilinear: k(2^a x, 2^b c) = 2^(a+b) k(x, c).
                x_exponent = half_range_exponent<T>(X, setup.row_scale);
                c_exponent = half_range_exponent<T>(setup.used, nullptr);
            }
            stored_exponent = x_exponent + c_exponent;
            K = detail::kernel_stored<float, S>(float_copy_times<T>(X, x_exponent),
                                                float_copy_times<T>(setup.used, c_exponent), kernel, threads,
                                                callback);
        }
        // Sample weights: the rows of K_nm scaled once as stored (Y comes scaled alike).
        if (setup.row_scale) detail::scale_rows<S>(K, setup.row_scale->template cast<S>());
        pass = std::make_unique<detail::FusedPass<T, S>>(K, threads);
        problem.dim = setup.factor.rank();
        problem.iteration_bytes = double(K.size()) * sizeof(S) + 2.0 * factor.lift_bytes();
        // R p and R^T g by solves with U where the factor holds it (R never formed).
        // R is support x rank: the qr factor's support keeps every centre, whatever the rank.
        const Index support_rows = Index(factor.support().size());
        problem.apply = [this, &factor, support_rows, threads](const Matrix<T>& p, Matrix<T>& out) {
            // p has q columns on the path but one in the Lanczos estimate of the step.
            lifted.resize(support_rows, p.cols());
            factor.lift(p, lifted, threads);
            factor.lift_transposed(pass->normal(lifted), out, threads);
            fold(out, 2 * stored_exponent);
        };
        // c = R^T K^T y, from the pass with a zero iterate: K^T (K 0 - y) = -K^T y.
        const Matrix<T> zero = Matrix<T>::Zero(support_rows, Y.cols());
        problem.rhs.resize(problem.dim, Y.cols());
        factor.lift_transposed(-pass->normal_residual(zero, Y), problem.rhs, threads);
        fold(problem.rhs, stored_exponent);
        problem.to_alpha = [&factor, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            factor.lift(betas, alphas, threads);
        };
    }

    // out times 2^-exponent, entry by entry (ldexp: exact, and graded near underflow).
    static void fold(Matrix<T>& out, int exponent) {
        if (exponent == 0) return;
        out = out.unaryExpr([exponent](T value) { return std::ldexp(value, -exponent); });
    }
};

// Gram: H = A^T A and C = A^T y accumulated once from streamed kernel blocks (K_nm never
// stored), then every product is a k x k matrix-vector product with H kept in precision S,
// reading only H's lower triangle.
template <class T, class S>
struct GramSolver {
    Matrix<S> H;
    std::unique_ptr<detail::SymmetricPass<T, S>> pass;

    void build(detail::LinearProblem<T>& problem, const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
               const detail::NystromSetup<T>& setup, const KernelSpec& kernel, int threads, const Callback& callback) {
        // The symmetric pass reads H's lower triangle only: it is not mirrored.
        auto normal = [&] {
            if constexpr (std::is_same_v<S, T>)
                return detail::stream_normal_equations<T>(X, Y, setup.used, setup.factor.formed(threads, callback), kernel,
                                                          threads, callback,
                                                          false, /*mirror=*/false, setup.kernel_first,
                                                          setup.row_scale);
            else
                return detail::stream_float_normal_equations<T>(X, Y, setup.used, setup.factor.formed(threads, callback), kernel,
                                                                threads,
                                                                callback, setup.row_scale);
        }();
        H = std::move(normal.H);
        problem.rhs = std::move(normal.C);
        const detail::FitFactor<T>& factor = setup.factor;
        problem.dim = H.rows();
        pass = std::make_unique<detail::SymmetricPass<T, S>>(H, threads);
        problem.iteration_bytes = 0.5 * double(H.size()) * sizeof(S);
        problem.apply = [this](const Matrix<T>& p, Matrix<T>& out) { pass->apply(p, out); };
        problem.to_alpha = [&factor, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
            factor.lift(betas, alphas, threads);
        };
    }
};

// Whether the spectral solver turns the hold-out kernel into K_val R V (see SpectralSolver).
bool rotates_hold_out(Index n_val, Index validated_columns) { return n_val < validated_columns; }

// Spectral: H = A^T A = V diag(s) V^T once, then the iterations run on the diagonal
// system diag(s) b = V^T c (the same iterates, rotated: every method is invariant under
// the change of orthonormal basis), O(k) each. Each validated iterate is either mapped to
// coefficients over the centres, R V b (2 m k q flops), and multiplied by K_val, or, where
// that costs more, the hold-out kernel is turned into K_val R V once (2 n_val m k flops)
// and multiplies b directly: the second pays only for fewer hold-out rows than validated
// columns (iterates times outputs), and a hold-out set of 20% of the rows is larger than
// max_iter = 500 from n = 2500 on.
template <class T, class S>
struct SpectralSolver {
    explicit SpectralSolver(Index validated_columns) : validated_columns(validated_columns) {}

    Index validated_columns;  // the most columns the path validates (max_iter q)
    Vector<T> values;
    Matrix<T> basis;  // W = R V: eigen-coordinates -> coefficients over the centres

    void build(detail::LinearProblem<T>& problem, const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
               const detail::NystromSetup<T>& setup, const KernelSpec& kernel, int threads, const Callback& callback) {
        constexpr bool low = !std::is_same_v<S, T>;
        auto normal =
            detail::stream_normal_equations<T>(X, Y, setup.used, setup.factor.formed(threads, callback), kernel, threads,
                                               callback, low, true,
                                               setup.kernel_first, setup.row_scale);
        // A linear kernel on |x| ~ 1e80 overflows A^T A: said here, as the Tikhonov
        // solvers say it, not as an eigendecomposition that "did not converge".
        if (!normal.H.allFinite())
            throw std::runtime_error(std::string("A^T A is not finite: ") + detail::kOverflowAdvice);
        Matrix<T> V;
        symmetric_eigen<T>(normal.H, values, V, callback);
        values = values.cwiseMax(T(0));  // rounding-level negative eigenvalues of A^T A
        if (callback) callback({"eigendecomposition", 1, 1});
        problem.dim = values.size();
        problem.rhs = V.transpose() * normal.C;
        basis.resize(setup.used.rows(), problem.dim);
        setup.factor.lift(V, basis, threads);
        problem.apply = [this](const Matrix<T>& p, Matrix<T>& out) { out = values.asDiagonal() * p; };
        problem.iteration_bytes = double(values.size()) * sizeof(T);
        if (setup.validation && rotates_hold_out(setup.validation->targets().rows(), validated_columns) &&
            setup.validation->change_basis(basis, threads)) {
            // Validate and select in eigen-coordinates; map only the selected iterate.
            problem.alpha_rows = problem.dim;
            problem.to_alpha = [](const MatrixCRef<T>& betas, MatrixRef<T> alphas) { alphas = betas; };
            problem.finish = [this, threads](const Matrix<T>& coords) {
                Matrix<T> alpha(basis.rows(), coords.cols());
                detail::multiply<T>(basis, coords, alpha, threads);
                return alpha;
            };
        } else {
            problem.to_alpha = [this, threads](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
                detail::multiply<T>(basis, betas, alphas, threads);
            };
        }
    }
};

// The largest m with a m^2 + b m <= budget.
double largest_m(double a, double b, double budget) {
    if (budget <= 0) return 0;
    return a > 0 ? (-b + std::sqrt(b * b + 4.0 * a * budget)) / (2.0 * a) : budget / b;
}

// The fit's peak memory, planned from the shapes before K_mm is formed. m is the
// number of centres (the factor may keep fewer: the plan is then an upper bound).
// stored: bytes per stored K_nm or A^T A entry; computed: sizeof(T).
detail::MemoryPlan plan_nytro(Index n, Index d, Index m, Index n_val, Index q, const NytroOptions& options,
                              double stored, double computed) {
    const double nn = double(n), mm = double(m), m2 = mm * mm;
    const Solver solver = options.storage == Storage::float16 ? Solver::direct : options.solver;
    detail::MemoryPlan plan("a NYTRO fit of " + std::to_string(n) + " rows on m = " + std::to_string(m) +
                            " centres (n_centers), solver '" + std::string(to_string(options.solver)) +
                            "', storage " + (stored < computed ? (stored < 4 ? "'float16'" : "'float32'") : "None"));
    const std::string square = computed < 8 ? shape_text<float>(mm, mm) : shape_text<double>(mm, mm);
    plan.add(detail::MemoryPlan::factor, "K_mm and its factor (2 x " + square + ")", 2.0 * m2 * computed);
    // Stage 2 keeps the factor (m x m) beside what the solver builds.
    const double factor_kept = m2 * computed;
    const double direct = nn * mm * stored + (stored < computed ? nn * double(d) * 4.0 : 0.0);
    const double blocks = 16384.0 * mm * computed;  // the streamed kernel blocks, a few thousand rows in all
    const double gram = m2 * (stored + computed) + blocks;  // R, A^T A
    const double spectral = gram + 2.0 * m2 * computed + double(n_val) * mm * computed;  // V, workspace, K_val R V
    const double basis = mm * double(std::min<Index>(options.max_iter, m) + 1) * double(q) * 8.0;
    std::string what;
    double bytes = 0;
    if (solver == Solver::direct) {
        what = "K_nm (" + std::to_string(n) + " x " + std::to_string(m) + ", " + format_number(stored) + " B each)";
        bytes = direct;
    } else if (solver == Solver::spectral) {
        what = "R, A^T A, its eigenvectors and K_val R V (m x m and n_val x m)";
        bytes = spectral;
    } else if (solver == Solver::gram) {
        what = "R and A^T A (m x m) and the streamed kernel blocks";
        bytes = gram;
    } else {
        what = "K_nm or, where it does not fit, R and A^T A (solver 'auto')";
        bytes = std::min(direct, gram);
    }
    plan.add(detail::MemoryPlan::solve, "the factor kept (" + square + ")", factor_kept);
    plan.add(detail::MemoryPlan::solve, what, bytes);
    plan.add(detail::MemoryPlan::solve, "the Krylov basis (at most)", basis);

    // What fits instead: the largest m for each solver, and the cheaper storage.
    const double budget = double(available_memory_bytes());
    const double basis_per_m = double(std::min<Index>(options.max_iter, m) + 1) * double(q) * 8.0;
    const double m_factor = std::sqrt(budget / (2.0 * computed));
    const double m_gram =
        std::min(m_factor, largest_m(2.0 * computed + stored, basis_per_m + blocks / mm, budget));
    const double m_direct =
        std::min(m_factor, largest_m(computed, nn * stored + basis_per_m, budget - (direct - nn * mm * stored)));
    auto centres = [](double value) {
        return std::to_string(static_cast<long long>(std::max(0.0, std::floor(value))));
    };
    if (options.storage != Storage::float16)
        plan.advise("n_centers <= " + centres(m_gram) + " with solver='gram' (K_nm never stored)");
    plan.advise("n_centers <= " + centres(m_direct) + " with solver='direct'");
    if (stored == computed && computed == 8.0)
        plan.advise("storage='float32' (K_nm or A^T A in 4 bytes an entry), or 'float16' (K_nm in 2, "
                    "solver='direct')");
    return plan;
}

// Builds the chosen solver into `problem`; the returned object owns what the problem's
// functions refer to and must outlive them.
template <class T, class S>
std::shared_ptr<void> build_solver(Solver solver, detail::LinearProblem<T>& problem, const MatrixCRef<T>& X,
                                   const MatrixCRef<T>& Y, const detail::NystromSetup<T>& setup, const KernelSpec& kernel,
                                   int threads, const Callback& callback, Index validated_columns) {
    // Lanczos iterates to within 64 float32 epsilons of the stepwise ones in either low
    // storage: float16's epsilon (2^-10) would let them drift by 6% of the iterate.
    problem.storage_epsilon = std::is_same_v<S, T> ? 0.0 : double(std::numeric_limits<float>::epsilon());
    auto built = [&](auto solver_object) -> std::shared_ptr<void> {
        solver_object->build(problem, X, Y, setup, kernel, threads, callback);
        return solver_object;
    };
    if constexpr (std::is_same_v<S, Eigen::half>) {
        return built(std::make_shared<DirectSolver<T, S>>());  // float16: direct only (nytro_path checks)
    } else {
        if (solver == Solver::direct) return built(std::make_shared<DirectSolver<T, S>>());
        if (solver == Solver::spectral) return built(std::make_shared<SpectralSolver<T, S>>(validated_columns));
        return built(std::make_shared<GramSolver<T, S>>());
    }
}

}  // namespace

template <class T>
PathLength expected_path_length(const IterativeOptions& options, Index k, bool validated) {
    const double t_max = double(options.max_iter);
    if (detail::lanczos_applies<T>(options)) {
        const double products = lanczos_products(options.max_iter, k);
        return {products, t_max, products};
    }
    const bool krylov = options.method == Method::cg || options.method == Method::hybrid;
    if (krylov && validated && options.stopping == Stopping::best && options.patience > 0) {
        const double t = std::min(t_max, kExpectedKrylovBest + double(options.patience));
        return {t, t, t_max};
    }
    return {t_max, t_max, t_max};
}

template PathLength expected_path_length<float>(const IterativeOptions&, Index, bool);
template PathLength expected_path_length<double>(const IterativeOptions&, Index, bool);

template <class T>
PathResult<T> nytro_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                         const KernelSpec& kernel, const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                         const NytroOptions& options) {
    detail::check_training_data<T>(X, Y, X_val, Y_val);
    detail::check_target_range<T>(Y, Y_val);
    detail::check_centers<T>(centers, X);
    detail::check_iterative_options(options);
    detail::check_named(to_string(options.solver), "solver", int(options.solver));
    detail::check_named(to_string(options.storage), "storage", int(options.storage));
    detail::check_named(to_string(options.factor.method), "factor", int(options.factor.method));
    const int threads = detail::resolve_threads(options.n_threads);
    const bool half = options.storage == Storage::float16;
    const bool low = (options.storage == Storage::float32 || half) && !std::is_same_v<T, float>;
    FactorOptions factor_options = options.factor;
    if (half) {
        // K_nm in half precision: its rounding, 2^-11 relative, reaches A = K_nm R through
        // R, whose columns grow as 1 / sqrt(Schur residual) of their pivot. With the
        // default cut (m eps, about 1e-12) that amplified it 1000-fold: on Ijcnn (m = 5000)
        // the validation path moved by 0.4 and on Covertype (120000 rows, m = 6000) by
        // 0.025. Cut at kFloat16RankTol, the same paths agree with float32 storage at the
        // full rank to 4e-5 and 2e-5 (the factor keeps 2537 and 4706 centres), and that
        // K_nm has as many columns fewer.
        require(options.solver == Solver::automatic || options.solver == Solver::direct,
                "storage='float16' stores K_nm (solver 'direct' or 'auto'), got solver='" +
                    std::string(to_string(options.solver)) + "'");
        require(options.factor.method != FactorMethod::cholesky,
                "storage='float16' needs a rank-revealing factor ('pivoted' or 'qr'), got factor='cholesky'");
        if (factor_options.rank_tol < 0) factor_options.rank_tol = kFloat16RankTol;
    }
    if (low && !kernel.distance_based()) {
        // The linear kernel in float32 (float32 storage's K_nm; either storage's hold-out
        // kernel) needs ||x||^2 within float's range. float16's K_nm is stored scaled
        // (DirectSolver) and never leaves half's: without a hold-out set nothing is counted.
        const bool held_out = X_val.rows() > 0;
        const double largest = std::max({half ? 0.0 : largest_row_norm<T>(X, nullptr),
                                         largest_row_norm<T>(X_val, nullptr),
                                         half && !held_out ? 0.0 : largest_row_norm<T>(centers, nullptr)});
        detail::check_float_linear_kernel(largest, to_string(options.storage),
                                          half ? "the hold-out kernel" : "K_nm and the hold-out kernel");
    }
    const double stored = half ? 2.0 : low ? 4.0 : double(sizeof(T));  // bytes per stored K_nm or H entry
    const detail::MemoryPlan plan = plan_nytro(X.rows(), X.cols(), centers.rows(), X_val.rows(), Y.cols(), options,
                                               stored, double(sizeof(T)));
    plan.check();
    // Sample weights: the unweighted problem on the rows of K_nm and Y scaled by sqrt(w'_i).
    const Vector<T> row_scale = detail::row_scales<T>(options.sample_weights, X.rows(), "sample_weights");
    const Matrix<T> Y_scaled = row_scale.size() > 0 ? Matrix<T>(row_scale.asDiagonal() * Y) : Matrix<T>();
    const MatrixCRef<T> Yw = row_scale.size() > 0 ? MatrixCRef<T>(Y_scaled) : Y;
    return plan.guard([&] {
        auto setup = detail::prepare_nystrom<T>(centers, kernel, factor_options, threads, options.callback);
        if (row_scale.size() > 0) setup.row_scale = &row_scale;
        PathResult<T> result;
        result.rank = setup.factor.rank();
        result.solver = half ? Solver::direct : options.solver;
        // The cost model's prices at the rates the choice read (none where the solver was
        // given): set when solver='auto' chose.
        std::optional<MachineRates> rates;
        bool kernel_first = !low;
        auto costs = [&](PathLength length) {
            return solver_costs(X.rows(), X_val.rows(), setup.used.rows(), Y.cols(), length,
                                setup.factor.upper_triangular(), setup.factor.inverse_pending(), stored,
                                double(sizeof(T)), kernel_first, *rates);
        };
        if (result.solver == Solver::automatic) {
            // The kernel-first route halves the normal equations' flops but needs a check of
            // cond(K_mm) (a Lanczos run on R^T R): made only when the choice hinges on it.
            rates = machine_rates(threads);
            const PathLength length = expected_path_length<T>(options, setup.used.rows(), X_val.rows() > 0);
            result.solver = costs(length).cheapest();
            if (result.solver != Solver::direct && !low) {
                setup.kernel_first = detail::kernel_first_is_accurate<T>(
                    X.rows(), setup.factor.formed(threads, options.callback), threads);
                kernel_first = *setup.kernel_first;
                result.solver = costs(length).cheapest();
            }
        }
        const auto started = std::chrono::steady_clock::now();

        // The solver's own big allocation comes first; the hold-out kernel is stored only if
        // it fits beside it (else recomputed in blocks at each validation).
        const double k_rows = double(setup.used.rows());
        const double reserved = result.solver == Solver::direct ? double(X.rows()) * k_rows * stored
                                                                : k_rows * k_rows * (stored + 2.0 * sizeof(T));
        // The spectral solver may turn K_val into K_val R V at once (it must then be stored); the
        // others may validate only a few times (gd's Lanczos path: once per stretch of its basis),
        // so they store it only once recomputing it has cost about its first touch.
        // Saturated: max_iter near 2^63 (a "run until the rule stops" setting) times q
        // would overflow, which is undefined.
        const Index validated_columns = options.max_iter > std::numeric_limits<Index>::max() / Y.cols()
                                            ? std::numeric_limits<Index>::max()
                                            : options.max_iter * Y.cols();
        const bool rotated = result.solver == Solver::spectral && rotates_hold_out(X_val.rows(), validated_columns);
        setup.validation = detail::make_validation<T>(X_val, Y_val, setup.used, kernel, threads, low, reserved,
                                                      /*defer=*/!rotated, options.callback);
        detail::configure_validation(setup.validation.get(), options);

        detail::LinearProblem<T> problem;
        problem.q = Y.cols();
        problem.alpha_rows = setup.used.rows();
        const auto solver = half  ? build_solver<T, Eigen::half>(result.solver, problem, X, Yw, setup, kernel, threads,
                                                                options.callback, validated_columns)
                            : low ? build_solver<T, float>(result.solver, problem, X, Yw, setup, kernel, threads,
                                                           options.callback, validated_columns)
                                  : build_solver<T, T>(result.solver, problem, X, Yw, setup, kernel, threads,
                                                       options.callback, validated_columns);

        IterativeOptions loop = options;
        loop.n_threads = threads;
        detail::run_path_with_step<T>(problem, X.rows(), setup.validation.get(), loop, result,
                                      detail::kernel_bound<T>(X, kernel));
        if (rates) {
            // The solver's time against the model's price of the path that ran: rates
            // that priced it far off are this process's to measure again
            // (detail::note_fit_seconds), whether they were read from the cache after a
            // busy moment or the machine has become busy since.
            const double measured = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            const PathLength ran{double(result.products), double(result.iterations_run)};
            detail::note_fit_seconds(*rates, costs(ran).of(result.solver), measured);
        }
        result.coef = detail::scatter_rows<T>(result.coef, setup.factor.support(), centers.rows());
        return result;
    });
}

template PathResult<float> nytro_path<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                             const MatrixCRef<float>&, const KernelSpec&, const MatrixCRef<float>&,
                                             const MatrixCRef<float>&, const NytroOptions&);
template PathResult<double> nytro_path<double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                               const MatrixCRef<double>&, const KernelSpec&, const MatrixCRef<double>&,
                                               const MatrixCRef<double>&, const NytroOptions&);

}  // namespace nytro
