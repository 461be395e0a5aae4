// Highway int8 dot kernels: the lp_dot.h contract (a small-M tile whose B
// is stored N x K and read in place) on every Highway target, for the
// in-place small-M path below the VNNI JIT tiers (lowp/lp_inplace.cpp).
//
// Each K step takes one vector of int16 lanes' worth of bytes from every A
// row and every B row, widens them to int16 (A zero-extended, B
// sign-extended) and multiplies pairs into int32 lanes
// (ReorderWidenMulAccumulate: vpmaddwd on x86, exact, pair sums of at most
// 2 * 255 * 128 in magnitude), so each accumulator holds partial dot
// products that wrap modulo 2^32 like the contract's sums; the lanes are
// added at the end.  Integer sums: the order does not change the result.
// The last K % lanes bytes go through zero-padded copies, so no byte past
// A(i, K-1) or B(j, K-1) is read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fallback/hwy_lp_dot.h"
#include "lowp/lp_dot.h"

#include <hwy/cache_control.h>  // hwy::Prefetch

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_lp_dot.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;
#if HWY_TARGET == HWY_SCALAR
using D16 = hn::Rebind<int16_t, DI>;  // one lane of everything there
#else
using D16 = hn::Repartition<int16_t, DI>;
#endif
using VI = hn::Vec<DI>;

// x86's ReorderWidenMulAccumulate leaves its second sum untouched (the
// result is sum0 + vpmaddwd); elsewhere it takes half of the products, so
// each accumulator is a pair of vectors there.
#undef ANVIL_LP_DOT_TWO_SUMS
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
#define ANVIL_LP_DOT_TWO_SUMS 0
constexpr int kVecsPerAcc = 1;
#else
#define ANVIL_LP_DOT_TWO_SUMS 1
constexpr int kVecsPerAcc = 2;
#endif

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64 || \
    HWY_ARCH_RVV || HWY_ARCH_PPC
constexpr int kRegs = 32;
#else
constexpr int kRegs = 16;
#endif
constexpr int kMaxM = lowp::kDotMaxM;  // 4
constexpr int kMaxN = 8;

// Columns per call for m rows: m * n accumulators, the m widened A vectors
// and a B vector (plus a temporary) in the registers.
constexpr int MaxN(int m) {
    int n = 1;
    while (n < kMaxN && m * (n + 1) * kVecsPerAcc + m + 2 <= kRegs) ++n;
    return n;
}

// X(i, j) for the 4 x 8 accumulators.
#define ANVIL_DOT_COLS(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#define ANVIL_DOT_ALL(X) ANVIL_DOT_COLS(X, 0) ANVIL_DOT_COLS(X, 1) ANVIL_DOT_COLS(X, 2) ANVIL_DOT_COLS(X, 3)
#define ANVIL_DOT_ROWS(X) X(0) X(1) X(2) X(3)
static_assert(kMaxM == 4 && kMaxN == 8, "the X-macros above list 4 x 8");

