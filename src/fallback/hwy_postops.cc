// Highway post-op chain steps (lowp/postops.h): pp_scale_bias, pp_apply and
// pp_store, compiled once per Highway target through foreach_target.h like
// hwy_sgemm.cc; the HWY_ONCE part at the end picks the target for anvil's
// ISA cap on every call.  Accuracy of the eltwise ops: docs/postops.md.
//
// Every target gives the same bits, for the transcendental ops too.  They
// are built from IEEE operations only (add, sub, mul, div, compares,
// selects, bit operations, exact float <-> int conversions), each rounded
// once, in the same order on every target: no FMA (the pragma below stops
// GCC from contracting a * b + c; Highway's MulAdd is never called), no
// approximate reciprocal, no hwy/contrib/math (its Exp/Tanh use MulAdd,
// which is fused on AVX2/AVX-512 and not on SSE4/SCALAR, so their bits
// differ between targets).  A JIT implementation can match them bit for
// bit by following the same sequence.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "cpu/isa.h"
#include "fallback/hwy_postops.h"
#include "fallback/hwy_sgemm.h"
#include "lowp/postops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_postops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
// Not anvil::fallback itself: hwy_sgemm.cc's per-target functions live
// there (one definition per target namespace).
namespace anvil::fallback::pp {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using lowp::binary_alg;
using lowp::eltwise_alg;
using lowp::out_type;
using lowp::post_op;

using D = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<D>;
using DU = hn::RebindToUnsigned<D>;
using DU16 = hn::Rebind<uint16_t, D>;
using DU8 = hn::Rebind<uint8_t, D>;
using DI8 = hn::Rebind<int8_t, D>;
using V = hn::Vec<D>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;
constexpr size_t kMaxLanes = hn::MaxLanes(D());

// ------------------------------------------------------------- row loop
// Calls op(v, c, count) for the vectors of x[0..n) (v = x[c .. c+L), count
// = L) and one partial vector at the end (count < L: the rest of v is
// zero) and stores the result back.  The tail goes through a stack buffer:
// neither reads nor writes past x[n-1].  One call site of op, so each op's
// code exists once per target.
template <class Op>
HWY_INLINE void MapRow(float *HWY_RESTRICT x, size_t n, const Op &op) {
    const D d;
    const size_t L = hn::Lanes(d);
    for (size_t c = 0; c < n; c += L) {
        const size_t count = std::min(L, n - c);
        HWY_ALIGN float buf[kMaxLanes];
        V v;
        if (count == L) {
            v = hn::LoadU(d, x + c);
        } else {
            hn::Store(hn::Zero(d), d, buf);
            std::memcpy(buf, x + c, count * sizeof(float));
            v = hn::Load(d, buf);
        }
        v = op(v, c, count);
        if (count == L) {
            hn::StoreU(v, d, x + c);
        } else {
            hn::Store(v, d, buf);
            std::memcpy(x + c, buf, count * sizeof(float));
        }
    }
}

// p[c .. c+count) as floats (zero beyond count).
HWY_INLINE V LoadF32(const float *HWY_RESTRICT p, size_t count) {
    const D d;
    if (count == hn::Lanes(d)) return hn::LoadU(d, p);
    HWY_ALIGN float buf[kMaxLanes] = {};
    std::memcpy(buf, p, count * sizeof(float));
    return hn::Load(d, buf);
}

// bf16 p[c .. c+count) widened to float (exact: the bits become the high
// half of the float).
HWY_INLINE V LoadBf16(const uint16_t *HWY_RESTRICT p, size_t count) {
    const D d;
    const DU du;
    const DU16 du16;
    hn::Vec<DU16> h;
    if (count == hn::Lanes(d)) {
        h = hn::LoadU(du16, p);
    } else {
        HWY_ALIGN uint16_t buf[kMaxLanes] = {};
        std::memcpy(buf, p, count * sizeof(uint16_t));
        h = hn::Load(du16, buf);
    }
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, h)));
}

// -------------------------------------------------------- scale and bias
void ScaleBias(float *x, int64_t n, const float *scales, bool per_n, const float *bias) {
    if (n <= 0) return;
    const D d;
    const size_t un = static_cast<size_t>(n);
    if (scales) {
        if (per_n) {
            MapRow(x, un, [&](V v, size_t c, size_t count) HWY_ATTR {
                return hn::Mul(v, LoadF32(scales + c, count));
            });
        } else {
            const V s = hn::Set(d, scales[0]);
            MapRow(x, un, [&](V v, size_t, size_t) HWY_ATTR { return hn::Mul(v, s); });
        }
    }
    if (bias) {
        MapRow(x, un, [&](V v, size_t c, size_t count) HWY_ATTR {
            return hn::Add(v, LoadF32(bias + c, count));
        });
    }
}

