// fp32 <-> bf16 row conversions for the low-precision path (packing fp32
// inputs to bf16, widening bf16 data).  JIT AVX-512 from the avx512_core
// tier, else Highway-dispatched (the best target anvil's ISA cap allows, see
// fallback/hwy_lowp.h); bitwise equal, element
// by element, to the scalar f32_to_bf16 / bf16_to_f32 in lowp/lp_ref.h for
// every input: round to nearest even, NaN stays NaN (quiet, sign kept), Inf
// stays Inf, overflow rounds to Inf, denormals are rounded, not flushed.
#pragma once
#include <cstdint>

namespace anvil::lowp {

// dst[i] = f32_to_bf16(src[i]) for 0 <= i < n (nothing for n <= 0).  Any
// alignment (of the element types); src and dst must not overlap.
void convert_f32_to_bf16(const float *src, uint16_t *dst, int64_t n);
// dst[i] = bf16_to_f32(src[i]) for 0 <= i < n (exact).
void convert_bf16_to_f32(const uint16_t *src, float *dst, int64_t n);

// The JIT AVX-512 versions (jit/jit_bf16_convert.cpp), bitwise the same:
// (src, dst, n) with src/dst typed as above; null when the CPU lacks
// AVX-512 or in builds without the JIT.  The two functions above use them
// when the ISA cap allows avx512_core.
using jit_convert_fn = void (*)(const void *src, void *dst, int64_t n);
jit_convert_fn jit_bf16_convert_kernel(bool to_bf16);

}  // namespace anvil::lowp
