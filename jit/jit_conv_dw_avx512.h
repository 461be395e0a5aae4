// AVX-512 depthwise-convolution micro-kernel generator (conv/dw_ukernel.h)
// on zmm, for all four kinds (f32, bf16, u8, s8); needs only avx512_core.
// Specialised on kind, m (1..8), the zero-point flag (int kinds) and row_taps.
//
// row_taps R > 0 (taps in groups of R, row_step S taps per pixel step):
// per group the R weight vectors of each channel block sit in registers
// and the S (m - 1) + R src columns of the group are loaded once each,
// every one multiplied into the accumulators that use it (pixel r with
// tap k at column S r + k), which keeps each accumulator's taps in
// increasing order.
//
// Byte-dot kernels (narrow_int a conv::dw_byte_dot_mode; row kernels of
// the int kinds; need AVX512-VNNI and VBMI), G = 1 first: channels go 64 per pass, channel-block outer,
// pixel blocks inner.  Each src column's 64 bytes are permuted (vpermb)
// so that dword lane l holds channels l, 16 + l, 32 + l, 48 + l in its
// four bytes (s8 sources flipped to u8 by xor 0x80); one vpdpbusd per
// 16 channels then multiplies them by a byte-dot weight vector, whose
// only nonzero byte per lane is the one of its 16 channels, into
// accumulators in natural channel order: no widening, no zero-point
// subtraction per element.  Instead each pass starts its accumulators at
// -(zero point (+ 128 for s8)) x the sum of the call's weights (vpdpbusd
// on a vector of ones), kept in the stack frame.  A pass over the last
// channels (fewer than 64) uses as many 16-channel slots as they need,
// the last one masked.  Pixel blocks of more than the registers hold run
// as sub-blocks (dot_rows).
//
// Byte-dot kernels for G = 2..4 kernel rows per call (the call's taps are
// exactly G rows of R): row k's column is permuted with its channels
// rotated by k bytes (channel 16 j + l at byte (j + k) % 4 of lane l), so
// that two or three byte blends (vpblendmb / merge-masked moves, on either
// vector port) gather rows 0..G-1 of slot j's 16 channels into one vector,
// multiplied by one vpdpbusd with a weight vector that holds the G rows'
// weights at the same bytes: G kernel rows per instruction.  Those weight
// vectors are built per pass from the byte-dot rows (vprold by 8 k, or)
// into the stack frame, and the vpdpbusd read them from there.
//
// A runtime loop walks the nblocks blocks of m pixels (src offset and acc
// rows kept in a small stack frame); per block, channels sit in the 16 lanes of a zmm.  An outer runtime loop walks the
// channel blocks of 16 two at a time (then one, then the last channels % 16
// under an opmask whose masked loads suppress faults past the end of src);
// for each pass the m (or 2m) accumulators are zeroed, an inner runtime
// loop over the taps loads the tap's weight vector(s) once and multiplies
// them into every pixel's src vector, and the accumulators are stored to
// acc rows r * acc_ld.
#pragma once
#include <string>

#include "conv/dw_ukernel.h"
#include "jit/jit_generator.h"

namespace anvil::jit {

class jit_conv_dw_avx512 : public jit_generator {
public:
    static constexpr int kLanes = conv::kDwLanes;  // channels per zmm
    static constexpr int kVecBytes = 64;           // one f32 / int32 zmm

