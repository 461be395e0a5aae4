// Highway int8 dot kernels (lowp/lp_dot.h's contract, B stored N x K and
// read in place) for every compiled Highway target: the in-place small-M
// path's kernels below the VNNI JIT tiers.  Exact on every target (int16
// pair products summed in wrapping int32 lanes).
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

}  // namespace anvil::fallback
