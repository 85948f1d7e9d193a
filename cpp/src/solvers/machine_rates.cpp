// The machine's rates for the cost model (nytro/resources.hpp: MachineRates): pinned,
// read from the on-disk cache, or probed. The probe times the kernels each term of the
// model stands for, at sizes that take a fraction of a second in all:
//   flops, flops32: A = K R with R triangular, then the lower half of A^T A (the Gram
//     route's two products, 2 n k^2 flops), on a 1024 x 512 block: narrower blocks
//     run these products well below the rate they reach at the widths where the choice
//     between the solvers is close (measured: benchmarks/results/auto/history.md,
//     "How many products auto prices");
//   bytes: the direct solver's fused pass K^T (K a - y) over a 64 MiB kernel, larger than
//     the last-level caches, so read from memory as the fit's K_nm is;
//   fresh_bytes: that kernel's first write (advice and population as gaussian_kernel
//     does them) less a second write of the same pages.
// Each is the best of a few repetitions: the fastest run is the one least disturbed by
// other processes, and the choice should not follow their load. With several threads,
// each rate is also at least the rate of one thread (see probe). A load that lasts the
// whole probe slows every repetition alike, so the probe also measures the CPU time its
// calling thread received against the wall time: a probe whose thread got less than
// kLoadedShare of a core ran beside other processes, and is kept for this process only,
// never written to the on-disk cache for every later process to read.
// In a dispatching build each instruction-set variant compiles this file, so each has
// its own rates, probed with its own kernels.
#include "runtime/machine_rates.hpp"

#include "passes/dense.hpp"
#include "passes/fused_pass.hpp"
#include "runtime/huge_pages.hpp"
#include "nytro/errors.hpp"
#include "nytro/resources.hpp"
#include "runtime/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <vector>

// The library's version (CMakeLists.txt's project version, set for this file by
// cpp/CMakeLists.txt): a cache line written by another version is not read.
#ifndef NYTRO_VERSION_TEXT
#define NYTRO_VERSION_TEXT "unknown"
#endif

#define NYTRO_RATES_TEXT_INNER(x) #x
#define NYTRO_RATES_TEXT(x) NYTRO_RATES_TEXT_INNER(x)
// The cache keys rates by the instructions the products were compiled for: a dispatched
// variant by its name; a build without dispatch by the widest vectors its -march allowed,
// so that an AVX2 build and an AVX-512 build on one machine do not read each other's rates.
#ifdef NYTRO_ISA_NAME
#define NYTRO_RATES_VARIANT NYTRO_RATES_TEXT(NYTRO_ISA_NAME)
#elif defined(__AVX512F__)
#define NYTRO_RATES_VARIANT "native avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#define NYTRO_RATES_VARIANT "native avx2"
#elif defined(__x86_64__)
#define NYTRO_RATES_VARIANT "native baseline"
#else
#define NYTRO_RATES_VARIANT "native"
#endif

