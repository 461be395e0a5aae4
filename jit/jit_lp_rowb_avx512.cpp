#include "jit/jit_lp_rowb_avx512.h"

#include <cstddef>

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_rowb_args;

std::string jit_lp_rowb_avx512::kernel_name(const lowp::lp_rowb_desc &d) {
    return std::string("lp_rowb_avx512_") + (d.bf16 ? "bf16" : "u8s8") + "_m" + std::to_string(d.m) +
           "_n" + std::to_string(d.n) + (d.add ? "_add" : "");
}

jit_lp_rowb_avx512::jit_lp_rowb_avx512(const lowp::lp_rowb_desc &d)
    : m_(d.m), n_(d.n), bf16_(d.bf16 != 0), add_(d.add != 0) {
    if (!lowp::lp_rowb_shape_ok(d)) XBYAK_THROW(ERR_INTERNAL)
    eb_ = bf16_ ? 2 : 1;
    group_ = bf16_ ? 2 : 4;
    block_w_ = kBlockBytes / eb_;
    vpb_ = bf16_ ? 2 : 4;
    nv_ = (n_ + block_w_ - 1) / block_w_;

    if (many_rows())
        preamble({reg_a4, reg_a8});
    else
        preamble({});
    load_args();
    zero_acc();
    k_loop();
    unpermute_and_store();
    postamble();
}

// ------------------------------------------------------------ addressing

// Rows 0..3 off one base: x86 scales give 1 and 2 strides, the 3x register
// the third.
RegExp jit_lp_rowb_avx512::a_at(int i) const {
    const Reg64 &base = i < 4 ? reg_a : i < 8 ? reg_a4 : reg_a8;
    switch (i % 4) {
        case 0: return RegExp(base);
        case 1: return base + reg_ars;
        case 2: return base + reg_ars * 2;
        default: return base + reg_ars3;
    }
}

RegExp jit_lp_rowb_avx512::b_at(const Reg64 &base, int r, int disp) const {
    switch (r) {
        case 0: return base + disp;
        case 1: return base + reg_brs + disp;
        case 2: return base + reg_brs * 2 + disp;
        default: return base + reg_brs3 + disp;
    }
}

RegExp jit_lp_rowb_avx512::c_row(int i) const {
    switch (i % 4) {
        case 0: return RegExp(reg_c);
        case 1: return reg_c + reg_ldc;
        case 2: return reg_c + reg_ldc * 2;
        default: return reg_c + reg_ldc3;
    }
}

// ------------------------------------------------------------ K loop

void jit_lp_rowb_avx512::load_args() {
    // The column mask of a partial last block first, while rax is free
    // (n is known here, so it is a constant).
    const int nb = block_cols(nv_ - 1);
    if (nb < block_w_) {
        mov(rax, (uint64_t(1) << nb) - 1);  // one bit per element (byte or word)
        kmovq(k_cols, rax);
    }
    mov(reg_a, ptr[reg_args + offsetof(lp_rowb_args, a)]);
    mov(reg_ars, ptr[reg_args + offsetof(lp_rowb_args, a_rs)]);
    if (m_ > 3) lea(reg_ars3, ptr[reg_ars + reg_ars * 2]);
    if (m_ > 4) lea(reg_a4, ptr[reg_a + reg_ars * 4]);
    if (m_ > 8) lea(reg_a8, ptr[reg_a4 + reg_ars * 4]);
    mov(reg_b, ptr[reg_args + offsetof(lp_rowb_args, b)]);
    mov(reg_brs, ptr[reg_args + offsetof(lp_rowb_args, b_rs)]);
    lea(reg_brs3, ptr[reg_brs + reg_brs * 2]);
    if (bf16_) {  // int8 prefetches off reg_b (prefetch_group)
        // reg_pf = b + kPrefetchRows * b_rs.
        mov(reg_pf, reg_brs);
        imul(reg_pf, reg_pf, kPrefetchRows);
        add(reg_pf, reg_b);
    }
    mov(reg_k, ptr[reg_args + offsetof(lp_rowb_args, k)]);
    shr(reg_k, group_ == 4 ? 2 : 1);  // full groups
}

void jit_lp_rowb_avx512::zero_acc() {
    for (int i = 0; i < m_; ++i)
        for (int v = 0; v < nv_; ++v)
            for (int q = 0; q < block_vecs(v); ++q) vpxord(acc(i, v, q), acc(i, v, q), acc(i, v, q));
}

