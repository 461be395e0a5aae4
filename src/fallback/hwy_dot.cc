// Highway kernels of the small-M dot and row-stream paths (gemm/dot.h,
// gemm/stream.h), compiled once per Highway target through foreach_target,
// like hwy_sgemm.cc.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/isa.h"
#include "fallback/hwy_dot.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/dot.h"
#include "gemm/stream.h"
#include "gemm/ukernel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_dot.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// The K tail (fewer than L elements) as a vector with zeros after it,
// through a stack buffer: a plain or emulated masked load could read past
// the caller's row, and this runs once per row of a tile.
HWY_INLINE V LoadFirst(D d, const float *HWY_RESTRICT p, size_t count) {
    HWY_ALIGN float buf[hn::MaxLanes(D())] = {};
    std::memcpy(buf, p, count * sizeof(float));
    return hn::Load(d, buf);
}

// X(r, j): the accumulator cells of the largest tile, 4 rows x 8 columns
// (named registers: SVE vectors cannot be array elements, see
// hwy_named_regs.h).
#define ANVIL_DOT_ROW(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3) X(r, 4) X(r, 5) X(r, 6) X(r, 7)
#define ANVIL_DOT_CELLS(X) ANVIL_DOT_ROW(X, 0) ANVIL_DOT_ROW(X, 1) ANVIL_DOT_ROW(X, 2) ANVIL_DOT_ROW(X, 3)
#define ANVIL_DOT_ROWS(X) X(0) X(1) X(2) X(3)
#define ANVIL_DOT_COLS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

// Accumulators per tile: with the kM A vectors and one B vector they fit
// the target's registers (x86 AVX-512: 32; AVX2, SSE4: 16; the Arm targets
// keep 8 as well, unmeasured there).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kMaxCells = 16;
#else
constexpr int kMaxCells = 8;
#endif

