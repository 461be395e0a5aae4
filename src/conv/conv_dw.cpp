#include "conv/conv_dw.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "conv/dw_backend.h"
#include "cpu/isa.h"
#include "lowp/lp_ukernel.h"
#include "lowp/lp_scratch.h"
#include "threading/parallel.h"

namespace anvil::conv {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Channels per kernel call: the accumulators of a tile (kDwMaxM rows) stay
// in L1.
constexpr int64_t kDwChannelBlock = 256;
// Accumulator entries gathered before the post-op chain runs (16 KiB):
// kDwAccEntries / channels rows, at least kDwMaxM.
constexpr int64_t kDwAccEntries = 4096;
static_assert(kDwAccEntries >= kDwMaxM * kDwChannelBlock, "acc buffer holds a tile");
static_assert(kDwChannelBlock % 64 == 0, "blocks start where the kernels' weight rows allow (dw_split)");
// Maps at most this wide run in groups of rows (run_row_group): all of
// them now (measured faster on every MobileNet-v2 layer), the knob stays.
constexpr int64_t kDwGroupMaxOW = 1 << 20;
// The split search (choose_split) for several threads: the fixed cost of a
// kernel call in output elements (pixel x channel) of work -- about 50 ns
// of tap setup and prologue against 0.2 ns per element (f32, Zen 4 VM: a
// 7 x 7 x 960 layer in items of 32 channels ran 2.2x slower than in items
// of 160), and the splits it looks at: at most this many items per thread
// (more are balanced to within a few per cent anyway).
constexpr int64_t kDwCallCost = 256;
constexpr int64_t kDwSearchItemsPerThread = 32;
// ... and at most this many items in all (a caller pool of hundreds of
// threads would otherwise make the first call walk millions of items).
constexpr int64_t kDwSearchMaxItems = 4096;

// How kernels that take several output rows (conv_dw_kernels::multi_row)
// walk a run of rows (row_walk_of).
struct dw_row_walk {
    int64_t chunk;  // channels per call
    int64_t seg;    // interior output pixels per call; 0: the whole row
};

struct dw_ctx {
    const conv_plan *p;
    const conv_dw_kernels *k;
    const uint8_t *src;
    const float *w;  // f32 or int32 rows, cpad entries each (byte-dot rows: conv_dw_kernels::byte_dot)
    const uint32_t *pair_w = nullptr;  // bf16 pair-form rows (conv_plan::dw_pair_offset)
    int32_t zero_point;
    int64_t cblocks;
    int64_t cblock;  // channels per item (dw_split)
    const lowp::lp_epilogue *epi;  // nullptr: write dst directly
    float *direct_dst;
    int64_t group_rows;  // > 1: items are groups of rows (run_row_group)
    dw_row_walk walk;    // multi_row kernels' chunks and segments
    // Fused kernels (conv_dw_kernels::fused): they finish the chain and
    // store dst; no acc buffer, no chain epilogue.
    const dw_ukernel_fn *fused_fn = nullptr;  // [m]; nullptr: not fused
    const dw_ukernel_fn *fused_row = nullptr;
    const dw_ukernel_fn (*fused_grows)[kDwMaxM + 1] = nullptr;  // [G][m]

    // The kernels of an interior tile of an output row whose in-bounds
    // kernel rows number nkh: G-row byte-dot kernels where made, else the
    // row kernels, else the tap kernels.
    const dw_ukernel_fn *interior_fns(int64_t nkh) const {
        const bool fused = fused_fn != nullptr;
        if (nkh >= 2 && nkh <= kDwMaxDotRows) {
            const dw_ukernel_fn *gr = fused ? fused_grows[nkh] : k->fn_grows[nkh];
            if (gr[1]) return gr;
        }
        return fused ? (k->row_taps > 0 ? fused_row : fused_fn) : k->row_taps > 0 ? k->fn_row : k->fn;
    }
    // Whether interior_fns(nkh) are bf16 pair-dot kernels (they read the
    // pair-form weight rows: set_pair_weights).
    bool interior_pair(int64_t nkh) const {
        return k->bf16_pair && nkh >= 2 && nkh <= kDwMaxDotRows && k->fn_grows[nkh][1] != nullptr;
    }
    uint8_t *dst = nullptr;
    int64_t out_bytes = 0;
    const float *scales = nullptr;  // channel 0 (scales_per_n) or the one scale
    bool scales_per_n = false;
    const float *bias = nullptr;
    float dst_zero_point = 0.0f, alpha = 0.0f, beta = 0.0f;  // the eltwise op's parameters
};

// The fused operands of a call over channels [c0, ...).
void set_fused_args(const dw_ctx &c, int64_t c0, dw_ukernel_args *a) {
    a->scales = c.scales_per_n ? c.scales + c0 : c.scales;
    a->bias = c.bias ? c.bias + c0 : nullptr;
    a->dst_zero_point = c.dst_zero_point;
    a->alpha = c.alpha;
    a->beta = c.beta;
}

const float kOne = 1.0f;  // the scale of a chain without scales

// A pair-dot call's weights (dw_ukernel_desc::narrow_int on bf16): for its
// kernel rows kh_lo .. kh_hi - 1 in pairs, the first row's taps point at
// the pair-form rows of (kh, kh + 1), or of (kh, none) for a row alone;
// channels from c0 (a multiple of 32: pair rows go in 32-channel slots).
void set_pair_weights(const dw_ctx &c, const void **w_taps, int64_t kh_lo, int64_t kh_hi, int64_t c0) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t rows = kh_hi - kh_lo;
    for (int64_t i = 0; i < rows; i += 2) {
        const int64_t alone = i + 1 < rows ? 0 : 1;
        for (int64_t kw = 0; kw < g.KW; ++kw)
            w_taps[i * g.KW + kw] = c.pair_w + ((alone * g.KH + kh_lo + i) * g.KW + kw) * p.dw_pair_cpad + c0;
    }
}

