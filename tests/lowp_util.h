// Helpers for the low-precision GEMM, matmul and conv tests: typed buffer
// reads, the documented post-op bounds, bf16 values, int8 operands placed
// at chosen byte offsets, the scalar references of the BLAS-style calls
// (exact integer arithmetic, double for alpha/beta).  The oneDNN peers are
// in onednn_peer.h.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_ukernel.h"
#include "test_util.h"

namespace lt {

// A matmul descriptor without attributes.
inline anvil_matmul_desc_t matmul_desc(anvil_data_type_t adt, anvil_data_type_t bdt, anvil_data_type_t cdt,
                                       char ta, char tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                                       int64_t ldb, int64_t ldc) {
    anvil_matmul_desc_t d{};
    d.a_dt = adt;
    d.b_dt = bdt;
    d.c_dt = cdt;
    d.transa = ta;
    d.transb = tb;
    d.M = M;
    d.N = N;
    d.K = K;
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldc;
    return d;
}

// A matmul handle made from d with B packed into its own buffer (create,
// size query, pack: each REQUIREd); destroyed with the object.
struct packed_matmul {
    anvil_matmul_t h = nullptr;
    std::vector<uint32_t> packed;
    packed_matmul(const anvil_matmul_desc_t &d, const void *B) {
        REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
        packed.assign(bytes / 4 + 1, 0);
        REQUIRE(anvil_matmul_pack_weights(h, B, packed.data()) == anvil_success);
    }
    ~packed_matmul() { anvil_matmul_destroy(h); }
    packed_matmul(const packed_matmul &) = delete;
    packed_matmul &operator=(const packed_matmul &) = delete;
    anvil_status_t execute(const void *A, void *C, const void *const *binary_srcs = nullptr) const {
        return anvil_matmul_execute(h, A, packed.data(), C, binary_srcs);
    }
};

// A bf16 x bf16 matmul descriptor: A, B 'N', dense leading dims, output c_dt.
inline anvil_matmul_desc_t bf16_matmul_desc(int64_t M, int64_t N, int64_t K, anvil_data_type_t c_dt) {
    anvil_matmul_desc_t d{};
    d.a_dt = anvil_dt_bf16;
    d.b_dt = anvil_dt_bf16;
    d.c_dt = c_dt;
    d.transa = 'N';
    d.transb = 'N';
    d.M = M;
    d.N = N;
    d.K = K;
    d.lda = K;
    d.ldb = N;
    d.ldc = N;
    return d;
}

// Whether the bf16 backend has kernels on widened A (lp_ukernel.h's a_f32)
// to compare with its vdpbf16ps ones; says so in the log when not.
inline bool widened_bf16_kernels_here() {
    const auto &be = anvil::lowp::select_lp_backend(anvil::lowp::lp_kind::bf16);
    if (!be.accepts_widened_bf16_a())
        MESSAGE("no widened-A kernels on this tier (", be.name(), "): nothing to compare");
    return be.accepts_widened_bf16_a();
}

// Restores the driver's own choice of widening bf16 A when it goes out of
// scope (tests force it with set_widen_bf16_a_override).
struct widen_override_scope {
    ~widen_override_scope() { anvil::lowp::set_widen_bf16_a_override(-1); }
};

using anvil::lowp::bf16_to_f32;
using anvil::lowp::f32_to_bf16;

// A byte buffer holding `count` elements of T starting `offset_bytes` past
// a 64-byte boundary (odd offsets give unaligned operands).
template <typename T>
struct obuf {
    std::vector<uint8_t> raw;
    T *p = nullptr;
    obuf(int64_t count, int offset_bytes) {
        raw.assign(size_t(count) * sizeof(T) + 128, 0);
        uintptr_t base = reinterpret_cast<uintptr_t>(raw.data());
        base = (base + 63) / 64 * 64 + uintptr_t(offset_bytes);
        p = reinterpret_cast<T *>(base);
    }
};

struct shape {
    char ta = 'N', tb = 'N';
    int64_t M = 1, N = 1, K = 1;
    int64_t pad_a = 0, pad_b = 0, pad_c = 0;
    bool transa() const { return ta == 'T'; }
    bool transb() const { return tb == 'T'; }
    int64_t a_rows() const { return transa() ? K : M; }
    int64_t a_cols() const { return transa() ? M : K; }
    int64_t b_rows() const { return transb() ? N : K; }
    int64_t b_cols() const { return transb() ? K : N; }
    int64_t lda() const { return std::max<int64_t>(1, a_cols()) + pad_a; }
    int64_t ldb() const { return std::max<int64_t>(1, b_cols()) + pad_b; }
    int64_t ldc() const { return std::max<int64_t>(1, N) + pad_c; }
    int64_t a_at(int64_t i, int64_t k) const { return transa() ? k * lda() + i : i * lda() + k; }
    int64_t b_at(int64_t k, int64_t j) const { return transb() ? j * ldb() + k : k * ldb() + j; }
    std::string str() const {
        return std::string(1, ta) + tb + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
               " K=" + std::to_string(K) + " pads=" + std::to_string(pad_a) + "/" +
               std::to_string(pad_b) + "/" + std::to_string(pad_c);
    }
};

// bf16 B of `s` as fp32 columns (column j at j * K), for references whose K
// loop should read memory in order (ref::sgemm_double says why).
inline std::vector<float> b_columns_f32(const shape &s, const uint16_t *B) {
    std::vector<float> cols(size_t(s.N * s.K));
    for (int64_t j = 0; j < s.N; ++j)
        for (int64_t k = 0; k < s.K; ++k) cols[size_t(j * s.K + k)] = bf16_to_f32(B[s.b_at(k, j)]);
    return cols;
}

inline int elem_bytes(anvil_data_type_t t) {
    return t == anvil_dt_f32 || t == anvil_dt_s32 ? 4 : t == anvil_dt_bf16 ? 2 : 1;
}

// Element `at` of a typed buffer as double.
inline double load(anvil_data_type_t t, const void *p, int64_t at) {
    switch (t) {
        case anvil_dt_f32: return static_cast<const float *>(p)[at];
        case anvil_dt_bf16: return bf16_to_f32(static_cast<const uint16_t *>(p)[at]);
        case anvil_dt_s32: return static_cast<const int32_t *>(p)[at];
        case anvil_dt_u8: return static_cast<const uint8_t *>(p)[at];
        default: return static_cast<const int8_t *>(p)[at];
    }
}

// Stores the integer v (exact in the type) as element `at` of a typed buffer.
inline void store_int(anvil_data_type_t t, void *p, int64_t at, int64_t v) {
    switch (t) {
        case anvil_dt_f32: static_cast<float *>(p)[at] = float(v); break;
        case anvil_dt_bf16: static_cast<uint16_t *>(p)[at] = f32_to_bf16(float(v)); break;
        case anvil_dt_s32: static_cast<int32_t *>(p)[at] = int32_t(v); break;
        case anvil_dt_u8: static_cast<uint8_t *>(p)[at] = uint8_t(v); break;
        default: static_cast<int8_t *>(p)[at] = int8_t(v); break;
    }
}

// fp32 ulp of y (subnormals: the smallest one; inf / NaN: 0).
inline double ulp32(double y) {
    y = std::fabs(y);
    if (!std::isfinite(y)) return 0;
    if (y < 0x1p-126) return 0x1p-149;
    int e = 0;
    std::frexp(y, &e);  // y = m 2^e, m in [0.5, 1)
    return std::ldexp(1.0, e - 24);
}

inline bool transcendental(int alg) {
    return alg == anvil_eltwise_gelu_tanh || alg == anvil_eltwise_gelu_erf ||
           alg == anvil_eltwise_silu || alg == anvil_eltwise_sigmoid || alg == anvil_eltwise_tanh;
}

// The documented accuracy of each transcendental op (docs/postops.md,
// "documented bound"): |y - y_exact| <= abs + ulps * ulp(y_exact).
inline double eltwise_bound(int alg, double y) {
    switch (alg) {
        case anvil_eltwise_tanh:
        case anvil_eltwise_sigmoid: return 3 * ulp32(y);
        case anvil_eltwise_silu: return 4 * ulp32(y);
        case anvil_eltwise_gelu_tanh: return 0x1p-26 + 5 * ulp32(y);
        case anvil_eltwise_gelu_erf: return 0x1p-26 + 6 * ulp32(y);
        default: return 0;  // relu, leaky_relu (power-of-two slopes), clip: exact
    }
}

// oneDNN's accuracy for the same ops, taken as benchdnn's f32 eltwise
// threshold: 4e-6 relative (absolute below 1).
inline double onednn_eltwise_bound(int alg, double y) {
    return transcendental(alg) ? 4e-6 * std::max(1.0, std::fabs(y)) : 0.0;
}

// ---------------------------------------------------------------- post-ops

inline anvil_post_op_t eltwise(int alg, float alpha = 0, float beta = 0) {
    anvil_post_op_t o{};
    o.kind = anvil_post_op_eltwise;
    o.alg = alg;
    o.alpha = alpha;
    o.beta = beta;
    return o;
}
inline anvil_post_op_t binary(int alg, bool per_n, anvil_data_type_t src_dt = anvil_dt_f32,
                              int64_t ld_pad = 0) {
    anvil_post_op_t o{};
    o.kind = anvil_post_op_binary;
    o.alg = alg;
    o.per_n = per_n;
    o.src_dt = src_dt;
    o.ld = ld_pad;
    return o;
}

// oneDNN's sum post-op: x + scale * (the output's old value - zero_point).
inline anvil_post_op_t sum(float scale = 1.0f, float zero_point = 0.0f) {
    anvil_post_op_t o{};
    o.kind = anvil_post_op_sum;
    o.alpha = scale;
    o.beta = zero_point;
    return o;
}

// True when a chain holds two relu-family ops with different slopes
// (oneDNN 2.6 reuses the first slope: it is no peer for those chains).
inline bool two_relu_slopes(const std::vector<anvil_post_op_t> &ops) {
    int n = 0;
    float first = 0;
    for (const auto &o : ops) {
        if (o.kind != anvil_post_op_eltwise ||
            (o.alg != anvil_eltwise_relu && o.alg != anvil_eltwise_leaky_relu))
            continue;
        const float a = o.alg == anvil_eltwise_relu ? 0.0f : o.alpha;
        if (n++ == 0) first = a;
        else if (a != first) return true;
    }
    return false;
}

// ---------------------------------------------------------------- int8

// The documented semantics of anvil_gemm_{u8,s8}s8s32, element by element.
inline int32_t int8_expected(int64_t dot64, float alpha, float beta, int32_t c0, int32_t off) {
    const int32_t dot = int32_t(uint32_t(uint64_t(dot64)));
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
        const int64_t v = (beta == 0.0f ? 0 : int64_t(c0)) + int64_t(dot) + int64_t(off);
        return int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)));
    }
    double v = double(alpha) * double(dot) + double(off);
    if (beta != 0.0f) v += double(beta) * double(c0);
    if (v <= double(INT32_MIN)) return INT32_MIN;
    if (v >= double(INT32_MAX)) return INT32_MAX;
    return int32_t(std::nearbyint(v));
}

