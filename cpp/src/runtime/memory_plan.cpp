#include "runtime/memory_plan.hpp"

#include <algorithm>
#include <cstdio>

namespace nytro::detail {

std::string gigabytes(double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g GB", bytes / 1e9);
    return text;
}

double MemoryPlan::peak() const {
    double stages[3] = {0, 0, 0};
    for (const Item& item : items_) stages[item.stage] += item.bytes;
    return stages[whole] + std::max(stages[factor], stages[solve]);
}

std::string MemoryPlan::describe() const {
    std::string text = task_ + ": needs " + gigabytes(peak()) + " at its peak, " + memory_limit_text() + ". Plan:";
    const char* stage_names[] = {"", " [factor stage]", " [solver stage]"};
    for (const Item& item : items_)
        text += " " + item.what + stage_names[item.stage] + " " + gigabytes(item.bytes) + ";";
    if (!advice_.empty()) {
        text += " To fit, change:";
        for (std::size_t i = 0; i < advice_.size(); ++i) text += (i ? "; or " : " ") + advice_[i];
        text += ".";
    }
    return text;
}

void MemoryPlan::check() const {
    if (peak() > double(available_memory_bytes())) throw out_of_memory(describe());
}

}  // namespace nytro::detail