// ------------------------------------------------------------------ exp
// exp(x) = m * s2 for every float x (NaN in gives an unspecified finite
// value: callers put the NaN back), with m = p * 2^n1 and
// s2 = 2^n2 a power of two (both normal), so that a caller can fold further factors into
// m and apply s2 last: results that are normal come out with a normal-range
// relative error even where exp(x) itself is subnormal (sigmoid(-89),
// silu(-89)...), and subnormal results are rounded once, at the end.
//
// Cody & Waite's argument reduction (W. J. Cody, W. Waite, "Software Manual
// for the Elementary Functions", 1980): x = n ln2 + r, |r| <= ln2/2 (a
// little more when x*log2(e) rounds across a half), ln2 split in a 9-bit C1
// (n*C1 and x - n*C1 are exact) and C2 = ln2 - C1; then exp(r) by its
// Taylor polynomial of degree 7 (truncation error <= (ln2/2)^8/8! *
// e^(ln2/2) < 7.5e-9 relative, 0.06 ulp), evaluated by Horner (mul, add:
// each rounded); finally 2^n as two exact power-of-two factors, both
// normal: p * 2^n1 is exact.  Measured: within 1 ulp of exp
// (docs/postops.md).
// The two parts come back through a reference, not a struct: SVE vectors
// cannot be struct members.
HWY_INLINE V ExpSplit(V x, V &s2_out) {
    const D d;
    const DI di;
    x = hn::IfThenZeroElse(hn::IsNaN(x), x);  // keeps the int conversion defined
    // exp(x) overflows above 88.73.  Below, the clamp is far under the
    // subnormals (exp(-172) = 1.6e-75) so that m * s2 times the callers'
    // factors (at most 200 in magnitude) still rounds to 0, and keeps
    // n in [-248, 128].
    x = hn::Min(hn::Max(x, hn::Set(d, -172.0f)), hn::Set(d, 89.0f));
    const V t = hn::Mul(x, hn::Set(d, 1.44269504088896341f));  // x log2(e)
    // Round to nearest (ties to even) by adding and subtracting 1.5 * 2^23
    // (|t| <= 249): two IEEE additions, exact by construction.
    const V magic = hn::Set(d, 12582912.0f);
    const V nf = hn::Sub(hn::Add(t, magic), magic);
    const V r = hn::Sub(hn::Sub(x, hn::Mul(nf, hn::Set(d, 0.693359375f))),
                        hn::Mul(nf, hn::Set(d, -2.12194440e-4f)));
    V p = hn::Set(d, 1.0f / 5040.0f);
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f / 720.0f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f / 120.0f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f / 24.0f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f / 6.0f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 0.5f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f));
    p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f));
    // 2^n = 2^n1 * 2^n2, n1 = floor(n / 2), both in [-124, 64]: m = p * 2^n1
    // is exact and normal (p >= 0.7).
    const VI n = hn::ConvertTo(di, nf);  // exact: nf is an integer
    const VI n1 = hn::ShiftRight<1>(n);
    const VI n2 = hn::Sub(n, n1);
    const VI bias = hn::Set(di, 127);
    const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
    s2_out = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n2, bias)));
    return hn::Mul(p, s1);
}

HWY_INLINE V Exp(V x) {
    V s2 = hn::Zero(D());  // set by ExpSplit
    const V m = ExpSplit(x, s2);
    return hn::Mul(m, s2);
}

// The NaN lanes of x, unchanged (payload and sign kept), into y.
HWY_INLINE V KeepNaN(V x, V y) { return hn::IfThenElse(hn::IsNaN(x), x, y); }

// Below this, x * sigmoid-like factors are computed with the factor's x
// replaced by the clamp: the factor underflows to 0 long before, and
// -inf * 0 would be NaN (the limits are -0).
constexpr float kNegClamp = -200.0f;

// x * sigmoid(t) for a t with the sign of x (silu: t = x; gelu_tanh:
// t = 2u), with e = exp(-|t|) = m * s2: for x < 0, ((x m) / (1 + e)) s2
// (= x e / (1 + e): no cancellation, right down to the subnormals); else
// x / (1 + e).
HWY_INLINE V MulSigmoid(V x, V t, float exp_floor = -172.0f) {
    const D d;
    const V neg_abs_t = hn::Neg(hn::Abs(t));
    V ep_s2 = hn::Zero(D());  // set by ExpSplit
    const V ep_m = ExpSplit(hn::Max(neg_abs_t, hn::Set(d, exp_floor)), ep_s2);
    const V den = hn::Add(hn::Set(d, 1.0f), hn::Mul(ep_m, ep_s2));
    const V xc = hn::Max(x, hn::Set(d, kNegClamp));
    // One division for both branches (half the divider work); each lane
    // still computes exactly its branch's operations, so the bits are
    // those of the two-branch form.
    const auto is_neg = hn::Lt(x, hn::Zero(d));
    const V q = hn::Div(hn::IfThenElse(is_neg, hn::Mul(xc, ep_m), x), den);
    // Below the floor the true x * sigmoid(t) (x < 0) is under
    // 200 * exp(floor): the result is -0, the limit.
    const V neg = hn::IfThenElse(hn::Lt(neg_abs_t, hn::Set(d, exp_floor)), hn::Set(d, -0.0f),
                                 hn::Mul(q, ep_s2));
    return KeepNaN(x, hn::IfThenElse(is_neg, neg, q));
}

// sigmoid(x) = 1 / (1 + exp(-x)): e = exp(-|x|) = m * s2, then 1 / (1 + e)
// for x >= 0 and (m / (1 + e)) s2 = e / (1 + e) for x < 0 (never
// overflows; exact limits 0 and 1).
HWY_INLINE V Sigmoid(V x) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    V ep_s2 = hn::Zero(D());  // set by ExpSplit
    const V ep_m = ExpSplit(hn::Neg(hn::Abs(x)), ep_s2);
    const V den = hn::Add(one, hn::Mul(ep_m, ep_s2));
    const auto is_neg = hn::Lt(x, hn::Zero(d));
    const V q = hn::Div(hn::IfThenElse(is_neg, ep_m, one), den);  // one division
    return KeepNaN(x, hn::IfThenElse(is_neg, hn::Mul(q, ep_s2), q));
}

