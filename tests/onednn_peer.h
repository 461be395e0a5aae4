// oneDNN as the differential tests' second peer, where the build has it
// (ANVIL_TESTS_HAVE_ONEDNN, set by tests/CMakeLists.txt: ON on x86-64 by
// default, absent on aarch64).  Every comparison with anvil's own scalar /
// float64 references runs in both configurations; without oneDNN the
// wrappers below return false (outputs untouched) and the tests skip only
// their oneDNN comparisons.  oneDNN headers are included nowhere else.
#pragma once
#ifndef ANVIL_TESTS_HAVE_ONEDNN
#define ANVIL_TESTS_HAVE_ONEDNN 0
#endif

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "anvil/anvil.h"
#include "lowp_util.h"

#if ANVIL_TESTS_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace peer {

constexpr bool kHaveOneDNN = ANVIL_TESTS_HAVE_ONEDNN != 0;

#if ANVIL_TESTS_HAVE_ONEDNN

// "oneDNN 2.6.3".
inline std::string onednn_version() {
    const dnnl_version_t *v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
}

// Whether oneDNN's int8 results are exact int32 sums on this CPU, decided
// once per process.  oneDNN reaches exact sums only with VNNI (`vpdpbusd`,
// avx512_core_vnni and up).  Without it (AVX2 CPUs, AVX-512 without VNNI)
// it multiplies with `vpmaddubsw`, whose pair sums u8 * s8 + u8 * s8
// saturate at int16 (255 * 127 * 2 = 64770 comes back as 32767), and for s8
// sources it halves the weights first: its int8 answers are then not the
// product (seen on a Zen 1 EPYC: 1-in-3 elements off, by up to 20%).  There
// the int8 cases are checked against the scalar reference only.  A probe
// call confirms the ISA's answer (a VNNI CPU whose oneDNN still saturates
// is no peer either).
inline bool int8_exact() {
    static const bool exact = [] {
        const unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
        const unsigned vnni = unsigned(dnnl_cpu_isa_avx512_core_vnni);
        if ((isa & vnni) != vnni) return false;
        // K = 2 with one saturating pair (oneDNN's k-pair is adjacent k).
        const uint8_t a[2] = {255, 255};
        const int8_t b[2] = {127, 127};
        int32_t c = 0, co = 0;
        if (dnnl_gemm_u8s8s32('N', 'N', 'F', 1, 1, 2, 1.0f, a, 2, 0, b, 1, 0, 0.0f, &c, 1, &co) !=
            dnnl_success)
            return false;
        return c == 2 * 255 * 127;
    }();
    return exact;
}

// Says once per process (in the test output) why int8 cases skip oneDNN.
inline void note_int8_inexact() {
    static bool said = false;
    if (said) return;
    said = true;
    MESSAGE("oneDNN's int8 kernels on this CPU (no VNNI: saturating vpmaddubsw) do not give "
            "exact int32 sums: int8 cases are checked against the scalar reference only");
}

// Usable as an int8 peer: built with oneDNN and exact on this CPU.
inline bool int8_peer() {
    if (int8_exact()) return true;
    note_int8_inexact();
    return false;
}

// The calls below run oneDNN and return true; without oneDNN they return
// false and touch nothing.  The int8 ones also return false where oneDNN's
// int8 is not exact (int8_exact), and bf16 ones where oneDNN has no bf16
// implementation for this CPU (oneDNN 2.6 needs AVX-512 for bf16).

// dnnl_sgemm with anvil_sgemm's arguments.
inline bool sgemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    REQUIRE(dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == dnnl_success);
    return true;
}

