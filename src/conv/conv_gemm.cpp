#include "conv/conv_gemm.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "cpu/isa.h"
#include "cpu/store_fence.h"
#include "fallback/hwy_expand.h"
#include "lowp/bf16_convert.h"
#include "lowp/fused_chain.h"
#include "lowp/lp_pack.h"
#include "lowp/lp_scratch.h"
#include "threading/parallel.h"

namespace anvil::conv {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Panels (of 32 output channels) whose accumulators a tile holds at once:
// 12 x 256 fp32 / int32 = 12 KiB, in L1 with the weights' stream.
constexpr int64_t kMaxPanelsPerBlock = 8;

// Work items per thread below which a multi-thread call splits them finer.
constexpr int64_t kItemsPerThread = 4;

// Bytes between the gathered im2col rows: an odd number of cache
// lines, for the reason lowp::a_row_bytes gives.
int64_t im2col_row_bytes(int64_t bytes) {
    int64_t lines = (bytes + 63) / 64;
    if (lines % 2 == 0) ++lines;
    return lines * 64;
}

// Tile kernels (AMX) need their configuration loaded on this thread first.
inline void configure_tiles(const conv_gemm_kernels &k, int acc, int m, int nv) {
    if (k.tile_backend) k.tile_backend->configure_thread(k.lp_tile_config[acc][m][nv]);
}

int64_t panel_width(const conv_plan &p, int64_t panel) {
    return std::min<int64_t>(kConvNR, p.g.OCg - panel * kConvNR);
}

// One panel of each width there is: the first (full unless it is the only
// one) and the last.  Walking all p.np panels instead made creating a
// handle with a huge OC take minutes (found by the fuzzer).
std::array<int64_t, 2> distinct_width_panels(const conv_plan &p) {
    return {0, std::max<int64_t>(0, p.np - 1)};
}

// The source as the kernels read it: a padded / shifted copy when the plan
// says so (filled here, in parallel over its rows), else the caller's.
void fill_view(const conv_plan &p, const uint8_t *src, int32_t zero_point, uint8_t *view) {
    const conv_geom &g = p.g;
    const int eb = p.eb;
    const uint8_t pad = uint8_t(conv_pad_byte(p.src, zero_point));
    const bool shift = p.src == src_elem::s8;
    const int64_t row_bytes = p.Wp * p.Cv * eb;
    threading::parallel_for(g.N * p.Hp, [&](int64_t r) {
        const int64_t n = r / p.Hp, hp = r % p.Hp, ih = hp - g.PT;
        uint8_t *out = view + r * row_bytes;
        // Padding pixels hold the zero point (in the shifted domain for
        // s8); the channel padding of each group is 0 (its weights are 0).
        const bool int8 = p.src == src_elem::u8 || p.src == src_elem::s8;
        if (ih < 0 || ih >= g.IH) {
            std::memset(out, int8 ? pad : 0, size_t(row_bytes));
            return;
        }
        const int64_t left = g.PL * p.Cv * eb, body = g.IW * p.Cv * eb;
        std::memset(out, int8 ? pad : 0, size_t(left));
        std::memset(out + left + body, int8 ? pad : 0, size_t(row_bytes - left - body));
        const uint8_t *in = src + (n * g.IH + ih) * g.IW * g.IC * p.src_eb;
        uint8_t *o = out + left;
        if (p.widen_a) {  // bf16 -> fp32 (exact), channel padding 0.0f
            const auto *in16 = reinterpret_cast<const uint16_t *>(in);
            if (p.ICgp == g.ICg) {
                lowp::convert_bf16_to_f32(in16, reinterpret_cast<float *>(o), g.IW * g.IC);
                return;
            }
            // Odd channel counts (a stem's 3): the pixels spread to ICgp
            // values (zeros after) by the byte shuffle, then widened, a
            // chunk of pixels at a time through a stack buffer.  (A loop
            // per pixel and channel had taken 45% of MobileNet-v2's bf16
            // conv1 on the Intel VM.)
            constexpr int64_t kSpreadElems = 4096;
            if (p.ICgp <= kSpreadElems) {
                uint16_t spread[kSpreadElems];
                const int64_t per = kSpreadElems / p.ICgp, pixels = g.IW * g.G;
                for (int64_t p0 = 0; p0 < pixels; p0 += per) {
                    const int64_t np = std::min(per, pixels - p0);
                    fallback::expand_pixels(in + p0 * g.ICg * 2, np, int(g.ICg * 2),
                                            int(p.ICgp * 2), 0,
                                            reinterpret_cast<uint8_t *>(spread));
                    lowp::convert_bf16_to_f32(spread, reinterpret_cast<float *>(o) + p0 * p.ICgp,
                                              np * p.ICgp);
                }
                return;
            }
            auto *ow = reinterpret_cast<uint32_t *>(o);
            for (int64_t pg = 0; pg < g.IW * g.G; ++pg) {
                const uint16_t *i16 = in16 + pg * g.ICg;
                uint32_t *w = ow + pg * p.ICgp;
                for (int64_t ch = 0; ch < g.ICg; ++ch) w[ch] = uint32_t(i16[ch]) << 16;
                for (int64_t ch = g.ICg; ch < p.ICgp; ++ch) w[ch] = 0;
            }
            return;
        }
        if (p.ICgp == g.ICg && !shift) {
            std::memcpy(o, in, size_t(body));  // same pixel layout
            return;
        }
        // Per pixel and group: ICg values (shifted for s8), then zeros.
        fallback::expand_pixels(in, g.IW * g.G, int(g.ICg * eb), int(p.ICgp * eb),
                                shift ? uint8_t(0x80) : uint8_t(0), o);
    });
}

// Everything one call shares between its workers.
struct call_ctx {
    const conv_plan *p;
    const conv_gemm_kernels *k;
    const uint8_t *src;      // view or the caller's source
    bool contiguous;         // pixels map 1:1 to source pixels (1x1, stride 1, no padding)
    bool row_tiles;          // fused and one call per tile (K segments): run_row_tiles
    bool row_tiles_f32;      // fp32, one call per tile height: run_row_tiles_f32
    int64_t acc_rows_f32;    // rows of one panel the accumulator buffer holds
    bool k_segments;         // the kernels reduce over a tile's kernel rows in one call
    bool patches;            // no view: edge tiles run on patches (run_row_patched)
    // Edge columns (plan_edge_columns): the output rows [band_lo, band_hi)
    // run their pixels [ow_lo, ow_hi) as row tiles, and each of their
    // edge pixels (the others) is a column of tiles down the band, which
    // reads only the taps of each kernel row that are not in the padding.
    bool edge_cols;
    int64_t band_lo, band_hi, ow_lo, ow_hi;
    int64_t edge_units;      // work units after the c.units rows: N x edge pixels
    int64_t seg_rs;          // bytes between those rows' A (k_segments)
    int64_t units;           // pixel units: output rows, or chunks of tiles
    int64_t unit_pixels;     // most pixels per chunk (contiguous, im2col_all)
    int64_t panels_per_block;
    int64_t blocks_per_group;
    int64_t row_bytes_im2col;
    bool pad_zero;           // padding taps add exactly 0 (f32, bf16, u8 with zero point 0)
    const lowp::lp_epilogue *epi;  // nullptr: f32 kernels write dst directly
    float *direct_dst;
    // fp32 kernels that finish the chain into dst ([m][n], the bias
    // variant of this call), or null; with them f32_dst is dst, as it is
    // direct_dst without a chain.
    const gemm::ukernel_fn (*f32_fused)[kConvNR + 1];
    float *f32_dst;
    const uint8_t *weights;
    // Fused epilogue (lp kernels that finish the chain themselves):
    // [accumulate][m][nv] of the right bias variant, or null.
    const lowp::lp_ukernel_fn (*fused)[kConvMaxMR + 1][3];
    uint8_t *dst;
    int out_bytes;
    int32_t col_factor;
    const float *scales;
    bool scales_per_n;
    const float *bias;
    float zero_point;
    float alpha;     // a fused leaky_relu's slope, or a clip's low bound
    float elt_beta;  // a fused clip's high bound
    const uint8_t *binary;  // a fused residual add's operand (element (0, 0)), or null
    float sum_scale = 1.0f, sum_zero_point = 0.0f;  // a fused sum op's (binary: dst)
    int64_t binary_ld;      // its row stride, bytes
    int binary_bytes;       // its element size
    const int32_t *colsum_of(int64_t grp) const {
        return reinterpret_cast<const int32_t *>(weights + grp * p->group_bytes + p->colsum_offset);
    }
};

// One tile: m output pixels starting at global pixel q0, whose source rows
// start at `a` (a_rs bytes apart), or a gathered im2col block.
struct tile {
    int64_t q0, m;
    const uint8_t *a;
    int64_t a_rs;
    bool im2col;
    // A tile of one output row over a view: its output row (for skipping
    // kernel rows that lie wholly in the padding), else -1.
    int64_t oh = -1;
};

// The kernel arguments of a fused-epilogue call (lp kernels that finish
// the chain and store into dst themselves) for panel pn of group grp,
// whose tile starts at global pixel q0: everything but A, the accumulator
// and the K / row extents.
lowp::lp_ukernel_args fused_args(const call_ctx &c, int64_t grp, int64_t pn, int64_t q0) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t w = panel_width(p, pn);
    const int64_t j = grp * g.OCg + pn * kConvNR;  // the panel's first output channel
    lowp::lp_ukernel_args a{};
    a.dst = c.dst + (q0 * g.OC + j) * c.out_bytes;
    a.dst_ld = g.OC * c.out_bytes;
    a.colsum = c.colsum_of(grp) + pn * kConvNR;
    a.col_factor = c.col_factor;
    a.scales = c.scales ? c.scales + (c.scales_per_n ? j : 0) : nullptr;
    a.bias = c.bias ? c.bias + j : nullptr;
    a.zero_point = c.zero_point;
    a.alpha = c.alpha;
    a.beta = c.elt_beta;
    if (c.binary) {
        a.binary = c.binary + q0 * c.binary_ld + j * c.binary_bytes;
        a.binary_ld = c.binary_ld;
    }
    a.sum_scale = c.sum_scale;
    a.sum_zero_point = c.sum_zero_point;
    a.store_mask[0] = uint16_t(w >= 16 ? 0xffff : (1u << w) - 1);
    a.store_mask[1] = uint16_t(w >= 32 ? 0xffff : w > 16 ? (1u << (w - 16)) - 1 : 0);
    return a;
}