// tanh(x).  |x| < 0.625: the [5/6] Pade approximant from Lambert's
// continued fraction tanh x = x / (1 + x^2 / (3 + x^2 / (5 + ...))),
// truncated after 11: x (10395 + 1260 x^2 + 21 x^4) / (10395 + 4725 x^2
// + 210 x^4 + x^6) (integer coefficients, exact in float; relative error
// of the approximant itself < 2.1e-12 on that interval), written as
// x * (P / Q) so that tiny and subnormal x come out exactly.  Otherwise
// 1 - 2 / (exp(2|x|) + 1) with the sign of x (no cancellation there:
// tanh(0.625) = 0.55; exactly +-1 from |x| ~ 9.01, +-inf included).
HWY_INLINE V Tanh(V x) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    const V a = hn::Abs(x);
    const V y = hn::Mul(x, x);
    V pn = hn::Add(hn::Mul(y, hn::Set(d, 21.0f)), hn::Set(d, 1260.0f));
    pn = hn::Add(hn::Mul(pn, y), hn::Set(d, 10395.0f));
    V pd = hn::Add(y, hn::Set(d, 210.0f));
    pd = hn::Add(hn::Mul(pd, y), hn::Set(d, 4725.0f));
    pd = hn::Add(hn::Mul(pd, y), hn::Set(d, 10395.0f));
    const V e = Exp(hn::Add(a, a));
    // One division: P / Q for the small lanes, 2 / (e + 1) for the others.
    const auto is_small = hn::Lt(a, hn::Set(d, 0.625f));
    const V q = hn::Div(hn::IfThenElse(is_small, pn, hn::Set(d, 2.0f)),
                        hn::IfThenElse(is_small, pd, hn::Add(e, one)));
    const V small = hn::Mul(x, q);
    const V big = hn::Sub(one, q);
    const V r = hn::IfThenElse(is_small, small, hn::CopySign(big, x));
    return KeepNaN(x, r);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as the identical x * sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)),
// which has no cancellation for x < 0.  2u = x (c1 + c2 x^2).
HWY_INLINE V GeluTanh(V x) {
    const D d;
    const float c1 = 1.5957691216057308f;              // 2 sqrt(2/pi)
    const float c2 = 1.5957691216057308f * 0.044715f;  // 2 sqrt(2/pi) 0.044715
    const V t = hn::Mul(x, hn::Add(hn::Mul(hn::Set(d, c2), hn::Mul(x, x)), hn::Set(d, c1)));
    // exp(-|t|) is floored at exp(-80) (normal, 1.8e-35): below it the
    // products underflow into subnormals, which cost microcode assists of
    // ~100 cycles per vector on x86 (gelu of |x| > ~7 ran at 6 cycles per
    // element instead of 2.5).  The results there change by less than
    // 200 * 1.8e-35, far inside gelu's documented 2^-26 absolute bound.
    return MulSigmoid(x, t, -80.0f);
}

// gelu_erf(x) = 0.5 x (1 + erf(x / sqrt(2))) = x - 0.5 x erfc(z) for x >= 0
// and 0.5 x erfc(|z|) for x < 0 (z = x / sqrt(2); no cancellation).
// erfc from W. H. Press et al., "Numerical Recipes in C", 2nd ed. (1992),
// section 6.2, function erfcc (Chebyshev fit): for z >= 0,
//   erfc(z) = t exp(-z^2 - 1.26551223 + t (1.00002368 + t (0.37409196 +
//             t (0.09678418 + t (-0.18628806 + t (0.27886807 + t (-1.13520398
//             + t (1.48851587 + t (-0.82215223 + t 0.17087277)))))))))
//   with t = 1 / (1 + z / 2), "fractional error everywhere less than
//   1.2e-7" (we measured 1.05e-7 in double over z in [0, 20]).
// Here z / 2 = |x| * (0.5 / sqrt(2)) and z^2 = (x * x) * 0.5; for x < 0 the
// result is ((0.5 x t) m) s2 with exp(...) = m * s2 (see ExpSplit).
HWY_INLINE V GeluErf(V x) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    const V half = hn::Set(d, 0.5f);
    const V a = hn::Abs(x);
    const V t = hn::Div(one, hn::Add(one, hn::Mul(a, hn::Set(d, 0.35355339059327373f))));
    V p = hn::Set(d, 0.17087277f);
    p = hn::Add(hn::Mul(p, t), hn::Set(d, -0.82215223f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, 1.48851587f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, -1.13520398f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, 0.27886807f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, -0.18628806f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, 0.09678418f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, 0.37409196f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, 1.00002368f));
    p = hn::Add(hn::Mul(p, t), hn::Set(d, -1.26551223f));
    const V z2 = hn::Mul(hn::Mul(x, x), half);
    // Floored at -80 as in GeluTanh (no subnormal products; the results
    // there are below 1e-33, inside the documented 2^-26 absolute bound).
    const V arg = hn::Sub(p, z2);
    V ep_s2 = hn::Zero(D());  // set by ExpSplit
    const auto below = hn::Lt(arg, hn::Set(d, -80.0f));
    // Below the floor the products are discarded (x < 0) or rounded away (1
    // - 0.5 erfc = 1 once erfc < 2^-25), but t m s2 is subnormal for |x| >
    // ~3000 and would cost a microcode assist: m = 0 there gives the same
    // results without it.
    const V ep_m = hn::IfThenZeroElse(below, ExpSplit(hn::Max(arg, hn::Set(d, -80.0f)), ep_s2));
    const V hx = hn::Mul(half, hn::Max(x, hn::Set(d, kNegClamp)));  // 0.5 x (clamped)
    // Below the floor (x < -12.6) the result is -0, its limit.
    const V neg = hn::IfThenElse(below, hn::Set(d, -0.0f),
                                 hn::Mul(hn::Mul(hn::Mul(hx, t), ep_m), ep_s2));
    const V erfc = hn::Mul(t, hn::Mul(ep_m, ep_s2));
    const V pos = hn::Mul(x, hn::Sub(one, hn::Mul(half, erfc)));
    return KeepNaN(x, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), neg, pos));
}