// The lanes' wrapping int32 sum.  Highway's SumOfLanes may end in plain
// int additions, undefined on overflow (EMU128's loop; on AVX3 GCC's
// _mm512_reduce_add_epi32, which UBSan reported): halves are folded with
// vector adds (lane-wise, wrapping) down to 128 bits, whose lanes are
// summed in uint32.
template <class D, class V>
HWY_INLINE int32_t SumLanes(D d, V v) {
#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128  // else <= 128 bits
    if constexpr (hn::MaxLanes(D()) > 4) {
        const hn::Half<D> dh;
        return SumLanes(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
    } else
#endif
    {
        HWY_ALIGN int32_t lanes[hn::MaxLanes(D())];
        hn::Store(v, d, lanes);
        uint32_t sum = 0;
        for (size_t t = 0; t < hn::Lanes(d); ++t) sum += static_cast<uint32_t>(lanes[t]);
        return static_cast<int32_t>(sum);
    }
}

template <int kM, int kN>
HWY_NOINLINE void Dot(const lowp::lp_dot_args *HWY_RESTRICT p) {
    const DI di;
    const D16 d16;
    const hn::Rebind<uint8_t, D16> du8;  // half a vector of bytes
    const hn::Rebind<int8_t, D16> ds8;
    const size_t L = hn::Lanes(d16);  // bytes per step
    const int64_t K = p->k;
    const int64_t full = K / int64_t(L) * int64_t(L);

#define ANVIL_DOT_DECL(i, j)                          \
    [[maybe_unused]] VI acc##i##_##j = hn::Zero(di); \
    [[maybe_unused]] VI odd##i##_##j = hn::Zero(di);
    ANVIL_DOT_ALL(ANVIL_DOT_DECL)
#undef ANVIL_DOT_DECL

    // One step over L bytes of every row: A row i at A_AT(i), B row j at B_AT(j).
#define ANVIL_DOT_LOAD_A(i) \
    [[maybe_unused]] const auto a##i = i < kM ? hn::PromoteTo(d16, hn::LoadU(du8, A_AT(i))) : hn::Zero(d16);
#if HWY_TARGET == HWY_SCALAR
    // Highway's SCALAR ReorderWidenMulAccumulate adds in plain int (undefined
    // on overflow, which the contract's wrapping sums reach): the product
    // alone there, then Highway's wrapping Add.
#define ANVIL_DOT_MAC(i, j)                                                                     \
    if constexpr (i < kM && j < kN) {                                                           \
        VI unused = hn::Zero(di);                                                               \
        acc##i##_##j = hn::Add(acc##i##_##j,                                                    \
                               hn::ReorderWidenMulAccumulate(di, a##i, b##j, hn::Zero(di), unused)); \
    }
#elif ANVIL_LP_DOT_TWO_SUMS
#define ANVIL_DOT_MAC(i, j)            \
    if constexpr (i < kM && j < kN)    \
        acc##i##_##j = hn::ReorderWidenMulAccumulate(di, a##i, b##j, acc##i##_##j, odd##i##_##j);
#else
#define ANVIL_DOT_MAC(i, j)                                                                   \
    if constexpr (i < kM && j < kN) {                                                         \
        VI unused = hn::Zero(di);                                                             \
        acc##i##_##j = hn::ReorderWidenMulAccumulate(di, a##i, b##j, acc##i##_##j, unused);   \
    }
#endif
#define ANVIL_DOT_COLUMN(j)                                                              \
    if constexpr (j < kN) {                                                              \
        const auto b##j = hn::PromoteTo(d16, hn::LoadU(ds8, B_AT(j)));                   \
        ANVIL_DOT_MAC(0, j) ANVIL_DOT_MAC(1, j) ANVIL_DOT_MAC(2, j) ANVIL_DOT_MAC(3, j) \
    }
#define ANVIL_DOT_STEP                                                                    \
    {                                                                                     \
        ANVIL_DOT_ROWS(ANVIL_DOT_LOAD_A)                                                  \
        ANVIL_DOT_COLUMN(0) ANVIL_DOT_COLUMN(1) ANVIL_DOT_COLUMN(2) ANVIL_DOT_COLUMN(3)   \
        ANVIL_DOT_COLUMN(4) ANVIL_DOT_COLUMN(5) ANVIL_DOT_COLUMN(6) ANVIL_DOT_COLUMN(7)   \
    }

    const uint8_t *const a = p->a;
    const int8_t *const b = reinterpret_cast<const int8_t *>(p->b);
    const int64_t a_rs = p->a_rs, b_rs = p->b_rs;
    // Columns n .. kN-1 (n < kN in a tail tile) read row n-1 of B again:
    // always valid memory, and their sums are never stored.
    const int64_t n = p->n;
    int64_t row_off[kN];
    for (int64_t j = 0; j < kN; ++j) row_off[j] = std::min(j, n - 1) * b_rs;
    // The whole steps, read in place, a 64-byte line of every row at a
    // time.  Each B row is one short stream (4 KiB for K = 4096) that the
    // hardware prefetchers barely start on before it ends, so the kernel
    // prefetches the rows of the next tile (the caller walks the columns
    // of B in tiles of kN rows) a whole call ahead: the next call finds
    // them in the caches.  (Prefetches never fault; past B's last row
    // they fetch nothing the contract reads.)
    const int64_t line = int64_t(std::max<size_t>(64, L));
    const int64_t lines_end = K / line * line;
    const int64_t next_tile = kN * b_rs;
    int64_t k = 0;
#define A_AT(i) (a + (i) * a_rs + k + s)
#define B_AT(j) (b + row_off[j] + k + s)
#define ANVIL_DOT_PREFETCH(j) \
    if constexpr (j < kN) hwy::Prefetch(b + (j) * b_rs + k + next_tile);
    for (; k < lines_end; k += line) {
        ANVIL_DOT_PREFETCH(0) ANVIL_DOT_PREFETCH(1) ANVIL_DOT_PREFETCH(2) ANVIL_DOT_PREFETCH(3)
        ANVIL_DOT_PREFETCH(4) ANVIL_DOT_PREFETCH(5) ANVIL_DOT_PREFETCH(6) ANVIL_DOT_PREFETCH(7)
        // Not unrolled: GCC would reassociate the integer sums of the
        // steps into product trees and spill them.
        HWY_UNROLL(1)
        for (int64_t s = 0; s < line; s += int64_t(L)) ANVIL_DOT_STEP
    }
    for (const int64_t s = 0; k < full; k += int64_t(L)) ANVIL_DOT_STEP
#undef ANVIL_DOT_PREFETCH
#undef A_AT
#undef B_AT
    if (const size_t rest = size_t(K - full)) {
        // The last K % L bytes through zero-padded copies (zero bytes add
        // nothing).
        constexpr size_t kMaxL = hn::MaxLanes(D16());
        HWY_ALIGN uint8_t a_tail[kMaxM][kMaxL];
        HWY_ALIGN int8_t b_tail[kMaxN][kMaxL];
        for (int i = 0; i < kM; ++i) {
            std::memset(a_tail[i], 0, L);
            std::memcpy(a_tail[i], a + i * a_rs + full, rest);
        }
        for (int j = 0; j < kN; ++j) {
            std::memset(b_tail[j], 0, L);
            if (j >= n) continue;
            std::memcpy(b_tail[j], b + j * b_rs + full, rest);
        }
#define A_AT(i) a_tail[i]
#define B_AT(j) b_tail[j]
        ANVIL_DOT_STEP
#undef A_AT
#undef B_AT
    }
#undef ANVIL_DOT_STEP
#undef ANVIL_DOT_COLUMN
#undef ANVIL_DOT_MAC
#undef ANVIL_DOT_LOAD_A

#define ANVIL_DOT_STORE(i, j)                                                         \
    if constexpr (i < kM && j < kN) {                                                 \
        VI sum = acc##i##_##j;                                                        \
        if constexpr (ANVIL_LP_DOT_TWO_SUMS) sum = hn::Add(sum, odd##i##_##j);        \
        if (j < n) p->acc[i * p->acc_ld + j] = SumLanes(di, sum);                     \
    }
    ANVIL_DOT_ALL(ANVIL_DOT_STORE)
#undef ANVIL_DOT_STORE
}

// A kernel computes kN columns, half or all of MaxN(kM), and stores the
// call's n of them: two instances per m and target instead of up to 8
// (one per n), less than half this file's compile time.  Only the last
// tile of a call has n < MaxN(kM).
template <int kM>
constexpr lowp::lp_dot_fn RowKernel(int n) {
    constexpr int kHalf = (MaxN(kM) + 1) / 2;
    return n <= kHalf ? &Dot<kM, kHalf> : &Dot<kM, MaxN(kM)>;
}

// Exported (one instance per target).
lowp::lp_dot_fn LpDotKernel(int m, int n) {
    if (m < 1 || m > kMaxM || n < 1 || n > MaxN(m)) return nullptr;
    switch (m) {
        case 1: return RowKernel<1>(n);
        case 2: return RowKernel<2>(n);
        case 3: return RowKernel<3>(n);
        default: return RowKernel<4>(n);
    }
}

int LpDotMaxN(int m) { return m < 1 || m > kMaxM ? 0 : MaxN(m); }

void LpDotDescribe(int64_t *target) { *target = HWY_TARGET; }

#undef ANVIL_DOT_COLS
#undef ANVIL_DOT_ALL
#undef ANVIL_DOT_ROWS

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(LpDotKernel);
HWY_EXPORT(LpDotMaxN);
HWY_EXPORT(LpDotDescribe);

namespace {

bool dot_index(int64_t target, size_t *idx) {
    return hwy_confirmed_index(target, HWY_DISPATCH_TABLE(LpDotDescribe), idx);
}

}  // namespace

lowp::lp_dot_fn hwy_lp_dot_kernel(int64_t target, int m, int n) {
    size_t idx = 0;
    if (!dot_index(target, &idx)) return nullptr;
    return HWY_DISPATCH_TABLE(LpDotKernel)[idx](m, n);
}

int hwy_lp_dot_max_n(int64_t target, int m) {
    size_t idx = 0;
    if (!dot_index(target, &idx)) return 0;
    return HWY_DISPATCH_TABLE(LpDotMaxN)[idx](m);
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
