// Small-M GEMMs that read B in place instead of packing it.  int8: dot
// kernels (lp_dot.h) when B is stored transposed (N x K, linear-layer
// weights) and row-B kernels (lp_rowb.h) when it is row-major (K x N), the
// JIT's on the VNNI tier, below it the Highway backend's own
// (fallback/hwy_lp_dot.h, hwy_lp_rowb.h).  bf16: the JIT row-B kernels
// (row-major B, M <= 12) on the BF16 tier; below it Highway's dot and
// row-B kernels (M <= 4), which keep the packed kernels' order.
// B is then read exactly once per call, which is what the bandwidth-bound
// batch-1..16 inference calls need.
#pragma once
#include "anvil/anvil.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_epilogue.h"

namespace anvil::lowp {

// True, B not prepacked, when the call takes that path (the thresholds,
// with their measurements, are in lp_inplace.cpp):
//   u8s8, VNNI JIT backend (effective ISA has AVX-512 VNNI): M <= 16 with
//     transposed B and K >= 64, M <= 8 with row-major B (K in blocks);
//   u8s8, Highway backend: transposed B with M <= 2 and K >= 64 or M <= 4
//     and K >= 512; row-major B with M <= 3 and K x N >= 4096 where its
//     row-B kernels are lean (x86), else M = 1 and K x N >= 2^22;
//   bf16, BF16 JIT backend (AVX512-BF16): row-major B, M <= 12;
//   bf16, Highway backend: transposed B with M <= 2 and K >= 128 or M <= 4
//     and K >= 512; row-major B with M <= 4 and K x N >= 4096.
bool inplace_path_applies(const lp_backend &be, const lp_problem &p);
// Runs it: same results, bit for bit, as the packed path.
anvil_status_t run_inplace_path(const lp_backend &be, const lp_problem &p, const lp_epilogue &epi);

}  // namespace anvil::lowp
