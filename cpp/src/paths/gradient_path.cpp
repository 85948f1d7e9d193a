#include "paths/gradient_path.hpp"

#include "paths/hybrid_path.hpp"
#include "paths/lanczos.hpp"
#include "paths/lanczos_path.hpp"
#include "nytro/errors.hpp"
#include "paths/stopping.hpp"
#include "runtime/input_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nytro::detail {
namespace {

// Iterates per validation: between 8 and 64 (see chunk_size).
constexpr Index kMinChunk = 8, kMaxChunk = 64;

// The hold-out kernel is read (or, when it is not stored, recomputed) once per chunk of c
// iterates, and a stopping rule finds on average c / 2 iterates computed past its stop.
// A path stopped at T costs about T V / c + c I / 2 bytes (V: the hold-out kernel, or 4x
// its size when recomputed; I: what one iteration reads), least at c = sqrt(2 T V / I).
// T is not known before the stop, and the rules that stop early are what this is for:
// with T = T_max / 8, c = sqrt(T_max V / (4 I)). That gives 64 for the Gram solver on
// Adult (I = 3.9 MB, V = 51 MB) and 16 for the direct solver on Covertype (I = 17.5 GB,
// V = 33 GB, recomputed), whose window rule stops at t = 38. A path that always runs to
// T_max (stopping "best" without patience) computes nothing past a stop, so it takes the
// largest chunk: the products of a chunk also run faster with more columns.
// `most`: the hold-out set's own limit (HoldOut::most_per_call; 0: kMaxChunk).
Index chunk_size(Index T_max, double validation_bytes, double iteration_bytes, bool runs_to_end, Index most) {
    const Index limit = most > 0 ? most : kMaxChunk;
    if (runs_to_end) return std::min(limit, std::max<Index>(T_max, 1));
    Index c = std::min(kMinChunk, limit);
    if (!(iteration_bytes > 0)) return c;
    const double balance = double(T_max) * validation_bytes / (4.0 * iteration_bytes);
    while (c < limit && double(c) * double(c) < balance) c = std::min(2 * c, limit);
    return c;
}

std::string text(double value) { return format_number(value); }

// Past its basis, an iterate from Lanczos costs O(k) and its validation O(n_val k), less
// than a product and a validation of the stepwise path whenever a product costs more than
// O(dim); the spectral solver's diagonal products do not, and it keeps stepping.
template <class T>
bool by_lanczos(const LinearProblem<T>& problem, const IterativeOptions& options) {
    if (!lanczos_applies<T>(options)) return false;
    if (options.iterates == Iterates::lanczos) return true;
    return !(problem.iteration_bytes > 0) || problem.iteration_bytes > 2.0 * double(problem.dim) * sizeof(double);
}

}  // namespace

template <class T>
bool lanczos_applies(const IterativeOptions& options) {
    if (options.method != Method::gd || options.iterates == Iterates::stepwise) return false;
    if (options.max_iter > kMostCertified) return false;
    return options.iterates == Iterates::lanczos || std::is_same_v<T, double>;
}

void check_iterative_options(const IterativeOptions& options) {
    check_named(to_string(options.method), "method", int(options.method));
    check_named(to_string(options.step_rule), "step_rule", int(options.step_rule));
    check_named(to_string(options.stopping), "stopping", int(options.stopping));
    check_named(to_string(options.iterates), "iterates", int(options.iterates));
    check_named(to_string(options.metric), "metric", int(options.metric));
    // NaN passed for "the grid's smallest" (< 0) and inf fitted the zero model, silently.
    require(std::isfinite(options.hybrid_lambda),
            "hybrid_lambda must be finite (< 0: the grid's smallest), got " + text(options.hybrid_lambda));
    require(options.nu > 0 && std::isfinite(options.nu), "nu must be a finite number > 0, got " + text(options.nu));
    require(options.max_iter >= 1, "max_iter must be >= 1, got " + std::to_string(options.max_iter));
    require(options.patience >= 0, "n_iter_no_change must be >= 1 or None, got " + std::to_string(options.patience));
    require(options.window >= 2, "window must be >= 2, got " + std::to_string(options.window));
    if (options.step_rule == StepRule::fixed)
        require(std::isfinite(options.step_size) && options.step_size > 0,
                "step_size must be a finite number > 0, got " + text(options.step_size));
    require(options.tol < 0 || std::isfinite(options.tol), "tol must be finite");
}

