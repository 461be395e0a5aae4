// Highway low-precision micro-kernels and fp32 <-> bf16 row conversions
// (see hwy_lowp.h, the contract in lowp/lp_ukernel.h and the scalar
// definitions in lowp/lp_ref.h).  Compiled once per Highway target through
// foreach_target.h, like hwy_sgemm.cc; the HWY_ONCE part at the end is built
// once and picks a target for anvil's ISA cap.

// bf16 rounds each product and then each sum, as the scalar kernel does
// (a fused multiply-add would differ where a product overflows or falls
// below the normal range).  GCC contracts a * b + c into an FMA in C++
// wherever the target has one, Highway's Mul and Add included; turn that
// off before any header, as hwy_sgemm.cc does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu/isa.h"
#include "fallback/hwy_lowp.h"
#include "fallback/hwy_named_regs.h"
#include "fallback/hwy_sgemm.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_ukernel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_lowp.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>  // hwy::Prefetch

HWY_BEFORE_NAMESPACE();
// Not anvil::fallback itself: hwy_sgemm.cc's per-target functions live
// there and names must not collide (one definition per target namespace).
namespace anvil::fallback::lp {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using lowp::lp_kind;
using lowp::lp_ukernel_args;

// Tile vectors hold at most 16 lanes (one 16-column vector of the
// contract); wider scalable vectors are capped.
using DF = hn::CappedTag<float, lowp::kLanes>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
using VI = hn::Vec<DI>;

// ---------------------------------------------------------------- blocking
// A tile chunk is kRows rows x kV vectors (kV = 2, or 1 where one vector is
// all 16 columns).  Per k-group it holds kRows*kV accumulators, two derived
// B vectors per column vector, the row's two A broadcasts and a product:
// 4 rows x 2 vectors = 15 registers, for 16-register ISAs; 6 x 2 = 19 with
// 32 registers (two chunks make the 12-row tile).  Rows are a runtime loop
// over chunks, plus one chunk of the remaining height.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64 || HWY_ARCH_RVV || \
    HWY_ARCH_PPC
constexpr int kRows = 6;
#else
constexpr int kRows = 4;
#endif

// u8s8 on x86 SIMD targets: the bytes widened to int16 and multiplied
// pairwise into int32 (ReorderWidenMulAccumulate on int16 is sum +
// vpmaddwd there, leaving its second sum untouched).  u8 * s8 products and
// the sum of two fit int16 x int16 -> int32 exactly.  Elsewhere (EMU128,
// SCALAR, other architectures) the bytes are sign/zero-extended to int32
// lanes and multiplied there: exact as well, just more instructions.
#undef ANVIL_LP_PAIRWISE_I16
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
#define ANVIL_LP_PAIRWISE_I16 1
#else
#define ANVIL_LP_PAIRWISE_I16 0
#endif

struct TileArgs {
    const uint8_t *a;  // row 0, group 0 of this chunk
    int64_t a_rs;
    const uint8_t *b;  // group 0, first column of this chunk
    int64_t b_ld;
    void *acc;         // row 0, first column of this chunk
    int64_t acc_ld;
    int64_t kg;
    bool accumulate;
    // K segments (lp_ukernel.h): segs >= 1 runs of kg groups into the same
    // accumulators, segment s's A at a + s * a_seg_rs, B continuing
    // b_seg_skip groups further on.
    int64_t segs;
    int64_t a_seg_rs;
    int64_t b_seg_skip;
};

// The rows of segment s of a tile's A.
HWY_INLINE void SegmentRows(const TileArgs &t, int64_t s, int rows, const uint8_t **a_rows) {
    for (int r = 0; r < rows; ++r) a_rows[r] = t.a + s * t.a_seg_rs + r * t.a_rs;
}

// k-groups of B prefetched ahead of the one being read.  A chunk reads
// 16 columns (64 bytes) of each 32-column group row (128 bytes), so B
// streams at a 128-byte stride, which the hardware prefetchers follow
// badly: M = 1..4 over prepacked weights from memory read 4 GB/s of B
// (AVX2, Zen 1); 32 groups (4 KiB) ahead, 9-10 GB/s (1x4096x4096: int8
// 8.3 -> 15-19 GOP/s, bf16 4.3 -> 9.4-10.3 GFLOP/s; 8 groups ahead gave
// about half of that gain, 64 the same).  Prefetches never fault and
// never change results.
constexpr int64_t kPrefetchGroups = 32;
constexpr bool kPrefetch = HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR;

HWY_INLINE uint32_t LoadDword(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// Lanes(du) dwords from any byte address.
HWY_INLINE VU LoadDwords(DU du, const uint8_t *HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
    return hn::Set(du, LoadDword(p));
#else
    const hn::Repartition<uint8_t, DU> d8;
    return hn::BitCast(du, hn::LoadU(d8, p));
#endif
}

// ------------------------------------------------------------- registers
// The tiles keep their registers in named variables, not arrays: SVE
// vectors are sizeless types, which cannot be array elements or struct
// members (hwy_named_regs.h).  cR_V is the accumulator of row R, column
// vector V; ANVIL_HWY_ROWS declares all 12 rows and expands each per-row
// step for all of them, and `if constexpr (r < kR)` / `(kV > 1)` drop the
// rows and the second vector a chunk does not have: those registers are
// never loaded or stored, and the optimiser removes them.

// Accumulator (r, v) of a chunk at p with row stride ld: loaded when
// accumulating, else zero.  Zero, without touching memory, outside the
// chunk (r >= kR or v >= kV).
template <int kR, int kV, class D, typename T>
HWY_INLINE hn::Vec<D> InitAcc(D d, const T *HWY_RESTRICT p, int64_t ld, size_t L, bool accumulate,
                              int r, int v) {
    if (r >= kR || v >= kV || !accumulate) return hn::Zero(d);
    return hn::LoadU(d, p + r * ld + int64_t(v * L));
}

// One row of a chunk back to memory: vector 0, then vector 1 if kV == 2.
template <int kV, class D, typename T>
HWY_INLINE void StoreAccRow(D d, hn::Vec<D> c_0, hn::Vec<D> c_1, T *HWY_RESTRICT row, size_t L) {
    hn::StoreU(c_0, d, row);
    if constexpr (kV > 1)
        hn::StoreU(c_1, d, row + int64_t(L));
    else
        (void)c_1;
}

// c_0 += a * b_0, then c_1 += a * b_1 if kV == 2: a product, then a sum.
template <int kV, class V>
HWY_INLINE void MulAdd(V a, V b_0, V b_1, V &c_0, V &c_1) {
    c_0 = hn::Add(c_0, hn::Mul(a, b_0));
    if constexpr (kV > 1)
        c_1 = hn::Add(c_1, hn::Mul(a, b_1));
    else
        (void)b_1;
}

// Declare the 12 x 2 accumulators of a tile and store its rows (in scope:
// vector type V, tag d, t, L, acc = the chunk's row 0, acc_ld).
#define ANVIL_LP_DECLARE_ACC(r)                                          \
    V c##r##_0 = InitAcc<kR, kV>(d, acc, acc_ld, L, t.accumulate, r, 0), \
      c##r##_1 = InitAcc<kR, kV>(d, acc, acc_ld, L, t.accumulate, r, 1);
#define ANVIL_LP_STORE_ACC(r) \
    if constexpr (r < kR) StoreAccRow<kV>(d, c##r##_0, c##r##_1, acc + r * acc_ld, L);

// ------------------------------------------------------------------ bf16
// acc = acc + A1*B1, then acc + A0*B0, per group in increasing order: the
// contract's order, one rounding per product and per sum.  bf16 -> fp32 is
// the 16 bits shifted up: element 1 (high half of the dword) is the dword
// with the low half cleared, element 0 the dword shifted left by 16.
template <int kR, int kV>
HWY_NOINLINE void TileBf16(const TileArgs &t) {
    static_assert(kR >= 1 && kR <= ANVIL_HWY_MAX_ROWS && (kV == 1 || kV == 2), "tile shape");
    using V = VF;
    const DF d;
    const DU du;
    const size_t L = hn::Lanes(d);
    float *HWY_RESTRICT acc = static_cast<float *>(t.acc);
    const int64_t acc_ld = t.acc_ld;

    ANVIL_HWY_ROWS(ANVIL_LP_DECLARE_ACC)

    const uint8_t *a_rows[kR];
    const VU hi_half = hn::Set(du, 0xFFFF0000u);
    const uint8_t *HWY_RESTRICT bg = t.b;
    const int64_t b_ld = t.b_ld, kg = t.kg;
    for (int64_t seg = 0; seg < t.segs; ++seg) {
    SegmentRows(t, seg, kR, a_rows);
    for (int64_t g = 0; g < kg; ++g) {
        if constexpr (kPrefetch) hwy::Prefetch(bg + kPrefetchGroups * b_ld);
        // Elements 1 (b1_v) and 0 (b0_v) of B's column vector v.
        const VU bu_0 = LoadDwords(du, bg);
        const VU bu_1 = kV > 1 ? LoadDwords(du, bg + L * lowp::kGroupBytes) : bu_0;
        const VF b1_0 = hn::BitCast(d, hn::And(bu_0, hi_half));
        const VF b0_0 = hn::BitCast(d, hn::ShiftLeft<16>(bu_0));
        const VF b1_1 = hn::BitCast(d, hn::And(bu_1, hi_half));
        const VF b0_1 = hn::BitCast(d, hn::ShiftLeft<16>(bu_1));
#define ANVIL_LP_ROW(r)                                                          \
    if constexpr (r < kR) {                                                      \
        const VU au = hn::Set(du, LoadDword(a_rows[r] + g * lowp::kGroupBytes)); \
        const VF a1 = hn::BitCast(d, hn::And(au, hi_half));                      \
        const VF a0 = hn::BitCast(d, hn::ShiftLeft<16>(au));                     \
        MulAdd<kV>(a1, b1_0, b1_1, c##r##_0, c##r##_1);                          \
        MulAdd<kV>(a0, b0_0, b0_1, c##r##_0, c##r##_1);                          \
    }
        ANVIL_HWY_ROWS(ANVIL_LP_ROW)
#undef ANVIL_LP_ROW
        bg += b_ld;
    }
    bg += t.b_seg_skip * b_ld;
    }

    ANVIL_HWY_ROWS(ANVIL_LP_STORE_ACC)
}

// ------------------------------------------------------------------ u8s8
// acc += sum_t u8(A_t) * s8(B_t) per group, exact, wrapping in int32 (the
// order of integer additions does not matter).
#if ANVIL_LP_PAIRWISE_I16
// c += the two pairwise int16 products (even bytes, then odd bytes).
// ReorderWidenMulAccumulate on x86: the result is sum0 + vpmaddwd, the
// second sum untouched.
template <class V16>
HWY_INLINE void PairwiseMulAdd(DI di, V16 ae, V16 ao, V16 be, V16 bo, VI &c) {
    VI unused = hn::Zero(di);
    c = hn::ReorderWidenMulAccumulate(di, ae, be, c, unused);
    c = hn::ReorderWidenMulAccumulate(di, ao, bo, c, unused);
}
#else
// Byte k of each dword of bu, sign-extended in its int32 lane.
template <int k>
HWY_INLINE VI SignedByte(DI di, VU bu) {
    if constexpr (k == 3)
        return hn::ShiftRight<24>(hn::BitCast(di, bu));
    else
        return hn::ShiftRight<24>(hn::BitCast(di, hn::ShiftLeft<24 - 8 * k>(bu)));
}

// Byte k of the dword ad, zero-extended and broadcast.
template <int k>
HWY_INLINE VI UnsignedByte(DI di, uint32_t ad) {
    return hn::Set(di, int32_t((ad >> (8 * k)) & 0xFFu));
}
#endif

template <int kR, int kV>
HWY_NOINLINE void TileU8s8(const TileArgs &t) {
    static_assert(kR >= 1 && kR <= ANVIL_HWY_MAX_ROWS && (kV == 1 || kV == 2), "tile shape");
    using V = VI;
    const DI d;
    const DU du;
    const size_t L = hn::Lanes(d);
    int32_t *HWY_RESTRICT acc = static_cast<int32_t *>(t.acc);
    const int64_t acc_ld = t.acc_ld;

    ANVIL_HWY_ROWS(ANVIL_LP_DECLARE_ACC)

    const uint8_t *a_rows[kR];
    const uint8_t *HWY_RESTRICT bg = t.b;
    const int64_t b_ld = t.b_ld, kg = t.kg;

#if ANVIL_LP_PAIRWISE_I16
    // Each dword as two int16 lanes: (B0 | B1 << 8, B2 | B3 << 8).  Even
    // bytes sign-extended: (B0, B2); odd bytes: (B1, B3).  A likewise,
    // zero-extended: (A0, A2) and (A1, A3).  vpmaddwd of the even pair gives
    // A0*B0 + A2*B2 per dword, of the odd pair A1*B1 + A3*B3.
    const hn::Repartition<int16_t, DI> d16;
    const hn::RebindToUnsigned<decltype(d16)> du16;
    using V16 = hn::Vec<decltype(d16)>;
    const auto low_bytes = hn::Set(du16, uint16_t{0x00FF});
    for (int64_t seg = 0; seg < t.segs; ++seg) {
    SegmentRows(t, seg, kR, a_rows);
    for (int64_t g = 0; g < kg; ++g) {
        if constexpr (kPrefetch) hwy::Prefetch(bg + kPrefetchGroups * b_ld);
        // Even (be_v) and odd (bo_v) bytes of B's column vector v.
        const V16 b16_0 = hn::BitCast(d16, LoadDwords(du, bg));
        const V16 b16_1 =
            kV > 1 ? hn::BitCast(d16, LoadDwords(du, bg + L * lowp::kGroupBytes)) : b16_0;
        const V16 be_0 = hn::ShiftRight<8>(hn::ShiftLeft<8>(b16_0));
        const V16 bo_0 = hn::ShiftRight<8>(b16_0);
        const V16 be_1 = hn::ShiftRight<8>(hn::ShiftLeft<8>(b16_1));
        const V16 bo_1 = hn::ShiftRight<8>(b16_1);
        // A's even bytes by a mask, the odd ones by a logical shift: vector
        // shifts issue on one port on some cores (Zen 1: FP2 only, where by
        // instruction counts the shifts, not the vpmaddwd, would bound this
        // loop; the change was not measurable in that VM's noise), AND on
        // three.
#define ANVIL_LP_ROW(r)                                                           \
    if constexpr (r < kR) {                                                       \
        const uint32_t ad = LoadDword(a_rows[r] + g * lowp::kGroupBytes);         \
        const auto au = hn::BitCast(du16, hn::Set(du, ad));                       \
        const V16 ae = hn::BitCast(d16, hn::And(au, low_bytes));                  \
        const V16 ao = hn::BitCast(d16, hn::ShiftRight<8>(au));                   \
        PairwiseMulAdd(d, ae, ao, be_0, bo_0, c##r##_0);                          \
        if constexpr (kV > 1) PairwiseMulAdd(d, ae, ao, be_1, bo_1, c##r##_1);    \
    }
        ANVIL_HWY_ROWS(ANVIL_LP_ROW)
#undef ANVIL_LP_ROW
        bg += b_ld;
    }
    bg += t.b_seg_skip * b_ld;
    }
#else
    for (int64_t seg = 0; seg < t.segs; ++seg) {
    SegmentRows(t, seg, kR, a_rows);
    for (int64_t g = 0; g < kg; ++g) {
        // Byte k of each dword of B's column vector v (btk_v), sign-extended
        // in its own int32 lane.
        const VU bu_0 = LoadDwords(du, bg);
        const VU bu_1 = kV > 1 ? LoadDwords(du, bg + L * lowp::kGroupBytes) : bu_0;
        const VI bt0_0 = SignedByte<0>(d, bu_0), bt1_0 = SignedByte<1>(d, bu_0);
        const VI bt2_0 = SignedByte<2>(d, bu_0), bt3_0 = SignedByte<3>(d, bu_0);
        const VI bt0_1 = SignedByte<0>(d, bu_1), bt1_1 = SignedByte<1>(d, bu_1);
        const VI bt2_1 = SignedByte<2>(d, bu_1), bt3_1 = SignedByte<3>(d, bu_1);
#define ANVIL_LP_ROW(r)                                                       \
    if constexpr (r < kR) {                                                   \
        const uint32_t ad = LoadDword(a_rows[r] + g * lowp::kGroupBytes);     \
        MulAdd<kV>(UnsignedByte<0>(d, ad), bt0_0, bt0_1, c##r##_0, c##r##_1); \
        MulAdd<kV>(UnsignedByte<1>(d, ad), bt1_0, bt1_1, c##r##_0, c##r##_1); \
        MulAdd<kV>(UnsignedByte<2>(d, ad), bt2_0, bt2_1, c##r##_0, c##r##_1); \
        MulAdd<kV>(UnsignedByte<3>(d, ad), bt3_0, bt3_1, c##r##_0, c##r##_1); \
    }
        ANVIL_HWY_ROWS(ANVIL_LP_ROW)
#undef ANVIL_LP_ROW
        bg += b_ld;
    }
    bg += t.b_seg_skip * b_ld;
    }
#endif

    ANVIL_HWY_ROWS(ANVIL_LP_STORE_ACC)
}

#undef ANVIL_LP_DECLARE_ACC
#undef ANVIL_LP_STORE_ACC

// --------------------------------------------------------------- kernels
using TileFn = void (*)(const TileArgs &);

// Vectors of 16 lanes (the contract's column vector) need a one-vector
// chunk for 16-column tiles; narrower ones always come in pairs.
constexpr bool kOneVector = hn::MaxLanes(DF()) > 8;

template <lp_kind K, int kR, int kV>
constexpr TileFn TileFor() {
    if constexpr (K == lp_kind::bf16)
        return &TileBf16<kR, kV>;
    else
        return &TileU8s8<kR, kV>;
}

template <lp_kind K, int kV, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> MakeTiles(std::index_sequence<I...>) {
    return {{TileFor<K, int(I) + 1, kV>()...}};
}

// The tiles of heights 1..kRows and kV vectors (none for kV == 1 where no
// one-vector chunk occurs: fewer instantiations).
template <lp_kind K, int kV>
constexpr std::array<TileFn, kRows> Tiles() {
    if constexpr (kV == 1 && !kOneVector)
        return {};
    else
        return MakeTiles<K, kV>(std::make_index_sequence<kRows>());
}

// Any m >= 1 and n >= 1 (ncols = n rounded up to 16): column chunks of two
// vectors (one where a vector is the last 16 columns), rows in chunks of
// kRows and one of the remaining height.
template <lp_kind K>
void Kernel(const lp_ukernel_args *p) {
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const int64_t segs = p->k_segs > 1 ? p->k_segs : 1;
    if (lowp::kLanes % L != 0) {
        // A scalable vector length that does not divide 16 (SVE at 384
        // bits, say): not worth a tail path.  One scalar call per segment.
        lowp::lp_ukernel_args one = *p;
        one.k_segs = 1;
        for (int64_t s = 0; s < segs; ++s) {
            one.a = p->a + s * p->a_seg_rs;
            one.b = p->b + s * (p->kg + p->b_seg_skip) * p->b_ld;
            one.accumulate = s > 0 ? 1 : p->accumulate;
            lowp::lp_ukernel_scalar(&one, K);
        }
        return;
    }
    static constexpr std::array<TileFn, kRows> kTwo = Tiles<K, 2>();
    static constexpr std::array<TileFn, kRows> kOne = Tiles<K, 1>();

    const int64_t ncols = (p->n + lowp::kLanes - 1) / lowp::kLanes * lowp::kLanes;
    const size_t elem = 4;  // float or int32_t
    TileArgs t;
    t.a_rs = p->a_rs;
    t.b_ld = p->b_ld;
    t.acc_ld = p->acc_ld;
    t.kg = p->kg;
    t.accumulate = p->accumulate != 0;
    t.segs = segs;
    t.a_seg_rs = p->a_seg_rs;
    t.b_seg_skip = p->b_seg_skip;
    for (int64_t j0 = 0; j0 < ncols;) {
        const int vecs = (!kOneVector || ncols - j0 >= 2 * L) ? 2 : 1;
        const std::array<TileFn, kRows> &tiles = vecs == 2 ? kTwo : kOne;
        for (int64_t i0 = 0; i0 < p->m; i0 += kRows) {
            const int64_t h = std::min<int64_t>(kRows, p->m - i0);
            t.a = p->a + i0 * p->a_rs;
            t.b = p->b + j0 * lowp::kGroupBytes;
            t.acc = static_cast<uint8_t *>(p->acc) + (i0 * p->acc_ld + j0) * int64_t(elem);
            tiles[size_t(h - 1)](t);
        }
        j0 += vecs * L;
    }
}

// ------------------------------------------------------------ conversions
// The scalar f32_to_bf16 per lane: NaN -> (u >> 16) | 0x40, else
// (u + 0x7fff + ((u >> 16) & 1)) >> 16; tails element by element.
void F32ToBf16(const float *HWY_RESTRICT src, uint16_t *HWY_RESTRICT dst, int64_t n) {
    const hn::ScalableTag<float> df;
    const hn::RebindToUnsigned<decltype(df)> du;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<uint16_t, decltype(df)> d16;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const auto abs_mask = hn::Set(du, 0x7FFFFFFFu);
    const auto inf_bits = hn::Set(di, 0x7F800000);
    const auto one = hn::Set(du, 1u);
    const auto half = hn::Set(du, 0x7FFFu);
    const auto quiet = hn::Set(du, 0x0040u);
    int64_t i = 0;
    for (; i + L <= n; i += L) {
        const auto u = hn::BitCast(du, hn::LoadU(df, src + i));
        // |u| > Inf as signed int32: both sides are non-negative there.
        const auto is_nan = hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::And(u, abs_mask)), inf_bits));
        const auto high = hn::ShiftRight<16>(u);
        const auto rounded = hn::ShiftRight<16>(hn::Add(u, hn::Add(half, hn::And(high, one))));
        const auto r = hn::IfThenElse(is_nan, hn::Or(high, quiet), rounded);
        hn::StoreU(hn::TruncateTo(d16, r), d16, dst + i);
    }
    for (; i < n; ++i) dst[i] = lowp::f32_to_bf16(src[i]);
}

void Bf16ToF32(const uint16_t *HWY_RESTRICT src, float *HWY_RESTRICT dst, int64_t n) {
    const hn::ScalableTag<float> df;
    const hn::RebindToUnsigned<decltype(df)> du;
    const hn::Rebind<uint16_t, decltype(df)> d16;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    int64_t i = 0;
    for (; i + L <= n; i += L) {
        const auto u = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, src + i)));
        hn::StoreU(hn::BitCast(df, u), df, dst + i);
    }
    for (; i < n; ++i) dst[i] = lowp::bf16_to_f32(src[i]);
}

// ---------------------------------------------------- exported per target
void LpDescribeTarget(int64_t *target) { *target = HWY_TARGET; }

lowp::lp_ukernel_fn LpGetKernel(lp_kind kind, int m, int nv) {
    if (m < 1 || m > lowp::kMR || nv < 1 || nv > 2) return nullptr;
    if (kind == lp_kind::bf16) return &Kernel<lp_kind::bf16>;
    if (kind == lp_kind::u8s8) return &Kernel<lp_kind::u8s8>;
    return nullptr;
}

void LpF32ToBf16(const float *src, uint16_t *dst, int64_t n) { F32ToBf16(src, dst, n); }
void LpBf16ToF32(const uint16_t *src, float *dst, int64_t n) { Bf16ToF32(src, dst, n); }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback::lp
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_lp_dot.h"
#include "fallback/hwy_lp_rowb.h"
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {
namespace lp {

HWY_EXPORT(LpDescribeTarget);
HWY_EXPORT(LpGetKernel);
HWY_EXPORT(LpF32ToBf16);
HWY_EXPORT(LpBf16ToF32);

namespace {

// Fills *out for compiled target t; false if the tables do not hold it.
// LpDescribeTarget reports its own HWY_TARGET, which guards the index
// arithmetic.
bool describe(int64_t t, hwy_lp_target *out) {
    size_t idx = 0;
    if (t == 0 || (t & (t - 1)) != 0 || (t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx))
        return false;
    const auto describe_fn = HWY_DISPATCH_TABLE(LpDescribeTarget)[idx];
    if (!describe_fn) return false;
    int64_t reported = 0;
    describe_fn(&reported);
    if (reported != t) return false;
    hwy_lp_target k;
    k.target = t;
    k.name = hwy::TargetName(t);
    k.get = HWY_DISPATCH_TABLE(LpGetKernel)[idx];
    k.f32_to_bf16 = HWY_DISPATCH_TABLE(LpF32ToBf16)[idx];
    k.bf16_to_f32 = HWY_DISPATCH_TABLE(LpBf16ToF32)[idx];
    if (!k.get || !k.f32_to_bf16 || !k.bf16_to_f32) return false;
    *out = k;
    return true;
}

class hwy_lp_backend_t final : public lowp::lp_backend {
public:
    explicit hwy_lp_backend_t(const hwy_lp_target &k)
        : k_(k),
          name_(std::string("hwy:") + k.name),
          bf16_name_(name_ + ":lp_bf16_(1..12)x(16|32)"),
          u8s8_name_(name_ + ":lp_u8s8_(1..12)x(16|32)") {}
    const char *name() const override { return name_.c_str(); }
    // As the fp32 Highway backend: whatever the target, the avx2 tier's.
    anvil_isa_t tier() const override { return anvil_isa_avx2; }
    // A convolution's kernel rows in one call, the accumulators staying in
    // registers between them (tap-by-tap calls store and reload the tile).
    bool supports_k_segments() const override { return true; }
    bool supports(lowp::lp_kind kind) const override {
        return kind == lowp::lp_kind::bf16 || kind == lowp::lp_kind::u8s8;
    }
    anvil_status_t get(const lowp::lp_ukernel_desc &d, lowp::lp_ukernel_ref *out) const override {
        // No fused epilogue, no widened A (lp_ukernel.h) here.
        if (d.epi_out != lowp::EPI_NONE || d.a_f32 || d.k_tail) return anvil_unsupported;
        if (!supports(d.kind) || d.accumulate > 1) return anvil_invalid_argument;
        const lowp::lp_ukernel_fn fn = k_.get(d.kind, d.m, d.nv);
        if (!fn) return anvil_invalid_argument;
        out->fn = fn;
        out->keep_alive.reset();  // static code
        out->name = d.kind == lowp::lp_kind::bf16 ? bf16_name_.c_str() : u8s8_name_.c_str();
        return anvil_success;
    }
    int dot_max_n(lowp::lp_kind kind, int m) const override {
        return kind == lowp::lp_kind::bf16 ? hwy_lp_dot_bf16_max_n(k_.target, m)
                                           : hwy_lp_dot_max_n(k_.target, m);
    }
    lowp::lp_dot_fn dot_kernel(lowp::lp_kind kind, int m, int n) const override {
        return kind == lowp::lp_kind::bf16 ? hwy_lp_dot_bf16_kernel(k_.target, m, n)
                                           : hwy_lp_dot_kernel(k_.target, m, n);
    }
    int rowb_cols(lowp::lp_kind kind) const override {
        return kind == lowp::lp_kind::bf16 ? kHwyRowbBf16Cols : kHwyRowbU8s8Cols;
    }
    lowp::lp_rowb_fn rowb_kernel(lowp::lp_kind kind, int m) const override {
        return kind == lowp::lp_kind::bf16 ? hwy_lp_rowb_bf16_kernel(k_.target, m)
                                           : hwy_lp_rowb_u8s8_kernel(k_.target, m);
    }
    bool rowb_lean(lowp::lp_kind kind) const override {
        return kind == lowp::lp_kind::bf16 || hwy_lp_rowb_u8s8_pairwise(k_.target);
    }
    const hwy_lp_target &target() const { return k_; }

private:
    hwy_lp_target k_;
    std::string name_, bf16_name_, u8s8_name_;
};

// One backend object per target, made on first use and never destroyed;
// the common path is one acquire load.
const hwy_lp_backend_t *backend_for_target(int64_t t) {
    if (t == 0 || (t & (t - 1)) != 0) return nullptr;
    static std::mutex mu;
    static std::atomic<const hwy_lp_backend_t *> slots[64];
    std::atomic<const hwy_lp_backend_t *> &slot =
        slots[hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(t))];
    if (const hwy_lp_backend_t *b = slot.load(std::memory_order_acquire)) return b;
    std::lock_guard<std::mutex> lock(mu);
    if (const hwy_lp_backend_t *b = slot.load(std::memory_order_relaxed)) return b;
    hwy_lp_target k;
    if (!describe(t, &k)) return nullptr;
    const hwy_lp_backend_t *b = new hwy_lp_backend_t(k);
    slot.store(b, std::memory_order_release);
    return b;
}

const hwy_lp_backend_t *best_for(int64_t supported, anvil_isa_t tier) {
    const int64_t usable = supported & HWY_TARGETS & allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const hwy_lp_backend_t *b = backend_for_target(bits & -bits)) return b;
    return nullptr;
}

// hwy::SupportedTargets() re-runs CPUID on every call (slow under a
// hypervisor); the backend and the conversions use a snapshot taken once,
// compiled_lp_targets() asks afresh (tests narrow it).
int64_t supported_once() {
    static const int64_t s = hwy::SupportedTargets();
    return s;
}

// The target the conversions run now (read without freezing the cap, as
// highway_backend() does); null only if no target is usable at all.
const hwy_lp_target *current_target() {
    const hwy_lp_backend_t *b = best_for(supported_once(), cpu::dispatch_tier(false));
    return b ? &b->target() : nullptr;
}

}  // namespace
}  // namespace lp

std::vector<hwy_lp_target> compiled_lp_targets() {
    std::vector<hwy_lp_target> out;
    for (int64_t bits = hwy::SupportedTargets() & HWY_TARGETS; bits != 0; bits &= bits - 1) {
        hwy_lp_target k;
        if (lp::describe(bits & -bits, &k)) out.push_back(k);
    }
    return out;
}

const lowp::lp_backend *hwy_lp_backend_for_target(int64_t target) {
    return lp::backend_for_target(target);
}

const lowp::lp_backend *highway_lp_backend_for(int64_t supported, anvil_isa_t tier) {
    return lp::best_for(supported, tier);
}

}  // namespace anvil::fallback

namespace anvil::lowp {

const lp_backend *highway_lp_backend() {
    return fallback::lp::best_for(fallback::lp::supported_once(), cpu::dispatch_tier(false));
}

void convert_f32_to_bf16(const float *src, uint16_t *dst, int64_t n) {
    if (n <= 0) return;
    if (cpu::effective_tier(false) >= anvil_isa_avx512_core)
        if (jit_convert_fn f = jit_bf16_convert_kernel(true)) {
            f(src, dst, n);
            return;
        }
    if (const fallback::hwy_lp_target *t = fallback::lp::current_target()) {
        t->f32_to_bf16(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void convert_bf16_to_f32(const uint16_t *src, float *dst, int64_t n) {
    if (n <= 0) return;
    if (cpu::effective_tier(false) >= anvil_isa_avx512_core)
        if (jit_convert_fn f = jit_bf16_convert_kernel(false)) {
            f(src, dst, n);
            return;
        }
    if (const fallback::hwy_lp_target *t = fallback::lp::current_target()) {
        t->bf16_to_f32(src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace anvil::lowp
#endif  // HWY_ONCE
