// Which instruction-set variant of the core runs, and why. A portable build compiles
// the core three times (baseline x86-64, x86-64-v3 with AVX2 and FMA, x86-64-v4 with
// AVX-512) and picks one at first use from cpuid and the OS's saved register state
// (xgetbv); NYTRO_ISA=baseline|avx2|avx512 in the environment asks for one, which is
// granted when the CPU and OS can run it. A native build has one variant, "native".
#pragma once

#include <string>
#include <vector>

namespace nytro {

struct IsaInfo {
    std::string selected;                    // "baseline", "avx2", "avx512" or "native"
    std::string reason;                      // why that one, in words
    std::string requested;                   // NYTRO_ISA's value ("" when unset)
    bool dispatch = false;                   // whether this build chooses at run time
    std::vector<std::string> compiled;       // the variants this build carries
    std::vector<std::string> runnable;       // those this CPU and OS can run
    std::vector<std::string> cpu_features;   // what cpuid and xgetbv report, by name
};

IsaInfo isa_info();

// For tests and benchmarks: run the given variant from now on ("native" in a native
// build). Throws std::invalid_argument for a variant not compiled in or one this machine
// cannot run. Not to be called while another thread is inside the library.
void select_isa(const std::string& name);

}  // namespace nytro
