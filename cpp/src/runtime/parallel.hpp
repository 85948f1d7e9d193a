// OpenMP helpers. Every parallel region names its thread count (never global OpenMP
// state), and no exception escapes a region: the first one thrown inside is captured,
// the remaining tasks are skipped, and it is rethrown on the calling thread.
#pragma once

#include "nytro/types.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

namespace nytro::detail {

// The thread count to use: n_threads, or nytro::default_threads() when n_threads <= 0,
// never more than the cores of the affinity mask (oversubscribed OpenMP teams spin
// against each other and run many times slower).
int resolve_threads(int n_threads);

// `threads`, or 1 when `flops` of work is too little to pay for waking a team.
inline int threads_for(double flops, int threads) { return flops < 2e5 ? 1 : threads; }

// The calling thread's index inside a parallel region (0 outside one), and the number of
// threads in that region's team (1 outside one).
int omp_thread_index();
int omp_team_size();

// body(task, thread) for task in [0, n_tasks), dynamically scheduled. `thread` is in
// [0, threads) and indexes per-thread scratch space.
template <class Body>
void parallel_for(Index n_tasks, int n_threads, Body&& body) {
    const int threads = static_cast<int>(std::min<Index>(resolve_threads(n_threads), n_tasks));
    if (threads <= 1) {
        for (Index task = 0; task < n_tasks; ++task) body(task, 0);
        return;
    }
    std::exception_ptr error;
    std::mutex error_mutex;
    std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (Index task = 0; task < n_tasks; ++task) {
        if (failed.load(std::memory_order_relaxed)) continue;
        try {
            body(task, omp_thread_index());
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
        }
    }
    if (error) std::rethrow_exception(error);
}

// Split [0, n) into `parts` near-equal contiguous ranges; part p is [begin, end).
inline Index range_begin(Index n, Index parts, Index p) { return n * p / parts; }

// Waits for every thread of the innermost enclosing parallel region.
void omp_barrier();

// A thread's place in a parallel_team: its index, the team's size, and the barrier at
// which the team's threads meet (nothing for a team of one).
struct Team {
    int thread, size;
    void barrier() const {
        if (size > 1) omp_barrier();
    }
    // This thread's part [first, second) of [0, n) split into `size` near-equal parts.
    std::pair<Index, Index> share(Index n) const {
        return {range_begin(n, size, thread), range_begin(n, size, thread + 1)};
    }
};

// body(team) once on each thread of a team of at most n_threads: one fork and join for
// many steps that the threads synchronise at team.barrier(). `body` must not throw: a
// thread that left early would leave the others waiting at a barrier.
template <class Body>
void parallel_team(int n_threads, Body&& body) {
    const int threads = resolve_threads(n_threads);
    if (threads <= 1) {
        body(Team{0, 1});
        return;
    }
#pragma omp parallel num_threads(threads)
    body(Team{omp_thread_index(), omp_team_size()});
}

}  // namespace nytro::detail
