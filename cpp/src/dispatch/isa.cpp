// CPU feature detection and the choice of the instruction-set variant (nytro/isa.hpp).
#include "nytro/isa.hpp"

#ifdef NYTRO_DISPATCH
#include "dispatch/dispatch_table.hpp"
#endif

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define NYTRO_X86_64 1
#endif

namespace nytro {
namespace {

struct Cpu {
    // x86-64-v3 needs these from the CPU (beyond v2's, which every AVX2 CPU has) ...
    bool avx = false, avx2 = false, fma = false, bmi1 = false, bmi2 = false, f16c = false, lzcnt = false,
         movbe = false, popcnt = false, sse42 = false;
    // ... and x86-64-v4 these.
    bool avx512f = false, avx512bw = false, avx512cd = false, avx512dq = false, avx512vl = false;
    // The OS saves and restores the YMM state (XCR0 bits 1-2) and the AVX-512 state (bits
    // 5-7): without it the instructions fault even where cpuid lists them.
    bool os_avx = false, os_avx512 = false;
};

#ifdef NYTRO_X86_64
std::uint64_t xcr0() {
    std::uint32_t low = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (std::uint64_t(high) << 32) | low;
}
#endif

Cpu detect() {
    Cpu c;
#ifdef NYTRO_X86_64
    unsigned a = 0, b = 0, cx = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return c;
    c.fma = cx & (1u << 12);
    c.sse42 = cx & (1u << 20);
    c.movbe = cx & (1u << 22);
    c.popcnt = cx & (1u << 23);
    const bool osxsave = cx & (1u << 27);
    c.avx = cx & (1u << 28);
    c.f16c = cx & (1u << 29);
    if (osxsave) {
        const std::uint64_t state = xcr0();
        c.os_avx = (state & 0x6) == 0x6;
        c.os_avx512 = c.os_avx && (state & 0xE0) == 0xE0;
    }
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
        c.bmi1 = b & (1u << 3);
        c.avx2 = b & (1u << 5);
        c.bmi2 = b & (1u << 8);
        c.avx512f = b & (1u << 16);
        c.avx512dq = b & (1u << 17);
        c.avx512cd = b & (1u << 28);
        c.avx512bw = b & (1u << 30);
        c.avx512vl = b & (1u << 31);
    }
    if (__get_cpuid(0x80000001u, &a, &b, &cx, &d)) c.lzcnt = cx & (1u << 5);
#endif
    return c;
}

std::vector<std::string> feature_names(const Cpu& c) {
    std::vector<std::string> names;
    const std::pair<const char*, bool> flags[] = {
        {"sse4_2", c.sse42},       {"popcnt", c.popcnt},     {"avx", c.avx},           {"avx2", c.avx2},
        {"fma", c.fma},            {"bmi1", c.bmi1},         {"bmi2", c.bmi2},         {"f16c", c.f16c},
        {"lzcnt", c.lzcnt},        {"movbe", c.movbe},       {"avx512f", c.avx512f},   {"avx512bw", c.avx512bw},
        {"avx512cd", c.avx512cd},  {"avx512dq", c.avx512dq}, {"avx512vl", c.avx512vl}, {"os_avx_state", c.os_avx},
        {"os_avx512_state", c.os_avx512}};
    for (const auto& [name, present] : flags)
        if (present) names.emplace_back(name);
    return names;
}

std::string requested_isa() {
    const char* value = std::getenv("NYTRO_ISA");
    return value ? std::string(value) : std::string();
}

#ifdef NYTRO_DISPATCH

bool runs_v3(const Cpu& c) {
    return c.avx && c.avx2 && c.fma && c.bmi1 && c.bmi2 && c.f16c && c.lzcnt && c.movbe && c.popcnt && c.sse42 &&
           c.os_avx;
}

bool runs_v4(const Cpu& c) {
    return runs_v3(c) && c.avx512f && c.avx512bw && c.avx512cd && c.avx512dq && c.avx512vl && c.os_avx512;
}

struct Variant {
    const char* name;
    const detail::ApiTable* (*table)();
    bool (*runs)(const Cpu&);
};

bool runs_baseline(const Cpu&) { return true; }

// Best first.
const Variant kVariants[] = {{"avx512", &nytro_api_table_avx512, &runs_v4},
                             {"avx2", &nytro_api_table_avx2, &runs_v3},
                             {"baseline", &nytro_api_table_baseline, &runs_baseline}};

struct Choice {
    const Variant* variant = nullptr;
    std::string reason;
};

const Variant* find_variant(const std::string& name) {
    for (const auto& v : kVariants)
        if (name == v.name) return &v;
    return nullptr;
}

Choice choose(const Cpu& cpu, const std::string& requested) {
    Choice choice;
    for (const auto& v : kVariants)
        if (v.runs(cpu)) {
            choice.variant = &v;
            break;
        }
    const std::string best = choice.variant->name;
    if (best == "avx512")
        choice.reason = "the CPU has AVX-512 F/BW/CD/DQ/VL and the OS saves the AVX-512 state";
    else if (best == "avx2")
        choice.reason = cpu.avx512f && !cpu.os_avx512
                            ? "the CPU has AVX2 and FMA; it lists AVX-512 but the OS does not save its state"
                            : "the CPU has AVX2 and FMA (x86-64-v3) but not the AVX-512 of x86-64-v4";
    else
        choice.reason = "the CPU or OS lacks part of x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE, "
                        "or the AVX state)";
    if (!requested.empty()) {
        const Variant* wanted = find_variant(requested);
        if (wanted == nullptr)
            choice.reason = "NYTRO_ISA=" + requested + " is not one of baseline, avx2, avx512 (ignored); " +
                            choice.reason;
        else if (!wanted->runs(cpu))
            choice.reason = "NYTRO_ISA=" + requested + " asked for a variant this machine cannot run (ignored); " +
                            choice.reason;
        else {
            choice.variant = wanted;
            choice.reason = "NYTRO_ISA=" + requested + " in the environment (the best this machine runs: " + best + ")";
        }
    }
    return choice;
}

struct State {
    Cpu cpu;
    std::string requested;
    std::mutex mutex;
    std::atomic<const detail::ApiTable*> table{nullptr};
    std::string selected, reason;
};

State& state() {
    static State* s = [] {
        auto* fresh = new State;
        fresh->cpu = detect();
        fresh->requested = requested_isa();
        const Choice choice = choose(fresh->cpu, fresh->requested);
        fresh->selected = choice.variant->name;
        fresh->reason = choice.reason;
        fresh->table.store(choice.variant->table());
        return fresh;
    }();
    return *s;
}

#endif  // NYTRO_DISPATCH

}  // namespace