// ----------------------------------------------------------- apply ops
// The compare-and-select ops, one definition each (the row loops below and
// Block's one-pass path both use them).
// x <= 0 (-0 included) gives +0; NaN fails the compare and stays.
HWY_INLINE V Relu(V v) { return hn::IfThenZeroElse(hn::Le(v, hn::Zero(D())), v); }
HWY_INLINE V LeakyRelu(V v, V alpha) {
    return hn::IfThenElse(hn::Gt(v, hn::Zero(D())), v, hn::Mul(alpha, v));
}
// min(max(x, lo), hi) as std::min(std::max(x, lo), hi): by compares, so
// NaN stays NaN and -0 / +0 are kept as given.
HWY_INLINE V Clip(V v, V lo, V hi) {
    v = hn::IfThenElse(hn::Lt(v, lo), lo, v);
    return hn::IfThenElse(hn::Lt(hi, v), hi, v);
}

HWY_INLINE void Eltwise(float *x, size_t n, const post_op &o) {
    const D d;
    switch (o.eltwise) {
        case eltwise_alg::relu:
            MapRow(x, n, [&](V v, size_t, size_t) HWY_ATTR { return Relu(v); });
            break;
        case eltwise_alg::leaky_relu: {
            const V alpha = hn::Set(d, o.alpha);
            MapRow(x, n, [&](V v, size_t, size_t) HWY_ATTR { return LeakyRelu(v, alpha); });
            break;
        }
        case eltwise_alg::clip: {
            const V lo = hn::Set(d, o.alpha), hi = hn::Set(d, o.beta);
            MapRow(x, n, [&](V v, size_t, size_t) HWY_ATTR { return Clip(v, lo, hi); });
            break;
        }
        case eltwise_alg::gelu_tanh:
            MapRow(x, n, [](V v, size_t, size_t) HWY_ATTR { return GeluTanh(v); });
            break;
        case eltwise_alg::gelu_erf:
            MapRow(x, n, [](V v, size_t, size_t) HWY_ATTR { return GeluErf(v); });
            break;
        case eltwise_alg::silu:
            MapRow(x, n, [](V v, size_t, size_t) HWY_ATTR { return MulSigmoid(v, v); });
            break;
        case eltwise_alg::sigmoid:
            MapRow(x, n, [](V v, size_t, size_t) HWY_ATTR { return Sigmoid(v); });
            break;
        case eltwise_alg::tanh:
            MapRow(x, n, [](V v, size_t, size_t) HWY_ATTR { return Tanh(v); });
            break;
    }
}

template <bool kBf16>
HWY_INLINE V LoadOperand(const void *src, size_t c, size_t count) {
    if (kBf16) return LoadBf16(static_cast<const uint16_t *>(src) + c, count);
    return LoadF32(static_cast<const float *>(src) + c, count);
}

// Bytes per element of the output type.
constexpr size_t ElemBytes(out_type t) {
    return t == out_type::f32 || t == out_type::s32 ? 4 : t == out_type::bf16 ? 2 : 1;
}

// count (<= the vector's lanes) elements at p: a full vector read in
// place, a partial one through a zeroed buffer (nothing past p[count-1]
// is read).
template <class DT>
HWY_INLINE hn::Vec<DT> LoadLanes(DT dt, const hn::TFromD<DT> *HWY_RESTRICT p, size_t count) {
    if (count == hn::Lanes(D())) return hn::LoadU(dt, p);
    HWY_ALIGN hn::TFromD<DT> buf[kMaxLanes] = {};
    std::memcpy(buf, p, count * sizeof(hn::TFromD<DT>));
    return hn::Load(dt, buf);
}

// Elements c .. c+count of an output row stored as `type` (the sum op's
// operand: C's old values), as float: f32, bf16, u8 and s8 exactly, s32
// rounded to nearest even (ConvertTo).
HWY_INLINE V LoadOutput(out_type type, const void *row, size_t c, size_t count) {
    const D d;
    switch (type) {
        case out_type::f32: return LoadF32(static_cast<const float *>(row) + c, count);
        case out_type::bf16: return LoadBf16(static_cast<const uint16_t *>(row) + c, count);
        case out_type::s32:
            return hn::ConvertTo(d, LoadLanes(DI(), static_cast<const int32_t *>(row) + c, count));
        case out_type::u8: {
            const auto u = LoadLanes(DU8(), static_cast<const uint8_t *>(row) + c, count);
            return hn::ConvertTo(d, hn::BitCast(DI(), hn::PromoteTo(DU(), u)));
        }
        default:
            return hn::ConvertTo(
                d, hn::PromoteTo(DI(), LoadLanes(DI8(), static_cast<const int8_t *>(row) + c, count)));
    }
}

