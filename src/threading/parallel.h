// parallel_for over [0, n): the caller's pool if one is installed
// (anvil_set_threadpool), else OpenMP with anvil_set_num_threads threads.
// Work partitioning must never depend on which thread runs an index, so
// results are bitwise identical for any thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace anvil::threading {

// Threads the current pool runs (>= 1).
int num_threads();
// Calls body(i) for every i in [0, n); returns when all are done.  Runs
// inline when n == 1 or one thread is configured, or when called from
// inside another anvil parallel region (no nested parallelism).
void parallel_for(int64_t n, const std::function<void(int64_t)> &body);

}  // namespace anvil::threading
