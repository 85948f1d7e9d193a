#include "nytro/errors.hpp"

#include "runtime/cgroup.hpp"

#include <Eigen/Core>  // Eigen::half, for shape_text

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace nytro {

std::size_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

namespace {

struct Limit {
    double bytes;
    std::string source;
};

double meminfo_available() {
    if (std::FILE* file = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kib = 0;
        while (std::fgets(line, sizeof line, file))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
        std::fclose(file);
        if (kib > 0) return double(kib) * 1024.0;
    }
    return double(physical_memory_bytes());
}

// A number from a one-line file; < 0 when absent or "max".
double read_number(const std::string& path) {
    std::ifstream file(path);
    std::string text;
    if (!(file >> text) || text == "max") return -1;
    return std::atof(text.c_str());
}

// Room left under the cgroup's memory limit (v2 memory.max - memory.current, in the
// process's own cgroup or at the namespace's root; v1 limit_in_bytes - usage_in_bytes).
double cgroup_room() {
    for (const std::string& dir : detail::cgroup_v2_dirs()) {
        const double limit = read_number(dir + "/memory.max");
        if (limit > 0) return std::max(0.0, limit - std::max(0.0, read_number(dir + "/memory.current")));
    }
    const double limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    // v1 reports "no limit" as a number near 2^63.
    if (limit > 0 && limit < 1e18)
        return std::max(0.0, limit - std::max(0.0, read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes")));
    return -1;
}

// Room left under an address-space rlimit, given what the process already maps.
double rlimit_room(int resource, double used) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
    return std::max(0.0, double(limit.rlim_cur) - used);
}

// Virtual size and data segment (heap and private mappings) of this process, in bytes.
void mapped_bytes(double& virtual_size, double& data) {
    virtual_size = data = 0;
    std::ifstream file("/proc/self/statm");
    double size = 0, resident = 0, shared = 0, text = 0, lib = 0, data_pages = 0;
    if (file >> size >> resident >> shared >> text >> lib >> data_pages) {
        const double page = double(sysconf(_SC_PAGE_SIZE));
        virtual_size = size * page;
        data = data_pages * page;
    }
}

Limit tightest_limit() {
    Limit best{meminfo_available(), "MemAvailable"};
    auto consider = [&](double room, const char* source) {
        if (room >= 0 && room < best.bytes) best = {room, source};
    };
    consider(cgroup_room(), "the cgroup's memory.max");
    double virtual_size = 0, data = 0;
    mapped_bytes(virtual_size, data);
    consider(rlimit_room(RLIMIT_AS, virtual_size), "RLIMIT_AS (ulimit -v)");
    consider(rlimit_room(RLIMIT_DATA, data), "RLIMIT_DATA (ulimit -d)");
    return best;
}

}  // namespace

std::size_t available_memory_bytes() { return static_cast<std::size_t>(tightest_limit().bytes); }

std::string memory_limit_text() {
    const Limit limit = tightest_limit();
    char text[64];
    std::snprintf(text, sizeof text, "%.3g GB available", limit.bytes / 1e9);
    return std::string(text) + " (" + limit.source + ")";
}

void check_allocation(double bytes, const std::string& what) {
    const Limit limit = tightest_limit();
    if (bytes > limit.bytes) {
        char text[160];
        std::snprintf(text, sizeof text, " needs %.3g GB, more than the %.3g GB available", bytes / 1e9,
                      limit.bytes / 1e9);
        throw out_of_memory(what + text + " (" + limit.source + ")");
    }
}

std::string format_number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

template <class T>
std::string shape_text(double rows, double cols) {
    char text[96];
    std::snprintf(text, sizeof text, "%.0f x %.0f %s", rows, cols,
                  sizeof(T) == 2 ? "float16" : sizeof(T) == 4 ? "float32" : "float64");
    return text;
}

template std::string shape_text<float>(double, double);
template std::string shape_text<double>(double, double);
template std::string shape_text<Eigen::half>(double, double);

}  // namespace nytro
