// Highway fp32 micro-kernels (see hwy_sgemm.h and the contract in
// gemm/ukernel.h).  The file is compiled once per Highway target through
// foreach_target.h: everything in namespace HWY_NAMESPACE exists once per
// target, built with that target's function attributes (the library itself
// has no -march flags); the HWY_ONCE part at the end is built once and picks
// a target for anvil's ISA cap.

// The contract's epilogue is t = alpha * acc, then t + C: two roundings.
// GCC contracts a * b + c into an FMA by default in C++ (-ffp-contract=fast,
// even with -std=c++17) wherever the target has one, which changes the bits
// against the reference kernel.  Turn that off for everything in this file,
// before any header so that Highway's inline ops carry the same options as
// the kernels they are inlined into.  (Explicit MulAdd calls still fuse.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu/isa.h"
#include "fallback/hwy_named_regs.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"
#include "ref/ref_ukernel.h"

#include <hwy/cache_control.h>  // hwy::Prefetch

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_sgemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
using M = hn::Mask<D>;

// ---------------------------------------------------------------- blocking
// A tile is MR rows x 2 vectors.  Per k step the kernel holds MR*2
// accumulators, the 2 B vectors and one broadcast of A: 2*MR + 3 registers.
// With 16 vector registers that allows MR = 6 (15 live, the 16th holds the
// tail mask on AVX2); with 32, MR = 12 (27 live; 13 would fit, but 12 is the
// JIT's block too, and the spare registers absorb the compiler's temporaries).
// Deeper blocks are pointless: 2*MR FMAs per 2 B loads + MR broadcasts
// already keep the FMA pipes, not the load ports, the bottleneck.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64 || \
    HWY_ARCH_RVV || HWY_ARCH_PPC
constexpr int kMR = 12;
constexpr int kRegs = 32;  // vector registers
#else
constexpr int kMR = 6;
constexpr int kRegs = 16;
#endif
constexpr int kNV = 2;  // vectors per row of the tile (the packed panel width)

// Wide tiles, for B read in place by few rows (backend::max_n): the
// small-M calls are bound by how fast B streams from memory, and the
// bandwidth grows with the contiguous bytes each call reads from a B row
// (measured on Zen 5, M = 1 on AVX-512: 128 bytes per row 0.6x, 256 bytes
// 0.85x, 512 bytes 1.0x the JIT's speed).  A tile of m rows x nv vectors
// keeps m*nv accumulators plus either its nv B vectors (m >= nv: B loaded
// once per k, then one broadcast per row) or its m broadcasts (nv > m:
// broadcasts first, then one B vector at a time, which folds into the FMA
// as a memory operand) and one spare: m*nv + min(m, nv) + 1 <= registers.
// With 32 registers that gives the JIT's widths (8 vectors = 512 bytes up
// to 3 rows, 6 at 4 rows, ..., 2 from 10 rows on).  With AVX2's 16 it
// gives 14 vectors (448 bytes) at 1 row, 6 at 2, 4 at 3, 3 at 4 and 2 from
// 5 rows on.  (Wider AVX2 tiles of 2..4 rows, with the accumulators of the
// rows not being worked on parked in memory, in passes or in K chunks,
// measured no faster at M = 4: there the AVX2 kernel already runs near its
// FMA peak, it is not only waiting for memory.)  SSE4 and the
// SIMD-free fallbacks stay at 2 vectors (nothing to stream fast, fewer
// instantiations).
constexpr bool kWideTiles = (kRegs == 32 || HWY_TARGET == HWY_AVX2) &&
                            HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR;
constexpr int kMaxVecs = kRegs == 16 ? 14 : 8;  // per row of a wide tile

constexpr int MaxVecs(int m) {
    int best = kNV;
    if (kWideTiles)
        for (int nv = kNV + 1; nv <= kMaxVecs; ++nv)
            if (m * nv + (m < nv ? m : nv) + 1 <= kRegs) best = nv;
    return best;
}

