// operator_path: the path engine of the in-memory solvers over a caller's operators.
#include "nytro/solvers.hpp"

#include "paths/gradient_path.hpp"
#include "nytro/errors.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace nytro {
namespace {

// The caller's hold-out errors as the paths read a hold-out set. Its values come from
// wherever the caller holds the rows, so the Krylov paths validate coefficient sets
// through it (it has no images of their bases: HoldOut::in_memory is null), or, where the
// caller gives them, the R factors of the images of hybrid's bases.
template <class T>
class CallerHoldOut final : public detail::HoldOut<T> {
public:
    CallerHoldOut(const OperatorProblem<T>& problem, Metric metric) : problem_(problem), metric_(metric) {}

    void rmse(const MatrixCRef<T>& alphas, Index q, std::vector<double>& out, int) const override {
        const Index count = alphas.cols() / q;
        const std::vector<double> values = problem_.holdout(Matrix<T>(alphas), q);
        if (Index(values.size()) != count)
            throw std::invalid_argument("holdout must return one value per coefficient set: " +
                                        std::to_string(count) + " expected, got " + std::to_string(values.size()));
        out.insert(out.end(), values.begin(), values.end());
    }
    Metric metric() const override { return metric_; }
    double bytes() const override { return problem_.holdout_bytes; }
    Index most_per_call() const override { return problem_.holdout_most; }
    bool has_image_factors() const override { return bool(problem_.holdout_factors); }
    std::vector<Eigen::MatrixXd> image_factors(const std::vector<Matrix<T>>& bases) const override {
        return problem_.holdout_factors(bases);
    }
    double rows() const override { return problem_.holdout_rows; }

private:
    const OperatorProblem<T>& problem_;
    Metric metric_;
};

}  // namespace

template <class T>
PathResult<T> operator_path(const OperatorProblem<T>& problem, const IterativeOptions& options) {
    detail::check_iterative_options(options);
    const Index k = problem.dim;
    require(k >= 1, "the operator's dimension must be >= 1, got " + std::to_string(k));
    require(problem.rhs.rows() == k && problem.rhs.cols() == problem.q && problem.q >= 1,
                    "rhs must be dim x q");
    require(problem.lift.cols() == k, "lift must have dim columns");
    require(bool(problem.apply), "apply must be given");
    require(problem.n >= 1, "n must be >= 1, got " + std::to_string(problem.n));
    require(!problem.holdout_factors || (problem.holdout && problem.holdout_rows > 0),
            "holdout_factors needs holdout and holdout_rows > 0");

    detail::LinearProblem<T> linear;
    linear.dim = k;
    linear.q = problem.q;
    linear.alpha_rows = problem.lift.rows();
    linear.apply = problem.apply;
    linear.rhs = problem.rhs;
    linear.iteration_bytes = problem.iteration_bytes;
    linear.storage_epsilon = problem.storage_epsilon;
    linear.to_alpha = [&problem](const MatrixCRef<T>& betas, MatrixRef<T> alphas) {
        alphas.noalias() = problem.lift * betas;
    };
    std::optional<CallerHoldOut<T>> holdout;
    if (problem.holdout) holdout.emplace(problem, options.metric);
    PathResult<T> result;
    detail::run_path_with_step(linear, problem.n, holdout ? &*holdout : nullptr, options, result,
                               problem.kernel_bound);
    result.rank = k;
    return result;
}

template PathResult<float> operator_path<float>(const OperatorProblem<float>&, const IterativeOptions&);
template PathResult<double> operator_path<double>(const OperatorProblem<double>&, const IterativeOptions&);

}  // namespace nytro