// v + alpha * (C_old - beta): the sum op's steps (lowp/postops.h) on a vector.
HWY_INLINE V SumStep(V v, V c_old, const post_op &o) {
    const D d;
    if (o.beta != 0.0f) c_old = hn::Sub(c_old, hn::Set(d, o.beta));
    if (o.alpha != 1.0f) c_old = hn::Mul(c_old, hn::Set(d, o.alpha));
    return hn::Add(v, c_old);
}

template <bool kBf16>
HWY_INLINE void Binary(float *x, size_t n, const post_op &o, const void *src) {
    if (o.binary == binary_alg::add) {
        MapRow(x, n, [&](V v, size_t c, size_t count) HWY_ATTR {
            return hn::Add(v, LoadOperand<kBf16>(src, c, count));
        });
    } else {
        MapRow(x, n, [&](V v, size_t c, size_t count) HWY_ATTR {
            return hn::Mul(v, LoadOperand<kBf16>(src, c, count));
        });
    }
}

void Apply(float *x, int64_t n, int64_t i, int64_t j0, const post_op *ops, int nops,
           const void *const *srcs) {
    if (n <= 0) return;
    const size_t un = static_cast<size_t>(n);
    for (int t = 0; t < nops; ++t) {
        const post_op &o = ops[t];
        if (!o.is_binary) {
            Eltwise(x, un, o);
            continue;
        }
        // Element (i, j0 + c) of the operand.
        const int64_t at = o.per_n ? j0 : i * o.ld + j0;
        if (o.is_sum()) {
            const size_t eb = ElemBytes(o.sum_type);
            const auto *row = static_cast<const uint8_t *>(srcs[t]) + at * int64_t(eb);
            MapRow(x, un, [&](V v, size_t c, size_t count) HWY_ATTR {
                return SumStep(v, LoadOutput(o.sum_type, row, c, count), o);
            });
        } else if (o.src_bf16)
            Binary<true>(x, un, o, static_cast<const uint16_t *>(srcs[t]) + at);
        else
            Binary<false>(x, un, o, static_cast<const float *>(srcs[t]) + at);
    }
}

// ----------------------------------------------------------------- store
// lowp::f32_to_bf16 on vectors: round to nearest even by adding 0x7fff +
// lsb to the bits (u32 arithmetic, carrying into the exponent as IEEE
// rounding does; subnormals are rounded, not flushed), NaN -> the high half
// with the quiet bit set.
HWY_INLINE hn::Vec<DU16> ToBf16(V v) {
    const DU du;
    const DI di;
    const DU16 du16;
    const VU u = hn::BitCast(du, v);
    const VU abs = hn::And(u, hn::Set(du, 0x7fffffffu));
    // Both sides are non-negative as int32: a signed compare is exact.
    const auto is_nan = hn::Gt(hn::BitCast(di, abs), hn::Set(di, 0x7f800000));
    const VU lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const VU rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7fffu)), lsb));
    const VU quiet = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40u));
    const VU r = hn::IfThenElse(hn::RebindMask(du, is_nan), quiet, rounded);
    // r <= 0xffff: the saturating demotion keeps it.
    return hn::DemoteTo(du16, hn::BitCast(di, r));
}

// Round to nearest even, saturate to [lo, hi] (integers, exact in float),
// NaN -> 0.  Clamping before rounding gives the same as rounding first
// (rounding is monotonic and keeps integers).
HWY_INLINE VI ToIntSat(V v, float lo, float hi) {
    const D d;
    const DI di;
    v = hn::IfThenZeroElse(hn::IsNaN(v), v);
    v = hn::Min(hn::Max(v, hn::Set(d, lo)), hn::Set(d, hi));
    return hn::ConvertTo(di, hn::Round(v));  // integral: exact
}

// ToIntSat for the 8-bit ranges, without the float -> int32 conversion's
// out-of-range fix-ups (|v| <= 255 after the clamp): v + 1.5 * 2^23 lies in
// [2^23, 2^24), where the float spacing is 1, so the addition rounds v to
// an integer, and that integer is the sum's bits minus the constant's.
// The addition rounds in the thread's floating-point rounding mode: nearest
// even, as Round and the reference, under the default environment (a caller
// that changes MXCSR / FPCR changes these results, unlike Round's).
HWY_INLINE VI ToByteSat(V v, float lo, float hi) {
    const D d;
    const DI di;
    v = hn::IfThenZeroElse(hn::IsNaN(v), v);
    v = hn::Min(hn::Max(v, hn::Set(d, lo)), hn::Set(d, hi));
    const V magic = hn::Set(d, 12582912.0f);
    return hn::Sub(hn::BitCast(di, hn::Add(v, magic)), hn::BitCast(di, magic));
}

// The first count lanes of v (tag dt, count <= the float vector's lanes)
// at p: a full vector directly, a shorter one through a stack buffer (no
// write past p + count).
template <class DT>
HWY_INLINE void StoreLanes(DT dt, hn::Vec<DT> v, size_t count, size_t L, void *HWY_RESTRICT p) {
    using T = hn::TFromD<DT>;
    if (count == L) {
        hn::StoreU(v, dt, static_cast<T *>(p));
    } else {
        HWY_ALIGN T buf[kMaxLanes];
        hn::Store(v, dt, buf);
        std::memcpy(p, buf, count * sizeof(T));
    }
}

