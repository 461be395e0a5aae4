#include "jit/jit_conv_dw_avx512.h"

#include <algorithm>
#include <cstddef>

#include "jit/jit_store_convert.h"
#include "lowp/lp_ukernel.h"

namespace anvil::jit {

using namespace Xbyak;
using conv::dw_kind;
using conv::dw_ukernel_args;

namespace {
const char *kind_name(dw_kind k) {
    switch (k) {
        case dw_kind::f32: return "f32";
        case dw_kind::bf16: return "bf16";
        case dw_kind::u8: return "u8";
        default: return "s8";
    }
}
// Fused kernels get names of their own ("_epi_u8_scalen_bias_relu_zp").
std::string epi_suffix(uint8_t epi, uint8_t flags) {
    static const char *const outs[] = {"", "f32", "bf16", "u8", "s8", "?", "?", "?"};
    if (!epi) return "";
    return std::string("_epi_") + outs[epi & conv::DW_EPI_OUT_MASK] +
           (epi & conv::DW_EPI_SCALE_N          ? "_scalen"
            : flags & conv::DW_FLAG_NO_SCALE ? "_noscale"
                                             : "_scale1") + (epi & conv::DW_EPI_BIAS ? "_bias" : "") +
           ((epi & conv::DW_EPI_CLIP) == conv::DW_EPI_CLIP ? "_clip"
            : epi & conv::DW_EPI_RELU                     ? "_relu"
            : epi & conv::DW_EPI_LEAKY                    ? "_leaky"
                                                          : "") +
           (epi & conv::DW_EPI_ZP ? "_zp" : "");
}
}  // namespace

std::string jit_conv_dw_avx512::kernel_name(const conv::dw_ukernel_desc &d) {
    return std::string("anvil_conv_dw_avx512_") + kind_name(d.kind) + "_m" + std::to_string(d.m) +
           (conv::dw_has_zero_point(d) ? "_zp" : "") +
           (d.row_taps ? "_r" + std::to_string(d.row_taps) + "s" + std::to_string(d.row_step) : "") +
           (d.row_taps && d.narrow_int == conv::DW_INT_NARROW16 ? "_vnni" : "") +
           (d.row_taps && conv::dw_byte_dot_rows(d.narrow_int) > 0 && d.kind == dw_kind::bf16
                ? "_pair_g" + std::to_string(conv::dw_byte_dot_rows(d.narrow_int))
            : d.row_taps && conv::dw_byte_dot_rows(d.narrow_int) == 1 ? "_dot"
            : d.row_taps && conv::dw_byte_dot_rows(d.narrow_int) > 1
                ? "_dot_g" + std::to_string(conv::dw_byte_dot_rows(d.narrow_int))
                : "") +
           epi_suffix(d.epi, d.flags);
}

jit_conv_dw_avx512::jit_conv_dw_avx512(const conv::dw_ukernel_desc &d) : d_(d) {
    if (d.m < 1 || d.m > conv::kDwMaxM || uint8_t(d.kind) > uint8_t(dw_kind::s8) ||
        d.row_taps > conv::kDwMaxRowTaps)
        XBYAK_THROW(ERR_INTERNAL)
    m_ = d.m;
    rt_ = d.row_taps;
    rs_ = rt_ ? d.row_step : 1;
    vnni_ = rt_ > 0 && is_int() && d.narrow_int == conv::DW_INT_NARROW16;
    dot_ = rt_ > 0 && is_int() && conv::dw_byte_dot_rows(d.narrow_int) > 0;
    if (conv::dw_byte_dot_rows(d.narrow_int) > 0 && !dot_ && !(d.kind == dw_kind::bf16 && rt_ > 0))
        XBYAK_THROW(ERR_INTERNAL)
    g_ = dot_ ? conv::dw_byte_dot_rows(d.narrow_int) : 0;
    if (g_ > conv::kDwMaxDotRows) XBYAK_THROW(ERR_INTERNAL)
    pair_rows_ = d.kind == dw_kind::bf16 && rt_ > 0 ? conv::dw_byte_dot_rows(d.narrow_int) : 0;
    if (pair_rows_ > conv::kDwMaxDotRows) XBYAK_THROW(ERR_INTERNAL)
    // vdpbf16ps: only on a tier that has it.
    if (pair_rows_ > 0 && d.tier < anvil_isa_avx512_core_bf16) XBYAK_THROW(ERR_INTERNAL)
    rows_ = m_;
    if (rt_ && (rs_ < 1 || rs_ > conv::kDwMaxRowStep)) XBYAK_THROW(ERR_INTERNAL)
    elem_ = conv::dw_src_bytes(d.kind);
    zp_ = is_int() && conv::dw_has_zero_point(d);
    no_scale_ = d.epi != 0 && (d.flags & conv::DW_FLAG_NO_SCALE) != 0;
    epi_out_ = uint8_t(d.epi & conv::DW_EPI_OUT_MASK);
    if (epi_out_ > 4 || (d.epi != 0 && epi_out_ == 0)) XBYAK_THROW(ERR_INTERNAL)
    // (Byte-dot kernels keep their permutation index and 0x80 bytes in
    // zmm29 / zmm30, which the fast bf16 store would need.)
    fast_bf16_ = epi_out_ == lowp::EPI_BF16 && d.tier >= anvil_isa_avx512_core_bf16 && !dot_;
    prologue();
    block_loop();
    epilogue();
    if (epi_out_) {
        emit_store_constants(*this, consts_);  // after the return
    }
    if (d_.kind == dw_kind::bf16 && rt_ > 0) {
        if (!epi_out_) ud2();  // the end of the code, as emit_store_constants marks it
        align(64);
        L(split_consts_);
        for (int l = 0; l < kLanes; ++l) dd(2 * l);      // kSplitEven: w[2 l] from (w[0..15], w[16..31])
        for (int l = 0; l < kLanes; ++l) dd(2 * l + 1);  // kSplitOdd
        for (int l = 0; l < kLanes; ++l) dd((l & 1 ? kLanes : 0) + l / 2);      // kSplitLo
        for (int l = 0; l < kLanes; ++l) dd((l & 1 ? kLanes : 0) + 8 + l / 2);  // kSplitHi
        for (int l = 0; l < kLanes; ++l) dd(0xffff0000u);                        // kSplitMask
        // kPairLo / kPairHi: channels 0..15 / 16..31 of a pair-dot slot
        // from its accumulators (low-half pairs first; conv::dw_pair_pos).
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < kLanes; ++l) dd(uint32_t(conv::dw_pair_pos(16 * h + l)));
        // kPairInvLo / kPairInvHi: the inverse (pair position j <- channel
        // 8 (j / 4) + j % 4, + 4 for the high half); kPairWords: a packed
        // bf16 row's word c <- its pair position (vpermw).
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < kLanes; ++l) dd(uint32_t(8 * (l / 4) + 4 * h + l % 4));
        for (int c = 0; c < 2 * kLanes; ++c) dw(uint16_t(conv::dw_pair_pos(c)));
    }
    if (dot_) {
        if (!epi_out_) ud2();  // the end of the code, as emit_store_constants marks it
        // vpermb indices: byte 4 l + b of the permuted column is source
        // byte 16 b + l (lane l gets channels l, 16 + l, 32 + l, 48 + l);
        // for kernel row k of a G > 1 kernel, 16 ((b - k) % 4) + l (channel
        // 16 j + l at byte (j + k) % 4).
        align(64);
        L(dot_consts_);
        for (int k = 0; k < (g_ > 1 ? g_ : 1); ++k)
            for (int l = 0; l < 16; ++l)
                for (int b = 0; b < 4; ++b) db(uint8_t(16 * ((b - k + 4) % 4) + l));
    }
}