// ------------------------------------------------- exact multiply-add
// The contract needs a fused multiply-add (one rounding) so that every
// backend gives the same bits as std::fma.  Highway's MulAdd is fused only
// where HWY_NATIVE_FMA says so; SSE4/EMU128/SCALAR (and a few non-x86
// targets) emulate it as mul + add, two roundings.  There we fall back to std::fma
// per lane: exact, slow (a libm call each), and only reached on CPUs where
// anvil would otherwise run the scalar tier's equally slow std::fma.
HWY_INLINE V MulAddExact(V mul, V x, V add) {
#if HWY_NATIVE_FMA
    return hn::MulAdd(mul, x, add);
#else
    const D d;
    constexpr size_t kMax = hn::MaxLanes(D());
    HWY_ALIGN float m[kMax], xv[kMax], a[kMax];
    hn::Store(mul, d, m);
    hn::Store(x, d, xv);
    hn::Store(add, d, a);
    for (size_t i = 0; i < hn::Lanes(d); ++i) a[i] = std::fma(m[i], xv[i], a[i]);
    return hn::Load(d, a);
#endif
}

// ------------------------------------------------- partial loads/stores
// N tails must neither read B/C nor write C past column n-1: reading could
// fault at the end of the caller's matrix, and a read-modify-write of C's
// neighbouring columns would race with the thread that owns them.
// MaskedLoad/BlendedStore are true masked memory operations on AVX2 (32-bit
// lanes: vmaskmovps), AVX-512, SVE and RVV; elsewhere Highway implements
// MaskedLoad as a full load (HWY_MEM_OPS_MIGHT_FAULT), so we go through a
// stack buffer instead.  Sanitizer builds take the buffer path everywhere,
// as Highway does (it forces HWY_MEM_OPS_MIGHT_FAULT to 1 under ASan/MSan).
#undef ANVIL_HWY_MASKED_MEM  // per target: this part is included once per target
#if !HWY_MEM_OPS_MIGHT_FAULT || \
    (HWY_TARGET == HWY_AVX2 && !HWY_IS_ASAN && !HWY_IS_MSAN)
#define ANVIL_HWY_MASKED_MEM 1
#else
#define ANVIL_HWY_MASKED_MEM 0
#endif

HWY_INLINE V LoadTail(D d, M mask, const float *HWY_RESTRICT p, size_t count) {
#if ANVIL_HWY_MASKED_MEM
    (void)count;
    return hn::MaskedLoad(mask, d, p);
#else
    (void)mask;
    HWY_ALIGN float buf[hn::MaxLanes(D())] = {};
    std::memcpy(buf, p, count * sizeof(float));
    return hn::Load(d, buf);
#endif
}

HWY_INLINE void StoreTail(V v, D d, M mask, float *HWY_RESTRICT p, size_t count) {
#if ANVIL_HWY_MASKED_MEM
    (void)count;
    hn::BlendedStore(v, mask, d, p);
#else
    (void)mask;
    HWY_ALIGN float buf[hn::MaxLanes(D())];
    hn::Store(v, d, buf);
    std::memcpy(p, buf, count * sizeof(float));
#endif
}

// ------------------------------------------------------------- the tile
// The epilogue of one output vector, in the contract's order: t = alpha *
// acc (always multiplied: 1 * x is x, bit for bit, for every x an FMA
// chain can produce, so alpha == 1 needs no variant of its own), then by
// kBeta: 0 (C = t, C never loaded, so NaN or Inf there cannot leak), 1
// (C = t + C), 2 (C = fma(beta, C, t)).  Where the FMA is native,
// fma(1, C, t) rounds C + t once, exactly as t + C does, so beta == 1 takes
// the kBeta = 2 variant and a tile has two epilogues, not six (each is
// inlined into every tile shape: four more cost this file a third of its
// compile time); without a native FMA (a libm call per lane) beta == 1
// keeps its plain add.
template <int kBeta, bool kTail>
HWY_INLINE void StoreVec(D d, V acc, float *HWY_RESTRICT c, V valpha, V vbeta, M tail_mask,
                         size_t tail_count) {
    V t = hn::Mul(valpha, acc);
    if (kBeta != 0) {
        const V cv = kTail ? LoadTail(d, tail_mask, c, tail_count) : hn::LoadU(d, c);
        t = kBeta == 1 ? hn::Add(t, cv) : MulAddExact(vbeta, cv, t);
    }
    if (kTail)
        StoreTail(t, d, tail_mask, c, tail_count);
    else
        hn::StoreU(t, d, c);
}

