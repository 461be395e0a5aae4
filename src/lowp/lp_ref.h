// Scalar reference helpers for the low-precision path: the lp micro-kernel
// written out element by element (the contract's definition in code) and
// the fp32 <-> bf16 conversions every backend must match.
#pragma once
#include <cstdint>
#include <cstring>

#include "lowp/lp_ukernel.h"

namespace anvil::lowp {

// bf16 -> fp32 is exact: the bf16 bits are the high half of the fp32.
inline float bf16_to_f32(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

// fp32 -> bf16 with round-to-nearest-even; NaN stays NaN (quiet, sign
// kept), infinities stay infinities, values that round past the largest
// bf16 become infinity (as IEEE rounding does).  Denormals are rounded, not
// flushed.  vcvtneps2bf16 gives the same bits except for denormal inputs,
// which it flushes to zero, so the JIT does not use it for outputs.
inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN: quiet
    const uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;  // ties to even; carries into the exponent as IEEE rounding does
    return uint16_t(u >> 16);
}

// The lp micro-kernel contract, one element at a time (any m, n).
void lp_ukernel_scalar(const lp_ukernel_args *args, lp_kind kind);
void lp_ukernel_scalar_bf16(const lp_ukernel_args *args);
void lp_ukernel_scalar_u8s8(const lp_ukernel_args *args);

}  // namespace anvil::lowp