int jit_conv_dw_avx512::out_bytes() const {
    switch (epi_out_) {
        case 0:
        case 1: return 4;  // acc (f32 / int32) or f32
        case 2: return 2;
        default: return 1;
    }
}

void jit_conv_dw_avx512::prologue() {
    preamble({reg_src, reg_src4, reg_w, reg_acc, reg_ldc});
    sub(rsp, kFrame);
    mov(ptr[rsp + kFrameArgs], reg_args);
    mov(reg_src_taps, ptr[reg_args + offsetof(dw_ukernel_args, src_taps)]);
    mov(reg_w_taps, ptr[reg_args + offsetof(dw_ukernel_args, w_taps)]);
    if (epi_out_)
        mov(reg_acc, ptr[reg_args + offsetof(dw_ukernel_args, dst)]);
    else
        mov(reg_acc, ptr[reg_args + offsetof(dw_ukernel_args, acc)]);
    mov(reg_ntaps, ptr[reg_args + offsetof(dw_ukernel_args, ntaps)]);
    mov(reg_ps, ptr[reg_args + offsetof(dw_ukernel_args, pix_stride)]);
    if (vnni_) {
        mov(eax, 0xffff);
        vpbroadcastd(wmask(), eax);
    }
    if (pair_rows_) vpxord(pair_zero(), pair_zero(), pair_zero());
    if (g_ > 1)
        for (int p = 0; p < 4; ++p) {
            mov(rax, uint64_t(0x1111111111111111ull) << p);
            kmovq(byte_sel(p), rax);
        }
    if (dot_) {
        vmovdqu8(dot_idx(), ptr[rip + dot_consts_]);
        if (d_.kind == dw_kind::s8) {
            mov(eax, 0x80808080);
            vpbroadcastd(dot_flip(), eax);
        }
    }
    if (rt_ > 0) {
        mov(reg_cs, reg_ps);  // column stride: pix_stride / S
        if (rs_ == 2) sar(reg_cs, 1);
    } else {
        lea(reg_ps3, ptr[reg_ps + reg_ps * 2]);
    }
    mov(reg_t, ptr[reg_args + offsetof(dw_ukernel_args, nblocks)]);
    mov(ptr[rsp + kFrameBlocks], reg_t);
    if (epi_out_) {
        mov(reg_ldc, ptr[reg_args + offsetof(dw_ukernel_args, dst_ld)]);  // bytes
    } else {
        mov(reg_ldc, ptr[reg_args + offsetof(dw_ukernel_args, acc_ld)]);
        shl(reg_ldc, 2);  // f32 and int32 accumulators are both 4 bytes
    }
    // (Byte-dot kernels fold the zero point into their starting values
    // and keep 0x80 bytes where zpv() is.)
    if (zp_ && !dot_)
        vpbroadcastd(zpv(), dword[reg_args + offsetof(dw_ukernel_args, zero_point)]);
    // The frame: channels, block 0's src offset (0) and acc.
    mov(reg_t, ptr[reg_args + offsetof(dw_ukernel_args, channels)]);
    mov(ptr[rsp + kFrameChannels], reg_t);
    mov(qword[rsp + kFrameSrcOff], 0);
    mov(ptr[rsp + kFrameAcc], reg_acc);
}

void jit_conv_dw_avx512::epilogue() {
    add(rsp, kFrame);
    postamble();
}

// Output row after output row (dw_ukernel_args::nrows, at least one; the
// byte-dot kernels walk them inside each channel pass instead), and in
// each row block after block: the channel loop from the block's src offset
// and acc rows, then both advance by m pixels / m rows.
void jit_conv_dw_avx512::block_loop() {
    if (dot_) {
        dot_channel_loop();
        return;
    }
    Label row_loop, loop, done;
    begin_rows();
    mov(qword[rsp + kFrameRowSrc], 0);
    mov(ptr[rsp + kFrameRowAcc], reg_acc);
    L(row_loop);
    begin_row(done);
    L(loop);
    mov(reg_left, ptr[rsp + kFrameChannels]);
    mov(reg_soff, ptr[rsp + kFrameSrcOff]);
    xor_(reg_coff, reg_coff);
    mov(reg_acc, ptr[rsp + kFrameAcc]);
    if (pair_rows_)
        pair_channel_loop();
    else
        channel_loop();
    next_block(loop);
    next_row(row_loop);
    L(done);
}

