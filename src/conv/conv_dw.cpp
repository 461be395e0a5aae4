#include "conv/conv_dw.h"

#include <algorithm>

#include "conv/dw_backend.h"
#include "lowp/lp_scratch.h"
#include "threading/parallel.h"

namespace anvil::conv {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Channels per kernel call: the accumulators of a tile (kDwMaxM rows) stay
// in L1.
constexpr int64_t kDwChannelBlock = 256;

struct dw_ctx {
    const conv_plan *p;
    const conv_dw_kernels *k;
    const uint8_t *src;
    const float *w;  // f32 or int32 rows, cpad entries each
    int32_t zero_point;
    int64_t cblocks;
    const lowp::lp_epilogue *epi;  // nullptr: write dst directly
    float *direct_dst;
};

void run_row_block(const dw_ctx &c, int64_t item, uint8_t *acc_buf, const uint8_t **src_taps,
                   const void **w_taps) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t row = item / c.cblocks, cb = item % c.cblocks;
    const int64_t n = row / g.OH, oh = row % g.OH;
    const int64_t c0 = cb * kDwChannelBlock, cw = std::min(kDwChannelBlock, g.OC - c0);
    const int eb = p.eb;
    const int64_t pix_bytes = g.IC * eb;
    const int64_t dh = g.DH + 1, dw = g.DW + 1;
    const int64_t ih0 = oh * g.SH - g.PT;
    // Kernel rows in bounds for this output row.
    int64_t kh_lo = 0, kh_hi = g.KH;
    while (kh_lo < g.KH && ih0 + kh_lo * dh < 0) ++kh_lo;
    while (kh_hi > kh_lo && ih0 + (kh_hi - 1) * dh >= g.IH) --kh_hi;
    // Pixels whose every kw is in bounds.
    const int64_t ext_w = (g.KW - 1) * dw;
    int64_t lo = std::min<int64_t>(g.OW, ceil_div(g.PL, g.SW));
    const int64_t num = g.IW - 1 - ext_w + g.PL;
    int64_t hi = num < 0 ? 0 : std::min<int64_t>(g.OW, num / g.SW + 1);
    if (hi < lo) hi = lo;
    const int64_t q_row = row * g.OW;
    const uint8_t *img = c.src + n * g.IH * g.IW * pix_bytes + c0 * eb;
    dw_ukernel_args a{};
    a.src_taps = src_taps;
    a.w_taps = w_taps;
    a.pix_stride = g.SW * pix_bytes;
    a.channels = cw;
    a.zero_point = c.zero_point;
    // Runs m pixels from ow0 with the taps kw in [kw_lo, kw_hi).
    auto call = [&](int64_t ow0, int64_t m, int64_t kw_lo, int64_t kw_hi) {
        int64_t t = 0;
        const int64_t iw0 = ow0 * g.SW - g.PL;
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw, ++t) {
                src_taps[t] = img + ((ih0 + kh * dh) * g.IW + iw0 + kw * dw) * pix_bytes;
                w_taps[t] = c.w + (kh * g.KW + kw) * p.dw_cpad + c0;
            }
        a.ntaps = t;
        a.m = m;
        const int64_t q0 = q_row + ow0;
        if (c.direct_dst) {
            a.acc = c.direct_dst + q0 * g.OC + c0;
            a.acc_ld = g.OC;
        } else {
            a.acc = acc_buf;
            a.acc_ld = kDwChannelBlock;
        }
        c.k->fn[m](&a);
        if (!c.direct_dst) {
            lowp::lp_block blk{};
            blk.acc = acc_buf;
            blk.acc_ld = kDwChannelBlock;
            blk.i0 = q0;
            blk.j0 = c0;
            blk.m = m;
            blk.n = cw;
            c.epi->apply(blk);
        }
    };
    // Edge pixels: only their own in-bounds kw.
    auto edge = [&](int64_t ow) {
        const int64_t iw0 = ow * g.SW - g.PL;
        int64_t kw_lo = 0, kw_hi = g.KW;
        while (kw_lo < g.KW && iw0 + kw_lo * dw < 0) ++kw_lo;
        while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * dw >= g.IW) --kw_hi;
        call(ow, 1, kw_lo, kw_hi);
    };
    for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
    const int64_t len = hi - lo;
    if (len > 0) {
        const int64_t nt = ceil_div(len, kDwMaxM);
        const int64_t base = len / nt, extra = len % nt;
        int64_t s = lo;
        for (int64_t t = 0; t < nt; ++t) {
            const int64_t m = base + (t < extra ? 1 : 0);
            call(s, m, 0, g.KW);
            s += m;
        }
    }
    for (int64_t ow = std::max(hi, lo); ow < g.OW; ++ow) edge(ow);
}

}  // namespace