void throw_diverged(Index t, double step) {
    throw std::runtime_error("the iterations diverged at t=" + std::to_string(t) + " (step_size=" + text(step) +
                             "): a stable step is below 2 / lambda_max(A^T A)");
}

double resolve_step(const IterativeOptions& options, Index n, const std::function<double()>& lambda_max,
                    double kernel_bound) {
    if (options.method == Method::cg || options.method == Method::hybrid) return 0.0;
    switch (options.step_rule) {
        case StepRule::fixed: {
            // A step beyond the stable range makes the iterates grow geometrically; it
            // would only show as an overflow hundreds of iterations later, so refuse it.
            const double limit = (options.method == Method::nu ? 1.0 : 2.0) / lambda_max();
            if (!(options.step_size < limit * (1 + 1e-9)))
                throw std::invalid_argument("step_size=" + text(options.step_size) + " is unstable for method '" +
                                            (options.method == Method::nu ? "nu" : "gd") + "': it must be below " +
                                            text(limit) + (options.method == Method::nu ? " = 1" : " = 2") +
                                            " / lambda_max(A^T A)");
            return options.step_size;
        }
        case StepRule::paper:  // an all-zero linear kernel (bound 0) has every step stable
            return 1.0 / (double(n) * (kernel_bound > 0 && std::isfinite(kernel_bound) ? kernel_bound : 1.0));
        case StepRule::automatic: {
            const double top = lambda_max();
            // Not finite: the kernel's products overflowed (a linear kernel on |x| ~ 1e120),
            // which the user mends by rescaling, not by choosing a step.
            if (!std::isfinite(top))
                throw std::runtime_error("lambda_max(A^T A) = " + text(top) + ": " + kOverflowAdvice);
            if (!(top > 0))
                throw std::runtime_error("lambda_max(A^T A) = " + text(top) + ": cannot set step_size='auto'");
            return 1.0 / top;
        }
    }
    return 0;
}

// One iterative regulariser for H beta = c, advanced a step at a time from beta_0 = 0: gd
// or nu (cg's iterates come from a Lanczos basis: run_cg_path).
template <class T>
class Iterates {
public:
    Iterates(const LinearProblem<T>& problem, Method method, double step, double nu)
        : problem_(problem), method_(method), step_(static_cast<T>(step)), nu_(nu),
          rhs_norm_(problem.rhs.template cast<double>().stableNorm()),
          beta_(Matrix<T>::Zero(problem.dim, problem.q)), product_(problem.dim, problem.q) {
        if (method_ == Method::nu) previous_ = beta_;
    }

    // beta_t for t = 1, 2, ... in turn.
    const Matrix<T>& next() {
        ++t_;
        switch (method_) {
            case Method::gd: gradient_step(); break;
            case Method::nu: nu_step(); break;
            case Method::cg:
            case Method::hybrid:
                throw std::logic_error("nytro internal error: cg and hybrid have no stepwise iterates");
        }
        return beta_;
    }

    // Whether the residual c - H beta has grown past twice |c|: for gd and nu with a stable
    // step the residual polynomial is at most 1 in magnitude on H's spectrum, so the
    // residual never exceeds |c| (up to rounding). A larger one means an unstable step
    // (a wrong lambda_max), whose iterates grow geometrically: caught here long before
    // they overflow, rather than returned as a model.
    bool diverging() const { return residual_norm_ > 2 * rhs_norm_; }

private:
    // The residual c - H beta into product_ (which holds H beta), and its norm.
    void residual_from_product() {
        product_ = problem_.rhs - product_;
        residual_norm_ = product_.template cast<double>().stableNorm();
    }

    // beta <- beta + s (c - H beta)
    void gradient_step() {
        problem_.apply(beta_, product_);
        residual_from_product();
        beta_.noalias() += step_ * product_;
    }