// The frame's rows left = max(nrows, 1).  rax and r13 are clobbered.
void jit_conv_dw_avx512::begin_rows() {
    mov(rax, ptr[rsp + kFrameArgs]);
    mov(rax, ptr[rax + offsetof(dw_ukernel_args, nrows)]);
    mov(r13d, 1);
    cmp(rax, r13);
    cmovl(rax, r13);
    mov(ptr[rsp + kFrameRowsLeft], rax);
}

// A row's blocks start at the row's src offset and acc; to `none` when
// nblocks < 1.  rax is clobbered.
void jit_conv_dw_avx512::begin_row(const Label &none) {
    mov(rax, ptr[rsp + kFrameArgs]);
    mov(rax, ptr[rax + offsetof(dw_ukernel_args, nblocks)]);
    mov(ptr[rsp + kFrameBlocks], rax);
    test(rax, rax);
    jle(none, T_NEAR);
    mov(rax, ptr[rsp + kFrameRowSrc]);
    mov(ptr[rsp + kFrameSrcOff], rax);
    mov(rax, ptr[rsp + kFrameRowAcc]);
    mov(ptr[rsp + kFrameAcc], rax);
}

// The next output row: src_row_step further in every tap, acc_row_step
// further in acc (dst); back to row_loop while rows are left.  rax and
// r13 are clobbered.
void jit_conv_dw_avx512::next_row(const Label &row_loop) {
    mov(rax, ptr[rsp + kFrameArgs]);
    mov(r13, ptr[rax + offsetof(dw_ukernel_args, src_row_step)]);
    add(ptr[rsp + kFrameRowSrc], r13);
    mov(r13, ptr[rax + offsetof(dw_ukernel_args, acc_row_step)]);
    add(ptr[rsp + kFrameRowAcc], r13);
    dec(qword[rsp + kFrameRowsLeft]);
    jnz(row_loop, T_NEAR);
}

// The frame's src offset += m * pix_stride, acc += m * acc_ld (bytes);
// back to loop while blocks are left.  rax is clobbered.
void jit_conv_dw_avx512::next_block(const Label &loop) {
    imul(rax, reg_ps, m_);
    add(ptr[rsp + kFrameSrcOff], rax);
    imul(rax, reg_ldc, m_);
    add(ptr[rsp + kFrameAcc], rax);
    dec(qword[rsp + kFrameBlocks]);
    jnz(loop, T_NEAR);
}

void jit_conv_dw_avx512::channel_loop() {
    Label pair, one, tail, done;
    cmp(reg_left, 2 * kLanes);
    jl(one, T_NEAR);
    L(pair);
    block(2, false);
    add(reg_acc, 2 * kLanes * out_bytes());
    add(reg_coff, 2 * kLanes * elem_);
    add(reg_soff, 2 * kLanes * elem_);
    sub(reg_left, 2 * kLanes);
    cmp(reg_left, 2 * kLanes);
    jge(pair, T_NEAR);
    L(one);
    cmp(reg_left, kLanes);
    jl(tail, T_NEAR);
    block(1, false);
    add(reg_acc, kLanes * out_bytes());
    add(reg_coff, kLanes * elem_);
    add(reg_soff, kLanes * elem_);
    sub(reg_left, kLanes);
    L(tail);
    test(reg_left, reg_left);
    jle(done, T_NEAR);  // channels >= 1 by contract; nothing left (or a bad count): done
    tail_mask();
    block(1, true);
    L(done);
}

void jit_conv_dw_avx512::tail_mask() {
    mov(eax, 1);
    shl(eax, cl);  // reg_left < 16 here
    dec(eax);
    kmovw(k_tail, eax);
}

void jit_conv_dw_avx512::block(int nb, bool tail) {
    zero_acc(nb);
    const bool split = split_pair(nb, tail);
    if (split) vmovdqu32(split_mask(), ptr[rip + split_consts_ + kSplitMask * kVecBytes]);
    tap_loop(nb, tail);
    if (split) interleave_pair();
    store(nb, tail);
}

// Accumulators of a split pair pass (even channels in acc(r, 0), odd ones
// in acc(r, 1)) back to channel order: two permutes per pixel.  The
// weights' registers are dead here.
void jit_conv_dw_avx512::interleave_pair(int lo_idx, int hi_idx) {
    vmovdqu32(split_idx(0), ptr[rip + split_consts_ + lo_idx * kVecBytes]);
    vmovdqu32(split_idx(1), ptr[rip + split_consts_ + hi_idx * kVecBytes]);
    const Zmm hi(16);
    for (int r = 0; r < m_; ++r) {
        vmovaps(hi, acc(r, 0));
        vpermt2ps(hi, split_idx(1), acc(r, 1));         // channels 16..31
        vpermt2ps(acc(r, 0), split_idx(0), acc(r, 1));  // channels 0..15
        vmovaps(acc(r, 1), hi);
    }
}

void jit_conv_dw_avx512::zero_acc(int nb) {
    for (int j = 0; j < nb; ++j)
        for (int r = 0; r < m_; ++r) vpxord(acc(r, j), acc(r, j), acc(r, j));
}

void jit_conv_dw_avx512::tap_loop(int nb, bool tail) {
    Label loop, done;
    xor_(reg_t, reg_t);
    test(reg_ntaps, reg_ntaps);
    jle(done, T_NEAR);  // ntaps == 0: acc = 0
    L(loop);
    if (rt_ > 0) {
        tap_group(nb, tail);
        add(reg_t, rt_);
    } else {
        tap(nb, tail);
        inc(reg_t);
    }
    cmp(reg_t, reg_ntaps);
    jl(loop, T_NEAR);
    L(done);
}

RegExp jit_conv_dw_avx512::src_at(int r) const {
    // x86 scales reach 1, 2, 4 (and reg_ps3 gives 3): four pixels per base.
    const Reg64 &base = r < 4 ? reg_src : reg_src4;
    switch (r % 4) {
        case 0: return base + 0;
        case 1: return base + reg_ps;
        case 2: return base + reg_ps * 2;
        default: return base + reg_ps3;
    }
}

RegExp jit_conv_dw_avx512::acc_at(int r) const {
    const Reg64 &base = r < 4 ? reg_acc : reg_acc4;
    switch (r % 4) {
        case 0: return base + 0;
        case 1: return base + reg_ldc;
        case 2: return base + reg_ldc * 2;
        default: return base + reg_ldc3;
    }
}