    explicit jit_conv_dw_avx512(const conv::dw_ukernel_desc &d);
    static std::string kernel_name(const conv::dw_ukernel_desc &d);

private:
    // Vector register map: accumulators zmm(8 j + r) for pixel r of the
    // j-th channel block of a pass (a pass covers one or two blocks: two
    // give 2m independent FMA chains per tap, twice the FMA latency's
    // slack), one src temporary per pixel zmm16..16+m-1 (independent, so
    // the pixels' widen/multiply chains overlap), block j's weights in
    // zmm31 / zmm29, the zero point in zmm30.
    // Byte-dot passes (dot_acc_nb_ > 0): acc(r, j) = zmm(r nb + j).
    Xbyak::Zmm acc(int r, int j = 0) const {
        return Xbyak::Zmm(dot_acc_nb_ ? r * dot_acc_nb_ + j : j * conv::kDwMaxM + r);
    }
    static Xbyak::Zmm xv(int r) { return Xbyak::Zmm(2 * conv::kDwMaxM + r); }
    static Xbyak::Zmm wv(int j = 0) { return Xbyak::Zmm(31 - 2 * j); }
    static Xbyak::Zmm zpv() { return Xbyak::Zmm(30); }
    const Xbyak::Opmask k_tail = k1;

    bool is_int() const { return d_.kind == conv::dw_kind::u8 || d_.kind == conv::dw_kind::s8; }
    // Address of pixel r's src vector of the current tap and channel block,
    // and of row r's accumulator block (after set_acc_rows()).
    Xbyak::RegExp src_at(int r) const;
    Xbyak::RegExp acc_at(int r) const;

