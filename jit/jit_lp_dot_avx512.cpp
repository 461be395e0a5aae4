#include "jit/jit_lp_dot_avx512.h"

#include <cstddef>

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_dot_args;

std::string jit_lp_dot_avx512::kernel_name(const lowp::lp_dot_desc &d) {
    return "lp_dot_avx512_m" + std::to_string(d.m) + "_n" + std::to_string(d.n);
}

jit_lp_dot_avx512::jit_lp_dot_avx512(const lowp::lp_dot_desc &d) : m_(d.m), n_(d.n) {
    if (!lowp::lp_dot_shape_ok(d)) XBYAK_THROW(ERR_INTERNAL)
    // Two accumulator sets when they fit next to the A and B vectors.
    sets_ = 2 * m_ * n_ + m_ + 2 <= 32 ? 2 : 1;
    rows_per_group_ = n_ <= kSlots / 2 ? 2 : 1;
    slot_cols_ = kSlots / rows_per_group_;

    preamble({});
    load_args();
    zero_acc();
    k_loop();
    if (sets_ == 2) sum_sets();
    reduce_and_store();
    postamble();
}

// ------------------------------------------------------------ addressing

// Rows 0..3 off one base: x86 scales give 1, 2 and (with the 3x register)
// 3 strides; B rows 4..7 off a second base, 4 strides further.
RegExp jit_lp_dot_avx512::a_at(int i, int disp) const {
    switch (i) {
        case 0: return reg_a + disp;
        case 1: return reg_a + reg_ars + disp;
        case 2: return reg_a + reg_ars * 2 + disp;
        default: return reg_a + reg_ars3 + disp;
    }
}

RegExp jit_lp_dot_avx512::b_at(int j, int disp) const {
    switch (j) {
        case 0: return reg_b + disp;
        case 1: return reg_b + reg_brs + disp;
        case 2: return reg_b + reg_brs * 2 + disp;
        case 3: return reg_b + reg_brs3 + disp;
        case 4: return reg_b + reg_brs * 4 + disp;
        case 5: return reg_b4 + reg_brs + disp;
        case 6: return reg_b4 + reg_brs * 2 + disp;
        default: return reg_b4 + reg_brs3 + disp;
    }
}

RegExp jit_lp_dot_avx512::c_row(int i) const {
    switch (i) {
        case 0: return RegExp(reg_c);
        case 1: return reg_c + reg_ldc;
        case 2: return reg_c + reg_ldc * 2;
        default: return reg_c + reg_ldc3;
    }
}

// ------------------------------------------------------------ K loop

void jit_lp_dot_avx512::load_args() {
    // The tail mask first, while rax is free: the low K % 64 bits set (a
    // 64-bit shift count is taken modulo 64, so cl = K works as is); zero
    // when K is a multiple of 64, and then no tail step runs.
    mov(reg_k, ptr[reg_args + offsetof(lp_dot_args, k)]);
    mov(rax, -1);
    shl(rax, cl);
    not_(rax);
    kmovq(k_tail, rax);

    mov(reg_a, ptr[reg_args + offsetof(lp_dot_args, a)]);
    mov(reg_ars, ptr[reg_args + offsetof(lp_dot_args, a_rs)]);
    if (m_ > 3) lea(reg_ars3, ptr[reg_ars + reg_ars * 2]);
    mov(reg_b, ptr[reg_args + offsetof(lp_dot_args, b)]);
    mov(reg_brs, ptr[reg_args + offsetof(lp_dot_args, b_rs)]);
    if (n_ > 3) lea(reg_brs3, ptr[reg_brs + reg_brs * 2]);
    if (n_ > 5) lea(reg_b4, ptr[reg_b + reg_brs * 4]);
}

void jit_lp_dot_avx512::zero_acc() {
    for (int s = 0; s < sets_; ++s)
        for (int i = 0; i < m_; ++i)
            for (int j = 0; j < n_; ++j) vpxord(acc(s, i, j), acc(s, i, j), acc(s, i, j));
}