void jit_conv_dw_avx512::tap(int nb, bool tail) {
    mov(reg_src, ptr[reg_src_taps + reg_t * 8]);
    mov(reg_w, ptr[reg_w_taps + reg_t * 8]);
    add(reg_src, reg_soff);
    if (m_ > 4) lea(reg_src4, ptr[reg_src + reg_ps * 4]);
    // Weight rows are padded to 16 entries: the tail reads them in full.
    // Their channel offset is the src one scaled by 4 / elem.
    const RegExp w_at = reg_w + reg_coff * (4 / elem_);
    for (int j = 0; j < nb; ++j) {
        if (is_int())
            vmovdqu32(wv(j), ptr[w_at + j * kVecBytes]);
        else
            vmovups(wv(j), ptr[w_at + j * kVecBytes]);
    }
    for (int j = 0; j < nb; ++j)
        for (int r = 0; r < m_; ++r) pixel(r, j, tail);
}

// Column s of the group: reg_src walks 4 columns at a time (tap_group).
RegExp jit_conv_dw_avx512::col_at(const Reg64 &base, int s) const {
    switch (s % 4) {
        case 0: return base + 0;
        case 1: return base + reg_cs;
        case 2: return base + reg_cs * 2;
        default: return base + reg_cs3;
    }
}

void jit_conv_dw_avx512::tap_group(int nb, bool tail) {
    const bool split = split_pair(nb, tail);
    if (split) {
        vmovdqu32(split_idx(0), ptr[rip + split_consts_ + kSplitEven * kVecBytes]);
        vmovdqu32(split_idx(1), ptr[rip + split_consts_ + kSplitOdd * kVecBytes]);
    }
    // Weights of the group's R taps (rows padded to 16 entries).
    for (int k = 0; k < rt_; ++k) {
        mov(reg_w, ptr[reg_w_taps + reg_t * 8 + k * 8]);
        if (split) {  // the pair's 32 weights as even and odd channels
            const RegExp w = reg_w + reg_coff * (4 / elem_);
            vmovups(wr(k, 0), ptr[w]);
            vmovaps(wr(k, 1), split_idx(1));
            vpermi2ps(wr(k, 1), wr(k, 0), ptr[w + kVecBytes]);
            vpermt2ps(wr(k, 0), split_idx(0), ptr[w + kVecBytes]);
            continue;
        }
        for (int j = 0; j < nb; ++j) {
            const Address w = ptr[reg_w + reg_coff * (4 / elem_) + j * kVecBytes];
            if (is_int())
                vmovdqu32(wr(k, j), w);
            else
                vmovups(wr(k, j), w);
            // vpdpwssd multiplies both 16-bit halves of each lane: the
            // weights' high halves are cleared, so X's do not matter.
            if (vnni_) vpandd(wr(k, j), wr(k, j), wmask());
        }
    }
    const int ncol = rs_ * (m_ - 1) + rt_;
    mov(reg_src, ptr[reg_src_taps + reg_t * 8]);
    add(reg_src, reg_soff);
    if (ncol > 3) lea(reg_cs3, ptr[reg_cs + reg_cs * 2]);
    for (int s = 0; s < ncol; ++s) {
        if (s > 0 && s % 4 == 0) lea(reg_src, ptr[reg_src + reg_cs * 4]);
        for (int j = 0; j < nb; ++j) {
            if (!split) {
                row_x(s, j, tail);
            } else if (j == 0) {
                // 32 bf16 channels in one load: the even ones (low words)
                // shifted up, the odd ones (high words) with the low words
                // cleared -- each exactly its fp32 value.
                vmovdqu32(xr(1), ptr[src_row_at(s)]);
                vpslld(xr(0), xr(1), 16);
                vpandd(xr(1), xr(1), split_mask());
            }
            // Pixel r reads column S r + k with tap k; k rises with s for
            // a fixed r: the taps' order.
            for (int k = 0; k < rt_; ++k) {
                if ((s - k) % rs_ != 0) continue;
                const int r = (s - k) / rs_;
                if (s < k || r >= m_) continue;
                if (vnni_) {
                    vpdpwssd(acc(r, j), xr(j), wr(k, j), EvexEncoding);  // exact product, wrapping add
                } else if (is_int()) {
                    vpmulld(pr(j), xr(j), wr(k, j));  // low 32 bits: wrap-around
                    vpaddd(acc(r, j), acc(r, j), pr(j));
                } else {
                    vfmadd231ps(acc(r, j), xr(j), wr(k, j));
                }
            }
        }
    }
}

// Lanes past the tail are loaded as zero (masked, no fault); their
// accumulator lanes are never stored.
void jit_conv_dw_avx512::row_x(int s, int j, bool tail) {
    const Zmm x = xr(j);
    const Zmm xm = tail ? Zmm(x | k_tail | T_z) : x;
    const RegExp src = src_row_at(s) + j * kLanes * elem_;
    switch (d_.kind) {
        case dw_kind::f32: vmovups(xm, ptr[src]); return;
        case dw_kind::bf16:
            vpmovzxwd(xm, yword[src]);
            vpslld(x, x, 16);
            return;
        case dw_kind::u8:
        case dw_kind::s8:
            if (d_.kind == dw_kind::u8)
                vpmovzxbd(xm, xword[src]);
            else
                vpmovsxbd(xm, xword[src]);
            if (zp_) vpsubd(x, x, zpv());
            return;
    }
}