    // Brakhage's nu-method (Engl, Hanke, Neubauer, Regularization of Inverse Problems,
    // sec. 6.3): beta_t = beta_{t-1} + mu_t (beta_{t-1} - beta_{t-2}) + omega_t s (c - H beta_{t-1}).
    void nu_step() {
        const double k = double(t_), v = nu_;
        double mu = 0, omega = (4 * v + 2) / (4 * v + 1);
        if (t_ > 1) {
            // As products of ratios, each at most about 1: the quotient of the products
            // overflowed (inf / inf) from nu of about 1e102 on.
            mu = ((k - 1) / (k + 2 * v - 1)) * ((2 * k - 3) / (2 * k + 4 * v - 1)) *
                 ((2 * k + 2 * v - 1) / (2 * k + 2 * v - 3));
            omega = 4 * ((2 * k + 2 * v - 1) / (2 * k + 4 * v - 1)) * ((k + v - 1) / (k + 2 * v - 1));
        }
        problem_.apply(beta_, product_);
        residual_from_product();
        update_ = static_cast<T>(mu) * (beta_ - previous_) + static_cast<T>(omega) * step_ * product_;
        previous_ = beta_;
        beta_ += update_;
    }

    const LinearProblem<T>& problem_;
    Method method_;
    T step_;
    double nu_;
    Index t_ = 0;
    double rhs_norm_ = 0, residual_norm_ = 0;  // gd and nu: |c|, |c - H beta| before the last step
    Matrix<T> beta_, product_, previous_, update_;
};

// The path one product per iteration; `spent`: products of a Lanczos basis that fell short.
template <class T>
void run_stepwise(const LinearProblem<T>& problem, double step, const HoldOut<T>* validation,
                  const IterativeOptions& options, PathResult<T>& result, Index spent) {
    const Index q = problem.q, T_max = options.max_iter;
    Iterates<T> iterates(problem, options.method, step, options.nu);
    result.step_size = step;
    result.validation_rmse.clear();

    auto diverged = [&](Index t) { throw_diverged(t, step); };

    if (validation == nullptr) {
        const Matrix<T>* beta = nullptr;
        for (Index t = 1; t <= T_max; ++t) {
            beta = &iterates.next();
            if (iterates.diverging()) diverged(t);
            if (options.callback) options.callback({"iterate", t, T_max});
        }
        if (!beta->allFinite()) diverged(T_max);
        result.coef.resize(problem.alpha_rows, q);
        problem.to_alpha(*beta, result.coef);
        if (problem.finish) result.coef = problem.finish(result.coef);
        result.n_iter = result.iterations_run = T_max;
        result.products = spent + T_max;
        return;
    }

    StoppingRule rule(options.stopping, options.tol, options.window, options.patience, validation->metric());
    const bool runs_to_end = options.stopping == Stopping::best && options.patience == 0;
    const Index per_chunk = chunk_size(T_max, validation->bytes(), problem.iteration_bytes, runs_to_end,
                                       validation->most_per_call());
    Matrix<T> chunk(problem.dim, per_chunk * q), alphas(problem.alpha_rows, per_chunk * q);
    Matrix<T> selected = Matrix<T>::Zero(problem.alpha_rows, q);
    std::vector<double> rmse;
    bool stop = false;
    Index t = 0;
    while (t < T_max && !stop) {
        const Index count = std::min(per_chunk, T_max - t);
        for (Index j = 0; j < count; ++j) {
            chunk.middleCols(j * q, q) = iterates.next();
            if (iterates.diverging()) diverged(t + j + 1);
            if (options.callback) options.callback({"iterate", t + j + 1, T_max});
        }
        auto block_alphas = alphas.leftCols(count * q);
        problem.to_alpha(chunk.leftCols(count * q), block_alphas);
        rmse.clear();
        validation->rmse(block_alphas, q, rmse, options.n_threads);
        for (Index j = 0; j < count && !stop; ++j) {
            ++t;
            if (!std::isfinite(rmse[j])) diverged(t);
            const auto verdict = rule.push(rmse[j]);
            if (verdict.candidate) selected = block_alphas.middleCols(j * q, q);
            stop = verdict.stop;
        }
    }
    result.validation_rmse = rule.path();
    result.iterations_run = t;
    result.products = spent + t;
    result.n_iter = rule.selected();
    result.coef = problem.finish ? problem.finish(selected) : std::move(selected);
}

