// The depthwise-convolution micro-kernel contract (groups = IC = OC,
// one input and one output channel per group), shared by the JIT
// (AVX-512) and portable (Highway, scalar) backends.  Channels sit in
// vector lanes; a call computes the raw accumulators of `nblocks` blocks of
// `m` output pixels each, consecutive along one output row, that all read
// the same list of taps.  Padding never reaches a kernel: the driver lists
// only the taps that are in bounds for every pixel of the call (edge
// pixels get calls of their own with their own list).
#pragma once
#include <cstddef>
#include <cstdint>

namespace anvil::conv {

// What src holds and what acc receives.
enum class dw_kind : uint8_t {
    f32 = 0,   // src f32,  weights f32,   acc f32 (fma)
    bf16 = 1,  // src bf16, weights f32 (exact bf16 values widened at pack), acc f32 (fma)
    u8 = 2,    // src u8,   weights int32 (s8 widened at pack), acc int32
    s8 = 3,    // src s8,   weights int32, acc int32
};

constexpr int kDwMaxM = 8;        // pixels per block (register block)
constexpr int kDwLanes = 16;      // channels per vector; packed weights padded to it
constexpr int kDwMaxRowTaps = 5;  // dw_ukernel_desc::row_taps at most
constexpr int kDwMaxRowStep = 2;  // dw_ukernel_desc::row_step at most

// One call, for pixel r in [0, nblocks * m) and channel c in [0, channels)
// (pixel r is pixel r % m of block r / m; blocks are computed one after
// the other, each exactly as a call with nblocks = 1 whose src_taps are
// advanced by b * m * pix_stride bytes and acc by b * m * acc_ld elements):
//   acc(r, c) = sum over t in [0, ntaps) of  X(t, r, c) * W(t, c)
// in increasing t (f32: acc = fma(X, W, acc) starting from +0.0f;
// int: exact int32, wrapping modulo 2^32), where
//   X(t, r, c) = src value at  src_taps[t] + r * pix_stride + c * elem_bytes
//                (u8 / s8 minus zero_point, computed in int32; f32 and
//                bf16 ignore zero_point; bf16 widened exactly to f32)
//   W(t, c)    = ((const float or int32_t *) w_taps[t])[c]
//   acc(r, c)  = ((float or int32_t *) acc)[r * acc_ld + c]
// ntaps == 0 gives acc = 0.  Only channels [0, channels) of acc are
// written and only those of src read (a tail of channels % 16 uses masked
// accesses), so src may end right after the last channel.  Weight rows
// hold a multiple of 16 entries (zero-padded) and may be read in full.
struct dw_ukernel_args {
    const uint8_t *const *src_taps;  // ntaps pointers (pixel 0, channel 0 of each tap)
    const void *const *w_taps;       // ntaps pointers (channel 0 of each tap's weight row)
    void *acc;
    int64_t ntaps;
    int64_t pix_stride;  // bytes between the src of consecutive output pixels (SW * IC * elem
                         // along a row; SH * IW * IC * elem down a column of edge pixels)
    int64_t channels;    // >= 1
    int64_t acc_ld;      // elements between acc rows (>= channels)
    int64_t m;           // 1..kDwMaxM (generic kernels; JIT kernels are specialised on it)
    int64_t nblocks;     // blocks of m pixels (see above); < 1: nothing is written
    int32_t zero_point;  // u8 / s8 only
    int32_t reserved;
    // Fused epilogue (desc.epi != 0; backends with supports_fused_epilogue()
    // only).  Instead of writing acc, pixel r's channel c is finished and
    // stored at dst + r * dst_ld + c * out_bytes (dst_ld in bytes, the acc
    // step of the call: blocks advance by m * dst_ld), element by element
    // as lowp::pp_block_apply (bit-identical):
    //   x = float(acc) (int kinds) | acc (f32 / bf16)
    //   x = x * scales[c] (DW_EPI_SCALE_N) | x * scales[0] (otherwise; the
    //       driver points at 1.0f when the chain has no scale: exact)
    //   x = x + bias[c] (DW_EPI_BIAS)
    //   x = relu(x) (DW_EPI_RELU: x <= 0 -> +0) | leaky_relu(x, alpha)
    //       (DW_EPI_LEAKY: x > 0 ? x : alpha * x) | clip(x, alpha, beta)
    //       (DW_EPI_CLIP, both bits: x < alpha -> alpha, then beta < x ->
    //       beta; relu6 is clip(0, 6))
    //   x = x + dst_zero_point (DW_EPI_ZP)
    //   dst = convert(x) to the output type (f32; bf16 RNE, NaN quiet;
    //         u8 / s8: NaN -> 0, clamped, rounded to nearest even)
    // scales and bias point at channel 0 of the call (read with masks, so
    // they may end at the last channel).  No zero-point compensation: the
    // kernel subtracts the source zero point itself.
    uint8_t *dst;
    int64_t dst_ld;
    const float *scales;
    const float *bias;
    float dst_zero_point;
    float alpha;  // DW_EPI_LEAKY's slope; DW_EPI_CLIP's low bound
    float beta;   // DW_EPI_CLIP's high bound
    // Byte-dot kernels, and every kernel of a backend whose
    // supports_rows() is true (the others ignore these and take one row):
    // the call is repeated for
    // output rows q in [0, max(nrows, 1)), row q exactly as a call whose
    // src_taps are advanced by q * src_row_step bytes and whose acc (or
    // dst) by q * acc_row_step bytes; the weights and the rest are the
    // same, so a kernel prepares its weights once for all rows, and a
    // driver may hand a kernel a narrow channel block of several rows
    // (their source rows then stay in L1 from one output row to the next).
    int64_t nrows;
    int64_t src_row_step;
    int64_t acc_row_step;
};

// dw_ukernel_desc::epi: bits 0..2 the output type (0: no epilogue, acc as
// above; else lowp::EPI_F32 / EPI_BF16 / EPI_U8 / EPI_S8 = 1..4), then flags.
enum : uint8_t {
    DW_EPI_OUT_MASK = 7,
    DW_EPI_SCALE_N = 8,
    DW_EPI_BIAS = 16,
    DW_EPI_RELU = 32,
    DW_EPI_LEAKY = 64,
    DW_EPI_CLIP = DW_EPI_RELU | DW_EPI_LEAKY,  // the two are exclusive: both mean clip
    DW_EPI_ZP = 128,
};

using dw_ukernel_fn = void (*)(const dw_ukernel_args *);

// What a JIT kernel is specialised on.  POD, hashed bytewise, every byte set.
struct dw_ukernel_desc {
    uint8_t tier;      // anvil_isa_t the kernel was made for
    dw_kind kind;
    uint8_t m;         // 1..kDwMaxM
    uint8_t flags;     // DW_FLAG_* below
    // 0, or R in 1..kDwMaxRowTaps: the caller promises that the taps come
    // in groups of R along a row, S = row_step taps per pixel step:
    // ntaps % R == 0, pix_stride % S == 0 and src_taps[g R + k] ==
    // src_taps[g R] + k * (pix_stride / S) for k < R (the taps of one
    // kernel row when kw steps are pix_stride / S apart: S = 1 for stride
    // 1, S = 2 for stride 2).  The result is the same formula; a kernel
    // may read only src_taps[g R] and load each src vector once for the
    // taps that use it (pixel r, tap k reads column S r + k of the group).
    // Portable kernels ignore both.
    uint8_t row_taps;
    uint8_t row_step;  // 0 when row_taps == 0, else S in 1..kDwMaxRowStep
    // 1 (int kinds only): the caller promises every weight and every
    // X(t, r, c) (src minus the zero point when subtracted) lies in
    // [-32768, 32767], so a kernel may multiply in 16 bits (exact:
    // vpdpwssd); same result.  Portable kernels ignore it.
    // 2..5 (dw_byte_dot_mode(G), G = 1..4 kernel rows; int kinds,
    // row_taps > 0, only from backends with supports_byte_dot()): every
    // weight is an s8 value and w_taps point at rows in the byte-dot form
    // (dw_byte_dot_entry): W(t, c) is byte (c / 16) % 4 of entry c,
    // sign-extended.  G > 1 also promises ntaps == G * row_taps: the call's
    // taps are exactly G kernel rows (row k: taps k R .. k R + R - 1).
    // Same result; the kernel multiplies raw source bytes by weight bytes
    // (vpdpbusd), G > 1 the G rows' bytes in one instruction, and
    // subtracts zero point x sum of the weights once per call.
    // Kind bf16: 0, or dw_byte_dot_mode(G) (G = 1..4, row_taps > 0, only
    // from backends with supports_bf16_pair_dot()): a pair-dot kernel
    // (dw_pair_pos below).  Its taps are exactly G kernel rows (ntaps == G
    // R, row i the taps i R .. i R + R - 1), taken in pairs of rows (2q,
    // 2q + 1), the last row alone when G is odd; w_taps[2 q R + k] points
    // at the pair-form weight row of pair q, tap k, and the other w_taps
    // entries are not read.  acc(r, c) = +0, then for each pair q in
    // order, for k = 0 .. R - 1:
    //   acc = (acc + X(2 q R + k, r, c) W1) + X((2 q + 1) R + k, r, c) W0
    // with W1 / W0 the high / low bf16 of the pair entry (W0 = 0 and no X
    // for a row alone), each addition rounded to fp32 (RNE), the products
    // exact: vdpbf16ps' order (element 1 first).  vdpbf16ps also reads
    // denormal inputs as zero and flushes denormal results, so results may
    // differ from this formula where denormals occur.
    uint8_t narrow_int;
    // Fused epilogue: 0 none; else output type | DW_EPI_* flags (see
    // dw_ukernel_args::dst).  Only backends with supports_fused_epilogue().
    uint8_t epi;
};
static_assert(sizeof(dw_ukernel_desc) == 8, "dw_ukernel_desc must stay 8 packed bytes");

// dw_ukernel_desc::flags.
enum : uint8_t {
    DW_FLAG_ZERO_POINT = 1,  // subtract args->zero_point (int kinds only)
    // Fused epilogue without DW_EPI_SCALE_N only: the chain has no scale;
    // the kernel neither reads args->scales nor multiplies (x * 1.0f is x:
    // the same result).
    DW_FLAG_NO_SCALE = 2,
};
inline bool dw_has_zero_point(const dw_ukernel_desc &d) { return (d.flags & DW_FLAG_ZERO_POINT) != 0; }

constexpr uint8_t DW_INT_NARROW16 = 1;   // dw_ukernel_desc::narrow_int values
constexpr uint8_t DW_INT_BYTE_DOT = 2;   // .. DW_INT_BYTE_DOT + kDwMaxDotRows - 1
constexpr int kDwMaxDotRows = 4;         // kernel rows one byte-dot instruction takes
inline uint8_t dw_byte_dot_mode(int rows) { return uint8_t(DW_INT_BYTE_DOT + rows - 1); }
// G of a byte-dot descriptor's narrow_int; 0 when it is not one.
inline int dw_byte_dot_rows(uint8_t narrow_int) {
    return narrow_int >= DW_INT_BYTE_DOT ? narrow_int - DW_INT_BYTE_DOT + 1 : 0;
}

// Entry c of a byte-dot weight row (dw_ukernel_desc::narrow_int ==
// DW_INT_BYTE_DOT) for the s8 weight w of channel c (c counted from the
// call's channel 0; the driver's calls start at multiples of 64): w's
// byte at byte (c / 16) % 4, the other bytes zero.  A zmm of 16 entries
// then holds, in dword lane l, channel 16 j + l's weight in byte j % 4,
// which is where the kernel's byte permutation of 64 source channels puts
// channel 16 j + l.
inline int32_t dw_byte_dot_entry(int32_t w, int64_t c) {
    return int32_t(uint32_t(uint8_t(w)) << (8 * ((c >> 4) & 3)));
}

// Pixels (acc rows) one call computes: nblocks * m.
inline int64_t dw_call_rows(const dw_ukernel_args &a) { return a.nblocks > 0 ? a.nblocks * a.m : 0; }

// Pair-form weight rows (bf16 pair-dot kernels): one uint32 entry per
// channel, the channels' 32-channel slots in order, 32 entries each (the
// row padded with zero entries to a multiple of 32).  Within a slot,
// channel i sits at entry dw_pair_pos(i): the order in which vpunpcklwd /
// vpunpckhwd of two rows' 32 bf16 channels leave their word pairs (each
// 128-bit lane of the low half takes channels 8 q .. 8 q + 3, of the
// high half 8 q + 4 .. 8 q + 7).  A 16-channel slot (the last one) reads
// entries 0..7 and 16..23, which hold its channels in the same order.
inline int64_t dw_pair_pos(int64_t c) {
    const int64_t i = c & 31, q = i >> 3, l = i & 7;
    return (c & ~int64_t(31)) + (l < 4 ? 4 * q + l : 16 + 4 * q + l - 4);
}
// The entry of the pair (first row's bf16 weight, second row's): the first
// in the high half (vdpbf16ps' element 1, added first); second = 0 for a
// row alone.
inline uint32_t dw_pair_entry(uint16_t first, uint16_t second) { return uint32_t(first) << 16 | second; }

inline int dw_src_bytes(dw_kind k) {
    return k == dw_kind::f32 ? 4 : k == dw_kind::bf16 ? 2 : 1;
}

}  // namespace anvil::conv