// The tail's src accesses are masked (k_tail); masked-off lanes are not
// read, so they cannot fault past the end of src.
void jit_conv_dw_avx512::pixel(int r, int j, bool tail) {
    const Zmm x = xv(r);
    const Zmm xm = tail ? Zmm(x | k_tail | T_z) : x;
    const RegExp src = src_at(r) + j * kLanes * elem_;
    switch (d_.kind) {
        case dw_kind::f32:
            // acc = fma(X, W, acc): one rounding, the contract's order.
            if (tail)
                vfmadd231ps(acc(r, j) | k_tail, wv(j), ptr[src]);
            else
                vfmadd231ps(acc(r, j), wv(j), ptr[src]);
            return;
        case dw_kind::bf16:
            vpmovzxwd(xm, yword[src]);
            vpslld(x, x, 16);  // exact bf16 -> f32
            vfmadd231ps(acc(r, j), wv(j), x);
            return;
        case dw_kind::u8:
        case dw_kind::s8:
            if (d_.kind == dw_kind::u8)
                vpmovzxbd(xm, xword[src]);
            else
                vpmovsxbd(xm, xword[src]);
            if (zp_) vpsubd(x, x, zpv());
            vpmulld(x, x, wv(j));  // low 32 bits: the contract's wrap-around
            vpaddd(acc(r, j), acc(r, j), x);
            return;
    }
}

void jit_conv_dw_avx512::set_acc_rows() {
    if (rows_ > 3) lea(reg_ldc3, ptr[reg_ldc + reg_ldc * 2]);
    if (rows_ > 4) lea(reg_acc4, ptr[reg_acc + reg_ldc * 4]);
}

void jit_conv_dw_avx512::store(int nb, bool tail) {
    if (epi_out_) {
        store_fused(nb, tail);
        return;
    }
    set_acc_rows();
    for (int r = 0; r < rows_; ++r)
        for (int j = 0; j < nb; ++j) {
            const RegExp at = acc_at(r) + j * kVecBytes;
            const Address dst = masked(j, nb, tail) ? ptr[at] | k_tail : ptr[at];
            if (is_int())
                vmovdqu32(dst, acc(r, j));
            else
                vmovups(dst, acc(r, j));
        }
}

// ------------------------------------------------------ byte-dot kernels
// Pixels per sub-block: accumulators (nb per pixel) within zmm0..15, and
// with the R x nb weights below zmm28.
int jit_conv_dw_avx512::dot_rows(int nb) const {
    if (g_ > 1) return std::max(1, std::min(m_, 20 / nb));
    return std::max(1, std::min({m_, 16 / nb, (28 - rt_ * nb) / nb}));
}

// Passes of 64 channels (4 slots), then one pass over the rest with as
// many slots as it needs, the last one masked (k_tail its lanes, k_bytes
// the source bytes left).
void jit_conv_dw_avx512::dot_channel_loop() {
    Label full, rest, done;
    Label variant[4];
    mov(reg_left, ptr[rsp + kFrameChannels]);
    xor_(reg_coff, reg_coff);
    mov(ptr[rsp + kFrameAccCh], reg_acc);
    L(full);
    cmp(reg_left, 4 * kLanes);
    jl(rest, T_NEAR);
    dot_pass(4, false);
    add(reg_coff, 4 * kLanes);  // one source byte per channel
    add(qword[rsp + kFrameAccCh], 4 * kLanes * out_bytes());
    sub(reg_left, 4 * kLanes);
    jmp(full, T_NEAR);
    L(rest);
    test(reg_left, reg_left);
    jle(done, T_NEAR);
    mov(eax, 1);
    shl(rax, cl);  // reg_left < 64 here
    dec(rax);
    kmovq(k_bytes, rax);
    // 16 or 32 channels left (MobileNet's 144, 32 and 96): whole slots read
    // with plain xmm / ymm loads, which cost less than masked ones.
    Label whole[2];
    for (int nb = 1; nb <= 2; ++nb) {
        cmp(reg_left, nb * kLanes);
        je(whole[nb - 1], T_NEAR);
    }
    for (int nb = 1; nb < 4; ++nb) {
        cmp(reg_left, nb * kLanes);
        jle(variant[nb - 1], T_NEAR);
    }
    jmp(variant[3], T_NEAR);
    for (int nb = 1; nb <= 2; ++nb) {
        L(whole[nb - 1]);
        dot_pass(nb, false);
        jmp(done, T_NEAR);
    }
    for (int nb = 1; nb <= 4; ++nb) {
        L(variant[nb - 1]);
        sub(reg_left, (nb - 1) * kLanes);  // the last slot's lanes, 1..16
        tail_mask();
        dot_pass(nb, true);
        if (nb < 4) jmp(done, T_NEAR);
    }
    L(done);
}

// dst = the permuted column at src: nb slots of 16 channels, the last one
// partial (tail: the k_bytes channels, masked) or whole (plain loads of
// exactly 16 nb bytes; nb = 3 masked too, there is no 48-byte load).
void jit_conv_dw_avx512::dot_load(const Zmm &dst, const Zmm &idx, const Address &src, int nb, bool tail) {
    if (nb == 4 && !tail) {
        vpermb(dst, idx, src);
        return;
    }
    if (tail || nb == 3)
        vmovdqu8(dst | k_bytes | T_z, src);  // only these bytes are read: no fault past src's end
    else if (nb == 2)
        vmovdqu8(Ymm(dst.getIdx()), src);
    else
        vmovdqu8(Xmm(dst.getIdx()), src);
    vpermb(dst, idx, dst);
}

// Sum of the call's weights per channel via vpdpbusd on bytes of ones
// (each lane's only nonzero weight byte), times -(zp (+ 128 for s8)):
// the value every accumulator of the pass starts from (int32, wrapping,
// as the contract's sum).
void jit_conv_dw_avx512::dot_comp(int nb) {
    const Zmm tmp(31);
    mov(eax, 0x01010101);
    vpbroadcastd(tmp, eax);
    for (int j = 0; j < nb; ++j) vpxord(Zmm(j), Zmm(j), Zmm(j));
    Label loop, done;
    xor_(reg_t, reg_t);
    test(reg_ntaps, reg_ntaps);
    jle(done, T_NEAR);
    L(loop);
    mov(reg_w, ptr[reg_w_taps + reg_t * 8]);
    for (int j = 0; j < nb; ++j)
        vpdpbusd(Zmm(j), tmp, ptr[reg_w + reg_coff * 4 + j * kVecBytes], EvexEncoding);
    inc(reg_t);
    cmp(reg_t, reg_ntaps);
    jl(loop, T_NEAR);
    L(done);
    if (zp_) {
        mov(rax, ptr[rsp + kFrameArgs]);
        mov(eax, dword[rax + offsetof(dw_ukernel_args, zero_point)]);
    } else {
        xor_(eax, eax);
    }
    if (d_.kind == dw_kind::s8) add(eax, 128);  // x = (x ^ 0x80) - 128
    neg(eax);
    vpbroadcastd(tmp, eax);
    for (int j = 0; j < nb; ++j) {
        vpmulld(Zmm(j), Zmm(j), tmp);
        vmovdqu32(ptr[rsp + kFrameComp + j * kVecBytes], Zmm(j));
    }
}

