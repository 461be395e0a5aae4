#include "jit/jit_lp_avx512.h"

#include <algorithm>

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_kind;

std::string jit_lp_avx512::kernel_name(const lowp::lp_ukernel_desc &d) {
    return std::string("lp_avx512_") + (d.kind == lp_kind::bf16 ? "bf16" : "u8s8") + "_m" +
           std::to_string(d.m) + "_nv" + std::to_string(d.nv) + "_acc" +
           std::to_string(d.accumulate);
}

jit_lp_avx512::jit_lp_avx512(const lowp::lp_ukernel_desc &d) : jit_lp_generator(d) {
    n_bcast_ = std::min(4, 32 - d_.m * d_.nv - d_.nv);
    generate(lowp::kMR);  // 12 x 2 accumulators fit the 32 zmm: one chunk
}

// Integer moves for int32 data, fp moves for fp32 and bf16 pairs: the same
// bits either way, but no bypass delay between execution domains.
void jit_lp_avx512::load_vec(const Zmm &z, const Address &src) {
    if (is_int())
        vmovdqu32(z, src);
    else
        vmovups(z, src);
}

void jit_lp_avx512::store_vec(const Address &dst, const Zmm &z) {
    if (is_int())
        vmovdqu32(dst, z);
    else
        vmovups(dst, z);
}

void jit_lp_avx512::init_acc() {
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) {
            const Zmm a = acc(i, j);
            if (d_.accumulate)
                load_vec(a, ptr[reg_c + j * kVecBytes]);
            else
                vpxord(a, a, a);
        }
        if (d_.accumulate && i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

// One k-group: load its nv B vectors, then multiply each row's A dword
// into the row's accumulators.
void jit_lp_avx512::k_group(int u) {
    prefetch_b(u);
    for (int j = 0; j < d_.nv; ++j) load_vec(b_vec(j), ptr[b_at(u, j * kVecBytes)]);
    // A's dword is broadcast into a register, not used as an m32bcst
    // operand: on Zen 5 the embedded-broadcast form loses 8-19% (measured:
    // a 12x32 bf16 tile in L1 went from 338 to 391 GFLOP/s).  For vpdpbusd it is
    // required anyway: the first source is the unsigned one, so A (u8) must
    // be a register and B (s8) the second source.
    for (int i = 0; i < rows_; ++i) {
        vpbroadcastd(bcast(i), dword[a_at(i, u)]);
        for (int j = 0; j < d_.nv; ++j) {
            if (is_int())
                vpdpbusd(acc(i, j), bcast(i), b_vec(j), EvexEncoding);
            else  // acc += A_1*B_1, then += A_0*B_0, each rounded: the contract's order
                vdpbf16ps(acc(i, j), bcast(i), b_vec(j));
        }
    }
}

void jit_lp_avx512::store_acc() {
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) store_vec(ptr[reg_c + j * kVecBytes], acc(i, j));
        if (i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

}  // namespace anvil::jit