    // Emit steps.
    void prologue();                 // save registers, load the arguments
    void block_loop();               // nblocks times: channel_loop, then advance
    void next_block(const Xbyak::Label &loop);  // advance a block, loop while any are left
    // Output rows (dw_ukernel_args::nrows): the count, a row's start, the
    // step to the next.
    void begin_rows();
    void begin_row(const Xbyak::Label &none);
    void next_row(const Xbyak::Label &row_loop);
    void channel_loop();             // pairs of blocks, a block, then the masked tail
    void block(int nb, bool tail);   // nb channel blocks: zero, taps, store
    void zero_acc(int nb);
    void tap_loop(int nb, bool tail);  // runtime loop over taps
    void tap(int nb, bool tail);     // one tap: weights, then m pixels
    void tap_group(int nb, bool tail);  // row_taps: R taps, m + R - 1 src vectors
    void row_x(int s, int j, bool tail);  // xr(j) = X at group pixel s (widened, minus zp)
    // Column s of a group whose column s & ~3 is at base (the column
    // stride reg_cs, 3 times it in reg_cs3).
    Xbyak::RegExp col_at(const Xbyak::Reg64 &base, int s) const;
    Xbyak::RegExp src_row_at(int s) const { return col_at(reg_src, s); }
    // row_taps register map: weights of tap k, block j in zmm16 + j R + k
    // (R <= 5: up to zmm25), the src vector of block j in zmm26 + j, an int
    // product in zmm28 + j.
    Xbyak::Zmm wr(int k, int j) const { return Xbyak::Zmm(16 + j * rt_ + k); }
    static Xbyak::Zmm xr(int j) { return Xbyak::Zmm(26 + j); }
    static Xbyak::Zmm pr(int j) { return Xbyak::Zmm(28 + j); }
    void pixel(int r, int j, bool tail);  // acc(r, j) += X(r) * W
    // Byte-dot kernels (see above).  Register map of a pass over nb
    // 16-channel slots with sub-blocks of mm pixels: accumulators zmm0 ..
    // nb mm - 1, weights of tap k, slot j in zmm(nb mm + k nb + j) (<=
    // zmm27), the permuted src column in zmm28, the vpermb index in zmm29,
    // 0x80 bytes (s8) in zmm30, zmm31 a temporary; k3 the byte mask of the
    // last pass's channels.
    void dot_channel_loop();
    void dot_pass(int nb, bool tail);
    void dot_sub_block(int nb, bool tail, int r0, int rows, int mm);  // mm: dot_rows(nb)
    void dot_comp(int nb);  // frame's comp[j] = -(zp + 128 s8) x sum of the call's weights
    void dot_group(int nb, bool tail, int r0, int rows, int mm);
    void dot_load(const Xbyak::Zmm &dst, const Xbyak::Zmm &idx, const Xbyak::Address &src, int nb, bool tail);
    int dot_rows(int nb) const;  // mm: pixels per sub-block
    // G > 1 (g_): weights[kw][j] built into the frame (kFrameW), comp from
    // them; the columns of pixels r0 .. r0 + rows - 1.  Registers: row k's
    // permuted column in zmm24 + k, the blended vector in zmm23, row k's
    // vpermb index in zmm28 + k (reloaded per sub-block), 0x80 bytes in
    // zmm22; accumulators below zmm20 (the fused store's registers start
    // there: epi_base()); k4..k7 select byte p of every lane.
    void dot_build_weights(int nb);
    void dot_rows_group(int nb, bool tail, int r0, int rows);
    static Xbyak::Zmm gr_p(int k) { return Xbyak::Zmm(24 + k); }
    static Xbyak::Zmm gr_v() { return Xbyak::Zmm(23); }
    static Xbyak::Zmm gr_idx(int k) { return Xbyak::Zmm(28 + k); }
    static Xbyak::Zmm gr_flip() { return Xbyak::Zmm(22); }
    static Xbyak::Opmask byte_sel(int p) { return Xbyak::Opmask(4 + p); }
    Xbyak::Zmm dot_w(int k, int j, int nb, int mm) const { return Xbyak::Zmm(nb * mm + k * nb + j); }
    static Xbyak::Zmm dot_x() { return Xbyak::Zmm(28); }
    static Xbyak::Zmm dot_idx() { return Xbyak::Zmm(29); }
    static Xbyak::Zmm dot_flip() { return Xbyak::Zmm(30); }
    const Xbyak::Opmask k_bytes = k3;
    bool dot_needs_comp() const { return zp_ || d_.kind == conv::dw_kind::s8; }
    Xbyak::Label dot_consts_;  // the vpermb indices (row rotation k at + 64 k)
    // Split pairs (bf16 row_taps kernels with row_step 2, the full passes
    // over 32 channels): one 64-byte load gives the pair's 32 channels,
    // split into the even channels (the low words, shifted up) and the odd
    // ones (the high words, low words cleared) -- one instruction per 16
    // channels instead of the widening load and shift (Zen 4, one kernel
    // row of an m = 8 stride-2 pass in L1: 70 cycles widened, 48 split, as
    // fp32).  The tap weights are permuted the same way when loaded (per
    // group of R taps) and the accumulators back to channel order before
    // the store; every accumulator takes the same products in the same
    // order as before.  Stride 2 only: there each column serves about 1.5
    // FMAs per block, so the widening dominated (MobileNet-v2 stride-2
    // layers 0.84-0.90x -> 0.89-0.98x oneDNN); at stride 1 each serves 2.4
    // and the permutes cost more than they saved (1.06x -> 1.04x).
    // Registers (free in bf16 kernels): the permutation indices in zmm28 /
    // zmm29, the high-words mask in zmm31.
    bool split_pair(int nb, bool tail) const {
        return d_.kind == conv::dw_kind::bf16 && rt_ > 0 && nb == 2 && !tail && rs_ == 2;
    }
    void interleave_pair(int lo_idx = kSplitLo, int hi_idx = kSplitHi);
    static Xbyak::Zmm split_idx(int i) { return Xbyak::Zmm(28 + i); }
    static Xbyak::Zmm split_mask() { return Xbyak::Zmm(31); }
    Xbyak::Label split_consts_;  // the vectors below, 64 bytes each
    enum { kSplitEven = 0, kSplitOdd = 1, kSplitLo = 2, kSplitHi = 3, kSplitMask = 4, kPairLo = 5, kPairHi = 6,
           kPairInvLo = 7, kPairInvHi = 8, kPairWords = 9 };
    void set_acc_rows();             // row pointers for store()
    // bf16 pair-dot kernels (pair_rows_ = G > 0; conv::dw_ukernel_desc::
    // narrow_int), jit_conv_dw_pair.cpp.  Channels go in 32-channel slots
    // (the last one 1..32 channels: up to 16 on ymm, more on zmm with a
    // word mask).  For each pair of kernel rows, each src column's two
    // rows (32 bf16 channels each) are interleaved word by word with
    // vpunpcklwd / vpunpckhwd -- a row alone with zero words -- into two
    // vectors of 16 (row a, row b) pairs, which one vdpbf16ps each
    // multiplies by the pair-form weights: two kernel rows per instruction
    // and no widening.  The accumulators hold the slot's channels in the
    // unpack order (conv::dw_pair_pos) and are permuted back to channel
    // order before the store.  Registers: accumulators as acc(r, j) (j = 0
    // the low-half pairs, 1 the high), the weights of tap k in wr(k, j),
    // the two rows' columns in zmm26 / zmm27, the pairs in zmm28 / zmm29,
    // zero in zmm30; rbx / rax walk the two rows' columns; k3 (k_words)
    // the words of a zmm tail, k_tail its channels past 16 (or a ymm
    // tail's channels).
    void pair_channel_loop();
    void pair_slot(bool wide, bool tail);
    void pair_rows(int q, bool wide, bool tail);  // pair q of the call's rows
    void pair_load(int idx, const Xbyak::Address &src, bool wide, bool tail);
    void pair_unpermute(bool wide);
    static Xbyak::Zmm pair_zero() { return Xbyak::Zmm(30); }
    const Xbyak::Opmask k_words = k3;
    int pair_rows_ = 0;
    // A 32-channel pair-dot slot with a bf16 output (fast_bf16_) stays in
    // pair order through the epilogue: its per-channel scales and bias are
    // permuted once per slot instead, and each packed row of 32 words once
    // (vpermw) instead of two vpermt2ps per pixel.
    bool pair_order_ = false;
    void store(int nb, bool tail);
    // Fused epilogue (d_.epi != 0): reg_acc / reg_ldc address dst (bytes);
    // each accumulator is finished and converted in registers (the lp
    // kernels' sequence, jit_lp_avx512::store_fused).  Registers at the
    // store: scales of block j in zmm16 + j, bias in zmm18 + j, zero in
    // zmm20, temporaries zmm21..23 (all free there), k2 a temporary; rax
    // the args pointer, r13 scratch.
    void store_fused(int nb, bool tail);
    // Fused-store registers: scales of slot j in zmm16 + j, bias in
    // zmm(16 + slots + j), then the relu zero / clip bound and three
    // temporaries (slots: 2, byte-dot kernels 4).
    int epi_slots() const { return dot_ ? 4 : 2; }
    int epi_base() const { return g_ > 1 ? 20 : 16; }
    Xbyak::Zmm z_scale(int j) const { return Xbyak::Zmm(epi_base() + j); }
    Xbyak::Zmm z_bias(int j) const { return Xbyak::Zmm(epi_base() + epi_slots() + j); }
    Xbyak::Zmm z_zero() const { return Xbyak::Zmm(epi_base() + 2 * epi_slots()); }
    Xbyak::Zmm z_t(int i) const { return Xbyak::Zmm(epi_base() + 1 + 2 * epi_slots() + i); }
    // A tail pass masks its last slot only.
    static bool masked(int j, int nb, bool tail) { return tail && j == nb - 1; }
    // bf16 output on a kernel made for avx512_core_bf16: one
    // vcvtne2ps2bf16 per pixel and a denormal screen (the lp kernels'
    // store_rows_bf16_fast) instead of the exact ten-instruction rounding.
    void store_bf16_fast(int nb, bool tail);
    void finish_vec(const Xbyak::Zmm &v, int j);
    void store_converted(const Xbyak::Address &dst_base, const Xbyak::Zmm &v, bool tail);
    int rows_ = 1;  // pixels store() writes: m_, or a byte-dot sub-block's
    int dot_acc_nb_ = 0;  // 0, or the slots of the byte-dot pass being emitted
    int out_bytes() const;
    void tail_mask();                // k_tail = (1 << channels left) - 1
    void epilogue();

