// The Highway low-precision backend: lp micro-kernels (lowp/lp_ukernel.h) for
// bf16 and u8s8 k-groups, and the fp32 <-> bf16 row conversions
// (lowp/bf16_convert.h), compiled once per Highway target (dynamic
// dispatch).  lowp::highway_lp_backend() (lp_backend.h) is the driver's entry
// point; what is declared here is for tests and tools.
//
// Every target gives the scalar kernels' bits (lowp/lp_ref.h) for every
// input: bf16 multiplies and adds separately (each product rounded, then
// each sum), element 1 of a group before element 0; u8s8 multiplies exactly
// and adds in wrapping int32 (vpmaddwd on 16-bit widened bytes on x86, never
// the saturating vpmaddubsw).
#pragma once
#include <cstdint>
#include <vector>

#include "anvil/anvil.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_ukernel.h"

namespace anvil::fallback {

// What one compiled Highway target provides.  Call its functions only on a
// CPU that supports `target`.
struct hwy_lp_target {
    int64_t target = 0;          // one HWY_* target bit (HWY_AVX2, HWY_SCALAR, ...)
    const char *name = nullptr;  // hwy::TargetName(target)
    // Kernel for a tile of m rows and nv vectors of 16 columns (1 <= m <=
    // lowp::kMR, nv 1 or 2) of `kind`; nullptr outside that range.  The
    // kernel reads m, n, kg and accumulate from its lp_ukernel_args, so the
    // one kernel per kind serves every tile (and any m >= 1, n >= 1).
    lowp::lp_ukernel_fn (*get)(lowp::lp_kind kind, int m, int nv) = nullptr;
    // The row conversions of lowp/bf16_convert.h on this target.
    void (*f32_to_bf16)(const float *src, uint16_t *dst, int64_t n) = nullptr;
    void (*bf16_to_f32)(const uint16_t *src, float *dst, int64_t n) = nullptr;
};

// Every target compiled into this library that hwy::SupportedTargets()
// reports for this CPU (so hwy::SetSupportedTargetsForTest narrows it), best
// first.  Never empty: the SIMD-free fallback (EMU128 or SCALAR) is always
// there.
std::vector<hwy_lp_target> compiled_lp_targets();

// The lp backend running target `target`'s kernels (one object per target,
// made once and never destroyed); null when `target` is not one compiled
// target.  Does not check that the CPU supports it (tests pass targets from
// compiled_lp_targets()).
const lowp::lp_backend *hwy_lp_backend_for_target(int64_t target);

// The backend highway_lp_backend() returns when the CPU supports the
// targets in `supported` (an hwy::SupportedTargets()-style mask) and the
// effective tier is `tier`: the best compiled target in both (allowed_targets
// of hwy_sgemm.h: no AVX-512 below avx512_core).  Null when there is none.
const lowp::lp_backend *highway_lp_backend_for(int64_t supported, anvil_isa_t tier);

}  // namespace anvil::fallback