// The kernel calls (taps, or kernel rows with fold_kw) [*s_first,
// *s_last] of a tile of output row oh (-1: a tile of several rows) that
// need to run: those before and after only read kernel rows that lie in
// the top / bottom padding, whose value contributes exactly 0 (pad_zero),
// so they are skipped as oneDNN skips them.
void call_range(const call_ctx &c, int64_t oh, int64_t *s_first, int64_t *s_last) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    *s_first = 0;
    *s_last = (p.fold_kw ? g.KH : g.taps()) - 1;
    if (oh < 0 || !c.pad_zero) return;
    const int64_t dh = g.DH + 1;
    const int64_t per_kh = p.fold_kw ? 1 : g.KW;
    const int64_t hv0 = oh * g.SH;  // view row of kh = 0
    int64_t kh_lo = 0, kh_hi = g.KH;
    while (kh_lo < g.KH && hv0 + kh_lo * dh < g.PT) ++kh_lo;
    while (kh_hi > kh_lo && hv0 + (kh_hi - 1) * dh >= g.PT + g.IH) --kh_hi;
    if (kh_lo < kh_hi) {  // else keep every call: a tile wholly in the padding
        *s_first = kh_lo * per_kh;
        *s_last = kh_hi * per_kh - 1;
    }
}

// Runs every panel of one oc block over one tile, into the accumulator
// rows from acc_row0 of acc_buf, then (finish) the epilogue over the rows
// [0, acc_row0 + t.m) of acc_buf: the tiles of a group before the last
// run with finish false, and the last one's call finishes them all.
void run_tile(const call_ctx &c, const tile &t, int64_t grp, int64_t p0, int64_t p1,
              uint8_t *acc_buf, int64_t acc_row0 = 0, bool finish = true) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const uint8_t *wg = c.weights + grp * p.group_bytes;
    const int64_t kcall = t.im2col ? p.K : (p.fold_kw ? p.row_k : p.ICgp);
    const int64_t ncalls = t.im2col ? 1 : (p.fold_kw ? g.KH : g.taps());
    const int64_t dh = g.DH + 1, dw = g.DW + 1;
    const int64_t pix_bytes = p.Cv * p.eb;
    int64_t s_first = 0, s_last = ncalls - 1;
    if (!t.im2col) call_range(c, t.oh, &s_first, &s_last);
    auto a_off = [&](int64_t s) -> int64_t {
        if (t.im2col) return 0;
        if (p.fold_kw) return s * dh * p.Wp * pix_bytes;
        const int64_t kh = s / g.KW, kw = s % g.KW;
        return (kh * dh * p.Wp + kw * dw) * pix_bytes;
    };
    // The accumulators of all panels sit side by side (acc_ld = the block's
    // width), so the epilogue runs once per tile on long row segments.
    const int64_t acc_ld = (p1 - p0) * kConvNR;
    const int64_t j_first = grp * g.OCg + p0 * kConvNR;
    int64_t width = 0;
    uint8_t *const acc_group = acc_buf;
    acc_buf += acc_row0 * acc_ld * 4;  // this tile's rows (4-byte accumulators)
    // The fp32 calls' arguments, set up once per tile: zeroing the struct
    // for each panel (a `rep stos`) cost as much as the rest of the walk
    // (AVX2, 1x1 convolutions over 64 channels: 6x16x64 tiles).
    gemm::ukernel_args fa{};
    fa.a_rs = t.a_rs / 4;
    fa.a_cs = 1;
    fa.ldc = c.direct_dst ? g.OC : acc_ld;
    fa.k = kcall;
    fa.b_ld = kConvNR;
    fa.m = t.m;
    fa.alpha = 1.0f;

    for (int64_t pn = p0; pn < p1; ++pn) {
        const int64_t w = panel_width(p, pn);
        const int64_t col = (pn - p0) * kConvNR;
        width = col + w;
        if (p.path == conv_path::gemm_lp) {
            const uint8_t *panel = wg + pn * (p.K / p.gk) * kConvNR * 4;
            const int nv = int(ceil_div(w, 16));
            const bool fuse = c.fused != nullptr;
            lowp::lp_ukernel_args a =
                fuse ? fused_args(c, grp, pn, t.q0) : lowp::lp_ukernel_args{};
            a.a_rs = t.a_rs;
            a.b_ld = kConvNR * 4;
            a.acc = acc_buf + col * 4;
            a.acc_ld = acc_ld;
            a.kg = kcall / p.gk;
            a.m = t.m;
            a.n = w;
            if (c.k_segments && !t.im2col) {
                // One call reduces over all the kernel rows.
                a.a = t.a + a_off(s_first);
                a.b = panel + (s_first * kcall / p.gk) * kConvNR * 4;
                a.k_segs = s_last - s_first + 1;
                a.a_seg_rs = c.seg_rs;
                if (fuse) {
                    c.fused[0][t.m][nv](&a);
                } else {
                    configure_tiles(*c.k, 0, t.m, nv);
                    c.k->lp[0][t.m][nv](&a);
                }
                continue;
            }
            for (int64_t s = s_first; s <= s_last; ++s) {
                const int acc = s > s_first;
                a.a = t.a + a_off(s);
                a.b = panel + (s * kcall / p.gk) * kConvNR * 4;
                a.accumulate = acc;
                if (fuse && s == s_last) {
                    c.fused[acc][t.m][nv](&a);
                } else {
                    configure_tiles(*c.k, acc, t.m, nv);
                    c.k->lp[acc][t.m][nv](&a);
                }
            }
            continue;
        }
        // fp32: column chunks of the backend's width.
        const float *panel = reinterpret_cast<const float *>(wg) + pn * p.K * kConvNR;
        float *out = c.direct_dst ? c.direct_dst + t.q0 * g.OC + j_first + col
                                  : reinterpret_cast<float *>(acc_buf) + col;
        gemm::ukernel_args &a = fa;
        for (int64_t c0 = 0; c0 < w; c0 += c.k->nrb) {
            const int64_t n = std::min<int64_t>(c.k->nrb, w - c0);
            a.n = n;
            a.c = out + c0;
            // (fp32 kernels with K segments never get here: run_row_tiles_f32
            // takes every tile they could reduce in one call.)
            for (int64_t s = s_first; s <= s_last; ++s) {
                const int acc = s > s_first;
                a.a = reinterpret_cast<const float *>(t.a + a_off(s));
                a.b = panel + s * kcall * kConvNR + c0;
                a.beta = acc ? 1.0f : 0.0f;
                c.k->f32[acc][t.m][n](&a);
            }
        }
    }
    if (c.direct_dst || c.fused || !finish) return;
    lowp::lp_block blk{};
    blk.acc = acc_group;
    blk.acc_ld = acc_ld;
    blk.i0 = t.q0 - acc_row0;
    blk.j0 = j_first;
    blk.m = acc_row0 + t.m;
    blk.n = width;
    blk.colsum = p.colsum_offset
                     ? reinterpret_cast<const int32_t *>(wg + p.colsum_offset) + p0 * kConvNR
                     : nullptr;
    c.epi->apply(blk);
}

