#include "runtime/parallel.hpp"

#include "runtime/cgroup.hpp"
#include "nytro/resources.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace nytro {
namespace {

// CPUs granted by a CFS quota of `quota` microseconds per `period`, rounded up.
int cpus_of_quota(double quota, double period) {
    if (!(quota > 0) || !(period > 0)) return 0;
    return std::max(1, static_cast<int>(std::ceil(quota / period - 1e-9)));
}

int read_cgroup_cpu_limit() {
    // cgroup v2: "<quota> <period>" or "max <period>", in the process's own cgroup (a
    // container usually sees it at the root of its namespace).
    for (const std::string& dir : detail::cgroup_v2_dirs()) {
        std::ifstream file(dir + "/cpu.max");
        std::string quota;
        double period = 0;
        if (file >> quota >> period) {
            if (quota == "max") return 0;
            return cpus_of_quota(std::atof(quota.c_str()), period);
        }
    }
    // cgroup v1: -1 for no quota.
    std::ifstream quota_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
    std::ifstream period_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    double quota = 0, period = 0;
    if (quota_file >> quota && period_file >> period) return cpus_of_quota(quota, period);
    return 0;
}

}  // namespace

int cgroup_cpu_limit() {
    static const int limit = read_cgroup_cpu_limit();  // fixed for the process's life
    return limit;
}

int default_threads() {
    // omp_get_max_threads is OpenMP's per-thread default: OMP_NUM_THREADS at start-up,
    // then whatever omp_set_num_threads (threadpoolctl) set on this thread; libgomp
    // starts it at the affinity mask's CPU count. The quota is not OpenMP's business.
    int threads = std::min(omp_get_max_threads(), omp_get_num_procs());
    if (const int quota = cgroup_cpu_limit(); quota > 0) threads = std::min(threads, quota);
    return std::max(1, threads);
}

}  // namespace nytro

namespace nytro::detail {

int resolve_threads(int n_threads) {
    return n_threads > 0 ? std::min(n_threads, omp_get_num_procs()) : default_threads();
}

int omp_thread_index() { return omp_get_thread_num(); }

int omp_team_size() { return omp_get_num_threads(); }

void omp_barrier() {
#pragma omp barrier
}

}  // namespace nytro::detail
