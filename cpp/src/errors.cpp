#include "nytro/errors.hpp"

#include <Eigen/Core>  // Eigen::half, for shape_text

#include <unistd.h>

#include <cstdio>

namespace nytro {

std::size_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

std::size_t available_memory_bytes() {
    if (std::FILE* file = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kib = 0;
        while (std::fgets(line, sizeof line, file))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
        std::fclose(file);
        if (kib > 0) return static_cast<std::size_t>(kib) * 1024;
    }
    return physical_memory_bytes();
}

void check_allocation(double bytes, const std::string& what) {
    const double limit = static_cast<double>(physical_memory_bytes());
    if (limit > 0 && bytes > limit) {
        char text[160];
        std::snprintf(text, sizeof text, " needs %.3g GB, more than this machine's %.3g GB of memory",
                      bytes / 1e9, limit / 1e9);
        throw out_of_memory(what + text);
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
