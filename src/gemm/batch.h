// Strided batches of independent GEMMs (anvil_sgemm_batch_strided and its
// bf16 twin): how the items share the threads.
//
// Many small items (attention heads: 12..2048 items of 128 x 128 x 64) run
// side by side, one item per thread at a time, each single-threaded inside
// (a parallel region does not nest: the item's own parallel_for runs
// inline).  Few large items run one after another, each using every
// thread.  Either way an item's arithmetic is that of the single call, so
// results are bitwise identical to batch separate calls, for any thread
// count.
#pragma once
#include <atomic>
#include <cstdint>

#include "anvil/anvil.h"
#include "threading/parallel.h"

namespace anvil::gemm {

// Whether `items` items of item_flops each go side by side on nthreads.
bool batch_items_side_by_side(int64_t items, double item_flops, int nthreads);

// Runs item(b) for every b in [first, batch); returns the first failure
// (items after a failure may still run).
template <typename F>
anvil_status_t run_batch_items(int64_t first, int64_t batch, double item_flops, const F &item) {
    const int64_t items = batch - first;
    if (items <= 0) return anvil_success;
    if (!batch_items_side_by_side(items, item_flops, threading::num_threads())) {
        for (int64_t b = first; b < batch; ++b)
            if (const anvil_status_t st = item(b); st != anvil_success) return st;
        return anvil_success;
    }
    std::atomic<int> failure{anvil_success};
    threading::parallel_for(items, [&](int64_t i) {
        const anvil_status_t st = item(first + i);
        int expected = anvil_success;
        if (st != anvil_success) failure.compare_exchange_strong(expected, int(st));
    });
    return anvil_status_t(failure.load());
}

}  // namespace anvil::gemm
