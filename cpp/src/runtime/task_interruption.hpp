// An interruption point between the tasks of one parallel_for (parallel.hpp), for a stage
// that is a single parallel loop (a whole kernel matrix, the first touch of its pages):
// thread 0, the calling thread, makes the call after its own tasks, at most every
// kTaskCallEvery. An exception from the call (Ctrl-C in the Python bindings) ends the
// loop as one from a task does: parallel_for skips the tasks not yet begun and rethrows
// it on the calling thread once the team has joined.
//
// Why inside the loop rather than between slabs of it (each slab a parallel_for, the call
// between them, as kernel_predict does): the team waits at the end of each slab for its
// last task, a cost per slab that a slab must be long to hide, and a long slab is a late
// reaction on a loaded machine; here the other threads go on taking tasks while thread 0
// makes the call (a Python callback may wait for the GIL), and the tasks themselves are
// the same, so the results keep their bits.
#pragma once

#include <chrono>
#include <functional>
#include <utility>

namespace nytro::detail {

// At most one call per this interval: a task of the kernel takes a millisecond or less,
// and the Python bindings' callback looks at signals every 20 ms anyway.
constexpr std::chrono::milliseconds kTaskCallEvery{20};

class TaskInterruption {
public:
    // `call` may be empty: then after_task does nothing.
    explicit TaskInterruption(std::function<void()> call)
        : call_(std::move(call)), last_(std::chrono::steady_clock::now()) {}

    explicit operator bool() const { return bool(call_); }

    // After a task that ran on `thread` (parallel_for's thread index): the call, on thread
    // 0 only, if kTaskCallEvery has passed since the last one. May throw what the call throws.
    void after_task(int thread) {
        if (thread != 0 || !call_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < kTaskCallEvery) return;
        last_ = now;
        call_();
    }

private:
    std::function<void()> call_;
    std::chrono::steady_clock::time_point last_;  // thread 0's alone: no other thread touches it
};

}  // namespace nytro::detail