// One vector of converted results into dst (element 0 of this vector;
// count valid lanes): v already holds the output zero point.
template <out_type kType>
HWY_INLINE void StoreVec(V v, size_t count, void *HWY_RESTRICT dst) {
    const D d;
    const DI di;
    const size_t L = hn::Lanes(d);
    if constexpr (kType == out_type::f32) {
        StoreLanes(d, v, count, L, dst);
    } else if constexpr (kType == out_type::bf16) {
        StoreLanes(DU16(), ToBf16(v), count, L, dst);
    } else if constexpr (kType == out_type::s32) {
        // Floats >= 2^31 saturate to INT32_MAX; the largest float below
        // is 2^31 - 128.
        VI r = ToIntSat(v, -2147483648.0f, 2147483520.0f);
        const auto big = hn::RebindMask(di, hn::Ge(v, hn::Set(d, 2147483648.0f)));
        StoreLanes(di, hn::IfThenElse(big, hn::Set(di, INT32_MAX), r), count, L, dst);
    } else if constexpr (kType == out_type::u8) {
        StoreLanes(DU8(), hn::DemoteTo(DU8(), ToByteSat(v, 0.0f, 255.0f)), count, L, dst);
    } else {
        StoreLanes(DI8(), hn::DemoteTo(DI8(), ToByteSat(v, -128.0f, 127.0f)), count, L, dst);
    }
}

template <out_type kType>
void StoreAs(const float *x, size_t n, float zero_point, void *dst) {
    const D d;
    const size_t L = hn::Lanes(d);
    const bool add_zp = zero_point != 0.0f;  // -0.0 too: x + -0.0 == x
    const V zp = hn::Set(d, zero_point);
    for (size_t c = 0; c < n; c += L) {
        const size_t count = std::min(L, n - c);
        V v = LoadF32(x + c, count);
        if (add_zp) v = hn::Add(v, zp);
        StoreVec<kType>(v, count, static_cast<uint8_t *>(dst) + c * ElemBytes(kType));
    }
}

void Store(const float *x, int64_t n, float zero_point, out_type type, void *dst) {
    if (n <= 0) return;
    const size_t un = static_cast<size_t>(n);
    switch (type) {
        case out_type::f32: StoreAs<out_type::f32>(x, un, zero_point, dst); break;
        case out_type::bf16: StoreAs<out_type::bf16>(x, un, zero_point, dst); break;
        case out_type::s32: StoreAs<out_type::s32>(x, un, zero_point, dst); break;
        case out_type::u8: StoreAs<out_type::u8>(x, un, zero_point, dst); break;
        case out_type::s8: StoreAs<out_type::s8>(x, un, zero_point, dst); break;
    }
}

// ------------------------------------------------------- whole block
// The accumulators of row r, columns [c, c + count), as floats (int32
// accumulators compensated modulo 2^32 first, then converted exactly as
// float(int32) does: round to nearest even).
// What LoadAcc reads of a block, copied out of it once per block: held in
// locals, the compiler no longer reloads them after every store through
// the destination (which might alias the block for all it knows).
struct AccView {
    const void *acc;
    int64_t acc_ld;
    bool acc_int;
    const int32_t *colsum;
    uint32_t col_factor;
    explicit AccView(const lowp::pp_block &b)
        : acc(b.acc), acc_ld(b.acc_ld), acc_int(b.acc_int), colsum(b.colsum),
          col_factor(uint32_t(b.col_factor)) {}
};

HWY_INLINE V LoadAcc(const AccView &b, int64_t r, size_t c, size_t count, VU row_comp) {
    const D d;
    const DI di;
    if (!b.acc_int) return LoadF32(static_cast<const float *>(b.acc) + r * b.acc_ld + c, count);
    const int32_t *a = static_cast<const int32_t *>(b.acc) + r * b.acc_ld + c;
    VI v;
    if (count == hn::Lanes(d)) {
        v = hn::LoadU(di, a);
    } else {
        HWY_ALIGN int32_t buf[kMaxLanes] = {};
        std::memcpy(buf, a, count * sizeof(int32_t));
        v = hn::Load(di, buf);
    }
    const DU du;
    VU u = hn::Add(hn::BitCast(du, v), row_comp);
    if (b.colsum) {
        VU cs;
        if (count == hn::Lanes(d)) {
            cs = hn::BitCast(du, hn::LoadU(di, b.colsum + c));
        } else {
            HWY_ALIGN int32_t buf[kMaxLanes] = {};
            std::memcpy(buf, b.colsum + c, count * sizeof(int32_t));
            cs = hn::BitCast(du, hn::Load(di, buf));
        }
        u = hn::Sub(u, hn::Mul(cs, hn::Set(du, b.col_factor)));
    }
    return hn::ConvertTo(d, hn::BitCast(di, u));
}