namespace nytro {
namespace {
namespace machine_probe {  // named: a unity build may share this file's anonymous namespace

// The first field of a cache line: the probe's version, bumped whenever the probe changes
// what it measures, and the library's, so that older entries (or another installed
// version's) miss and are probed again.
constexpr const char* kProbeVersion = "probe-v3 nytro-" NYTRO_VERSION_TEXT;

// The least share of a core that the probe's calling thread may receive over its timed
// runs for the probe to count as taken on an otherwise idle machine. Alone, a thread of
// the probe leaves its core only for the kernel's interrupts (a share near 1); where the
// machine's cores hold one more busy thread each, it gets about a half, and where they
// hold one more per two, about two thirds.
constexpr double kLoadedShare = 0.8;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether every timing so far was steady: its two fastest runs within 25% of each other.
// A probe that was not (other processes took the cores meanwhile) is used by this
// process but written to the on-disk cache only when asked for (refresh).
thread_local bool all_steady = true;
// The least share of a core the calling thread received over one timing's runs so far.
thread_local double least_share = 1.0;

// CPU seconds of the calling thread: the master of every team the probe starts, which
// takes its share of each loop, so that a thread preempted by other processes shows as
// CPU time short of the wall time, whatever the team's size.
double thread_cpu_seconds() {
    timespec now{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return -1.0;
    return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

// The fastest of `repeats` runs of step().
template <class Step>
double best_seconds(int repeats, Step&& step) {
    std::vector<double> seconds;
    const double cpu_start = thread_cpu_seconds();
    for (int r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        step();
        seconds.push_back(seconds_since(start));
    }
    const double cpu = thread_cpu_seconds() - cpu_start, wall = [&] {
        double sum = 0.0;
        for (double run : seconds) sum += run;
        return sum;
    }();
    // Shares above 1 (the clocks' granularity on sub-millisecond runs) count as 1.
    if (cpu_start >= 0 && wall > 0) least_share = std::min(least_share, cpu / wall);
    std::sort(seconds.begin(), seconds.end());
    if (seconds.size() > 1 && seconds[1] > 1.25 * seconds[0]) all_steady = false;
    return seconds[0];
}

// flop/s of A = K R (R upper triangular) and the lower half of A^T A, in T.
template <class T>
double product_rate(int threads) {
    const Index n = 1024, k = 512;
    const Matrix<T> K = Matrix<T>::Constant(n, k, T(0.01));
    Matrix<T> R = Matrix<T>::Identity(k, k);
    R.template triangularView<Eigen::StrictlyUpper>().setConstant(T(0.001));
    Matrix<T> A(n, k), G = Matrix<T>::Zero(k, k);
    auto step = [&] {
        detail::multiply_right<T>(K, R, true, A, threads);
        detail::rank_update<T>(A, G, T(1), false, threads);
    };
    step();  // warm-up: the packing buffers, the team
    return 2.0 * double(n) * double(k) * double(k) / best_seconds(5, step);
}

// Parallel write of every entry of K (as a kernel evaluation writes it).
void write_all(Matrix<double>& K, double value, int threads) {
    detail::parallel_for(K.cols(), threads, [&](Index j, int) { K.col(j).setConstant(value); });
}

// bytes/s of the fused pass and of a fresh buffer's first write.
std::pair<double, double> memory_rates(int threads) {
    const Index n = 16384, k = 512;  // 64 MiB of float64
    const double bytes = double(n) * double(k) * sizeof(double);
    Matrix<double> K(n, k);
    auto start = Clock::now();
    detail::advise_huge_pages(K.data(), std::size_t(bytes));
    detail::populate_in_parallel(K.data(), std::size_t(bytes), threads);
    write_all(K, 0.5, threads);
    const double fresh = seconds_since(start);
    const double rewrite = best_seconds(3, [&] { write_all(K, 0.25, threads); });
    // Noise can leave the difference near zero: the first write is never counted as more
    // than ten times faster than the second.
    const double first_touch = std::max(fresh - rewrite, 0.1 * rewrite);

    detail::FusedPass<double, double> pass(K, threads);
    const Matrix<double> a = Matrix<double>::Constant(k, 1, 0.5), y = Matrix<double>::Zero(n, 1);
    pass.normal_residual(a, y);  // warm-up
    const double read = best_seconds(5, [&] { pass.normal_residual(a, y); });
    return {bytes / read, bytes / first_touch};
}

// The rates measured on an Intel Xeon (AVX-512, 2 cores) that the model used before it
// was calibrated: the fallback when the probe cannot run.
MachineRates default_rates(int threads, const std::string& why) {
    MachineRates rates;
    rates.flops = 1e11;
    rates.flops32 = 2e11;
    rates.bytes = 3e10;
    rates.fresh_bytes = 3e9;
    rates.threads = threads;
    rates.source = "default (" + why + ")";
    return rates;
}

bool valid_rate(double value) { return std::isfinite(value) && value > 0; }
bool valid(const MachineRates& r) {
    return valid_rate(r.flops) && valid_rate(r.flops32) && valid_rate(r.bytes) && valid_rate(r.fresh_bytes);
}

// The four rates on `threads` threads.
MachineRates measure(int threads) {
    MachineRates rates;
    rates.threads = threads;
    rates.flops = product_rate<double>(threads);
    rates.flops32 = product_rate<float>(threads);
    std::tie(rates.bytes, rates.fresh_bytes) = memory_rates(threads);
    return rates;
}

MachineRates probe(int threads) {
    try {
        all_steady = true;
        least_share = 1.0;
        MachineRates rates = measure(threads);
        if (threads > 1) {
            // A team of threads on a machine busy with other processes waits for each of
            // them at every barrier, and can measure far below one thread. More threads
            // are never slower here in a steady state: each rate is at least one thread's.
            const MachineRates one = measure(1);
            rates.flops = std::max(rates.flops, one.flops);
            rates.flops32 = std::max(rates.flops32, one.flops32);
            rates.bytes = std::max(rates.bytes, one.bytes);
            rates.fresh_bytes = std::max(rates.fresh_bytes, one.fresh_bytes);
        }
        rates.source = least_share < kLoadedShare ? "probe (loaded)" : all_steady ? "probe" : "probe (unsteady)";
        if (valid(rates)) return rates;
        return default_rates(threads, "the probe measured a rate that is not positive");
    } catch (const std::bad_alloc&) {
        return default_rates(threads, "no memory for the probe");
    }
}

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) break;
        std::string model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        for (char& c : model)
            if (c == '\t' || c == '|') c = ' ';
        return model;
    }
    return "unknown CPU";
}

std::string cache_key(int threads) {
    static const std::string model = cpu_model();
    return model + " | " + NYTRO_RATES_VARIANT + " | " + std::to_string(threads) + " threads";
}

// The cache file, or none when disabled or no home is known.
std::optional<std::string> cache_file() {
    const char* setting = std::getenv("NYTRO_RATES_CACHE");
    if (setting) {
        const std::string value = setting;
        if (value.empty() || value == "off" || value == "0" || value == "none") return std::nullopt;
        return value;
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::string(xdg) + "/nytro/machine_rates.txt";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/nytro/machine_rates.txt";
    return std::nullopt;
}

// Lines "<version>\t<key>\t<flops> <flops32> <bytes> <fresh_bytes>".
std::optional<MachineRates> read_cache(const std::string& file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    const std::string prefix = std::string(kProbeVersion) + "\t" + key + "\t";
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) != 0) continue;
        std::istringstream values(line.substr(prefix.size()));
        MachineRates rates;
        if (values >> rates.flops >> rates.flops32 >> rates.bytes >> rates.fresh_bytes && valid(rates)) return rates;
    }
    return std::nullopt;
}

