#include "parallel.hpp"

#include <omp.h>

#include <algorithm>

namespace nytro::detail {

int resolve_threads(int n_threads) {
    const int cores = omp_get_num_procs();
    return n_threads > 0 ? std::min(n_threads, cores) : cores;
}

int omp_thread_index() { return omp_get_thread_num(); }

int omp_team_size() { return omp_get_num_threads(); }

void omp_barrier() {
#pragma omp barrier
}

}  // namespace nytro::detail