// kM rows of A against kN columns of B, all of K: kM * kN accumulators,
// one A load per row and one B load per column each step.  Every output's
// sum runs in the same order whatever the tile, so the tile shape never
// changes a result.
template <int kM, int kN>
HWY_NOINLINE void DotTile(const gemm::dot_args *HWY_RESTRICT p, const float *HWY_RESTRICT a,
                          const float *HWY_RESTRICT b, float *HWY_RESTRICT c) {
    static_assert(kM >= 1 && kM <= 4 && kN >= 1 && kN <= 8 && kM * kN <= kMaxCells, "tile shape");
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t K = p->k;
#define ANVIL_DECLARE(r, j) [[maybe_unused]] V acc##r##_##j = hn::Zero(d);
    ANVIL_DOT_CELLS(ANVIL_DECLARE)
#undef ANVIL_DECLARE
    // Rows and columns past the tile point at row / column 0 (never read).
#define ANVIL_ROW_PTR(r) const float *HWY_RESTRICT a##r = a + (r < kM ? r * p->lda : 0);
    ANVIL_DOT_ROWS(ANVIL_ROW_PTR)
#undef ANVIL_ROW_PTR
#define ANVIL_COL_PTR(j) const float *HWY_RESTRICT b##j = b + (j < kN ? j * p->ldb : 0);
    ANVIL_DOT_COLS(ANVIL_COL_PTR)
#undef ANVIL_COL_PTR

    // One k step: the A vectors of every row, then column by column one B
    // vector into every row's accumulator.
#define ANVIL_LOAD_A(r) [[maybe_unused]] const V va##r = r < kM ? LOAD(a##r) : hn::Zero(d);
#define ANVIL_FMA(r, j) \
    if constexpr (r < kM) acc##r##_##j = hn::MulAdd(va##r, vb, acc##r##_##j);
#define ANVIL_COLUMN(j)                      \
    if constexpr (j < kN) {                  \
        const V vb = LOAD(b##j);             \
        ANVIL_FMA(0, j) ANVIL_FMA(1, j) ANVIL_FMA(2, j) ANVIL_FMA(3, j) \
    }
    int64_t k = 0;
    HWY_UNROLL(2)
    for (; k + L <= K; k += L) {
#define LOAD(ptr) hn::LoadU(d, ptr + k)
        ANVIL_DOT_ROWS(ANVIL_LOAD_A)
        ANVIL_DOT_COLS(ANVIL_COLUMN)
#undef LOAD
    }
    if (k < K) {
        const size_t rest = static_cast<size_t>(K - k);
#define LOAD(ptr) LoadFirst(d, ptr + k, rest)
        ANVIL_DOT_ROWS(ANVIL_LOAD_A)
        ANVIL_DOT_COLS(ANVIL_COLUMN)
#undef LOAD
    }
#undef ANVIL_COLUMN
#undef ANVIL_FMA
#undef ANVIL_LOAD_A

#define ANVIL_STORE(r, j)                                                             \
    if constexpr (r < kM && j < kN)                                                   \
        gemm::store_contract(hn::GetLane(hn::SumOfLanes(d, acc##r##_##j)), p->alpha, p->beta, \
                             c + r * p->ldc + j);
    ANVIL_DOT_CELLS(ANVIL_STORE)
#undef ANVIL_STORE
}

// Columns [0, n) of kM rows: tiles of kW columns, then the narrower rest.
template <int kM, int kW>
HWY_INLINE void DotRows(const gemm::dot_args *p, const float *a, const float *b, float *c,
                        int64_t n) {
    int64_t j = 0;
    for (; j + kW <= n; j += kW) DotTile<kM, kW>(p, a, b + j * p->ldb, c + j);
    const float *bj = b + j * p->ldb;
    switch (n - j) {
        case 0: return;
#define ANVIL_REST(w) \
    case w:           \
        if constexpr (w < kW) DotTile<kM, w>(p, a, bj, c + j); \
        return;
        ANVIL_REST(1) ANVIL_REST(2) ANVIL_REST(3) ANVIL_REST(4) ANVIL_REST(5) ANVIL_REST(6)
        ANVIL_REST(7)
#undef ANVIL_REST
        default: return;
    }
}

#undef ANVIL_DOT_ROW
#undef ANVIL_DOT_CELLS
#undef ANVIL_DOT_ROWS
#undef ANVIL_DOT_COLS

// The whole call: row groups of up to 4, each against column chunks of B
// small enough to stay in L2 (~96 KiB) while the groups after the first
// read them again, so B comes from memory once whatever M is.
void DotGemm(const gemm::dot_args *p) {
    const int64_t chunk = std::max<int64_t>(8, (96 * 1024 / 4) / std::max<int64_t>(1, p->k) / 8 * 8);
    for (int64_t j0 = 0; j0 < p->n; j0 += chunk) {
        const int64_t n = std::min(chunk, p->n - j0);
        for (int64_t i0 = 0; i0 < p->m; i0 += 4) {
            const float *a = p->a + i0 * p->lda;
            const float *b = p->b + j0 * p->ldb;
            float *c = p->c + i0 * p->ldc + j0;
            switch (std::min<int64_t>(4, p->m - i0)) {
                // Wider tiles load less per FMA (4 x 4: 8 loads for 16).
                case 1: DotRows<1, 8>(p, a, b, c, n); break;
                case 2: DotRows<2, kMaxCells / 2 < 8 ? kMaxCells / 2 : 8>(p, a, b, c, n); break;
                case 3: DotRows<3, kMaxCells / 3>(p, a, b, c, n); break;
                default: DotRows<4, kMaxCells / 4>(p, a, b, c, n); break;
            }
        }
    }
}

// ---- the row-stream path (gemm/stream.h)

// Columns per chunk: the accumulators (16 KiB for any number of rows) stay
// in L1 while four rows of B stream through.
constexpr int64_t kStreamChunkFloats = 4096;

// Copies w < 32 floats with fixed-size moves: a loop or a memcpy of w
// floats becomes a libc call (GCC recognises the loop), which cost more than
// the row's arithmetic here.
HWY_INLINE void CopyShort(const float *HWY_RESTRICT from, int64_t w, float *HWY_RESTRICT to) {
    int64_t j = 0;
    if (w & 16) hwy::CopyBytes<64>(from + j, to + j), j += 16;
    if (w & 8) hwy::CopyBytes<32>(from + j, to + j), j += 8;
    if (w & 4) hwy::CopyBytes<16>(from + j, to + j), j += 4;
    if (w & 2) hwy::CopyBytes<8>(from + j, to + j), j += 2;
    if (w & 1) to[j] = from[j];
}

// Rows of B per block of the column tail (a stack copy of up to
// kTailRows x MaxLanes floats).
constexpr int64_t kTailRows = 32;

// The last w < L columns of StreamRows (B(k, j) = b[k * ldb + j], j < w)
// into acc[r][col0 + j], with the contract's fma chain over k.  With a
// fused multiply-add the columns go as one vector: blocks of B's tail rows
// are copied into a zero-padded stack buffer (a masked load could read past
// the caller's row; vmaskmovps is slow on Zen 1), so the chain costs K fma
// latencies, not w * K (1x5x300: 2.5 us one column after another on Zen 1).
// Without one, std::fma per element, k outside the columns so that their
// chains interleave.
template <int kM, size_t kAccCols>
HWY_INLINE void StreamTail(const gemm::stream_args *HWY_RESTRICT p, const float *HWY_RESTRICT b,
                           int64_t w, float (*acc)[kAccCols], int64_t col0) {
    auto A = [p](int r, int64_t k) { return p->a[r * p->a_rs + k * p->a_cs]; };
    const int64_t K = p->k, ldb = p->ldb;
#if HWY_NATIVE_FMA
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    constexpr size_t kMaxL = hn::MaxLanes(D());
    HWY_ALIGN float rows[kTailRows * kMaxL] = {};  // lanes >= w stay zero
    HWY_ALIGN float sums[kM][kMaxL] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kTailRows) {
        const int64_t kc = std::min(kTailRows, K - k0);
        for (int64_t kk = 0; kk < kc; ++kk) CopyShort(b + (k0 + kk) * ldb, w, rows + kk * L);
        for (int r = 0; r < kM; ++r) {
            V v = hn::Load(d, sums[r]);
            for (int64_t kk = 0; kk < kc; ++kk)
                v = hn::MulAdd(hn::Set(d, A(r, k0 + kk)), hn::Load(d, rows + kk * L), v);
            hn::Store(v, d, sums[r]);
        }
    }
    for (int r = 0; r < kM; ++r) std::copy(sums[r], sums[r] + w, acc[r] + col0);
#else
    for (int r = 0; r < kM; ++r) {
        float *t = acc[r] + col0;
        for (int64_t kk = 0; kk < K; ++kk) {
            const float ark = A(r, kk);
            const float *bk = b + kk * ldb;
            for (int64_t j = 0; j < w; ++j) t[j] = std::fma(ark, bk[j], t[j]);
        }
    }
#endif
}

// kM rows of C over columns [0, n) (n <= kStreamChunkFloats / kM): acc(i, j) =
// fma(A(i, k), B(k, j), acc(i, j)) for k = 0, 1, ..., four rows of B per
// pass over the chunk, the last n % L columns one by one in the same order.
template <int kM>
HWY_NOINLINE void StreamRows(const gemm::stream_args *HWY_RESTRICT p, const float *HWY_RESTRICT b,
                             float *HWY_RESTRICT c, int64_t n) {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    HWY_ALIGN float acc[kM][kStreamChunkFloats / kM];
    for (int r = 0; r < kM; ++r) std::fill(acc[r], acc[r] + n, 0.0f);
    // Targets without a fused multiply-add (SSE4, SCALAR) take every
    // column through the scalar std::fma loop below: the contract's bits,
    // slowly, on CPUs where nothing faster is allowed anyway.
    const int64_t nv = HWY_NATIVE_FMA ? n / L * L : 0, K = p->k, ldb = p->ldb;
    auto A = [p](int r, int64_t k) { return p->a[r * p->a_rs + k * p->a_cs]; };
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
        const float *b0 = b + k * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        for (int r = 0; r < kM; ++r) {
            const V a0 = hn::Set(d, A(r, k)), a1 = hn::Set(d, A(r, k + 1)),
                    a2 = hn::Set(d, A(r, k + 2)), a3 = hn::Set(d, A(r, k + 3));
            float *ar = acc[r];
            for (int64_t j = 0; j < nv; j += L) {
                V v = hn::Load(d, ar + j);
                v = hn::MulAdd(a0, hn::LoadU(d, b0 + j), v);
                v = hn::MulAdd(a1, hn::LoadU(d, b1 + j), v);
                v = hn::MulAdd(a2, hn::LoadU(d, b2 + j), v);
                v = hn::MulAdd(a3, hn::LoadU(d, b3 + j), v);
                hn::Store(v, d, ar + j);
            }
        }
    }
    for (; k < K; ++k) {
        const float *bk = b + k * ldb;
        for (int r = 0; r < kM; ++r) {
            const V a0 = hn::Set(d, A(r, k));
            for (int64_t j = 0; j < nv; j += L)
                hn::Store(hn::MulAdd(a0, hn::LoadU(d, bk + j), hn::Load(d, acc[r] + j)), d,
                          acc[r] + j);
        }
    }
    if (nv < n) StreamTail<kM>(p, b + nv, n - nv, acc, nv);
    for (int r = 0; r < kM; ++r)
        for (int64_t j = 0; j < n; ++j)
            gemm::store_contract(acc[r][j], p->alpha, p->beta, c + r * p->ldc + j);
}

// Row groups of 8, 4, 2, 1 (each reads B once per group), each over column
// chunks whose accumulators fill 16 KiB.
void StreamGemm(const gemm::stream_args *p) {
    for (int64_t i0 = 0; i0 < p->m;) {
        const int64_t rows = p->m - i0;
        const int g = rows >= 8 ? 8 : rows >= 4 ? 4 : rows >= 2 ? 2 : 1;
        const int64_t chunk = kStreamChunkFloats / g;
        gemm::stream_args q = *p;
        q.a = p->a + i0 * p->a_rs;
        for (int64_t j0 = 0; j0 < p->n; j0 += chunk) {
            const int64_t n = std::min(chunk, p->n - j0);
            const float *b = p->b + j0;
            float *c = p->c + i0 * p->ldc + j0;
            switch (g) {
                case 8: StreamRows<8>(&q, b, c, n); break;
                case 4: StreamRows<4>(&q, b, c, n); break;
                case 2: StreamRows<2>(&q, b, c, n); break;
                default: StreamRows<1>(&q, b, c, n); break;
            }
        }
        i0 += g;
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(DotGemm);
HWY_EXPORT(StreamGemm);

gemm::dot_fn dot_kernel_of_target(int64_t t) {
    size_t idx = 0;
    if ((t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx)) return nullptr;
    return HWY_DISPATCH_TABLE(DotGemm)[idx];
}

gemm::stream_fn stream_kernel_of_target(int64_t t) {
    size_t idx = 0;
    if ((t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx)) return nullptr;
    return HWY_DISPATCH_TABLE(StreamGemm)[idx];
}

}  // namespace anvil::fallback

namespace anvil::gemm {

dot_fn dot_kernel(anvil_isa_t tier) {
    if (tier == anvil_isa_scalar) return nullptr;
    const int64_t usable =
        fallback::supported_targets_once() & HWY_TARGETS & fallback::allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const dot_fn fn = fallback::dot_kernel_of_target(bits & -bits)) return fn;
    return nullptr;
}

stream_fn stream_kernel(anvil_isa_t tier) {
    // The JIT tiers use it only where cpu_info::jit_row_stream says so.
    if (tier == anvil_isa_scalar || (tier >= anvil_isa_avx512_core && !cpu::info().jit_row_stream))
        return nullptr;
    const int64_t usable =
        fallback::supported_targets_once() & HWY_TARGETS & fallback::allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const stream_fn fn = fallback::stream_kernel_of_target(bits & -bits)) return fn;
    return nullptr;
}

}  // namespace anvil::gemm
#endif  // HWY_ONCE
