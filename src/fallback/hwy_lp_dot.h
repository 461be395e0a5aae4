// Highway dot kernels (lowp/lp_dot.h's contracts, B stored N x K and read
// in place) for every compiled Highway target: the in-place small-M path's
// kernels below the JIT tiers.  int8 (hwy_lp_dot.cc): exact on every target
// (int16 pair products summed in wrapping int32 lanes).  bf16
// (hwy_lp_dot_bf16.cc): fp32 sums of the exact products in the order
// lp_dot.h allows.
#pragma once
#include <cstdint>

#include "lowp/lp_dot.h"

namespace anvil::fallback {

// Kernel of target `target` (one HWY_* bit, compiled) for m rows (1 ..
// lowp::kDotMaxM) and n columns (1 .. hwy_lp_dot_max_n(target, m)); null
// outside those ranges or for a target this build did not compile.  Call
// it only on a CPU that supports the target.
lowp::lp_dot_fn hwy_lp_dot_kernel(int64_t target, int m, int n);
// Widest n of an m-row kernel of `target` (0 when m is out of range or the
// target is not compiled): as many accumulators as the registers hold.
int hwy_lp_dot_max_n(int64_t target, int m);

// The same for the bf16 kernels (lp_dot.h, "bf16 dot kernels").
lowp::lp_dot_fn hwy_lp_dot_bf16_kernel(int64_t target, int m, int n);
int hwy_lp_dot_bf16_max_n(int64_t target, int m);

}  // namespace anvil::fallback