    conv::dw_ukernel_desc d_;
    uint8_t epi_out_ = 0;  // d_.epi's output type (0: store acc)
    Xbyak::Label consts_;  // broadcast constants (fused bf16 / u8 / s8 stores)
    int m_ = 1;
    bool zp_ = false;  // DW_FLAG_ZERO_POINT on an int kind: subtract the zero point
    bool no_scale_ = false;  // DW_FLAG_NO_SCALE with a fused epilogue: no multiply
    int elem_ = 4;  // src bytes per channel
    int rt_ = 0;    // row_taps
    int rs_ = 1;    // row_step
    bool vnni_ = false;  // row kernel of an int kind with narrow_int 1: vpdpwssd
    bool dot_ = false;   // a byte-dot mode (dw_byte_dot_rows): vpdpbusd on permuted bytes
    int g_ = 0;          // its G: kernel rows per call (1: any number, one per instruction)
    bool fast_bf16_ = false;  // bf16 output and tier avx512_core_bf16: store_bf16_fast
    static Xbyak::Zmm wmask() { return Xbyak::Zmm(31); }  // 0x0000ffff lanes (vnni_)

    // GPR map (System V: the args pointer arrives in rdi).
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_src_taps = rsi;
    const Xbyak::Reg64 reg_w_taps = rdx;
    const Xbyak::Reg64 reg_left = rcx;    // channels left (cl: the tail's shift count)
    const Xbyak::Reg64 reg_ntaps = r8;
    const Xbyak::Reg64 reg_ps = r9;       // pix_stride, bytes
    const Xbyak::Reg64 reg_ps3 = r10;     // 3 * pix_stride
    // row_taps kernels: the column stride (pix_stride / row_step) and 3 times it.
    const Xbyak::Reg64 reg_cs = r10;
    const Xbyak::Reg64 reg_cs3 = r12;
    const Xbyak::Reg64 reg_coff = r11;    // the channel block's src byte offset (in the pixel)
    const Xbyak::Reg64 reg_soff = rdi;    // block's src offset + reg_coff (rdi: args, after the prologue)
    const Xbyak::Reg64 reg_t = rax;       // tap index (tap loop), scratch elsewhere
    const Xbyak::Reg64 reg_src = rbx;     // pixel 0 of tap t at the block
    const Xbyak::Reg64 reg_src4 = r12;    // pixel 4
    const Xbyak::Reg64 reg_w = r13;       // tap t's weight row
    const Xbyak::Reg64 reg_acc = r14;     // acc row 0 at the block
    const Xbyak::Reg64 reg_ldc = r15;     // acc_ld * 4
    // Stack frame (below the saved registers).
    static constexpr int kFrameChannels = 0;  // args->channels
    static constexpr int kFrameSrcOff = 8;    // this block's src byte offset
    static constexpr int kFrameAcc = 16;      // this block's acc row 0
    static constexpr int kFrameArgs = 24;     // the args pointer (fused epilogue)
    // Blocks left: on the stack, not in rbp, which keeps the frame pointer
    // chain that perf unwinds through (ANVIL_JIT_PROFILE=perf).
    static constexpr int kFrameBlocks = 32;
    // Byte-dot kernels: the pass's acc row 0 at pixel 0, and comp[4].
    static constexpr int kFrameAccCh = 40;
    // Output rows (dw_ukernel_args::nrows): rows left, this row's src
    // offset (byte-dot kernels: channel block included) and acc row 0.
    static constexpr int kFrameRowsLeft = 48;
    static constexpr int kFrameRowSrc = 56;
    static constexpr int kFrameRowAcc = 64;
    static constexpr int kFrameComp = 72;
    // G > 1: the built weight vectors [kw][j], 64 bytes each.
    static constexpr int kFrameW = kFrameComp + 4 * 64;
    static constexpr int kFrame = kFrameW + conv::kDwMaxRowTaps * 4 * 64;
    // At the store the tap registers are free: row 4 and 3 * acc_ld * 4.
    const Xbyak::Reg64 reg_acc4 = r12;
    const Xbyak::Reg64 reg_ldc3 = rbx;
};

}  // namespace anvil::jit
