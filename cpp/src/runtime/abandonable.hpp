// An interruption point inside one long library call (LAPACK's ?syevd, ?geqp3, ?potrf,
// or Eigen's solvers where no LAPACK is registered), which offers none of its own and
// cannot be stopped once started: the call runs on a worker thread while the calling
// thread keeps calling the progress callback, so that a callback that throws (Ctrl-C in
// the Python bindings) ends the computation at once. The worker is then abandoned: it
// runs to its end in the background and frees what it holds. Its work must therefore
// own everything it touches (copies of the inputs, captured by value), never refer to
// the caller's data.
//
// Why not a blocked solver with interruption points of its own: ?syevd's tridiagonal
// reduction and divide and conquer, and ?geqp3's pivoted panels, are what make these
// stages fast (Eigen's own eigensolver is about 7x slower at m = 2000); re-implementing
// them in blocks would lose that, where abandoning them costs only the rest of their CPU
// time after an interruption.
#pragma once

#include "nytro/types.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

namespace nytro::detail {

// How often the calling thread calls the callback while the work runs.
constexpr std::chrono::milliseconds kAbandonablePoll{20};

// The result of work(), computed on a worker thread while callback(report) is called
// every kAbandonablePoll on this one; an exception from the callback is rethrown at once
// (the work is abandoned), one from the work once it ends. Without a callback, or where
// no thread can be started, the work runs here.
template <class Work>
auto run_abandonable(const Callback& callback, const Progress& report, Work work) -> decltype(work()) {
    using Result = decltype(work());
    if (!callback) return work();
    struct State {
        std::mutex mutex;
        std::condition_variable finished;
        bool done = false;
        std::optional<Result> result;
        std::exception_ptr error;
    };
    auto state = std::make_shared<State>();
    auto shared_work = std::make_shared<Work>(std::move(work));
    std::thread worker;
    try {
        worker = std::thread([state, shared_work] {
            std::optional<Result> result;
            std::exception_ptr error;
            try {
                result.emplace((*shared_work)());
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(state->mutex);
            state->result = std::move(result);
            state->error = error;
            state->done = true;
            state->finished.notify_all();
        });
    } catch (const std::system_error&) {
        return (*shared_work)();  // no thread to spare
    }
    while (true) {
        {
            std::unique_lock<std::mutex> lock(state->mutex);
            if (state->finished.wait_for(lock, kAbandonablePoll, [&] { return state->done; })) break;
        }
        try {
            callback(report);
        } catch (...) {
            worker.detach();
            throw;
        }
    }
    worker.join();
    if (state->error) std::rethrow_exception(state->error);
    return std::move(*state->result);
}

// The same, reporting {stage, 0, 1}: one call of a library routine, the stage's only work.
template <class Work>
auto run_abandonable(const Callback& callback, const char* stage, Work work) -> decltype(work()) {
    return run_abandonable(callback, Progress{stage, 0, 1}, std::move(work));
}

}  // namespace nytro::detail
