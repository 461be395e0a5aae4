// Scalar reference of anvil_conv2d (include/anvil/anvil.h, "convolution"):
// the exact accumulator of one output element, and the documented chain
// applied to it with a per-element error bound.
//
// Accumulator: int8: exact int64 sum of (src - src_zero_point) * weight over
// the in-bounds taps only (padding taps contribute nothing); f32 / bf16:
// products in double (exact: 24 x 24 bits), summed in double, together with
// T = sum |products| for the fp32-accumulation error bound.
//
// Chain (the matmul's, src/lowp/postops.h, with M = N*OH*OW pixels and
// N = OC columns): x = float(acc) * scale + bias[oc], post-ops in order,
// + dst_zero_point, convert.  The steps that are exact in the library's
// arithmetic (int -> float, scale, bias, relu, leaky_relu, clip, binary
// add/mul, the zero point: each one IEEE fp32 operation on fp32 values) are
// emulated bit for bit: the exact double result of an operation on two
// floats rounded once to float is the fp32 result.  So while no inexact
// step has happened the expected value is exact and results are compared
// with ==.  The transcendental ops contribute their documented bounds
// (docs/postops.md), propagated through the rest of the chain as in
// tests/test_lowp_matmul.cpp (slope <= 1.13, products scale the bound, each
// later fp32 rounding adds half an ulp), and so does an inexact fp32
// accumulation (random fractions): Higham's gamma_{K+3} * T
// (tests/test_util.h, gemm_error_bound).  oneDNN's own bound (benchdnn's
// f32 eltwise threshold, 4e-6) is tracked beside anvil's.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp/lp_ref.h"
#include "lowp_util.h"
#include "test_util.h"

