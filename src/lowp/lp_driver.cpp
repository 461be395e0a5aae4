// The lp GEMM driver (see lp_driver.h).
//
// Loop nest of one task (an M block x an N block, independent of every
// other task, so no two threads ever write the same C element and K is
// never split across threads: results do not depend on the thread count):
//   for each K block (kcg groups):          the B micro-panels of this block
//     for each 32-column panel:             sit in L1 while ...
//       for each 12-row tile:               ... every row tile of the M block
//         kernel: acc tile (+)= A tile . B micro-panel
//   epilogue(acc block) -> C                the single store
// The accumulator block (mc x nc) is per thread and stays in L2.  When the
// epilogue's chain fits the kernels' fused epilogue (lowp/fused_chain.h),
// the last K block's kernels finish the chain in registers and store C
// themselves instead, and the block epilogue is skipped.
#include "lowp/lp_driver.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cache/call_memo.h"
#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "lowp/lp_inplace.h"
#include "lowp/lp_scratch.h"
#include "threading/parallel.h"

namespace anvil::lowp {
namespace {

// Overflow-free for a near INT64_MAX (a >= 0, b > 0): anvil_explain_gemm
// plans calls with sizes that no buffer could hold.
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }


// Work below which a second thread costs more than it saves (ops, 2*M*N*K).
constexpr double kMinOpsPerThread = 4e6;

// Row tiles of an M block of m rows, for kernels of at most mr rows.  For
// the vector kernels (mr = 12): 12 rows each, except that a short
// remainder (1..7 rows) is merged with the tile before it and the two are
// split evenly (16 = 8 + 8, 13 = 7 + 6): a 4-row tile holds only 8
// accumulators, too few to hide the dot-product latency, so 12 + 4 runs
// slower than 8 + 8.  Tile kernels (mr = 32) take full tiles and the
// remainder as is: a kernel of 16 rows or fewer uses half the tiles.
// Calls f(first_row, height) in order.
template <typename F>
void for_row_tiles(int64_t m, int mr, const F &f) {
    const int64_t full = m / mr, tail = m % mr;
    if (mr != kMR || tail == 0 || tail >= 8 || full == 0) {
        for (int64_t t = 0; t < full; ++t) f(t * mr, mr);
        if (tail) f(full * mr, int(tail));
        return;
    }
    for (int64_t t = 0; t + 1 < full; ++t) f(t * kMR, int(kMR));
    const int64_t r0 = (full - 1) * kMR, rest = kMR + tail;
    const int h1 = int((rest + 1) / 2);
    f(r0, h1);
    f(r0 + h1, int(rest - h1));
}

// The kernels a call needs: [height][nv - 1][accumulate].  With `fused`,
// the last K block runs kf[height][nv - 1] instead: kernels that apply the
// epilogue to their accumulator registers and store C themselves
// (lp_ukernel.h's fused epilogue; the epilogue's apply() is then skipped),
// which saves the accumulator block's round trip and a pass per post-op.
struct kernel_set {
    const lp_backend *be = nullptr;
    int mr = kMR;  // the backend's largest kernel
    lp_ukernel_ref k[kMaxKernelRows + 1][2][2];
    bool fused = false;
    lp_ukernel_ref kf[kMaxKernelRows + 1][2];
};

anvil_status_t fetch_kernels(const lp_backend &be, const lp_problem &p, const lp_blocking &b,
                             const lp_epilogue &epi, bool a_f32, kernel_set *ks) {
    const bool multi_k = b.kg > b.kcg;
    // Column tiles are 32 wide except a tail of 1..16 columns (nv = 1).
    const bool need_nv2 = p.N > kLanes;
    const bool need_nv1 = (p.N % kNR) != 0 && (p.N % kNR) <= kLanes;
    ks->be = &be;
    ks->mr = std::min(be.max_rows(), kMaxKernelRows);
    bool heights[kMaxKernelRows + 1] = {};
    for (int64_t block : {std::min(b.mc, p.M), p.M % b.mc})
        if (block > 0) for_row_tiles(block, ks->mr, [&](int64_t, int h) { heights[h] = true; });
    for (int h = 1; h <= ks->mr; ++h) {
        if (!heights[h]) continue;
        for (int nv = 1; nv <= 2; ++nv) {
            if ((nv == 2 && !need_nv2) || (nv == 1 && !need_nv1)) continue;
            for (int acc = 0; acc <= (multi_k ? 1 : 0); ++acc) {
                const lp_ukernel_desc d = make_lp_desc(uint8_t(be.tier()), p.kind, h, nv, acc != 0, a_f32);
                const anvil_status_t st = be.get(d, &ks->k[h][nv - 1][acc]);
                if (st != anvil_success) return st;
            }
        }
    }
    uint8_t out = 0, flags = 0, ops = 0;
    if (!be.supports_fused_epilogue() || !epi.fused_bits(&out, &flags, &ops)) return anvil_success;
    for (int h = 1; h <= ks->mr; ++h) {
        if (!heights[h]) continue;
        for (int nv = 1; nv <= 2; ++nv) {
            if ((nv == 2 && !need_nv2) || (nv == 1 && !need_nv1)) continue;
            const lp_ukernel_desc d =
                make_lp_epi_desc(uint8_t(be.tier()), p.kind, h, nv, multi_k, out, flags, ops, a_f32);
            const anvil_status_t st = be.get(d, &ks->kf[h][nv - 1]);
            if (st != anvil_success) return st;
        }
    }
    ks->fused = true;
    return anvil_success;
}

// Everything about a call that depends only on its shape, types, thread
// count and the epilogue's fused form: the blocking and the kernels.  A
// server repeating a shape finds it in a small per-thread memo instead of
// building a kernel_set (some 200 kernel references) and making up to 8
// cache lookups per call, which at 16^3 cost as much as the arithmetic.
struct lp_setup {
    lp_blocking b;
    kernel_set ks;
};

struct lp_setup_key {
    const lp_backend *be = nullptr;
    uint64_t cache_epoch = 0;
    int64_t M = 0, N = 0, K = 0;
    int nthreads = 0;
    lp_kind kind = lp_kind::bf16;
    bool prepacked = false;  // choose_lp_blocking's M block depends on it
    bool fusable = false;
    bool a_f32 = false;
    uint8_t out = 0, flags = 0, ops = 0;
    bool operator==(const lp_setup_key &o) const {
        return be == o.be && cache_epoch == o.cache_epoch && M == o.M && N == o.N && K == o.K &&
               nthreads == o.nthreads && kind == o.kind && prepacked == o.prepacked &&
               fusable == o.fusable && a_f32 == o.a_f32 &&
               out == o.out && flags == o.flags && ops == o.ops;
    }
};

lp_blocking choose_call_blocking(const lp_backend &be, const lp_problem &p) {
    lp_blocking b = choose_lp_blocking(p);
    // Tile kernels take K 16 groups per step (a shorter tail goes through a
    // stack copy): K blocks a whole number of steps.
    if (be.uses_tiles() && b.kcg < b.kg) b.kcg = std::min(b.kg, round_up(b.kcg, 16));
    return b;
}

// The calling thread's last few setups (cache/call_memo.h); cache::clear()
// bumps the epoch in the key, so no entry outlives a cleared cache.
thread_local cache::call_memo<lp_setup_key, lp_setup> t_setup_memo;

anvil_status_t find_or_make_setup(const lp_backend &be, const lp_problem &p,
                                  const lp_epilogue &epi, bool a_f32, const lp_setup **out) {
    lp_setup_key key;
    key.be = &be;
    key.cache_epoch = cache::epoch();
    key.M = p.M;
    key.N = p.N;
    key.K = p.K;
    key.nthreads = threading::num_threads();
    key.kind = p.kind;
    key.prepacked = p.packed_b != nullptr;
    key.a_f32 = a_f32;
    key.fusable = be.supports_fused_epilogue() && epi.fused_bits(&key.out, &key.flags, &key.ops);
    return t_setup_memo.find_or_make(
        key,
        [&](lp_setup *s) {
            s->b = choose_call_blocking(be, p);
            s->ks = kernel_set();
            return fetch_kernels(be, p, s->b, epi, a_f32, &s->ks);
        },
        out);
}

struct packed_a {
    const uint8_t *rows = nullptr;  // row i at rows + i * row_bytes
    int64_t row_bytes = 0;
    int64_t group_bytes = kGroupBytes;  // 8 when widened (a_f32)
    const int32_t *rowsum = nullptr;
};

// What a task computes with.  bpanel, when set, is the task's own buffer
// for one K block of its B panels: the task packs each K block there just
// before using it (B not packed ahead, see run_lp_gemm), writing its
// column sums into colsum_out.
struct task_buffers {
    void *acc = nullptr;
    uint8_t *bpanel = nullptr;
    int32_t *colsum_out = nullptr;
};

// Where a fused last K block finishes its tiles: the epilogue, the block's
// first column j0 in C and the column sums (indexed by C's column).
struct finish_ctx {
    const lp_epilogue *epi = nullptr;
    int64_t j0 = 0;
    const int32_t *colsum = nullptr;
};

// The kernel calls for rows [0, m) of the task over k-groups [g0, g0+kcg)
// of one panel (bp points at group g0), columns jc .. jc+31 of the block.
// With fin.epi (the last K block of fused kernels) they store C instead of
// the accumulators.
void run_panel_block(const lp_blocking &b, const kernel_set &ks, const packed_a &pa, int64_t i0,
                     int64_t m, int64_t n, int64_t jc, int64_t g0, const uint8_t *bp,
                     const uint8_t *b_next, void *acc, int64_t acc_ld, const finish_ctx &fin) {
    const int64_t kcg = std::min(b.kcg, b.kg - g0);
    const int accumulate = g0 > 0 ? 1 : 0;
    const int nv = int(ceil_div(std::min<int64_t>(kNR, n - jc), kLanes));
    for_row_tiles(m, ks.mr, [&](int64_t ic, int mt) {
        const lp_ukernel_ref &k = fin.epi ? ks.kf[mt][nv - 1] : ks.k[mt][nv - 1][accumulate];
        lp_ukernel_args a;
        a.a = pa.rows + (i0 + ic) * pa.row_bytes + g0 * pa.group_bytes;
        a.b = bp;
        a.acc = static_cast<uint8_t *>(acc) + (ic * acc_ld + jc) * 4;
        a.a_rs = pa.row_bytes;
        a.b_ld = int64_t(kNR) * kGroupBytes;
        a.acc_ld = acc_ld;
        a.kg = kcg;
        a.m = mt;
        a.n = std::min<int64_t>(kNR, n - jc);
        a.accumulate = accumulate;
        a.b_next = ic + mt < m ? nullptr : b_next;
        // Not zero-initialised as a whole (a hot loop), so the loop counts
        // that kernels may read are set here: one tile, one K segment.
        a.m_tiles = 1;
        a.k_segs = 1;
        if (fin.epi) {
            const int64_t j = fin.j0 + jc;
            fin.epi->fused_args(i0 + ic, j, a.n, fin.colsum ? fin.colsum + j : nullptr, &a);
        }
        call_lp_kernel(*ks.be, k, &a);
        // The residual rows of this tile for the next panel, into L2: they
        // arrive while the rest of this panel computes, a tile's worth at
        // a time (a burst of a whole panel's rows overflows the miss queue).
        if (fin.epi && jc + kNR < n)
            fin.epi->prefetch_rows(i0, fin.j0 + jc + kNR, std::min<int64_t>(kNR, n - jc - kNR), ic,
                                   ic + mt);
    });
}

// During the last K block: after the kernels of the panel at column jc,
// the epilogue's prefetch of its share of the block's rows (the panels
// split the m rows evenly), so the whole block's operands are on their way
// by the time the epilogue runs.
void prefetch_share(const lp_epilogue &epi, int64_t i0, int64_t j0, int64_t m, int64_t n,
                    int64_t jc) {
    const int64_t q = jc / kNR, panels = ceil_div(n, kNR);
    epi.prefetch_rows(i0, j0, n, m * q / panels, m * (q + 1) / panels);
}

// One task: rows [i0, i0 + m) x columns [j0, j0 + n) of C.
void run_task(const lp_problem &p, const lp_blocking &b, const kernel_set &ks,
              const packed_a &pa, const uint8_t *pb, const int32_t *colsum, int64_t i0, int64_t m,
              int64_t j0, int64_t n, const task_buffers &tb, const lp_epilogue &epi) {
    void *acc = tb.acc;
    const int64_t acc_ld = round_up(n, kNR);
    const int64_t pbg = int64_t(kNR) * kGroupBytes;  // bytes per group of a panel
    const bool fused = ks.fused && !p.zero_product;
    finish_ctx none, fin;
    if (fused) {
        fin.epi = &epi;
        fin.j0 = j0;
        fin.colsum = colsum;
    }
    // The last K block: the epilogue's share of the block's residual rows
    // after each panel, or with fused kernels, the first panel's rows
    // before it (run_panel_block fetches each next panel's).
    auto last_block_prefetch = [&](int64_t jc, bool before) {
        if (!fused) {
            if (!before) prefetch_share(epi, i0, j0, m, n, jc);
            return;
        }
        if (before && jc == 0) epi.prefetch_rows(i0, j0, std::min<int64_t>(kNR, n), 0, m);
    };
    if (p.zero_product) {
        std::memset(acc, 0, size_t(m * acc_ld * 4));
    } else if (tb.bpanel) {
        // B packed here, one K block of this task's panels at a time (one
        // pass over those rows of B; the block stays in L2), then all the
        // kernels of that K block.
        const int64_t p0 = j0 / kNR, p1 = ceil_div(j0 + n, kNR);
        if (tb.colsum_out)
            b_column_sums(p.transb, p.K, p.N, static_cast<const int8_t *>(p.B), p.ldb, p0, p1,
                          tb.colsum_out);
        // A transposed B (rows along K) under a few rows: panel by panel,
        // each panel's K blocks packed and used in turn, so the panel's 32
        // rows of B are read nearly as sequential streams (block after
        // block of the same rows) instead of a segment of every row of
        // the task per block pass.  Measured on the Zen 5 VM, 1 thread,
        // in-process A/B, bf16: 4 / 6 / 8 x 4096 x 4096 +18 / +16 / +11%,
        // 3 x 4096 x 11008 +14%, 8 x 4096 x 11008 +15%, 4 x 11008 x 4096
        // -1%; 12 rows -1..-5% (their kernels weigh more than the pack).
        constexpr int64_t kPanelOuterMaxRows = 8;
        if (p.transb && m <= kPanelOuterMaxRows) {
            for (int64_t jc = 0; jc < n; jc += kNR) {
                const int64_t q = (j0 + jc) / kNR;
                for (int64_t g0 = 0; g0 < b.kg; g0 += b.kcg) {
                    const int64_t gn = std::min(b.kcg, b.kg - g0);
                    pack_b_block(p.kind, p.transb, p.K, p.N, p.B, p.ldb, q, q + 1, g0, gn,
                                 tb.bpanel);
                    const bool last = g0 + gn == b.kg;
                    if (last) last_block_prefetch(jc, true);
                    run_panel_block(b, ks, pa, i0, m, n, jc, g0, tb.bpanel, nullptr, acc, acc_ld,
                                    last ? fin : none);
                    if (last) last_block_prefetch(jc, false);
                }
            }
        } else {
            for (int64_t g0 = 0; g0 < b.kg; g0 += b.kcg) {
                const int64_t gn = std::min(b.kcg, b.kg - g0);
                pack_b_block(p.kind, p.transb, p.K, p.N, p.B, p.ldb, p0, p1, g0, gn, tb.bpanel);
                const bool last = g0 + gn == b.kg;
                for (int64_t jc = 0; jc < n; jc += kNR) {
                    const uint8_t *bp = tb.bpanel + ((j0 + jc) / kNR - p0) * gn * pbg;
                    if (last) last_block_prefetch(jc, true);
                    run_panel_block(b, ks, pa, i0, m, n, jc, g0, bp, bp + gn * pbg, acc, acc_ld,
                                    last ? fin : none);
                    if (last) last_block_prefetch(jc, false);
                }
            }
        }
    } else {
        // B packed ahead: K blocks outermost, so each K block of A (mc rows)
        // stays in L2 while every panel of the block passes through L1.
        // The last row tile of a panel prefetches (b_next, in step with
        // its own walk) the next panel's K block, which the first tile
        // reads next: one kernel call ahead.  One row tile (M <= 12: a
        // single K block, so each panel is one stream read once) would
        // then run a whole panel ahead, and beyond L2's reach for long
        // panels (K = 11008 bf16: 704 KiB; the lines were evicted before
        // their use), so it prefetches its own panel lead_bytes ahead
        // instead (cpu_info::stream_prefetch_lead: L2 / 16 on Zen 5, 8 KiB
        // on Intel, where farther lost up to 11%; see cpu/isa.h), running
        // on into the next panel at its end (panels are contiguous): far
        // enough for memory's latency, near enough to stay in L2.  Measured
        // on the Zen 5 VM, 1 thread, in-process A/B of the bf16 matmul
        // handle, K = 11008, against the
        // next panel: own stream 8 groups ahead 1 x 4096 x 11008 +7-38%, 4
        // x 4096 x 11008 +32-70%; then 32 / 64 / 128 / 256 KiB ahead of
        // that +30 / +46 / +52 / +19% and +12 / +37 / +24 / -14%.  K = 4096
        // (panels of 128..256 KiB): 64 KiB ahead vs the next panel int8
        // -1..+5%, bf16 +6..+12%.  (Several row tiles keep the next-panel
        // hint at any K: a commit that dropped it for K = 11008 saw bf16 16
        // x 4096 x 11008 at 0.85x oneDNN in a table run, 1.21x the run
        // before; restoring it measured +8% in an in-process A/B.)
        const bool one_tile = m <= ks.mr;
        const int64_t lead_bytes = std::max<int64_t>(1, cpu::info().stream_prefetch_lead / pbg) * pbg;
        for (int64_t g0 = 0; g0 < b.kg; g0 += b.kcg) {
            const bool last = g0 + b.kcg >= b.kg;
            for (int64_t jc = 0; jc < n; jc += kNR) {
                const int64_t panel = (j0 + jc) / kNR;
                const uint8_t *bp = pb + (panel * b.kg + g0) * pbg;
                if (last) last_block_prefetch(jc, true);
                const uint8_t *hint = bp + (one_tile ? lead_bytes : b.kg * pbg);
                run_panel_block(b, ks, pa, i0, m, n, jc, g0, bp, hint, acc, acc_ld,
                                last ? fin : none);
                if (last) last_block_prefetch(jc, false);
            }
        }
    }
    if (fused) return;  // the kernels stored C
    lp_block blk;
    blk.acc = acc;
    blk.acc_ld = acc_ld;
    blk.i0 = i0;
    blk.j0 = j0;
    blk.m = m;
    blk.n = n;
    blk.rowsum = pa.rowsum ? pa.rowsum + i0 : nullptr;
    blk.colsum = colsum ? colsum + j0 : nullptr;
    epi.apply(blk);
}

}  // namespace