// dw_row_walk: in chunks of `chunk` channels and, when a chunk's rows are
// still too wide, in segments of `seg` interior output pixels (0: the
// whole row).  An output row reads KH source rows; when the next output
// row shares some of them (SH less than the kernel's height), a chunk
// narrow enough that those rows stay in L1 (KH rows of the chunk in 3/4
// of it) lets the kernel's walk down the rows find them there instead of
// in L2.  All channels at once, the next row's shared rows were gone
// (KH x IW x 144 f32 channels is 97 KiB on a 56-wide map), and at stride
// 2 the L2 could not feed the FMAs.  Measured on the Zen 4 VM, 1 thread,
// MobileNet-v2's depthwise layers at mb 1, in-process A/B: f32 -4..-18%
// time (stride 2: 28 x 28 x 192 -18%, 14 x 14 x 576 -16%, 56 x 56 x 144
// -6%), bf16 -3..-11%, u8 on the widening kernels -3..-7% (budgets of
// 1/4 and all of L1 were worse).  Tensors that do not fit in half the L3
// come from memory, where the narrow slices of each pixel's lines cost
// more than the reuse saves (mb 8: 112 x 112 x 32 +20%, 56 x 56 x 144
// +10%): there the rows run whole.  Byte-dot kernels walk the rows inside
// each 64-channel pass already.  Chunks and segments change which call
// computes an output, never how.
dw_row_walk row_walk_of(const conv_geom &g, int eb, int out_bytes, bool byte_dot) {
    const int64_t height = (g.KH - 1) * (g.DH + 1) + 1;
    const int64_t tensors = g.N * (g.IH * g.IW * g.IC * eb + g.OH * g.OW * g.OC * out_bytes);
    if (byte_dot || g.SH >= height || tensors > cpu::info().caches.l3 / 2) return {g.OC, 0};
    const int64_t budget = std::max<int64_t>(cpu::info().caches.l1d, 16 * 1024) * 3 / 4;
    const int64_t per32 = g.KH * g.IW * 32 * eb;  // bytes of a 32-channel chunk's rows
    if (per32 <= budget) return {32 * (budget / per32), 0};
    // Segments: whole tiles of kDwMaxM pixels whose source columns fit.
    const int64_t cols = budget / (g.KH * 32 * eb), ext = (g.KW - 1) * (g.DW + 1) + 1;
    const int64_t pix = cols > ext ? (cols - ext) / g.SW + 1 : 1;
    return {32, std::max<int64_t>(kDwMaxM, pix / kDwMaxM * kDwMaxM)};
}

// Output rows per item for channel blocks of `cblock`: as many as the acc
// buffer holds (kDwMaxM when the kernels write dst).
int64_t max_group_rows(const conv_geom &g, int64_t cblock, bool writes_dst) {
    if (g.OW > kDwGroupMaxOW) return 1;
    const int64_t fit = writes_dst ? kDwMaxM : kDwAccEntries / (g.OW * std::min(g.OC, cblock));
    return std::max<int64_t>(1, std::min<int64_t>({kDwMaxM, g.OH, fit}));
}

// The estimated cost of item `it` of split `s`: its output elements plus
// kDwCallCost per kernel call (per row up to two interior calls -- an
// upper bound where a run of rows shares calls, row_walk_of; per edge
// column one call per run of rows with the same kernel rows, about three).
int64_t item_cost(const conv_geom &g, const dw_split &s, int64_t it) {
    const int64_t cblocks = ceil_div(g.OC, s.cblock);
    const int64_t cb = it % cblocks, rg = it / cblocks;
    const int64_t r0 = rg % ceil_div(g.OH, s.group_rows) * s.group_rows;
    const int64_t rows = std::min(g.OH, r0 + s.group_rows) - r0;
    const int64_t cw = std::min(s.cblock, g.OC - cb * s.cblock);
    const int64_t lo = std::min<int64_t>(g.OW, ceil_div(g.PL, g.SW));
    const int64_t num = g.IW - 1 - (g.KW - 1) * (g.DW + 1) + g.PL;
    const int64_t hi = std::max(lo, num < 0 ? 0 : std::min<int64_t>(g.OW, num / g.SW + 1));
    const int64_t interior_calls = hi > lo ? ((hi - lo) % kDwMaxM ? 2 : 1) : 0;
    const int64_t edge_calls = (g.OW - (hi - lo)) * std::min<int64_t>(rows, 3);
    return rows * g.OW * cw + kDwCallCost * (rows * interior_calls + edge_calls);
}