// dnnl_gemm_u8s8s32 / dnnl_gemm_s8s8s32 (a_signed) with anvil's arguments
// (A as bytes either way).
inline bool gemm_x8s8s32(bool a_signed, char ta, char tb, char offsetc, int64_t M, int64_t N,
                         int64_t K, float alpha, const uint8_t *A, int64_t lda, int32_t ao,
                         const int8_t *B, int64_t ldb, int32_t bo, float beta, int32_t *C,
                         int64_t ldc, const int32_t *co) {
    if (!int8_peer()) return false;
    const dnnl_status_t ds =
        a_signed ? dnnl_gemm_s8s8s32(ta, tb, offsetc, M, N, K, alpha,
                                     reinterpret_cast<const int8_t *>(A), lda, int8_t(ao), B, ldb,
                                     int8_t(bo), beta, C, ldc, co)
                 : dnnl_gemm_u8s8s32(ta, tb, offsetc, M, N, K, alpha, A, lda, uint8_t(ao), B, ldb,
                                     int8_t(bo), beta, C, ldc, co);
    REQUIRE(ds == dnnl_success);
    return true;
}

// oneDNN's matmul with bf16 A/B and fp32 C: C = alpha * op(A) op(B) +
// beta * C (output scale and a sum post-op), strides as in the BLAS-style
// call.
inline bool bf16_matmul(const lt::shape &s, float alpha, const uint16_t *A, const uint16_t *B,
                        float beta, float *C) {
    using namespace dnnl;
    using dt = memory::data_type;
    using dims = memory::dims;
    static engine eng(engine::kind::cpu, 0);
    stream st(eng);
    const memory::desc a_md({s.M, s.K}, dt::bf16, s.transa() ? dims{1, s.lda()} : dims{s.lda(), 1});
    const memory::desc b_md({s.K, s.N}, dt::bf16, s.transb() ? dims{1, s.ldb()} : dims{s.ldb(), 1});
    const memory::desc c_md({s.M, s.N}, dt::f32, dims{s.ldc(), 1});
    primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
        post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
    }
    matmul::primitive_desc pd;
    try {
        pd = matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), attr, eng);
    } catch (const dnnl::error &e) {
        // Only "no bf16 on this CPU" makes oneDNN no peer; any other
        // failure to create the primitive is the test's own error.
        const unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
        const unsigned core = unsigned(dnnl_cpu_isa_avx512_core);
        if ((isa & core) == core) throw;
        static bool said = false;
        if (!said) MESSAGE("oneDNN has no bf16 matmul on this CPU (", e.what(), "): bf16 cases "
                           "are checked against the reference only");
        said = true;
        return false;
    }
    memory ma(a_md, eng, const_cast<uint16_t *>(A));
    memory mb(b_md, eng, const_cast<uint16_t *>(B));
    memory mc(c_md, eng, C);
    matmul(pd).execute(st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    st.wait();
    return true;
}

// anvil's data types and eltwise ops as oneDNN's, for the primitive-based
// peers (the matmul and conv tests).
inline dnnl::memory::data_type dnnl_dt(anvil_data_type_t t) {
    using d = dnnl::memory::data_type;
    switch (t) {
        case anvil_dt_f32: return d::f32;
        case anvil_dt_bf16: return d::bf16;
        case anvil_dt_s32: return d::s32;
        case anvil_dt_u8: return d::u8;
        default: return d::s8;
    }
}

// leaky_relu: eltwise_relu with alpha; silu: eltwise_swish, to be given
// alpha = 1.
inline dnnl::algorithm dnnl_alg(int alg) {
    using a = dnnl::algorithm;
    switch (alg) {
        case anvil_eltwise_relu:
        case anvil_eltwise_leaky_relu: return a::eltwise_relu;
        case anvil_eltwise_clip: return a::eltwise_clip;
        case anvil_eltwise_gelu_tanh: return a::eltwise_gelu_tanh;
        case anvil_eltwise_gelu_erf: return a::eltwise_gelu_erf;
        case anvil_eltwise_silu: return a::eltwise_swish;
        case anvil_eltwise_sigmoid: return a::eltwise_logistic;
        default: return a::eltwise_tanh;
    }
}

#else  // no oneDNN: the same calls, doing nothing

inline std::string onednn_version() { return "no oneDNN in this build"; }
template <typename... Args>
bool sgemm(const Args &...) { return false; }
template <typename... Args>
bool gemm_x8s8s32(const Args &...) { return false; }
template <typename... Args>
bool bf16_matmul(const Args &...) { return false; }
inline bool int8_peer() { return false; }

#endif  // ANVIL_TESTS_HAVE_ONEDNN

}  // namespace peer