#ifdef NYTRO_DISPATCH

namespace detail {

const ApiTable& api() { return *state().table.load(std::memory_order_acquire); }

std::vector<const ApiTable*> runnable_tables() {
    const Cpu& cpu = state().cpu;
    std::vector<const ApiTable*> tables;
    for (const auto& v : kVariants)
        if (v.runs(cpu)) tables.push_back(v.table());
    return tables;
}

}  // namespace detail

IsaInfo isa_info() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    IsaInfo info;
    info.selected = s.selected;
    info.reason = s.reason;
    info.requested = s.requested;
    info.dispatch = true;
    for (const auto& v : kVariants) {
        info.compiled.emplace_back(v.name);
        if (v.runs(s.cpu)) info.runnable.emplace_back(v.name);
    }
    info.cpu_features = feature_names(s.cpu);
    return info;
}

void select_isa(const std::string& name) {
    State& s = state();
    const Variant* wanted = find_variant(name);
    if (wanted == nullptr) throw std::invalid_argument("isa: expected baseline, avx2 or avx512, got '" + name + "'");
    if (!wanted->runs(s.cpu))
        throw std::invalid_argument("isa: this machine cannot run the '" + name + "' variant");
    std::lock_guard<std::mutex> lock(s.mutex);
    s.selected = wanted->name;
    s.reason = "selected by select_isa";
    s.table.store(wanted->table(), std::memory_order_release);
}

#else  // one variant, compiled for the flags the build chose

IsaInfo isa_info() {
    IsaInfo info;
    info.selected = "native";
#ifdef NYTRO_NATIVE_ARCH
    info.reason = "built with -march=native for the building machine: no run-time dispatch";
#else
    info.reason = "built without run-time dispatch, for the compiler's default instruction set";
#endif
    info.requested = requested_isa();
    info.compiled = {"native"};
    info.runnable = {"native"};
    info.cpu_features = feature_names(detect());
    return info;
}

void select_isa(const std::string& name) {
    if (name != "native")
        throw std::invalid_argument("isa: this build has no run-time dispatch; only 'native' exists, got '" + name +
                                    "'");
}

#endif

}  // namespace nytro