// Which taps of each kernel row a run of tiles reads (fold_kw), and how
// far apart its pixels are.  The default: every tap, consecutive pixels.
// An edge column (c.edge_cols) reads taps [kw_lo, kw_lo + nkw) -- the
// others lie in the left / right padding and add exactly 0 -- for pixels
// one output row (q_step = OW pixels) apart.
struct tap_window {
    int64_t kw_lo = 0;
    int64_t nkw = -1;  // -1: all KW
    int64_t q_step = 1;
};

// K per kernel-row segment in full, and the part of it a window reads.
inline int64_t seg_k_full(const conv_plan &p) { return p.fold_kw ? p.row_k : p.ICgp; }
inline int64_t seg_k_read(const conv_plan &p, const tap_window &win) {
    return p.fold_kw && win.nkw >= 0 ? win.nkw * p.ICgp : seg_k_full(p);
}

// len consecutive output pixels from global pixel q0, all of one output
// row or all of a 1x1 convolution's contiguous unit (or, with a tap
// window, len pixels win.q_step apart), with a fused epilogue.  The pixels
// split into ceil(len / mr) near-equal tiles (the first `extra` a row
// taller), and each panel takes one kernel call per
// tile height (args.m_tiles; tile i's A starts i tiles of rows a_rs apart
// further on), each reducing over the calls [s_first, s_last] as K segments
// (a single call when there is one).  Near-equal, not mr-row tiles and a
// rest: a 14-pixel row as 12 + 2 leaves the 2-row tile 4 accumulator
// chains, too few to hide the dot-product latency, and it costs about as
// much as a 6-row one (bf16 res4a_branch2b at 77% of peak); 7 + 7 keeps 14.
// Small K (1x1 convolutions over 16..32 channels, the IC = 3 first layers)
// makes a tile a few dozen cycles of arithmetic, so the per-call cost of
// the tile-by-tile walk would otherwise dominate.
void run_row_tiles(const call_ctx &c, const uint8_t *a0, int64_t a_rs, int64_t q0, int64_t len,
                   int64_t grp, int64_t p0, int64_t p1, int64_t s_first, int64_t s_last,
                   uint8_t *acc_buf, const tap_window &win = {}) {
    const conv_plan &p = *c.p;
    const int mr = c.k->mr;
    const uint8_t *wg = c.weights + grp * p.group_bytes;
    const int64_t kfull = seg_k_full(p), kcall = seg_k_read(p, win);  // K per segment
    const int64_t tiles = ceil_div(len, mr);
    const int64_t base = len / tiles, extra = len % tiles;
    for (int64_t pn = p0; pn < p1; ++pn) {
        const int64_t w = panel_width(p, pn);
        const int nv = int(ceil_div(w, 16));
        lowp::lp_ukernel_args a = fused_args(c, grp, pn, q0);
        a.dst_ld *= win.q_step;
        a.binary_ld *= win.q_step;
        a.b = wg + pn * (p.K / p.gk) * kConvNR * 4 +
              ((s_first * kfull + win.kw_lo * p.ICgp) / p.gk) * kConvNR * 4;
        a.b_ld = kConvNR * 4;
        a.a_rs = a_rs;
        a.acc = acc_buf;  // not written: the epilogue stores into dst
        a.acc_ld = kConvNR;
        a.kg = kcall / p.gk;
        a.n = w;
        a.k_segs = s_last - s_first + 1;
        a.a_seg_rs = c.seg_rs;
        a.b_seg_skip = (kfull - kcall) / p.gk;
        a.a = a0;
        if (extra > 0) {  // the taller tiles first
            a.m = base + 1;
            a.m_tiles = extra;
            a.a_tile_rs = a.m * a_rs;
            c.fused[0][a.m][nv](&a);
        }
        if (tiles > extra) {
            const int64_t r0 = extra * (base + 1);
            a.a = a0 + r0 * a_rs;
            a.m = base;
            a.m_tiles = tiles - extra;
            a.a_tile_rs = base * a_rs;
            a.dst += r0 * a.dst_ld;
            if (a.binary) a.binary += r0 * a.binary_ld;
            c.fused[0][a.m][nv](&a);
        }
    }
}

// run_row_tiles for the fp32 kernels: the same near-equal tiles, one
// kernel call per tile height, panel and column chunk (args.m_tiles), each
// reducing over the calls [s_first, s_last] as K segments.  Without a
// chain the kernels store into dst; with one, the pixels go in chunks of
// at most acc_rows (what the accumulator buffer holds of one panel), each
// panel's accumulators land there and the epilogue finishes them in one
// block -- not one call per tile, which cost more than the arithmetic of
// a 1x1 layer over 16..32 channels.
void run_row_tiles_f32(const call_ctx &c, const uint8_t *a0, int64_t a_rs, int64_t q0, int64_t len,
                       int64_t grp, int64_t p0, int64_t p1, int64_t s_first, int64_t s_last,
                       uint8_t *acc_buf, int64_t acc_rows, const tap_window &win = {}) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    // (Pixels win.q_step apart only with a dst the kernels store into: the
    // epilogue's blocks are consecutive pixels.)
    if (!c.f32_dst && len > acc_rows) {
        const int64_t chunks = ceil_div(len, acc_rows);
        for (int64_t t = 0, r0 = 0; t < chunks; ++t) {
            const int64_t rows = len / chunks + (t < len % chunks ? 1 : 0);
            run_row_tiles_f32(c, a0 + r0 * a_rs, a_rs, q0 + r0, rows, grp, p0, p1, s_first, s_last,
                              acc_buf, acc_rows);
            r0 += rows;
        }
        return;
    }
    const int64_t kfull = seg_k_full(p), kcall = seg_k_read(p, win);  // K per segment
    const int64_t tiles = ceil_div(len, c.k->mr);
    const int64_t base = len / tiles, extra = len % tiles;
    const float *wg = reinterpret_cast<const float *>(c.weights + grp * p.group_bytes);
    for (int64_t pn = p0; pn < p1; ++pn) {
        const int64_t w = panel_width(p, pn);
        const int64_t j = grp * g.OCg + pn * kConvNR;  // the panel's first output channel
        const float *panel =
            wg + pn * p.K * kConvNR + (s_first * kfull + win.kw_lo * p.ICgp) * kConvNR;
        float *out = c.f32_dst ? c.f32_dst + q0 * g.OC + j : reinterpret_cast<float *>(acc_buf);
        const int64_t ldc = c.f32_dst ? g.OC * win.q_step : kConvNR;
        const gemm::ukernel_fn(*fns)[kConvNR + 1] = c.f32_fused ? c.f32_fused : c.k->f32[0];
        for (int64_t c0 = 0; c0 < w; c0 += c.k->nrb) {
            const int64_t n = std::min<int64_t>(c.k->nrb, w - c0);
            gemm::ukernel_args a{};
            a.a_rs = a_rs / 4;
            a.a_cs = 1;
            a.ldc = ldc;
            a.k = kcall;
            a.b = panel + c0;
            a.b_ld = kConvNR;
            a.n = n;
            a.alpha = 1.0f;
            a.k_segs = s_last - s_first + 1;
            a.a_seg_rs = c.seg_rs / 4;
            a.b_seg_skip = kfull - kcall;
            a.a = reinterpret_cast<const float *>(a0);
            a.c = out + c0;
            if (c.f32_fused) {
                a.bias = c.bias ? c.bias + j + c0 : nullptr;
                a.binary = c.binary ? reinterpret_cast<const float *>(c.binary) +
                                          q0 * (c.binary_ld / 4) + j + c0
                                    : nullptr;
                a.binary_ld = c.binary_ld / 4 * win.q_step;
                a.elt_alpha = c.alpha;
                a.elt_beta = c.elt_beta;
            }
            if (extra > 0) {  // the taller tiles first
                a.m = base + 1;
                a.m_tiles = extra;
                a.a_tile_rs = a.m * a.a_rs;
                fns[a.m][n](&a);
            }
            if (tiles > extra) {
                const int64_t r0 = extra * (base + 1);
                a.a = reinterpret_cast<const float *>(a0 + r0 * a_rs);
                a.c = out + c0 + r0 * ldc;
                if (a.binary) a.binary += r0 * a.binary_ld;
                a.m = base;
                a.m_tiles = tiles - extra;
                a.a_tile_rs = base * a.a_rs;
                fns[a.m][n](&a);
            }
        }
        if (c.f32_dst) continue;
        lowp::lp_block blk{};
        blk.acc = acc_buf;
        blk.acc_ld = kConvNR;
        blk.i0 = q0;
        blk.j0 = j;
        blk.m = len;
        blk.n = w;
        c.epi->apply(blk);
    }
}

