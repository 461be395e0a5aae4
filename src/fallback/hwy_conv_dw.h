// The Highway depthwise-convolution backend: dw micro-kernels
// (conv/dw_ukernel.h) for all four kinds, compiled once per Highway target
// (dynamic dispatch under anvil's ISA cap, as hwy_lowp.h).
// conv::highway_dw_backend() (dw_backend.h) is the driver's entry point;
// what is declared here is for tests and tools.
//
// Every target gives the scalar kernels' bits (dw_ref.cpp): f32 / bf16 one
// fused multiply-add per tap in increasing t (MulAdd on targets with a
// native FMA; targets without one run the scalar kernel, whose std::fma is
// exact); u8 / s8 widened to int32 lanes, zero point subtracted and
// multiplied there (Mul: the low 32 bits, wrapping).
#pragma once
#include <cstdint>
#include <vector>

#include "anvil/anvil.h"
#include "conv/dw_backend.h"
#include "conv/dw_ukernel.h"

namespace anvil::fallback {

// What one compiled Highway target provides.  Call its functions only on a
// CPU that supports `target`.
struct hwy_dw_target {
    int64_t target = 0;          // one HWY_* target bit
    const char *name = nullptr;  // hwy::TargetName(target)
    // The kernel for kind and zero-point handling; it reads m (any m >= 1)
    // from its dw_ukernel_args.  nullptr for a kind out of range.
    conv::dw_ukernel_fn (*get)(conv::dw_kind kind, bool zero_point) = nullptr;
};

// Every target compiled into this library that hwy::SupportedTargets()
// reports for this CPU, best first.  Never empty.
std::vector<hwy_dw_target> compiled_dw_targets();

// The dw backend running target `target`'s kernels (one object per target,
// never destroyed); null when `target` is not one compiled target.
const conv::dw_backend *hwy_dw_backend_for_target(int64_t target);

// The backend highway_dw_backend() returns when the CPU supports the
// targets in `supported` and the effective tier is `tier` (allowed_targets
// of hwy_sgemm.h).  Null when there is none.
const conv::dw_backend *highway_dw_backend_for(int64_t supported, anvil_isa_t tier);

}  // namespace anvil::fallback