// The kBeta of a tile's epilogue, decided once per tile.
HWY_INLINE int BetaKindOf(const gemm::ukernel_args *p) {
    if (p->beta == 0.0f) return 0;
    return p->beta == 1.0f && !HWY_NATIVE_FMA ? 1 : 2;
}

// X(r, j) for j = 0 .. 15 (the vectors of row r), and X(r, j) for
// r = 0 .. 11 (the rows of vector j): the named-register counterpart of
// ANVIL_HWY_ROWS for the columns of a tile.
#define ANVIL_HWY_VECS_OF(X, r)                                                            \
    X(r, 0) X(r, 1) X(r, 2) X(r, 3) X(r, 4) X(r, 5) X(r, 6) X(r, 7) X(r, 8) X(r, 9) X(r, 10) \
    X(r, 11) X(r, 12) X(r, 13) X(r, 14) X(r, 15)
#define ANVIL_HWY_ROWS_OF(X, j) \
    X(0, j) X(1, j) X(2, j) X(3, j) X(4, j) X(5, j) X(6, j) X(7, j) X(8, j) X(9, j) X(10, j) X(11, j)
static_assert(kMaxVecs <= 16 && ANVIL_HWY_MAX_ROWS == 12, "the X-macros above list 16 x 12");

// One row of the tile (its kVecs accumulators, the first kVecs of
// v0..v15) into C's row ci; only the last vector may be partial.
#define ANVIL_HWY_V16 V v0, V v1, V v2, V v3, V v4, V v5, V v6, V v7, V v8, V v9, V v10, V v11, \
                      V v12, V v13, V v14, V v15
template <int kBeta, int kVecs, bool kTail>
HWY_INLINE void StoreRowAs(D d, float *HWY_RESTRICT ci, V valpha, V vbeta, M tail_mask,
                           size_t tail_count, ANVIL_HWY_V16) {
    const size_t L = hn::Lanes(d);
#define ANVIL_STORE_VEC(r, j)                                                            \
    if constexpr (j < kVecs)                                                             \
        StoreVec<kBeta, kTail && j == kVecs - 1>(d, v##j, ci + j * L, valpha, vbeta, \
                                                 tail_mask, tail_count);
    ANVIL_HWY_VECS_OF(ANVIL_STORE_VEC, 0)
#undef ANVIL_STORE_VEC
    (void)L;
}

template <int kVecs, bool kTail>
HWY_INLINE void StoreRow(D d, int beta_kind, float *HWY_RESTRICT ci, V valpha, V vbeta,
                         M tail_mask, size_t tail_count, ANVIL_HWY_V16) {
#define ANVIL_STORE_AS(beta)                                                                 \
    return StoreRowAs<beta, kVecs, kTail>(d, ci, valpha, vbeta, tail_mask, tail_count, v0, v1, \
                                          v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13,  \
                                          v14, v15)
    if (beta_kind == 0) ANVIL_STORE_AS(0);
#if !HWY_NATIVE_FMA
    if (beta_kind == 1) ANVIL_STORE_AS(1);
#endif
    ANVIL_STORE_AS(2);
#undef ANVIL_STORE_AS
}
#undef ANVIL_HWY_V16

