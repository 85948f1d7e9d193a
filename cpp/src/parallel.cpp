#include "parallel.hpp"

#include <omp.h>

namespace nytro::detail {

int resolve_threads(int n_threads) {
    if (n_threads > 0) return n_threads;
    return omp_get_num_procs();
}

int omp_thread_index() { return omp_get_thread_num(); }

}  // namespace nytro::detail