// Contiguous item ranges of about equal cost, one per worker: item `it`
// starts range w once the cost before it reaches w / nw of the total;
// every range gets at least one item (items >= nw).  first[nw] = items.
template <typename Cost>
void split_ranges(int64_t items, int64_t nw, const Cost &cost, int64_t *first) {
    first[0] = 0;
    first[nw] = items;
    int64_t total = 0;
    for (int64_t it = 0; it < items; ++it) total += cost(it);
    int64_t done = 0, w = 1;
    for (int64_t it = 0; it < items && w < nw; ++it) {
        if (it > first[w - 1] && done * nw >= total * w) first[w++] = it;
        done += cost(it);
    }
    for (; w < nw; ++w) first[w] = std::max(first[w - 1] + 1, items - (nw - w));
}

// The items of a call.  One thread: the widest blocks and the most rows
// (the fewest calls).  Several: the split whose busiest worker has the
// least estimated cost, among those with at most kDwSearchItemsPerThread
// items per thread (ties to wider blocks, then more rows); blocks are a
// multiple of `align` channels (dw_split).  Fixed blocks of 256 channels
// had split 7 x 7 x 960 as 69% / 31% of the work between two threads and
// 14 x 14 x 576 as 62% / 38% (MobileNet-v2's 2-thread depthwise layers at
// 0.66x / 0.71x oneDNN on the Zen 4 VM).
dw_split choose_split(const conv_geom &g, int nthreads, bool writes_dst, int64_t align) {
    dw_split best;
    best.cblock = kDwChannelBlock;
    best.group_rows = max_group_rows(g, best.cblock, writes_dst);
    if (nthreads <= 1) return best;
    int64_t best_score = INT64_MAX;
    std::vector<int64_t> first;
    for (int64_t cb = kDwChannelBlock; cb >= align; cb -= align) {
        if (cb != kDwChannelBlock && cb >= g.OC) continue;  // one block, as with 256
        const int64_t blocks = ceil_div(g.OC, cb);
        for (int64_t gr = max_group_rows(g, cb, writes_dst); gr >= 1; --gr) {
            const dw_split s{gr, cb};
            const int64_t items = g.N * ceil_div(g.OH, gr) * blocks;
            if (items > std::min(kDwSearchItemsPerThread * nthreads, kDwSearchMaxItems))
                break;  // fewer rows: more items
            const int64_t nw = std::min<int64_t>(items, nthreads);
            first.assign(size_t(nw + 1), 0);
            auto cost = [&](int64_t it) { return item_cost(g, s, it); };
            split_ranges(items, nw, cost, first.data());
            int64_t score = 0;
            for (int64_t w = 0; w < nw; ++w) {
                int64_t sum = 0;
                for (int64_t it = first[size_t(w)]; it < first[size_t(w + 1)]; ++it) sum += cost(it);
                score = std::max(score, sum);
            }
            if (score < best_score) {
                best_score = score;
                best = s;
            }
        }
    }
    return best;
}

}  // namespace

bool dw_split_memo::get(int threads, bool acc_limited, dw_split *s) const {
    const uint64_t w = word_.load(std::memory_order_relaxed);
    if (!(w & 1) || int((w >> 1) & 0xffff) != threads || bool((w >> 17) & 1) != acc_limited) return false;
    s->group_rows = int64_t((w >> 18) & 0xff);
    s->cblock = int64_t((w >> 26) & 0xff) * 32;
    return true;
}

void dw_split_memo::put(int threads, bool acc_limited, const dw_split &s) const {
    if (threads > 0xffff || s.group_rows > 0xff || s.cblock % 32 || s.cblock / 32 > 0xff) return;
    word_.store(1 | uint64_t(threads) << 1 | uint64_t(acc_limited) << 17 | uint64_t(s.group_rows) << 18 |
                    uint64_t(s.cblock / 32) << 26,
                std::memory_order_relaxed);
}

