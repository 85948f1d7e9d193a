// The machine rates behind solver='auto' (nytro::machine_rates): pinned, from the
// environment, probed and cached on disk; and the solver choice as a function of them.
// No check depends on what the probe measures beyond its being a positive rate.
#include "check.hpp"
#include "support.hpp"
#include "runtime/machine_rates.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace support;
using nytro::MachineRates;
using nytro::Solver;

namespace {

// Sets an environment variable for one scope, restoring its old value (or its absence).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }

private:
    std::string name_;
    std::optional<std::string> old_;
};

MachineRates rates(double flops, double bytes, double fresh) {
    MachineRates r;
    r.flops = flops;
    r.bytes = bytes;
    r.fresh_bytes = fresh;
    return r;
}

void unpin() { nytro::set_machine_rates(MachineRates{}); }

bool positive_rates(const MachineRates& r) {
    for (double v : {r.flops, r.flops32, r.bytes, r.fresh_bytes})
        if (!(std::isfinite(v) && v > 0)) return false;
    return true;
}

std::string read_text(const std::string& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

NYTRO_TEST(rates_pinned_by_call_and_by_environment) {
    nytro::set_machine_rates(rates(2e10, 1e10, 1e9));
    const MachineRates pinned = nytro::machine_rates(1);
    CHECK_EQ(pinned.source, std::string("set_machine_rates"));
    CHECK_EQ(pinned.flops, 2e10);
    CHECK_EQ(pinned.flops32, 4e10);  // twice flops when not given
    CHECK_EQ(pinned.bytes, 1e10);
    CHECK_EQ(pinned.fresh_bytes, 1e9);
    CHECK_EQ(pinned.threads, 1);
    CHECK_EQ(nytro::machine_rates(2).threads, 2);
    CHECK(pinned.key.find("1 threads") != std::string::npos);
    unpin();
    {
        ScopedEnv env("NYTRO_RATES", "flops=5e10,bytes=2e10,fresh=3e9,flops32=7e10");
        const MachineRates from_env = nytro::machine_rates(2);
        CHECK_EQ(from_env.source, std::string("NYTRO_RATES"));
        CHECK_EQ(from_env.flops, 5e10);
        CHECK_EQ(from_env.flops32, 7e10);
        CHECK_EQ(from_env.bytes, 2e10);
        CHECK_EQ(from_env.fresh_bytes, 3e9);
        // A call's pin wins over the environment's.
        nytro::set_machine_rates(rates(1e9, 1e9, 1e9));
        CHECK_EQ(nytro::machine_rates(2).flops, 1e9);
        unpin();
    }
    for (const char* bad : {"flops=1e11", "flops=1e11,bytes=-3,fresh=1e9", "flops=x,bytes=1,fresh=1",
                            "flops=1,bytes=1,fresh=1,speed=2", "flops"}) {
        ScopedEnv env("NYTRO_RATES", bad);
        CHECK_THROWS_WITH(nytro::machine_rates(1), std::invalid_argument, "NYTRO_RATES");
    }
    CHECK_THROWS_WITH(nytro::set_machine_rates(rates(1e9, -1.0, 1e9)), std::invalid_argument, "positive");
    CHECK_THROWS_WITH(nytro::set_machine_rates(rates(1e9, 1e9, INFINITY)), std::invalid_argument, "positive");
}

bool probed(const MachineRates& r) {
    return r.source == "probe" || r.source == "probe (loaded)" || r.source == "probe (unsteady)";
}

// The first field of the lines this build writes to `file` (the probe's and the
// library's versions), from a line that a refresh writes.
std::string written_version(const std::string& file) {
    nytro::machine_rates(1, /*refresh=*/true);
    const std::string text = read_text(file);
    return text.substr(0, text.find('\t'));
}

// A test's own cache file, unpinned rates reading it, and what its lines hold for one
// thread: the key and the version field this build writes. Removed at the end.
class OwnCache {
public:
    explicit OwnCache(const std::string& name)
        : file(name), no_pin_("NYTRO_RATES", nullptr), cache_("NYTRO_RATES_CACHE", name.c_str()) {
        std::remove(file.c_str());
        nytro::set_machine_rates(rates(1, 1, 1));
        key = nytro::machine_rates(1).key;
        unpin();
        version = written_version(file);
        unpin();
    }
    ~OwnCache() {
        unpin();
        std::remove(file.c_str());
    }
    const std::string file;
    std::string key, version;

private:
    ScopedEnv no_pin_, cache_;
};

NYTRO_TEST(rates_probed_once_and_cached_on_disk) {
    ScopedEnv no_pin("NYTRO_RATES", nullptr);
    const std::string file = "nytro_test_rates_cache/sub/rates.txt";
    std::remove(file.c_str());
    ScopedEnv cache("NYTRO_RATES_CACHE", file.c_str());
    unpin();
    const MachineRates first = nytro::machine_rates(1);
    CHECK(probed(first));
    CHECK(positive_rates(first));
    // The same process asks again: no new probe, the same numbers.
    const MachineRates again = nytro::machine_rates(1);
    CHECK_EQ(again.source, first.source);
    CHECK_EQ(again.flops, first.flops);
    // Written to the cache when steady (or on refresh, below), not when unsteady.
    CHECK_EQ(read_text(file).find(first.key) != std::string::npos, first.source == "probe");
    const MachineRates refreshed = nytro::machine_rates(1, /*refresh=*/true);
    CHECK(probed(refreshed));
    CHECK(read_text(file).find(refreshed.key) != std::string::npos);
    // A new process (here: this process's memory of them forgotten) reads them back,
    // to the 6 digits written.
    unpin();
    const MachineRates cached = nytro::machine_rates(1);
    CHECK_EQ(cached.source, "cache " + file);
    CHECK_NEAR(cached.flops, refreshed.flops, 1e-5 * refreshed.flops);
    CHECK_NEAR(cached.flops32, refreshed.flops32, 1e-5 * refreshed.flops32);
    CHECK_NEAR(cached.bytes, refreshed.bytes, 1e-5 * refreshed.bytes);
    CHECK_NEAR(cached.fresh_bytes, refreshed.fresh_bytes, 1e-5 * refreshed.fresh_bytes);
    // A line of another thread count is kept beside this one.
    const MachineRates two = nytro::machine_rates(2, /*refresh=*/true);
    CHECK(probed(two));
    CHECK(two.key != refreshed.key);
    CHECK(read_text(file).find(refreshed.key) != std::string::npos);
    CHECK(read_text(file).find(two.key) != std::string::npos);
    unpin();
    std::remove(file.c_str());
}

NYTRO_TEST(rates_read_from_a_written_cache) {
    // A cache written by hand: its line is used as it stands; a malformed or stale line
    // (another probe version or library version, a rate that is not positive) is not,
    // and is probed over.
    const OwnCache own("nytro_test_rates_written.txt");
    const std::string &file = own.file, &key = own.key, &version = own.version;
    const std::string other_library = "probe-v3 nytro-0.0.0";
    CHECK(version.rfind("probe-v3 nytro-", 0) == 0);
    CHECK(version != other_library);
    auto write = [&](const std::string& line) {
        std::ofstream out(file);
        out << "probe-v1\t" << key << "\t9 9 9 9\n" << other_library << "\t" << key << "\t8 8 8 8\n" << line << "\n";
    };
    write(version + "\t" + key + "\t1.5e10 3.5e10 2.5e10 1.25e9");
    const MachineRates r = nytro::machine_rates(1);
    CHECK_EQ(r.source, "cache " + file);
    CHECK_EQ(r.flops, 1.5e10);
    CHECK_EQ(r.flops32, 3.5e10);
    CHECK_EQ(r.bytes, 2.5e10);
    CHECK_EQ(r.fresh_bytes, 1.25e9);
    // None of these lines is usable: the rates are probed.
    unpin();
    {
        std::ofstream out(file);
        out << "probe-v1\t" << key << "\t9 9 9 9\n"                       // another probe version
            << other_library << "\t" << key << "\t8 8 8 8\n"              // another library version
            << version << "\t" << key << "\t1e10 -2 3e10 1e9\n"           // a negative rate
            << version << "\t" << key << "\t1e10 2e10\n"                  // too few rates
            << version << "\tanother CPU | native | 1 threads\t1 1 1 1\n";  // another key
    }
    CHECK(probed(nytro::machine_rates(1)));
    unpin();
    std::remove(file.c_str());
}

NYTRO_TEST(rates_a_fit_far_from_its_price_probes_again) {
    // The times are given, not measured: whether a fit departs from the model's price.
    using nytro::detail::departs_from_model;
    CHECK(departs_from_model(1.0, 3.5));    // 3.5 times slower than priced
    CHECK(departs_from_model(10.0, 3.0));   // over 3 times faster (rates cached under a load since gone)
    CHECK(departs_from_model(0.3, 1.0));    // slower, and over the shortest fit that counts
    CHECK(!departs_from_model(1.0, 2.9));
    CHECK(!departs_from_model(10.0, 4.0));
    CHECK(!departs_from_model(0.05, 0.9));  // 18 times slower, but a short fit: the unpriced terms
    CHECK(!departs_from_model(0.0, 5.0));
    CHECK(!departs_from_model(std::numeric_limits<double>::infinity(), 1.0));
    CHECK(!departs_from_model(1.0, std::numeric_limits<double>::quiet_NaN()));

    // Cached rates that a fit departs from are forgotten: the next call probes (and
    // rewrites the line where the probe is steady and unloaded), once per process.
    const OwnCache own("nytro_test_rates_departed.txt");
    const std::string& file = own.file;
    const std::string line = own.version + "\t" + own.key + "\t1e10 2e10 1e10 1e9";
    std::ofstream(file) << line << "\n";
    const MachineRates cached = nytro::machine_rates(1);
    CHECK_EQ(cached.source, "cache " + file);
    CHECK(!nytro::detail::note_fit_seconds(cached, 1.0, 2.0));  // within the factor: kept
    CHECK_EQ(nytro::machine_rates(1).source, cached.source);
    CHECK(nytro::detail::note_fit_seconds(cached, 1.0, 10.0));
    const MachineRates again = nytro::machine_rates(1);
    CHECK(probed(again));
    CHECK_EQ(read_text(file).find(line) == std::string::npos, again.source == "probe");
    CHECK(!nytro::detail::note_fit_seconds(again, 1.0, 10.0));  // probed again once: the model's own error
    CHECK_EQ(nytro::machine_rates(1).flops, again.flops);
    // Pinned rates are the user's, whatever a fit takes.
    nytro::set_machine_rates(rates(1, 1, 1));
    CHECK(!nytro::detail::note_fit_seconds(nytro::machine_rates(1), 1.0, 10.0));
}

NYTRO_TEST(rates_leave_a_file_that_is_no_cache_alone) {
    // NYTRO_RATES_CACHE naming a file of something else: it was rewritten (through a
    // rename, its mode reset) with the rates line added to its own lines.
    ScopedEnv no_pin("NYTRO_RATES", nullptr);
    const std::string file = "nytro_test_rates_not_a_cache.txt";
    const std::string text = "user settings\nkey\tvalue\n";
    {
        std::ofstream out(file);
        out << text;
    }
    ScopedEnv cache("NYTRO_RATES_CACHE", file.c_str());
    unpin();
    CHECK(probed(nytro::machine_rates(1, /*refresh=*/true)));  // a refresh writes even when unsteady
    CHECK_EQ(read_text(file), text);
    unpin();
    std::remove(file.c_str());
}

NYTRO_TEST(rates_an_unusable_cache_never_fails) {
    ScopedEnv no_pin("NYTRO_RATES", nullptr);
    for (const char* file : {"/dev/null/rates.txt", "off"}) {
        ScopedEnv cache("NYTRO_RATES_CACHE", file);
        unpin();
        const MachineRates r = nytro::machine_rates(1, /*refresh=*/true);
        CHECK(probed(r));
        CHECK(positive_rates(r));
        // and a fit with solver 'auto' runs
        const Problem p = make_problem(300, 4, 20, 50);
        nytro::NytroOptions o;
        o.max_iter = 5;
        o.n_threads = 1;
        const auto fit = nytro::nytro_path<double>(p.X, p.Y, p.centers, p.sigma, p.X_val, p.Y_val, o);
        CHECK(fit.solver != Solver::automatic);
    }
    unpin();
}

// The choice follows the rates, and only them: the same problem goes to each solver
// under rates that make it the cheapest by a wide margin (factors of 3 to 20 in the
// model's terms).
NYTRO_TEST(rates_decide_the_solver) {
    const Problem p = make_problem(2000, 4, 100, 200);
    nytro::NytroOptions o;
    o.max_iter = 500;
    o.n_threads = 1;
    auto chosen = [&](const MachineRates& r) {
        nytro::set_machine_rates(r);
        const auto fit = nytro::nytro_path<double>(p.X, p.Y, p.centers, p.sigma, p.X_val, p.Y_val, o);
        unpin();
        return fit.solver;
    };
    // Slow products: forming A^T A costs seconds, passes over K_nm milliseconds.
    CHECK_EQ(chosen(rates(1e7, 1e10, 1e10)), Solver::direct);
    // Products almost free, memory slow: the eigendecomposition and O(k) iterations.
    CHECK_EQ(chosen(rates(1e14, 1e8, 1e8)), Solver::spectral);
    // Fast reads of H, a costly eigendecomposition, and a costly first touch of K_nm.
    CHECK_EQ(chosen(rates(1e9, 1e11, 1e7)), Solver::gram);
    // Deterministic: the same rates, the same choice.
    CHECK_EQ(chosen(rates(1e9, 1e11, 1e7)), Solver::gram);
}