anvil_status_t prepare_conv_dw_kernels(const conv_plan &p, int32_t src_zero_point,
                                       conv_dw_kernels *k) {
    k->kind = p.src == src_elem::f32    ? dw_kind::f32
              : p.src == src_elem::bf16 ? dw_kind::bf16
              : p.src == src_elem::u8   ? dw_kind::u8
                                        : dw_kind::s8;
    const dw_backend &be = select_dw_backend();
    k->backend_name = be.name();
    for (int m = 1; m <= kDwMaxM; ++m) {
        dw_ukernel_ref ref;
        const anvil_status_t st =
            be.get(make_dw_desc(uint8_t(be.tier()), k->kind, m, src_zero_point != 0), &ref);
        if (st != anvil_success) return st;
        k->fn[m] = ref.fn;
        k->keep_alive.push_back(ref.keep_alive);
    }
    return anvil_success;
}

anvil_status_t run_conv_dw(const conv_plan &p, const conv_dw_kernels &k,
                           const lowp::chain_spec &chain, int32_t src_zero_point,
                           const conv_operands &ops) {
    const conv_geom &g = p.g;
    dw_ctx c{};
    c.p = &p;
    c.k = &k;
    c.src = static_cast<const uint8_t *>(ops.src);
    c.w = reinterpret_cast<const float *>(ops.weights);
    c.zero_point = src_zero_point;
    c.cblocks = ceil_div(g.OC, kDwChannelBlock);
    const int64_t items = g.N * g.OH * c.cblocks;
    const int64_t nw = std::min<int64_t>(items, threading::num_threads());
    const int64_t acc_bytes = int64_t(kDwMaxM) * kDwChannelBlock * 4;
    const int64_t taps_bytes = g.taps() * int64_t(sizeof(void *));
    const int64_t slot_bytes = acc_bytes + 2 * ((taps_bytes + 63) / 64 * 64);
    auto *slots = static_cast<uint8_t *>(lowp::scratch_acc().get(slot_bytes * nw));
    if (!slots) return anvil_out_of_memory;
    const bool direct = p.src == src_elem::f32 && chain.out == lowp::out_type::f32 &&
                        chain.scales.empty() && !ops.bias && chain.ops.empty() &&
                        chain.c_zero_point == 0.0f;
    lowp::chain_epilogue epi(chain, ops.dst, g.OC, ops.binary, ops.bias);
    c.epi = direct ? nullptr : &epi;
    c.direct_dst = direct ? static_cast<float *>(ops.dst) : nullptr;
    auto worker = [&](int64_t w) {
        uint8_t *slot = slots + w * slot_bytes;
        auto **st = reinterpret_cast<const uint8_t **>(slot + acc_bytes);
        auto **wt = reinterpret_cast<const void **>(slot + acc_bytes + (taps_bytes + 63) / 64 * 64);
        const int64_t i0 = items * w / nw, i1 = items * (w + 1) / nw;
        for (int64_t it = i0; it < i1; ++it) run_row_block(c, it, slot, st, wt);
    };
    if (nw <= 1)
        worker(0);
    else
        threading::parallel_for(nw, worker);
    return anvil_success;
}

}  // namespace anvil::conv