// B rows prefetched ahead of the one being read (as the JIT): the
// small-M calls stream B from memory, and software prefetches keep more
// lines in flight than the hardware prefetcher does for strided rows.
constexpr int64_t kPrefetchRows = 8;
constexpr bool kPrefetch = HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR;

// An m x n tile with m = kM and n in ((kVecs-1)*L, kVecs*L]; kTail when the
// last vector is partial.
// The accumulators are named registers, accR_J for row R and vector J, not
// an array: SVE vectors cannot be array elements (hwy_named_regs.h).  Rows
// at or beyond kM and vectors at or beyond kVecs are discarded at compile
// time.
// Not inlined into Kernel: one call per tile is noise, and each variant gets
// its own register allocation (and can be read on its own in a disassembly).
template <int kM, int kVecs, bool kTail, bool kRowMajorA>
HWY_NOINLINE void Tile(const gemm::ukernel_args *HWY_RESTRICT p) {
    static_assert(kM >= 1 && kM <= ANVIL_HWY_MAX_ROWS && kVecs >= 1 && kVecs <= kMaxVecs,
                  "tile shape");
    const D d;
    const size_t L = hn::Lanes(d);
    const int64_t K = p->k;
    const int64_t ldb = p->b_ld;
    const size_t tail_count = static_cast<size_t>(p->n) - (kVecs - 1) * L;
    const M tail_mask = hn::FirstN(d, tail_count);

#define ANVIL_DECLARE_ACC(r, j) [[maybe_unused]] V acc##r##_##j = hn::Zero(d);
#define ANVIL_DECLARE_ROW(r) ANVIL_HWY_VECS_OF(ANVIL_DECLARE_ACC, r)
    ANVIL_HWY_ROWS(ANVIL_DECLARE_ROW)
#undef ANVIL_DECLARE_ROW
#undef ANVIL_DECLARE_ACC

    // Row pointers for row-major A (A(i,k) = row_i[k]); for k-strided A the
    // column pointer advances by a_cs and rows are adjacent (a_rs == 1).
    // Entries past kM are never dereferenced.
    const float *a_rows[ANVIL_HWY_MAX_ROWS];
    HWY_UNROLL(16)
    for (int i = 0; i < ANVIL_HWY_MAX_ROWS; ++i)
        a_rows[i] = p->a + (i < kM ? (kRowMajorA ? i * p->a_rs : i) : 0);
    const float *HWY_RESTRICT ak = p->a;
    const int64_t a_cs = p->a_cs;
    const float *HWY_RESTRICT bk = p->b;
    // The prefetch stream: the caller's hint (the next block, laid out like
    // b), else B itself kPrefetchRows ahead.  Prefetches never fault.
    [[maybe_unused]] const float *pf = p->b_next ? p->b_next : p->b + kPrefetchRows * ldb;

    // K unrolled by 4 with the compiler's unroller rather than by hand: the
    // accumulators already form kM*kVecs independent FMA chains, so the
    // unroll only trims loop overhead.  Written out in the source, GCC 12
    // keeps extra address registers live and spills accumulators in the
    // 6x16 AVX2 tile; the pragma gives the clean 2 loads + 6 broadcasts +
    // 12 FMAs per k.
    HWY_UNROLL(4)
    for (int64_t k = 0; k < K; ++k) {
        if constexpr (kPrefetch) {
            // One prefetch per 64-byte line of the tile's B row.
            HWY_UNROLL(16)
            for (size_t off = 0; off < kVecs * L; off += 16) hwy::Prefetch(pf + off);
            pf += ldb;
        }
#define ANVIL_A(r) hn::Set(d, kRowMajorA ? a_rows[r][k] : ak[r])
#define ANVIL_B(j)                                                                    \
    ((kTail && j == kVecs - 1) ? LoadTail(d, tail_mask, bk + j * L, tail_count) \
                               : hn::LoadU(d, bk + j * L))
        if constexpr (kVecs <= 2 || kVecs <= kM) {
            // acc(r, j) = fma(A(r, k), B(k, j-th vector), acc(r, j)): the B
            // row's vectors first, then one broadcast per row.
#define ANVIL_LOAD_B(r, j) [[maybe_unused]] const V b##j = j < kVecs ? ANVIL_B(j) : hn::Zero(d);
            ANVIL_HWY_VECS_OF(ANVIL_LOAD_B, 0)
#undef ANVIL_LOAD_B
#define ANVIL_FMA(r, j) \
    if constexpr (j < kVecs) acc##r##_##j = MulAddExact(a, b##j, acc##r##_##j);
#define ANVIL_K_STEP(r)                      \
    if constexpr (r < kM) {                  \
        const V a = ANVIL_A(r);              \
        ANVIL_HWY_VECS_OF(ANVIL_FMA, r)      \
    }
            ANVIL_HWY_ROWS(ANVIL_K_STEP)
#undef ANVIL_K_STEP
#undef ANVIL_FMA
        } else {
            // Wider than tall: the rows' broadcasts first, then one B vector
            // at a time into every row.
#define ANVIL_BCAST(r) [[maybe_unused]] const V a##r = r < kM ? ANVIL_A(r) : hn::Zero(d);
            ANVIL_HWY_ROWS(ANVIL_BCAST)
#undef ANVIL_BCAST
#define ANVIL_FMA(r, j) \
    if constexpr (r < kM) acc##r##_##j = MulAddExact(a##r, b, acc##r##_##j);
#define ANVIL_K_STEP(unused, j)              \
    if constexpr (j < kVecs) {               \
        const V b = ANVIL_B(j);              \
        ANVIL_HWY_ROWS_OF(ANVIL_FMA, j)      \
    }
            ANVIL_HWY_VECS_OF(ANVIL_K_STEP, 0)
#undef ANVIL_K_STEP
#undef ANVIL_FMA
        }
#undef ANVIL_A
#undef ANVIL_B
        bk += ldb;
        ak += a_cs;
    }

    const int beta_kind = BetaKindOf(p);
    const V valpha = hn::Set(d, p->alpha), vbeta = hn::Set(d, p->beta);
    float *HWY_RESTRICT c = p->c;
    const int64_t ldc = p->ldc;
#define ANVIL_STORE_ROW(r)                                                                 \
    if constexpr (r < kM)                                                                  \
        StoreRow<kVecs, kTail>(d, beta_kind, c + r * ldc, valpha, vbeta, tail_mask, tail_count, \
                               acc##r##_0, acc##r##_1, acc##r##_2, acc##r##_3, acc##r##_4, \
                               acc##r##_5, acc##r##_6, acc##r##_7, acc##r##_8, acc##r##_9, \
                               acc##r##_10, acc##r##_11, acc##r##_12, acc##r##_13,         \
                               acc##r##_14, acc##r##_15);
    ANVIL_HWY_ROWS(ANVIL_STORE_ROW)
#undef ANVIL_STORE_ROW
}

// Up to two vectors (n <= 2L): the packed panel width, and the last
// columns of a wide call.
template <int kM, bool kRowMajorA>
HWY_INLINE void NarrowTile(const gemm::ukernel_args *p, int64_t n, int64_t L) {
    // One whole vector skips the mask: masked loads and stores cost more
    // than plain ones on AVX2 (vmaskmovps), and n == L is every call whose
    // N leaves one vector after the two-vector panels (N = 40 on AVX2).
    // Targets without a native FMA (SSE4, the SIMD-free fallback) spend
    // their time in MulAddExact's per-lane std::fma calls, not in masks:
    // they take the masked variants for every n, half the tiles to compile.
#if !HWY_NATIVE_FMA
    if (n > L)
        Tile<kM, 2, true, kRowMajorA>(p);
    else
        Tile<kM, 1, true, kRowMajorA>(p);
    return;
#endif
    if (n == 2 * L)
        Tile<kM, 2, false, kRowMajorA>(p);
    else if (n > L)
        Tile<kM, 2, true, kRowMajorA>(p);
    else if (n == L)
        Tile<kM, 1, false, kRowMajorA>(p);
    else
        Tile<kM, 1, true, kRowMajorA>(p);
}

// A full tile of nv vectors, 2 < nv <= MaxVecs(kM).
template <int kM, bool kRowMajorA>
HWY_INLINE void WideTile(const gemm::ukernel_args *p, int64_t nv) {
    switch (nv) {
#define ANVIL_WIDE_CASE(v)                                                 \
    case v:                                                                \
        if constexpr (v <= MaxVecs(kM)) Tile<kM, v, false, kRowMajorA>(p); \
        return;
        ANVIL_WIDE_CASE(3)
        ANVIL_WIDE_CASE(4)
        ANVIL_WIDE_CASE(5)
        ANVIL_WIDE_CASE(6)
        ANVIL_WIDE_CASE(7)
        ANVIL_WIDE_CASE(8)
        ANVIL_WIDE_CASE(9)
        ANVIL_WIDE_CASE(10)
        ANVIL_WIDE_CASE(11)
        ANVIL_WIDE_CASE(12)
        ANVIL_WIDE_CASE(13)
        ANVIL_WIDE_CASE(14)
        ANVIL_WIDE_CASE(15)
        ANVIL_WIDE_CASE(16)
#undef ANVIL_WIDE_CASE
        default:
            break;
    }
}

// Any n in 1..MaxVecs(kM)*L: one tile when n is at most two vectors or a
// whole number of vectors; else the widest full tiles first, then the rest
// (each element's arithmetic is the same whatever tile computes it, so the
// split does not change the bits).
template <int kM, bool kRowMajorA>
HWY_INLINE void AnyTile(const gemm::ukernel_args *p) {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t n = p->n;
    if (n <= 2 * L) return NarrowTile<kM, kRowMajorA>(p, n, L);
    if constexpr (MaxVecs(kM) > 2) {
        if (n % L == 0 && n / L <= MaxVecs(kM)) return WideTile<kM, kRowMajorA>(p, n / L);
        gemm::ukernel_args part = *p;
        for (int64_t j0 = 0; j0 < n;) {
            const int64_t left = n - j0;
            const int64_t nv = std::min<int64_t>(left / L, MaxVecs(kM));
            const int64_t w = left <= 2 * L ? left : nv * L;
            part.b = p->b + j0;
            part.c = p->c + j0;
            part.b_next = p->b_next ? p->b_next + j0 : nullptr;
            part.n = w;
            if (w <= 2 * L)
                NarrowTile<kM, kRowMajorA>(&part, w, L);
            else
                WideTile<kM, kRowMajorA>(&part, nv);
            j0 += w;
        }
    }
}

// The kernel for kM rows: picks the tile variant for this call's n and A
// layout (a few well-predicted branches per call, against K * kM * n FMAs).
template <int kM>
void Kernel(const gemm::ukernel_args *p) {
    if (p->a_cs == 1) {
        AnyTile<kM, true>(p);
    } else if (p->a_rs == 1) {
        AnyTile<kM, false>(p);
    } else {
        // The contract has one unit stride; should a caller break it, the
        // reference kernel still gives the contract's bits.
        ref::sgemm_ukernel(p);
    }
}

template <size_t... I>
constexpr std::array<gemm::ukernel_fn, sizeof...(I)> MakeKernels(std::index_sequence<I...>) {
    return {{&Kernel<int(I) + 1>...}};
}

constexpr std::array<gemm::ukernel_fn, kMR> kKernels =
    MakeKernels(std::make_index_sequence<kMR>());

// Exported (one instance per target; see the dispatch tables below).
void DescribeTarget(hwy_target_kernels *out) {
    const D d;
    out->target = HWY_TARGET;
    out->mr = kMR;
    out->nr = static_cast<int>(kNV * hn::Lanes(d));
}

// The packed-panel kernels: n <= nr (hwy_target_kernels::get).
gemm::ukernel_fn GetKernel(int m, int n) {
    const D d;
    if (m < 1 || m > kMR || n < 1 || n > static_cast<int>(kNV * hn::Lanes(d))) return nullptr;
    return kKernels[size_t(m - 1)];
}

// Widest tile of m rows for B read in place (backend::max_n); 0 outside
// 1..kMR.  Whole vectors, and at most 255 columns (ukernel_desc::n is a
// byte; only long scalable vectors get near it), but never below nr.
int MaxCols(int m) {
    const D d;
    if (m < 1 || m > kMR) return 0;
    const int L = static_cast<int>(hn::Lanes(d));
    return std::max(kNV * L, std::min(MaxVecs(m) * L, 255 / L * L));
}

// The same kernels for any n up to MaxCols(m) (the backend's get).
gemm::ukernel_fn GetWideKernel(int m, int n) {
    if (m < 1 || m > kMR || n < 1 || n > MaxCols(m)) return nullptr;
    return kKernels[size_t(m - 1)];
}

#undef ANVIL_HWY_VECS_OF
#undef ANVIL_HWY_ROWS_OF

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(DescribeTarget);
HWY_EXPORT(GetKernel);
HWY_EXPORT(GetWideKernel);
HWY_EXPORT(MaxCols);

namespace {

// Fills *out for compiled target t; false if the tables do not hold it (a
// layout we do not understand): DescribeTarget reports its own HWY_TARGET,
// which guards the index arithmetic of hwy_dispatch_index.h.
bool describe(int64_t t, hwy_target_kernels *out) {
    size_t idx = 0;
    if ((t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx)) return false;
    const auto describe_fn = HWY_DISPATCH_TABLE(DescribeTarget)[idx];
    const auto get_fn = HWY_DISPATCH_TABLE(GetKernel)[idx];
    if (!describe_fn || !get_fn) return false;
    hwy_target_kernels k;
    describe_fn(&k);
    if (k.target != t) return false;
    k.name = hwy::TargetName(t);
    k.get = get_fn;
    *out = k;
    return true;
}

// The kernels of a target for B read in place: any n up to max_cols(m)
// (wider than nr for few rows, see MaxVecs).
struct wide_kernels {
    gemm::ukernel_fn (*get)(int m, int n) = nullptr;
    int (*max_cols)(int m) = nullptr;
};

class hwy_backend_t final : public gemm::backend {
public:
    hwy_backend_t(const hwy_target_kernels &k, const wide_kernels &w)
        : k_(k), name_(std::string("hwy:") + k.name) {
        // One kernel per row count serves every n; its name says so.  The
        // backend is never destroyed, so these stay valid for ukernel_ref.
        for (int m = 1; m <= k.mr; ++m) {
            const int widest = w.get && w.max_cols ? std::max(k.nr, w.max_cols(m)) : k.nr;
            max_n_.push_back(widest);
            kernel_names_.push_back(name_ + ":sgemm_" + std::to_string(m) + "x(1.." +
                                    std::to_string(widest) + ")");
        }
        wide_ = w.get;
    }
    const char *name() const override { return name_.c_str(); }
    // Whatever the target, this is the backend of the avx2 tier (and of
    // CPUs the tiers do not describe).
    anvil_isa_t tier() const override { return anvil_isa_avx2; }
    int mr() const override { return k_.mr; }
    int nr() const override { return k_.nr; }
    int max_n(int m) const override {
        return m >= 1 && m <= k_.mr ? max_n_[size_t(m) - 1] : k_.nr;
    }
    anvil_status_t get(const gemm::ukernel_desc &desc, gemm::ukernel_ref *out) const override {
        if (desc.flags != 0 || desc.epi_ops != 0) return anvil_unsupported;  // no call flags here
        const gemm::ukernel_fn fn = desc.n > k_.nr && wide_ ? wide_(desc.m, desc.n)
                                                             : k_.get(desc.m, desc.n);
        if (!fn) return anvil_invalid_argument;
        out->fn = fn;
        out->keep_alive.reset();  // static code
        out->name = kernel_names_[size_t(desc.m) - 1].c_str();
        return anvil_success;
    }

private:
    hwy_target_kernels k_;
    gemm::ukernel_fn (*wide_)(int m, int n) = nullptr;
    std::string name_;
    std::vector<int> max_n_;
    std::vector<std::string> kernel_names_;
};

// One backend object per target, made on first use and never destroyed
// (callers keep raw pointers; no static-destruction-order hazards).  The
// driver asks on every GEMM, so the common path is one acquire load.
const gemm::backend *backend_for_target(int64_t t) {
    static std::mutex mu;
    static std::atomic<const hwy_backend_t *> slots[64];
    std::atomic<const hwy_backend_t *> &slot =
        slots[hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(t))];
    if (const hwy_backend_t *b = slot.load(std::memory_order_acquire)) return b;
    std::lock_guard<std::mutex> lock(mu);
    if (const hwy_backend_t *b = slot.load(std::memory_order_relaxed)) return b;
    hwy_target_kernels k;
    if (!describe(t, &k)) return nullptr;
    wide_kernels w;
    size_t idx = 0;
    if (hwy_dispatch_index(t, &idx)) {
        w.get = HWY_DISPATCH_TABLE(GetWideKernel)[idx];
        w.max_cols = HWY_DISPATCH_TABLE(MaxCols)[idx];
    }
    const hwy_backend_t *b = new hwy_backend_t(k, w);
    slot.store(b, std::memory_order_release);
    return b;
}

// hwy::SupportedTargets() re-runs CPUID on every call (about 60 us on the
// development VM, where CPUID traps to the hypervisor) and the driver asks
// for a backend on every GEMM, so the backend uses a snapshot taken once.
// compiled_targets() asks afresh so that tests can narrow it with
// hwy::SetSupportedTargetsForTest.  (Hence hwy::DisableTargets() after the
// first GEMM does not affect anvil.)
int64_t supported_once() {
    static const int64_t s = hwy::SupportedTargets();
    return s;
}

}  // namespace