// A patch row's bytes (run_row_patched): whole cache lines.
inline int64_t patch_row_bytes(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// Copies len bytes in 32-byte pieces: may write up to 31 bytes past
// dst + len and read as far past src + len (the im2col rows and the view
// keep that much slack), in exchange for no per-length branching.
inline void copy_pieces(uint8_t *dst, const uint8_t *src, int64_t len) {
    for (int64_t i = 0; i < len; i += 32) std::memcpy(dst + i, src + i, 32);
}

// Gathers the im2col rows of the m output pixels from global pixel q0
// (they may span output rows) for group grp, from the view (padding,
// channel padding and the s8 shift already applied): K = (kh, kw, ic) in
// the packed weights' order.  Packed kernel rows (conv_plan::row_k) get
// zeros after each row's KW x ICg elements -- not the view's next pixel,
// which could hold a NaN for a zero weight to meet.
void gather_view(const call_ctx &c, int64_t q0, int64_t m, int64_t grp, uint8_t *buf) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t pix = p.Cv * p.eb, icpb = p.ICgp * p.eb;
    int64_t n = q0 / (g.OH * g.OW), oh = q0 / g.OW % g.OH, ow = q0 % g.OW;
    for (int64_t r = 0; r < m; ++r, ++ow) {
        if (ow == g.OW) {
            ow = 0;
            if (++oh == g.OH) oh = 0, ++n;
        }
        uint8_t *row = buf + r * c.row_bytes_im2col;
        const uint8_t *s0 = c.src + ((n * p.Hp + oh * g.SH) * p.Wp + ow * g.SW) * pix + grp * icpb;
        const int64_t kh_step = (g.DH + 1) * p.Wp * pix;
        const int64_t row_k_bytes = p.row_k * p.eb;
        if (p.fold_kw && g.KW * icpb <= 32) {
            // G == 1: a kernel row's taps are contiguous; one piece each
            // (and its tail zeroed before the next row's piece goes on).
            for (int64_t kh = 0; kh < g.KH; ++kh) {
                uint8_t *o = row + kh * row_k_bytes;
                std::memcpy(o, s0 + kh * kh_step, 32);
                if (p.row_tail) std::memset(o + g.KW * icpb, 0, 4);  // < gk elements
            }
            continue;
        }
        for (int64_t kh = 0; kh < g.KH; ++kh) {
            const uint8_t *s = s0 + kh * kh_step;
            uint8_t *o = row + kh * row_k_bytes;
            if (p.fold_kw) {
                copy_pieces(o, s, g.KW * icpb);
                if (p.row_tail) std::memset(o + g.KW * icpb, 0, 4);
                continue;
            }
            for (int64_t kw = 0; kw < g.KW; ++kw)
                copy_pieces(o + kw * icpb, s + kw * (g.DW + 1) * pix, icpb);
        }
    }
}

// Row tiles of group 0 through whichever kernels the call has: the fused
// lp kernels (c.row_tiles) or the fp32 ones.
void run_tiles(const call_ctx &c, const uint8_t *a0, int64_t a_rs, int64_t q0, int64_t len,
               int64_t p0, int64_t p1, int64_t s_first, int64_t s_last, uint8_t *acc_buf,
               const tap_window &win = {}) {
    if (c.row_tiles)
        run_row_tiles(c, a0, a_rs, q0, len, 0, p0, p1, s_first, s_last, acc_buf, win);
    else
        run_row_tiles_f32(c, a0, a_rs, q0, len, 0, p0, p1, s_first, s_last, acc_buf, c.acc_rows_f32,
                          win);
}

// One output row of a padded convolution without the view
// (call_ctx::patches).  The row's near-equal tiles that reach into the
// left or right padding -- or all of them, when the row's kernel rows
// all lie in the padding -- run on a patch: their KH source rows with the
// padding materialised as zeros (patch_row_bytes apart); the others read
// the source in place.  Every output element sums the same products in
// the same order as from the view, so the bits are the view's.  Why: with
// few multiply-adds per source element (MobileNet's and ResNet's stems,
// 3 channels) the view's pass over the whole source cost a fifth of the
// layer; a patch is a few KiB that stays in L1.
void run_row_patched(const call_ctx &c, int64_t n, int64_t oh, int64_t p0, int64_t p1,
                     uint8_t *acc_buf, uint8_t *patch) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t dh = g.DH + 1, dw = g.DW + 1;
    const int64_t pix = p.Cv * p.eb;
    const int64_t q_row = (n * g.OH + oh) * g.OW;
    int64_t s_first, s_last;  // one call per kernel row: s is kh
    call_range(c, oh, &s_first, &s_last);
    const int64_t hv0 = oh * g.SH;  // view row of kh = 0
    const bool rows_in = hv0 + s_first * dh >= g.PT && hv0 + s_last * dh < g.PT + g.IH;
    // Pixels [ow_lo, ow_hi) read no padding column.
    const int64_t ow_lo = ceil_div(g.PL, g.SW);
    const int64_t last_col = g.IW - 1 + g.PL - (g.KW - 1) * dw;  // view column of kw = 0
    const int64_t ow_hi = last_col < 0 ? 0 : std::min(g.OW, last_col / g.SW + 1);
    // [left_end, right_begin): the tiles wholly inside, as whole tiles of
    // the row's near-equal tiling (the edge runs keep their tile shapes).
    int64_t left_end = g.OW, right_begin = g.OW;
    if (rows_in && ow_lo < ow_hi) {
        const int64_t tiles = ceil_div(g.OW, c.k->mr);
        const int64_t base = g.OW / tiles, extra = g.OW % tiles;
        bool right_found = false;
        left_end = 0;
        for (int64_t t = 0, s = 0; t < tiles; ++t) {
            const int64_t e = s + base + (t < extra ? 1 : 0);
            if (s < ow_lo) left_end = e;
            if (e > ow_hi && !right_found) right_begin = s, right_found = true;
            s = e;
        }
        if (right_begin <= left_end) left_end = right_begin = g.OW;
    }
    auto patched = [&](int64_t o0, int64_t o1) {
        const int64_t pw = (o1 - o0 - 1) * g.SW + (g.KW - 1) * dw + 1;  // view columns read
        const int64_t prs = patch_row_bytes(pw * pix);
        const int64_t iw0 = o0 * g.SW - g.PL;  // source column of patch column 0
        const int64_t lo = std::clamp<int64_t>(-iw0, 0, pw);
        const int64_t hi = std::clamp<int64_t>(g.IW - iw0, lo, pw);
        const uint8_t *src = c.src;
        for (int64_t kh = s_first; kh <= s_last; ++kh) {
            uint8_t *row = patch + kh * prs;
            const int64_t ih = hv0 + kh * dh - g.PT;
            if (ih < 0 || ih >= g.IH) {
                std::memset(row, 0, size_t(pw * pix));
                continue;
            }
            std::memset(row, 0, size_t(lo * pix));
            std::memcpy(row + lo * pix, src + ((n * g.IH + ih) * g.IW + iw0 + lo) * pix,
                        size_t((hi - lo) * pix));
            std::memset(row + hi * pix, 0, size_t((pw - hi) * pix));
        }
        call_ctx pc = c;
        pc.seg_rs = prs;
        run_tiles(pc, patch + s_first * prs, g.SW * pix, q_row + o0, o1 - o0, p0, p1, s_first,
                  s_last, acc_buf);
    };
    if (left_end > 0) patched(0, left_end);
    if (right_begin > left_end) {
        const uint8_t *a0 =
            c.src + ((n * g.IH + hv0 + s_first * dh - g.PT) * g.IW + left_end * g.SW - g.PL) * pix;
        run_tiles(c, a0, g.SW * pix, q_row + left_end, right_begin - left_end, p0, p1, s_first,
                  s_last, acc_buf);
    }
    if (right_begin < g.OW) patched(right_begin, g.OW);
}

