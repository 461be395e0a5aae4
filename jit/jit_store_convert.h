// The fp32 -> output-type conversion and store that the fused epilogues of
// the lp GEMM kernels (jit_lp_avx512) and the depthwise kernels
// (jit_conv_dw_avx512) share, bit for bit the Highway chain's pp_store:
//   f32 as is; bf16 round to nearest even by integer arithmetic, NaN -> the
//   high half with the quiet bit; u8 / s8: NaN -> 0, clamped to the range,
//   rounded to nearest even ({rn-sae}, whatever MXCSR says), narrowed.
#pragma once
#include <xbyak/xbyak.h>

namespace anvil::jit {

// Output types, numbered as lowp::EPI_* and conv::DW_EPI_* (1..4).
enum : int { kStoreF32 = 1, kStoreBf16 = 2, kStoreU8 = 3, kStoreS8 = 4 };

// The broadcast constants the conversions read ({1to16}); emit once, after
// the kernel's return, at `consts`.  A ud2 before them marks where the code
// ends: disassemblers (and tests/test_jit_failure.cpp) stop there.
void emit_store_constants(Xbyak::CodeGenerator &g, Xbyak::Label &consts);

// Converts v (clobbered) to `out` and stores it at dst (an Address with the
// opmask of the columns to write, if any).  t1..t3 and k_tmp are scratch.
void emit_store_converted(Xbyak::CodeGenerator &g, int out, const Xbyak::Address &dst,
                          const Xbyak::Zmm &v, const Xbyak::Label &consts, const Xbyak::Zmm &t1,
                          const Xbyak::Zmm &t2, const Xbyak::Zmm &t3, const Xbyak::Opmask &k_tmp);

}  // namespace anvil::jit