namespace {
// Rows of an M block when there are several (see choose_lp_blocking).
constexpr int64_t kBlockRows = 96;
// Up to this M, B packed by the call is packed inside the tasks of one M
// block (see choose_lp_blocking).
constexpr int64_t kMaxOneBlockRows = 256;
bool b_packed_in_task(const lp_problem &p) { return !p.packed_b && p.M <= kMaxOneBlockRows; }
// B packed by the call ahead of the tasks, into the prepacked layout (whole
// panels, all of K), because several M blocks read it.
bool b_packed_ahead(const lp_problem &p) { return !p.packed_b && !b_packed_in_task(p); }
}  // namespace

lp_blocking choose_lp_blocking(const lp_problem &p) {
    const cpu::cache_sizes &cs = cpu::info().caches;
    lp_blocking b;
    b.kg = std::max<int64_t>(1, k_groups(p.kind, p.K));
    // K block: the kcg x 32 micro-panel of B (128 bytes per group) is
    // reused by every row tile of the M block, so it should stay in L1
    // next to the 12-row A tile (48 bytes per group): 2/3 of L1d for both.
    // Split K evenly so the last block is not a sliver.
    const int64_t per_group = int64_t(kNR + kMR) * kGroupBytes;
    int64_t kcg_max = std::clamp<int64_t>(cs.l1d * 2 / 3 / per_group, 32, 2048);
    // Prepacked weights (or B packed ahead by the call, the same layout):
    // each panel is one contiguous full-depth stream that the kernels
    // prefetch, so a K block may outgrow L1 and come from L2;
    // up to kPrepackedKcg groups (64 KiB of panel) means fewer passes over
    // the accumulator block (loaded and stored once per K block) and fewer
    // kernel calls.  Measured on Zen 5, 1 thread, planned matmul vs oneDNN's
    // in the same runs (181 -> 512 groups): bf16 1024^3 0.93 -> 0.97x,
    // 2048^3 0.92 -> 0.96x, 256x4096x11008 0.90 -> 0.97x; int8 within
    // noise to +3%.  Much longer blocks lose (whole-K blocks of 5504 groups
    // at K = 11008: 0.92 -> 0.84x): the panel no longer stays in L2 next
    // to the A tiles.  B packed ahead by a BLAS-style call (M > 256) is in
    // the same layout and gains alike (in-process A/B, 1 thread: bf16
    // 1024^3 +4%, 512x4096x4096 +5%, int8 1024^3 / 2048^3 +2%).  The bits
    // do not depend on the blocking (lp_ukernel.h).
    constexpr int64_t kPrepackedKcg = 512;
    if (p.packed_b || b_packed_ahead(p)) kcg_max = std::max(kcg_max, kPrepackedKcg);
    const int64_t nkb = ceil_div(b.kg, kcg_max);
    b.kcg = ceil_div(b.kg, nkb);
    // One row tile: each B micro-panel is used once, so there is no reuse
    // to block for; all of K in one kernel call reads every panel as one
    // sequential stream and keeps the accumulators in registers.  Not when
    // the task packs B itself: its packed block (kcg groups of nc columns)
    // must stay in L2 between the pack and the kernels, and all of K is
    // 1..2 MiB at K = 4096 (measured on the Zen 5 VM, 1 thread, in-process
    // A/B: bf16 B 'T' 4 x 4096 x 4096 +59%, 8 x 4096 x 11008 +60%, 12 x
    // 4096 x 4096 +31%; u8s8s32 12 x 4096 x 4096 +12%).
    if (p.M <= kMR && !b_packed_in_task(p)) b.kcg = b.kg;
    const int nthr = threading::num_threads();
    // 2 M N K may exceed int64 (K up to 2^62 with alpha = 0): checked
    // integer products (a small call's few ns matter here).
    int64_t mn = 0, mnk = 0;
    if (__builtin_mul_overflow(p.M, p.N, &mn) || __builtin_mul_overflow(mn, p.K, &mnk) ||
        mnk > INT64_MAX / 2) {
        b.nthreads = nthr;
    } else {
        const int64_t useful = 2 * mnk / int64_t(kMinOpsPerThread);
        b.nthreads = useful >= nthr ? nthr : int(std::max<int64_t>(1, useful));
    }
    // M block: its A rows (kcg groups each) are re-read from L2 for every
    // panel, and its accumulator block (mc x nc, 4 bytes each) lives in L2
    // too: mc = 96 rows with nc <= 256 columns is 96 KiB of accumulators.
    // When B is packed by the call and M <= 256, one M block of all rows
    // (up to 256 KiB of accumulators): B is then packed inside the tasks
    // and read from memory once, instead of packed ahead into a buffer
    // that every M block reads back (measured Zen 5, 1 thread, 128..256 x
    // 4096..11008 x 4096..11008: bf16 +10-20%, int8 +3-10%; squares from
    // 512 and prepacked weights unchanged, so they keep 96).
    b.mc = b_packed_in_task(p) ? p.M : std::min<int64_t>(p.M, kBlockRows);
    // N block: 256 columns (8 panels) per task; narrower when that leaves a
    // thread idle on a one-block M.  A row-major B packed inside the tasks
    // with up to kWideTaskMaxRows rows: 512 columns, so each task reads
    // 512-byte (int8) or 1 KiB (bf16) runs of every row of B instead of
    // 256 / 512: half the rows (pages) visited per byte, the pack being the
    // call's main cost at small M.  Measured on the Zen 5 VM, 1 thread,
    // in-process A/B: u8s8s32 16 x 4096 x 4096 / 11008 x 4096 / 4096 x
    // 11008 +7-25% / +16-32% / +16-22%, 32 and 64 rows +3-8%, 128 rows +2%,
    // bf16 16 rows +8-17%.  Wider still lost at 4 KiB row strides (1024
    // columns: 16 x 4096 x 4096 0.93x); a transposed B (rows along K)
    // gained nothing.  The accumulator block stays within 256 KiB.
    constexpr int64_t kWideTaskMaxRows = 128;
    const bool wide = b_packed_in_task(p) && !p.transb && p.M <= kWideTaskMaxRows;
    b.nc = std::min<int64_t>(round_up(p.N, kNR), wide ? 512 : 256);
    const int64_t m_blocks = ceil_div(p.M, b.mc);
    if (m_blocks * ceil_div(p.N, b.nc) < 2 * b.nthreads) {
        const int64_t want = ceil_div(2 * b.nthreads, m_blocks);
        b.nc = std::max<int64_t>(kNR, round_up(ceil_div(p.N, want), kNR));
    }
    return b;
}

