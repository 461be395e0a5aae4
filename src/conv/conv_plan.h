// What a conv2d handle decides once, at creation: the validated geometry,
// which path runs it and how its weights are laid out.
//
// Paths:
//   depthwise  groups = IC = OC: channels in vector lanes (dw_ukernel.h)
//   gemm       everything else, as an implicit GEMM per group: rows are
//              output pixels, columns output channels, K walks the taps
//              (kh, kw) and the group's input channels, in that order.  A
//              micro-kernel call reads A straight from the NHWC source:
//              the m pixels of a tile are SW*IC elements apart, and one
//              call covers one tap (or a whole kernel row when KW taps
//              are contiguous in memory: G == 1, no horizontal dilation).
// The int8 and bf16 GEMMs use the lp micro-kernels (lp_ukernel.h: K in
// dword groups), fp32 the sgemm ones (ukernel.h).  When the convolution has
// spatial padding, or the lp kernels cannot read the source in place (s8
// source: shifted by +128 for vpdpbusd; IC/G not a multiple of the
// k-group: padded with zeros; bf16 kernels that read A widened to fp32),
// the source is first copied into a "view" with the padding materialised
// (pad value = the source zero point) and those fixed, so every tap of
// every pixel is in bounds and the kernels never see a bound.  Layers
// with little K per call gather im2col rows from the view instead
// (im2col_all).
#pragma once
#include <cstdint>

#include "anvil/anvil.h"
#include "lowp/lp_ukernel.h"

namespace anvil::conv {

struct conv_geom {
    int64_t N = 0, G = 1;
    int64_t IC = 0, IH = 0, IW = 0, OC = 0, OH = 0, OW = 0;
    int64_t KH = 0, KW = 0, SH = 1, SW = 1;
    int64_t PT = 0, PL = 0, PB = 0, PR = 0, DH = 0, DW = 0;
    int64_t ICg = 0, OCg = 0;  // channels per group
    int64_t taps() const { return KH * KW; }
    int64_t pixels() const { return N * OH * OW; }
};

enum class conv_path : uint8_t { gemm_f32, gemm_lp, depthwise };

// Element kinds of the source as stored.
enum class src_elem : uint8_t { f32, bf16, u8, s8 };

struct conv_plan {
    conv_geom g;
    conv_path path = conv_path::gemm_f32;
    src_elem src = src_elem::f32;
    lowp::lp_kind lp = lowp::lp_kind::bf16;  // gemm_lp only
    int gk = 1;               // k elements per group (1 for fp32, 2 bf16, 4 int8)
    int eb = 4;               // bytes per source element as the kernels read it (the view's)
    int src_eb = 4;           // ... as the caller stores it
    // bf16 on a CPU whose vdpbf16ps is slow (lowp::widen_bf16_a_when):
    // the view holds the source widened to fp32 (eb = 4) and the kernels
    // are the a_f32 ones (lp_ukernel.h), which give the same bits.
    bool widen_a = false;
    // Source view (see above): when copy_view, the kernels read a padded
    // copy N x Hp x Wp x Cv; otherwise the source itself (Hp = IH, ...).
    bool copy_view = false;
    // fp32 with K-segment kernels over a padded source (conv_gemm.cpp,
    // run_row_patched): the view's padding may instead be materialised
    // only for the tiles of an output row that reach into it, each in a
    // small patch of its KH source rows, while the other tiles read the
    // source in place.  Whether a call does so is decided per call (it
    // pays when each view row would be built once anyway).
    bool edge_patchable = false;
    int64_t Hp = 0, Wp = 0, Cv = 0;
    int64_t ICgp = 0;         // channels per group in the view (multiple of gk, or see row_k)
    bool fold_kw = false;     // one call per kernel row (K = row_k)
    // K elements per kernel row in the packed weights: KW * ICgp, or for
    // an lp layer with fold_kw whose ICg is not a multiple of gk (the
    // stems' 3 channels) round_up(KW * ICg, gk) with ICgp = ICg -- the
    // kernel row's KW x ICg elements lie back to back in the source, so
    // the view needs no channel padding and K no per-tap padding (bf16
    // 3x3 over 3 channels: 10 per row, not 12).  Row k of a group's
    // weights: kh * row_k + kw * ICgp + ic.
    int64_t row_k = 0;
    // Valid elements in the last k-group of such a kernel row: 0 (whole
    // groups) or KW * ICg mod gk.  Read in place, that group's dword takes
    // the next pixel's first channels too, meeting zero weights: harmless
    // for int8, but a bf16 NaN or Inf times 0 is NaN, so bf16 reads it in
    // place only with kernels that zero that element (lp_ukernel_desc::
    // k_tail, JIT AVX-512) and otherwise gathers im2col rows with zeros
    // there.
    int64_t row_tail = 0;
    bool im2col_all = false;  // every tile gathers im2col rows from the view (small K per tap)
    int64_t K = 0;            // KH * KW * ICgp: the GEMM depth per group
    // Packed weights of the gemm paths, per group: np panels of 32 columns
    // (lp: k-group panels, lowp::pack_b layout; f32: K x 32 floats), then
    // for int8 the column sums (np * 32 int32).  Depthwise: KH*KW rows of
    // Cpad = round_up(C, 16) f32 (f32 and bf16) or int32 (int8); int8
    // then has the same rows again in the byte-dot form
    // (conv::dw_byte_dot_entry) from dw_dot_offset bytes; bf16 then has
    // pair-form rows (conv::dw_pair_pos / dw_pair_entry, dw_pair_cpad
    // entries each) from dw_pair_offset bytes: [alone][kh][kw], the
    // pair (kh, kh + 1) for alone = 0 (kh + 1 < KH), (kh, none) for 1.
    int64_t np = 0;
    int64_t group_bytes = 0;  // one group's panels (+ column sums), 64-aligned
    int64_t colsum_offset = 0;  // within a group block; 0 when none
    int64_t dw_cpad = 0;
    int64_t dw_dot_offset = 0;  // 0 when none (f32 / bf16)
    int64_t dw_pair_cpad = 0;    // round_up(C, 32) (bf16), else 0
    int64_t dw_pair_offset = 0;  // 0 when none (all but bf16)
    int64_t weights_bytes = 0;  // after the header
};

constexpr int kConvNR = 32;  // panel width of the packed weights (columns)
// Below this many k elements per tap call, tiles gather im2col rows.  The
// fp32 kernels' calls are cheaper (no k-group packing, direct stores):
// measured on ResNet-50's conv1, K = 21 per call in place beats the gather.
constexpr int64_t kMinInPlaceK = 64;
constexpr int64_t kMinInPlaceKF32 = 16;
// bf16 sources are widened (conv_plan::widen_a, where the CPU prefers it)
// only when each source element feeds at least this many multiply-adds.
constexpr int64_t kMinWidenMaddsPerElem = 24;

// Fills the plan's derived fields from a validated geometry and types.
void make_conv_plan(const conv_geom &g, anvil_data_type_t src_dt, conv_plan *p);

// Source element at view coordinates: the pad value the view (and the
// im2col rows of edge pixels) use: 0, or the zero point (u8), or the zero
// point + 128 (s8, shifted).
inline int32_t conv_pad_byte(src_elem e, int32_t zero_point) {
    return e == src_elem::s8 ? zero_point + 128 : zero_point;
}

}  // namespace anvil::conv