// B rows stream from memory (weights, each read once per call), one row
// per b_rs bytes: a page or more apart for wide matrices.
//
// int8: the driver walks K in short blocks (lp_inplace.cpp), calling the
// kernels left to right along B's rows, so each row is a sequential
// stream; every full group prefetches, in each of its rows, the lines
// kRowPrefetchBytes ahead (one per 64-column block: the next calls'
// columns).  Measured on Zen 5, 1 thread, u8s8s32 B 4096 x 4096 hot in
// L3, GOP/s for M = 1 / 2 / 4: no prefetch 82 / 160 / 209; 128 bytes
// ahead 68 / 120 / 241; 256 ahead 93 / 174 / 257 (one line per block);
// 384 or 512 ahead, or three lines per row, a little less; prefetcht1 /
// prefetcht2 at 256..1024 bytes within noise of it.
//
// bf16: the driver runs each strip of columns over all of K (long calls),
// so each full group prefetches the lines of its rows kPrefetchRows rows
// ahead, a pattern the hardware prefetchers (which stay within a page) do
// not follow; rows past K are harmless (a prefetch never faults).
// Measured on Zen 5, K = 4096, N = 4096 in calls of rowb_max_n columns, B
// streamed: prefetcht2 (to L2) +10..15% over none and a little better than
// prefetcht0; the extra line per row of an unaligned B is worth +25% then.
// With B already in L2 the prefetches cost 10..25% (load slots).
void jit_lp_rowb_avx512::prefetch_group() {
    if (!bf16_) {
        for (int r = 0; r < group_; ++r)
            for (int v = 0; v < nv_; ++v) prefetcht0(ptr[b_at(reg_b, r, kRowPrefetchBytes + v * kBlockBytes)]);
        return;
    }
    for (int r = 0; r < group_; ++r) {
        for (int v = 0; v < nv_; ++v) prefetcht2(ptr[b_at(reg_pf, r, v * kBlockBytes)]);
        // An unaligned row's columns straddle one more line.
        prefetcht2(ptr[b_at(reg_pf, r, n_ * eb_ - 1)]);
    }
}

void jit_lp_rowb_avx512::load_interleave(int v, int rows, Zmm out[4]) {
    if (bf16_) {
        // Rows k, k+1 as 32 words each; unpacking them pairs the words of a
        // column into one dword, element k in the low half.
        const Zmm r0 = b_reg(0), r1 = b_reg(1), lo = b_reg(2), hi = b_reg(3);
        const bool masked = block_cols(v) < block_w_;
        for (int r = 0; r < 2; ++r) {
            const Zmm x = r == 0 ? r0 : r1;
            if (r >= rows)
                vpxord(x, x, x);
            else if (masked)
                vmovdqu16(x | k_cols | T_z, ptr[b_at(reg_b, r, v * kBlockBytes)]);
            else
                vmovdqu16(x, ptr[b_at(reg_b, r, v * kBlockBytes)]);
        }
        vpunpcklwd(lo, r0, r1);                          // q = 0: columns 8L + 0..3
        if (block_vecs(v) > 1) vpunpckhwd(hi, r0, r1);  // q = 1: columns 8L + 4..7
        out[0] = lo;
        out[1] = hi;
        return;
    }
    const Zmm t0 = b_reg(0), t1 = b_reg(1), t2 = b_reg(2), t3 = b_reg(3), t4 = b_reg(4);
    const Zmm row_reg[4] = {t0, t1, t2, t3};
    const bool masked = block_cols(v) < block_w_;
    const int vecs = block_vecs(v);
    for (int r = 0; r < 4; ++r) {
        const Zmm x = row_reg[r];
        if (r >= rows)
            vpxord(x, x, x);  // a row >= K: zeros, never read
        else if (masked)
            vmovdqu8(x | k_cols | T_z, ptr[b_at(reg_b, r, v * kBlockBytes)]);
        else
            vmovdqu8(x, ptr[b_at(reg_b, r, v * kBlockBytes)]);
    }
    // Bytes to words: per 128-bit lane, lo = columns 0..7, hi = 8..15,
    // each word (B(k, c), B(k+1, c)) or (B(k+2, c), B(k+3, c)).  The hi
    // halves only when vectors 2, 3 are needed.
    vpunpcklbw(t4, t0, t1);                  // lo01
    if (vecs > 2) vpunpckhbw(t1, t0, t1);    // hi01
    vpunpcklbw(t0, t2, t3);                  // lo23
    if (vecs > 2) vpunpckhbw(t3, t2, t3);    // hi23
    // Words to dwords B(k .. k+3, c): vector q holds columns 4q .. 4q+3
    // of every 128-bit lane.
    vpunpcklwd(t2, t4, t0);                  // q = 0
    if (vecs > 1) vpunpckhwd(t4, t4, t0);    // q = 1
    if (vecs > 2) vpunpcklwd(t0, t1, t3);    // q = 2
    if (vecs > 3) vpunpckhwd(t1, t1, t3);    // q = 3
    out[0] = t2;
    out[1] = t4;
    out[2] = t0;
    out[3] = t1;
}