// View pixel (hv, wv) -- padded coordinates -- of group grp: in the view,
// or (edge patches: no view) in the source, for pixels inside it.
const uint8_t *view_pixel(const call_ctx &c, int64_t n, int64_t hv, int64_t wv, int64_t grp) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t pixel = c.patches ? (n * g.IH + hv - g.PT) * g.IW + wv - g.PL
                                    : (n * p.Hp + hv) * p.Wp + wv;
    return c.src + pixel * p.Cv * p.eb + grp * p.ICgp * p.eb;
}

// Bands of at least this many output rows make edge columns worth it: a
// column tile of fewer rows has too few accumulator chains to hide the
// latency of the dot products (2 per row), and the taps it saves cost more.
constexpr int64_t kMinEdgeColumnRows = 4;

// Edge columns (call_ctx::edge_cols).  A pixel near the left or right
// border reads taps in the padding, which add exactly 0 (pad_zero); row
// tiles compute them anyway, because every pixel of a tile shares the K
// segments.  oneDNN skips them.  On 7 x 7 and 14 x 14 maps (3 x 3, pad 1)
// they are a tenth / a twentieth of the work, and anvil's 3 x 3 layers
// there ran at 0.91-0.96x oneDNN on Zen 4 in every type.  So the output
// rows whose kernel rows are all in bounds (the band) run their inner
// pixels as row tiles, and each edge pixel position is one column of
// tiles down the band: its pixels are a source row (SH rows) apart, and
// they read the same taps of each kernel row (B skips the rest,
// args.b_seg_skip).  The products skipped are exact zeros, so every
// output has the bits it had with them (no -0 arises from +0 accumulators).
// Needs kernels that store into dst (their rows a pixel row apart) and
// reduce over K segments, and the kernel rows' taps contiguous (fold_kw).
void plan_edge_columns(call_ctx &c) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    c.edge_cols = false;
    c.edge_units = 0;
    const bool stores_dst = c.row_tiles || (c.row_tiles_f32 && c.f32_dst);
    // (Packed kernel rows, ICgp not a multiple of the k-group: a window of
    // some of a row's taps would not be whole k-groups.)
    if (!stores_dst || !c.k_segments || !p.fold_kw || c.contiguous || p.im2col_all || !c.pad_zero ||
        (g.PL == 0 && g.PR == 0) || p.ICgp % p.gk != 0)
        return;
    const int64_t dh = g.DH + 1;  // (fold_kw: no horizontal dilation)
    c.ow_lo = ceil_div(g.PL, g.SW);
    const int64_t last_col = g.IW - 1 + g.PL - (g.KW - 1);  // view column of kw = 0
    c.ow_hi = last_col < 0 ? 0 : std::min(g.OW, last_col / g.SW + 1);
    c.band_lo = ceil_div(g.PT, g.SH);
    const int64_t last_row = g.IH - 1 + g.PT - (g.KH - 1) * dh;  // view row of kh = 0
    c.band_hi = last_row < 0 ? 0 : std::min(g.OH, last_row / g.SH + 1);
    if (c.ow_lo >= c.ow_hi || c.band_hi - c.band_lo < kMinEdgeColumnRows) return;
    const int64_t edge_pixels = c.ow_lo + g.OW - c.ow_hi;
    for (int64_t e = 0; e < edge_pixels; ++e) {  // each must read some tap
        const int64_t ow = e < c.ow_lo ? e : c.ow_hi + (e - c.ow_lo);
        if (std::min(g.KW, g.IW + g.PL - ow * g.SW) <= std::max<int64_t>(0, g.PL - ow * g.SW)) return;
    }
    c.edge_cols = true;
    c.edge_units = g.N * edge_pixels;
}

// Output row oh (in the band) of image n without its edge pixels.
void run_band_row(const call_ctx &c, int64_t n, int64_t oh, int64_t grp, int64_t p0, int64_t p1,
                  uint8_t *acc_buf) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const uint8_t *a0 = view_pixel(c, n, oh * g.SH, c.ow_lo * g.SW, grp);
    const int64_t a_rs = g.SW * p.Cv * p.eb;
    const int64_t q0 = (n * g.OH + oh) * g.OW + c.ow_lo, len = c.ow_hi - c.ow_lo;
    run_tiles(c, a0, a_rs, q0, len, p0, p1, 0, g.KH - 1, acc_buf);
}

// Edge column `unit` (image, edge pixel position): the band's pixels at
// that position, as tiles down the band, over the taps in bounds.
void run_edge_column(const call_ctx &c, int64_t unit, int64_t grp, int64_t p0, int64_t p1,
                     uint8_t *acc_buf) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t edge_pixels = c.edge_units / g.N;
    const int64_t n = unit / edge_pixels, e = unit % edge_pixels;
    const int64_t ow = e < c.ow_lo ? e : c.ow_hi + (e - c.ow_lo);
    tap_window win;
    win.kw_lo = std::max<int64_t>(0, g.PL - ow * g.SW);
    win.nkw = std::min(g.KW, g.IW + g.PL - ow * g.SW) - win.kw_lo;
    win.q_step = g.OW;
    const uint8_t *a0 = view_pixel(c, n, c.band_lo * g.SH, ow * g.SW + win.kw_lo, grp);
    const int64_t row_bytes = (c.patches ? g.IW : p.Wp) * p.Cv * p.eb;
    const int64_t a_rs = g.SH * row_bytes;
    const int64_t q0 = (n * g.OH + c.band_lo) * g.OW + ow, len = c.band_hi - c.band_lo;
    run_tiles(c, a0, a_rs, q0, len, p0, p1, 0, g.KH - 1, acc_buf, win);
}

// Splits [0, len) into near-equal tiles of at most mr and calls f(start, m).
template <typename F>
void for_tiles(int64_t len, int mr, const F &f) {
    if (len <= 0) return;
    const int64_t nt = ceil_div(len, mr);
    const int64_t base = len / nt, extra = len % nt;
    int64_t s = 0;
    for (int64_t t = 0; t < nt; ++t) {
        const int64_t m = base + (t < extra ? 1 : 0);
        f(s, m);
        s += m;
    }
}

// An item's work, relative to the others' (for splitting the items
// between threads): pixels x kernel-row calls (taps) x panels.
double item_work(const call_ctx &c, int64_t item) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t per_blk = c.units + c.edge_units;
    const int64_t blk = item / per_blk, unit = item % per_blk;
    const int64_t p0 = (blk % c.blocks_per_group) * c.panels_per_block;
    const double panels = double(std::min(p.np, p0 + c.panels_per_block) - p0);
    if (c.contiguous || p.im2col_all)
        return double(g.pixels() * (unit + 1) / c.units - g.pixels() * unit / c.units) * panels;
    if (unit >= c.units) {  // an edge column: the band's rows, its taps in bounds
        const int64_t edge_pixels = c.edge_units / g.N, e = (unit - c.units) % edge_pixels;
        const int64_t ow = e < c.ow_lo ? e : c.ow_hi + (e - c.ow_lo);
        const int64_t nkw = std::min(g.KW, g.IW + g.PL - ow * g.SW) - std::max<int64_t>(0, g.PL - ow * g.SW);
        return double((c.band_hi - c.band_lo) * g.KH) * double(nkw) / double(g.KW) * panels;
    }
    const int64_t oh = unit % g.OH;
    int64_t s_first, s_last;
    call_range(c, p.copy_view ? oh : -1, &s_first, &s_last);
    const bool band = c.edge_cols && oh >= c.band_lo && oh < c.band_hi;
    return double((band ? c.ow_hi - c.ow_lo : g.OW) * (s_last - s_first + 1)) * panels;
}

// Where worker w's range of items starts when items [0, items), of total
// work `total` (item_work), split into nw contiguous ranges of about equal
// work; worker w takes [split_point(w), split_point(w + 1)).  Every worker
// computes its own bounds, the same sums in the same order, so the ranges
// tile [0, items) exactly (and nothing is allocated).  Equal item counts
// were not equal work when the oc blocks differ (8 panels as 3 + 3 + 2:
// at 2 threads one had 72 of 128 panel-rows; u8 res4a_branch2b 0.81x
// oneDNN on the Zen 4 VM, 0.97x after).
int64_t split_point(const call_ctx &c, int64_t items, int64_t nw, int64_t w, double total) {
    if (w <= 0) return 0;
    if (w >= nw) return items;
    const double target = total * double(w) / double(nw);
    double sum = 0.0;
    for (int64_t i = 0; i < items; ++i) {
        const double next = sum + item_work(c, i);
        if (next >= target) return target - sum < next - target ? i : i + 1;
        sum = next;
    }
    return items;
}

