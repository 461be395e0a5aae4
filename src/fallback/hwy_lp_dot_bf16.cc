// Highway bf16 dot kernels: lp_dot.h's bf16 contract (a small-M tile whose
// B is stored N x K in bf16 and read in place) on every Highway target, for
// the in-place small-M path below the AVX512-BF16 JIT tier
// (lowp/lp_inplace.cpp).
//
// The contract keeps the packed kernels' order (a chain of fp32 additions
// per result, pair by pair along K), so a result cannot be split into
// partial sums along K as the int8 dot kernels do; each accumulator lane
// is one column instead.  B's rows are N x K, so each step transposes a
// 4 x 4 block of bf16 pairs (4 rows of B, 4 pairs of K; 32-bit lanes) in
// registers: then lane c of vector q holds the pair 2(g+q), 2(g+q)+1 of
// column c, whose high half is element 2(g+q)+1 as fp32 (bf16 is the top
// half of an fp32 value) and whose low half shifted left by 16 is element
// 2(g+q).  The vectors are 128 bits on every target (the 4 x 4 transpose
// is the same everywhere); SCALAR runs the chain element by element.
//
// A comes widened to fp32 (the caller converts its few rows once per GEMM
// instead of once per tile), so each step broadcasts it from memory.  The
// last K % 8 elements go through zero-padded copies: no element past
// B(j, K-1) or A(i, K-1) is read.

// One rounding per product and per sum (the contract; a fused multiply-add
// would differ where a product overflows or leaves the normal range):
// stop GCC from contracting Mul and Add into an FMA, as hwy_lowp.cc does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fallback/hwy_lp_dot.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_dot.h"

#include <hwy/cache_control.h>  // hwy::Prefetch

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_lp_dot_bf16.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a bf16 pair as a 32-bit lane: element 2k is the low half");

constexpr int kMaxM = lowp::kDotMaxM;  // 4
// Two blocks of 4 columns: 2 m accumulators, the 4 transposed vectors and
// a few temporaries stay within 16 registers for every m.
constexpr int kMaxN = 8;
constexpr int64_t kStep = 8;  // elements per step: 4 pairs

// The contract's two additions for one pair of one column (scalar).
HWY_INLINE float PairChain(float acc, float a1, float b1, float a0, float b0) {
    acc = acc + a1 * b1;
    return acc + a0 * b0;
}

#if HWY_TARGET == HWY_SCALAR

// No 128-bit vectors: the chain per result, element by element.
template <int kM, int kN>
HWY_NOINLINE void DotBf16(const lowp::lp_dot_args *HWY_RESTRICT p) {
    const int n = static_cast<int>(p->n);
    const auto *const a = reinterpret_cast<const float *>(p->a);
    const auto *const b = reinterpret_cast<const uint16_t *>(p->b);
    const int64_t a_rs = p->a_rs / 4, b_rs = p->b_rs / 2, K = p->k;
    auto *const acc = reinterpret_cast<float *>(p->acc);
    for (int i = 0; i < kM; ++i)
        for (int j = 0; j < n; ++j) {
            const float *ai = a + i * a_rs;
            const uint16_t *bj = b + j * b_rs;
            float s = 0.0f;
            for (int64_t k = 0; k < K; k += 2) {
                const bool pair = k + 1 < K;
                s = PairChain(s, pair ? ai[k + 1] : 0.0f, pair ? lowp::bf16_to_f32(bj[k + 1]) : 0.0f,
                              ai[k], lowp::bf16_to_f32(bj[k]));
            }
            acc[i * p->acc_ld + j] = s;
        }
}

#else  // vector targets

using DF = hn::FixedTag<float, 4>;
using DU = hn::FixedTag<uint32_t, 4>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;

// 4 pairs (8 bf16) of one row as 32-bit lanes.
HWY_INLINE VU LoadPairs(const uint16_t *HWY_RESTRICT p) {
    const hn::Repartition<uint16_t, DU> du16;
    return hn::BitCast(DU(), hn::LoadU(du16, p));
}

// X(i, c) for the 4 rows x 2 column blocks of accumulators (named: SVE
// vectors cannot be array elements).
#define ANVIL_BDOT_ROW(X, c) X(0, c) X(1, c) X(2, c) X(3, c)
#define ANVIL_BDOT_ALL(X) ANVIL_BDOT_ROW(X, 0) ANVIL_BDOT_ROW(X, 1)
static_assert(kMaxM == 4 && kMaxN == 8, "the X-macros above list 4 x 2 blocks");