int64_t supported_targets_once() { return supported_once(); }

int64_t allowed_targets(anvil_isa_t tier) {
    const int64_t fallback = HWY_EMU128 | HWY_SCALAR;
    if (tier >= anvil_isa_avx512_core) return ~int64_t(0);
    if (tier == anvil_isa_scalar) return fallback;
#if HWY_ARCH_X86
    // The avx2 tier: nothing that executes AVX-512 instructions.
    return HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 | fallback;
#else
    // The tiers describe x86; elsewhere avx2 just means "SIMD allowed".
    return ~int64_t(0);
#endif
}

std::vector<hwy_target_kernels> compiled_targets() {
    std::vector<hwy_target_kernels> out;
    // Lower bits are better targets, so this lists the best first.
    for (int64_t bits = hwy::SupportedTargets() & HWY_TARGETS; bits != 0; bits &= bits - 1) {
        hwy_target_kernels k;
        if (describe(bits & -bits, &k)) out.push_back(k);
    }
    return out;
}

const gemm::backend *highway_backend_for(int64_t supported, anvil_isa_t tier) {
    const int64_t usable = supported & HWY_TARGETS & allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const gemm::backend *b = backend_for_target(bits & -bits)) return b;
    return nullptr;
}

}  // namespace anvil::fallback

namespace anvil::gemm {

// The cap is read without freezing it: the driver has already frozen it
// through select_backend, and tools/tests may ask before computing.
const backend *highway_backend() {
    return fallback::highway_backend_for(fallback::supported_once(), cpu::dispatch_tier(false));
}

const backend *highway_backend_at(anvil_isa_t tier) {
    return fallback::highway_backend_for(fallback::supported_once(), tier);
}

}  // namespace anvil::gemm
#endif  // HWY_ONCE
