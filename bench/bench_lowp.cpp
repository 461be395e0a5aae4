// Low-precision GEMM side by side (Google Benchmark), row-major NN:
//   BLAS-style   anvil_gemm_bf16bf16f32 | anvil_gemm_u8s8s32 |
//                anvil_gemm_s8s8s32 (alpha 1, beta 0, offsetc 'F', zero
//                offsets) vs oneDNN's bf16 matmul on plain weights |
//                dnnl_gemm_u8s8s32 | dnnl_gemm_s8s8s32
//   prepacked    anvil's matmul handle (weights packed once, outside the
//                loop) vs oneDNN's matmul primitive with its weights
//                reordered once (format_tag::any): bf16 x bf16 -> f32,
//                u8 x s8 -> s32, s8 x s8 -> s32
//   chain        the same two with the inference epilogue fused: bias +
//                gelu_tanh + residual add (an M x N f32 tensor) into bf16,
//                for bf16 and u8 x s8 inputs (int8 with a per-tensor
//                scale first)
// Shapes: squares 64..2048, the inference shapes M in {1, 4, 16, 64, 256} x
// (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008)} and the small odd
// shapes 16^3, 23x31x17, 32^3, 64^3, 1x1000x2048.  Counter: GFLOP/s (bf16)
// or GOP/s (int8), 2 M N K per call.  Every benchmark checks 32 points of
// its result afterwards: exactly for the plain products (small-integer
// bf16 data, exact int8 sums), within gelu_tanh's and bf16's rounding for
// the chains.
//
//   ./bench_lowp --benchmark_filter='/M:64/N:4096/K:4096/'
//   ./bench_lowp --benchmark_filter='chain'
//   ANVIL_BENCH_THREADS=2 taskset -c 0,1 ./bench_lowp --benchmark_filter=bf16
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "anvil/anvil.h"
#include "bench_common.h"

namespace {

enum class kind { bf16, u8s8, s8s8 };

struct shape {
    int64_t M, N, K;
};

void all_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"M", "N", "K"});
    for (int64_t n : {64, 128, 256, 512, 1024, 2048}) b->Args({n, n, n});
    const shape nk[] = {{0, 4096, 4096}, {0, 11008, 4096}, {0, 4096, 11008}};
    for (int64_t m : {1, 4, 16, 64, 256})
        for (const shape &x : nk) b->Args({m, x.N, x.K});
    const shape small[] = {{16, 16, 16}, {23, 31, 17}, {32, 32, 32}, {1, 1000, 2048}};
    for (const shape &x : small) b->Args({x.M, x.N, x.K});
}

uint64_t next(uint64_t &s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
}

