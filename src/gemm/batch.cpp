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

}  // namespace anvil::gemm
