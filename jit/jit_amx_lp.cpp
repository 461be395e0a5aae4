// AMX low-precision micro-kernel generator (see jit_amx_lp.h).
#include "jit/jit_amx_lp.h"

#include <array>
#include <cstddef>
#include <cstring>
#include <mutex>

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_kind;
using lowp::lp_ukernel_args;

amx_lp_desc make_amx_lp_desc(lp_kind kind, int m, int nv, bool accumulate, amx_int8_signs signs) {
    amx_lp_desc d{};
    d.kind = kind;
    d.signs = kind == lp_kind::u8s8 ? signs : amx_int8_signs::u8s8;
    d.m = uint8_t(m);
    d.nv = uint8_t(nv);
    d.accumulate = accumulate ? 1 : 0;
    return d;
}

bool amx_lp_desc_valid(const amx_lp_desc &d) {
    return (d.kind == lp_kind::bf16 || d.kind == lp_kind::u8s8) && d.m >= 1 &&
           d.m <= kAmxMaxRows && d.nv >= 1 && d.nv <= 2 && d.accumulate <= 1 &&
           uint8_t(d.signs) <= 3 && (d.kind == lp_kind::u8s8 || d.signs == amx_int8_signs::u8s8) &&
           d.reserved[0] == 0 && d.reserved[1] == 0 && d.reserved[2] == 0;
}

const uint8_t *amx_lp_tile_config(int m, int nv) {
    // Palette 1 layout: byte 0 palette, 1 start_row, 16 + 2t colsb of tile t
    // (bytes per row), 48 + t rows of tile t; the rest zero.
    static std::array<std::array<uint8_t, 64>, kAmxMaxRows * 2> table;
    static std::once_flag once;
    std::call_once(once, [] {
        for (int mm = 1; mm <= kAmxMaxRows; ++mm)
            for (int v = 1; v <= 2; ++v) {
                uint8_t *c = table[(mm - 1) * 2 + (v - 1)].data();
                std::memset(c, 0, 64);
                c[0] = 1;
                auto set = [&](int t, int rows) {
                    c[16 + 2 * t] = 64;  // colsb = 64 (16 dwords)
                    c[48 + t] = uint8_t(rows);
                };
                const int r0 = std::min(mm, kAmxTileRows), r1 = mm - r0;
                for (int r = 0; r < (r1 ? 2 : 1); ++r) {
                    const int rows = r == 0 ? r0 : r1;
                    for (int cc = 0; cc < v; ++cc) set(2 * r + cc, rows);  // C
                    set(4 + r, rows);                                      // A
                }
                for (int cc = 0; cc < v; ++cc) set(6 + cc, kAmxTileRows);  // B: 16 groups
            }
    });
    if (m < 1 || m > kAmxMaxRows || nv < 1 || nv > 2) return nullptr;
    return table[(m - 1) * 2 + (nv - 1)].data();
}

std::string jit_amx_lp::kernel_name(const amx_lp_desc &d) {
    static const char *const signs[] = {"u8s8", "s8s8", "s8u8", "u8u8"};
    const std::string type = d.kind == lp_kind::bf16 ? "bf16" : signs[int(d.signs) & 3];
    return "lp_amx_" + type + "_m" + std::to_string(d.m) + "_nv" + std::to_string(d.nv) + "_acc" +
           std::to_string(d.accumulate);
}

jit_amx_lp::jit_amx_lp(const amx_lp_desc &d) : d_(d) {
    if (!amx_lp_desc_valid(d)) throw Error(ERR_BAD_PARAMETER);
    preamble({});
    // The K-tail buffer, 64-byte aligned (rbp restores rsp).
    sub(rsp, kTailBytes);
    and_(rsp, -64);
    load_args();
    init_c();
    k_loop();
    k_tail();
    store_c();
    vzeroupper();
    mov(rsp, rbp);
    pop(rbp);
    ret();
}

void jit_amx_lp::load_args() {
    mov(reg_a, ptr[reg_args + offsetof(lp_ukernel_args, a)]);
    mov(reg_astr, ptr[reg_args + offsetof(lp_ukernel_args, a_rs)]);
    mov(reg_b, ptr[reg_args + offsetof(lp_ukernel_args, b)]);
    mov(reg_bld, ptr[reg_args + offsetof(lp_ukernel_args, b_ld)]);
    mov(reg_bstep, reg_bld);
    shl(reg_bstep, 4);
    if (c_rows() > 1) {
        mov(reg_a16, reg_astr);
        shl(reg_a16, 4);
        add(reg_a16, reg_a);
    }
}

void jit_amx_lp::init_c() {
    if (!d_.accumulate) {
        for (int r = 0; r < c_rows(); ++r)
            for (int c = 0; c < d_.nv; ++c) tzero(c_tile(r, c));
        return;
    }
    // reg_tmp = acc, reg_cnt = its row stride in bytes (free until the loop).
    mov(reg_tmp, ptr[reg_args + offsetof(lp_ukernel_args, acc)]);
    mov(reg_cnt, ptr[reg_args + offsetof(lp_ukernel_args, acc_ld)]);
    shl(reg_cnt, 2);
    for (int r = 0; r < c_rows(); ++r) {
        for (int c = 0; c < d_.nv; ++c) tload(c_tile(r, c), reg_tmp + reg_cnt + c * 64);
        if (r + 1 < c_rows()) {
            // 16 rows down: reg_tmp += 16 * stride.
            for (int i = 0; i < kAmxTileRows; ++i) add(reg_tmp, reg_cnt);
        }
    }
}

