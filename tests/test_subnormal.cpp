// Subnormal fp32 data: anvil never flushes (it leaves MXCSR alone and its
// kernels are IEEE FMAs), so subnormal inputs, products and results come
// out exactly.  A holds small integers times 2^-130 (subnormal for |m| <
// 16), B small integers: every product and partial sum is an integer
// multiple of 2^-130 below 2^-106, exactly representable (subnormal spacing
// 2^-149), so every correct path gives the exact value and any flush to
// zero (DAZ on inputs, FTZ on results) shows.  Runs under every ISA cap
// (JIT, Highway, scalar).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp_util.h"
#include "test_util.h"

namespace {

const float kTiny = std::ldexp(1.0f, -130);  // subnormal: below 2^-126

float tiny_val(int64_t i) { return float(int(i * 7 % 9) - 4) * kTiny; }  // -4..4 times 2^-130
float int_val(int64_t i) { return float(int(i * 5 % 7) - 3); }           // -3..3

}  // namespace

TEST_CASE("subnormal fp32 data: sgemm, the planned GEMM and the f32 matmul are exact, never flushed") {
    struct shape {
        int64_t M, N, K;
    };
    const shape shapes[] = {{1, 1, 1}, {5, 33, 17}, {37, 70, 301}, {130, 40, 64}};
    int checked = 0;
    for (const shape &sh : shapes)
        for (char ta : {'N', 'T'})
            for (char tb : {'N', 'T'}) {
                INFO("M ", sh.M, " N ", sh.N, " K ", sh.K, " trans ", std::string{ta, tb});
                const int64_t M = sh.M, N = sh.N, K = sh.K;
                std::vector<float> A(size_t(M * K)), B(size_t(K * N)), C0(size_t(M * N));
                for (size_t i = 0; i < A.size(); ++i) A[i] = tiny_val(int64_t(i));
                for (size_t i = 0; i < B.size(); ++i) B[i] = int_val(int64_t(i));
                for (size_t i = 0; i < C0.size(); ++i) C0[i] = tiny_val(int64_t(i) + 3);
                const int64_t lda = ta == 'N' ? K : M, ldb = tb == 'N' ? N : K;
                auto a = [&](int64_t i, int64_t k) { return ta == 'N' ? A[size_t(i * K + k)] : A[size_t(k * M + i)]; };
                auto b = [&](int64_t k, int64_t j) { return tb == 'N' ? B[size_t(k * N + j)] : B[size_t(j * K + k)]; };
                // want(beta): the exact product plus beta * C0 (beta 0 or 1).
                auto want = [&](int64_t i, int64_t j, bool beta) {
                    double acc = beta ? double(C0[size_t(i * N + j)]) : 0.0;
                    for (int64_t k = 0; k < K; ++k) acc += double(a(i, k)) * double(b(k, j));
                    return acc;
                };
                auto count_bad = [&](const std::vector<float> &C, bool beta) {
                    int bad = 0;
                    for (int64_t i = 0; i < M; ++i)
                        for (int64_t j = 0; j < N; ++j) bad += double(C[size_t(i * N + j)]) != want(i, j, beta);
                    return bad;
                };
                std::vector<float> C = C0;
                REQUIRE(anvil_sgemm(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 1.0f, C.data(), N) ==
                        anvil_success);
                CHECK(count_bad(C, true) == 0);
                // The planned GEMM, beta = 0.
                anvil_gemm_plan_t p = nullptr;
                REQUIRE(anvil_gemm_plan_create(&p, ta, tb, M, N, K, lda, ldb, N) == anvil_success);
                size_t bytes = 0;
                REQUIRE(anvil_gemm_plan_packed_b_size(p, &bytes) == anvil_success);
                std::vector<float> packed(bytes / 4 + 1);
                REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), packed.data()) == anvil_success);
                C = C0;
                REQUIRE(anvil_gemm_plan_execute(p, 1.0f, A.data(), packed.data(), 0.0f, C.data()) == anvil_success);
                anvil_gemm_plan_destroy(p);
                CHECK(count_bad(C, false) == 0);
                // The f32 matmul handle with a residual add of C0 (subnormal).
                anvil_post_op_t add{};
                add.kind = anvil_post_op_binary;
                add.alg = anvil_binary_add;
                add.src_dt = anvil_dt_f32;
                add.ld = N;
                anvil_matmul_desc_t d =
                    lt::matmul_desc(anvil_dt_f32, anvil_dt_f32, anvil_dt_f32, ta, tb, M, N, K, lda, ldb, N);
                d.num_post_ops = 1;
                d.post_ops = &add;
                anvil_matmul_t h = nullptr;
                REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
                REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
                std::vector<uint32_t> mpacked(bytes / 4 + 1);
                REQUIRE(anvil_matmul_pack_weights(h, B.data(), mpacked.data()) == anvil_success);
                std::fill(C.begin(), C.end(), 0.0f);
                const void *bins[1] = {C0.data()};
                REQUIRE(anvil_matmul_execute(h, A.data(), mpacked.data(), C.data(), bins) == anvil_success);
                anvil_matmul_destroy(h);
                CHECK(count_bad(C, true) == 0);
                ++checked;
            }
    MESSAGE(checked, " problems checked");
}

