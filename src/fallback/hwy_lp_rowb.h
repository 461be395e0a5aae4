// Highway row-B kernels (lowp/lp_rowb.h's contracts, B row-major K x N
// read in place) for every compiled Highway target: the in-place small-M
// path's kernels below the JIT tiers.  bf16 keeps the packed kernels'
// order, so its results are the packed path's bits; u8 x s8 is exact.
#pragma once
#include <cstdint>

#include "lowp/lp_rowb.h"

namespace anvil::fallback {

// Columns per call the in-place path gives these kernels: the m x n
// accumulators stay in L1 (4 rows: 8 KiB), and each walk over K touches a
// page of B per row only once per 512 columns.
constexpr int kHwyRowbBf16Cols = 512;
constexpr int kHwyRowbU8s8Cols = 512;

// Kernel of target `target` (one HWY_* bit, compiled) for m rows (1 ..
// lowp::kRowbMaxM) and any n >= 1 (args.n at run time); null outside that
// range or for a target this build did not compile.  Call it only on a CPU
// that supports the target.
lowp::lp_rowb_fn hwy_lp_rowb_bf16_kernel(int64_t target, int m);
// The same for u8 x s8 -> int32 (wrapping sums).
lowp::lp_rowb_fn hwy_lp_rowb_u8s8_kernel(int64_t target, int m);
// Whether target's u8s8 kernels multiply adjacent int16 pairs into int32
// lanes (x86: vpmaddwd), about the packed kernels' work per product; the
// others widen every product (about twice that).
bool hwy_lp_rowb_u8s8_pairwise(int64_t target);

}  // namespace anvil::fallback
