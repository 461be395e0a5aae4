// AVX-512 fp32 <-> bf16 row conversions (lowp/bf16_convert.h): 16 elements
// per step, the tail through opmasks (nothing read or written past n).
// fp32 -> bf16 rounds with integer operations, not vcvtneps2bf16, which
// flushes denormal inputs: the result is bitwise lowp::f32_to_bf16.
#pragma once
#include "jit/jit_generator.h"

namespace anvil::jit {

class jit_bf16_convert : public jit_generator {
public:
    // to_bf16: void(const float *src, uint16_t *dst, int64_t n);
    // else     void(const uint16_t *src, float *dst, int64_t n).
    explicit jit_bf16_convert(bool to_bf16);

private:
    void step_to_bf16(const Xbyak::Opmask &k, bool masked);
    void step_to_f32(const Xbyak::Opmask &k, bool masked);

    const Xbyak::Reg64 reg_src = rdi, reg_dst = rsi, reg_n = rdx, reg_tmp = rax;
};

}  // namespace anvil::jit