// One channel pass (nb slots from reg_coff): every block of m pixels, as
// sub-blocks of mm, starts from comp (or zero), runs the tap groups and
// stores.
void jit_conv_dw_avx512::dot_pass(int nb, bool tail) {
    const int mm = dot_rows(nb);
    dot_acc_nb_ = nb;
    if (g_ > 1)
        dot_build_weights(nb);
    else if (dot_needs_comp())
        dot_comp(nb);
    // Output rows (nrows, at least one), each nblocks blocks of m pixels.
    Label row_loop, loop, rows_done;
    begin_rows();
    mov(ptr[rsp + kFrameRowSrc], reg_coff);
    mov(rax, ptr[rsp + kFrameAccCh]);
    mov(ptr[rsp + kFrameRowAcc], rax);
    L(row_loop);
    begin_row(rows_done);
    L(loop);
    for (int r0 = 0; r0 < m_; r0 += mm) dot_sub_block(nb, tail, r0, std::min(mm, m_ - r0), mm);
    rows_ = m_;
    next_block(loop);
    next_row(row_loop);
    L(rows_done);
    dot_acc_nb_ = 0;
}

// Pixels r0 .. r0 + rows - 1 of the block: accumulators from comp (or
// zero), the taps (G rows at once, or tap group by tap group), the store.
void jit_conv_dw_avx512::dot_sub_block(int nb, bool tail, int r0, int rows, int mm) {
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < nb; ++j) {
            if (dot_needs_comp())
                vmovdqu32(acc(r, j), ptr[rsp + kFrameComp + j * kVecBytes]);
            else
                vpxord(acc(r, j), acc(r, j), acc(r, j));
        }
    if (g_ > 1) {
        dot_rows_group(nb, tail, r0, rows);
    } else {
        Label taps, no_taps;
        xor_(reg_t, reg_t);
        test(reg_ntaps, reg_ntaps);
        jle(no_taps, T_NEAR);
        L(taps);
        dot_group(nb, tail, r0, rows, mm);
        add(reg_t, rt_);
        cmp(reg_t, reg_ntaps);
        jl(taps, T_NEAR);
        L(no_taps);
    }
    mov(reg_acc, ptr[rsp + kFrameAcc]);
    if (r0 > 0) {
        imul(rax, reg_ldc, r0);
        add(reg_acc, rax);
    }
    rows_ = rows;
    store(nb, tail);
}

// One group of R taps for pixels r0 .. r0 + rows - 1: the weights, then
// the S (rows - 1) + R columns, each permuted once and multiplied into
// every accumulator that reads it (pixel r, tap k: column S r + k).
void jit_conv_dw_avx512::dot_group(int nb, bool tail, int r0, int rows, int mm) {
    mov(reg_src, ptr[reg_src_taps + reg_t * 8]);
    add(reg_src, ptr[rsp + kFrameSrcOff]);
    if (r0 > 0) {
        imul(reg_w, reg_ps, r0);
        add(reg_src, reg_w);
    }
    for (int k = 0; k < rt_; ++k) {
        mov(reg_w, ptr[reg_w_taps + reg_t * 8 + k * 8]);
        for (int j = 0; j < nb; ++j)
            vmovdqu32(dot_w(k, j, nb, mm), ptr[reg_w + reg_coff * 4 + j * kVecBytes]);
    }
    const int ncol = rs_ * (rows - 1) + rt_;
    if (ncol > 3) lea(reg_cs3, ptr[reg_cs + reg_cs * 2]);
    const Zmm x = dot_x();
    for (int s = 0; s < ncol; ++s) {
        if (s > 0 && s % 4 == 0) lea(reg_src, ptr[reg_src + reg_cs * 4]);
        dot_load(x, dot_idx(), ptr[src_row_at(s)], nb, tail);
        if (d_.kind == dw_kind::s8) vpxord(x, x, dot_flip());
        for (int k = 0; k < rt_; ++k) {
            if ((s - k) % rs_ != 0 || s < k) continue;
            const int r = (s - k) / rs_;
            if (r >= rows) continue;
            for (int j = 0; j < nb; ++j) vpdpbusd(acc(r, j), x, dot_w(k, j, nb, mm), EvexEncoding);
        }
    }
}

// G > 1: weights[kw][j] = OR over rows k of rol(byte-dot row k R + kw,
// slot j, 8 k): row k's weight byte moves from byte j to byte (j + k) % 4,
// where the row-k permutation put its source byte.  The comp (when the
// zero point needs it) sums them with vpdpbusd on bytes of ones, as
// dot_comp does.  Registers: zmm0.. nb - 1 the vectors being built,
// zmm8.. a rotated row, zmm16.. the comp sums, zmm31 the ones.
void jit_conv_dw_avx512::dot_build_weights(int nb) {
    const Zmm ones(31);
    const bool comp = dot_needs_comp();
    if (comp) {
        mov(eax, 0x01010101);
        vpbroadcastd(ones, eax);
        for (int j = 0; j < nb; ++j) vpxord(Zmm(16 + j), Zmm(16 + j), Zmm(16 + j));
    }
    for (int kw = 0; kw < rt_; ++kw) {
        for (int k = 0; k < g_; ++k) {
            mov(reg_w, ptr[reg_w_taps + (k * rt_ + kw) * 8]);
            for (int j = 0; j < nb; ++j) {
                const Address row = ptr[reg_w + reg_coff * 4 + j * kVecBytes];
                if (k == 0) {
                    vmovdqu32(Zmm(j), row);
                } else {
                    vprold(Zmm(8 + j), row, uint8_t(8 * k));
                    vpord(Zmm(j), Zmm(j), Zmm(8 + j));
                }
            }
        }
        for (int j = 0; j < nb; ++j) {
            vmovdqu32(ptr[rsp + kFrameW + (kw * 4 + j) * kVecBytes], Zmm(j));
            if (comp) vpdpbusd(Zmm(16 + j), ones, Zmm(j), EvexEncoding);
        }
    }
    if (!comp) return;
    if (zp_) {
        mov(rax, ptr[rsp + kFrameArgs]);
        mov(eax, dword[rax + offsetof(dw_ukernel_args, zero_point)]);
    } else {
        xor_(eax, eax);
    }
    if (d_.kind == dw_kind::s8) add(eax, 128);
    neg(eax);
    vpbroadcastd(ones, eax);
    for (int j = 0; j < nb; ++j) {
        vpmulld(Zmm(16 + j), Zmm(16 + j), ones);
        vmovdqu32(ptr[rsp + kFrameComp + j * kVecBytes], Zmm(16 + j));
    }
}

