// What this process may use: threads and memory, as the environment limits them.
#pragma once

#include <cstddef>

namespace nytro {

// The thread count used when n_threads <= 0: OpenMP's own default for the calling
// thread (OMP_NUM_THREADS, omp_set_num_threads, which is how threadpoolctl's
// threadpool_limits and joblib's or dask's workers limit it), never more than the CPUs
// of this process's affinity mask nor its cgroup CPU quota (rounded up), and at least 1.
int default_threads();

// The CPUs this process's cgroup quota grants (cpu.max, or cpu.cfs_quota_us in cgroup
// v1), rounded up; 0 when there is no quota.
int cgroup_cpu_limit();

}  // namespace nytro
