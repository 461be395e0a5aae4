// parallel_for over [0, n): the caller's pool if one is installed
// (anvil_set_threadpool), else OpenMP with anvil_set_num_threads threads.
// How work is split may depend on the thread count, but the arithmetic of
// every output element must not (callers never split K), so results are
// bitwise identical for any thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace anvil::threading {

// Threads the current pool runs (>= 1).
int num_threads();
// True inside an anvil parallel region on this thread (no nesting).
bool in_parallel_region();

// Calls body(i) for every i in [0, n) on the pool; returns when all are done.
void parallel_for_pool(int64_t n, const std::function<void(int64_t)> &body);

// Runs inline (no std::function, no pool) when there is nothing to share:
// n == 1, one thread, or already inside a parallel region.
template <typename F>
void parallel_for(int64_t n, const F &body) {
    if (n <= 0) return;
    if (n == 1 || in_parallel_region() || num_threads() <= 1) {
        for (int64_t i = 0; i < n; ++i) body(i);
        return;
    }
    parallel_for_pool(n, std::function<void(int64_t)>(std::cref(body)));
}

}  // namespace anvil::threading