namespace {
int64_t elem_size(lp_elem e) { return e == lp_elem::bf16 ? 2 : 1; }
}  // namespace

// Whether the kernels read A's rows where they are instead of a packed
// copy: A not transposed (rows run along K), already in the kernels'
// form (u8 or bf16: s8 needs its +128 shift), K a whole number of groups
// (nothing past K is read: no padding needed), no row sums wanted (those
// are made while packing), vector kernels (AMX tiles read whole 64-byte
// rows), and a row stride that is not a multiple of 2 KiB (12 rows of a
// tile would share one or two L1 sets; the packed rows are an odd number
// of lines apart for that reason).  Copying A cost 10-15% of the small
// items of an attention batch (128 x 64 x 128 int8: a memcpy per row).
bool a_read_in_place(const lp_backend &be, const lp_problem &p, bool want_rowsum) {
    if (p.transa || p.a_elem == lp_elem::s8 || want_rowsum || be.uses_tiles()) return false;
    const int64_t per_group = kGroupBytes / elem_size(p.a_elem);
    const int64_t row_bytes = p.lda * elem_size(p.a_elem);
    return p.K % per_group == 0 && row_bytes % 2048 != 0;
}

namespace {
std::atomic<int> g_widen_override{-1};
}  // namespace

void set_widen_bf16_a_override(int mode) { g_widen_override.store(mode < 0 ? -1 : mode > 0); }

