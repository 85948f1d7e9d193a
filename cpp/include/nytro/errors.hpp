// Error conventions: bad input -> std::invalid_argument, numerical failure ->
// std::runtime_error, a request larger than the machine's memory -> nytro::out_of_memory.
// Messages name the argument and the offending value.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace nytro {

// Raised before allocating when a requested array cannot fit in physical memory
// (the Python bindings translate it to MemoryError).
class out_of_memory : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Total physical memory of this machine in bytes (0 when it cannot be read).
std::size_t physical_memory_bytes();

// Memory available to new allocations now: the least of MemAvailable (physical memory
// when unknown), the room left under the cgroup's memory.max and under RLIMIT_AS and
// RLIMIT_DATA. memory_limit_text() says which of them binds and at how much.
std::size_t available_memory_bytes();
std::string memory_limit_text();

// Throws out_of_memory if `bytes` cannot fit in the memory available now; `what` names
// the array in the message, e.g. "K_nm (50000 x 5000 float64)".
void check_allocation(double bytes, const std::string& what);

// A number as "%.6g" (std::to_string prints 1e-10 as 0.000000).
std::string format_number(double value);

// Shape text "n x m <dtype>" used in memory messages.
template <class T>
std::string shape_text(double rows, double cols);

// Throws std::invalid_argument(message) unless `condition` holds.
inline void require(bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument(message);
}

}  // namespace nytro