// True when the double value of an int8 result is exactly halfway between
// two integers (the one place oneDNN may round the other way).
inline bool int8_is_tie(int64_t dot64, float alpha, float beta, int32_t c0, int32_t off) {
    const int32_t dot = int32_t(uint32_t(uint64_t(dot64)));
    double v = double(alpha) * double(dot) + double(off);
    if (beta != 0.0f) v += double(beta) * double(c0);
    return v - std::floor(v) == 0.5;
}

// ---------------------------------------------------------------- bf16

// A bf16 fraction: 8 significant bits, magnitude in [2^-8, 2] (no
// denormals anywhere near), random sign.
inline uint16_t bf16_frac(tu::rng &r) {
    const float mant = float(r.ival(128, 255)) * 0x1p-7f;  // [1, 2)
    const float v = std::ldexp(mant, int(r.ival(-8, 0))) * (r.ival(0, 1) ? -1.0f : 1.0f);
    return f32_to_bf16(v);
}
inline uint16_t bf16_small_int(tu::rng &r) { return f32_to_bf16(float(r.ival(-4, 4))); }

// Arguments of one plain lp kernel call on a tile: A rows a_rs bytes
// apart, one packed B panel (kNR columns), accumulators kNR wide, one tile
// and one K segment.
inline anvil::lowp::lp_ukernel_args tile_args(const uint8_t *a, int64_t a_rs, const uint8_t *b,
                                              void *acc, int64_t kg, int m, int n,
                                              bool accumulate) {
    anvil::lowp::lp_ukernel_args pa{};
    pa.a = a;
    pa.a_rs = a_rs;
    pa.b = b;
    pa.b_ld = anvil::lowp::kNR * 4;
    pa.acc = acc;
    pa.acc_ld = anvil::lowp::kNR;
    pa.kg = kg;
    pa.m = m;
    pa.n = n;
    pa.accumulate = accumulate ? 1 : 0;
    pa.m_tiles = 1;
    pa.k_segs = 1;
    return pa;
}

}  // namespace lt