namespace {

void run_row_block(const dw_ctx &c, int64_t item, uint8_t *acc_buf, const uint8_t **src_taps,
                   const void **w_taps) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t row = item / c.cblocks, cb = item % c.cblocks;
    const int64_t n = row / g.OH, oh = row % g.OH;
    const int64_t c0 = cb * c.cblock, cw = std::min(c.cblock, g.OC - c0);
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
    const bool fused = c.fused_fn != nullptr;
    if (fused) set_fused_args(c, c0, &a);
    // Without direct dst the accumulators of consecutive pixels gather in
    // acc_buf (rows of cw entries, at most cap rows) and the chain runs
    // once per filled buffer, not per call.
    const int64_t cap = std::max<int64_t>(kDwMaxM, kDwAccEntries / cw);
    int64_t buf_ow0 = 0, buf_n = 0;
    auto flush = [&] {
        if (buf_n == 0) return;
        lowp::lp_block blk{};
        blk.acc = acc_buf;
        blk.acc_ld = cw;
        blk.i0 = q_row + buf_ow0;
        blk.j0 = c0;
        blk.m = buf_n;
        blk.n = cw;
        c.epi->apply(blk);
        buf_n = 0;
    };
    // Runs nb blocks of m pixels from ow0 with the taps kw in [kw_lo,
    // kw_hi): one kernel call (more when acc_buf fills up).
    auto call = [&](const dw_ukernel_fn *fns, int64_t ow0, int64_t m, int64_t nb, int64_t kw_lo,
                    int64_t kw_hi, bool pair = false) {
        int64_t t = 0;
        const int64_t iw0 = ow0 * g.SW - g.PL;
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw, ++t) {
                src_taps[t] = img + ((ih0 + kh * dh) * g.IW + iw0 + kw * dw) * pix_bytes;
                w_taps[t] = c.w + (kh * g.KW + kw) * p.dw_cpad + c0;
            }
        if (pair) set_pair_weights(c, w_taps, kh_lo, kh_hi, c0);
        a.ntaps = t;
        a.m = m;
        while (nb > 0) {
            int64_t take = nb;
            if (c.direct_dst) {
                a.acc = c.direct_dst + (q_row + ow0) * g.OC + c0;
                a.acc_ld = g.OC;
            } else if (fused) {
                a.dst = c.dst + ((q_row + ow0) * g.OC + c0) * c.out_bytes;
                a.dst_ld = g.OC * c.out_bytes;
            } else {
                if (buf_n + m > cap) flush();
                if (buf_n == 0) buf_ow0 = ow0;
                take = std::min(nb, (cap - buf_n) / m);
                a.acc = reinterpret_cast<float *>(acc_buf) + buf_n * cw;
                a.acc_ld = cw;
                buf_n += take * m;
            }
            a.nblocks = take;
            fns[m](&a);
            nb -= take;
            ow0 += take * m;
            if (nb > 0)
                for (int64_t i = 0; i < t; ++i) src_taps[i] += take * m * a.pix_stride;
        }
    };
    // Edge pixels: only their own in-bounds kw.
    auto edge = [&](int64_t ow) {
        const int64_t iw0 = ow * g.SW - g.PL;
        int64_t kw_lo = 0, kw_hi = g.KW;
        while (kw_lo < g.KW && iw0 + kw_lo * dw < 0) ++kw_lo;
        while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * dw >= g.IW) --kw_hi;
        call(fused ? c.fused_fn : c.k->fn, ow, 1, 1, kw_lo, kw_hi);
    };
    for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
    const int64_t len = hi - lo;
    if (len > 0) {
        // nt tiles as even as can be: `extra` of base + 1 pixels, then the
        // rest of base, each size one call of nt blocks.
        const int64_t nt = ceil_div(len, kDwMaxM);
        const int64_t base = len / nt, extra = len % nt;
        // Full kernel rows, kh-major: groups of KW taps kw * dw pixels
        // apart, which row kernels take when that is the pixel stride.
        const dw_ukernel_fn *fns = c.interior_fns(kh_hi - kh_lo);
        const bool pair = c.interior_pair(kh_hi - kh_lo);
        if (extra > 0) call(fns, lo, base + 1, extra, 0, g.KW, pair);
        call(fns, lo + extra * (base + 1), base, nt - extra, 0, g.KW, pair);
    }
    for (int64_t ow = std::max(hi, lo); ow < g.OW; ++ow) edge(ow);
    if (!c.direct_dst && !fused) flush();
}

