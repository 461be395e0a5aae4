// One fused multiply-add chain per element over all of K: the arithmetic
// of the direct small-GEMM kernels (direct_gemm_desc), run with any
// backend's tile kernels, so that anvil_smm_execute gives the same bits on
// every ISA tier and CPU, with or without a direct kernel.  One thread, no
// packing, no K blocks: meant for the small problems anvil_smm serves.
#pragma once
#include "anvil/anvil.h"
#include "gemm/backend.h"
#include "gemm/driver.h"

namespace anvil::gemm {

// C = alpha op(A) op(B) + beta C for p with K >= 1 and alpha != 0 (the
// others are BLAS scaling, not a product).  A transposed B is copied
// row-major first (B is then read in place by the tile kernels).  Fetches
// every kernel before writing C, so a failure leaves C untouched.
anvil_status_t run_one_chain(const backend &be, const sgemm_problem &p);

}  // namespace anvil::gemm
