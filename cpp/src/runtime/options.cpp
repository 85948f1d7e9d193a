#include "nytro/options.hpp"

#include <stdexcept>

namespace nytro {
namespace {

[[noreturn]] void unknown(const char* argument, const std::string& value, const char* accepted) {
    throw std::invalid_argument(std::string(argument) + "='" + value + "' is not one of " + accepted);
}

}  // namespace

FactorMethod parse_factor_method(const std::string& value) {
    if (value == "pivoted") return FactorMethod::pivoted;
    if (value == "qr") return FactorMethod::qr;
    if (value == "cholesky") return FactorMethod::cholesky;
    unknown("factor", value, "'pivoted', 'qr', 'cholesky'");
}

Method parse_method(const std::string& value) {
    if (value == "gd") return Method::gd;
    if (value == "nu") return Method::nu;
    if (value == "cg") return Method::cg;
    if (value == "hybrid") return Method::hybrid;
    unknown("method", value, "'gd', 'nu', 'cg', 'hybrid'");
}

StepRule parse_step_rule(const std::string& value) {
    if (value == "auto") return StepRule::automatic;
    if (value == "paper") return StepRule::paper;
    unknown("step_size", value, "'auto', 'paper' or a positive float");
}

Stopping parse_stopping(const std::string& value) {
    if (value == "best") return Stopping::best;
    if (value == "relative") return Stopping::relative;
    if (value == "window") return Stopping::window;
    unknown("stopping", value, "'best', 'relative', 'window'");
}

Metric parse_metric(const std::string& value) {
    if (value == "rmse") return Metric::rmse;
    if (value == "error") return Metric::error;
    unknown("metric", value, "'rmse', 'error'");
}

Iterates parse_iterates(const std::string& value) {
    if (value == "auto") return Iterates::automatic;
    if (value == "lanczos") return Iterates::lanczos;
    if (value == "stepwise") return Iterates::stepwise;
    unknown("iterates", value, "'auto', 'lanczos', 'stepwise'");
}

Solver parse_solver(const std::string& value) {
    if (value == "auto") return Solver::automatic;
    if (value == "direct") return Solver::direct;
    if (value == "gram") return Solver::gram;
    if (value == "spectral") return Solver::spectral;
    unknown("solver", value, "'auto', 'direct', 'gram', 'spectral'");
}

TikhonovSolver parse_tikhonov_solver(const std::string& value) {
    if (value == "eigh") return TikhonovSolver::eigh;
    if (value == "cholesky") return TikhonovSolver::cholesky;
    unknown("solver", value, "'eigh', 'cholesky'");
}

Storage parse_storage(const std::string& value) {
    if (value == "same") return Storage::same;
    if (value == "float32") return Storage::float32;
    if (value == "float16") return Storage::float16;
    unknown("storage", value, "'same', 'float32', 'float16'");
}

const char* to_string(Solver solver) {
    switch (solver) {
        case Solver::automatic: return "auto";
        case Solver::direct: return "direct";
        case Solver::gram: return "gram";
        case Solver::spectral: return "spectral";
    }
    return "?";
}

}  // namespace nytro
