// fp32 GEMM side by side (Google Benchmark): anvil_sgemm, anvil's planned
// handle (B packed outside the loop), dnnl_sgemm, oneDNN's matmul primitive
// with prepacked weights (format_tag::any, reordered once), and, for small
// shapes, libxsmm's dispatched JIT kernel.  Row-major C (M x N) = A (M x K) *
// B (K x N), alpha 1, beta 0; the _nt pairs store B as [N, K] (transb 'T').
// Every benchmark checks its result afterwards.
//
//   ./bench_sgemm --benchmark_filter='/64/64/64$'
//   ANVIL_BENCH_THREADS=2 taskset -c 0,1 ./bench_sgemm
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>
#include <vector>

#include "anvil/anvil.h"
#include "bench_common.h"
#ifdef ANVIL_BENCH_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

using anvil_gbench::gemm_data;

namespace {

struct shape {
    int64_t M, N, K;
};

const std::vector<shape> &all_shapes() {
    static const std::vector<shape> s = [] {
        std::vector<shape> v;
        for (int64_t n : {64, 128, 256, 512, 1024, 2048}) v.push_back({n, n, n});
        const shape nk[] = {{0, 4096, 4096}, {0, 11008, 4096}, {0, 4096, 11008}};
        for (int64_t m : {1, 4, 16, 64, 256})
            for (const shape &x : nk) v.push_back({m, x.N, x.K});
        for (const shape &x : std::vector<shape>{{8, 8, 8}, {16, 16, 16}, {23, 31, 17},
                                                 {32, 32, 32}, {17, 33, 65}, {48, 48, 48},
                                                 {4, 4, 4}, {5, 7, 9}, {13, 27, 3},
                                                 {40, 40, 40}, {10, 33, 77}, {16, 64, 64},
                                                 {64, 16, 64}, {1, 1000, 2048}})
            v.push_back(x);
        return v;
    }();
    return s;
}

// libxsmm is not cache-blocked; it runs the shapes it was made for.
bool is_small(const shape &s) { return s.M * s.N * s.K <= 256 * 256 * 256 || (s.M == 1 && s.N <= 1000);
}

void all_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"M", "N", "K"});
    for (const shape &s : all_shapes()) b->Args({s.M, s.N, s.K});
}
void small_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"M", "N", "K"});
    for (const shape &s : all_shapes())
        if (is_small(s)) b->Args({s.M, s.N, s.K});
}

void finish(benchmark::State &state, const gemm_data &d) {
    if (!d.check()) state.SkipWithError("wrong result");
    anvil_gbench::set_gflops(state, d.M, d.N, d.K);
}