// Maps up to kDwGroupMaxOW wide: an item is a group of up to
// kDwMaxM output rows.  Interior tiles run row by row as in
// run_row_block; each edge column runs as one call over the group's rows
// that share their kernel rows (m = rows, pixel step = SH input rows, acc
// step = one output row), instead of one m = 1 call per row.  acc holds
// the whole group (dst itself, or acc_buf in row-major pixel order) and
// the chain runs once per item.
void run_row_group(const dw_ctx &c, int64_t item, uint8_t *acc_buf, const uint8_t **src_taps,
                   const void **w_taps) {
    const conv_plan &p = *c.p;
    const conv_geom &g = p.g;
    const int64_t rg = item / c.cblocks, cb = item % c.cblocks;
    const int64_t groups = ceil_div(g.OH, c.group_rows);
    const int64_t n = rg / groups, oh0 = rg % groups * c.group_rows;
    const int64_t oh1 = std::min(g.OH, oh0 + c.group_rows);
    const int64_t c0 = cb * c.cblock, cw = std::min(c.cblock, g.OC - c0);
    const int eb = p.eb;
    const int64_t pix_bytes = g.IC * eb;
    const int64_t dh = g.DH + 1, dw = g.DW + 1;
    const uint8_t *img = c.src + n * g.IH * g.IW * pix_bytes + c0 * eb;
    const int64_t ext_w = (g.KW - 1) * dw;
    const int64_t lo = std::min<int64_t>(g.OW, ceil_div(g.PL, g.SW));
    const int64_t num = g.IW - 1 - ext_w + g.PL;
    const int64_t hi = std::max(lo, num < 0 ? 0 : std::min<int64_t>(g.OW, num / g.SW + 1));
    // acc entries: pixel (oh, ow) at acc0 + ((oh - oh0) * OW + ow) * ld.
    const bool direct = c.direct_dst != nullptr;
    float *acc0 = direct ? c.direct_dst + ((n * g.OH + oh0) * g.OW) * g.OC + c0
                         : reinterpret_cast<float *>(acc_buf);
    const int64_t ld = direct ? g.OC : cw;
    auto kh_range = [&](int64_t oh, int64_t *kh_lo, int64_t *kh_hi) {
        const int64_t ih0 = oh * g.SH - g.PT;
        *kh_lo = 0, *kh_hi = g.KH;
        while (*kh_lo < g.KH && ih0 + *kh_lo * dh < 0) ++*kh_lo;
        while (*kh_hi > *kh_lo && ih0 + (*kh_hi - 1) * dh >= g.IH) --*kh_hi;
    };
    dw_ukernel_args a{};
    a.src_taps = src_taps;
    a.w_taps = w_taps;
    a.zero_point = c.zero_point;
    const bool fused = c.fused_fn != nullptr;
    // One call: pixels of (oh, ow) onwards, m per block, nb blocks, pixel
    // step pix_stride / acc step acc_ld, channels cc .. cc + chans - 1 of
    // the item's block.
    // nrows > 1 (c.k->multi_row): the same tiles on nrows output rows
    // from oh (dw_ukernel_args::nrows).
    auto call = [&](dw_ukernel_fn fn, int64_t oh, int64_t ow, int64_t kh_lo, int64_t kh_hi,
                    int64_t kw_lo, int64_t kw_hi, int64_t m, int64_t nb, int64_t pix_stride,
                    int64_t acc_ld, int64_t nrows, bool pair = false, int64_t cc = 0,
                    int64_t chans = -1) {
        int64_t t = 0;
        const int64_t ih0 = oh * g.SH - g.PT, iw0 = ow * g.SW - g.PL;
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh)
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw, ++t) {
                src_taps[t] = img + ((ih0 + kh * dh) * g.IW + iw0 + kw * dw) * pix_bytes + cc * eb;
                w_taps[t] = c.w + (kh * g.KW + kw) * p.dw_cpad + c0 + cc;
            }
        if (pair) set_pair_weights(c, w_taps, kh_lo, kh_hi, c0 + cc);
        a.ntaps = t;
        a.m = m;
        a.nblocks = nb;
        a.pix_stride = pix_stride;
        a.channels = chans < 0 ? cw : chans;
        a.acc = acc0 + ((oh - oh0) * g.OW + ow) * ld + cc;
        a.acc_ld = acc_ld;
        a.nrows = nrows;
        a.src_row_step = g.SH * g.IW * pix_bytes;
        a.acc_row_step = fused ? g.OW * g.OC * c.out_bytes : g.OW * ld * 4;
        if (fused) {
            // The same pixel step in dst: acc_ld / ld pixels.
            a.dst = c.dst + (((n * g.OH + oh) * g.OW + ow) * g.OC + c0 + cc) * c.out_bytes;
            a.dst_ld = acc_ld / ld * g.OC * c.out_bytes;
            set_fused_args(c, c0 + cc, &a);
        }
        fn(&a);
    };
    const int64_t len = hi - lo;
    const dw_ukernel_fn *edge_fns = fused ? c.fused_fn : c.k->fn;
    // Interior tiles: kernels that take several output rows (multi_row)
    // get the rows that share their kernel rows in one call, in the
    // chunks and segments of c.walk (row_walk_of); the others row by row.
    // (Whole rows run row by row even so: a run's calls take each row's
    // tiles of one size first, then those of the other size, and in
    // memory-bound layers that broke every source row's stream in two --
    // mb 8, 112 x 112 x 32 f32 +20%.)
    const bool walk = c.k->byte_dot || (c.k->multi_row && (c.walk.chunk < cw || c.walk.seg > 0));
    for (int64_t oh = oh0; oh < oh1 && len > 0;) {
        int64_t kh_lo, kh_hi;
        kh_range(oh, &kh_lo, &kh_hi);
        int64_t e = oh + 1;
        for (; walk && e < oh1; ++e) {
            int64_t l2, h2;
            kh_range(e, &l2, &h2);
            if (l2 != kh_lo || h2 != kh_hi) break;
        }
        const dw_ukernel_fn *fns = c.interior_fns(kh_hi - kh_lo);
        const bool pair = c.interior_pair(kh_hi - kh_lo);
        const int64_t chunk = walk && !c.k->byte_dot ? c.walk.chunk : cw;
        const int64_t seg = walk && c.walk.seg > 0 ? c.walk.seg : len;
        for (int64_t cc = 0; cc < cw; cc += chunk) {
            const int64_t chans = std::min(chunk, cw - cc);
            for (int64_t s0 = lo; s0 < hi; s0 += seg) {
                // The segment's pixels as near-equal tiles of at most kDwMaxM.
                const int64_t sl = std::min(seg, hi - s0);
                const int64_t nt = ceil_div(sl, kDwMaxM), base = sl / nt, extra = sl % nt;
                if (extra > 0)
                    call(fns[base + 1], oh, s0, kh_lo, kh_hi, 0, g.KW, base + 1, extra, g.SW * pix_bytes,
                         ld, e - oh, pair, cc, chans);
                call(fns[base], oh, s0 + extra * (base + 1), kh_lo, kh_hi, 0, g.KW, base, nt - extra,
                     g.SW * pix_bytes, ld, e - oh, pair, cc, chans);
            }
        }
        oh = e;
    }
    // Edge columns: runs of rows with the same kernel rows, one call each.
    auto edge = [&](int64_t ow) {
        const int64_t iw0 = ow * g.SW - g.PL;
        int64_t kw_lo = 0, kw_hi = g.KW;
        while (kw_lo < g.KW && iw0 + kw_lo * dw < 0) ++kw_lo;
        while (kw_hi > kw_lo && iw0 + (kw_hi - 1) * dw >= g.IW) --kw_hi;
        for (int64_t oh = oh0; oh < oh1;) {
            int64_t kh_lo, kh_hi;
            kh_range(oh, &kh_lo, &kh_hi);
            int64_t e = oh + 1;
            for (; e < oh1 && e - oh < kDwMaxM; ++e) {
                int64_t l2, h2;
                kh_range(e, &l2, &h2);
                if (l2 != kh_lo || h2 != kh_hi) break;
            }
            call(edge_fns[e - oh], oh, ow, kh_lo, kh_hi, kw_lo, kw_hi, e - oh, 1,
                 g.SH * g.IW * pix_bytes, g.OW * ld, 1);
            oh = e;
        }
    };
    for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
    for (int64_t ow = hi; ow < g.OW; ++ow) edge(ow);
    if (!direct && !fused) {
        lowp::lp_block blk{};
        blk.acc = acc_buf;
        blk.acc_ld = cw;
        blk.i0 = (n * g.OH + oh0) * g.OW;
        blk.j0 = c0;
        blk.m = (oh1 - oh0) * g.OW;
        blk.n = cw;
        c.epi->apply(blk);
    }
}

