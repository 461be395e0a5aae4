// bf16 pair-dot depthwise kernels (jit_conv_dw_avx512.h, pair_rows_ > 0):
// two kernel rows per vdpbf16ps on word-interleaved source columns.
#include "jit/jit_conv_dw_avx512.h"

namespace anvil::jit {

using namespace Xbyak;

namespace {
// A register of the slot's width: zmm for 32 channels, ymm for up to 16.
Xmm vreg(int idx, bool wide) { return wide ? Xmm(Zmm(idx)) : Xmm(Ymm(idx)); }
}  // namespace

// Slots of 32 channels, then one slot for the 1..31 channels left: up to
// 16 on ymm (whole, or masked by k_tail), more on zmm with k_words.
void jit_conv_dw_avx512::pair_channel_loop() {
    Label full, rest, narrow, narrow_tail, done;
    L(full);
    cmp(reg_left, 2 * kLanes);
    jl(rest, T_NEAR);
    pair_slot(true, false);
    add(reg_acc, 2 * kLanes * out_bytes());
    add(reg_coff, 2 * kLanes * elem_);
    add(reg_soff, 2 * kLanes * elem_);
    sub(reg_left, 2 * kLanes);
    jmp(full, T_NEAR);
    L(rest);
    test(reg_left, reg_left);
    jle(done, T_NEAR);
    cmp(reg_left, kLanes);
    jl(narrow_tail, T_NEAR);
    je(narrow, T_NEAR);
    // 17..31 channels: all their words, and the channels of the second
    // natural vector.
    mov(eax, 1);
    shl(eax, cl);
    dec(eax);
    kmovd(k_words, eax);
    sub(reg_left, kLanes);
    tail_mask();
    pair_slot(true, true);
    jmp(done, T_NEAR);
    L(narrow);
    pair_slot(false, false);
    jmp(done, T_NEAR);
    L(narrow_tail);
    tail_mask();
    pair_slot(false, true);
    L(done);
}

void jit_conv_dw_avx512::pair_slot(bool wide, bool tail) {
    zero_acc(2);  // both halves' pairs, also on ymm
    for (int q = 0; 2 * q < pair_rows_; ++q) pair_rows(q, wide, tail);
    pair_order_ = wide && fast_bf16_;
    if (!pair_order_) pair_unpermute(wide);
    store(wide ? 2 : 1, tail);
    pair_order_ = false;
}

// The accumulators back to channel order: per pixel one vpermt2ps for
// channels 0..15 and one for 16..31 (kPairLo / kPairHi; four 128-bit
// shuffles instead measured slower: 0.0956 against 0.0899 ms on
// MobileNet-v2's 56 x 56 x 144 layer, Zen 4).  The weights' registers are dead here.
void jit_conv_dw_avx512::pair_unpermute(bool wide) {
    if (wide) {
        interleave_pair(kPairLo, kPairHi);
        return;
    }
    // Channels 0..15 only: from lanes 0..7 of both halves.
    vmovdqu32(split_idx(0), ptr[rip + split_consts_ + kPairLo * kVecBytes]);
    for (int r = 0; r < m_; ++r) vpermt2ps(acc(r, 0), split_idx(0), acc(r, 1));
}

// Column words of one row: the slot's channels (a tail's masked, zeros
// past them).
void jit_conv_dw_avx512::pair_load(int idx, const Address &src, bool wide, bool tail) {
    if (wide) {
        const Zmm v(idx);
        vmovdqu16(tail ? Zmm(v | k_words | T_z) : v, src);
    } else {
        const Ymm v(idx);
        vmovdqu16(tail ? Ymm(v | k_tail | T_z) : v, src);
    }
}

// Rows 2q and 2q + 1 (or 2q alone) of the call: their weights, then each
// column's interleaved words into the pixels that read it (pixel r, tap k
// at column S r + k; k rises with the column for a fixed pixel).
void jit_conv_dw_avx512::pair_rows(int q, bool wide, bool tail) {
    const int ta = 2 * q * rt_;
    const bool has_b = 2 * q + 1 < pair_rows_;
    for (int k = 0; k < rt_; ++k) {
        mov(reg_w, ptr[reg_w_taps + (ta + k) * 8]);
        // Pair-form rows: 4 bytes per channel, the low-half entries of the
        // slot first (entries 0..7 / 16..23 for a ymm slot).
        const RegExp w = reg_w + reg_coff * 2;
        vmovups(vreg(wr(k, 0).getIdx(), wide), ptr[w]);
        vmovups(vreg(wr(k, 1).getIdx(), wide), ptr[w + kVecBytes]);
    }
    const Reg64 &src_a = reg_src, &src_b = rax;
    mov(src_a, ptr[reg_src_taps + ta * 8]);
    add(src_a, reg_soff);
    if (has_b) {
        mov(src_b, ptr[reg_src_taps + (ta + rt_) * 8]);
        add(src_b, reg_soff);
    }
    const int ncol = rs_ * (m_ - 1) + rt_;
    if (ncol > 3) lea(reg_cs3, ptr[reg_cs + reg_cs * 2]);
    const int xa = 26, xb = 27, lo = 28, hi = 29;
    for (int s = 0; s < ncol; ++s) {
        if (s > 0 && s % 4 == 0) {
            lea(src_a, ptr[src_a + reg_cs * 4]);
            if (has_b) lea(src_b, ptr[src_b + reg_cs * 4]);
        }
        pair_load(xa, ptr[col_at(src_a, s)], wide, tail);
        if (has_b) pair_load(xb, ptr[col_at(src_b, s)], wide, tail);
        // Words (b, a) per lane: row a in element 1 (added first), row b
        // (or zero) in element 0.
        const Xmm b = vreg(has_b ? xb : pair_zero().getIdx(), wide), a = vreg(xa, wide);
        vpunpcklwd(vreg(lo, wide), b, a);
        vpunpckhwd(vreg(hi, wide), b, a);
        for (int k = 0; k < rt_; ++k) {
            if (s < k || (s - k) % rs_ != 0) continue;
            const int r = (s - k) / rs_;
            if (r >= m_) continue;
            vdpbf16ps(vreg(acc(r, 0).getIdx(), wide), vreg(lo, wide), vreg(wr(k, 0).getIdx(), wide));
            vdpbf16ps(vreg(acc(r, 1).getIdx(), wide), vreg(hi, wide), vreg(wr(k, 1).getIdx(), wide));
        }
    }
}

}  // namespace anvil::jit