void BM_anvil_sgemm(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    for (auto _ : state) {
        if (anvil_sgemm('N', 'N', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, d.B.data(), d.N, 0.0f,
                        d.C.data(), d.N) != anvil_success) {
            state.SkipWithError("anvil_sgemm failed");
            break;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

void BM_anvil_planned(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    anvil_gemm_plan_t plan = nullptr;
    if (anvil_gemm_plan_create(&plan, 'N', 'N', d.M, d.N, d.K, d.K, d.N, d.N) != anvil_success ||
        anvil_gemm_plan_pack_b_owned(plan, d.B.data()) != anvil_success) {
        state.SkipWithError("anvil plan failed");
        if (plan) anvil_gemm_plan_destroy(plan);
        return;
    }
    for (auto _ : state) {
        anvil_gemm_plan_execute(plan, 1.0f, d.A.data(), nullptr, 0.0f, d.C.data());
        benchmark::ClobberMemory();
    }
    anvil_gemm_plan_destroy(plan);
    finish(state, d);
}

// The dispatched small GEMM: anvil_smm_create once (outside the loop), then
// the function it hands out called directly -- LIBXSMM's usage pattern, so
// BM_libxsmm is its peer.  Without a direct kernel (N > 64 here), execute.
void BM_anvil_smm(benchmark::State &state) {
    gemm_data d(state.range(0), state.range(1), state.range(2));
    anvil_smm_t h = nullptr;
    if (anvil_smm_create(&h, 'N', 'N', d.M, d.N, d.K, 1.0f, d.K, d.N, 0.0f, d.N) != anvil_success) {
        state.SkipWithError("anvil_smm_create failed");
        return;
    }
    const anvil_smm_fn fn = anvil_smm_get_function(h);
    state.SetLabel(fn ? "function" : "execute");
    for (auto _ : state) {
        if (fn)
            fn(d.A.data(), d.B.data(), d.C.data());
        else
            anvil_smm_execute(h, d.A.data(), d.B.data(), d.C.data());
        benchmark::ClobberMemory();
    }
    anvil_smm_destroy(h);
    finish(state, d);
}

void BM_dnnl_sgemm(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    for (auto _ : state) {
        dnnl_sgemm('N', 'N', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, d.B.data(), d.N, 0.0f,
                   d.C.data(), d.N);
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

void BM_dnnl_matmul_prepacked(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    using namespace dnnl;
    using tag = memory::format_tag;
    const auto f32 = memory::data_type::f32;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const memory::desc src_md({d.M, d.K}, f32, tag::ab), dst_md({d.M, d.N}, f32, tag::ab);
    const memory::desc user_w_md({d.K, d.N}, f32, tag::ab), any_w_md({d.K, d.N}, f32, tag::any);
    const matmul::primitive_desc pd(matmul::desc(src_md, any_w_md, dst_md), eng);
    const matmul prim(pd);
    memory src(src_md, eng, d.A.data()), dst(dst_md, eng, d.C.data());
    memory user_w(user_w_md, eng, d.B.data()), w(pd.weights_desc(), eng);
    reorder(user_w, w).execute(strm, user_w, w);
    strm.wait();
    const std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
    state.SetLabel(pd.impl_info_str());
    for (auto _ : state) {
        prim.execute(strm, args);
        strm.wait();
    }
    finish(state, d);
}

// y = x W^T with W stored [N, K] (PyTorch's Linear layout), B not prepacked:
// transb 'T' on the inference shapes (anvil's dot path for small M).  B^T
// holds the same values, so the NN check applies.
void nt_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"M", "N", "K"});
    for (const shape &s : all_shapes())
        if (s.M <= 64 && s.N >= 4096) b->Args({s.M, s.N, s.K});
}

std::vector<float> transposed_b(const gemm_data &d) {
    std::vector<float> bt(d.B.size());
    for (int64_t k = 0; k < d.K; ++k)
        for (int64_t j = 0; j < d.N; ++j) bt[size_t(j * d.K + k)] = d.B[size_t(k * d.N + j)];
    return bt;
}

void BM_anvil_sgemm_nt(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    const std::vector<float> bt = transposed_b(d);
    for (auto _ : state) {
        if (anvil_sgemm('N', 'T', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, bt.data(), d.K, 0.0f,
                        d.C.data(), d.N) != anvil_success) {
            state.SkipWithError("anvil_sgemm failed");
            break;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

void BM_dnnl_sgemm_nt(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    const std::vector<float> bt = transposed_b(d);
    for (auto _ : state) {
        dnnl_sgemm('N', 'T', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, bt.data(), d.K, 0.0f,
                   d.C.data(), d.N);
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

#ifdef ANVIL_BENCH_HAVE_LIBXSMM
void BM_libxsmm(benchmark::State &state) {
    static const bool init = [] {
        libxsmm_init();
        return true;
    }();
    (void)init;
    gemm_data d(state.range(0), state.range(1), state.range(2));
    // libxsmm is column-major: row-major C = A B is column-major C^T = B^T A^T,
    // i.e. m' = N, n' = M, k' = K with a' = B (ld N), b' = A (ld K), c' = C (ld N).
    const libxsmm_blasint m = libxsmm_blasint(d.N), n = libxsmm_blasint(d.M),
                          k = libxsmm_blasint(d.K);
    const libxsmm_blasint lda = m, ldb = k, ldc = m;
    const float alpha = 1.0f, beta = 0.0f;
    const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
    const libxsmm_smmfunction kernel =
        libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
    if (!kernel) {
        state.SkipWithError("libxsmm_smmdispatch returned NULL");
        return;
    }
    state.SetLabel(libxsmm_get_target_arch());
    for (auto _ : state) {
        kernel(d.B.data(), d.A.data(), d.C.data());
        benchmark::ClobberMemory();
    }
    finish(state, d);
}
BENCHMARK(BM_libxsmm)->Apply(small_args);
#endif

}  // namespace

BENCHMARK(BM_anvil_sgemm)->Apply(all_args)->UseRealTime();
BENCHMARK(BM_dnnl_sgemm)->Apply(all_args)->UseRealTime();
BENCHMARK(BM_anvil_planned)->Apply(all_args)->UseRealTime();
BENCHMARK(BM_anvil_smm)->Apply(small_args)->UseRealTime();
BENCHMARK(BM_dnnl_matmul_prepacked)->Apply(all_args)->UseRealTime();
BENCHMARK(BM_anvil_sgemm_nt)->Apply(nt_args)->UseRealTime();
BENCHMARK(BM_dnnl_sgemm_nt)->Apply(nt_args)->UseRealTime();

BENCHMARK_MAIN();
