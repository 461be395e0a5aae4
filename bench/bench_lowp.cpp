// Low-precision GEMM side by side (Google Benchmark), row-major NN, alpha 1,
// beta 0:
//   bf16     anvil_gemm_bf16bf16f32 | oneDNN's bf16 matmul (f32 dst) on the
//            plain weights | the same with weights prepacked once
//            (format_tag::any, reordered outside the loop)
//   u8s8s32  anvil_gemm_u8s8s32 | dnnl_gemm_u8s8s32 (offsetc 'F', ao = bo = 0)
//            | oneDNN's int8 matmul (u8 src, s8 weights prepacked, s32 dst)
// Shapes: squares 256..2048 and the inference shapes M in {1, 4, 16, 64,
// 256} x (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008)}.  Counter:
// GFLOP/s (bf16) or GOP/s (int8), 2 M N K per call.  Every benchmark checks
// 32 points of its result exactly afterwards (bf16 data are small integers,
// int8 sums are exact).
//
//   ./bench_lowp --benchmark_filter='/M:64/N:4096/K:4096/'
//   ANVIL_BENCH_THREADS=2 taskset -c 0,1 ./bench_lowp --benchmark_filter=bf16
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "anvil/anvil.h"
#include "bench_common.h"

namespace {

struct shape {
    int64_t M, N, K;
};

void all_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"M", "N", "K"});
    for (int64_t n : {256, 512, 1024, 2048}) b->Args({n, n, n});
    const shape nk[] = {{0, 4096, 4096}, {0, 11008, 4096}, {0, 4096, 11008}};
    for (int64_t m : {1, 4, 16, 64, 256})
        for (const shape &x : nk) b->Args({m, x.N, x.K});
}

uint64_t next(uint64_t &s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
}

// Operands of one shape: bf16 A / B hold the small integers of a8 / b8
// (|v| <= 3, exact in bf16 and in every fp32 partial sum); int8 A is u8 over
// its whole range, B s8.  C is large enough for either result type.
struct lowp_data {
    int64_t M, N, K;
    std::vector<uint8_t> a8;
    std::vector<int8_t> b8;
    std::vector<uint16_t> a16, b16;
    std::vector<float> Cf;
    std::vector<int32_t> Ci;
    lowp_data(int64_t m, int64_t n, int64_t k, bool bf16) : M(m), N(n), K(k) {
        uint64_t s = uint64_t(m * 1315423911 + n * 2654435761u + k);
        static const float v[6] = {-3, -2, -1, 1, 2, 3};
        if (bf16) {
            a16.resize(size_t(M * K));
            b16.resize(size_t(K * N));
            auto bits = [](float f) {
                uint32_t u;
                std::memcpy(&u, &f, 4);
                return uint16_t(u >> 16);  // exact for these values
            };
            for (uint16_t &x : a16) x = bits(v[next(s) % 6]);
            for (uint16_t &x : b16) x = bits(v[next(s) % 6]);
            Cf.assign(size_t(M * N), 0.0f);
        } else {
            a8.resize(size_t(M * K));
            b8.resize(size_t(K * N));
            for (uint8_t &x : a8) x = uint8_t(next(s));
            for (int8_t &x : b8) x = int8_t(uint8_t(next(s)));
            Ci.assign(size_t(M * N), 0);
        }
    }
    bool check() const {
        const bool bf16 = !a16.empty();
        auto f = [](uint16_t b) {
            const uint32_t u = uint32_t(b) << 16;
            float x;
            std::memcpy(&x, &u, 4);
            return double(x);
        };
        for (int t = 0; t < 32; ++t) {
            const int64_t i = t < 2 ? (t ? M - 1 : 0) : (int64_t(t) * 7919) % M;
            const int64_t j = t < 2 ? (t ? N - 1 : 0) : (int64_t(t) * 104729) % N;
            double acc = 0;
            for (int64_t k = 0; k < K; ++k)
                acc += bf16 ? f(a16[size_t(i * K + k)]) * f(b16[size_t(k * N + j)])
                            : double(a8[size_t(i * K + k)]) * double(b8[size_t(k * N + j)]);
            const double got = bf16 ? double(Cf[size_t(i * N + j)]) : double(Ci[size_t(i * N + j)]);
            if (got != acc) return false;
        }
        return true;
    }
};

void finish(benchmark::State &state, const lowp_data &d, bool bf16) {
    if (!d.check()) state.SkipWithError("wrong result");
    state.counters[bf16 ? "GFLOP/s" : "GOP/s"] = benchmark::Counter(
        2e-9 * double(d.M) * double(d.N) * double(d.K),
        benchmark::Counter::kIsIterationInvariantRate);
}

