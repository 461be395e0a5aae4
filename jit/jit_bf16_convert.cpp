#include "jit/jit_bf16_convert.h"


#include "cpu/isa.h"
#include "lowp/bf16_convert.h"

namespace anvil::jit {

using namespace Xbyak;

// Register map: zmm0 value, zmm1/zmm2 temporaries, zmm3..zmm7 constants.
namespace {
const Zmm v(0), t1(1), t2(2), c_one(3), c_7fff(4), c_absmask(5), c_inf(6), c_quiet(7);
constexpr int kLanes = 16;
}  // namespace

jit_bf16_convert::jit_bf16_convert(bool to_bf16) {
    preamble({});
    if (to_bf16) {
        // Constants by broadcast from a GPR (no data section).
        mov(eax, 1);
        vpbroadcastd(c_one, eax);
        mov(eax, 0x7fff);
        vpbroadcastd(c_7fff, eax);
        mov(eax, 0x7fffffff);
        vpbroadcastd(c_absmask, eax);
        mov(eax, 0x7f800000);
        vpbroadcastd(c_inf, eax);
        mov(eax, 0x40);
        vpbroadcastd(c_quiet, eax);
    }
    Label loop, tail, done;
    L(loop);
    cmp(reg_n, kLanes);
    jl(tail);
    if (to_bf16)
        step_to_bf16(k0, false);
    else
        step_to_f32(k0, false);
    add(reg_src, to_bf16 ? kLanes * 4 : kLanes * 2);
    add(reg_dst, to_bf16 ? kLanes * 2 : kLanes * 4);
    sub(reg_n, kLanes);
    jmp(loop);
    L(tail);
    test(reg_n, reg_n);
    jle(done);
    // k1 = (1 << n) - 1, n in 1..15.
    mov(reg_tmp, 1);
    shlx(reg_tmp, reg_tmp, reg_n);
    sub(reg_tmp, 1);
    kmovw(k1, reg_tmp.cvt32());
    if (to_bf16)
        step_to_bf16(k1, true);
    else
        step_to_f32(k1, true);
    L(done);
    postamble();
}

// bf16 = (u + 0x7fff + ((u >> 16) & 1)) >> 16 (ties to even; carries into
// the exponent round up to the next binade or to infinity, as IEEE does);
// NaN: (u >> 16) | 0x40 (quiet, sign and high payload kept).
void jit_bf16_convert::step_to_bf16(const Opmask &k, bool masked) {
    if (masked)
        vmovdqu32(v | k | T_z, ptr[reg_src]);
    else
        vmovdqu32(v, ptr[reg_src]);
    vpsrld(t1, v, 16);          // hi = u >> 16
    vpandd(t2, t1, c_one);      // its lowest bit: ties go to even
    vpaddd(t2, t2, c_7fff);
    vpaddd(t2, t2, v);
    vpsrld(t2, t2, 16);         // rounded
    vpandd(v, v, c_absmask);
    vpcmpgtd(k2, v, c_inf);     // |u| above infinity's bits: NaN
    vpord(t1, t1, c_quiet);     // hi | 0x40: quiet NaN, sign and payload top kept
    vmovdqa32(t2 | k2, t1);
    if (masked)
        vpmovdw(ptr[reg_dst] | k, t2);
    else
        vpmovdw(ptr[reg_dst], t2);
}

void jit_bf16_convert::step_to_f32(const Opmask &k, bool masked) {
    if (masked)
        vpmovzxwd(v | k | T_z, ptr[reg_src]);
    else
        vpmovzxwd(v, ptr[reg_src]);
    vpslld(v, v, 16);
    if (masked)
        vmovdqu32(ptr[reg_dst] | k, v);
    else
        vmovdqu32(ptr[reg_dst], v);
}

}  // namespace anvil::jit

namespace anvil::lowp {

// The two kernels, made once (they have no parameters); null when the CPU
// lacks AVX-512 or generation failed (callers then use Highway).
jit_convert_fn jit_bf16_convert_kernel(bool to_bf16) {
    struct kernels {
        cache::kernel_ptr k[2];
    };
    static const kernels *made = [] {
        auto *ks = new kernels;
        if (!(cpu::info().detected & cpu::f_avx512_core)) return ks;
        for (int t = 0; t < 2; ++t) {
            try {
                jit::jit_bf16_convert gen(t == 1);
                if (gen.finalize(t == 1 ? "cvt_f32_to_bf16_avx512" : "cvt_bf16_to_f32_avx512",
                                 &ks->k[t]) != anvil_success)
                    ks->k[t].reset();
            } catch (...) {
                ks->k[t].reset();
            }
        }
        return ks;
    }();
    const cache::kernel_ptr &k = made->k[to_bf16 ? 1 : 0];
    return k ? reinterpret_cast<jit_convert_fn>(const_cast<void *>(k->entry())) : nullptr;
}

}  // namespace anvil::lowp