void jit_lp_dot_avx512::k_step(int u, int set, bool masked, bool prefetch) {
    const int disp = u * kStepBytes;
    // B rows are streams from memory (weights, each read once per call):
    // one line per row per step, kPrefetchBytes ahead.  Rows often are a
    // page or less, too short for the hardware prefetcher to ramp up on.
    // Measured on Zen 5, B streamed from DRAM: +10% (m=4, K=4096) to +40%
    // (m=4, K=1024) over no prefetch; with B already in L1 the m=1 kernel,
    // whose load ports are the limit, loses about a quarter.  Past a row's
    // end the prefetch is harmless (it never faults).
    if (prefetch)
        for (int j = 0; j < n_; ++j) prefetcht0(ptr[b_at(j, disp + kPrefetchBytes)]);
    for (int i = 0; i < m_; ++i) {
        if (masked)
            vmovdqu8(a_vec(i) | k_tail | T_z, ptr[a_at(i, disp)]);
        else
            vmovdqu8(a_vec(i), ptr[a_at(i, disp)]);
    }
    for (int j = 0; j < n_; ++j) {
        // vpdpbusd's first source is the unsigned one: A (u8) is the
        // register operand, B (s8) the second.  With one row, B is used
        // once and goes straight from memory (a micro-fused load).
        if (m_ == 1 && !masked) {
            vpdpbusd(acc(set, 0, j), a_vec(0), ptr[b_at(j, disp)], EvexEncoding);
            continue;
        }
        if (masked)
            vmovdqu8(b_vec(j) | k_tail | T_z, ptr[b_at(j, disp)]);
        else
            vmovdqu8(b_vec(j), ptr[b_at(j, disp)]);
        for (int i = 0; i < m_; ++i) vpdpbusd(acc(set, i, j), a_vec(i), b_vec(j), EvexEncoding);
    }
}

void jit_lp_dot_avx512::advance(int bytes) {
    add(reg_a, bytes);
    add(reg_b, bytes);
    if (n_ > 5) add(reg_b4, bytes);
}

// Main loop: kUnroll full steps per iteration, the two steps into the two
// accumulator sets (when there are two).  Then at most one full step and
// the masked tail step, which are off the hot path.
void jit_lp_dot_avx512::k_loop() {
    constexpr int kIter = kUnroll * kStepBytes;
    Label main, after_main, tail, done;
    sub(reg_k, kIter);
    jl(after_main, T_NEAR);
    align(16);
    L(main);
    for (int u = 0; u < kUnroll; ++u) k_step(u, u % sets_, false, true);
    advance(kIter);
    sub(reg_k, kIter);
    jge(main, T_NEAR);
    L(after_main);
    add(reg_k, kIter);  // 0 .. kIter - 1 bytes left
    static_assert(kUnroll == 2, "one full step at most after the main loop");
    cmp(reg_k, kStepBytes);
    jl(tail, T_NEAR);
    k_step(0, 0, false, false);
    advance(kStepBytes);
    L(tail);
    // Here K % 64 bytes are left, and k_tail covers exactly those.
    kortestq(k_tail, k_tail);
    jz(done, T_NEAR);
    k_step(0, sets_ - 1, true, false);
    L(done);
}

void jit_lp_dot_avx512::sum_sets() {
    for (int i = 0; i < m_; ++i)
        for (int j = 0; j < n_; ++j) vpaddd(acc(0, i, j), acc(0, i, j), acc(1, i, j));
}

// ------------------------------------------------------------ reduction

// A reduction group holds 8 slots: one row's columns 0..7 (n > 4), or two
// rows' columns 0..3 (n <= 4; slots 4..7 are the second row).  The tree
// reduces the 8 accumulators of a group with 7 (16-lane) additions plus
// the shuffles that line their lanes up, instead of 4 levels per value.
bool jit_lp_dot_avx512::slot_valid(int r0, int s) const {
    const int row = r0 + s / slot_cols_, col = s % slot_cols_;
    return row < m_ && col < n_;
}

Zmm jit_lp_dot_avx512::slot_acc(int r0, int s) const {
    return acc(0, r0 + s / slot_cols_, s % slot_cols_);
}