TEST_CASE("subnormal fp32 data: convolution is exact, never flushed") {
    struct shape {
        int64_t IC, OC, G, K, S, H;
    };
    const shape shapes[] = {{16, 24, 1, 3, 1, 9}, {40, 33, 1, 1, 1, 7}, {48, 48, 48, 3, 1, 11}, {3, 16, 1, 3, 2, 13},
                            {32, 32, 32, 3, 2, 10}};
    for (const shape &sh : shapes) {
        INFO("ic ", sh.IC, " oc ", sh.OC, " g ", sh.G, " k ", sh.K, " s ", sh.S, " h ", sh.H);
        const anvil_conv2d_desc_t d = tu::square_conv_desc(anvil_dt_f32, anvil_dt_f32, anvil_dt_f32, 2, sh.G, sh.IC,
                                                           sh.OC, sh.H, sh.K, sh.S);
        const int64_t icg = d.IC / d.G, ocg = d.OC / d.G;
        std::vector<float> src(size_t(d.N * d.IH * d.IW * d.IC)), wei(size_t(d.OC * icg * d.KH * d.KW)),
            bias(size_t(d.OC)), dst(size_t(d.N * d.OH * d.OW * d.OC), 1.0f);
        for (size_t i = 0; i < src.size(); ++i) src[i] = tiny_val(int64_t(i));
        for (size_t i = 0; i < wei.size(); ++i) wei[i] = int_val(int64_t(i));
        for (size_t i = 0; i < bias.size(); ++i) bias[i] = tiny_val(int64_t(i) + 5);
        anvil_conv2d_t h = nullptr;
        REQUIRE(anvil_conv2d_create(&h, &d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<uint32_t> packed(bytes / 4 + 1);
        REQUIRE(anvil_conv2d_pack_weights(h, wei.data(), anvil_conv_weights_oihw, packed.data()) == anvil_success);
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
            REQUIRE(anvil_conv2d_execute(h, src.data(), packed.data(), with_bias ? bias.data() : nullptr, dst.data(),
                                         nullptr) == anvil_success);
            int bad = 0;
            for (int64_t n = 0; n < d.N; ++n)
                for (int64_t oh = 0; oh < d.OH; ++oh)
                    for (int64_t ow = 0; ow < d.OW; ++ow)
                        for (int64_t oc = 0; oc < d.OC; ++oc) {
                            const int64_t g = oc / ocg;
                            double acc = with_bias ? double(bias[size_t(oc)]) : 0.0;
                            for (int64_t ic = 0; ic < icg; ++ic)
                                for (int64_t kh = 0; kh < d.KH; ++kh)
                                    for (int64_t kw = 0; kw < d.KW; ++kw) {
                                        const int64_t ih = oh * d.SH - d.pad_t + kh, iw = ow * d.SW - d.pad_l + kw;
                                        if (ih < 0 || iw < 0 || ih >= d.IH || iw >= d.IW) continue;
                                        acc += double(src[size_t(((n * d.IH + ih) * d.IW + iw) * d.IC + g * icg + ic)]) *
                                               double(wei[size_t(((oc * icg + ic) * d.KH + kh) * d.KW + kw)]);
                                    }
                            bad += double(dst[size_t(((n * d.OH + oh) * d.OW + ow) * d.OC + oc)]) != acc;
                        }
            INFO("bias ", with_bias);
            CHECK(bad == 0);
        }
        anvil_conv2d_destroy(h);
    }
}