// One work item: a pixel unit x an oc block of one group.
void run_item(const call_ctx &c, int64_t item, uint8_t *acc_buf, uint8_t *im2col) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t blk = item / (c.units + c.edge_units), unit = item % (c.units + c.edge_units);
    const int64_t grp = blk / c.blocks_per_group;
    const int64_t p0 = (blk % c.blocks_per_group) * c.panels_per_block;
    const int64_t p1 = std::min(p.np, p0 + c.panels_per_block);
    const int mr = c.k->mr;
    const int64_t pix_bytes = p.Cv * p.eb;
    const int64_t grp_off = grp * p.ICgp * p.eb;
    if (c.contiguous || p.im2col_all) {
        // Near-equal units of at most unit_pixels (49 pixels in units of
        // 48 would leave a unit of 1).
        const int64_t q_begin = g.pixels() * unit / c.units;
        const int64_t len = g.pixels() * (unit + 1) / c.units - q_begin;
        if (c.row_tiles) {
            run_row_tiles(c, c.src + q_begin * pix_bytes + grp_off, pix_bytes, q_begin, len, grp, p0,
                          p1, 0, 0, acc_buf);
            return;
        }
        if (c.row_tiles_f32) {
            run_row_tiles_f32(c, c.src + q_begin * pix_bytes + grp_off, pix_bytes, q_begin, len, grp,
                              p0, p1, 0, 0, acc_buf, c.acc_rows_f32);
            return;
        }
        // Consecutive tiles share one epilogue call over up to kConvMaxMR
        // rows (the accumulator buffer's height): with small K and few
        // columns the call's setup cost as much as a tile's arithmetic
        // (Highway int8, MobileNet-v2's 1x1 layers over 16-32 channels).
        // Tiles are whole pixels' rows, so the results do not change.
        const int64_t group_rows = std::max<int64_t>(mr, kConvMaxMR / mr * mr);
        int64_t acc_row0 = 0;
        for_tiles(len, mr, [&](int64_t s, int64_t m) {
            const int64_t q0 = q_begin + s;
            const bool finish = acc_row0 + m + mr > group_rows || s + m == len;
            if (p.im2col_all) {
                gather_view(c, q0, m, grp, im2col);
                run_tile(c, tile{q0, m, im2col, c.row_bytes_im2col, true}, grp, p0, p1, acc_buf,
                         acc_row0, finish);
            } else {
                run_tile(c, tile{q0, m, c.src + q0 * pix_bytes + grp_off, pix_bytes, false}, grp,
                         p0, p1, acc_buf, acc_row0, finish);
            }
            acc_row0 = finish ? 0 : acc_row0 + m;
        });
        return;
    }
    if (unit >= c.units) {
        run_edge_column(c, unit - c.units, grp, p0, p1, acc_buf);
        return;
    }
    const int64_t n = unit / g.OH, oh = unit % g.OH;
    if (c.edge_cols && oh >= c.band_lo && oh < c.band_hi) {
        run_band_row(c, n, oh, grp, p0, p1, acc_buf);
        return;
    }
    if (c.patches) {  // (im2col: the worker's patch buffer)
        run_row_patched(c, n, oh, p0, p1, acc_buf, im2col);
        return;
    }
    const int64_t q_row = unit * g.OW;
    // Every tap is in bounds: a padded convolution reads a view (padding
    // materialised; with patches it went above), an unpadded one never
    // leaves the source.
    const int64_t hv = oh * g.SH;  // view / source row of tap kh = 0
    const int64_t a_rs = g.SW * pix_bytes;
    const uint8_t *row_a = c.src + ((n * p.Hp + hv) * p.Wp) * pix_bytes + grp_off;
    if (c.row_tiles || c.row_tiles_f32) {
        int64_t s_first, s_last;
        call_range(c, p.copy_view ? oh : -1, &s_first, &s_last);
        if (c.row_tiles)
            run_row_tiles(c, row_a + s_first * c.seg_rs, a_rs, q_row, g.OW, grp, p0, p1, s_first,
                          s_last, acc_buf);
        else
            run_row_tiles_f32(c, row_a + s_first * c.seg_rs, a_rs, q_row, g.OW, grp, p0, p1,
                              s_first, s_last, acc_buf, c.acc_rows_f32);
        return;
    }
    for_tiles(g.OW, mr, [&](int64_t ow0, int64_t m) {
        const uint8_t *a = c.src + ((n * p.Hp + hv) * p.Wp + ow0 * g.SW) * pix_bytes + grp_off;
        tile t{q_row + ow0, m, a, a_rs, false};
        if (p.copy_view) t.oh = oh;
        run_tile(c, t, grp, p0, p1, acc_buf);
    });
}

// An fp32 kernel of the convolution: row-major A read in place, alpha 1,
// beta 0 or 1 (accumulating calls), the call flags and fused ops given.
gemm::ukernel_desc conv_f32_desc(const gemm::backend &be, int m, int n, bool beta_one,
                                 uint8_t flags, uint8_t epi_ops) {
    gemm::ukernel_desc d{};
    d.tier = uint8_t(be.tier());
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    d.a = gemm::a_access::row_major;
    d.beta = beta_one ? gemm::beta_kind::one : gemm::beta_kind::zero;
    d.alpha_one = 1;
    d.flags = flags;
    d.epi_ops = epi_ops;
    return d;
}

// The fp32 chains the JIT kernels finish themselves (gemm::ukernel_args'
// fused epilogue): f32 out, no scales and no zero point, at most one of
// relu / leaky_relu / clip and one residual add of an f32 tensor of dst's
// shape, in either order.  A sum with scale 1 and zero point 0 is that
// residual add with dst itself as the operand (the same fp32 add; each
// element is read just before its one store).  *epi_ops gets the
// descriptor's ops.
bool fuse_f32_chain(const lowp::chain_spec &chain, uint8_t *epi_ops) {
    if (chain.out != lowp::out_type::f32 || !chain.scales.empty() || chain.c_zero_point != 0.0f ||
        chain.ops.size() > 2)
        return false;
    uint8_t codes[2] = {gemm::kUkEpiNone, gemm::kUkEpiNone};
    int eltwise = 0, adds = 0;
    for (size_t t = 0; t < chain.ops.size(); ++t) {
        const lowp::post_op &o = chain.ops[t];
        if (o.is_binary) {
            const bool residual = o.binary == lowp::binary_alg::add && !o.per_n && !o.src_bf16;
            const bool plain_sum = o.is_sum() && o.alpha == 1.0f && o.beta == 0.0f;
            if (!residual && !plain_sum) return false;
            codes[t] = gemm::kUkEpiAdd;
            ++adds;
            continue;
        }
        switch (o.eltwise) {
            case lowp::eltwise_alg::relu: codes[t] = gemm::kUkEpiRelu; break;
            case lowp::eltwise_alg::leaky_relu: codes[t] = gemm::kUkEpiLeaky; break;
            case lowp::eltwise_alg::clip: codes[t] = gemm::kUkEpiClip; break;
            default: return false;
        }
        ++eltwise;
    }
    if (eltwise > 1 || adds > 1) return false;
    *epi_ops = uint8_t(codes[0] | (codes[1] << 3));
    return true;
}

}  // namespace

