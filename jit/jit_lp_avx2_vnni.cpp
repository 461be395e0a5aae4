#include "jit/jit_lp_avx2_vnni.h"

#include <algorithm>

namespace anvil::jit {

using namespace Xbyak;

std::string jit_lp_avx2_vnni::kernel_name(const lowp::lp_ukernel_desc &d) {
    return "lp_avx2vnni_u8s8_m" + std::to_string(d.m) + "_nv" + std::to_string(d.nv) + "_acc" +
           std::to_string(d.accumulate);
}

jit_lp_avx2_vnni::jit_lp_avx2_vnni(const lowp::lp_ukernel_desc &d) : jit_lp_generator(d) {
    w_ = 2 * d_.nv;
    generate(max_rows());
}

void jit_lp_avx2_vnni::init_acc() {
    for (int i = 0; i < rows_; ++i) {
        for (int v = 0; v < w_; ++v) {
            const Ymm a = acc(i, v);
            if (d_.accumulate)
                vmovdqu(a, ptr[reg_c + v * kVecBytes]);
            else
                vpxor(a, a, a);
        }
        if (d_.accumulate && i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

// One k-group: each row's A dword is broadcast (vpdpbusd's first source is
// the unsigned one, and only the second may be memory) and multiplied with
// the group's B vectors straight from memory.
void jit_lp_avx2_vnni::k_group(int u) {
    prefetch_b(u);
    for (int i = 0; i < rows_; ++i) {
        vpbroadcastd(bcast(i), dword[a_at(i, u)]);
        for (int v = 0; v < w_; ++v)
            vpdpbusd(acc(i, v), bcast(i), ptr[b_at(u, v * kVecBytes)], VexEncoding);
    }
}

void jit_lp_avx2_vnni::store_acc() {
    for (int i = 0; i < rows_; ++i) {
        for (int v = 0; v < w_; ++v) vmovdqu(ptr[reg_c + v * kVecBytes], acc(i, v));
        if (i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

}  // namespace anvil::jit
