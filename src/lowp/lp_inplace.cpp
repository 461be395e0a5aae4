// The in-place small-M path (see lp_inplace.h): int8 and bf16.
//
// Rows of op(A) (plus, when the epilogue needs column sums, one extra row
// of ones: its dot product with B's column j is that column's sum, so B is
// not read a second time) are packed as usual; then each task (a block of
// columns) runs chunks of rows x columns of the in-place kernels into its
// accumulator block and hands it to the epilogue.  int8 accumulation is
// exact, and every bf16 kernel (JIT row-B; Highway dot and row-B) adds the
// pairs in the packed kernels' order, so the results equal the packed
// path's bit for bit.
#include "lowp/lp_inplace.h"

#include "common/jit_state.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

#include "cpu/isa.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_dot.h"
#include "lowp/lp_pack.h"
#include "lowp/lp_rowb.h"
#include "lowp/lp_scratch.h"
#include "threading/parallel.h"

namespace anvil::lowp {
namespace {

constexpr int64_t kMaxRows = 16;
// Row-major B (int8, JIT): K is walked in blocks of kRowbKBlock rows,
// outermost; within a block every chunk of up to 4 rows runs its kernels
// left to right across the task's columns, so B's rows are read as
// sequential streams (the kernels prefetch a few lines ahead in each row)
// and the later chunks find the block in L2.  Before, each chunk walked a
// 192-column strip down all of K: three lines per 4 KiB page of B, a page
// per row, a TLB miss per row and strip.  Measured on the Zen 5 VM, 1
// thread, B 4096 x 4096, u8s8s32 vs dnnl_gemm_u8s8s32 alternating: in one
// period (one half hour) strips -> K blocks of 64 took M = 1 61 -> 93
// GOP/s, 2 127 -> 174, 4 123 -> 250, 8 188 (packed B) -> 255,
// 4x11008x4096 181 -> 270; in a later one, 8 alternating runs of each
// build, both walks ran the same (M = 4: 198-243 vs 188-240 GOP/s): the
// strips' cost comes and goes with the machine (TLB reach under the
// hypervisor?), the blocks' does not.  K blocks of 128..512 rows were
// within noise of 64, a little lower.  Up to 8 rows (9 with the row of
// ones) the walk matches or beats packing B per call; 12 rows do not (215
// vs 274 packed: the interleaving is redone for every chunk).
constexpr int64_t kRowbInt8MaxRows = 8;
constexpr int64_t kRowbKBlock = 64;
// A kernel call reads the same 64 bytes of each of its K block's rows, and
// prefetches the line 256 bytes on: with a row stride that is a multiple of
// 4 KiB every one of those lines falls in the same L1 set (64 sets of 64
// bytes in a 32..48 KiB L1), which holds 8..12 of them, so the prefetched
// lines evict each other.  The K block is cut until at most
// kRowbRowsPerL1Set rows share a set (4 KiB strides: 16 rows).  Measured
// on Zen 5, 1 thread, u8s8s32, GOP/s for K blocks of 16 / 64 rows:
// 4x4096x11008 (4 KiB stride) 164-172 / 141-143, 4x4096x4096 270-274 /
// 229-244; but 4x11008x4096 (stride 11008: 4 rows per set at 64) 160-167 /
// 294-301, 4x256x256 237-361 / 333-471 (more kernel calls and accumulator
// passes per B byte).  Blocks of 8 rows were slower again.
constexpr int64_t kRowbRowsPerL1Set = 16;
constexpr int64_t kL1Sets = 64, kLineBytes = 64;

// The K block for B rows ldb bytes apart (int8: elements are bytes).  Row
// k's set is floor(k * ldb / 64) mod 64, which only depends on ldb mod
// 4096 (ldb itself may be near INT64_MAX: no k * ldb product).
int64_t rowb_k_block(int64_t ldb) {
    const int64_t stride = ldb % (kL1Sets * kLineBytes);
    int64_t kb = kRowbKBlock;
    for (; kb > kRowbRowsPerL1Set; kb -= 16) {
        int per_set[kL1Sets] = {};
        int worst = 0;
        for (int64_t k = 0; k < kb; ++k)
            worst = std::max(worst, ++per_set[(k * stride / kLineBytes) % kL1Sets]);
        if (worst <= kRowbRowsPerL1Set) break;
    }
    return kb;
}
// bf16 and Highway row-B kernels: up to 4 rows in one chunk of rows.
constexpr int64_t kRowbMaxRows = 4;
// Task width of that walk: one task per thread, up to this many columns
// (a 9-row accumulator block of 4096 columns is 144 KiB, in L2).
constexpr int64_t kRowbMaxTaskCols = 4096;
// bf16 (row-major B): up to this M one rowb chunk (5..12 rows x 32
// columns) reads B once from memory and interleaves it in registers, which
// beats packing it per call (measured 1 thread, 8x4096x4096: 110 vs 56
// GFLOP/s).  More rows take several chunks, each walking the B strip again
// through K pages of B: 16x4096x4096 95 vs 99, 64x4096x4096 140 vs 234
// (packed), so they pack.
constexpr int64_t kBf16MaxRows = 12;
// Where the packed path's bf16 kernels take widened A (vdpbf16ps at half
// the FMA's rate: lp_driver.cpp's widen_bf16_a), packing B per call beats
// the row-B walk (vdpbf16ps) from 3 rows when B outgrows half of L3, and
// from 11 rows anyway.  Measured on the Intel Xeon VM (32 MiB L3 assumed),
// 1 thread, in-process A/B, packed / in place: B 32 MiB (4096 x 4096) at
// M = 3 / 4 / 6 / 8 / 10 / 12 1.20 / 1.04 / 1.06 / 1.03 / 1.23 / 1.23x,
// B 88 MiB (11008 columns or rows) M = 3 / 4 / 8 / 12 1.81 / 1.32..1.89 /
// 1.20 / 1.64x; B 2..16 MiB M = 4 / 5 / 8 / 10 / 12 0.95 / 0.84 / 0.92..
// 0.99 / 1.01 / 1.12x; 1 and 2 rows keep the walk (0.58-1.07x).
bool packed_beats_rowb_bf16(const lp_problem &p) {
    constexpr int64_t kMinRows = 3, kAnySizeRows = 11;
    // B's K x N x 2 bytes > L3 / 2, without the product (it may overflow).
    const bool b_large = p.K > 0 && p.N > int64_t(cpu::info().caches.l3) / 4 / p.K;
    return p.M >= kAnySizeRows || (p.M >= kMinRows && b_large);
}
// Transposed B: below this K the dot kernels' final 16-lane reductions
// cost more than the packing they save.
constexpr int64_t kDotMinK = 64;
// The Highway dot kernels (backends without VNNI JIT kernels): up to this
// M one chunk of rows reads B once.  From K = 64 on (M <= 2) or 512 (3 or
// 4 rows, whose tiles are 2 or 3 columns wide on AVX2, so the per-call
// reductions weigh more) they beat packing B (measured on an AVX2 Zen 1,
// 1 thread: 1x4096x4096 9.1 -> 13.8 GOP/s, 3x4096x4096 14 -> 25,
// 1x4096x11008 8 -> 18.6, 2x512x512 22.8 -> 24.3; but 4x256x256 23 ->
// 11.5 and 4x4096x128 25 -> 20).
constexpr int64_t kHwyDotMaxRows = 4;
constexpr int64_t kHwyDotMinK = 64;
constexpr int64_t kHwyDotMinKWide = 512;  // 3 or 4 rows
// bf16 (Highway, B stored N x K): the kernels transpose 4 x 4 blocks of B
// pairs in registers to keep the packed path's order; the same rows, from
// K = 128 (M <= 2) or 512 (measured on the AVX2 Zen 1, 1 thread, best of
// 3 alternating runs, GFLOP/s packed -> in place: 1x4096x4096 4.9 -> 7.7,
// 2x4096x4096 7.4 -> 12.2, 4x4096x4096 11.1 -> 14.8, 1x4096x11008 3.1 ->
// 6.9, 2x1024x128 8.6 -> 12.8, 4x1024x512 14.0 -> 14.5; but 2x256x64 11.0
// -> 8.0 and 1x1024x64 7.6 -> 7.2).
constexpr int64_t kHwyDotBf16MinK = 128;
// The same Highway bf16 dot kernels (AVX-512 targets) under the JIT's
// AVX512-BF16 tier, whose packed path is much faster on a B that stays
// in cache: only for one row and a B larger than L3, which streams from
// memory on every call.  In-process A/B on the Zen 5 VM, 1 thread, dot ->
// packed once the packed path kept its K blocks in L2 and walked a
// transposed B panel by panel: 1x11008x4096 -24%, 1x4096x11008 -39%,
// 1x4096x8192 -21% (B of 64..90 MiB: dot stays), but 1x4096x4096 (32
// MiB) +34%, 1x2048x2048 +40%, 2x4096x4096 +76%, 2x11008x4096 +35%,
// 2x1024x1024 +59% (2x4096x11008 -12%: two rows pack).  (Before those
// changes the dot kernels won from 1 MiB up to 2 rows: 1x4096x4096 +76%.)
constexpr int64_t kJitDotBf16MaxRows = 1;
// bf16 (Highway, row-major B, M <= 4): the row-B kernels keep the packed
// path's order with no transpose; from K x N = 4096 on they beat packing B
// per call (same runs, GFLOP/s: 1x4096x4096 2.9 -> 7.3, 2x4096x4096 4.9 ->
// 11.0, 4x4096x4096 6.7 -> 9.7, 4x11008x4096 6.5 -> 11.8, 1x64x64 3.0 ->
// 3.4; 1x64x16 1.9 -> 1.85, 1x16x16 1.1 -> 0.5: below, the path's set-up
// costs more than packing).
constexpr int64_t kHwyRowbBf16MinKN = 4096;
// int8 (Highway, row-major B), up to 3 rows (4 with the row of ones that
// column sums add: one chunk, B read once).  Where the kernels multiply
// adjacent int16 pairs (x86: lp_backend::rowb_lean) they beat packing B
// per call from K x N = 4096 on (measured on the AVX2 Zen 1, 1 thread,
// best of 3 alternating runs, GOP/s: 1x4096x4096 4.9 -> 11.2, 2x4096x4096
// 9.8 -> 20.2, 3x4096x4096 12.7 -> 20.9, 2x1024x1024 17.5 -> 25.8,
// 3x1024x1024 20.6 -> 24.0, 2x256x256 16.9 -> 22.4, 1x256x64 8.9 ->
// 10.8).  Elsewhere (Arm: Highway 1.0 has no per-lane pairwise
// multiply-add there) every product is widened on its own, about twice the
// work, which won only at M = 1 with B streaming from memory (measured
// with that kernel on x86: 1x4096x4096 5.3 -> 8.8, but 1x512x512 10.5 ->
// 7.5 and 2x1024x1024 12.4 -> 8.1).
constexpr int64_t kHwyRowbU8s8MaxRows = 3;
constexpr int64_t kHwyRowbU8s8MinKN = 4096;
constexpr int64_t kHwyRowbU8s8WideMinKN = int64_t(1) << 22;  // not lean: M = 1 only

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The kernel families behind one shape: kernel(m, n) for m <= rows per
// chunk and n <= width(m).  All take the same argument layout.
struct family {
    bool transposed = false;  // dot kernels (B is N x K)
    bool bf16 = false;        // bf16 kernels (rowb: JIT; dot: Highway)
    // Dot kernels the backend supplies itself (Highway; lp_backend::
    // dot_kernel: int8, and the only bf16 ones) instead of the JIT's.
    const lp_backend *own_dot = nullptr;
    // Row-B kernels the backend supplies itself (Highway bf16; lp_backend::
    // rowb_kernel), which take any number of columns: one per row count.
    const lp_backend *own_rowb = nullptr;
    lp_kind kind = lp_kind::u8s8;
    int chunk_rows = 0;       // rows per kernel call
    int widths[kMaxRows + 1] = {};  // width(m), m = 1..chunk_rows
    // Columns outer, chunks of rows inner: each strip of B (K x width)
    // comes from memory for the first chunk and from L2 for the others.
    bool columns_outer = false;
    // int8 JIT row-B kernels: K in blocks of k_block rows, outermost, the
    // later blocks through the kernels that add to acc (0: all of K in
    // one call per chunk).
    int64_t k_block = 0;
    int width(int m) const { return widths[m]; }
};

// Rows of the chunk that starts at row r0.
int chunk_rows_at(const family &f, int64_t rows, int64_t r0) {
    if (f.k_block) {
        // The fewest chunks of <= 4 rows, as even as they go (9 rows: 3 +
        // 3 + 3, not 4 + 4 + 1: each chunk interleaves the block again).
        const int64_t left = rows - r0, chunks = ceil_div(left, f.chunk_rows);
        return int(ceil_div(left, chunks));
    }
    return int(std::min<int64_t>(f.chunk_rows, rows - r0));
}

family family_for(const lp_backend &be, const lp_problem &p) {
    family f;
    f.transposed = p.transb;
    f.bf16 = p.kind == lp_kind::bf16;
    f.kind = p.kind;
    if (p.transb && be.dot_max_n(p.kind, 1) > 0) f.own_dot = &be;
    // Dot kernels: 4 rows x 6..8 columns fill the 32 registers.  bf16
    // row-B kernels: 2 rows x 192 columns stream B best (measured: 4 rows x
    // 64 columns touch 4 KiB pages of B four times as often per byte; int8
    // row-major B takes its own plan below).
    f.chunk_rows = p.transb ? kDotMaxM : 2;
    for (int m = 1; m <= f.chunk_rows; ++m)
        f.widths[m] = f.own_dot ? be.dot_max_n(p.kind, m)
                      : p.transb ? dot_max_n(m)
                      : f.bf16   ? rowb_max_n_bf16(m)
                                 : rowb_max_n(m);
    if (!p.transb && be.rowb_cols(p.kind) > 0) {
        // One chunk of all the rows (M <= 4): B read once.
        f.own_rowb = &be;
        f.chunk_rows = kRowbMaxM;
        for (int m = 1; m <= f.chunk_rows; ++m) f.widths[m] = be.rowb_cols(p.kind);
        return f;
    }
    if (!p.transb && !f.bf16) {
        // K blocks (kRowbKBlock), chunks of up to 4 rows (rowb_max_n(m)
        // columns per kernel call).
        f.k_block = rowb_k_block(p.ldb);
        f.chunk_rows = kRowbMaxM;
        for (int m = 1; m <= f.chunk_rows; ++m) f.widths[m] = rowb_max_n(m);
        return f;
    }
    if (f.bf16 && !p.transb && p.M > kRowbMaxRows) {
        // One chunk of up to 12 rows over 32-column strips: 24
        // accumulators, B interleaved once for all the rows.
        f.chunk_rows = kRowbMaxMBf16;
        for (int m = 1; m <= f.chunk_rows; ++m) f.widths[m] = kRowbBlockColsBf16;
        f.columns_outer = true;
    }
    return f;
}

// Kernels by (rows, columns); fetched before anything is written.  A call
// uses a few (rows, columns) pairs (fetch_kernels), so the JIT code's
// keep-alive handles sit in a short list, not one per table cell (a
// table of 2,500 shared_ptrs to build and destroy weighed on small calls).
// A cell holds a dot kernel where the family is transposed and a row-B
// kernel elsewhere, each called through its own pointer type (a call
// through a cast pointer type is undefined; UBSan's -fsanitize=function
// reports it).  A union keeps the table at one pointer per cell.  The
// table is not cleared: get_kernel writes a cell (making the family's
// member the active one) before run_chunks reads it, and remembers which
// cells it wrote in a short list (clearing all 3,300 cells cost 70% of an
// 8x8x8 bf16 call in `rep stos`).
union kernel_cell {
    lp_dot_fn dot;
    lp_rowb_fn rowb;
};

struct kernel_table {
    static constexpr int kMaxN = 192;
    static constexpr int kMaxM = kRowbMaxMBf16 > kRowbMaxM ? kRowbMaxMBf16 : kRowbMaxM;
    static constexpr int kMaxKept = 4 * (kMaxM + 1);
    kernel_table() {}  // cells stay unwritten until get_kernel fills them
    bool filled(int m, int n) const {
        for (int i = 0; i < nfilled; ++i)
            if (filled_m[i] == m && filled_n[i] == n) return true;
        return false;
    }
    void mark_filled(int m, int n) {
        filled_m[nfilled] = int16_t(m);
        filled_n[nfilled] = int16_t(n);
        ++nfilled;
    }
    // A new keep-alive handle (constructed here: only the used ones are
    // built and destroyed, not all kMaxKept every call).
    std::shared_ptr<const void> &new_keep() {
        return *new (&keep[kept++].p) std::shared_ptr<const void>();
    }
    ~kernel_table() {
        for (int i = 0; i < kept; ++i) keep[i].p.~shared_ptr();
    }
    kernel_cell fn[kMaxM + 1][kMaxN + 1];
    kernel_cell fn_add[kRowbMaxM + 1][kMaxN + 1];  // int8 row-B kernels that add to acc
    int16_t filled_m[kMaxKept], filled_n[kMaxKept];
    int nfilled = 0;
    union keep_slot {
        keep_slot() {}
        ~keep_slot() {}
        std::shared_ptr<const void> p;
    } keep[kMaxKept];
    int kept = 0;
};

// The table cell of an (m, n) kernel: the backend's own row-B kernels take
// any n, so one cell (n = 0) per row count.
int table_n(const family &f, int n) { return f.own_rowb ? 0 : n; }

anvil_status_t get_kernel(const family &f, uint8_t tier, int m, int n, kernel_table *kt, bool add = false) {
    const int c = table_n(f, n);
    if (kt->filled(m, c + (add ? 256 : 0))) return anvil_success;
    if (kt->nfilled == kernel_table::kMaxKept) return anvil_runtime_error;  // cannot happen
    kt->mark_filled(m, c + (add ? 256 : 0));
    if (add) {
        if (kt->kept == kernel_table::kMaxKept) return anvil_runtime_error;  // cannot happen
        std::shared_ptr<const void> &keep = kt->new_keep();
        lp_rowb_fn fn = nullptr;
        const anvil_status_t st = get_lp_rowb_kernel(make_lp_rowb_desc(tier, m, n, false, true), &fn, &keep);
        kt->fn_add[m][n].rowb = fn;
        return st;
    }
    if (f.own_rowb) {
        const lp_rowb_fn fn = f.own_rowb->rowb_kernel(f.kind, m);  // static code
        kt->fn[m][c].rowb = fn;
        return fn ? anvil_success : anvil_invalid_argument;
    }
    if (kt->kept == kernel_table::kMaxKept) return anvil_runtime_error;  // cannot happen
    std::shared_ptr<const void> &keep = kt->new_keep();
    anvil_status_t st;
    if (f.own_dot) {
        const lp_dot_fn fn = f.own_dot->dot_kernel(f.kind, m, n);  // static code
        kt->fn[m][n].dot = fn;
        st = fn ? anvil_success : anvil_invalid_argument;
    } else if (f.transposed) {
        lp_dot_fn fn = nullptr;
        st = get_lp_dot_kernel(make_lp_dot_desc(tier, m, n), &fn, &keep);
        kt->fn[m][n].dot = fn;
    } else {
        lp_rowb_fn fn = nullptr;
        st = get_lp_rowb_kernel(make_lp_rowb_desc(tier, m, n, f.bf16), &fn, &keep);
        kt->fn[m][n].rowb = fn;
    }
    return st;
}

// Every (rows, columns) the call uses: tasks are nc columns wide (the last
// one narrower), split into chunks of width(rows) columns.
anvil_status_t fetch_kernels(const family &f, uint8_t tier, int64_t rows, int64_t N, int64_t K, int64_t nc,
                             kernel_table *kt) {
    const bool adds = f.k_block && K > f.k_block;  // K blocks after the first
    const int64_t task_widths[2] = {std::min(nc, N), N - (ceil_div(N, nc) - 1) * nc};
    for (int64_t r0 = 0, m; r0 < rows; r0 += m) {
        m = chunk_rows_at(f, rows, r0);
        const int w = f.width(int(m));
        for (int64_t tw : task_widths)
            for (int n : {int(std::min<int64_t>(w, tw)), int(tw % w)}) {
                if (n == 0) continue;
                anvil_status_t st = get_kernel(f, tier, int(m), n, kt);
                if (st == anvil_success && adds) st = get_kernel(f, tier, int(m), n, kt, true);
                if (st != anvil_success) return st;
            }
    }
    return anvil_success;
}

// Columns [j0, j0 + n) of all rows into acc (int32, acc_ld).
void run_chunks(const family &f, const kernel_table &kt, const lp_problem &p, const uint8_t *a_rows,
                int64_t a_rs, int64_t rows, int64_t j0, int64_t n, int32_t *acc, int64_t acc_ld) {
    const auto *b = static_cast<const uint8_t *>(p.B);
    const int64_t eb = f.bf16 ? 2 : 1;  // bytes per element of B
    // lp_dot_args and lp_rowb_args have the same fields; only where B's
    // column j starts differs.
    auto fill = [&](auto &a, int64_t r0, int64_t c, int m, int nn) {
        a.a = a_rows + r0 * a_rs;
        a.b = b + (j0 + c) * (f.transposed ? p.ldb * eb : eb);
        a.acc = acc + r0 * acc_ld + c;
        a.a_rs = a_rs;
        a.b_rs = p.ldb * eb;
        a.acc_ld = acc_ld;
        a.k = p.K;
        a.m = m;
        a.n = nn;
    };
    auto call = [&](int64_t r0, int64_t c, int m, int nn) {
        const kernel_cell &cell = kt.fn[m][table_n(f, nn)];
        if (f.transposed) {
            lp_dot_args a;
            fill(a, r0, c, m, nn);
            cell.dot(&a);
        } else {
            lp_rowb_args a;
            fill(a, r0, c, m, nn);
            cell.rowb(&a);
        }
    };
    if (f.k_block) {
        // K blocks outermost (kRowbKBlock); the first overwrites acc, the
        // others add to it (int32 sums wrap exactly: the same bits).  A's
        // offset k0 is a multiple of 4, so a block reads A only up to the
        // padded end of its rows.
        for (int64_t k0 = 0; k0 < p.K; k0 += f.k_block) {
            for (int64_t r0 = 0, m; r0 < rows; r0 += m) {
                m = chunk_rows_at(f, rows, r0);
                const int w = f.width(int(m));
                for (int64_t c = 0; c < n; c += w) {
                    const int nn = int(std::min<int64_t>(w, n - c));
                    lp_rowb_args a;
                    fill(a, r0, c, int(m), nn);
                    a.a += k0;
                    a.b += k0 * a.b_rs;
                    a.k = std::min(f.k_block, p.K - k0);
                    (k0 ? kt.fn_add[m][nn] : kt.fn[m][nn]).rowb(&a);
                }
            }
        }
        return;
    }
    if (f.columns_outer) {
        const int w = f.width(1);  // one width for every chunk
        for (int64_t c = 0; c < n; c += w)
            for (int64_t r0 = 0; r0 < rows; r0 += f.chunk_rows)
                call(r0, c, int(std::min<int64_t>(f.chunk_rows, rows - r0)),
                     int(std::min<int64_t>(w, n - c)));
        return;
    }
    for (int64_t r0 = 0, m; r0 < rows; r0 += m) {
        m = chunk_rows_at(f, rows, r0);
        const int w = f.width(int(m));
        for (int64_t c = 0; c < n; c += w) call(r0, c, int(m), int(std::min<int64_t>(w, n - c)));
    }
}

static_assert(sizeof(lp_dot_args) == sizeof(lp_rowb_args), "the in-place kernels share one argument layout");
static_assert(offsetof(lp_dot_args, k) == offsetof(lp_rowb_args, k), "the in-place kernels share one argument layout");
static_assert(offsetof(lp_dot_args, n) == offsetof(lp_rowb_args, n), "the in-place kernels share one argument layout");

}  // namespace

bool inplace_path_applies(const lp_backend &be, const lp_problem &p) {
    if (p.packed_b || p.zero_product) return false;
    if (p.kind == lp_kind::bf16) {
        if (p.transb && be.tier() >= anvil_isa_avx512_core_bf16)  // the JIT's tier
            return be.dot_max_n(p.kind, 1) > 0 && p.M <= kJitDotBf16MaxRows &&
                   p.K >= kHwyDotBf16MinK && p.N > int64_t(cpu::info().caches.l3) / 2 / p.K;
        if (p.transb)  // Highway's dot kernels (there are no JIT bf16 ones)
            return be.dot_max_n(p.kind, 1) > 0 && p.M <= kHwyDotMaxRows &&
                   p.K >= (p.M <= 2 ? kHwyDotBf16MinK : kHwyDotMinKWide);
        if (be.rowb_cols(p.kind) > 0)  // Highway's row-B kernels
            return p.M <= kRowbMaxRows && p.K * p.N >= kHwyRowbBf16MinKN;
        if (p.M > kBf16MaxRows) return false;
        if (be.prefers_widened_bf16_a() && packed_beats_rowb_bf16(p)) return false;
        const uint32_t need = cpu::f_avx512_core | cpu::f_avx512_bf16;
        return (cpu::effective_features() & need) == need &&
               be.tier() >= anvil_isa_avx512_core_bf16 && jit_state::usable();
    }
    if (!p.transb && be.rowb_cols(p.kind) > 0)  // the backend's own (Highway) row-B kernels
        return be.rowb_lean(p.kind) ? p.M <= kHwyRowbU8s8MaxRows && p.K * p.N >= kHwyRowbU8s8MinKN
                                    : p.M == 1 && p.K * p.N >= kHwyRowbU8s8WideMinKN;
    if (p.transb && be.dot_max_n(p.kind, 1) > 0)  // the backend's own (Highway) dot kernels
        return p.M <= kHwyDotMaxRows && p.K >= (p.M <= 2 ? kHwyDotMinK : kHwyDotMinKWide);
    if (p.M > kMaxRows) return false;
    if (p.transb && p.K < kDotMinK) return false;
    if (!p.transb && p.M > kRowbInt8MaxRows) return false;
    const uint32_t need = cpu::f_avx512_core | cpu::f_avx512_vnni;
    return (cpu::effective_features() & need) == need && be.tier() >= anvil_isa_avx512_core_vnni &&
           jit_state::usable();
}

anvil_status_t run_inplace_path(const lp_backend &be, const lp_problem &p, const lp_epilogue &epi) {
    const family f = family_for(be, p);
    const bool want_colsum = epi.needs_colsum;
    const int64_t rows = p.M + (want_colsum ? 1 : 0);
    lp_blocking b = choose_lp_blocking(p);
    // Tasks a whole number of the widest chunks wide.
    const int64_t w = f.width(chunk_rows_at(f, rows, 0));
    b.nc = std::max<int64_t>(w, b.nc / w * w);
    if (f.k_block) {
        // Wide tasks, one per thread: long sequential runs along B's rows.
        b.nc = std::min(kRowbMaxTaskCols, ceil_div(p.N, b.nthreads));
        b.nc = std::max<int64_t>(w, ceil_div(b.nc, w) * w);
    }
    kernel_table kt;
    anvil_status_t st = fetch_kernels(f, uint8_t(be.tier()), rows, p.N, p.K, b.nc, &kt);
    if (st != anvil_success) return st;

    // Packed A: M rows (u8; s8 shifted), the row of ones, then the row sums.
    // The kernels may read a row up to K rounded up to 4 (zero-padded).
    const int64_t a_rs = a_row_bytes(b.kg);
    const int64_t a_bytes = round_up(rows * a_rs, 64);
    // Highway's bf16 dot kernels take A's rows widened to fp32 (lp_dot.h).
    const bool widen_a = f.bf16 && f.own_dot;
    const int64_t wide_rs = widen_a ? round_up(p.K * 4, 64) : 0;
    auto *abuf = static_cast<uint8_t *>(scratch_apack().get(a_bytes + round_up(p.M * 4, 64) + rows * wide_rs));
    if (!abuf) return anvil_out_of_memory;
    int32_t *rowsum = epi.needs_rowsum ? reinterpret_cast<int32_t *>(abuf + a_bytes) : nullptr;
    pack_a(p.a_elem, p.transa, p.K, p.A, p.lda, 0, p.M, abuf, a_rs, rowsum);
    if (want_colsum) {
        uint8_t *ones = abuf + p.M * a_rs;
        std::memset(ones, 1, size_t(p.K));
        std::memset(ones + p.K, 0, size_t(b.kg * kGroupBytes - p.K));
    }
    // What the kernels read: the packed rows, or their fp32 copies.
    const uint8_t *a_rows = abuf;
    int64_t a_rows_rs = a_rs;
    if (widen_a) {
        uint8_t *wide = abuf + a_bytes + round_up(p.M * 4, 64);
        for (int64_t i = 0; i < rows; ++i)
            convert_bf16_to_f32(reinterpret_cast<const uint16_t *>(abuf + i * a_rs),
                                reinterpret_cast<float *>(wide + i * wide_rs), p.K);
        a_rows = wide;
        a_rows_rs = wide_rs;
    }

    const int64_t n_blocks = ceil_div(p.N, b.nc);
    const int64_t acc_ld = round_up(b.nc, kNR);
    const int64_t slot_bytes = round_up(rows * acc_ld * 4, 64);
    const int nslots = (b.nthreads <= 1 || n_blocks == 1) ? 1 : b.nthreads;
    auto *slots = static_cast<uint8_t *>(scratch_acc().get(slot_bytes * nslots));
    if (!slots) return anvil_out_of_memory;
    auto task = [&](int64_t t, uint8_t *slot) {
        const int64_t j0 = t * b.nc, n = std::min(b.nc, p.N - j0);
        auto *acc = reinterpret_cast<int32_t *>(slot);
        run_chunks(f, kt, p, a_rows, a_rows_rs, rows, j0, n, acc, acc_ld);
        lp_block blk;
        blk.acc = acc;
        blk.acc_ld = acc_ld;
        blk.i0 = 0;
        blk.j0 = j0;
        blk.m = p.M;
        blk.n = n;
        blk.rowsum = rowsum;
        blk.colsum = want_colsum ? acc + p.M * acc_ld : nullptr;
        epi.apply(blk);
    };
    if (nslots == 1) {
        for (int64_t t = 0; t < n_blocks; ++t) task(t, slots);
        return anvil_success;
    }
    // Worker w runs tasks w, w + nslots, ... with slot w.
    threading::parallel_for(nslots, [&](int64_t wk) {
        for (int64_t t = wk; t < n_blocks; t += nslots) task(t, slots + wk * slot_bytes);
    });
    return anvil_success;
}

}  // namespace anvil::lowp
