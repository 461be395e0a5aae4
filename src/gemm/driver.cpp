#include "gemm/driver.h"

#include "gemm/dot.h"
#include "gemm/stream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "cache/call_memo.h"
#include "cache/kernel_cache.h"
#include "common/memory.h"
#include "cpu/isa.h"
#include "gemm/dot.h"
#include "gemm/pack.h"
#include "threading/parallel.h"

namespace anvil::gemm {
namespace {

// A 64-byte aligned float buffer that only grows, counted against the
// memory cap; one per thread, so the caller's pool threads and OpenMP
// workers never share one.
class scratch {
public:
    float *get(int64_t floats) {
        if (floats < 0 || floats > INT64_MAX / 4) return nullptr;
        return static_cast<float *>(buf_.get(floats * 4));
    }
    void reset() { buf_.reset(); }

private:
    mem::growing_buffer buf_;
};

// The calling thread's scratch: packing buffers for all of a call's tasks,
// taken before any task starts, so running out of memory (or over the
// memory cap) is found before anything is written to C.
thread_local scratch t_scratch;

// Floats per task slot, rounded to whole cache lines (64-byte aligned slots).
int64_t slot_floats(int64_t floats) { return (floats + 15) / 16 * 16; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kernels one call needs, fetched (and JIT-generated) up front: at most
// 3 row heights x 4 panel widths x 2 beta kinds.  Fixed storage, so a
// small call allocates nothing.
class kernel_table {
public:
    static constexpr int kMax = 24;
    kernel_table() = default;
    void reset(const backend &be, a_access acc, bool alpha_one) {
        be_ = &be;
        acc_ = acc;
        alpha_one_ = alpha_one;
        for (int i = 0; i < count_; ++i) entries_[i] = entry();
        count_ = 0;
    }

    anvil_status_t add(int64_t m, int64_t n, beta_kind bk) {
        if (find(m, n, bk)) return anvil_success;
        if (count_ == kMax) return anvil_runtime_error;
        ukernel_desc d{};
        d.tier = uint8_t(be_->tier());
        d.m = uint8_t(m);
        d.n = uint8_t(n);
        d.a = acc_;
        d.beta = bk;
        d.alpha_one = alpha_one_ ? 1 : 0;
        entry &e = entries_[count_];
        anvil_status_t st = be_->get(d, &e.ref);
        if (st != anvil_success) return st;
        e.m = int(m);
        e.n = int(n);
        e.bk = bk;
        ++count_;
        return anvil_success;
    }
    ukernel_fn find(int64_t m, int64_t n, beta_kind bk) const {
        for (int i = 0; i < count_; ++i) {
            const entry &e = entries_[i];
            if (e.m == m && e.n == n && e.bk == bk) return e.ref.fn;
        }
        return nullptr;
    }

private:
    struct entry {
        int m = 0, n = 0;
        beta_kind bk = beta_kind::zero;
        ukernel_ref ref;
    };
    const backend *be_ = nullptr;
    a_access acc_ = a_access::k_strided;
    bool alpha_one_ = true;
    entry entries_[kMax];
    int count_ = 0;
};

// A set of up to 4 distinct small values, without allocation.
struct small_set {
    int64_t v[4];
    int count = 0;
    void add(int64_t x) {
        for (int i = 0; i < count; ++i)
            if (v[i] == x) return;
        if (count < 4) v[count++] = x;
    }
};

// Row tiles of one row block: near-equal heights (M = 16 runs as 8 + 8 and
// M = 64 as 6 tiles of 10-11 rather than 12 + 4 or 5 x 12 + 4), which keeps
// every tile's FMA-to-load ratio up.  The first rem tiles get base + 1 rows.
struct row_tiles {
    int64_t count = 0, base = 0, rem = 0;
    int64_t start(int64_t t) const { return t * base + std::min(t, rem); }
    int64_t height(int64_t t) const { return base + (t < rem ? 1 : 0); }
};

row_tiles make_row_tiles(int64_t rows, int64_t mr) {
    row_tiles r;
    r.count = ceil_div(rows, mr);
    r.base = rows / r.count;
    r.rem = rows % r.count;
    return r;
}

// Threads worth waking for a problem: each must get at least ~10 us of
// work (2 MFLOP at AVX-512 speed), or starting and joining them costs more
// than it saves (and a thread whose core is busy stalls the whole call).
constexpr int64_t kMinFlopsPerThread = 2'000'000;

int threads_for(const sgemm_problem &p) {
    const int nthr = threading::num_threads();
    // Integer arithmetic (a small call's overhead is a few ns per step):
    // flops = 2 M N K, which may exceed int64 for sizes no call could run.
    int64_t mn = 0, mnk = 0;
    if (__builtin_mul_overflow(p.M, p.N, &mn) || __builtin_mul_overflow(mn, p.K, &mnk) ||
        mnk > INT64_MAX / 2)
        return nthr;
    const int64_t useful = 2 * mnk / kMinFlopsPerThread;
    return useful >= nthr ? nthr : int(std::max<int64_t>(1, useful));
}

// Everything about a call that depends only on its shape: blocking, panel
// width, A addressing and the kernels.
struct call_setup {
    blocking blk;
    int64_t nr = 0;
    a_access acc = a_access::k_strided;
    kernel_table kernels;
    ukernel_ref whole;  // set when one small-GEMM kernel does the whole call
};

// What a call_setup was made for.  Pointers are not part of it: a server
// repeating a shape with new data reuses the setup.
struct setup_key {
    const backend *be;
    int64_t M, N, K, lda, ldb, ldc;
    uint64_t cache_epoch;
    // Thread count (low 32 bits), transposes, prepacked, alpha == 1 and the
    // beta kind, in one word: built and compared as one 64-bit value (as
    // separate int32 / byte fields GCC stored them separately and compared
    // them as one word, a store-forwarding stall on every call).
    uint64_t small;
    bool operator==(const setup_key &o) const {
        return M == o.M && N == o.N && K == o.K && lda == o.lda && ldb == o.ldb &&
               ldc == o.ldc && be == o.be && cache_epoch == o.cache_epoch && small == o.small;
    }
};

// The fields a setup key and the last-call record share: what a repeated
// call must match besides its flags.
template <class Record>
void copy_shape(const backend &be, const sgemm_problem &p, Record *r) {
    r->be = &be;
    r->M = p.M;
    r->N = p.N;
    r->K = p.K;
    r->lda = p.lda;
    r->ldb = p.ldb;
    r->ldc = p.ldc;
    r->cache_epoch = cache::epoch();
}

setup_key make_key(const backend &be, const sgemm_problem &p) {
    setup_key k;
    copy_shape(be, p, &k);
    k.small = uint64_t(uint32_t(threads_for(p))) | uint64_t(p.transa) << 32 |
              uint64_t(p.transb) << 33 | uint64_t(p.packed_b != nullptr) << 34 |
              uint64_t(p.alpha == 1.0f) << 35 | uint64_t(classify_beta(p.beta)) << 36;
    return k;
}

anvil_status_t prepare(const backend &be, const sgemm_problem &p, call_setup *s) {
    const bool prepacked = p.packed_b != nullptr;
    s->blk = choose_blocking(be, p.transa, p.transb, p.M, p.N, p.K, p.lda, p.ldb, prepacked,
                            threads_for(p));
    const blocking &blk = s->blk;
    const int64_t mr = blk.mr;
    // Panel width: the packed width, or wider when B is read in place by
    // short row tiles (see backend::max_n).
    const bool b_in_place = !prepacked && !blk.pack_b;
    const int64_t tallest = make_row_tiles(std::min(blk.mc, p.M), mr).height(0);
    const int64_t nr = s->nr = b_in_place ? be.max_n(int(tallest)) : blk.nr;
    // nc blocks start on panel boundaries (the panel width may exceed the
    // packed width), so the only short panel is the last one of N.
    if (s->blk.nc < p.N) s->blk.nc = std::max<int64_t>(nr, s->blk.nc / nr * nr);
    s->acc = blk.pack_a ? a_access::k_strided
                        : (p.transa ? a_access::k_strided : a_access::row_major);

    // Tiny problems in one K block: one kernel for all of it.  B is read in
    // place, or is one prepacked panel (N <= nr), which is a row-major B with
    // row stride nr.
    s->whole = ukernel_ref();
    const bool b_one_panel = prepacked && p.N <= blk.nr;
    if ((b_in_place || b_one_panel) && !blk.pack_a && p.K <= blk.kc && p.M <= kSmallGemmMax &&
        p.N <= kSmallGemmMax) {
        small_gemm_desc d{};
        d.tier = uint8_t(be.tier());
        d.M = uint8_t(p.M);
        d.N = uint8_t(p.N);
        d.a = s->acc;
        d.beta = classify_beta(p.beta);
        d.alpha_one = p.alpha == 1.0f;
        const anvil_status_t st = be.get_small(d, &s->whole);
        if (st == anvil_success) return st;
        if (st != anvil_unsupported) return st;
        s->whole = ukernel_ref();
    }

    // Every kernel the call needs: row heights x {full, tail} panel width x
    // {caller's beta on the first K block, beta = 1 on later ones}.
    s->kernels.reset(be, s->acc, p.alpha == 1.0f);
    small_set heights, widths;
    // Row tiles of a full mc block and of the last (possibly short) one.
    const int64_t last_rows = p.M - (p.M - 1) / blk.mc * blk.mc;
    for (int64_t rows : {std::min(blk.mc, p.M), last_rows}) {
        const row_tiles rt = make_row_tiles(rows, mr);
        heights.add(rt.height(0));
        heights.add(rt.height(rt.count - 1));
    }
    widths.add(std::min<int64_t>(nr, p.N));
    if (p.N % nr) widths.add(p.N % nr);  // the last panel of N
    const beta_kind first = classify_beta(p.beta);
    const bool k_split = p.K > blk.kc;
    for (int h = 0; h < heights.count; ++h)
        for (int w = 0; w < widths.count; ++w) {
            anvil_status_t st = s->kernels.add(heights.v[h], widths.v[w], first);
            if (st == anvil_success && k_split && first != beta_kind::one)
                st = s->kernels.add(heights.v[h], widths.v[w], beta_kind::one);
            if (st != anvil_success) return st;
        }
    return anvil_success;
}

// The thread's last BLAS-style call that ran as one whole-GEMM kernel: a
// repeat of it (same backend, shape, strides, transposes, alpha == 1 and
// beta kind, kernel cache not cleared since) calls that kernel straight
// away, before the path tests, the thread count and the setup memo's key
// (a third of an 8^3 call's time).  Those depend on nothing else, so the
// repeat would have chosen the same kernel.
//
// Tier-up: after kDirectAfterRepeats repeats in a row with alpha == 1 and
// beta 0 or 1, the call's direct kernel (direct_gemm_desc: the same tiles
// and bits, with the strides compiled in and no argument block) takes
// over; a streak that long pays for its generation (tens of microseconds)
// many times over.  A failure to make it is no error: the whole-GEMM
// kernel goes on.
constexpr uint32_t kDirectAfterRepeats = 1024;

// The hot part is plain data (no constructor or destructor), reached
// through last_whole(): one __tls_get_addr per call (GCC re-derived the
// address of a thread_local after each branch, three calls per repeated
// small call) and no initialisation guard.  (The initial-exec TLS model
// would need none, but a shared library with it must fit all its TLS in
// glibc's static TLS surplus, and libanvil's then fails to dlopen.)  The
// references that keep its kernels' code alive live beside it.
struct last_whole_call {
    const backend *be;
    int64_t M, N, K, lda, ldb, ldc;
    uint64_t cache_epoch;
    uint32_t bits;    // transa, transb, alpha == 1, beta kind
    uint32_t streak;  // repeats since remember_whole()
    int64_t b_ld;
    ukernel_fn fn;              // null: nothing remembered
    direct_gemm_fn direct;      // after the tier-up
    std::atomic<int64_t> *hits;  // this thread's cache hit counter

    static uint32_t bits_of(const sgemm_problem &p) {
        return uint32_t(p.transa) | uint32_t(p.transb) << 1 | uint32_t(p.alpha == 1.0f) << 2 |
               uint32_t(classify_beta(p.beta)) << 3;
    }
    bool repeats(const backend &b, const sgemm_problem &p) const {
        return fn && M == p.M && N == p.N && K == p.K && lda == p.lda && ldb == p.ldb &&
               ldc == p.ldc && be == &b && bits == bits_of(p) && cache_epoch == cache::epoch();
    }
    void count_hit() const { hits->store(hits->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
};
struct last_whole_refs {
    ukernel_ref kernel;
    direct_kernel_ref direct;
};
thread_local last_whole_call t_last_whole;
[[gnu::noinline]] last_whole_call &last_whole() { return t_last_whole; }
thread_local last_whole_refs t_last_refs;

void remember_whole(const backend &b, const sgemm_problem &p, const ukernel_ref &k, int64_t bld) {
    last_whole_call &w = t_last_whole;
    copy_shape(b, p, &w);
    w.bits = last_whole_call::bits_of(p);
    w.streak = 0;
    w.b_ld = bld;
    w.fn = k.fn;
    w.direct = nullptr;
    w.hits = cache::this_thread_hits();
    t_last_refs.kernel = k;
    t_last_refs.direct = direct_kernel_ref();
}

void tier_up(const backend &b, const sgemm_problem &p) {
    const beta_kind bk = classify_beta(p.beta);
    if (p.alpha != 1.0f || bk == beta_kind::general) return;
    last_whole_call &w = t_last_whole;
    const direct_gemm_desc d = make_direct_desc(p.transa, p.M, p.N, p.K, 1.0f, p.lda, w.b_ld,
                                                bk == beta_kind::one ? 1.0f : 0.0f, p.ldc);
    direct_kernel_ref made;
    if (b.get_direct(d, &made) == anvil_success && made.fn) {
        w.direct = made.fn;
        t_last_refs.direct = std::move(made);
    }
}

// A thread's most recent setups (cache/call_memo.h).  The kernels an entry
// holds stay alive until it is replaced.
thread_local cache::call_memo<setup_key, call_setup> t_memo;

anvil_status_t find_or_prepare(const backend &be, const sgemm_problem &p,
                               const call_setup **out) {
    return t_memo.find_or_make(
        make_key(be, p), [&](call_setup *s) { return prepare(be, p, s); }, out);
}

// Points args at A(row0, pc) for a tile of h rows: the tile's packed panel
// when there is one (read with a_cs = h), else the caller's A in place.
void set_a_tile(const sgemm_problem &p, int64_t row0, int64_t h, int64_t pc, int64_t kcur,
                const float *packed, ukernel_args *args) {
    (void)kcur;
    if (packed) {
        args->a = packed;
        args->a_rs = 1;
        args->a_cs = h;
    } else if (p.transa) {
        args->a = p.A + pc * p.lda + row0;
        args->a_rs = 1;
        args->a_cs = p.lda;
    } else {
        args->a = p.A + row0 * p.lda + pc;
        args->a_rs = p.lda;
        args->a_cs = 1;
    }
}

// Small M with B prepacked: each full-depth panel is one contiguous stream,
// so walk it top to bottom (all K blocks of one panel before the next
// panel); the C tiles stay in L1 across the K blocks and the hardware
// prefetcher sees one long sequential read per panel.  A (at most
// kPanelMajorRows x K) is read from L2 for every panel; when it must be
// packed it is packed once, full depth, per thread.
constexpr int64_t kPanelMajorRows = 64;

bool run_panel_major(const sgemm_problem &p, const blocking &blk, const kernel_table &kernels,
                     int64_t nr) {
    const row_tiles rt = make_row_tiles(p.M, blk.mr);
    const int64_t panels = ceil_div(p.N, nr);
    const int64_t groups = std::min<int64_t>(panels, threads_for(p));
    const int64_t a_slot = blk.pack_a ? slot_floats(p.M * p.K) : 0;
    float *scratch_base = nullptr;
    if (blk.pack_a && !(scratch_base = t_scratch.get(a_slot * groups))) return false;
    threading::parallel_for(groups, [&](int64_t g) {
        float *abuf = nullptr;
        if (blk.pack_a) {
            abuf = scratch_base + g * a_slot;
            for (int64_t t = 0; t < rt.count; ++t)
                pack_a_panel(p.A, p.lda, p.transa, rt.start(t), rt.height(t), 0, p.K,
                             abuf + rt.start(t) * p.K);
        }
        ukernel_args args{};
        args.ldc = p.ldc;
        args.alpha = p.alpha;
        args.b_ld = nr;
        // One row tile (M <= 12) reads the weights as one stream, panel
        // after panel, each byte once: it prefetches that stream
        // cpu_info::stream_prefetch_lead bytes ahead (64 KiB on Zen 5, 8 KiB
        // on Intel: the measurements are in cpu/isa.h), far enough for
        // memory's latency (the kernel's own prefetch, 8 rows = 1 KiB
        // ahead, left the bandwidth-bound M = 1..4 shapes waiting on memory
        // on Zen 5; the lowp matmul measured the same, lp_driver.cpp).  Past
        // the last panel's end it prefetches nothing anyone reads (never a
        // fault).
        const int64_t lead_rows = std::max<int64_t>(1, cpu::info().stream_prefetch_lead / (nr * 4));
        // on_done takes runs of panels at least kDoneCols wide: a call per
        // panel would hand the chain row segments of nr columns.
        constexpr int64_t kDoneCols = 256;
        const int64_t q_end = panels * (g + 1) / groups;
        int64_t done_from = panels * g / groups * nr;
        for (int64_t q = panels * g / groups; q < q_end; ++q) {
            const int64_t j0 = q * nr;
            args.n = std::min<int64_t>(nr, p.N - j0);
            const float *panel = p.packed_b + q * p.K * nr;
            for (int64_t pc = 0; pc < p.K; pc += blk.kc) {
                args.k = std::min(blk.kc, p.K - pc);
                args.beta = pc == 0 ? p.beta : 1.0f;
                const beta_kind bk = pc == 0 ? classify_beta(p.beta) : beta_kind::one;
                args.b = panel + pc * nr;
                // Tile 0 streams this block of the panel from memory; the
                // others find it in L1 and prefetch the next block meanwhile.
                const float *next = pc + blk.kc < p.K ? args.b + blk.kc * nr
                                    : q + 1 < panels  ? panel + p.K * nr
                                                      : nullptr;
                for (int64_t t = 0; t < rt.count; ++t) {
                    const int64_t h = rt.height(t);
                    args.b_next = t > 0 ? next : rt.count == 1 ? args.b + lead_rows * nr : nullptr;
                    // Full-depth packed panel t: A(i, k) at start(t)*K + k*h + i.
                    set_a_tile(p, rt.start(t), h, pc, args.k,
                               abuf ? abuf + rt.start(t) * p.K + pc * h : nullptr, &args);
                    args.c = p.C + rt.start(t) * p.ldc + j0;
                    args.m = h;
                    kernels.find(args.m, args.n, bk)(&args);
                }
            }
            const int64_t j1 = j0 + args.n;
            if (p.on_done && (j1 - done_from >= kDoneCols || q + 1 == q_end)) {
                (*p.on_done)(0, p.M, done_from, j1 - done_from);
                done_from = j1;
            }
        }
    });
    return true;
}

// Rows [i0, i1) and panels [q0, q1) (of width setup.nr) of C.
struct block_range {
    int64_t i0 = 0, i1 = 0, q0 = 0, q1 = 0;
};

// The BLIS loops (nc blocks of B, kc blocks of K, mc blocks of A, panels,
// row tiles) over one block of C, on the calling thread, packing into
// bbuf / abuf (this task's slices of the call's scratch; null when the
// blocking does not pack that operand).
void run_block(const sgemm_problem &p, const call_setup &setup, const block_range &r, float *bbuf,
               float *abuf) {
    const blocking &blk = setup.blk;
    const kernel_table &kernels = setup.kernels;
    const int64_t mr = blk.mr, nr = setup.nr;
    const bool prepacked = p.packed_b != nullptr;

    const int64_t col_end = std::min(p.N, r.q1 * nr);
    for (int64_t jc = r.q0 * nr; jc < col_end; jc += blk.nc) {
        const int64_t ncur = std::min(blk.nc, col_end - jc);
        const int64_t panels = ceil_div(ncur, nr);
        for (int64_t pc = 0; pc < p.K; pc += blk.kc) {
            const int64_t kcur = std::min(blk.kc, p.K - pc);
            const beta_kind bk = pc == 0 ? classify_beta(p.beta) : beta_kind::one;
            if (blk.pack_b) pack_b_panels(p.B, p.ldb, p.transb, pc, kcur, jc, ncur, int(nr), bbuf);

            ukernel_args args{};
            args.ldc = p.ldc;
            args.k = kcur;
            args.alpha = p.alpha;
            args.beta = pc == 0 ? p.beta : 1.0f;
            for (int64_t i0 = r.i0; i0 < r.i1; i0 += blk.mc) {
                const int64_t mcur = std::min(blk.mc, r.i1 - i0);
                const row_tiles rt = make_row_tiles(mcur, mr);
                // Panel t of the packed A block starts at start(t) * kcur
                // and is read with a_cs = its height.
                if (abuf)
                    for (int64_t t = 0; t < rt.count; ++t)
                        pack_a_panel(p.A, p.lda, p.transa, i0 + rt.start(t), rt.height(t), pc,
                                     kcur, abuf + rt.start(t) * kcur);
                // B block of panel q (of this nc block) and its row stride.
                auto b_block = [&](int64_t q) -> const float * {
                    const int64_t j0 = jc + q * nr;
                    if (prepacked) return p.packed_b + (j0 / nr) * p.K * nr + pc * nr;
                    if (bbuf) return bbuf + q * kcur * nr;
                    return p.B + pc * p.ldb + j0;
                };
                const bool b_in_place = !prepacked && !bbuf;
                args.b_ld = b_in_place ? p.ldb : nr;
                for (int64_t q = 0; q < panels; ++q) {
                    const int64_t j0 = jc + q * nr;
                    args.n = std::min<int64_t>(nr, jc + ncur - j0);
                    args.b = b_block(q);
                    // Tile 0 brings this panel's block into L1; the others
                    // prefetch the next panel's block meanwhile.  B read in
                    // place comes from memory: there tile 0 prefetches the
                    // next block too (the next panel, or after the last one
                    // the first of the next K block), a whole call ahead,
                    // instead of its own rows a few ahead (measured on Zen 5,
                    // M = 1..4 in place: +20-30% for the JIT and Highway).
                    const float *next = q + 1 < panels ? b_block(q + 1) : nullptr;
                    const float *next0 = nullptr;
                    if (b_in_place)
                        next0 = next                   ? next
                                : pc + blk.kc < p.K ? p.B + (pc + blk.kc) * p.ldb + jc
                                                    : nullptr;
                    for (int64_t t = 0; t < rt.count; ++t) {
                        args.b_next = t == 0 ? next0 : next;
                        const int64_t row0 = i0 + rt.start(t);
                        args.m = rt.height(t);
                        set_a_tile(p, row0, args.m, pc, kcur,
                                   abuf ? abuf + rt.start(t) * kcur : nullptr, &args);
                        args.c = p.C + row0 * p.ldc + j0;
                        kernels.find(args.m, args.n, bk)(&args);
                    }
                }
                // After the last K block this mc x nc block of C is final
                // (and in cache).
                if (p.on_done && pc + kcur >= p.K) (*p.on_done)(i0, mcur, jc, ncur);
            }
        }
    }
}

}  // namespace

void run_whole_kernel(ukernel_fn fn, const sgemm_problem &p, int64_t b_ld) {
    // Every field assigned (not `args{}`: GCC clears 152 bytes with
    // `rep stos`, whose start-up was ~10% of a cached 16^3 call).
    ukernel_args args;
    args.k_segs = args.a_seg_rs = args.m_tiles = args.a_tile_rs = args.binary_ld = 0;
    args.bias = args.binary = nullptr;
    args.elt_alpha = args.elt_beta = 0.0f;
    set_a_tile(p, 0, p.M, 0, p.K, nullptr, &args);
    args.b = p.packed_b ? p.packed_b : p.B;
    args.b_ld = b_ld;
    args.c = p.C;
    args.ldc = p.ldc;
    args.k = p.K;
    args.m = p.M;
    args.n = p.N;
    args.alpha = p.alpha;
    args.beta = p.beta;
    args.b_next = nullptr;
    fn(&args);
}

anvil_status_t whole_kernel_for(const backend &be, const sgemm_problem &p, ukernel_ref *out,
                                int64_t *b_ld) {
    *out = ukernel_ref();
    if (p.M == 0 || p.N == 0 || p.K == 0 || p.alpha == 0.0f) return anvil_success;
    if (dot_path_applies(p, be.tier()) && dot_kernel(be.tier())) return anvil_success;
    if (stream_path_applies(p, be.tier()) && stream_kernel(be.tier())) return anvil_success;
    const call_setup *setup = nullptr;
    const anvil_status_t st = find_or_prepare(be, p, &setup);
    if (st != anvil_success) return st;
    *out = setup->whole;
    *b_ld = p.packed_b ? setup->blk.nr : p.ldb;
    return anvil_success;
}

void scale_c(const sgemm_problem &p) {
    threading::parallel_for(p.M, [&](int64_t i) {
        float *c = p.C + i * p.ldc;
        if (p.beta == 0.0f)
            std::memset(c, 0, size_t(p.N) * sizeof(float));
        else if (p.beta != 1.0f)
            for (int64_t j = 0; j < p.N; ++j) c[j] *= p.beta;
    });
}

anvil_status_t run_sgemm(const backend &be, const sgemm_problem &p) {
    if (p.M == 0 || p.N == 0) return anvil_success;
    if (p.K == 0 || p.alpha == 0.0f) {
        scale_c(p);
        if (p.on_done) (*p.on_done)(0, p.M, 0, p.N);
        return anvil_success;
    }
    const bool blas_small =
        !p.packed_b && !p.on_done && p.M <= kSmallGemmMax && p.N <= kSmallGemmMax;
    if (blas_small) {
        last_whole_call &w = last_whole();
        if (w.repeats(be, p)) {
            w.count_hit();
            if (const direct_gemm_fn d = w.direct) {
                d(p.A, p.B, p.C);
                return anvil_success;
            }
            if (++w.streak == kDirectAfterRepeats) tier_up(be, p);
            run_whole_kernel(w.fn, p, w.b_ld);
            return anvil_success;
        }
    }
    if (dot_path_applies(p, be.tier()))
        if (const dot_fn fn = dot_kernel(be.tier())) {
            run_dot_gemm(p, fn);
            return anvil_success;
        }
    if (stream_path_applies(p, be.tier()))
        if (const stream_fn fn = stream_kernel(be.tier())) {
            run_stream_gemm(p, fn);
            return anvil_success;
        }
    const bool prepacked = p.packed_b != nullptr;
    const call_setup *setup = nullptr;
    anvil_status_t st = find_or_prepare(be, p, &setup);
    if (st != anvil_success) return st;
    if (setup->whole.fn) {
        if (blas_small) remember_whole(be, p, setup->whole, p.ldb);
        run_whole_kernel(setup->whole.fn, p, prepacked ? setup->blk.nr : p.ldb);
        if (p.on_done) (*p.on_done)(0, p.M, 0, p.N);
        return anvil_success;
    }
    const blocking &blk = setup->blk;
    const kernel_table &kernels = setup->kernels;
    const int64_t nr = setup->nr;

    if (prepacked && p.M <= blk.mc && p.M <= kPanelMajorRows)
        return run_panel_major(p, blk, kernels, nr) ? anvil_success : anvil_out_of_memory;

    // Threads take independent blocks of C (panel groups, or row blocks when
    // there are fewer panels than threads) and run the whole blocked loop
    // on them, packing their own A and B: one parallel region per call and
    // no barriers inside it, which matters when a core is shared.  Every
    // element's arithmetic depends only on kc, so any split gives the same
    // bits.
    const int nthr = threads_for(p);
    const int64_t panels = ceil_div(p.N, nr);
    const int64_t row_blocks = ceil_div(p.M, blk.mc);
    const bool split_n = panels >= nthr || row_blocks < 2;
    const int64_t tasks = split_n ? std::min<int64_t>(panels, nthr) : row_blocks;
    const int64_t b_slot = blk.pack_b ? slot_floats(blk.kc * ceil_div(blk.nc, nr) * nr) : 0;
    const int64_t a_slot = blk.pack_a ? slot_floats(blk.mc * blk.kc) : 0;
    float *scratch_base = nullptr;
    if (b_slot + a_slot > 0 && !(scratch_base = t_scratch.get((b_slot + a_slot) * tasks)))
        return anvil_out_of_memory;
    threading::parallel_for(tasks, [&](int64_t t) {
        block_range r;
        if (split_n) {
            r.i0 = 0;
            r.i1 = p.M;
            r.q0 = panels * t / tasks;
            r.q1 = panels * (t + 1) / tasks;
        } else {
            r.i0 = t * blk.mc;
            r.i1 = std::min(p.M, r.i0 + blk.mc);
            r.q0 = 0;
            r.q1 = panels;
        }
        float *slot = scratch_base ? scratch_base + t * (b_slot + a_slot) : nullptr;
        run_block(p, *setup, r, blk.pack_b ? slot : nullptr, blk.pack_a ? slot + b_slot : nullptr);
    });
    return anvil_success;
}

void release_thread_scratch() { t_scratch.reset(); }

}  // namespace anvil::gemm
