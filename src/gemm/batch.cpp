#include "gemm/batch.h"

namespace anvil::gemm {

bool batch_items_side_by_side(int64_t items, double item_flops, int nthreads) {
    if (nthreads <= 1 || items < nthreads) return false;
    // Whole rounds of items keep every thread busy to the end; so do many
    // items (the last, partial round is a small part of the run); and an
    // item too small to give each thread ~10 us of work (8 MFLOP at a
    // fraction of AVX-512 speed) cannot use the threads inside it anyway.
    return items % nthreads == 0 || items >= 4 * int64_t(nthreads) ||
           item_flops < 8e6 * nthreads;
}

anvil_status_t batch_status(const std::vector<anvil_status_t> &status,
                            std::vector<int64_t> *jit_failed) {
    jit_failed->clear();
    anvil_status_t other = anvil_success;
    for (size_t b = 0; b < status.size(); ++b) {
        if (status[b] == anvil_jit_error)
            jit_failed->push_back(int64_t(b));
        else if (status[b] != anvil_success && other == anvil_success)
            other = status[b];
    }
    if (other != anvil_success) return other;
    return jit_failed->empty() ? anvil_success : anvil_jit_error;
}

}  // namespace anvil::gemm
