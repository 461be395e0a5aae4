// Small-M GEMMs that read B in place instead of packing it: for int8 the dot
// kernels (lp_dot.h: the JIT's, or below the VNNI tiers the Highway
// backend's own, fallback/hwy_lp_dot.h) when B is stored transposed (N x K,
// linear-layer weights) and the JIT row-B kernels (lp_rowb.h) when it is
// row-major (K x N); for bf16 the JIT row-B kernels (row-major B only, M <=
// 12).
// B is then read exactly once per call, which is what the bandwidth-bound
// batch-1..16 inference calls need.
#pragma once
#include "anvil/anvil.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_epilogue.h"

namespace anvil::lowp {

// True, B not prepacked, for u8s8 problems with M <= 16 (transposed B,
// K >= 64) or M <= 4 (row-major B) when the effective ISA has AVX-512 VNNI
// and `be` is the VNNI JIT backend; with transposed B, M <= 2 and K >= 64
// or M <= 4 and K >= 512 when `be` has dot kernels of its own (Highway); for bf16 problems with M <= 12 and
// row-major B when it has AVX512-BF16 and `be` is the BF16 JIT backend.
bool inplace_path_applies(const lp_backend &be, const lp_problem &p);
// Runs it: same results, bit for bit, as the packed path.
anvil_status_t run_inplace_path(const lp_backend &be, const lp_problem &p, const lp_epilogue &epi);

}  // namespace anvil::lowp