// G > 1, pixels r0 .. r0 + rows - 1: per column s, each row's source bytes
// permuted with its rotation, then per slot j the rows blended into one
// vector (row 0's bytes where nothing else goes, row k's at byte
// (j + k) % 4) and multiplied into every accumulator that reads column s
// (pixel r, tap kw: s = S r + kw) with weights[kw][j] from the frame.
// Row k's column pointer in rbx / r13 / rax / rdi (the tap and weight
// registers are idle here: there is no tap loop).
void jit_conv_dw_avx512::dot_rows_group(int nb, bool tail, int r0, int rows) {
    const Reg64 base[conv::kDwMaxDotRows] = {rbx, r13, rax, rdi};
    if (r0 > 0) imul(reg_cs3, reg_ps, r0);
    for (int k = 0; k < g_; ++k) {
        mov(base[k], ptr[reg_src_taps + k * rt_ * 8]);
        add(base[k], ptr[rsp + kFrameSrcOff]);
        if (r0 > 0) add(base[k], reg_cs3);
        vmovdqu8(gr_idx(k), ptr[rip + dot_consts_ + k * 64]);
    }
    if (d_.kind == dw_kind::s8) {
        mov(r12d, 0x80808080);  // reg_cs3, set again below
        vpbroadcastd(gr_flip(), r12d);
    }
    const int ncol = rs_ * (rows - 1) + rt_;
    if (ncol > 3) lea(reg_cs3, ptr[reg_cs + reg_cs * 2]);
    for (int s = 0; s < ncol; ++s) {
        if (s > 0 && s % 4 == 0)
            for (int k = 0; k < g_; ++k) lea(base[k], ptr[base[k] + reg_cs * 4]);
        for (int k = 0; k < g_; ++k) {
            dot_load(gr_p(k), gr_idx(k), ptr[col_at(base[k], s)], nb, tail);
            if (d_.kind == dw_kind::s8) vpxord(gr_p(k), gr_p(k), gr_flip());
        }
        for (int j = 0; j < nb; ++j) {
            bool any = false;
            for (int kw = 0; kw < rt_; ++kw) {
                const int r = (s - kw) / rs_;
                if (s >= kw && (s - kw) % rs_ == 0 && r < rows) any = true;
            }
            if (!any) continue;
            // Bytes (j + 1) % 4 from row 1, (j + 2) % 4 from row 2, ...;
            // the rest (byte j: row 0) from row 0.
            vpblendmb(gr_v() | byte_sel((j + 1) % 4), gr_p(0), gr_p(1));
            for (int k = 2; k < g_; ++k) vmovdqu8(gr_v() | byte_sel((j + k) % 4), gr_p(k));
            for (int kw = 0; kw < rt_; ++kw) {
                if (s < kw || (s - kw) % rs_ != 0) continue;
                const int r = (s - kw) / rs_;
                if (r >= rows) continue;
                vpdpbusd(acc(r, j), gr_v(), ptr[rsp + kFrameW + (kw * 4 + j) * kVecBytes], EvexEncoding);
            }
        }
    }
}

// ------------------------------------------------------ fused epilogue
namespace {
const Opmask k_tmp(2);
}  // namespace

void jit_conv_dw_avx512::store_fused(int nb, bool tail) {
    const uint8_t f = d_.epi;
    set_acc_rows();
    mov(rax, ptr[rsp + kFrameArgs]);
    // Channel c's float at base + reg_coff * (4 / elem) (like the weights).
    mov(r13, ptr[rax + offsetof(dw_ukernel_args, scales)]);
    for (int j = 0; j < nb && !no_scale_; ++j) {
        if (f & conv::DW_EPI_SCALE_N) {
            const Address at = ptr[r13 + reg_coff * (4 / elem_) + j * kVecBytes];
            vmovups(masked(j, nb, tail) ? Zmm(z_scale(j) | k_tail | T_z) : z_scale(j), at);  // masked: may end at the last channel
        } else {
            vbroadcastss(z_scale(j), dword[r13]);
        }
    }
    if (f & conv::DW_EPI_BIAS) {
        mov(r13, ptr[rax + offsetof(dw_ukernel_args, bias)]);
        for (int j = 0; j < nb; ++j) {
            const Address at = ptr[r13 + reg_coff * (4 / elem_) + j * kVecBytes];
            vmovups(masked(j, nb, tail) ? Zmm(z_bias(j) | k_tail | T_z) : z_bias(j), at);
        }
    }
    if (pair_order_) {
        // The per-channel operands into the accumulators' pair order.
        const Zmm idx_lo(28), idx_hi(29), t_lo(26), t_hi(27);
        vmovdqu32(idx_lo, ptr[rip + split_consts_ + kPairInvLo * kVecBytes]);
        vmovdqu32(idx_hi, ptr[rip + split_consts_ + kPairInvHi * kVecBytes]);
        auto to_pair_order = [&](const Zmm &v0, const Zmm &v1) {
            vmovaps(t_lo, idx_lo);
            vpermi2ps(t_lo, v0, v1);
            vmovaps(t_hi, idx_hi);
            vpermi2ps(t_hi, v0, v1);
            vmovaps(v0, t_lo);
            vmovaps(v1, t_hi);
        };
        if ((f & conv::DW_EPI_SCALE_N) && !no_scale_) to_pair_order(z_scale(0), z_scale(1));
        if (f & conv::DW_EPI_BIAS) to_pair_order(z_bias(0), z_bias(1));
    }
    if ((f & conv::DW_EPI_CLIP) == conv::DW_EPI_CLIP)  // the low bound where relu's zero goes
        vbroadcastss(z_zero(), dword[rax + offsetof(dw_ukernel_args, alpha)]);
    else if (f & (conv::DW_EPI_RELU | conv::DW_EPI_LEAKY))
        vxorps(z_zero(), z_zero(), z_zero());
    if (fast_bf16_) {
        store_bf16_fast(nb, tail);
        return;
    }
    const int ob = out_bytes();
    for (int r = 0; r < rows_; ++r)
        for (int j = 0; j < nb; ++j) {
            finish_vec(acc(r, j), j);
            store_converted(ptr[acc_at(r) + j * kLanes * ob], acc(r, j), masked(j, nb, tail));
        }
}