// dw_ukernel_desc::epi for the chain (without DW_EPI_BIAS: bias is known
// only at execute), or 0 when it needs the chain epilogue: post-ops other
// than one relu / leaky_relu / clip, s32 output, bias in the spec,
// compensation.
uint8_t fused_epi_of(const lowp::chain_spec &ch) {
    if (ch.ops.size() > 1 || ch.bo != 0 || ch.ao != 0 || ch.a_shift != 0 || !ch.bias.empty()) return 0;
    uint8_t f = 0;
    if (ch.ops.size() == 1) {
        const lowp::post_op &o = ch.ops[0];
        if (o.is_binary) return 0;
        if (o.eltwise == lowp::eltwise_alg::relu)
            f |= DW_EPI_RELU;
        else if (o.eltwise == lowp::eltwise_alg::leaky_relu)
            f |= DW_EPI_LEAKY;
        else if (o.eltwise == lowp::eltwise_alg::clip)
            f |= DW_EPI_CLIP;
        else
            return 0;
    }
    switch (ch.out) {
        case lowp::out_type::f32: f |= lowp::EPI_F32; break;
        case lowp::out_type::bf16: f |= lowp::EPI_BF16; break;
        case lowp::out_type::u8: f |= lowp::EPI_U8; break;
        case lowp::out_type::s8: f |= lowp::EPI_S8; break;
        default: return 0;
    }
    if (!ch.scales.empty() && ch.scales_per_n) f |= DW_EPI_SCALE_N;
    if (ch.c_zero_point != 0.0f) f |= DW_EPI_ZP;
    return f;
}

int g_byte_dot_override = -1;
int g_bf16_pair_override = -1;

}  // namespace

void set_dw_byte_dot_override(int v) { g_byte_dot_override = v; }
void set_dw_bf16_pair_override(int v) { g_bf16_pair_override = v; }

