#include "jit/jit_store_convert.h"

namespace anvil::jit {

using namespace Xbyak;

void emit_store_constants(CodeGenerator &g, Label &consts) {
    g.ud2();  // never reached: marks the end of the code for disassemblers and the tests
    g.align(64);
    g.L(consts);
    g.dd(1);           // +0: bf16 rounding lsb mask
    g.dd(0x7fff);      // +4: bf16 rounding bias
    g.dd(0x40);        // +8: bf16 quiet bit
    g.dd(0x7fffffff);  // +12: |x| mask
    g.dd(0x7f800000);  // +16: +inf bits
    g.dd(0x00000000);  // +20: 0.0f (u8 low bound)
    g.dd(0x437f0000);  // +24: 255.0f
    g.dd(0xc3000000);  // +28: -128.0f
    g.dd(0x42fe0000);  // +32: 127.0f
    // +36: vfixupimmps table: QNaN and SNaN -> +0 (response 8), every
    // other class keeps the value (response 0: the destination, which is v).
    g.dd(0x00000088);
}

void emit_store_converted(CodeGenerator &g, int out, const Address &dst, const Zmm &v,
                          const Label &consts, const Zmm &t1, const Zmm &t2, const Zmm &t3,
                          const Opmask &k_tmp) {
    switch (out) {
        case kStoreF32: g.vmovups(dst, v); break;
        case kStoreBf16:
            // lowp::f32_to_bf16: + 0x7fff + lsb, >> 16; NaN -> high half | quiet bit.
            g.vpsrld(t1, v, 16);
            g.vpandd(t2, t1, g.ptr_b[g.rip + consts]);
            g.vpaddd(t2, t2, v);
            g.vpaddd(t2, t2, g.ptr_b[g.rip + consts + 4]);
            g.vpsrld(t2, t2, 16);
            g.vpord(t1, t1, g.ptr_b[g.rip + consts + 8]);
            g.vpandd(t3, v, g.ptr_b[g.rip + consts + 12]);
            g.vpcmpgtd(k_tmp, t3, g.ptr_b[g.rip + consts + 16]);
            g.vmovdqa32(t2 | k_tmp, t1);
            g.vpmovdw(dst, t2);
            break;
        case kStoreU8:
            // max(v, 0) returns its second operand when v is NaN: NaN and
            // negatives (-0 too) become +0 in one step.  The rounding then
            // narrows with unsigned saturation: values above 255 (and +Inf,
            // whose conversion is 0x80000000, 2^31 unsigned) become 255.
            // Same bits as clamping first: RNE keeps [0, 255] in [0, 256].
            g.vmaxps(v, v, g.ptr_b[g.rip + consts + 20]);
            g.vcvtps2dq(v, v | g.T_rn_sae);
            g.vpmovusdb(dst, v);
            break;
        case kStoreS8:
            // NaN -> +0 (vfixupimmps, table at +36), then min(v, 127):
            // above it the conversion would give 0x80000000, which
            // saturates to -128.  Below -128 (and -Inf, 0x80000000 too)
            // the signed saturation gives -128 as clamping would.
            g.vfixupimmps(v, v, g.ptr_b[g.rip + consts + 36], 0);
            g.vminps(v, v, g.ptr_b[g.rip + consts + 32]);
            g.vcvtps2dq(v, v | g.T_rn_sae);
            g.vpmovsdb(dst, v);
            break;
        default: break;
    }
}

}  // namespace anvil::jit
