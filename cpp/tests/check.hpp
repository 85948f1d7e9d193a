// A tiny test framework for the core's CTest suites (no GoogleTest: the build must not
// fetch anything). A test is a function registered with NYTRO_TEST; checks record a
// failure and go on, REQUIRE stops the test. check_main.cpp runs every test whose name
// contains argv[1] (all without an argument) and exits non-zero if any failed.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace check {

struct Case {
    const char* name;
    void (*body)();
};

std::vector<Case>& registry();
void fail(const char* file, int line, const std::string& message);
// NYTRO_CHECK_VERBOSE=1 in the environment: tolerance checks print their margin too.
bool verbose();
void note(const char* file, int line, const std::string& message);

// Thrown by REQUIRE to end the current test.
struct Abort {};

struct Registrar {
    Registrar(const char* name, void (*body)()) { registry().push_back({name, body}); }
};

template <class T>
std::string str(const T& value) {
    std::ostringstream out;
    out.precision(17);
    if constexpr (std::is_enum<T>::value)
        out << static_cast<long long>(value);
    else
        out << value;
    return out.str();
}

// max|a - b| / max|b| over all entries, in double (|a - b| alone when b is zero).
template <class A, class B>
double relative_error(const Eigen::MatrixBase<A>& actual, const Eigen::MatrixBase<B>& expected) {
    const Eigen::MatrixXd a = actual.template cast<double>();
    const Eigen::MatrixXd b = expected.template cast<double>();
    if (a.rows() != b.rows() || a.cols() != b.cols()) return std::numeric_limits<double>::infinity();
    if (b.size() == 0) return 0.0;
    const double diff = (a - b).cwiseAbs().maxCoeff();
    const double scale = b.cwiseAbs().maxCoeff();
    return scale > 0 ? diff / scale : diff;
}

template <class A, class B>
std::string shape_mismatch(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b) {
    if (a.rows() == b.rows() && a.cols() == b.cols()) return "";
    return " (shape " + str(a.rows()) + " x " + str(a.cols()) + " vs " + str(b.rows()) + " x " +
           str(b.cols()) + ")";
}

// Same shape and the same bits in every entry.
template <class A, class B>
bool bitwise_equal(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            const auto x = a(i, j), y = b(i, j);
            if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
        }
    return true;
}

}  // namespace check

#define NYTRO_CHECK_CAT2(a, b) a##b
#define NYTRO_CHECK_CAT(a, b) NYTRO_CHECK_CAT2(a, b)

// NYTRO_TEST(name) { body }
#define NYTRO_TEST(name)                                                             \
    static void name();                                                              \
    static const ::check::Registrar NYTRO_CHECK_CAT(name, _registrar)(#name, &name); \
    static void name()

#define CHECK(condition)                                                                       \
    do {                                                                                       \
        if (!(condition)) ::check::fail(__FILE__, __LINE__, "CHECK(" #condition ") is false"); \
    } while (0)

#define CHECK_MSG(condition, message)                                                         \
    do {                                                                                      \
        if (!(condition))                                                                     \
            ::check::fail(__FILE__, __LINE__, "CHECK(" #condition ") is false: " + (message)); \
    } while (0)

#define REQUIRE(condition)                                                                       \
    do {                                                                                         \
        if (!(condition)) {                                                                      \
            ::check::fail(__FILE__, __LINE__, "REQUIRE(" #condition ") is false");               \
            throw ::check::Abort{};                                                              \
        }                                                                                        \
    } while (0)

#define CHECK_EQ(actual, expected)                                                              \
    do {                                                                                        \
        const auto& check_a_ = (actual);                                                        \
        const auto& check_b_ = (expected);                                                      \
        if (!(check_a_ == check_b_))                                                            \
            ::check::fail(__FILE__, __LINE__,                                                   \
                          #actual " == " #expected ": " + ::check::str(check_a_) + " != " +     \
                              ::check::str(check_b_));                                          \
    } while (0)

// |actual - expected| <= tol for scalars.
#define CHECK_NEAR(actual, expected, tol)                                                         \
    do {                                                                                          \
        const double check_a_ = double(actual), check_b_ = double(expected);                      \
        if (::check::verbose())                                                                   \
            ::check::note(__FILE__, __LINE__, "abs error " + ::check::str(std::abs(check_a_ - check_b_)) + \
                                                  " (tolerance " + ::check::str(tol) + ")");      \
        if (!(std::abs(check_a_ - check_b_) <= double(tol)))                                      \
            ::check::fail(__FILE__, __LINE__,                                                     \
                          #actual " ~ " #expected ": " + ::check::str(check_a_) + " vs " +        \
                              ::check::str(check_b_) + ", tolerance " + ::check::str(tol));       \
    } while (0)

// Matrices: same shape and max|a - b| / max|b| <= rtol.
#define CHECK_CLOSE(actual, expected, rtol)                                                         \
    do {                                                                                            \
        const double check_e_ = ::check::relative_error((actual), (expected));                      \
        if (::check::verbose())                                                                     \
            ::check::note(__FILE__, __LINE__, "relative error " + ::check::str(check_e_) + " (tolerance " + \
                                                  ::check::str(rtol) + ")");                        \
        if (!(check_e_ <= double(rtol)))                                                            \
            ::check::fail(__FILE__, __LINE__,                                                       \
                          #actual " ~ " #expected ": relative error " + ::check::str(check_e_) +     \
                              " > " + ::check::str(rtol) +                                          \
                              ::check::shape_mismatch((actual), (expected)));                       \
    } while (0)

#define CHECK_BITWISE(actual, expected)                                                    \
    do {                                                                                   \
        if (!::check::bitwise_equal((actual), (expected)))                                 \
            ::check::fail(__FILE__, __LINE__,                                              \
                          #actual " and " #expected " are not bitwise equal (relative error " + \
                              ::check::str(::check::relative_error((actual), (expected))) + ")"); \
    } while (0)

// `statement` throws `Type` whose what() contains `fragment` ("" accepts any message).
#define CHECK_THROWS_WITH(statement, Type, fragment)                                            \
    do {                                                                                        \
        bool check_caught_ = false;                                                             \
        try {                                                                                   \
            statement;                                                                          \
        } catch (const Type& check_error_) {                                                    \
            check_caught_ = true;                                                               \
            const std::string check_what_ = check_error_.what();                                \
            if (check_what_.find(fragment) == std::string::npos)                                \
                ::check::fail(__FILE__, __LINE__,                                               \
                              #statement " threw " #Type " without \"" + std::string(fragment) + \
                                  "\" in its message: " + check_what_);                         \
        } catch (const std::exception& check_error_) {                                          \
            check_caught_ = true;                                                               \
            ::check::fail(__FILE__, __LINE__,                                                   \
                          #statement " threw another exception than " #Type ": " +              \
                              std::string(check_error_.what()));                                \
        } catch (...) {                                                                         \
            check_caught_ = true;                                                               \
            ::check::fail(__FILE__, __LINE__, #statement " threw a non-std exception");         \
        }                                                                                       \
        if (!check_caught_) ::check::fail(__FILE__, __LINE__, #statement " did not throw " #Type); \
    } while (0)

#define CHECK_THROWS(statement, Type) CHECK_THROWS_WITH(statement, Type, "")