// oneDNN matmul: bf16 x bf16 -> f32 or u8 x s8 -> s32, row-major; weights
// plain or prepacked (reordered once, outside the timing).
void run_onednn_matmul(benchmark::State &state, bool bf16, bool prepacked) {
    anvil_gbench::setup_threads();
    lowp_data d(state.range(0), state.range(1), state.range(2), bf16);
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const dt a_t = bf16 ? dt::bf16 : dt::u8, b_t = bf16 ? dt::bf16 : dt::s8;
    const memory::desc src_md({d.M, d.K}, a_t, tag::ab);
    const memory::desc dst_md({d.M, d.N}, bf16 ? dt::f32 : dt::s32, tag::ab);
    const memory::desc user_w_md({d.K, d.N}, b_t, tag::ab);
    const memory::desc w_md = prepacked ? memory::desc({d.K, d.N}, b_t, tag::any) : user_w_md;
    const matmul::primitive_desc pd(matmul::desc(src_md, w_md, dst_md), eng);
    const matmul prim(pd);
    void *A = bf16 ? static_cast<void *>(d.a16.data()) : static_cast<void *>(d.a8.data());
    void *B = bf16 ? static_cast<void *>(d.b16.data()) : static_cast<void *>(d.b8.data());
    void *C = bf16 ? static_cast<void *>(d.Cf.data()) : static_cast<void *>(d.Ci.data());
    memory src(src_md, eng, A), dst(dst_md, eng, C), user_w(user_w_md, eng, B), w = user_w;
    if (prepacked) {
        w = memory(pd.weights_desc(), eng);
        reorder(user_w, w).execute(strm, user_w, w);
        strm.wait();
    }
    const std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
    state.SetLabel(pd.impl_info_str());
    for (auto _ : state) {
        prim.execute(strm, args);
        strm.wait();
    }
    finish(state, d, bf16);
}

void BM_anvil_bf16(benchmark::State &state) {
    anvil_gbench::setup_threads();
    lowp_data d(state.range(0), state.range(1), state.range(2), true);
    for (auto _ : state) {
        if (anvil_gemm_bf16bf16f32('N', 'N', d.M, d.N, d.K, 1.0f, d.a16.data(), d.K,
                                   d.b16.data(), d.N, 0.0f, d.Cf.data(), d.N) != anvil_success) {
            state.SkipWithError("anvil_gemm_bf16bf16f32 failed");
            return;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d, true);
}

void BM_dnnl_bf16_matmul(benchmark::State &state) { run_onednn_matmul(state, true, false); }
void BM_dnnl_bf16_matmul_prepacked(benchmark::State &state) {
    run_onednn_matmul(state, true, true);
}

void BM_anvil_u8s8s32(benchmark::State &state) {
    anvil_gbench::setup_threads();
    lowp_data d(state.range(0), state.range(1), state.range(2), false);
    const int32_t co = 0;
    for (auto _ : state) {
        if (anvil_gemm_u8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, d.a8.data(), d.K, 0,
                               d.b8.data(), d.N, 0, 0.0f, d.Ci.data(), d.N, &co) !=
            anvil_success) {
            state.SkipWithError("anvil_gemm_u8s8s32 failed");
            return;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d, false);
}

void BM_dnnl_gemm_u8s8s32(benchmark::State &state) {
    anvil_gbench::setup_threads();
    lowp_data d(state.range(0), state.range(1), state.range(2), false);
    const int32_t co = 0;
    for (auto _ : state) {
        dnnl_gemm_u8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, d.a8.data(), d.K, 0, d.b8.data(),
                          d.N, 0, 0.0f, d.Ci.data(), d.N, &co);
        benchmark::ClobberMemory();
    }
    finish(state, d, false);
}

void BM_dnnl_u8s8s32_matmul_prepacked(benchmark::State &state) {
    run_onednn_matmul(state, false, true);
}

}  // namespace

// Short minimum times keep the whole suite to a few minutes; the big shapes
// still run a handful of iterations.
#define ANVIL_LOWP_BENCH(fn) BENCHMARK(fn)->Apply(all_args)->UseRealTime()->MinTime(0.1)
ANVIL_LOWP_BENCH(BM_anvil_bf16);
ANVIL_LOWP_BENCH(BM_dnnl_bf16_matmul);
ANVIL_LOWP_BENCH(BM_dnnl_bf16_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_anvil_u8s8s32);
ANVIL_LOWP_BENCH(BM_dnnl_gemm_u8s8s32);
ANVIL_LOWP_BENCH(BM_dnnl_u8s8s32_matmul_prepacked);

BENCHMARK_MAIN();
