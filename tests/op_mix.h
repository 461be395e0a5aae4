// A fixed mix of calls through the public API -- fp32 GEMM (direct,
// planned and a dispatched small GEMM), bf16 and int8 BLAS-style GEMM, int8 and fp32 matmuls with a
// post-op chain, and fp32 / u8 convolutions (one depthwise) -- on small
// integer-valued data, so every path computes the same exact results.
// Used where a test needs "run everything once and compare": the memory
// cap and JIT-failure suites.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"

namespace tu {

struct op_result {
    std::string name;
    anvil_status_t status = anvil_success;
    std::vector<uint8_t> initial;  // the output buffer's bytes before the call
    std::vector<uint8_t> out;      // ... and after it
};

namespace op_mix_detail {

inline uint32_t next(uint32_t &s) {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
}
inline std::vector<float> small_floats(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    for (auto &x : v) x = float(int(next(seed) % 9) - 4);
    return v;
}
inline std::vector<uint16_t> small_bf16(size_t n, uint32_t seed) {
    std::vector<uint16_t> v(n);
    for (auto &x : v) {
        const float f = float(int(next(seed) % 9) - 4);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        x = uint16_t(u >> 16);  // small integers are exact in bf16
    }
    return v;
}
template <typename T>
std::vector<T> small_ints(size_t n, uint32_t seed, int lo, int hi) {
    std::vector<T> v(n);
    for (auto &x : v) x = T(lo + int(next(seed) % uint32_t(hi - lo + 1)));
    return v;
}
template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T> &v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// relu, then a residual add of an f32 M x N tensor with ld = N.
inline void relu_then_add(int64_t N, anvil_post_op_t ops[2]) {
    ops[0] = anvil_post_op_t{};
    ops[0].kind = anvil_post_op_eltwise;
    ops[0].alg = anvil_eltwise_relu;
    ops[1] = anvil_post_op_t{};
    ops[1].kind = anvil_post_op_binary;
    ops[1].alg = anvil_binary_add;
    ops[1].src_dt = anvil_dt_f32;
    ops[1].ld = N;
}

// create -> packed size -> pack -> execute (one binary operand) -> destroy
// of the matmul d; C starts as c_bytes bytes of 7.
inline op_result run_matmul(const char *name, const anvil_matmul_desc_t &d, const void *A,
                            const void *B, const void *resid, size_t c_bytes) {
    std::vector<uint8_t> C(c_bytes, 7);
    op_result o{name};
    o.initial = C;
    anvil_matmul_t mm = nullptr;
    o.status = anvil_matmul_create(&mm, &d);
    size_t bytes = 0;
    if (o.status == anvil_success) o.status = anvil_matmul_packed_weights_size(mm, &bytes);
    std::vector<uint8_t> packed(bytes + 64);
    void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    if (o.status == anvil_success) o.status = anvil_matmul_pack_weights(mm, B, pk);
    const void *bin[1] = {resid};
    if (o.status == anvil_success) o.status = anvil_matmul_execute(mm, A, pk, C.data(), bin);
    anvil_matmul_destroy(mm);
    o.out = C;
    return o;
}

}  // namespace op_mix_detail

// Runs every call of the mix; an output buffer starts as a fixed pattern,
// so a failed call's `out` shows whether anything was written.
inline std::vector<op_result> run_op_mix() {
    using namespace op_mix_detail;
    std::vector<op_result> r;
    {  // fp32 sgemm with a transposed A and tails (packs A)
        const int64_t M = 37, N = 53, K = 300;
        auto A = small_floats(size_t(K * M), 1), B = small_floats(size_t(K * N), 2);
        std::vector<float> C(size_t(M * N), 7.0f);
        op_result o{"sgemm TN 37x53x300"};
        o.initial = bytes_of(C);
        o.status = anvil_sgemm('T', 'N', M, N, K, 1.0f, A.data(), M, B.data(), N, 1.0f, C.data(), N);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // fp32 sgemm, larger (cache-blocked, packed B)
        const int64_t M = 130, N = 150, K = 400;
        auto A = small_floats(size_t(M * K), 3), B = small_floats(size_t(K * N), 4);
        std::vector<float> C(size_t(M * N), 7.0f);
        op_result o{"sgemm NN 130x150x400"};
        o.initial = bytes_of(C);
        o.status = anvil_sgemm('N', 'N', M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // fp32 plan with library-owned packed B
        const int64_t M = 20, N = 70, K = 33;
        auto A = small_floats(size_t(M * K), 5), B = small_floats(size_t(K * N), 6);
        std::vector<float> C(size_t(M * N), 7.0f);
        op_result o{"gemm plan 20x70x33"};
        o.initial = bytes_of(C);
        anvil_gemm_plan_t plan = nullptr;
        o.status = anvil_gemm_plan_create(&plan, 'N', 'N', M, N, K, K, N, N);
        if (o.status == anvil_success) o.status = anvil_gemm_plan_pack_b_owned(plan, B.data());
        if (o.status == anvil_success)
            o.status = anvil_gemm_plan_execute(plan, 1.0f, A.data(), nullptr, 0.0f, C.data());
        anvil_gemm_plan_destroy(plan);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // dispatched small GEMM: its direct kernel where the JIT makes one
        const int64_t M = 21, N = 33, K = 19;
        auto A = small_floats(size_t(M * K), 11), B = small_floats(size_t(K * N), 12);
        std::vector<float> C(size_t(M * N), 7.0f);
        op_result o{"smm 21x33x19"};
        o.initial = bytes_of(C);
        anvil_smm_t h = nullptr;
        o.status = anvil_smm_create(&h, 'N', 'N', M, N, K, 1.0f, K, N, 1.0f, N);
        if (o.status == anvil_success) {
            if (const anvil_smm_fn fn = anvil_smm_get_function(h))
                fn(A.data(), B.data(), C.data());
            else
                o.status = anvil_smm_execute(h, A.data(), B.data(), C.data());
            anvil_smm_destroy(h);
        }
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // bf16 gemm
        const int64_t M = 19, N = 40, K = 66;
        auto A = small_bf16(size_t(M * K), 7), B = small_bf16(size_t(K * N), 8);
        std::vector<float> C(size_t(M * N), 7.0f);
        op_result o{"bf16 gemm 19x40x66"};
        o.initial = bytes_of(C);
        o.status = anvil_gemm_bf16bf16f32('N', 'N', M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                                          C.data(), N);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // u8s8s32 with zero points, transposed B (the in-place dot path)
        const int64_t M = 5, N = 48, K = 128;
        auto A = small_ints<uint8_t>(size_t(M * K), 9, 0, 20);
        auto B = small_ints<int8_t>(size_t(K * N), 10, -9, 9);
        std::vector<int32_t> C(size_t(M * N), 7);
        const int32_t co = 3;
        op_result o{"u8s8s32 NT 5x48x128"};
        o.initial = bytes_of(C);
        o.status = anvil_gemm_u8s8s32('N', 'T', 'F', M, N, K, 1.0f, A.data(), K, 2, B.data(), K, 1,
                                      0.0f, C.data(), N, &co);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // s8s8s32, blocked
        const int64_t M = 70, N = 45, K = 90;
        auto A = small_ints<int8_t>(size_t(M * K), 11, -9, 9);
        auto B = small_ints<int8_t>(size_t(K * N), 12, -9, 9);
        std::vector<int32_t> C(size_t(M * N), 7);
        const int32_t co = 0;
        op_result o{"s8s8s32 NN 70x45x90"};
        o.initial = bytes_of(C);
        o.status = anvil_gemm_s8s8s32('N', 'N', 'F', M, N, K, 1.0f, A.data(), K, 0, B.data(), N, 0,
                                      0.0f, C.data(), N, &co);
        o.out = bytes_of(C);
        r.push_back(o);
    }
    {  // int8 matmul: scales, bias, relu, residual add, u8 output
        const int64_t M = 17, N = 35, K = 64;
        auto A = small_ints<uint8_t>(size_t(M * K), 13, 0, 20);
        auto B = small_ints<int8_t>(size_t(K * N), 14, -9, 9);
        auto bias = small_floats(size_t(N), 15);
        auto resid = small_floats(size_t(M * N), 16);
        const float scale = 0.25f;
        anvil_post_op_t ops[2];
        relu_then_add(N, ops);
        anvil_matmul_desc_t d{};
        d.a_dt = anvil_dt_u8;
        d.b_dt = anvil_dt_s8;
        d.c_dt = anvil_dt_u8;
        d.transa = d.transb = 'N';
        d.M = M, d.N = N, d.K = K, d.lda = K, d.ldb = N, d.ldc = N;
        d.a_zero_point = 3;
        d.c_zero_point = 5;
        d.scales = &scale;
        d.bias = bias.data();
        d.num_post_ops = 2;
        d.post_ops = ops;
        r.push_back(run_matmul("matmul u8s8u8 17x35x64 relu+add", d, A.data(), B.data(),
                               resid.data(), size_t(M * N)));
    }
    // fp32 matmuls: bias, relu, residual add; f32 output (the chain in place
    // on C) and bf16 output (through a scratch panel).
    for (const anvil_data_type_t c_dt : {anvil_dt_f32, anvil_dt_bf16}) {
        const int64_t M = 29, N = 70, K = 45;
        const auto A = small_floats(size_t(M * K), 17), B = small_floats(size_t(K * N), 18);
        const auto bias = small_floats(size_t(N), 19), resid = small_floats(size_t(M * N), 20);
        anvil_post_op_t ops[2];
        relu_then_add(N, ops);
        anvil_matmul_desc_t d{};
        d.a_dt = d.b_dt = anvil_dt_f32;
        d.c_dt = c_dt;
        d.transa = 'N';
        d.transb = 'T';
        d.M = M, d.N = N, d.K = K, d.lda = K, d.ldb = K, d.ldc = N;
        d.bias = bias.data();
        d.num_post_ops = 2;
        d.post_ops = ops;
        const size_t ec = c_dt == anvil_dt_f32 ? 4 : 2;
        r.push_back(run_matmul(c_dt == anvil_dt_f32 ? "matmul f32 29x70x45 relu+add"
                                                    : "matmul f32->bf16 29x70x45 relu+add",
                               d, A.data(), B.data(), resid.data(), size_t(M * N) * ec));
    }
    // Convolutions: fp32 3x3 with padding, and a u8 depthwise 3x3 stride 2.
    for (int dw = 0; dw < 2; ++dw) {
        anvil_conv2d_desc_t d{};
        d.src_dt = dw ? anvil_dt_u8 : anvil_dt_f32;
        d.wei_dt = dw ? anvil_dt_s8 : anvil_dt_f32;
        d.dst_dt = dw ? anvil_dt_s32 : anvil_dt_f32;
        d.N = 2;
        d.IC = dw ? 24 : 19;
        d.G = dw ? d.IC : 1;
        d.OC = dw ? 24 : 21;
        d.IH = 11, d.IW = 9, d.KH = 3, d.KW = 3;
        d.SH = d.SW = dw ? 2 : 1;
        d.pad_t = d.pad_l = d.pad_b = d.pad_r = 1;
        d.OH = (d.IH + 2 - 3) / d.SH + 1;
        d.OW = (d.IW + 2 - 3) / d.SW + 1;
        d.src_zero_point = dw ? 4 : 0;
        const size_t src_n = size_t(d.N * d.IH * d.IW * d.IC);
        const size_t wei_n = size_t(d.OC * (d.IC / d.G) * d.KH * d.KW);
        const size_t dst_n = size_t(d.N * d.OH * d.OW * d.OC);
        std::vector<uint8_t> src, wei;
        if (dw) {
            src = bytes_of(small_ints<uint8_t>(src_n, 17, 0, 20));
            wei = bytes_of(small_ints<int8_t>(wei_n, 18, -9, 9));
        } else {
            src = bytes_of(small_floats(src_n, 19));
            wei = bytes_of(small_floats(wei_n, 20));
        }
        std::vector<uint8_t> dst(dst_n * 4, 7);
        op_result o{dw ? "conv u8 depthwise 3x3 s2" : "conv f32 3x3"};
        o.initial = dst;
        anvil_conv2d_t cv = nullptr;
        o.status = anvil_conv2d_create(&cv, &d);
        size_t bytes = 0;
        if (o.status == anvil_success) o.status = anvil_conv2d_packed_weights_size(cv, &bytes);
        std::vector<uint8_t> packed(bytes + 64);
        void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
        if (o.status == anvil_success)
            o.status = anvil_conv2d_pack_weights(cv, wei.data(), anvil_conv_weights_oihw, pk);
        if (o.status == anvil_success)
            o.status = anvil_conv2d_execute(cv, src.data(), pk, nullptr, dst.data(), nullptr);
        anvil_conv2d_destroy(cv);
        o.out = dst;
        r.push_back(o);
    }
    return r;
}

}  // namespace tu
