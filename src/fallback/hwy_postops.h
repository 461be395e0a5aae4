// The Highway implementation of the post-op chain steps declared in
// lowp/postops.h (pp_scale_bias, pp_apply, pp_store), compiled once per
// Highway target.  The public functions pick, per call, the best compiled
// target that the CPU supports and anvil's effective ISA cap allows
// (fallback::allowed_targets).  What is declared here is for tests and
// tools: the per-target entry points, so that targets the cap never picks
// (SSE4) can be checked too.  Accuracy: docs/postops.md.
#pragma once
#include <cstdint>
#include <vector>

#include "anvil/anvil.h"
#include "lowp/postops.h"

namespace anvil::fallback {

struct hwy_postops_target {
    int64_t target = 0;          // one HWY_* target bit
    const char *name = nullptr;  // hwy::TargetName(target)
    // Same contracts as lowp::pp_scale_bias / pp_apply / pp_store.  Call
    // them only on a CPU that supports `target`.
    void (*scale_bias)(float *x, int64_t n, const float *scales, bool per_n,
                       const float *bias) = nullptr;
    void (*apply)(float *x, int64_t n, int64_t i, int64_t j0, const lowp::post_op *ops,
                  int nops, const void *const *srcs) = nullptr;
    void (*store)(const float *x, int64_t n, float zero_point, lowp::out_type type,
                  void *dst) = nullptr;
    void (*block)(const lowp::pp_block &b) = nullptr;  // lowp::pp_block_apply
};

// Every compiled target that hwy::SupportedTargets() reports for this CPU,
// best first (never empty: the SIMD-free fallback is always there).
std::vector<hwy_postops_target> postops_targets();

// The target lowp::pp_* use when the effective ISA tier is `tier` (the best
// supported, compiled target in allowed_targets(tier)); never null.
const hwy_postops_target *postops_target_for(anvil_isa_t tier);

}  // namespace anvil::fallback