// Creates the directories of `file` (mode 0700 for new ones), as `mkdir -p`.
bool make_parents(const std::string& file) {
    for (std::size_t slash = file.find('/', 1); slash != std::string::npos; slash = file.find('/', slash + 1)) {
        const std::string dir = file.substr(0, slash);
        if (access(dir.c_str(), F_OK) != 0 && ::mkdir(dir.c_str(), 0700) != 0 && access(dir.c_str(), F_OK) != 0)
            return false;
    }
    return true;
}

// Replaces the key's line (others kept), through a temporary file renamed over the
// cache so that a reader never sees half a file. Failures are ignored. A file holding a
// line that no probe wrote is not a cache (NYTRO_RATES_CACHE names the wrong file): it is
// left alone, not rewritten with a rates line added and its mode reset.
void write_cache(const std::string& file, const std::string& key, const MachineRates& rates) {
    if (!make_parents(file)) return;
    std::vector<std::string> kept;
    {
        std::ifstream in(file);
        std::string line;
        const std::string prefix = std::string(kProbeVersion) + "\t" + key + "\t";
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            if (line.rfind("probe-v", 0) != 0 || std::count(line.begin(), line.end(), '\t') != 2) return;
            if (line.rfind(prefix, 0) != 0) kept.push_back(line);
        }
    }
    const std::string temporary = file + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(temporary);
        if (!out) return;
        for (const auto& line : kept) out << line << '\n';
        char values[128];
        std::snprintf(values, sizeof values, "%.6g %.6g %.6g %.6g", rates.flops, rates.flops32, rates.bytes,
                      rates.fresh_bytes);
        out << kProbeVersion << '\t' << key << '\t' << values << '\n';
        if (!out.flush()) {
            out.close();
            std::remove(temporary.c_str());
            return;
        }
    }
    if (std::rename(temporary.c_str(), file.c_str()) != 0) std::remove(temporary.c_str());
}

double parse_rate(const std::string& text, const std::string& name) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    require(!text.empty() && end && *end == '\0' && valid_rate(value),
            "NYTRO_RATES: " + name + " must be a positive number, got '" + text + "'");
    return value;
}