anvil_status_t prepare_conv_gemm_kernels(const conv_plan &p, const lowp::chain_spec &chain,
                                         conv_gemm_kernels *k) {
    if (p.path == conv_path::gemm_lp) {
        const lowp::lp_backend &be = lowp::select_lp_backend(p.lp);
        k->backend_name = be.name();
        k->mr = std::min(be.max_rows(), kConvMaxMR);
        if (be.uses_tiles()) k->tile_backend = &be;
        k->k_segments = be.supports_k_segments();
        bool nv_needed[3] = {false, false, false};
        for (const int64_t pn : distinct_width_panels(p)) nv_needed[ceil_div(panel_width(p, pn), 16)] = true;
        // bf16 kernel rows read in place that end in half a pair.
        const uint8_t k_tail = !p.im2col_all && p.row_tail && p.lp == lowp::lp_kind::bf16 ? 1 : 0;
        for (int acc = 0; acc < 2; ++acc)
            for (int m = 1; m <= k->mr; ++m)
                for (int nv = 1; nv <= 2; ++nv) {
                    if (!nv_needed[nv]) continue;
                    lowp::lp_ukernel_ref ref;
                    lowp::lp_ukernel_desc d = lowp::make_lp_desc(uint8_t(be.tier()), p.lp, m, nv, acc, p.widen_a);
                    d.k_tail = k_tail;
                    const anvil_status_t st = be.get(d, &ref);
                    if (st != anvil_success) return st;
                    k->lp[acc][m][nv] = ref.fn;
                    k->lp_tile_config[acc][m][nv] = ref.tile_config;
                    k->keep_alive.push_back(ref.keep_alive);
                }
        lowp::fused_chain fc;
        if (!be.supports_fused_epilogue() || !lowp::fuse_chain(chain, &fc)) return anvil_success;
        const uint8_t epi_out = fc.out, epi_flags = fc.flags, epi_ops = fc.ops;
        // Non-temporal stores for an f32 / bf16 output of at least a quarter
        // of the L3, as for fp32 (make_plain below).  Zen 4 VM, 1 thread,
        // MobileNet-v2 mb 8 bf16 block2_expand (19 MB output): see
        // docs/conv.md.
        const conv_geom &g = p.g;
        const bool nt = be.supports_nt_store() && !p.im2col_all &&
                        (epi_out == lowp::EPI_F32 || epi_out == lowp::EPI_BF16) &&
                        g.N * g.OH * g.OW * g.OC * lowp::out_type_bytes(chain.out) >=
                            cpu::info().caches.l3 / 4;
        k->nt_stores = nt;
        for (int bias = 0; bias < 2; ++bias)
            for (int acc = 0; acc < 2; ++acc)
                for (int m = 1; m <= k->mr; ++m)
                    for (int nv = 1; nv <= 2; ++nv) {
                        if (!nv_needed[nv]) continue;
                        lowp::lp_ukernel_ref ref;
                        const uint8_t f = uint8_t(epi_flags | (bias ? lowp::EPI_BIAS : 0));
                        lowp::lp_ukernel_desc d = lowp::make_lp_epi_desc(
                            uint8_t(be.tier()), p.lp, m, nv, acc, epi_out, f, epi_ops, p.widen_a, nt);
                        d.k_tail = k_tail;
                        const anvil_status_t st = be.get(d, &ref);
                        if (st != anvil_success) return st;
                        k->lp_fused[bias][acc][m][nv] = ref.fn;
                        k->keep_alive.push_back(ref.keep_alive);
                    }
        k->fused = true;
        return anvil_success;
    }
    const gemm::backend &be = gemm::select_backend();
    k->backend_name = be.name();
    k->mr = std::min(be.mr(), kConvMaxMR);
    k->nrb = std::min(be.nr(), kConvNR);
    // The beta = 0 kernels take K segments and row tiles when the backend
    // has them (with k_segs = m_tiles = 0 they are plain tile kernels).
    k->k_segments = be.supports_k_segments();
    bool n_needed[kConvNR + 1] = {};
    for (const int64_t pn : distinct_width_panels(p)) {
        const int64_t w = panel_width(p, pn);
        for (int64_t c0 = 0; c0 < w; c0 += k->nrb) n_needed[std::min<int64_t>(k->nrb, w - c0)] = true;
    }
    const conv_geom &g = p.g;
    uint8_t epi_ops = 0;
    const bool fusable = k->k_segments && fuse_f32_chain(chain, &epi_ops);
    // Non-temporal stores (kUkFlagNtStore) for an output of at least a
    // quarter of the L3: its lines would be read from memory before being
    // written (write-allocate), and with the layer's input and the next
    // layer's output beside it the reader would mostly not find it in the
    // cache anyway.  Only where the kernels store into dst (row tiles with
    // the chain fused or none), never into the L1 accumulator buffer.
    // Zen 4 VM (32 MiB L3), 1 thread, MobileNet-v2 1x1 expand layers in
    // isolation: mb 8 block2_expand (38.5 MB output) 0.83 -> 1.38x oneDNN,
    // mb 8 block3_expand (14.5 MB) 0.82 -> 1.02x, mb 4 block2_expand
    // (19 MB) 1.25x; smaller outputs keep ordinary stores (mb 1 had gained
    // nothing), so the next layer finds them in the cache.  The cost to the
    // next layer (its reads from memory) was not measured end to end.
    const int64_t out_bytes = g.N * g.OH * g.OW * g.OC * 4;
    const bool nt = fusable && !p.im2col_all && (p.fold_kw || g.KW == 1) &&
                    out_bytes >= cpu::info().caches.l3 / 4;
    auto make_plain = [&](bool nt_stores) {
        for (int beta = 0; beta < 2; ++beta)
            for (int m = 1; m <= k->mr; ++m)
                for (int n = 1; n <= kConvNR; ++n) {
                    if (!n_needed[n]) continue;
                    uint8_t flags =
                        !beta && k->k_segments ? gemm::kUkFlagKSegments | gemm::kUkFlagRowTiles : 0;
                    if (!beta && nt_stores) flags |= gemm::kUkFlagNtStore;
                    const gemm::ukernel_desc d = conv_f32_desc(be, m, n, beta != 0, flags, 0);
                    gemm::ukernel_ref ref;
                    const anvil_status_t st = be.get(d, &ref);
                    if (st != anvil_success) return st;
                    k->f32[beta][m][n] = ref.fn;
                    k->keep_alive.push_back(ref.keep_alive);
                }
        return anvil_success;
    };
    k->nt_stores = nt;
    const anvil_status_t st = make_plain(nt);
    if (st != anvil_success || !fusable) return st;
    for (int bias = 0; bias < 2; ++bias)
        for (int m = 1; m <= k->mr; ++m)
            for (int n = 1; n <= kConvNR; ++n) {
                if (!n_needed[n]) continue;
                const uint8_t flags = uint8_t(gemm::kUkFlagKSegments | gemm::kUkFlagRowTiles |
                                              (bias ? gemm::kUkFlagBias : 0) |
                                              (nt ? gemm::kUkFlagNtStore : 0));
                const gemm::ukernel_desc d = conv_f32_desc(be, m, n, false, flags, epi_ops);
                gemm::ukernel_ref ref;
                if (be.get(d, &ref) != anvil_success)  // the portable chain then, on the buffer
                    return nt ? make_plain(false) : anvil_success;
                k->f32_fused[bias][m][n] = ref.fn;
                k->keep_alive.push_back(ref.keep_alive);
            }
    k->f32_epi = true;
    return anvil_success;
}