void jit_amx_lp::step(const RegExp &a0, const RegExp &a1, const RegExp &b0, const RegExp &b1) {
    // B(0) and A(0) first so the first dot product can start while the
    // other tiles load; each loaded tile feeds two dot products.
    tload(b_tile(0), b0);
    tload(a_tile(0), a0);
    tdp(c_tile(0, 0), a_tile(0), b_tile(0));
    if (d_.nv > 1) {
        tload(b_tile(1), b1);
        tdp(c_tile(0, 1), a_tile(0), b_tile(1));
    }
    if (c_rows() > 1) {
        tload(a_tile(1), a1);
        tdp(c_tile(1, 0), a_tile(1), b_tile(0));
        if (d_.nv > 1) tdp(c_tile(1, 1), a_tile(1), b_tile(1));
    }
}

void jit_amx_lp::k_loop() {
    Label loop, done;
    mov(reg_cnt, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
    shr(reg_cnt, 4);  // full steps
    jz(done, T_NEAR);
    L(loop);
    step(reg_a + reg_astr, reg_a16 + reg_astr, reg_b + reg_bld, reg_b + reg_bld + 64);
    add(reg_a, kAmxStepGroups * lowp::kGroupBytes);
    if (c_rows() > 1) add(reg_a16, kAmxStepGroups * lowp::kGroupBytes);
    add(reg_b, reg_bstep);
    dec(reg_cnt);
    jnz(loop, T_NEAR);
    L(done);
}

void jit_amx_lp::k_tail() {
    Label done, copy_b;
    mov(reg_cnt, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
    and_(reg_cnt, kAmxStepGroups - 1);
    jz(done, T_NEAR);
    // k1 = the tail's A bytes of a row: (1 << 4r) - 1 (4r <= 60).
    shl(reg_cnt, 2);
    mov(reg_tmp, -1);
    shl(reg_tmp, cl);
    not_(reg_tmp);
    kmovq(k1, reg_tmp);
    shr(reg_cnt, 2);
    // A: m rows of 4r bytes each, zero-extended to 64 (masked loads read
    // nothing past the tail).  reg_a walks the rows: it is not needed after.
    for (int i = 0; i < d_.m; ++i) {
        vmovdqu8(zmm0 | k1 | T_z, ptr[reg_a]);
        vmovdqu64(ptr[rsp + kTailA + 64 * i], zmm0);
        if (i + 1 < d_.m) add(reg_a, reg_astr);
    }
    // B: 16 rows of nv * 64 bytes, rows r..15 zero.
    const int brow = 64 * d_.nv;
    vpxord(zmm1, zmm1, zmm1);
    for (int g = 0; g < kAmxTileRows; ++g)
        for (int c = 0; c < d_.nv; ++c) vmovdqu64(ptr[rsp + kTailB + brow * g + 64 * c], zmm1);
    lea(reg_tmp, ptr[rsp + kTailB]);
    L(copy_b);
    for (int c = 0; c < d_.nv; ++c) {
        vmovdqu64(zmm0, ptr[reg_b + 64 * c]);
        vmovdqu64(ptr[reg_tmp + 64 * c], zmm0);
    }
    add(reg_b, reg_bld);
    add(reg_tmp, brow);
    dec(reg_cnt);
    jnz(copy_b, T_NEAR);
    // One more step from the buffer (strides 64 and nv * 64).
    mov(reg_astr, 64);
    mov(reg_bld, brow);
    lea(reg_a, ptr[rsp + kTailA]);
    lea(reg_a16, ptr[rsp + kTailA + kAmxTileRows * 64]);
    lea(reg_b, ptr[rsp + kTailB]);
    step(reg_a + reg_astr, reg_a16 + reg_astr, reg_b + reg_bld, reg_b + reg_bld + 64);
    L(done);
}

void jit_amx_lp::store_c() {
    mov(reg_tmp, ptr[reg_args + offsetof(lp_ukernel_args, acc)]);
    mov(reg_cnt, ptr[reg_args + offsetof(lp_ukernel_args, acc_ld)]);
    shl(reg_cnt, 2);
    for (int r = 0; r < c_rows(); ++r) {
        for (int c = 0; c < d_.nv; ++c) tstore(reg_tmp + reg_cnt + c * 64, c_tile(r, c));
        if (r + 1 < c_rows())
            for (int i = 0; i < kAmxTileRows; ++i) add(reg_tmp, reg_cnt);
    }
}

void jit_amx_lp::tload(const Tmm &t, const RegExp &at) {
    tileloadd(t, ptr[at]);
    ops_.push_back("tileloadd " + std::string(t.toString()));
}

void jit_amx_lp::tstore(const RegExp &at, const Tmm &t) {
    tilestored(ptr[at], t);
    ops_.push_back("tilestored " + std::string(t.toString()));
}

void jit_amx_lp::tzero(const Tmm &t) {
    tilezero(t);
    ops_.push_back("tilezero " + std::string(t.toString()));
}

void jit_amx_lp::tdp(const Tmm &c, const Tmm &a, const Tmm &b) {
    const char *mn = "tdpbf16ps";
    if (d_.kind == lp_kind::u8s8) {
        switch (d_.signs) {
            case amx_int8_signs::u8s8: tdpbusd(c, a, b); mn = "tdpbusd"; break;
            case amx_int8_signs::s8s8: tdpbssd(c, a, b); mn = "tdpbssd"; break;
            case amx_int8_signs::s8u8: tdpbsud(c, a, b); mn = "tdpbsud"; break;
            case amx_int8_signs::u8u8: tdpbuud(c, a, b); mn = "tdpbuud"; break;
        }
    } else {
        tdpbf16ps(c, a, b);
    }
    ops_.push_back(std::string(mn) + " " + c.toString() + "," + a.toString() + "," + b.toString());
}

}  // namespace anvil::jit
