#include "nytro/options.hpp"

#include <cstddef>
#include <stdexcept>

namespace nytro {
namespace {

[[noreturn]] void unknown(const char* argument, const std::string& value, const char* accepted) {
    throw std::invalid_argument(std::string(argument) + "='" + value + "' is not one of " + accepted);
}

// Each enum's names, declared once: parse_* and to_string read the same table.
template <class E>
struct Named {
    const char* name;
    E value;
};

constexpr Named<FactorMethod> kFactorMethods[] = {
    {"pivoted", FactorMethod::pivoted}, {"qr", FactorMethod::qr}, {"cholesky", FactorMethod::cholesky}};
constexpr Named<Method> kMethods[] = {
    {"gd", Method::gd}, {"nu", Method::nu}, {"cg", Method::cg}, {"hybrid", Method::hybrid}};
constexpr Named<StepRule> kStepRules[] = {
    {"auto", StepRule::automatic}, {"paper", StepRule::paper}, {"fixed", StepRule::fixed}};
constexpr Named<Stopping> kStoppings[] = {
    {"best", Stopping::best}, {"relative", Stopping::relative}, {"window", Stopping::window}};
constexpr Named<Metric> kMetrics[] = {{"rmse", Metric::rmse}, {"error", Metric::error}};
constexpr Named<Iterates> kIterates[] = {
    {"auto", Iterates::automatic}, {"lanczos", Iterates::lanczos}, {"stepwise", Iterates::stepwise}};
constexpr Named<Solver> kSolvers[] = {
    {"auto", Solver::automatic}, {"direct", Solver::direct}, {"gram", Solver::gram}, {"spectral", Solver::spectral}};
constexpr Named<TikhonovSolver> kTikhonovSolvers[] = {
    {"eigh", TikhonovSolver::eigh}, {"cholesky", TikhonovSolver::cholesky}};
constexpr Named<Storage> kStorages[] = {
    {"same", Storage::same}, {"float32", Storage::float32}, {"float16", Storage::float16}};

// The value named `value` in `table`; otherwise std::invalid_argument naming the
// argument and the table's names (or `accepted`, where the argument takes more).
template <class E, std::size_t N>
E parse(const Named<E> (&table)[N], const char* argument, const std::string& value,
        const char* accepted = nullptr) {
    for (const auto& entry : table)
        if (value == entry.name) return entry.value;
    std::string names;
    for (const auto& entry : table) names += std::string(names.empty() ? "'" : ", '") + entry.name + "'";
    unknown(argument, value, accepted != nullptr ? accepted : names.c_str());
}

template <class E, std::size_t N>
const char* name_of(const Named<E> (&table)[N], E value) {
    for (const auto& entry : table)
        if (entry.value == value) return entry.name;
    return "?";
}

}  // namespace

FactorMethod parse_factor_method(const std::string& value) {
    return parse(kFactorMethods, "factor", value);
}

Method parse_method(const std::string& value) {
    return parse(kMethods, "method", value);
}

StepRule parse_step_rule(const std::string& value) {
    // "fixed" is not a value the user names: a numeric step_size selects it
    constexpr const char* accepted = "'auto', 'paper' or a positive float";
    if (value == "fixed") unknown("step_size", value, accepted);
    return parse(kStepRules, "step_size", value, accepted);
}

Stopping parse_stopping(const std::string& value) {
    return parse(kStoppings, "stopping", value);
}

Metric parse_metric(const std::string& value) {
    return parse(kMetrics, "metric", value);
}

Iterates parse_iterates(const std::string& value) {
    return parse(kIterates, "iterates", value);
}

Solver parse_solver(const std::string& value) {
    return parse(kSolvers, "solver", value);
}

TikhonovSolver parse_tikhonov_solver(const std::string& value) {
    return parse(kTikhonovSolvers, "solver", value);
}

Storage parse_storage(const std::string& value) {
    return parse(kStorages, "storage", value);
}

const char* to_string(FactorMethod value) { return name_of(kFactorMethods, value); }
const char* to_string(Method value) { return name_of(kMethods, value); }
const char* to_string(StepRule value) { return name_of(kStepRules, value); }
const char* to_string(Stopping value) { return name_of(kStoppings, value); }
const char* to_string(Metric value) { return name_of(kMetrics, value); }
const char* to_string(Iterates value) { return name_of(kIterates, value); }
const char* to_string(Solver value) { return name_of(kSolvers, value); }
const char* to_string(TikhonovSolver value) { return name_of(kTikhonovSolvers, value); }
const char* to_string(Storage value) { return name_of(kStorages, value); }

}  // namespace nytro
