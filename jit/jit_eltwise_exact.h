// The transcendental eltwise ops of the post-op chain (gelu_tanh, gelu_erf,
// silu, sigmoid, tanh) emitted on zmm, bit for bit the Highway chain's
// (src/fallback/hwy_postops.cc, docs/postops.md): the same IEEE operations
// in the same order, no FMA, no approximate reciprocal.  Where an
// operation of the portable version is an identity for every non-NaN input
// (the NaN screen and clamps of its exp on arguments already inside the
// range) it is left out; NaN inputs come out unchanged at the end, as
// there.  Used by the fused epilogue of the lp GEMM kernels.
#pragma once
#include <xbyak/xbyak.h>

namespace anvil::jit {

enum class exact_eltwise { gelu_tanh, silu, sigmoid, gelu_erf, tanh };

// The broadcast constants the ops read ({1to16}); emit once, after the
// kernel's return, at `consts`.
void emit_eltwise_constants(Xbyak::CodeGenerator &g, Xbyak::Label &consts);

// v = op(v) in place.  t0..t3 and k_a, k_b are scratch.
void emit_exact_eltwise(Xbyak::CodeGenerator &g, exact_eltwise op, const Xbyak::Zmm &v,
                        const Xbyak::Label &consts, const Xbyak::Zmm &t0, const Xbyak::Zmm &t1,
                        const Xbyak::Zmm &t2, const Xbyak::Zmm &t3, const Xbyak::Opmask &k_a,
                        const Xbyak::Opmask &k_b);

// The registers of one vector for emit_exact_eltwise2.
struct eltwise_regs {
    Xbyak::Zmm v;     // the value, in place
    Xbyak::Zmm t[4];  // scratch
    Xbyak::Opmask k_a, k_b;
};

// Two vectors at once, their instructions interleaved step by step (two
// independent dependency chains side by side): the same results as two
// emit_exact_eltwise calls.  No register may appear in both.
void emit_exact_eltwise2(Xbyak::CodeGenerator &g, exact_eltwise op, const Xbyak::Label &consts,
                         const eltwise_regs &r0, const eltwise_regs &r1);

}  // namespace anvil::jit