// NYTRO_RATES="flops=..,bytes=..,fresh=..[,flops32=..]"; flops32 defaults to 2 flops.
std::optional<MachineRates> pinned_by_environment() {
    const char* setting = std::getenv("NYTRO_RATES");
    if (!setting || !*setting) return std::nullopt;
    MachineRates rates;
    std::istringstream fields(setting);
    std::string field;
    while (std::getline(fields, field, ',')) {
        const auto equals = field.find('=');
        require(equals != std::string::npos,
                "NYTRO_RATES must read 'flops=<flop/s>,bytes=<B/s>,fresh=<B/s>[,flops32=<flop/s>]', got '" +
                    std::string(setting) + "'");
        const std::string name = field.substr(0, equals), value = field.substr(equals + 1);
        if (name == "flops") rates.flops = parse_rate(value, name);
        else if (name == "flops32") rates.flops32 = parse_rate(value, name);
        else if (name == "bytes") rates.bytes = parse_rate(value, name);
        else if (name == "fresh") rates.fresh_bytes = parse_rate(value, name);
        else throw std::invalid_argument("NYTRO_RATES: unknown rate '" + name + "' (flops, flops32, bytes, fresh)");
    }
    require(rates.flops > 0 && rates.bytes > 0 && rates.fresh_bytes > 0,
            "NYTRO_RATES must set flops, bytes and fresh, got '" + std::string(setting) + "'");
    if (rates.flops32 <= 0) rates.flops32 = 2.0 * rates.flops;
    rates.source = "NYTRO_RATES";
    return rates;
}

struct State {
    std::mutex mutex;
    std::optional<MachineRates> pinned;    // set_machine_rates
    std::map<int, MachineRates> measured;  // by thread count
    std::set<int> stale;                   // thread counts whose rates a fit departed from: probe again
    std::set<int> rechecked;               // ... and those probed again so (once per process)
};

State& state() {
    static State s;
    return s;
}

}  // namespace machine_probe
}  // namespace


MachineRates machine_rates(int n_threads, bool refresh) {
    const int threads = detail::resolve_threads(n_threads);
    machine_probe::State& s = machine_probe::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const std::string key = machine_probe::cache_key(threads);
    auto finish = [&](MachineRates rates) {
        rates.threads = threads;
        rates.key = key;
        return rates;
    };
    if (s.pinned) return finish(*s.pinned);
    if (auto pinned = machine_probe::pinned_by_environment()) return finish(*pinned);
    const bool recheck = s.stale.erase(threads) > 0;  // a fit departed from these rates
    if (recheck) s.rechecked.insert(threads);
    if (!refresh && !recheck) {
        if (auto found = s.measured.find(threads); found != s.measured.end()) return found->second;
    }
    const auto file = machine_probe::cache_file();
    std::optional<MachineRates> rates;
    if (file && !refresh && !recheck) {
        try {
            rates = machine_probe::read_cache(*file, key);
            if (rates) rates->source = "cache " + *file;
        } catch (...) {  // an unreadable cache is no cache
            rates.reset();
        }
    }
    if (!rates) {
        rates = machine_probe::probe(threads);
        // Only a probe of an idle, steady machine is kept for later processes, unless a
        // refresh asked for it: the others read their own probe.
        const bool probed = rates->source.rfind("probe", 0) == 0;
        if (file && probed && (rates->source == "probe" || refresh)) {
            try {
                machine_probe::write_cache(*file, key, *rates);
            } catch (...) {  // an unwritable cache never fails a fit
            }
        }
    }
    return s.measured[threads] = finish(*rates);
}

namespace detail {

bool note_fit_seconds(const MachineRates& rates, double predicted, double measured) {
    const bool measured_rates = rates.source.rfind("probe", 0) == 0 || rates.source.rfind("cache ", 0) == 0;
    if (!measured_rates || !departs_from_model(predicted, measured)) return false;
    machine_probe::State& s = machine_probe::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.pinned || s.rechecked.count(rates.threads)) return false;
    s.measured.erase(rates.threads);
    s.stale.insert(rates.threads);
    return true;
}

}  // namespace detail

void set_machine_rates(const MachineRates& rates) {
    machine_probe::State& s = machine_probe::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!(rates.flops > 0)) {
        require(!std::isnan(rates.flops), "set_machine_rates: flops must be a number");
        s.pinned.reset();
        s.measured.clear();
        s.stale.clear();
        s.rechecked.clear();
        return;
    }
    for (double value : {rates.flops, rates.bytes, rates.fresh_bytes})
        require(machine_probe::valid_rate(value), "set_machine_rates: every rate must be positive and finite, got " +
                                       format_number(value));
    require(rates.flops32 == 0 || machine_probe::valid_rate(rates.flops32),
            "set_machine_rates: flops32 must be positive and finite (or 0: twice flops), got " +
                format_number(rates.flops32));
    MachineRates pinned = rates;
    if (pinned.flops32 == 0) pinned.flops32 = 2.0 * pinned.flops;
    pinned.source = "set_machine_rates";
    s.pinned = pinned;
}

}  // namespace nytro