// Whether a call runs the kernels on A widened to fp32 (lp_ukernel.h's
// a_f32): bf16 on a backend that prefers them (vdpbf16ps at half the FMA's
// rate, cpu_info::bf16_dot_half_rate) from kWidenMinRows rows.  Widening
// A costs a pass over it (M x K, read once per call), and the kernels'
// rows then take two FMAs per group with A broadcast from memory.
// Measured on the Intel Xeon VM (family 6 model 207), 1 thread,
// in-process A/B against vdpbf16ps, anvil_gemm_bf16bf16f32: NN 16 / 64 /
// 256 x 4096 x 4096 +40 / +65 / +72%, 1024^3 +74%; NT x 1024 x 1024 at
// M = 1 / 2 / 3 / 4 / 8 / 12: -2 / +2 / -10 / +20 / +33 / +43%.
bool widen_bf16_a(const lp_backend &be, const lp_problem &p) {
    constexpr int64_t kWidenMinRows = 4;
    if (p.kind != lp_kind::bf16 || p.zero_product) return false;
    const int mode = g_widen_override.load(std::memory_order_relaxed);
    if (mode >= 0) return mode == 1 && be.accepts_widened_bf16_a();
    return p.M >= kWidenMinRows && be.prefers_widened_bf16_a();
}