// The path from a started basis, certified for this step, or stepped where the basis
// falls short. A rule that can stop early (every rule but "best" without patience) is
// certified a stretch at a time, starting at kFirstStretch iterates: Covertype's window
// rule stops at t = 38 of 500.
template <class T>
void run_from_basis(LanczosGradient<T>& lanczos, const LinearProblem<T>& problem, double step,
                    const HoldOut<T>* validation, const IterativeOptions& options, PathResult<T>& result) {
    constexpr Index kFirstStretch = 64;
    const bool early = validation && (options.stopping != Stopping::best || options.patience > 0);
    const Index horizon = early ? kFirstStretch : options.max_iter;
    lanczos.certify(step, horizon);
    if (lanczos.covers(horizon) && lanczos.run(validation, options, result)) return;
    run_stepwise(problem, step, validation, options, result, lanczos.products());
}

template <class T>
void run_path(const LinearProblem<T>& problem, double step, const HoldOut<T>* validation,
              const IterativeOptions& options, PathResult<T>& result) {
    if (options.method == Method::hybrid)
        throw std::logic_error("nytro internal error: method hybrid needs n (run_path_with_step)");
    if (options.method == Method::cg) return run_cg_path(problem, validation, options, result);
    if (!by_lanczos(problem, options)) return run_stepwise(problem, step, validation, options, result, 0);
    LanczosGradient<T> lanczos(problem, options.max_iter, options.callback, false);
    run_from_basis(lanczos, problem, step, validation, options, result);
}

template <class T>
void run_path_with_step(const LinearProblem<T>& problem, Index n, const HoldOut<T>* validation,
                        const IterativeOptions& options, PathResult<T>& result, double kernel_bound) {
    if (options.method == Method::hybrid) return run_hybrid_path(problem, n, validation, options, result, kernel_bound);
    if (options.method == Method::cg) return run_cg_path(problem, validation, options, result);
    if (!by_lanczos(problem, options)) {
        const double step = resolve_step(options, n, [&] {
            return largest_eigenvalue<T>(problem.dim, problem.apply, options.callback);
        }, kernel_bound);
        return run_stepwise(problem, step, validation, options, result, 0);
    }
    LanczosGradient<T> lanczos(problem, options.max_iter, options.callback, options.step_rule != StepRule::paper);
    const double step = resolve_step(options, n, [&] { return lanczos.top_eigenvalue(); }, kernel_bound);
    run_from_basis(lanczos, problem, step, validation, options, result);
}

template <class T>
double largest_eigenvalue(Index dim, const std::function<void(const Matrix<T>&, Matrix<T>&)>& apply,
                          const Callback& callback) {
    TopEigenvalue top(dim, top_eigenvalue_tolerance<T>());
    Matrix<T> in(dim, 1), out(dim, 1);
    while (!top.done()) {
        in = top.next_vector().template cast<T>();
        apply(in, out);
        top.absorb(out.col(0).template cast<double>());
        if (callback) callback({"step_size", top.steps(), top.most_steps()});
    }
    return top.value();
}

template bool lanczos_applies<float>(const IterativeOptions&);
template bool lanczos_applies<double>(const IterativeOptions&);
template void run_path_with_step<float>(const LinearProblem<float>&, Index, const HoldOut<float>*,
                                        const IterativeOptions&, PathResult<float>&, double);
template void run_path_with_step<double>(const LinearProblem<double>&, Index, const HoldOut<double>*,
                                         const IterativeOptions&, PathResult<double>&, double);
template void run_path<float>(const LinearProblem<float>&, double, const HoldOut<float>*,
                              const IterativeOptions&, PathResult<float>&);
template void run_path<double>(const LinearProblem<double>&, double, const HoldOut<double>*,
                               const IterativeOptions&, PathResult<double>&);
template double largest_eigenvalue<float>(Index, const std::function<void(const Matrix<float>&, Matrix<float>&)>&,
                                          const Callback&);
template double largest_eigenvalue<double>(Index, const std::function<void(const Matrix<double>&, Matrix<double>&)>&,
                                           const Callback&);

}  // namespace nytro::detail