// Whether every op of the chain is a compare-and-select eltwise op or a
// binary add / mul: then Block runs the whole chain on each vector in
// registers.  A tile of a 1x1 convolution over 16-32 channels is a few
// hundred cycles of arithmetic, and the row-segment path's calls per row
// (ScaleBias, Apply, Store) cost several times that (bias + relu on
// MobileNet-v2 block1_project, fp32: 0.29x oneDNN).
bool OnePassChain(const lowp::pp_block &b) {
    for (int t = 0; t < b.nops; ++t) {
        const post_op &o = b.ops[t];
        if (o.is_binary) continue;
        if (o.eltwise != eltwise_alg::relu && o.eltwise != eltwise_alg::leaky_relu &&
            o.eltwise != eltwise_alg::clip)
            return false;
    }
    return true;
}

// Op t of a one-pass chain on the vector of columns c.. (count valid) of
// block row r: the same arithmetic as Eltwise / Binary on that element.
HWY_INLINE V OnePassOp(V v, const lowp::pp_block &b, int t, int64_t r, size_t c, size_t count) {
    const D d;
    const post_op &o = b.ops[t];
    if (o.is_binary) {
        const int64_t j = b.j0 + int64_t(c);
        const int64_t at = o.per_n ? j : (b.i0 + r) * o.ld + j;
        if (o.is_sum())
            return SumStep(v, LoadOutput(o.sum_type, static_cast<const uint8_t *>(b.srcs[t]) +
                                                         at * int64_t(ElemBytes(o.sum_type)),
                                         0, count),
                           o);
        const V w = o.src_bf16 ? LoadOperand<true>(b.srcs[t], size_t(at), count)
                               : LoadOperand<false>(b.srcs[t], size_t(at), count);
        return o.binary == binary_alg::add ? hn::Add(v, w) : hn::Mul(v, w);
    }
    switch (o.eltwise) {
        case eltwise_alg::relu: return Relu(v);
        case eltwise_alg::leaky_relu: return LeakyRelu(v, hn::Set(d, o.alpha));
        default: return Clip(v, hn::Set(d, o.alpha), hn::Set(d, o.beta));
    }
}

// The one-pass form of Block (OnePassChain(b) or no ops): every step on
// the vector in registers, the output type fixed at compile time (a call
// and a buffer round trip per vector cost more than the arithmetic:
// AVX2, u8 output of a 1x1 int8 convolution, a quarter of its time).
template <out_type kType>
HWY_NOINLINE void BlockOnePass(const lowp::pp_block &b) {
    const D d;
    const size_t L = hn::Lanes(d);
    const size_t n = static_cast<size_t>(b.n);
    const bool add_zp = b.zero_point != 0.0f;  // -0.0 too: x + -0.0 == x
    const V zp = hn::Set(d, b.zero_point);
    const V s0 = hn::Set(d, b.scales ? b.scales[0] : 1.0f);
    // Locals, not b's fields: the stores through dst may alias b for all
    // the compiler knows, which reloaded them for every vector.
    const float *HWY_RESTRICT scales = b.scales;
    const bool scales_per_n = b.scales_per_n;
    const float *HWY_RESTRICT bias = b.bias;
    const int nops = b.nops;
    const AccView acc(b);
    for (int64_t r = 0; r < b.m; ++r) {
        const VU row_comp = hn::Set(
            DU(), b.k_term - (b.rowsum ? b.row_factor * uint32_t(b.rowsum[r]) : 0u));
        uint8_t *dst = b.dst + r * b.ldc_bytes;
        for (size_t c = 0; c < n; c += L) {
            const size_t count = std::min(L, n - c);
            V v = LoadAcc(acc, r, c, count, row_comp);
            if (scales) v = hn::Mul(v, scales_per_n ? LoadF32(scales + c, count) : s0);
            if (bias) v = hn::Add(v, LoadF32(bias + c, count));
            for (int t = 0; t < nops; ++t) v = OnePassOp(v, b, t, r, c, count);
            if (add_zp) v = hn::Add(v, zp);
            StoreVec<kType>(v, count, dst + c * ElemBytes(kType));
        }
    }
}

void Block(const lowp::pp_block &b) {
    const D d;
    const size_t L = hn::Lanes(d);
    const size_t n = static_cast<size_t>(b.n);
    const int elem = int(ElemBytes(b.out));
    if (b.nops == 0 || OnePassChain(b)) {
        switch (b.out) {
            case out_type::f32: return BlockOnePass<out_type::f32>(b);
            case out_type::bf16: return BlockOnePass<out_type::bf16>(b);
            case out_type::s32: return BlockOnePass<out_type::s32>(b);
            case out_type::u8: return BlockOnePass<out_type::u8>(b);
            case out_type::s8: return BlockOnePass<out_type::s8>(b);
        }
        return;
    }
    // With post-ops: a row segment at a time through a buffer in L1.
    constexpr size_t kSeg = 256;
    HWY_ALIGN float x[kSeg];
    for (int64_t r = 0; r < b.m; ++r) {
        const VU row_comp = hn::Set(
            DU(), b.k_term - (b.rowsum ? b.row_factor * uint32_t(b.rowsum[r]) : 0u));
        for (size_t c0 = 0; c0 < n; c0 += kSeg) {
            const size_t len = std::min(kSeg, n - c0);
            for (size_t c = 0; c < len; c += L) {
                const size_t count = std::min(L, len - c);
                const V v = LoadAcc(AccView(b), r, c0 + c, count, row_comp);
                if (count == L) {
                    hn::Store(v, d, x + c);
                } else {
                    HWY_ALIGN float buf[kMaxLanes];
                    hn::Store(v, d, buf);
                    std::memcpy(x + c, buf, count * sizeof(float));
                }
            }
            ScaleBias(x, int64_t(len), b.scales ? b.scales + (b.scales_per_n ? c0 : 0) : nullptr,
                      b.scales_per_n, b.bias ? b.bias + c0 : nullptr);
            Apply(x, int64_t(len), b.i0 + r, b.j0 + int64_t(c0), b.ops, b.nops, b.srcs);
            Store(x, int64_t(len), b.zero_point, b.out, b.dst + r * b.ldc_bytes + c0 * elem);
        }
    }
}

