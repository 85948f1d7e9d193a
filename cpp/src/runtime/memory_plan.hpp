// The peak memory of a fit, planned before its first large allocation: each array it
// will hold, by stage, checked against the memory available now (nytro::
// available_memory_bytes: MemAvailable, the cgroup's limit, RLIMIT_AS / RLIMIT_DATA).
// A fit that cannot fit is refused before anything is allocated, with the plan and what
// to change in the message; a std::bad_alloc later (an estimate short of the truth, or
// memory taken by someone else meanwhile) becomes the same out_of_memory.
#pragma once

#include "nytro/errors.hpp"

#include <new>
#include <string>
#include <utility>
#include <vector>

namespace nytro::detail {

class MemoryPlan {
public:
    // Arrays held through the whole fit, and those of its two stages, which do not
    // coexist: the factor of K_mm (stage 1) and the solver's (stage 2).
    enum Stage { whole = 0, factor = 1, solve = 2 };

    explicit MemoryPlan(std::string task) : task_(std::move(task)) {}

    void add(Stage stage, const std::string& what, double bytes) { items_.push_back({stage, what, bytes}); }
    // What to change when it does not fit, e.g. "n_centers <= 14000 with solver='gram'".
    void advise(const std::string& text) { advice_.push_back(text); }

    double peak() const;
    std::string describe() const;

    // Throws out_of_memory(describe()) when the peak exceeds the memory available now.
    void check() const;

    // body(), with a std::bad_alloc from it rethrown as out_of_memory carrying the plan.
    template <class Body>
    auto guard(Body&& body) const -> decltype(body()) {
        try {
            return body();
        } catch (const std::bad_alloc&) {
            throw out_of_memory("ran out of memory (std::bad_alloc) in " + describe());
        }
    }

private:
    struct Item {
        Stage stage;
        std::string what;
        double bytes;
    };
    std::string task_;
    std::vector<Item> items_;
    std::vector<std::string> advice_;
};

// Gigabytes as "%.3g GB".
std::string gigabytes(double bytes);

}  // namespace nytro::detail
