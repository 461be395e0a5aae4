// Highway bf16 row-B kernels: lowp/lp_rowb.h's bf16 contract (a small-M
// tile whose B is the caller's row-major K x N bf16 matrix, read in place)
// on every Highway target, for the in-place small-M path below the
// AVX512-BF16 JIT tier (lowp/lp_inplace.cpp).
//
// Row-major B needs no transpose: a vector of B(k, j .. j + L - 1) widened
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
#define HWY_TARGET_INCLUDE "fallback/hwy_lp_rowb_bf16.cc"
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

void LpRowbBf16Describe(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(LpRowbBf16Kernel);
HWY_EXPORT(LpRowbBf16Describe);

lowp::lp_rowb_fn hwy_lp_rowb_bf16_kernel(int64_t target, int m) {
    size_t idx = 0;
    if (target == 0 || (target & (target - 1)) != 0 || (target & HWY_TARGETS) == 0 ||
        !hwy_dispatch_index(target, &idx))
        return nullptr;
    const auto describe = HWY_DISPATCH_TABLE(LpRowbBf16Describe)[idx];
    if (!describe) return nullptr;
    int64_t reported = 0;
    describe(&reported);
    if (reported != target) return nullptr;
    return HWY_DISPATCH_TABLE(LpRowbBf16Kernel)[idx](m);
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