namespace cr {

using anvil::lowp::bf16_to_f32;
using anvil::lowp::f32_to_bf16;
using dt = anvil_data_type_t;

// Shared with the matmul tests (lowp_util.h): element sizes, typed reads,
// the documented eltwise bounds.
using lt::elem_bytes;
using lt::eltwise_bound;
using lt::load;
using lt::onednn_eltwise_bound;
using lt::transcendental;
using lt::ulp32;

inline bool is_int8(dt t) { return t == anvil_dt_u8 || t == anvil_dt_s8; }
inline bool is_int_out(dt t) { return t == anvil_dt_s32 || t == anvil_dt_u8 || t == anvil_dt_s8; }

// ------------------------------------------------------------ geometry

inline int64_t icg(const anvil_conv2d_desc_t &d) { return d.IC / d.G; }
inline int64_t ocg(const anvil_conv2d_desc_t &d) { return d.OC / d.G; }
inline int64_t pixels(const anvil_conv2d_desc_t &d) { return d.N * d.OH * d.OW; }
inline int64_t kdim(const anvil_conv2d_desc_t &d) { return d.KH * d.KW * icg(d); }
inline int64_t src_elems(const anvil_conv2d_desc_t &d) { return d.N * d.IH * d.IW * d.IC; }
inline int64_t dst_elems(const anvil_conv2d_desc_t &d) { return pixels(d) * d.OC; }
inline int64_t wei_elems(const anvil_conv2d_desc_t &d) { return d.OC * kdim(d); }

// Weight (oc, ic within the group, kh, kw) in the given layout:
// OIHW [OC][IC/G][KH][KW], HWIO [KH][KW][IC/G][OC].
inline int64_t wei_at(const anvil_conv2d_desc_t &d, anvil_conv_weights_layout_t l, int64_t oc,
                      int64_t ic, int64_t kh, int64_t kw) {
    if (l == anvil_conv_weights_oihw) return ((oc * icg(d) + ic) * d.KH + kh) * d.KW + kw;
    return ((kh * d.KW + kw) * icg(d) + ic) * d.OC + oc;
}

// The exact accumulator of output element (pixel, oc); pixel = (n*OH + oh)*OW + ow.
struct acc_value {
    int64_t isum = 0;  // int8
    double sum = 0;    // f32 / bf16 (and isum as double for int8)
    double abs_sum = 0;
    bool nonfinite = false;  // a NaN or inf reached the sum
};

inline acc_value conv_acc(const anvil_conv2d_desc_t &d, const void *src, const void *wei,
                          anvil_conv_weights_layout_t l, int64_t pixel, int64_t oc) {
    const int64_t ow = pixel % d.OW, oh = (pixel / d.OW) % d.OH, n = pixel / (d.OW * d.OH);
    const int64_t g = oc / ocg(d), ic0 = g * icg(d);
    acc_value a;
    const bool i8 = is_int8(d.src_dt);
    for (int64_t kh = 0; kh < d.KH; ++kh) {
        const int64_t ih = oh * d.SH - d.pad_t + kh * (d.DH + 1);
        if (ih < 0 || ih >= d.IH) continue;
        for (int64_t kw = 0; kw < d.KW; ++kw) {
            const int64_t iw = ow * d.SW - d.pad_l + kw * (d.DW + 1);
            if (iw < 0 || iw >= d.IW) continue;
            const int64_t sbase = ((n * d.IH + ih) * d.IW + iw) * d.IC + ic0;
            for (int64_t c = 0; c < icg(d); ++c) {
                const double w = load(d.wei_dt, wei, wei_at(d, l, oc, c, kh, kw));
                const double s = load(d.src_dt, src, sbase + c);
                if (i8) {
                    a.isum += (int64_t(s) - d.src_zero_point) * int64_t(w);
                } else {
                    const double p = s * w;
                    a.sum += p;
                    a.abs_sum += std::fabs(p);
                }
            }
        }
    }
    if (i8) a.sum = double(a.isum);
    a.nonfinite = !std::isfinite(a.sum) || !std::isfinite(a.abs_sum);
    return a;
}

// ------------------------------------------------------------ chain

inline double eltwise_exact(int alg, double x, double alpha, double beta) {
    switch (alg) {
        case anvil_eltwise_gelu_tanh: {
            // x sigmoid(2u), the non-cancelling form of 0.5 x (1 + tanh u).
            const double u2 = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
            return u2 >= 0 ? x / (1 + std::exp(-u2)) : x * std::exp(u2) / (1 + std::exp(u2));
        }
        case anvil_eltwise_gelu_erf: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
        case anvil_eltwise_silu:
            return x >= 0 ? x / (1 + std::exp(-x)) : x * std::exp(x) / (1 + std::exp(x));
        case anvil_eltwise_sigmoid:
            return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
        case anvil_eltwise_tanh: return std::tanh(x);
        default: break;
    }
    (void)alpha;
    (void)beta;
    return x;
}

// Expected value of one output element before the conversion: v (exact
// fp32 emulation while err == 0), anvil's bound err, oneDNN's bound err_d.
struct expect {
    double v = 0, err = 0, err_d = 0;
};

// Everything the chain needs besides the descriptor: the execute-time bias
// and binary operands.
struct chain_args {
    const float *bias = nullptr;            // OC values or null
    const void *const *binary = nullptr;    // operands of the binary post-ops, in order
    const void *dst_old = nullptr;          // dst before the call (dst_dt; sum ops)
};

// One fp32 operation whose exact result (on the current value) is r and
// whose slope with respect to the current value is `slope`.
inline void fp32_step(expect &e, double r, double slope) {
    const double rr = double(float(r));
    if (e.err > 0) e.err = e.err * slope + 0.5 * ulp32(std::fabs(r) + e.err * slope);
    if (e.err_d > 0) e.err_d = e.err_d * slope + 0.5 * ulp32(std::fabs(r) + e.err_d * slope);
    e.v = e.err > 0 ? r : rr;
}

// The chain on the accumulator of element (pixel, oc).  acc_err: the bound
// of the accumulation itself (0 for exact data).
inline expect run_chain(const anvil_conv2d_desc_t &d, const acc_value &a, double acc_err,
                        int64_t pixel, int64_t oc, const chain_args &ca) {
    expect e;
    e.err = e.err_d = acc_err;
    e.v = acc_err > 0 ? a.sum : double(float(a.sum));  // float(acc), one RNE rounding
    if (d.scales) {
        const double s = d.scales[d.scales_per_oc ? oc : 0];
        fp32_step(e, e.v * s, std::fabs(s));
    }
    if (ca.bias) fp32_step(e, e.v + double(ca.bias[oc]), 1.0);
    int bi = 0;
    for (int t = 0; t < d.num_post_ops; ++t) {
        const anvil_post_op_t &o = d.post_ops[t];
        if (o.kind == anvil_post_op_sum) {  // x + alpha * (dst_old - beta)
            const double y = load(d.dst_dt, ca.dst_old, pixel * d.OC + oc);
            double u = y;
            if (o.beta != 0.0f) u = double(float(u - double(o.beta)));
            if (o.alpha != 1.0f) u = double(float(u * double(o.alpha)));
            fp32_step(e, e.v + u, 1.0);
            continue;
        }
        if (o.kind == anvil_post_op_binary) {
            const void *p = ca.binary[bi++];
            const int64_t at = o.per_n ? oc : pixel * o.ld + oc;
            const double y = load(o.src_dt, p, at);
            if (o.alg == anvil_binary_add) fp32_step(e, e.v + y, 1.0);
            else fp32_step(e, e.v * y, std::fabs(y));
            continue;
        }
        const double x = e.v;
        switch (o.alg) {
            case anvil_eltwise_relu: e.v = (x > 0 || std::isnan(x)) ? x : 0.0; break;
            case anvil_eltwise_leaky_relu:
                if (x > 0) break;
                fp32_step(e, double(o.alpha) * x, std::max(1.0, std::fabs(double(o.alpha))));
                break;
            case anvil_eltwise_clip:
                e.v = std::min(std::max(x, double(o.alpha)), double(o.beta));
                break;
            default: {
                const double y = eltwise_exact(o.alg, x, o.alpha, o.beta);
                const double yb = std::fabs(y) + 1.13 * e.err;
                e.err = e.err * 1.13 + eltwise_bound(o.alg, yb);
                e.err_d = e.err_d * 1.13 + onednn_eltwise_bound(o.alg, std::fabs(y) + 1.13 * e.err_d);
                e.v = y;
            }
        }
    }
    if (d.dst_zero_point != 0) fp32_step(e, e.v + double(d.dst_zero_point), 1.0);
    return e;
}

// ------------------------------------------------------------ output check

inline double saturate(dt t, double x) {
    const double lo = t == anvil_dt_u8 ? 0 : t == anvil_dt_s8 ? -128 : -2147483648.0;
    const double hi = t == anvil_dt_u8 ? 255 : t == anvil_dt_s8 ? 127 : 2147483647.0;
    return std::min(hi, std::max(lo, x));
}

// Is `got` (the output element, read as double) a correct conversion of a
// value within `err` of e.v?  int outputs: any rounding of a value in
// [v - err, v + err] (exactly nearbyint(v) when err == 0), saturated, NaN
// -> 0; bf16: f32_to_bf16 of the exact fp32 value when err == 0, else
// within err plus half a bf16 ulp; f32: == when err == 0.
inline bool output_ok(dt t, double v, double err, double got) {
    if (std::isnan(v)) return is_int_out(t) ? got == 0 : std::isnan(got);
    if (is_int_out(t)) {
        const double lo = saturate(t, std::nearbyint(v - err)), hi = saturate(t, std::nearbyint(v + err));
        return got >= lo && got <= hi;
    }
    if (std::isnan(got)) return false;
    if (t == anvil_dt_bf16) {
        if (err == 0) return got == double(bf16_to_f32(f32_to_bf16(float(v))));
        if (std::isinf(v)) return got == v;
        const double half_ulp = std::max((std::fabs(v) + err) * 0x1p-8, 0x1p-134);
        return std::fabs(got - v) <= err + half_ulp;
    }
    if (err == 0 || std::isinf(v)) return got == v;
    return std::fabs(got - v) <= err;
}

// The fp32 accumulation bound for K products of total magnitude T (see
// tests/test_util.h, gemm_error_bound: any order, any blocking).
inline double acc_bound(int64_t K, double T) { return tu::gemm_error_bound(K, T); }

}  // namespace cr