// Invalid slots only follow valid ones within a row (columns >= n, or the
// missing second row), so a pair's first member is valid whenever its
// second is; a missing second member is replaced by the first (its lanes
// then carry junk that no store reads).  The results overwrite the
// accumulators of the group's even slots.
Zmm jit_lp_dot_avx512::reduce_group(int r0) {
    int t = 0;  // scratch rotation
    // Level 1, within 128-bit lanes: x0 = [a b c d], x1 = [e f g h] per
    // lane -> [a+c, e+g, b+d, f+h]: dwords 0, 2 are x0's, 1, 3 are x1's.
    Zmm l1[4];
    bool l1_ok[4] = {};
    for (int p = 0; p < 4; ++p) {
        if (!slot_valid(r0, 2 * p)) continue;
        const Zmm x0 = slot_acc(r0, 2 * p);
        const Zmm x1 = slot_valid(r0, 2 * p + 1) ? slot_acc(r0, 2 * p + 1) : x0;
        const Zmm s = tmp(t++);
        vpunpckldq(s, x0, x1);
        vpunpckhdq(x0, x0, x1);
        vpaddd(x0, x0, s);
        l1[p] = x0;
        l1_ok[p] = true;
    }
    // Level 2, within 128-bit lanes: pairs of level-1 results -> dword d
    // of each lane is a partial sum of slot d (of the 4 slots in play).
    Zmm l2[2];
    bool l2_ok[2] = {};
    for (int q = 0; q < 2; ++q) {
        if (!l1_ok[2 * q]) continue;
        const Zmm y0 = l1[2 * q];
        const Zmm y1 = l1_ok[2 * q + 1] ? l1[2 * q + 1] : y0;
        const Zmm s = tmp(t++);
        vpunpcklqdq(s, y0, y1);
        vpunpckhqdq(y0, y0, y1);
        vpaddd(y0, y0, s);
        l2[q] = y0;
        l2_ok[q] = true;
    }
    // Level 3, across the four 128-bit lanes: u0 has slots 0..3 in each
    // lane, u1 slots 4..7.  First [u0.L0+u0.L1, u0.L2+u0.L3, u1.L0+u1.L1,
    // u1.L2+u1.L3], then lane 0 = sum of its lanes 0, 1 and lane 1 = sum
    // of its lanes 2, 3: dwords 0..7 hold slots 0..7.
    const Zmm u0 = l2[0];
    const Zmm u1 = l2_ok[1] ? l2[1] : u0;
    Zmm s = tmp(t++);
    vshufi64x2(s, u0, u1, 0x88);   // lanes 0, 2 of u0, then of u1
    vshufi64x2(u0, u0, u1, 0xDD);  // lanes 1, 3 of u0, then of u1
    vpaddd(u0, u0, s);
    s = tmp(t++);
    vshufi64x2(s, u0, u0, 0x08);   // lanes 0, 2
    vshufi64x2(u0, u0, u0, 0x0D);  // lanes 1, 3
    vpaddd(u0, u0, s);
    return u0;
}

void jit_lp_dot_avx512::store_group(int r0, const Zmm &sums) {
    const bool full = n_ == slot_cols_;  // the row's columns fill its slots
    if (rows_per_group_ == 1) {
        const Ymm y(sums.getIdx());
        if (full)
            vmovdqu32(ptr[c_row(r0)], y);
        else
            vmovdqu32(ptr[c_row(r0)] | k_store, y);
        return;
    }
    const Xmm x0(sums.getIdx());
    if (full)
        vmovdqu32(ptr[c_row(r0)], x0);
    else
        vmovdqu32(ptr[c_row(r0)] | k_store, x0);
    if (r0 + 1 < m_) {
        const Xmm x1 = Xmm(tmp(0).getIdx());
        vextracti32x4(x1, sums, 1);
        if (full)
            vmovdqu32(ptr[c_row(r0 + 1)], x1);
        else
            vmovdqu32(ptr[c_row(r0 + 1)] | k_store, x1);
    }
}

void jit_lp_dot_avx512::reduce_and_store() {
    mov(reg_c, ptr[reg_args + offsetof(lp_dot_args, acc)]);
    mov(reg_ldc, ptr[reg_args + offsetof(lp_dot_args, acc_ld)]);
    shl(reg_ldc, 2);
    if (m_ > 3) lea(reg_ldc3, ptr[reg_ldc + reg_ldc * 2]);
    if (n_ != slot_cols_) {
        mov(eax, (1u << n_) - 1);
        kmovw(k_store, eax);
    }
    // Groups are independent (each tree touches only its own accumulators
    // and renamed scratch registers), so out-of-order execution overlaps
    // one group's tree with the next.
    for (int r0 = 0; r0 < m_; r0 += rows_per_group_) store_group(r0, reduce_group(r0));
}

}  // namespace anvil::jit
