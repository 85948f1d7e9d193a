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

#include <string>

namespace nytro {

// The rates behind the solver choice of solver='auto' (direct, gram or spectral) and of
// storing the hold-out kernel: how fast this machine runs the kernels those choices
// trade against each other. Only their ratios matter. They are measured on first use by
// a short probe of the core's own kernels (a fraction of a second), once per process and
// thread count, and kept in an on-disk cache keyed by the CPU model, the instruction-set
// variant and the thread count, so that later processes make the same choices. A line of
// the cache also names the probe's and the library's versions: another version probes
// again. A probe taken beside other processes (its thread got less than most of a core:
// source "probe (loaded)") or whose repeated timings disagreed ("probe (unsteady)") is
// kept for this process only, so that a busy moment is not every later fit's rates. The
// environment controls them:
//   NYTRO_RATES="flops=1e11,bytes=3e10,fresh=3e9[,flops32=2e11]" pins them (no probe:
//     reproducible choices, e.g. for tests);
//   NYTRO_RATES_CACHE=off disables the on-disk cache, NYTRO_RATES_CACHE=<file> moves it
//     (default: $XDG_CACHE_HOME/nytro/machine_rates.txt, else ~/.cache/nytro/...).
// A cache that cannot be read or written is ignored: it never fails a fit.
struct MachineRates {
    double flops = 0;        // flop/s of the float64 products forming A^T A (A = K R, then B^T B)
    double flops32 = 0;      // the same in float32 (storage='float32')
    double bytes = 0;        // bytes/s read by the direct solver's fused pass over a stored kernel
    double fresh_bytes = 0;  // bytes/s of a first write to freshly allocated memory (page faults)
    int threads = 0;         // the thread count they were measured with
    std::string source;      // "probe", "probe (loaded)", "probe (unsteady)", "cache <file>", "NYTRO_RATES",
                             // "set_machine_rates" or "default (...)"
    std::string key;         // CPU model | instruction-set variant | threads (the cache's key)
};

// The rates for n_threads threads (<= 0: default_threads()); refresh: probe again now
// and update the on-disk cache (not when pinned). A probe under load (source "probe
// (loaded)": its thread received less than most of a core) or whose repeated timings
// disagreed ("probe (unsteady)") is used by this process but written to the cache only
// on refresh, which writes what it measured. Measured rates that a fit's time departed
// far from (solver='auto'; detail::note_fit_seconds) are probed again on the next call,
// once per process and thread count.
MachineRates machine_rates(int n_threads = 0, bool refresh = false);

// Pins the rates for every thread count in this process (over NYTRO_RATES); rates with
// flops <= 0 unpin them and forget what was measured. Throws std::invalid_argument for
// a rate that is negative or not finite.
void set_machine_rates(const MachineRates& rates);

}  // namespace nytro
