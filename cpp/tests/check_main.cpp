// Runner of the check.hpp tests: `test_x [name-fragment]`, `test_x --list`.
#include "check.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace check {

std::vector<Case>& registry() {
    static std::vector<Case> cases;
    return cases;
}

namespace {
int failures_in_case = 0;
}

void fail(const char* file, int line, const std::string& message) {
    ++failures_in_case;
    std::cout << "  " << file << ":" << line << ": " << message << std::endl;
}

bool verbose() {
    static const bool on = [] {
        const char* value = std::getenv("NYTRO_CHECK_VERBOSE");
        return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
    }();
    return on;
}

void note(const char* file, int line, const std::string& message) {
    std::cout << "  " << file << ":" << line << ": " << message << std::endl;
}

}  // namespace check

int main(int argc, char** argv) {
    using clock = std::chrono::steady_clock;
    const char* filter = argc > 1 ? argv[1] : "";
    if (std::strcmp(filter, "--list") == 0) {
        for (const auto& c : check::registry()) std::cout << c.name << "\n";
        return 0;
    }
    int run = 0, failed = 0;
    const auto all_start = clock::now();
    for (const auto& c : check::registry()) {
        if (std::strstr(c.name, filter) == nullptr) continue;
        ++run;
        check::failures_in_case = 0;
        const auto start = clock::now();
        try {
            c.body();
        } catch (const check::Abort&) {
        } catch (const std::exception& error) {
            check::fail("(test)", 0, std::string("unexpected exception: ") + error.what());
        } catch (...) {
            check::fail("(test)", 0, "unexpected non-std exception");
        }
        const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
        const bool ok = check::failures_in_case == 0;
        failed += ok ? 0 : 1;
        std::printf("[%s] %s (%.0f ms)\n", ok ? " OK " : "FAIL", c.name, ms);
        std::fflush(stdout);
    }
    const double s = std::chrono::duration<double>(clock::now() - all_start).count();
    std::printf("%d tests, %d failed (%.2f s)\n", run, failed, s);
    if (run == 0) {
        std::printf("no test matches '%s'\n", filter);
        return 1;
    }
    return failed == 0 ? 0 : 1;
}