float bf16_value(uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

double gelu_tanh(double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Operands of one shape: bf16 A / B hold small integers (|v| <= 3, exact in
// bf16 and in every fp32 partial sum); int8 A is u8 or s8 over its whole
// range, B s8.  The chain's operands: bias in [-20, 20], a residual M x N
// f32 tensor in [-9, 9], and for int8 a per-tensor scale of 2^-12.
struct lowp_data {
    kind k;
    int64_t M, N, K;
    std::vector<uint8_t> a8;
    std::vector<int8_t> b8;
    std::vector<uint16_t> a16, b16;
    std::vector<float> Cf, bias, residual;
    std::vector<int32_t> Ci;
    std::vector<uint16_t> Cb;  // the chain's bf16 output
    float scale = 1.0f;
    lowp_data(kind kd, int64_t m, int64_t n, int64_t kk, bool chain) : k(kd), M(m), N(n), K(kk) {
        uint64_t s = uint64_t(m * 1315423911 + n * 2654435761u + kk);
        static const float v[6] = {-3, -2, -1, 1, 2, 3};
        if (k == kind::bf16) {
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
            scale = 0x1p-12f;
        }
        if (chain) {
            bias.resize(size_t(N));
            residual.resize(size_t(M * N));
            for (float &x : bias) x = float(int(next(s) % 41) - 20);
            for (float &x : residual) x = float(int(next(s) % 19) - 9);
            Cb.assign(size_t(M * N), 0);
        }
    }
    const void *A() const { return k == kind::bf16 ? static_cast<const void *>(a16.data()) : a8.data(); }
    const void *B() const { return k == kind::bf16 ? static_cast<const void *>(b16.data()) : b8.data(); }
    void *C() {
        if (!Cb.empty()) return Cb.data();
        return k == kind::bf16 ? static_cast<void *>(Cf.data()) : static_cast<void *>(Ci.data());
    }
    double acc(int64_t i, int64_t j) const {
        double a = 0;
        for (int64_t q = 0; q < K; ++q) {
            if (k == kind::bf16)
                a += double(bf16_value(a16[size_t(i * K + q)])) * double(bf16_value(b16[size_t(q * N + j)]));
            else
                a += double(k == kind::s8s8 ? int8_t(a8[size_t(i * K + q)]) : a8[size_t(i * K + q)]) *
                     double(b8[size_t(q * N + j)]);
        }
        return a;
    }
    bool check() const {
        for (int t = 0; t < 32; ++t) {
            const int64_t i = t < 2 ? (t ? M - 1 : 0) : (int64_t(t) * 7919) % M;
            const int64_t j = t < 2 ? (t ? N - 1 : 0) : (int64_t(t) * 104729) % N;
            const double a = acc(i, j);
            if (Cb.empty()) {
                const double got = k == kind::bf16 ? double(Cf[size_t(i * N + j)]) : double(Ci[size_t(i * N + j)]);
                if (got != a) return false;
                continue;
            }
            // float(acc) * scale + bias, gelu_tanh, + residual, into bf16:
            // gelu within 1e-5 of its value (both libraries), then one bf16
            // rounding (2^-8 relative) of the sum.
            const double x = double(float(a) * scale) + bias[size_t(j)];
            const double y = gelu_tanh(x), z = y + residual[size_t(i * N + j)];
            const double got = bf16_value(Cb[size_t(i * N + j)]);
            if (!(std::fabs(got - z) <= 0x1p-8 * std::fabs(z) + 1e-5 * (1 + std::fabs(y)) + 1e-30)) return false;
        }
        return true;
    }
};

void finish(benchmark::State &state, const lowp_data &d) {
    if (!d.check()) state.SkipWithError("wrong result");
    state.counters[d.k == kind::bf16 ? "GFLOP/s" : "GOP/s"] = benchmark::Counter(
        2e-9 * double(d.M) * double(d.N) * double(d.K), benchmark::Counter::kIsIterationInvariantRate);
}

// oneDNN matmul: bf16 x bf16 -> f32, u8 / s8 x s8 -> s32 (with the chain:
// -> bf16 with scale, bias, gelu_tanh, residual add), row-major; weights
// plain or prepacked (reordered once, outside the timing).
void run_onednn_matmul(benchmark::State &state, kind k, bool prepacked, bool chain) {
    anvil_gbench::setup_threads();
    lowp_data d(k, state.range(0), state.range(1), state.range(2), chain);
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const dt a_t = k == kind::bf16 ? dt::bf16 : k == kind::u8s8 ? dt::u8 : dt::s8;
    const dt b_t = k == kind::bf16 ? dt::bf16 : dt::s8;
    const dt c_t = chain ? dt::bf16 : k == kind::bf16 ? dt::f32 : dt::s32;
    const memory::desc src_md({d.M, d.K}, a_t, tag::ab);
    const memory::desc dst_md({d.M, d.N}, c_t, tag::ab);
    const memory::desc user_w_md({d.K, d.N}, b_t, tag::ab);
    const memory::desc w_md = prepacked ? memory::desc({d.K, d.N}, b_t, tag::any) : user_w_md;
    const memory::desc bias_md({1, d.N}, dt::f32, tag::ab);
    const memory::desc res_md({d.M, d.N}, dt::f32, tag::ab);
    primitive_attr attr;
    std::vector<float> dbias = d.bias;  // oneDNN 2.6 adds bias before the output scale
    if (chain) {
        if (d.scale != 1.0f) {
            attr.set_output_scales(0, {d.scale});
            for (float &b : dbias) b /= d.scale;
        }
        post_ops po;
        po.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
        po.append_binary(algorithm::binary_add, res_md);
        attr.set_post_ops(po);
    }
    const matmul::primitive_desc pd =
        chain ? matmul::primitive_desc(matmul::desc(src_md, w_md, bias_md, dst_md), attr, eng)
              : matmul::primitive_desc(matmul::desc(src_md, w_md, dst_md), eng);
    const matmul prim(pd);
    memory src(src_md, eng, const_cast<void *>(d.A())), dst(dst_md, eng, d.C());
    memory user_w(user_w_md, eng, const_cast<void *>(d.B())), w = user_w;
    if (prepacked) {
        w = memory(pd.weights_desc(), eng);
        reorder(user_w, w).execute(strm, user_w, w);
        strm.wait();
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
    if (chain) {
        args.insert({DNNL_ARG_BIAS, memory(bias_md, eng, dbias.data())});
        args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                     memory(res_md, eng, d.residual.data())});
    }
    state.SetLabel(pd.impl_info_str());
    for (auto _ : state) {
        prim.execute(strm, args);
        strm.wait();
    }
    finish(state, d);
}

// anvil's matmul handle, weights packed once outside the loop (with the
// chain: scale, bias, gelu_tanh, residual add into bf16).
void run_anvil_matmul(benchmark::State &state, kind k, bool chain) {
    anvil_gbench::setup_threads();
    lowp_data d(k, state.range(0), state.range(1), state.range(2), chain);
    anvil_matmul_desc_t desc{};
    desc.a_dt = k == kind::bf16 ? anvil_dt_bf16 : k == kind::u8s8 ? anvil_dt_u8 : anvil_dt_s8;
    desc.b_dt = k == kind::bf16 ? anvil_dt_bf16 : anvil_dt_s8;
    desc.c_dt = chain ? anvil_dt_bf16 : k == kind::bf16 ? anvil_dt_f32 : anvil_dt_s32;
    desc.transa = desc.transb = 'N';
    desc.M = d.M;
    desc.N = d.N;
    desc.K = d.K;
    desc.lda = d.K;
    desc.ldb = d.N;
    desc.ldc = d.N;
    anvil_post_op_t ops[2] = {};
    if (chain) {
        if (d.scale != 1.0f) desc.scales = &d.scale;
        desc.bias = d.bias.data();
        ops[0].kind = anvil_post_op_eltwise;
        ops[0].alg = anvil_eltwise_gelu_tanh;
        ops[1].kind = anvil_post_op_binary;
        ops[1].alg = anvil_binary_add;
        ops[1].src_dt = anvil_dt_f32;
        ops[1].ld = d.N;
        desc.num_post_ops = 2;
        desc.post_ops = ops;
    }
    anvil_matmul_t h = nullptr;
    size_t bytes = 0;
    if (anvil_matmul_create(&h, &desc) != anvil_success ||
        anvil_matmul_packed_weights_size(h, &bytes) != anvil_success) {
        state.SkipWithError("anvil_matmul_create failed");
        return;
    }
    std::vector<uint8_t> packed(bytes + 64);
    void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    const void *bins[1] = {d.residual.data()};
    if (anvil_matmul_pack_weights(h, d.B(), pk) != anvil_success) {
        state.SkipWithError("anvil_matmul_pack_weights failed");
        anvil_matmul_destroy(h);
        return;
    }
    for (auto _ : state) {
        if (anvil_matmul_execute(h, d.A(), pk, d.C(), chain ? bins : nullptr) != anvil_success) {
            state.SkipWithError("anvil_matmul_execute failed");
            break;
        }
        benchmark::ClobberMemory();
    }
    anvil_matmul_destroy(h);
    finish(state, d);
}

void BM_anvil_bf16(benchmark::State &state) {
    anvil_gbench::setup_threads();
    lowp_data d(kind::bf16, state.range(0), state.range(1), state.range(2), false);
    for (auto _ : state) {
        if (anvil_gemm_bf16bf16f32('N', 'N', d.M, d.N, d.K, 1.0f, d.a16.data(), d.K, d.b16.data(), d.N, 0.0f,
                                   d.Cf.data(), d.N) != anvil_success) {
            state.SkipWithError("anvil_gemm_bf16bf16f32 failed");
            return;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

// The BLAS-style int8 calls of both libraries (a_signed: s8s8s32).
void run_blas_int8(benchmark::State &state, bool anvil, bool a_signed) {
    anvil_gbench::setup_threads();
    lowp_data d(a_signed ? kind::s8s8 : kind::u8s8, state.range(0), state.range(1), state.range(2), false);
    const int32_t co = 0;
    const auto *sa = reinterpret_cast<const int8_t *>(d.a8.data());
    for (auto _ : state) {
        anvil_status_t st = anvil_success;
        if (anvil && a_signed)
            st = anvil_gemm_s8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, sa, d.K, 0, d.b8.data(), d.N, 0, 0.0f,
                                    d.Ci.data(), d.N, &co);
        else if (anvil)
            st = anvil_gemm_u8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, d.a8.data(), d.K, 0, d.b8.data(), d.N, 0,
                                    0.0f, d.Ci.data(), d.N, &co);
        else if (a_signed)
            dnnl_gemm_s8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, sa, d.K, 0, d.b8.data(), d.N, 0, 0.0f,
                              d.Ci.data(), d.N, &co);
        else
            dnnl_gemm_u8s8s32('N', 'N', 'F', d.M, d.N, d.K, 1.0f, d.a8.data(), d.K, 0, d.b8.data(), d.N, 0, 0.0f,
                              d.Ci.data(), d.N, &co);
        if (st != anvil_success) {
            state.SkipWithError("anvil's int8 GEMM failed");
            return;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

void BM_dnnl_bf16_matmul(benchmark::State &state) { run_onednn_matmul(state, kind::bf16, false, false); }
void BM_anvil_bf16_matmul_prepacked(benchmark::State &state) { run_anvil_matmul(state, kind::bf16, false); }
void BM_dnnl_bf16_matmul_prepacked(benchmark::State &state) { run_onednn_matmul(state, kind::bf16, true, false); }
void BM_anvil_bf16_chain_prepacked(benchmark::State &state) { run_anvil_matmul(state, kind::bf16, true); }
void BM_dnnl_bf16_chain_prepacked(benchmark::State &state) { run_onednn_matmul(state, kind::bf16, true, true); }

void BM_anvil_u8s8s32(benchmark::State &state) { run_blas_int8(state, true, false); }
void BM_dnnl_gemm_u8s8s32(benchmark::State &state) { run_blas_int8(state, false, false); }
void BM_anvil_u8s8s32_matmul_prepacked(benchmark::State &state) { run_anvil_matmul(state, kind::u8s8, false); }
void BM_dnnl_u8s8s32_matmul_prepacked(benchmark::State &state) { run_onednn_matmul(state, kind::u8s8, true, false); }
void BM_anvil_u8s8_chain_prepacked(benchmark::State &state) { run_anvil_matmul(state, kind::u8s8, true); }
void BM_dnnl_u8s8_chain_prepacked(benchmark::State &state) { run_onednn_matmul(state, kind::u8s8, true, true); }

void BM_anvil_s8s8s32(benchmark::State &state) { run_blas_int8(state, true, true); }
void BM_dnnl_gemm_s8s8s32(benchmark::State &state) { run_blas_int8(state, false, true); }
void BM_anvil_s8s8s32_matmul_prepacked(benchmark::State &state) { run_anvil_matmul(state, kind::s8s8, false); }
void BM_dnnl_s8s8s32_matmul_prepacked(benchmark::State &state) { run_onednn_matmul(state, kind::s8s8, true, false); }

}  // namespace

// Short minimum times keep the whole suite to a few minutes; the big shapes
// still run a handful of iterations.
#define ANVIL_LOWP_BENCH(fn) BENCHMARK(fn)->Apply(all_args)->UseRealTime()->MinTime(0.1)
ANVIL_LOWP_BENCH(BM_anvil_bf16);
ANVIL_LOWP_BENCH(BM_dnnl_bf16_matmul);
ANVIL_LOWP_BENCH(BM_anvil_bf16_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_dnnl_bf16_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_anvil_bf16_chain_prepacked);
ANVIL_LOWP_BENCH(BM_dnnl_bf16_chain_prepacked);
ANVIL_LOWP_BENCH(BM_anvil_u8s8s32);
ANVIL_LOWP_BENCH(BM_dnnl_gemm_u8s8s32);
ANVIL_LOWP_BENCH(BM_anvil_u8s8s32_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_dnnl_u8s8s32_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_anvil_u8s8_chain_prepacked);
ANVIL_LOWP_BENCH(BM_dnnl_u8s8_chain_prepacked);
ANVIL_LOWP_BENCH(BM_anvil_s8s8s32);
ANVIL_LOWP_BENCH(BM_dnnl_gemm_s8s8s32);
ANVIL_LOWP_BENCH(BM_anvil_s8s8s32_matmul_prepacked);
ANVIL_LOWP_BENCH(BM_dnnl_s8s8s32_matmul_prepacked);

BENCHMARK_MAIN();