anvil_status_t run_conv_gemm(const conv_plan &p, const conv_gemm_kernels &k,
                             const lowp::chain_spec &chain, int32_t src_zero_point,
                             const conv_operands &ops) {
    const conv_geom &g = p.g;
    call_ctx c{};
    c.p = &p;
    c.k = &k;
    c.weights = ops.weights;
    // An s8 source is shifted: its padding holds 128 + zero point, which
    // the column-sum compensation of all taps removes; u8 padding holds the
    // zero point (likewise).  Skipping those taps would break that sum.
    c.pad_zero = p.src == src_elem::f32 || p.src == src_elem::bf16 ||
                 (p.src == src_elem::u8 && src_zero_point == 0);
    // (A view that only widens bf16 has the source's pixel layout.)
    const bool source_layout = !p.copy_view || (p.widen_a && p.Cv == g.IC && p.Hp == g.IH && p.Wp == g.IW);
    c.contiguous = source_layout && g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 &&
                   g.PT == 0 && g.PL == 0 && g.PB == 0 && g.PR == 0 && g.IH == g.OH && g.IW == g.OW;
    // Weights of an oc block stay in L2 while every tile of a unit runs.
    const int64_t panel_bytes = p.K * kConvNR * (p.path == conv_path::gemm_f32 ? 4 : p.gk == 2 ? 2 : 1);
    // Blocks of near-equal panel counts (4 panels as 2 + 2, not 3 + 1):
    // threads take contiguous ranges of items, so one block three times
    // another's size gave one thread three quarters of the work (bf16
    // res3a_branch2b at 2 threads: 0.62x oneDNN).
    auto set_blocks = [&](int64_t most_panels) {
        c.blocks_per_group = ceil_div(p.np, std::max<int64_t>(1, most_panels));
        c.panels_per_block = ceil_div(p.np, c.blocks_per_group);
    };
    set_blocks(std::min<int64_t>({p.np, kMaxPanelsPerBlock, (256 * 1024) / panel_bytes}));
    if (c.contiguous || p.im2col_all) {
        c.unit_pixels = int64_t(k.mr) * 8;
        c.units = ceil_div(g.pixels(), c.unit_pixels);
    } else {
        c.units = g.N * g.OH;
    }
    c.row_bytes_im2col = im2col_row_bytes(p.K * p.eb + 32);  // + copy_pieces' slack
    const int nthreads = threading::num_threads();
    // Several threads on a small layer (7 x 7 or 14 x 14 maps, few oc
    // blocks): items a few times the threads, so contiguous ranges of them
    // come out even -- fewer panels per block first, then (1x1) fewer
    // pixels per unit.  No output element changes its K order, so the
    // results stay bitwise those of one thread.
    while (nthreads > 1 && c.units * c.blocks_per_group * g.G < kItemsPerThread * nthreads) {
        if (c.panels_per_block > 1) {
            set_blocks(c.panels_per_block / 2);
        } else if ((c.contiguous || p.im2col_all) && c.unit_pixels > k.mr) {
            c.unit_pixels = std::max<int64_t>(k.mr, c.unit_pixels / 2);
            c.units = ceil_div(g.pixels(), c.unit_pixels);
        } else {
            break;
        }
    }
    // Pixel units in a multiple of the threads when the blocks do not
    // split evenly between them: 9 units on 2 threads left one with 5
    // (res3b_branch2a, 784 pixels of 1x1 conv, 0.90x oneDNN at 2 threads
    // in every type on the Zen 4 VM).  Units stay near-equal.
    if (nthreads > 1 && (c.contiguous || p.im2col_all) && (c.blocks_per_group * g.G) % nthreads != 0 &&
        c.units % nthreads != 0)
        c.units = std::min(g.pixels(), ceil_div(c.units, nthreads) * nthreads);
    int64_t items = c.units * c.blocks_per_group * g.G;
    const int64_t nw = std::min<int64_t>(items, nthreads);
    const int64_t acc_bytes = int64_t(kConvMaxMR) * kConvNR * kMaxPanelsPerBlock * 4;

    const bool direct = p.path == conv_path::gemm_f32 && chain.out == lowp::out_type::f32 &&
                        chain.scales.empty() && !ops.bias && chain.ops.empty() &&
                        chain.c_zero_point == 0.0f;
    lowp::chain_epilogue epi(chain, ops.dst, g.OC, ops.binary, ops.bias);
    c.epi = direct ? nullptr : &epi;
    c.direct_dst = direct ? static_cast<float *>(ops.dst) : nullptr;
    c.f32_fused = nullptr;
    c.f32_dst = c.direct_dst;
    if (k.f32_epi && !direct) {
        // The fp32 kernels finish the chain (fuse_f32_chain said it fits).
        c.f32_fused = k.f32_fused[ops.bias ? 1 : 0];
        c.f32_dst = static_cast<float *>(ops.dst);
        c.bias = ops.bias;
        for (size_t t = 0; t < chain.ops.size(); ++t) {
            const lowp::post_op &o = chain.ops[t];
            if (o.is_binary) {
                c.binary = static_cast<const uint8_t *>(ops.binary[t]);
                c.binary_ld = o.ld * 4;
                c.binary_bytes = 4;
            } else {
                c.alpha = o.alpha;
                c.elt_beta = o.beta;
            }
        }
    }
    if (k.fused && !direct) {
        c.fused = k.lp_fused[ops.bias ? 1 : 0];
        c.dst = static_cast<uint8_t *>(ops.dst);
        c.out_bytes = lowp::out_type_bytes(chain.out);
        c.col_factor = chain.ao + chain.a_shift;
        c.scales = chain.scales.empty() ? nullptr : chain.scales.data();
        c.scales_per_n = chain.scales_per_n;
        c.bias = ops.bias;
        c.zero_point = chain.c_zero_point;
        lowp::fused_chain fc;
        lowp::fuse_chain(chain, &fc);  // true: k.fused
        c.alpha = fc.eltwise_op >= 0 ? chain.ops[size_t(fc.eltwise_op)].alpha : 0.0f;
        c.elt_beta = fc.eltwise_op >= 0 ? chain.ops[size_t(fc.eltwise_op)].beta : 0.0f;
        if (fc.binary_op >= 0) {  // the fused residual add (a sum's operand: dst itself)
            const lowp::post_op &o = chain.ops[size_t(fc.binary_op)];
            c.binary = static_cast<const uint8_t *>(ops.binary[fc.binary_op]);
            c.binary_bytes = o.is_sum() ? c.out_bytes : o.src_bf16 ? 2 : 4;
            c.binary_ld = o.per_n ? 0 : o.ld * c.binary_bytes;  // per-N: every row reads row 0
            if (o.is_sum()) {
                c.sum_scale = o.alpha;
                c.sum_zero_point = o.beta;
            }
        }
    }
    // A tile's calls are its kernel rows (fold_kw, or KW = 1), a source row
    // apart: kernels with K segments reduce over them in one call.
    c.k_segments = k.k_segments && !p.im2col_all && (p.fold_kw || g.KW == 1);
    // With one call per tile, fused kernels walk many tiles per call: a
    // contiguous 1x1 convolution's unit, or an output row.
    c.row_tiles = c.fused != nullptr && !p.im2col_all && p.path == conv_path::gemm_lp &&
                  (c.contiguous || c.k_segments);
    // fp32 kernels with K segments take row tiles too (the same flag set).
    c.row_tiles_f32 = k.k_segments && !p.im2col_all && p.path == conv_path::gemm_f32 &&
                      (c.contiguous || c.k_segments);
    c.acc_rows_f32 = acc_bytes / (kConvNR * 4);
    // Edge columns add work units after each block's rows (the same
    // weights, still in L2); threads take contiguous ranges of them all.
    plan_edge_columns(c);
    items = (c.units + c.edge_units) * c.blocks_per_group * g.G;
    // Edge patches instead of the view when the kernels can read the
    // source itself (conv_plan::edge_patchable for fp32; for lp kernels a
    // u8 (zero point 0) or bf16 source that needs no channel padding or
    // widening, with the row-tile kernels) and the patches are few: one oc
    // block of one group (else every block would rebuild its rows'
    // patches), or edge columns, which leave only the rows outside the band
    // (2 per image for 3x3, pad 1) to patch.  The view's pass over the
    // whole source had cost 2.7% of an fp32 28x28x128 3x3 layer at 1
    // thread and 9% at 2 (Zen 4 VM: its lines go from one core to the other).
    const bool lp_patchable = p.path == conv_path::gemm_lp && c.row_tiles && c.pad_zero &&
                              !p.widen_a && p.src != src_elem::s8 && g.ICg % p.gk == 0 &&
                              !p.im2col_all && (g.PT || g.PB || g.PL || g.PR);
    c.patches = (p.edge_patchable || lp_patchable) && g.G == 1 && k.k_segments &&
                (p.fold_kw || g.KW == 1) && (c.blocks_per_group == 1 || c.edge_cols);
    c.seg_rs = (g.DH + 1) * (c.patches ? g.IW : p.Wp) * p.Cv * p.eb;
    const int64_t aux_bytes = p.im2col_all ? k.mr * c.row_bytes_im2col
                              : c.patches  ? g.KH * patch_row_bytes(p.Wp * p.Cv * p.eb) + 64
                                           : 0;
    const int64_t slot_bytes = acc_bytes + aux_bytes;
    // Scratch first: nothing is written to dst unless all of it is there.
    uint8_t *view = nullptr;
    if (p.copy_view && !c.patches) {
        view = static_cast<uint8_t *>(
            lowp::scratch_bpack().get(g.N * p.Hp * p.Wp * p.Cv * p.eb + 64));
        if (!view) return anvil_out_of_memory;
    }
    auto *slots = static_cast<uint8_t *>(lowp::scratch_acc().get(slot_bytes * nw));
    if (!slots) return anvil_out_of_memory;
    if (view) fill_view(p, static_cast<const uint8_t *>(ops.src), src_zero_point, view);
    c.src = view ? view : static_cast<const uint8_t *>(ops.src);
    double total_work = 0.0;
    if (nw > 1)
        for (int64_t i = 0; i < items; ++i) total_work += item_work(c, i);
    auto worker = [&](int64_t w) {
        uint8_t *slot = slots + w * slot_bytes;
        const int64_t i0 = split_point(c, items, nw, w, total_work);
        const int64_t i1 = split_point(c, items, nw, w + 1, total_work);
        for (int64_t it = i0; it < i1; ++it) run_item(c, it, slot, slot + acc_bytes);
        if (k.nt_stores) cpu::store_fence();  // before this share counts as done
        if (k.tile_backend) k.tile_backend->release_thread();  // leaving anvil's work
    };
    if (nw <= 1)
        worker(0);
    else
        threading::parallel_for(nw, worker);
    return anvil_success;
}

}  // namespace anvil::conv
