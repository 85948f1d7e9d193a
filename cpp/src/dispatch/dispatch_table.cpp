// Compiled into each instruction-set variant (NYTRO_ISA_NAME = baseline, avx2 or avx512):
// the variant's table of entry points, under a name of its own.
#include "dispatch/dispatch_table.hpp"

#ifndef NYTRO_ISA_NAME
#error "dispatch_table.cpp is compiled once per variant, with NYTRO_ISA_NAME defined"
#endif

#define NYTRO_JOIN2(a, b) a##b
#define NYTRO_JOIN(a, b) NYTRO_JOIN2(a, b)

namespace {

#define NYTRO_TABLE_ENTRY(member, address) address,
const nytro::detail::ApiTable table = {NYTRO_DISPATCHED_API(NYTRO_TABLE_ENTRY)};
#undef NYTRO_TABLE_ENTRY

}  // namespace

extern "C" __attribute__((visibility("default"))) const nytro::detail::ApiTable* NYTRO_JOIN(nytro_api_table_,
                                                                                            NYTRO_ISA_NAME)() {
    return &table;
}
