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
        case kStoreS8: {
            const bool u8 = out == kStoreU8;
            g.vcmpps(k_tmp, v, v, 7);  // ordered: NaN lanes -> 0
            g.vmovaps(v | k_tmp | g.T_z, v);
            g.vmaxps(v, v, g.ptr_b[g.rip + consts + (u8 ? 20 : 28)]);
            g.vminps(v, v, g.ptr_b[g.rip + consts + (u8 ? 24 : 32)]);
            g.vcvtps2dq(v, v | g.T_rn_sae);
            if (u8)
                g.vpmovusdb(dst, v);
            else
                g.vpmovsdb(dst, v);
            break;
        }
        default: break;
    }
}

}  // namespace anvil::jit