void jit_lp_rowb_avx512::group(int rows, bool prefetch) {
    // A(i, k .. k+3) as one dword in every lane.  For a last group of fewer
    // than 4 rows the dword reaches past K into the row's padding, which
    // meets B's zero rows.
    if (many_rows()) {
        // One block; each row's broadcast right before its two products,
        // in four registers used in turn.
        if (prefetch) prefetch_group();
        Zmm b[4];
        load_interleave(0, rows, b);
        for (int i = 0; i < m_; ++i) {
            vpbroadcastd(a_vec(i), ptr[a_at(i)]);
            for (int q = 0; q < block_vecs(0); ++q) vdpbf16ps(acc(i, 0, q), a_vec(i), b[q]);
        }
        return;
    }
    for (int i = 0; i < m_; ++i) vpbroadcastd(a_vec(i), ptr[a_at(i)]);
    if (prefetch) prefetch_group();
    for (int v = 0; v < nv_; ++v) {
        Zmm b[4];
        load_interleave(v, rows, b);
        // vpdpbusd's first source is the unsigned one: A (u8).
        for (int q = 0; q < block_vecs(v); ++q)
            for (int i = 0; i < m_; ++i) {
                if (bf16_)
                    vdpbf16ps(acc(i, v, q), a_vec(i), b[q]);
                else
                    vpdpbusd(acc(i, v, q), a_vec(i), b[q], EvexEncoding);
            }
    }
}

void jit_lp_rowb_avx512::advance() {
    add(reg_a, 4);  // one A dword per group: 4 int8 or 2 bf16 values
    if (m_ > 4) add(reg_a4, 4);
    if (m_ > 8) add(reg_a8, 4);
    if (group_ == 4) {
        lea(reg_b, ptr[reg_b + reg_brs * 4]);  // int8: no reg_pf
    } else {
        lea(reg_b, ptr[reg_b + reg_brs * 2]);
        lea(reg_pf, ptr[reg_pf + reg_brs * 2]);
    }
}

// Main loop over full groups, then one group of K % 4 rows (1..3) if any:
// three variants, of which one runs, off the hot path.
void jit_lp_rowb_avx512::k_loop() {
    Label main, after_main, rows1, rows2, done;
    test(reg_k, reg_k);
    jz(after_main, T_NEAR);
    align(16);
    L(main);
    group(group_, true);
    advance();
    dec(reg_k);
    jnz(main, T_NEAR);
    L(after_main);
    mov(reg_k, ptr[reg_args + offsetof(lp_rowb_args, k)]);
    and_(reg_k, group_ - 1);
    jz(done, T_NEAR);
    if (group_ == 2) {  // bf16: a last single row
        group(1, false);
        L(done);
        return;
    }
    cmp(reg_k, 2);
    jb(rows1, T_NEAR);
    je(rows2, T_NEAR);
    group(3, false);
    jmp(done, T_NEAR);
    L(rows1);
    group(1, false);
    jmp(done, T_NEAR);
    L(rows2);
    group(2, false);
    L(done);
}

// ------------------------------------------------------------ stores

// Accumulator q of block v holds, in 128-bit lane L, columns 16L + 4q ..
// 16L + 4q + 3: so output vector w (columns 16w .. 16w + 15) is lane w of
// accumulators 0, 1, 2, 3 -- a 4 x 4 transpose of 128-bit lanes, two
// rounds of vshufi32x4.  Vectors a block does not have (<= 16 columns) are
// stood in for by vector 0: their lanes land in columns >= n, masked off.
// bf16: accumulator q of block v holds, in 128-bit lane L, columns 8L + 4q
// .. 8L + 4q + 3, so output vector 0 (columns 0..15) is lanes (q0.L0,
// q1.L0, q0.L1, q1.L1) and vector 1 lanes (q0.L2, q1.L2, q0.L3, q1.L3):
// two vshuff32x4 each.  A block of <= 4 columns has only q0, which stands
// in for q1 (its lanes land in masked-off columns).
void jit_lp_rowb_avx512::store_block_bf16(int i, int v) {
    const int cols = block_cols(v);
    const int outs = (cols + 15) / 16;
    const Zmm q0 = acc(i, v, 0), q1 = acc(i, v, block_vecs(v) > 1 ? 1 : 0);
    const Zmm t0 = tmp(0), t1 = tmp(1);
    vshuff32x4(t0, q0, q1, 0x44);                 // q0.L0 q0.L1 q1.L0 q1.L1
    if (outs > 1) vshuff32x4(t1, q0, q1, 0xEE);  // q0.L2 q0.L3 q1.L2 q1.L3
    const Zmm out[2] = {tmp(2), tmp(3)};
    vshuff32x4(out[0], t0, t0, 0xD8);  // lanes 0, 2, 1, 3
    if (outs > 1) vshuff32x4(out[1], t1, t1, 0xD8);
    store_outputs(i, v, out, outs);
}

