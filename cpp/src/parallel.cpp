#include "parallel.hpp"

#include <omp.h>

#include <algorithm>

namespace nytro::detail {

int resolve_threads(int n_threads) {
    const int cores = omp_get_num_procs();
    return n_threads > 0 ? std::min(n_threads, cores) : cores;
}

int omp_thread_index() { return omp_get_thread_num(); }

}  // namespace nytro::detail