// vcvtne2ps2bf16 rounds as lowp::f32_to_bf16 does (RNE, NaN quieted) except
// that it flushes denormal inputs to a signed zero, so the finished values
// are screened as in jit_lp_avx512::store_rows_bf16_fast: with y = bits(x)
// << 1, x is denormal exactly when y - 2 (wrapping) is unsigned-below
// 0x00fffffe.  If any is, every pixel is stored again with the exact
// sequence (the finished values are still in the accumulators): the
// result is bit for bit the portable epilogue's.  Registers: zmm24 the
// packed words, zmm25 the running minimum, zmm26 a temporary, zmm27 the
// constant 2 (all free at the store).
void jit_conv_dw_avx512::store_bf16_fast(int nb, bool tail) {
    const Zmm packed(24), screen_min(25), screen_tmp(26), two(27), words_idx(28);
    if (pair_order_) vmovdqu16(words_idx, ptr[rip + split_consts_ + kPairWords * kVecBytes]);
    mov(r13d, 2);
    vpbroadcastd(two, r13d);
    vpternlogd(screen_min, screen_min, screen_min, 0xff);  // all ones: nothing seen yet
    for (int r = 0; r < rows_; ++r) {
        for (int j = 0; j < nb; ++j) {
            finish_vec(acc(r, j), j);
            vpaddd(screen_tmp, acc(r, j), acc(r, j));
            vpsubd(screen_tmp, screen_tmp, two);
            // A tail's lanes past the channels are never stored; at worst
            // (a denormal clip bound or zero point there) they cost a
            // needless exact re-store.
            vpminud(screen_min, screen_min, screen_tmp);
        }
        if (nb == 2) {  // 32 channels, 64 bytes (a pair-dot tail: k_words of them)
            vcvtne2ps2bf16(packed, acc(r, 1), acc(r, 0));  // words 0..15 from acc(r, 0)
            if (pair_order_) vpermw(packed, words_idx, packed);  // to channel order
            vmovdqu16(tail ? ptr[acc_at(r)] | k_words : ptr[acc_at(r)], packed);
        } else {
            const Ymm half(packed.getIdx());
            vcvtneps2bf16(half, acc(r, 0));
            vmovdqu16(tail ? ptr[acc_at(r)] | k_tail : ptr[acc_at(r)], half);
        }
    }
    Label done;
    mov(r13d, 0x00fffffe);
    vpbroadcastd(screen_tmp, r13d);
    vpcmpud(k2, screen_min, screen_tmp, 1);  // unsigned less-than
    kortestw(k2, k2);
    jz(done, T_NEAR);
    if (pair_order_) interleave_pair(kPairLo, kPairHi);  // the finished values to channel order
    for (int r = 0; r < rows_; ++r)
        for (int j = 0; j < nb; ++j)
            store_converted(ptr[acc_at(r) + j * kLanes * 2], acc(r, j), masked(j, nb, tail));
    L(done);
}

void jit_conv_dw_avx512::finish_vec(const Zmm &v, int j) {
    const uint8_t f = d_.epi;
    if (is_int()) vcvtdq2ps(v, v);  // exact int32 -> float, rounded to nearest even
    if (!no_scale_) vmulps(v, v, z_scale(j));  // scales[c] or scales[0]
    if (f & conv::DW_EPI_BIAS) vaddps(v, v, z_bias(j));
    if ((f & conv::DW_EPI_CLIP) == conv::DW_EPI_CLIP) {
        // x < lo -> lo, then hi < x -> hi (NaN stays); z_t1 is free until
        // the store.
        vcmpps(k_tmp, v, z_zero(), 17);
        vmovaps(v | k_tmp, z_zero());
        vbroadcastss(z_t(0), dword[rax + offsetof(dw_ukernel_args, beta)]);
        vcmpps(k_tmp, z_t(0), v, 17);
        vmovaps(v | k_tmp, z_t(0));
    } else if (f & conv::DW_EPI_RELU) {
        vcmpps(k_tmp, v, z_zero(), 2);  // x <= 0 (ordered): +0; NaN stays
        vxorps(v | k_tmp, v, v);
    } else if (f & conv::DW_EPI_LEAKY) {
        vcmpps(k_tmp, v, z_zero(), 14);  // x > 0 keeps x; else (NaN too) alpha * x
        knotw(k_tmp, k_tmp);
        vmulps(v | k_tmp, v, ptr_b[rax + offsetof(dw_ukernel_args, alpha)]);
    }
    if (f & conv::DW_EPI_ZP) vaddps(v, v, ptr_b[rax + offsetof(dw_ukernel_args, dst_zero_point)]);
}

void jit_conv_dw_avx512::store_converted(const Address &dst_base, const Zmm &v, bool tail) {
    emit_store_converted(*this, epi_out_, tail ? dst_base | k_tail : dst_base, v, consts_, z_t(0), z_t(1),
                         z_t(2), k_tmp);
}

}  // namespace anvil::jit