template <int kM, int kN>
HWY_NOINLINE void DotBf16(const lowp::lp_dot_args *HWY_RESTRICT p) {
    const DF df;
    const DU du;
    const auto *const a = reinterpret_cast<const float *>(p->a);
    const auto *const b = reinterpret_cast<const uint16_t *>(p->b);
    // Row strides in elements (the contract gives bytes).
    const int64_t a_rs = p->a_rs / 4, b_rs = p->b_rs / 2;
    const int64_t K = p->k;
    const int64_t full = K / kStep * kStep;
    const VU hi_half = hn::Set(du, 0xFFFF0000u);
    // Columns n .. kN-1 (n < kN in a tail tile) read row n-1 of B again:
    // always valid memory, and their sums are never stored.
    const int64_t n = p->n;
    int64_t row_off[kN];
    for (int64_t j = 0; j < kN; ++j) row_off[j] = std::min(j, n - 1) * b_rs;

#define ANVIL_BDOT_DECL(i, c) [[maybe_unused]] VF acc##i##_##c = hn::Zero(df);
    ANVIL_BDOT_ALL(ANVIL_BDOT_DECL)
#undef ANVIL_BDOT_DECL

    // One step over 8 elements: column block c (rows 4c .. 4c+3 of B at
    // B_AT(j), zero for rows >= kN, which are never read), A at AF(i, e).
#define ANVIL_BDOT_ROWVEC(j) ((j) < kN ? LoadPairs(B_AT(j)) : hn::Zero(du))
#define ANVIL_BDOT_MAC(i, c, q, vodd, veven)                                                  \
    if constexpr (i < kM) {                                                                   \
        acc##i##_##c = hn::Add(acc##i##_##c, hn::Mul(hn::Set(df, AF(i, 2 * (q) + 1)), vodd)); \
        acc##i##_##c = hn::Add(acc##i##_##c, hn::Mul(hn::Set(df, AF(i, 2 * (q))), veven));    \
    }
#define ANVIL_BDOT_PAIR(c, q, r)                                                   \
    {                                                                              \
        const VF vodd = hn::BitCast(df, hn::And(r, hi_half));                      \
        const VF veven = hn::BitCast(df, hn::ShiftLeft<16>(r));                    \
        ANVIL_BDOT_MAC(0, c, q, vodd, veven) ANVIL_BDOT_MAC(1, c, q, vodd, veven)  \
        ANVIL_BDOT_MAC(2, c, q, vodd, veven) ANVIL_BDOT_MAC(3, c, q, vodd, veven)  \
    }
    // The 4 x 4 transpose: rows v0..v3 (4 pairs each) -> r0..r3 (pair q of
    // the 4 columns).
#define ANVIL_BDOT_BLOCK(c)                                                               \
    if constexpr (4 * (c) < kN) {                                                         \
        const hn::Repartition<uint64_t, DU> d64;                                          \
        const VU v0 = ANVIL_BDOT_ROWVEC(4 * (c)), v1 = ANVIL_BDOT_ROWVEC(4 * (c) + 1);    \
        const VU v2 = ANVIL_BDOT_ROWVEC(4 * (c) + 2), v3 = ANVIL_BDOT_ROWVEC(4 * (c) + 3); \
        const auto t01l = hn::BitCast(d64, hn::InterleaveLower(du, v0, v1));              \
        const auto t23l = hn::BitCast(d64, hn::InterleaveLower(du, v2, v3));              \
        const auto t01u = hn::BitCast(d64, hn::InterleaveUpper(du, v0, v1));              \
        const auto t23u = hn::BitCast(d64, hn::InterleaveUpper(du, v2, v3));              \
        const VU r0 = hn::BitCast(du, hn::InterleaveLower(d64, t01l, t23l));              \
        ANVIL_BDOT_PAIR(c, 0, r0)                                                         \
        const VU r1 = hn::BitCast(du, hn::InterleaveUpper(d64, t01l, t23l));              \
        ANVIL_BDOT_PAIR(c, 1, r1)                                                         \
        const VU r2 = hn::BitCast(du, hn::InterleaveLower(d64, t01u, t23u));              \
        ANVIL_BDOT_PAIR(c, 2, r2)                                                         \
        const VU r3 = hn::BitCast(du, hn::InterleaveUpper(d64, t01u, t23u));              \
        ANVIL_BDOT_PAIR(c, 3, r3)                                                         \
    }
#define ANVIL_BDOT_STEP ANVIL_BDOT_BLOCK(0) ANVIL_BDOT_BLOCK(1)

    // Each B row is a short stream (8 KiB for K = 4096) that the hardware
    // prefetchers barely start on before it ends, so every 64-byte line
    // prefetches the rows of the next tile (the caller walks B in tiles of
    // kN rows) a whole call ahead, as the int8 dot kernels do.  Prefetches
    // never fault; past B's last row they fetch nothing the contract reads.
    constexpr int64_t kLine = 32;  // elements
    const int64_t next_tile = kN * b_rs;
#define ANVIL_BDOT_PREFETCH(j) \
    if constexpr (j < kN) hwy::Prefetch(b + (j) * b_rs + k + next_tile);
    int64_t k = 0;
#define AF(i, e) a[(i) * a_rs + k + (e)]
#define B_AT(j) (b + row_off[j] + k)
    for (; k < full; k += kStep) {
        if ((k & (kLine - 1)) == 0) {
            ANVIL_BDOT_PREFETCH(0) ANVIL_BDOT_PREFETCH(1) ANVIL_BDOT_PREFETCH(2)
            ANVIL_BDOT_PREFETCH(3) ANVIL_BDOT_PREFETCH(4) ANVIL_BDOT_PREFETCH(5)
            ANVIL_BDOT_PREFETCH(6) ANVIL_BDOT_PREFETCH(7)
        }
        ANVIL_BDOT_STEP
    }
#undef AF
#undef B_AT
    if (const size_t rest = size_t(K - full)) {
        // The last K % 8 elements through zero-padded copies: the zero pairs
        // add +0 (the accumulators are never -0), as the packed path's
        // padding does.
        HWY_ALIGN float a_tail[kMaxM][kStep] = {};
        HWY_ALIGN uint16_t b_tail[kMaxN][kStep] = {};
        for (int i = 0; i < kM; ++i) std::memcpy(a_tail[i], a + i * a_rs + full, rest * 4);
        for (int j = 0; j < n; ++j) std::memcpy(b_tail[j], b + j * b_rs + full, rest * 2);
#define AF(i, e) a_tail[i][e]
#define B_AT(j) b_tail[j]
        ANVIL_BDOT_STEP
#undef AF
#undef B_AT
    }
#undef ANVIL_BDOT_PREFETCH
#undef ANVIL_BDOT_STEP
#undef ANVIL_BDOT_BLOCK
#undef ANVIL_BDOT_PAIR
#undef ANVIL_BDOT_MAC
#undef ANVIL_BDOT_ROWVEC

    // Columns < n only.
    float *const acc = reinterpret_cast<float *>(p->acc);
#define ANVIL_BDOT_STORE(i, c)                                                \
    if constexpr (i < kM && 4 * (c) < kN) {                                   \
        float *out = acc + i * p->acc_ld + 4 * (c);                           \
        const int64_t cols = n - 4 * (c);                                     \
        if (cols >= 4) {                                                      \
            hn::StoreU(acc##i##_##c, df, out);                                \
        } else if (cols > 0) {                                                \
            HWY_ALIGN float lanes[4];                                         \
            hn::Store(acc##i##_##c, df, lanes);                               \
            std::memcpy(out, lanes, sizeof(float) * size_t(cols));            \
        }                                                                     \
    }
    ANVIL_BDOT_ALL(ANVIL_BDOT_STORE)
#undef ANVIL_BDOT_STORE
}

#undef ANVIL_BDOT_ROW
#undef ANVIL_BDOT_ALL

#endif  // vector targets

// A kernel computes kN = 4 or 8 columns and stores the call's n of them:
// 8 instances per target instead of 32 (one per m and n), a quarter of
// this file's compile time.  Only the last tile of a call has n < 8.
template <int kM>
constexpr lowp::lp_dot_fn RowKernel(int n) {
    return n <= 4 ? &DotBf16<kM, 4> : &DotBf16<kM, 8>;
}

// Exported (one instance per target).
lowp::lp_dot_fn LpDotBf16Kernel(int m, int n) {
    if (m < 1 || m > kMaxM || n < 1 || n > kMaxN) return nullptr;
    switch (m) {
        case 1: return RowKernel<1>(n);
        case 2: return RowKernel<2>(n);
        case 3: return RowKernel<3>(n);
        default: return RowKernel<4>(n);
    }
}

int LpDotBf16MaxN(int m) { return m < 1 || m > kMaxM ? 0 : kMaxN; }

void LpDotBf16Describe(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(LpDotBf16Kernel);
HWY_EXPORT(LpDotBf16MaxN);
HWY_EXPORT(LpDotBf16Describe);

namespace {

bool dot_bf16_index(int64_t target, size_t *idx) {
    return hwy_confirmed_index(target, HWY_DISPATCH_TABLE(LpDotBf16Describe), idx);
}

}  // namespace

lowp::lp_dot_fn hwy_lp_dot_bf16_kernel(int64_t target, int m, int n) {
    size_t idx = 0;
    if (!dot_bf16_index(target, &idx)) return nullptr;
    return HWY_DISPATCH_TABLE(LpDotBf16Kernel)[idx](m, n);
}

int hwy_lp_dot_bf16_max_n(int64_t target, int m) {
    size_t idx = 0;
    if (!dot_bf16_index(target, &idx)) return 0;
    return HWY_DISPATCH_TABLE(LpDotBf16MaxN)[idx](m);
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
