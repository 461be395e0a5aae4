// Highway row-B kernels: lowp/lp_rowb.h's contracts (a small-M tile whose
// B is the caller's row-major K x N matrix, read in place) on every Highway
// target, for the in-place small-M path below the JIT tiers
// (lowp/lp_inplace.cpp): bf16 first, u8 x s8 after it.
//
// bf16.  Row-major B needs no transpose: a vector of B(k, j .. j + L - 1) widened
// to fp32 (each bf16 zero-extended to 32 bits and shifted up by 16) lines
// up with a row of accumulators, and each A element is broadcast.  The
// accumulators of the call's m rows x n columns live in acc itself (a few
// KiB: L1): per pass, two pairs of B rows (2g+1, 2g, 2g+3, 2g+2) go into
// every column, the odd element's product first, so each column's chain is
// the contract's (the packed kernels' order: the same bits).  Columns past
// the last whole vector run the same chain one at a time.
//
// Each pass reads only n columns (a KiB or so) of each of its B rows, one
// page per row, too little for the hardware prefetchers to start on: the
// pass prefetches the rows of the pass after next itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fallback/hwy_lp_rowb.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_rowb.h"

#include <hwy/cache_control.h>  // hwy::Prefetch

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_lp_rowb.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kMaxM = lowp::kRowbMaxM;  // 4
constexpr int kPairsPerPass = 2;

HWY_INLINE float Bf16At(const uint8_t *base, int64_t byte_off) {
    uint16_t v;
    std::memcpy(&v, base + byte_off, 2);
    return lowp::bf16_to_f32(v);
}

// L bf16 values at p (2-byte aligned) as fp32 lanes.
HWY_INLINE VF WidenRow(DF df, const uint8_t *HWY_RESTRICT p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> du16;
    const auto bits = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t *>(p)));
    return hn::BitCast(df, hn::ShiftLeft<16>(bits));
}

// X(i) for the 4 rows of accumulators (named: SVE vectors cannot be array
// elements).
#define ANVIL_ROWB_ROWS(X) X(0) X(1) X(2) X(3)
static_assert(kMaxM == 4, "the X-macro above lists 4 rows");