void jit_lp_rowb_avx512::store_block(int i, int v) {
    if (bf16_) {
        store_block_bf16(i, v);
        return;
    }
    const int cols = block_cols(v), vecs = block_vecs(v);
    const int outs = (cols + 15) / 16;  // output vectors with columns < n
    Zmm a[4];
    for (int q = 0; q < 4; ++q) a[q] = acc(i, v, q < vecs ? q : 0);
    const Zmm t0 = tmp(0), t1 = tmp(1), t2 = tmp(2), t3 = tmp(3);
    vshufi32x4(t0, a[0], a[1], 0x44);  // a0.L0 a0.L1 a1.L0 a1.L1
    vshufi32x4(t2, a[2], a[3], 0x44);  // a2.L0 a2.L1 a3.L0 a3.L1
    if (outs > 2) {
        vshufi32x4(t1, a[0], a[1], 0xEE);  // a0.L2 a0.L3 a1.L2 a1.L3
        vshufi32x4(t3, a[2], a[3], 0xEE);  // a2.L2 a2.L3 a3.L2 a3.L3
    }
    // Into the accumulators of this block, which are dead now (a[0] may
    // stand for missing ones, but then only out 0 is made, last).
    Zmm out[4] = {acc(i, v, 0), acc(i, v, 1), acc(i, v, 2), acc(i, v, 3)};
    if (outs > 1) vshufi32x4(out[1], t0, t2, 0xDD);  // lane 1 of each
    if (outs > 2) vshufi32x4(out[2], t1, t3, 0x88);  // lane 2 of each
    if (outs > 3) vshufi32x4(out[3], t1, t3, 0xDD);  // lane 3 of each
    vshufi32x4(out[0], t0, t2, 0x88);                // lane 0 of each
    store_outputs(i, v, out, outs);
}

// Output vectors 0 .. outs-1 of block v into acc row i; the last one
// masked when it holds columns >= n.  Integer moves for int32, fp moves for
// float: the same bits, no domain-crossing delay.
void jit_lp_rowb_avx512::store_outputs(int i, int v, const Zmm *out, int outs) {
    const int cols = block_cols(v);
    for (int w = 0; w < outs; ++w) {
        const Address dst = ptr[c_row(i) + (v * block_w_ + w * 16) * 4];
        const bool partial = cols - w * 16 < 16;
        if (add_) {  // int8: acc += tile, columns < n only (masked-off lanes never fault)
            if (partial)
                vpaddd(out[w] | k_store | T_z, out[w], dst);
            else
                vpaddd(out[w], out[w], dst);
        }
        if (bf16_)
            partial ? vmovups(dst | k_store, out[w]) : vmovups(dst, out[w]);
        else
            partial ? vmovdqu32(dst | k_store, out[w]) : vmovdqu32(dst, out[w]);
    }
}

void jit_lp_rowb_avx512::unpermute_and_store() {
    mov(reg_c, ptr[reg_args + offsetof(lp_rowb_args, acc)]);
    mov(reg_ldc, ptr[reg_args + offsetof(lp_rowb_args, acc_ld)]);
    shl(reg_ldc, 2);
    if (m_ > 3) lea(reg_ldc3, ptr[reg_ldc + reg_ldc * 2]);
    if (n_ % 16) {
        mov(eax, (1u << (n_ % 16)) - 1);
        kmovw(k_store, eax);
    }
    for (int i = 0; i < m_; ++i) {
        if (i > 0 && i % 4 == 0) lea(reg_c, ptr[reg_c + reg_ldc * 4]);  // c_row reaches 4 rows
        for (int v = 0; v < nv_; ++v) store_block(i, v);
    }
}

}  // namespace anvil::jit
