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
#include <cstdint>
#include <vector>

#include "anvil/anvil.h"
#include "threading/parallel.h"

namespace anvil::gemm {

// Whether `items` items of item_flops each go side by side on nthreads.
bool batch_items_side_by_side(int64_t items, double item_flops, int nthreads);

// Runs item(b) for every b in [0, batch) and returns each item's status in
// *status (resized to batch).
template <typename F>
void run_batch_items(int64_t batch, double item_flops, const F &item,
                     std::vector<anvil_status_t> *status) {
    status->assign(size_t(batch), anvil_success);
    if (!batch_items_side_by_side(batch, item_flops, threading::num_threads())) {
        for (int64_t b = 0; b < batch; ++b) (*status)[size_t(b)] = item(b);
        return;
    }
    threading::parallel_for(batch, [&](int64_t b) { (*status)[size_t(b)] = item(b); });
}

// The batch's status: success, or the first failure other than
// anvil_jit_error, or anvil_jit_error.  The items that failed with
// anvil_jit_error (which writes nothing) go to *jit_failed.
anvil_status_t batch_status(const std::vector<anvil_status_t> &status,
                            std::vector<int64_t> *jit_failed);

}  // namespace anvil::gemm
