#include "conv/conv_plan.h"

#include "gemm/backend.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_pack.h"

namespace anvil::conv {
namespace {

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

void make_conv_plan(const conv_geom &g, anvil_data_type_t src_dt, conv_plan *p) {
    p->g = g;
    p->src = src_dt == anvil_dt_f32    ? src_elem::f32
             : src_dt == anvil_dt_bf16 ? src_elem::bf16
             : src_dt == anvil_dt_u8   ? src_elem::u8
                                       : src_elem::s8;
    p->eb = p->src == src_elem::f32 ? 4 : p->src == src_elem::bf16 ? 2 : 1;
    p->src_eb = p->eb;
    if (g.ICg == 1 && g.OCg == 1) {
        p->path = conv_path::depthwise;
        p->dw_cpad = round_up(g.IC, 16);
        p->weights_bytes = g.taps() * p->dw_cpad * 4;
        if (p->eb == 1) {  // int8: the byte-dot rows too
            p->dw_dot_offset = p->weights_bytes;
            p->weights_bytes *= 2;
        }
        if (p->src == src_elem::bf16) {  // the pair-form rows too, both variants
            p->dw_pair_cpad = round_up(g.IC, 32);
            p->dw_pair_offset = p->weights_bytes;
            p->weights_bytes += 2 * g.taps() * p->dw_pair_cpad * 4;
        }
        p->Hp = g.IH;
        p->Wp = g.IW;
        p->Cv = g.IC;
        p->ICgp = 1;
        return;
    }
    const bool f32 = p->src == src_elem::f32;
    p->path = f32 ? conv_path::gemm_f32 : conv_path::gemm_lp;
    p->lp = p->src == src_elem::bf16 ? lowp::lp_kind::bf16 : lowp::lp_kind::u8s8;
    // Widening costs a pass over the source (2 bytes read, 4 written per
    // element); it pays where each source element feeds enough multiply-
    // adds (OCg x taps / strides).  Measured on the Intel Xeon VM, 1
    // thread, MobileNet-v2 / ResNet-50 bf16 layers widened / not: 1x1
    // 32 -> 16 channels (16 per element) 0.90x, 96 -> 24 1.34x, 144 -> 24
    // 1.22x, 16 -> 96 1.47x, 3x3 stride 2 over 3 channels (72) 1.09x,
    // ResNet-50's layers 1.12-1.77x oneDNN (from about 1.0x).
    const int64_t madds_per_elem = g.OCg * g.taps() / (g.SH * g.SW);
    p->widen_a = p->src == src_elem::bf16 &&
                 lowp::widen_bf16_a_when(lowp::select_lp_backend(p->lp),
                                         madds_per_elem >= kMinWidenMaddsPerElem);
    if (p->widen_a) p->eb = 4;
    p->gk = f32 ? 1 : lowp::group_k(p->lp);
    p->ICgp = round_up(g.ICg, p->gk);
    p->fold_kw = g.G == 1 && g.DW == 0 && g.KW > 1;
    // Packed kernel rows (conv_plan::row_k) where channel padding would
    // pad every tap: chosen from the geometry and types alone, so the
    // packed bytes do not depend on the ISA cap.
    const bool packed_rows = !f32 && p->fold_kw && g.ICg % p->gk != 0;
    if (packed_rows) p->ICgp = g.ICg;
    p->row_k = packed_rows ? round_up(g.KW * g.ICg, p->gk) : g.KW * p->ICgp;
    p->row_tail = packed_rows ? g.KW * g.ICg % p->gk : 0;
    // A call of a few k-groups costs more to set up than it computes (the
    // IC = 3 first layers, small groups): then every tile gathers its
    // im2col rows and runs as one call over all of K.
    const int64_t k_per_call = p->fold_kw ? p->row_k : p->ICgp;
    const int64_t calls_per_tile = p->fold_kw ? g.KH : g.taps();
    // Kernels that reduce over a tile's kernel rows in one call (K
    // segments: fold_kw, or KW = 1) pay that setup once, not per row.
    const bool one_call = (p->fold_kw || g.KW == 1) &&
                          (f32 ? gemm::select_backend().supports_k_segments()
                               : lowp::select_lp_backend(p->lp).supports_k_segments());
    // bf16 kernel rows that end in half a pair are read in place only by
    // kernels that zero its missing element (k_tail, JIT AVX-512);
    // elsewhere their im2col rows are gathered, zeros there (row_tail).
    const bool bf16_tail = p->row_tail != 0 && p->lp == lowp::lp_kind::bf16;
    const bool tail_in_place = bf16_tail && one_call && lowp::select_lp_backend(p->lp).supports_k_tail();
    p->im2col_all = (!one_call && k_per_call < (f32 ? kMinInPlaceKF32 : kMinInPlaceK) && calls_per_tile > 1) ||
                    (bf16_tail && !tail_in_place);
    // Spatial padding is materialised too: one pass over the source costs
    // less than gathering the edge pixels (a quarter of a 14 x 14 map) one
    // by one, and every tile then reads its taps in place.  (fp32 calls
    // with K-segment kernels may skip the view: edge_patchable.)
    const bool padded = g.PT || g.PL || g.PB || g.PR;
    p->edge_patchable = f32 && padded && one_call && !p->im2col_all && p->ICgp == g.ICg;
    // (A row tail's dword reads up to 3 bytes past the window: the view
    // keeps slack after its last pixel, the caller's source may not.)
    p->copy_view = p->im2col_all || padded || p->widen_a || p->row_tail != 0 ||
                   (!f32 && (p->src == src_elem::s8 || p->ICgp != g.ICg));
    p->Cv = p->copy_view ? g.G * p->ICgp : g.IC;
    p->Hp = p->copy_view ? g.IH + g.PT + g.PB : g.IH;
    p->Wp = p->copy_view ? g.IW + g.PL + g.PR : g.IW;
    p->K = p->fold_kw ? g.KH * p->row_k : g.taps() * p->ICgp;
    p->np = (g.OCg + kConvNR - 1) / kConvNR;
    int64_t bytes;
    if (f32) {
        bytes = p->np * p->K * kConvNR * 4;
    } else {
        bytes = lowp::packed_b_bytes(p->lp, p->K, g.OCg);
        if (p->lp == lowp::lp_kind::u8s8) {
            p->colsum_offset = round_up(bytes, 64);
            bytes = p->colsum_offset + p->np * kConvNR * 4;
        }
    }
    p->group_bytes = round_up(bytes, 64);
    p->weights_bytes = p->group_bytes * g.G;
}

}  // namespace anvil::conv