// Reports the target these functions were compiled for (guards the
// dispatch-table index arithmetic below).
void PpDescribeTarget(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback::pp
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {
namespace pp {

HWY_EXPORT(PpDescribeTarget);
HWY_EXPORT(ScaleBias);
HWY_EXPORT(Apply);
HWY_EXPORT(Store);
HWY_EXPORT(Block);

namespace {

bool describe(int64_t t, hwy_postops_target *out) {
    size_t idx = 0;
    if (t == 0 || (t & (t - 1)) != 0 || (t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx))
        return false;
    const auto describe_fn = HWY_DISPATCH_TABLE(PpDescribeTarget)[idx];
    if (!describe_fn) return false;
    int64_t reported = 0;
    describe_fn(&reported);
    if (reported != t) return false;
    hwy_postops_target k;
    k.target = t;
    k.name = hwy::TargetName(t);
    k.scale_bias = HWY_DISPATCH_TABLE(ScaleBias)[idx];
    k.apply = HWY_DISPATCH_TABLE(Apply)[idx];
    k.store = HWY_DISPATCH_TABLE(Store)[idx];
    k.block = HWY_DISPATCH_TABLE(Block)[idx];
    if (!k.scale_bias || !k.apply || !k.store || !k.block) return false;
    *out = k;
    return true;
}

// hwy::SupportedTargets() runs CPUID (slow under a hypervisor): once.
int64_t supported_once() {
    static const int64_t s = hwy::SupportedTargets();
    return s;
}

constexpr int kTiers = anvil_isa_amx + 1;

// The target of each tier, made on first use and never destroyed.  The
// public functions run once per row segment, so the common path is one
// tier lookup and one acquire load.
const hwy_postops_target *target_for(anvil_isa_t tier) {
    static std::mutex mu;
    static std::atomic<const hwy_postops_target *> slots[kTiers];
    const int slot_index = std::min(std::max(int(tier), 0), kTiers - 1);
    std::atomic<const hwy_postops_target *> &slot = slots[slot_index];
    if (const hwy_postops_target *p = slot.load(std::memory_order_acquire)) return p;
    std::lock_guard<std::mutex> lock(mu);
    if (const hwy_postops_target *p = slot.load(std::memory_order_relaxed)) return p;
    const int64_t usable =
        supported_once() & HWY_TARGETS & allowed_targets(anvil_isa_t(slot_index));
    hwy_postops_target k;
    bool found = false;
    for (int64_t bits = usable; bits != 0 && !found; bits &= bits - 1)
        found = describe(bits & -bits, &k);
    // The SIMD-free fallback is always compiled and supported; should the
    // tables not hold it, the static dispatch target (the baseline) is used.
    if (!found) {
        k.target = HWY_STATIC_TARGET;
        k.name = hwy::TargetName(HWY_STATIC_TARGET);
        k.scale_bias = &HWY_STATIC_DISPATCH(ScaleBias);
        k.apply = &HWY_STATIC_DISPATCH(Apply);
        k.store = &HWY_STATIC_DISPATCH(Store);
        k.block = &HWY_STATIC_DISPATCH(Block);
    }
    const hwy_postops_target *p = new hwy_postops_target(k);
    slot.store(p, std::memory_order_release);
    return p;
}

// The cap is read without freezing it, as highway_backend() does: the
// matmul driver has frozen it already.
const hwy_postops_target *current() { return target_for(cpu::dispatch_tier(false)); }

}  // namespace
}  // namespace pp

std::vector<hwy_postops_target> postops_targets() {
    std::vector<hwy_postops_target> out;
    for (int64_t bits = hwy::SupportedTargets() & HWY_TARGETS; bits != 0; bits &= bits - 1) {
        hwy_postops_target k;
        if (pp::describe(bits & -bits, &k)) out.push_back(k);
    }
    return out;
}

const hwy_postops_target *postops_target_for(anvil_isa_t tier) { return pp::target_for(tier); }

}  // namespace anvil::fallback

namespace anvil::lowp {

void pp_scale_bias(float *x, int64_t n, const float *scales, bool per_n, const float *bias) {
    if (n <= 0 || (!scales && !bias)) return;
    fallback::pp::current()->scale_bias(x, n, scales, per_n, bias);
}

void pp_apply(float *x, int64_t n, int64_t i, int64_t j0, const post_op *ops, int nops,
              const void *const *srcs) {
    if (n <= 0 || nops <= 0) return;
    fallback::pp::current()->apply(x, n, i, j0, ops, nops, srcs);
}

void pp_store(const float *x, int64_t n, float zero_point, out_type type, void *dst) {
    if (n <= 0) return;
    fallback::pp::current()->store(x, n, zero_point, type, dst);
}

void pp_block_apply(const pp_block &b) {
    if (b.m <= 0 || b.n <= 0) return;
    fallback::pp::current()->block(b);
}

}  // namespace anvil::lowp
#endif  // HWY_ONCE