template <int kM>
HWY_NOINLINE void RowbBf16(const lowp::lp_rowb_args *HWY_RESTRICT p) {
    const DF df;
    const int64_t L = int64_t(hn::Lanes(df));
    const int64_t n = p->n, K = p->k, acc_ld = p->acc_ld;
    const int64_t a_rs = p->a_rs, b_rs = p->b_rs;
    const uint8_t *const a = p->a;
    const uint8_t *const b = p->b;
    float *const acc = reinterpret_cast<float *>(p->acc);
    const int64_t full = n / L * L;
    for (int i = 0; i < kM; ++i) std::fill(acc + i * acc_ld, acc + i * acc_ld + n, 0.0f);

    const int64_t groups = (K + 1) / 2;
    for (int64_t g0 = 0; g0 < groups; g0 += kPairsPerPass) {
        const int np = int(std::min<int64_t>(kPairsPerPass, groups - g0));
        // Per pair q: A's odd and even elements of every row, and B's rows
        // (the odd one absent past K: B(K, j) = 0, never read).
        float a1[kPairsPerPass][kMaxM] = {}, a0[kPairsPerPass][kMaxM] = {};
        const uint8_t *b1[kPairsPerPass] = {}, *b0[kPairsPerPass] = {};
        for (int q = 0; q < np; ++q) {
            const int64_t k = 2 * (g0 + q);
            for (int i = 0; i < kM; ++i) {
                // A(i, K) is read for odd K (the contract: finite; the
                // driver's packed A is zero there).
                a1[q][i] = Bf16At(a, i * a_rs + (k + 1) * 2);
                a0[q][i] = Bf16At(a, i * a_rs + k * 2);
            }
            b1[q] = k + 1 < K ? b + (k + 1) * b_rs : nullptr;
            b0[q] = b + k * b_rs;
        }
        // B's rows of the pass after next (those past K: not read, and a
        // prefetch never faults).
        const uint8_t *ahead = b + 2 * (g0 + 2 * kPairsPerPass) * b_rs;
        int64_t j = 0;
        for (; j < full; j += L) {
            if (((j * 2) & 63) == 0)
                for (int r = 0; r < 2 * kPairsPerPass; ++r) hwy::Prefetch(ahead + r * b_rs + j * 2);
#define ANVIL_ROWB_LOAD(i) \
    [[maybe_unused]] VF c##i = i < kM ? hn::LoadU(df, acc + i * acc_ld + j) : hn::Zero(df);
            ANVIL_ROWB_ROWS(ANVIL_ROWB_LOAD)
#undef ANVIL_ROWB_LOAD
            for (int q = 0; q < np; ++q) {
                const VF v1 = b1[q] ? WidenRow(df, b1[q] + j * 2) : hn::Zero(df);
                const VF v0 = WidenRow(df, b0[q] + j * 2);
#define ANVIL_ROWB_MAC(i)                                                 \
    if constexpr (i < kM) {                                               \
        c##i = hn::Add(c##i, hn::Mul(hn::Set(df, a1[q][i]), v1));         \
        c##i = hn::Add(c##i, hn::Mul(hn::Set(df, a0[q][i]), v0));         \
    }
                ANVIL_ROWB_ROWS(ANVIL_ROWB_MAC)
#undef ANVIL_ROWB_MAC
            }
#define ANVIL_ROWB_STORE(i) \
    if constexpr (i < kM) hn::StoreU(c##i, df, acc + i * acc_ld + j);
            ANVIL_ROWB_ROWS(ANVIL_ROWB_STORE)
#undef ANVIL_ROWB_STORE
        }
        // The last n % L columns: the same chain per element (the library is
        // built with -ffp-contract=off: a product, then a sum).
        for (; j < n; ++j)
            for (int i = 0; i < kM; ++i) {
                float c = acc[i * acc_ld + j];
                for (int q = 0; q < np; ++q) {
                    c = c + a1[q][i] * (b1[q] ? Bf16At(b1[q], j * 2) : 0.0f);
                    c = c + a0[q][i] * Bf16At(b0[q], j * 2);
                }
                acc[i * acc_ld + j] = c;
            }
    }
}

// ------------------------------------------------------------------ u8s8
// A vector of B(k, j ..) sign-extended to int16 times A(i, k) broadcast is
// exact in int16 (|255 x -128| < 2^15); the products widened to int32 go
// into the accumulators (two vectors per row: the lower and upper halves
// of the int16 lanes), which wrap modulo 2^32 like the contract's sums.
// (Highway 1.0's ReorderWidenMulAccumulate sums pairs of lanes in an order
// that differs by target, so it cannot serve per-column sums.)  The m x n
// sums of a strip live in acc; each pass adds kRowsPerPass rows of B.
// SCALAR (one lane) runs the plain loops.
constexpr int kRowsPerPass = 4;

template <int kM>
HWY_NOINLINE void RowbU8s8(const lowp::lp_rowb_args *HWY_RESTRICT p) {
    const int64_t n = p->n, K = p->k, acc_ld = p->acc_ld;
    const int64_t a_rs = p->a_rs, b_rs = p->b_rs;
    const uint8_t *const a = p->a;
    const auto *const b = reinterpret_cast<const int8_t *>(p->b);
    int32_t *const acc = p->acc;
#if HWY_TARGET == HWY_SCALAR
    for (int i = 0; i < kM; ++i)
        for (int64_t j = 0; j < n; ++j) {
            uint32_t s = 0;  // wraps without UB
            for (int64_t k = 0; k < K; ++k) s += uint32_t(int32_t(a[i * a_rs + k]) * int32_t(b[k * b_rs + j]));
            acc[i * acc_ld + j] = int32_t(s);
        }
#else
    const hn::ScalableTag<int16_t> d16;
    const hn::Half<decltype(d16)> dh16;
    const hn::Rebind<int32_t, decltype(dh16)> d32;
    const hn::Rebind<int8_t, decltype(d16)> d8;
    const int64_t L = int64_t(hn::Lanes(d16));  // columns per step
    const int64_t H = int64_t(hn::Lanes(d32));
    const int64_t full = n / L * L;
    for (int i = 0; i < kM; ++i) std::fill(acc + i * acc_ld, acc + i * acc_ld + n, 0);
    for (int64_t k0 = 0; k0 < K; k0 += kRowsPerPass) {
        const int nr = int(std::min<int64_t>(kRowsPerPass, K - k0));
        int16_t av[kRowsPerPass][kMaxM] = {};
        for (int r = 0; r < nr; ++r)
            for (int i = 0; i < kM; ++i) av[r][i] = int16_t(a[i * a_rs + k0 + r]);
        const int8_t *ahead = b + (k0 + 2 * kRowsPerPass) * b_rs;  // prefetch only
        int64_t j = 0;
        for (; j < full; j += L) {
            if ((j & 63) == 0)
                for (int r = 0; r < kRowsPerPass; ++r) hwy::Prefetch(ahead + r * b_rs + j);
#define ANVIL_ROWB_LOAD(i)                                                                     \
    [[maybe_unused]] auto lo##i = i < kM ? hn::LoadU(d32, acc + i * acc_ld + j) : hn::Zero(d32); \
    [[maybe_unused]] auto hi##i = i < kM ? hn::LoadU(d32, acc + i * acc_ld + j + H) : hn::Zero(d32);
            ANVIL_ROWB_ROWS(ANVIL_ROWB_LOAD)
#undef ANVIL_ROWB_LOAD
            for (int r = 0; r < nr; ++r) {
                const auto bv = hn::PromoteTo(d16, hn::LoadU(d8, b + (k0 + r) * b_rs + j));
#define ANVIL_ROWB_MAC(i)                                                        \
    if constexpr (i < kM) {                                                      \
        const auto prod = hn::Mul(hn::Set(d16, av[r][i]), bv);                   \
        lo##i = hn::Add(lo##i, hn::PromoteTo(d32, hn::LowerHalf(dh16, prod)));   \
        hi##i = hn::Add(hi##i, hn::PromoteTo(d32, hn::UpperHalf(dh16, prod)));   \
    }
                ANVIL_ROWB_ROWS(ANVIL_ROWB_MAC)
#undef ANVIL_ROWB_MAC
            }
#define ANVIL_ROWB_STORE(i)                                 \
    if constexpr (i < kM) {                                 \
        hn::StoreU(lo##i, d32, acc + i * acc_ld + j);       \
        hn::StoreU(hi##i, d32, acc + i * acc_ld + j + H);   \
    }
            ANVIL_ROWB_ROWS(ANVIL_ROWB_STORE)
#undef ANVIL_ROWB_STORE
        }
        for (; j < n; ++j)  // the last n % L columns
            for (int i = 0; i < kM; ++i) {
                uint32_t s = uint32_t(acc[i * acc_ld + j]);
                for (int r = 0; r < nr; ++r) s += uint32_t(int32_t(av[r][i]) * int32_t(b[(k0 + r) * b_rs + j]));
                acc[i * acc_ld + j] = int32_t(s);
            }
    }
#endif
}

// x86 (SSE4 .. AVX3): vpmaddwd (Highway's ReorderWidenMulAccumulate
// there: adjacent int16 pairs summed into each int32 lane, the second sum
// untouched) halves that work.  B's rows k and k+1, sign-extended and
// interleaved per 128-bit block, pair B(k, j) with B(k+1, j); A(i, k) and
// A(i, k+1) are broadcast as one such pair.  Each block of 8 columns comes
// out as two vectors' blocks (columns 0-3 in the lower-half vector, 4-7 in
// the upper one), so the sums stay in a private buffer in that order and
// go to acc in column order once per 512-column strip.
#undef ANVIL_ROWB_PAIRWISE
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
#define ANVIL_ROWB_PAIRWISE 1
constexpr int64_t kStrip = kHwyRowbU8s8Cols;

template <int kM>
HWY_NOINLINE void RowbU8s8Pairwise(const lowp::lp_rowb_args *HWY_RESTRICT p) {
    const int64_t n = p->n, K = p->k, acc_ld = p->acc_ld;
    const int64_t a_rs = p->a_rs, b_rs = p->b_rs;
    const uint8_t *const a = p->a;
    const auto *const b = reinterpret_cast<const int8_t *>(p->b);
    int32_t *const acc = p->acc;
    const hn::ScalableTag<int16_t> d16;
    const hn::RepartitionToWide<decltype(d16)> d32;
    const hn::Rebind<int8_t, decltype(d16)> d8;
    const int64_t L = int64_t(hn::Lanes(d16));  // columns per step
    const int64_t H = int64_t(hn::Lanes(d32));
    HWY_ALIGN int32_t sums[kMaxM][kStrip];
    for (int64_t s0 = 0; s0 < n; s0 += kStrip) {
        const int64_t w = std::min(kStrip, n - s0);
        const int64_t full = w / L * L;
        for (int i = 0; i < kM; ++i) {
            std::fill(sums[i], sums[i] + full, 0);
            std::fill(acc + i * acc_ld + s0 + full, acc + i * acc_ld + s0 + w, 0);
        }
        for (int64_t k0 = 0; k0 < K; k0 += kRowsPerPass) {
            const int nr = int(std::min<int64_t>(kRowsPerPass, K - k0));
            // A's pairs (A(i, k), A(i, k+1)) as int32 lanes of two int16.
            int32_t ap[kRowsPerPass / 2][kMaxM] = {};
            for (int q = 0; 2 * q < nr; ++q)
                for (int i = 0; i < kM; ++i) {
                    const uint32_t lo = a[i * a_rs + k0 + 2 * q];
                    const uint32_t hi = 2 * q + 1 < nr ? a[i * a_rs + k0 + 2 * q + 1] : 0;
                    ap[q][i] = int32_t(lo | (hi << 16));
                }
            const int8_t *ahead = b + (k0 + 2 * kRowsPerPass) * b_rs + s0;  // prefetch only
            for (int64_t j = 0; j < full; j += L) {
                if ((j & 63) == 0)
                    for (int r = 0; r < kRowsPerPass; ++r) hwy::Prefetch(ahead + r * b_rs + j);
#define ANVIL_ROWB_LOAD(i)                                                                      \
    [[maybe_unused]] auto lo##i = i < kM ? hn::Load(d32, sums[i] + j) : hn::Zero(d32);         \
    [[maybe_unused]] auto hi##i = i < kM ? hn::Load(d32, sums[i] + j + H) : hn::Zero(d32);
                ANVIL_ROWB_ROWS(ANVIL_ROWB_LOAD)
#undef ANVIL_ROWB_LOAD
                for (int q = 0; 2 * q < nr; ++q) {
                    const int8_t *row = b + (k0 + 2 * q) * b_rs + s0 + j;
                    const auto b0 = hn::PromoteTo(d16, hn::LoadU(d8, row));
                    const auto b1 = 2 * q + 1 < nr ? hn::PromoteTo(d16, hn::LoadU(d8, row + b_rs)) : hn::Zero(d16);
                    const auto pl = hn::InterleaveLower(d16, b0, b1);
                    const auto ph = hn::InterleaveUpper(d16, b0, b1);
#define ANVIL_ROWB_MAC(i)                                                                \
    if constexpr (i < kM) {                                                              \
        const auto av = hn::BitCast(d16, hn::Set(d32, ap[q][i]));                        \
        auto unused = hn::Zero(d32);                                                     \
        lo##i = hn::ReorderWidenMulAccumulate(d32, pl, av, lo##i, unused);               \
        hi##i = hn::ReorderWidenMulAccumulate(d32, ph, av, hi##i, unused);               \
    }
                    ANVIL_ROWB_ROWS(ANVIL_ROWB_MAC)
#undef ANVIL_ROWB_MAC
                }
#define ANVIL_ROWB_STORE(i)                          \
    if constexpr (i < kM) {                          \
        hn::Store(lo##i, d32, sums[i] + j);          \
        hn::Store(hi##i, d32, sums[i] + j + H);      \
    }
                ANVIL_ROWB_ROWS(ANVIL_ROWB_STORE)
#undef ANVIL_ROWB_STORE
            }
            for (int64_t j = full; j < w; ++j)  // the last w % L columns, in acc
                for (int i = 0; i < kM; ++i) {
                    uint32_t sum = uint32_t(acc[i * acc_ld + s0 + j]);
                    for (int r = 0; r < nr; ++r)
                        sum += uint32_t(int32_t(a[i * a_rs + k0 + r]) * int32_t(b[(k0 + r) * b_rs + s0 + j]));
                    acc[i * acc_ld + s0 + j] = int32_t(sum);
                }
        }
        // Column order: lane t of the lower (upper) vector of step j holds
        // column j + 8 (t / 4) + t % 4 (+ 4).
        for (int i = 0; i < kM; ++i)
            for (int64_t j = 0; j < full; j += L)
                for (int64_t t = 0; t < H; ++t) {
                    const int64_t col = s0 + j + 8 * (t / 4) + t % 4;
                    acc[i * acc_ld + col] = sums[i][j + t];
                    acc[i * acc_ld + col + 4] = sums[i][j + H + t];
                }
    }
}
#else
#define ANVIL_ROWB_PAIRWISE 0
#endif

#undef ANVIL_ROWB_ROWS

// Exported (one instance per target); the kernels take any n.
lowp::lp_rowb_fn LpRowbBf16Kernel(int m) {
    switch (m) {
        case 1: return &RowbBf16<1>;
        case 2: return &RowbBf16<2>;
        case 3: return &RowbBf16<3>;
        case 4: return &RowbBf16<4>;
        default: return nullptr;
    }
}

// The target's u8s8 kernel family: pairwise where it exists.
#if ANVIL_ROWB_PAIRWISE
#define ANVIL_ROWB_U8S8 RowbU8s8Pairwise
#else
#define ANVIL_ROWB_U8S8 RowbU8s8
#endif
lowp::lp_rowb_fn LpRowbU8s8Kernel(int m) {
    switch (m) {
        case 1: return &ANVIL_ROWB_U8S8<1>;
        case 2: return &ANVIL_ROWB_U8S8<2>;
        case 3: return &ANVIL_ROWB_U8S8<3>;
        case 4: return &ANVIL_ROWB_U8S8<4>;
        default: return nullptr;
    }
}
#undef ANVIL_ROWB_U8S8

bool LpRowbU8s8Pairwise() { return ANVIL_ROWB_PAIRWISE != 0; }

void LpRowbDescribe(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(LpRowbBf16Kernel);
HWY_EXPORT(LpRowbU8s8Kernel);
HWY_EXPORT(LpRowbU8s8Pairwise);
HWY_EXPORT(LpRowbDescribe);

namespace {

bool rowb_index(int64_t target, size_t *idx) {
    return hwy_confirmed_index(target, HWY_DISPATCH_TABLE(LpRowbDescribe), idx);
}

}  // namespace

lowp::lp_rowb_fn hwy_lp_rowb_bf16_kernel(int64_t target, int m) {
    size_t idx = 0;
    return rowb_index(target, &idx) ? HWY_DISPATCH_TABLE(LpRowbBf16Kernel)[idx](m) : nullptr;
}

lowp::lp_rowb_fn hwy_lp_rowb_u8s8_kernel(int64_t target, int m) {
    size_t idx = 0;
    return rowb_index(target, &idx) ? HWY_DISPATCH_TABLE(LpRowbU8s8Kernel)[idx](m) : nullptr;
}

bool hwy_lp_rowb_u8s8_pairwise(int64_t target) {
    size_t idx = 0;
    return rowb_index(target, &idx) && HWY_DISPATCH_TABLE(LpRowbU8s8Pairwise)[idx]();
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