anvil_status_t prepare_conv_dw_kernels(const conv_plan &p, const lowp::chain_spec &chain,
                                       int32_t src_zero_point, conv_dw_kernels *k) {
    k->kind = p.src == src_elem::f32    ? dw_kind::f32
              : p.src == src_elem::bf16 ? dw_kind::bf16
              : p.src == src_elem::u8   ? dw_kind::u8
                                        : dw_kind::s8;
    const dw_backend &be = select_dw_backend();
    k->backend_name = be.name();
    const conv_geom &g = p.g;
    // Interior taps of one kernel row are (DW + 1) pixels apart, pixels SW:
    // row kernels when SW = S (DW + 1) with S <= kDwMaxRowStep.
    const int64_t step = g.SW % (g.DW + 1) == 0 ? g.SW / (g.DW + 1) : 0;
    const bool rows = step >= 1 && step <= kDwMaxRowStep && g.KW <= kDwMaxRowTaps;
    k->row_taps = rows ? int(g.KW) : 0;
    k->row_step = rows ? int(step) : 0;
    // Packed int weights are s8 values; X = src - zero point stays in 16
    // bits for these zero points: the row kernels may multiply in 16 bits.
    const int64_t zp = src_zero_point;
    const bool narrow = (k->kind == dw_kind::u8 && zp >= -32512 && zp <= 32767) ||
                        (k->kind == dw_kind::s8 && zp >= -32640 && zp <= 32640);
    // Byte-dot kernels (vpdpbusd on the raw source bytes; any zero point)
    // where the backend has them and the CPU is one they were measured
    // faster on (cpu_info::int8_dw_byte_dot), for every call: the tap
    // kernels (edge pixels, shapes without row kernels) are byte-dot row
    // kernels with R = S = 1, whose promise every tap list keeps.  Measured
    // on the Intel Xeon VM, 1 thread, MobileNet-v2's u8 depthwise layers:
    // see docs/conv.md.
    const bool int_kind = k->kind == dw_kind::u8 || k->kind == dw_kind::s8;
    k->byte_dot = int_kind && be.supports_byte_dot() &&
                  (g_byte_dot_override > 0 || (g_byte_dot_override < 0 && cpu::info().int8_dw_byte_dot));
    k->multi_row = k->byte_dot || be.supports_rows();
    const uint8_t row_int = k->byte_dot ? DW_INT_BYTE_DOT : narrow ? DW_INT_NARROW16 : 0;
    // bf16 pair-dot kernels (two kernel rows per vdpbf16ps) for the
    // interior tiles of output rows with 2..kDwMaxDotRows kernel rows in
    // bounds, where vdpbf16ps runs at the FMA's rate (not on CPUs with
    // cpu_info::bf16_dot_half_rate).  Measured on the Zen 4 VM, 1 thread,
    // MobileNet-v2's bf16 depthwise layers: see docs/conv.md.
    k->bf16_pair = k->kind == dw_kind::bf16 && k->row_taps > 0 && be.supports_bf16_pair_dot() &&
                   (g_bf16_pair_override > 0 || (g_bf16_pair_override < 0 && !cpu::info().bf16_dot_half_rate));
    // The descriptor of kernel m: row kernels, or the tap kernels.
    // A fused chain without scales skips the multiply (DW_FLAG_NO_SCALE).
    const bool no_scale = chain.scales.empty();
    auto desc_of = [&](int m, bool row, uint8_t epi) {
        if (row) return make_dw_desc(uint8_t(be.tier()), k->kind, m, src_zero_point != 0, k->row_taps,
                                     k->row_step, row_int, epi, no_scale);
        if (k->byte_dot)
            return make_dw_desc(uint8_t(be.tier()), k->kind, m, src_zero_point != 0, 1, 1, DW_INT_BYTE_DOT,
                                epi, no_scale);
        return make_dw_desc(uint8_t(be.tier()), k->kind, m, src_zero_point != 0, 0, 1, 0, epi, no_scale);
    };
    for (int m = 1; m <= kDwMaxM; ++m)
        for (int row = 0; row < (k->row_taps > 0 ? 2 : 1); ++row) {
            dw_ukernel_ref ref;
            const anvil_status_t st = be.get(desc_of(m, row != 0, 0), &ref);
            if (st != anvil_success) return st;
            (row ? k->fn_row : k->fn)[m] = ref.fn;
            k->keep_alive.push_back(ref.keep_alive);
        }
    // G-row byte-dot kernels for the numbers of in-bounds kernel rows that
    // the output rows have (3x3 with padding 1: 3 inside, 2 at the top and
    // bottom rows).
    bool want_g[kDwMaxDotRows + 1] = {};
    if ((k->byte_dot || k->bf16_pair) && k->row_taps > 0)
        for (int64_t oh = 0; oh < g.OH; ++oh) {
            const int64_t ih0 = oh * g.SH - g.PT;
            int64_t lo = 0, hi = g.KH;
            while (lo < g.KH && ih0 + lo * (g.DH + 1) < 0) ++lo;
            while (hi > lo && ih0 + (hi - 1) * (g.DH + 1) >= g.IH) --hi;
            if (hi - lo >= 2 && hi - lo <= kDwMaxDotRows) want_g[hi - lo] = true;
        }
    auto g_desc = [&](int m, int G, uint8_t epi) {
        return make_dw_desc(uint8_t(be.tier()), k->kind, m, src_zero_point != 0, k->row_taps, k->row_step,
                            dw_byte_dot_mode(G), epi, no_scale);
    };
    for (int G = 2; G <= kDwMaxDotRows; ++G)
        for (int m = 1; m <= kDwMaxM && want_g[G]; ++m) {
            dw_ukernel_ref ref;
            const anvil_status_t st = be.get(g_desc(m, G, 0), &ref);
            if (st != anvil_success) return st;
            k->fn_grows[G][m] = ref.fn;
            k->keep_alive.push_back(ref.keep_alive);
        }
    // Fused kernels for bf16 / int8 sources (an f32 one without a chain
    // writes dst directly anyway), both bias variants.
    const uint8_t epi = be.supports_fused_epilogue() ? fused_epi_of(chain) : 0;
    if (!epi) return anvil_success;
    for (int bias = 0; bias < 2; ++bias)
        for (int m = 1; m <= kDwMaxM; ++m)
            for (int row = 0; row < (k->row_taps > 0 ? 2 : 1); ++row) {
                dw_ukernel_ref ref;
                const anvil_status_t st = be.get(desc_of(m, row != 0, uint8_t(epi | (bias ? DW_EPI_BIAS : 0))), &ref);
                if (st != anvil_success) return st;
                (row ? k->fn_row_fused : k->fn_fused)[bias][m] = ref.fn;
                k->keep_alive.push_back(ref.keep_alive);
            }
    for (int bias = 0; bias < 2; ++bias)
        for (int G = 2; G <= kDwMaxDotRows; ++G)
            for (int m = 1; m <= kDwMaxM && want_g[G]; ++m) {
                dw_ukernel_ref ref;
                const anvil_status_t st = be.get(g_desc(m, G, uint8_t(epi | (bias ? DW_EPI_BIAS : 0))), &ref);
                if (st != anvil_success) return st;
                k->fn_grows_fused[bias][G][m] = ref.fn;
                k->keep_alive.push_back(ref.keep_alive);
            }
    k->fused = true;
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
    c.w = reinterpret_cast<const float *>(static_cast<const uint8_t *>(ops.weights) +
                                          (k.byte_dot ? p.dw_dot_offset : 0));
    if (k.bf16_pair)
        c.pair_w = reinterpret_cast<const uint32_t *>(static_cast<const uint8_t *>(ops.weights) + p.dw_pair_offset);
    c.zero_point = src_zero_point;
    const bool direct = p.src == src_elem::f32 && chain.out == lowp::out_type::f32 &&
                        chain.scales.empty() && !ops.bias && chain.ops.empty() &&
                        chain.c_zero_point == 0.0f;
    const bool fused = k.fused && !direct;
    if (fused) {
        const int b = ops.bias ? 1 : 0;
        c.fused_fn = k.fn_fused[b];
        c.fused_row = k.fn_row_fused[b];
        c.fused_grows = k.fn_grows_fused[b];
        c.dst = static_cast<uint8_t *>(ops.dst);
        c.out_bytes = lowp::out_type_bytes(chain.out);
        c.scales_per_n = !chain.scales.empty() && chain.scales_per_n;
        c.scales = chain.scales.empty() ? &kOne : chain.scales.data();
        c.bias = ops.bias;
        c.dst_zero_point = chain.c_zero_point;
        c.alpha = chain.ops.empty() ? 0.0f : chain.ops[0].alpha;
        c.beta = chain.ops.empty() ? 0.0f : chain.ops[0].beta;
    }
    const bool writes_dst = direct || fused;
    c.walk = row_walk_of(g, p.eb, fused ? c.out_bytes : 4, k.byte_dot);
    const int nthreads = threading::num_threads();
    dw_split split;
    if (nthreads <= 1 || !k.split_memo.get(nthreads, !writes_dst, &split)) {
        split = choose_split(g, nthreads, writes_dst, k.byte_dot ? 64 : 32);
        if (nthreads > 1) k.split_memo.put(nthreads, !writes_dst, split);
    }
    c.cblock = split.cblock;
    c.cblocks = ceil_div(g.OC, c.cblock);
    c.group_rows = split.group_rows;
    const int64_t items = g.N * ceil_div(g.OH, c.group_rows) * c.cblocks;
    const int64_t nw = std::min<int64_t>(items, nthreads);
    const int64_t acc_bytes = kDwAccEntries * 4;
    const int64_t taps_bytes = g.taps() * int64_t(sizeof(void *));
    const int64_t slot_bytes = acc_bytes + 2 * ((taps_bytes + 63) / 64 * 64);
    auto *slots = static_cast<uint8_t *>(lowp::scratch_acc().get(slot_bytes * nw));
    if (!slots) return anvil_out_of_memory;
    lowp::chain_epilogue epi(chain, ops.dst, g.OC, ops.binary, ops.bias);
    c.epi = direct ? nullptr : &epi;
    c.direct_dst = direct ? static_cast<float *>(ops.dst) : nullptr;
    std::vector<int64_t> first(size_t(nw + 1), items);
    first[0] = 0;
    if (nw > 1)
        split_ranges(items, nw, [&](int64_t it) { return item_cost(g, split, it); }, first.data());
    auto worker = [&](int64_t w) {
        uint8_t *slot = slots + w * slot_bytes;
        auto **st = reinterpret_cast<const uint8_t **>(slot + acc_bytes);
        auto **wt = reinterpret_cast<const void **>(slot + acc_bytes + (taps_bytes + 63) / 64 * 64);
        const int64_t i0 = first[size_t(w)], i1 = first[size_t(w + 1)];
        for (int64_t it = i0; it < i1; ++it)
            if (c.group_rows > 1)
                run_row_group(c, it, slot, st, wt);
            else
                run_row_block(c, it, slot, st, wt);
    };
    if (nw <= 1)
        worker(0);
    else
        threading::parallel_for(nw, worker);
    return anvil_success;
}

}  // namespace anvil::conv