bool widen_bf16_a_when(const lp_backend &be, bool pays) {
    const int mode = g_widen_override.load(std::memory_order_relaxed);
    if (mode >= 0) return mode == 1 && be.accepts_widened_bf16_a();
    return pays && be.prefers_widened_bf16_a();
}

anvil_status_t run_lp_gemm(const lp_backend &be, const lp_problem &p, const lp_epilogue &epi) {
    if (p.M == 0 || p.N == 0) return anvil_success;
    if (inplace_path_applies(be, p)) return run_inplace_path(be, p, epi);
    const bool a_f32 = widen_bf16_a(be, p);
    // A zero product runs no kernel: blocking only (no memo entry).
    lp_blocking zb;
    const lp_setup *setup = nullptr;
    if (p.zero_product) {
        zb = choose_call_blocking(be, p);
    } else {
        const anvil_status_t st = find_or_make_setup(be, p, epi, a_f32, &setup);
        if (st != anvil_success) return st;
    }
    const lp_blocking &b = setup ? setup->b : zb;
    static const kernel_set kNoKernels;
    const kernel_set &ks = setup ? setup->ks : kNoKernels;

    // Packed A (all rows; it is M x K bytes, small next to the work) with
    // its row sums after it.
    packed_a pa;
    pa.row_bytes = a_row_bytes(b.kg);
    const bool want_rowsum = epi.needs_rowsum && !p.zero_product;
    if (a_f32) {
        pa.row_bytes = a_row_bytes_f32(b.kg);
        pa.group_bytes = 2 * 4;
        auto *abuf = static_cast<uint8_t *>(scratch_apack().get(round_up(p.M * pa.row_bytes, 64)));
        if (!abuf) return anvil_out_of_memory;
        pack_a_bf16_widened(p.transa, p.K, static_cast<const uint16_t *>(p.A), p.lda, 0, p.M, abuf,
                            pa.row_bytes);
        pa.rows = abuf;
    } else if (!p.zero_product && a_read_in_place(be, p, want_rowsum)) {
        pa.rows = static_cast<const uint8_t *>(p.A);
        pa.row_bytes = p.lda * elem_size(p.a_elem);
    } else if (!p.zero_product) {
        const int64_t a_bytes = round_up(p.M * pa.row_bytes, 64);
        auto *abuf = static_cast<uint8_t *>(scratch_apack().get(a_bytes + (want_rowsum ? p.M * 4 : 0)));
        if (!abuf) return anvil_out_of_memory;
        auto *rowsum = want_rowsum ? reinterpret_cast<int32_t *>(abuf + a_bytes) : nullptr;
        pack_a(p.a_elem, p.transa, p.K, p.A, p.lda, 0, p.M, abuf, pa.row_bytes, rowsum);
        pa.rows = abuf;
        pa.rowsum = rowsum;
    } else if (epi.needs_rowsum) {
        // No product: the compensation terms are of a zero dot product too.
        auto *z = static_cast<int32_t *>(scratch_apack().get(p.M * 4));
        if (!z) return anvil_out_of_memory;
        std::memset(z, 0, size_t(p.M * 4));
        pa.rowsum = z;
    }

    // Packed B: the caller's; or, with one M block, packed panel by panel
    // inside each task (every panel is used by that task only, so its
    // packed bytes never leave L2: for the small-M calls that halves the
    // memory traffic); or packed ahead here, in parallel over panels, when
    // several M blocks share each panel.
    const int64_t panels = ceil_div(p.N, kNR);
    const int64_t m_blocks = ceil_div(p.M, b.mc), n_blocks = ceil_div(p.N, b.nc);
    const int64_t tasks = m_blocks * n_blocks;
    const uint8_t *pb = p.packed_b;
    const int32_t *colsum = p.packed_colsum;
    const bool want_colsum = epi.needs_colsum;
    const bool pack_in_task = !pb && !p.zero_product && m_blocks == 1;
    int32_t *colsum_out = nullptr;
    if (!pb || (want_colsum && !colsum)) {
        const int64_t b_bytes =
            (p.zero_product || pack_in_task) ? 0 : round_up(packed_b_bytes(p.kind, p.K, p.N), 64);
        auto *bbuf = static_cast<uint8_t *>(scratch_bpack().get(b_bytes + panels * kNR * 4));
        if (!bbuf) return anvil_out_of_memory;
        auto *cs = want_colsum ? reinterpret_cast<int32_t *>(bbuf + b_bytes) : nullptr;
        if (p.zero_product) {
            if (cs) std::memset(cs, 0, size_t(panels * kNR * 4));
        } else if (pack_in_task) {
            colsum_out = cs;  // filled by the tasks, panel by panel
        } else if (!pb) {
            const int64_t n_chunks = b.nthreads > 1 ? std::min<int64_t>(panels, b.nthreads * 4) : 1;
            threading::parallel_for(n_chunks, [&](int64_t c) {
                const int64_t q0 = panels * c / n_chunks, q1 = panels * (c + 1) / n_chunks;
                pack_b(p.kind, p.transb, p.K, p.N, p.B, p.ldb, q0, q1, bbuf, cs);
            });
            pb = bbuf;
        }
        colsum = cs;
    }

    // Per-worker buffers (accumulator block, and a B panel when packing in
    // the task), taken from the caller's scratch before anything is
    // written, so running out of memory leaves C untouched.
    const int64_t acc_bytes = round_up(b.mc * round_up(b.nc, kNR) * 4, 64);
    const int64_t panel_bytes = pack_in_task ? b.kcg * round_up(b.nc, kNR) * kGroupBytes : 0;
    const int64_t slot_bytes = acc_bytes + round_up(panel_bytes, 64);
    const int nslots = (b.nthreads <= 1 || tasks == 1) ? 1 : b.nthreads;
    auto *slots = static_cast<uint8_t *>(scratch_acc().get(slot_bytes * nslots));
    if (!slots) return anvil_out_of_memory;
    auto task = [&](int64_t t, uint8_t *slot) {
        const int64_t ib = t / n_blocks, jb = t % n_blocks;
        const int64_t i0 = ib * b.mc, j0 = jb * b.nc;
        task_buffers tb;
        tb.acc = slot;
        tb.bpanel = pack_in_task ? slot + acc_bytes : nullptr;
        tb.colsum_out = colsum_out;
        run_task(p, b, ks, pa, pb, colsum, i0, std::min(b.mc, p.M - i0), j0,
                 std::min(b.nc, p.N - j0), tb, epi);
    };
    // Tile backends: each thread leaves with its tile state released.
    const bool tiles = !p.zero_product && be.uses_tiles();
    if (nslots == 1) {
        for (int64_t t = 0; t < tasks; ++t) task(t, slots);
        if (tiles) be.release_thread();
        return anvil_success;
    }
    // Threads take tasks round-robin by index: worker w runs t = w, w +
    // nslots, ... with slot w, so slots are never shared.
    threading::parallel_for(nslots, [&](int64_t w) {
        for (int64_t t = w; t < tasks; t += nslots) task(t, slots + w * slot_bytes);
        if (tiles) be.release_thread();
    });
    return anvil_success;
}

}  // namespace anvil::lowp
