// JIT generation time and per-call overhead (Google Benchmark).
//
//   BM_jit_first_call/M/N/K   clear the kernel cache, time one first call of
//                             the shape and subtract a cached call of it
//                             (manual time); counters from the cache stats:
//                             kernels generated and generation time per call.
//   BM_cached_call/...        a cached anvil_sgemm call of a tiny shape: the
//                             per-call overhead (16^3 is ~8 kFLOP).
//   BM_planned_call/...       the same through a planned handle.
//   BM_dnnl_sgemm_call/...    dnnl_sgemm on the same shape, for scale.
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>

#include "anvil/anvil.h"
#include "bench_common.h"

using anvil_gbench::gemm_data;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

bool call(gemm_data &d) {
    return anvil_sgemm('N', 'N', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, d.B.data(), d.N, 0.0f,
                       d.C.data(), d.N) == anvil_success;
}

void BM_jit_first_call(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    anvil_cache_stats_t s0{}, s1{};
    anvil_get_kernel_cache_stats(&s0);
    for (auto _ : state) {
        anvil_clear_kernel_cache();
        const double t0 = now();
        const bool ok = call(d);
        const double t1 = now();
        call(d);  // cached
        const double t2 = now();
        if (!ok) {
            state.SkipWithError("anvil_sgemm failed");
            break;
        }
        state.SetIterationTime(std::max(0.0, (t1 - t0) - (t2 - t1)));
    }
    anvil_get_kernel_cache_stats(&s1);
    const double iters = double(state.iterations());
    state.counters["kernels_per_call"] = double(s1.misses - s0.misses) / iters;
    state.counters["generation_us"] = (s1.generation_seconds - s0.generation_seconds) / iters * 1e6;
    if (!d.check()) state.SkipWithError("wrong result");
}
BENCHMARK(BM_jit_first_call)
    ->ArgNames({"M", "N", "K"})
    ->Args({16, 16, 16})
    ->Args({23, 31, 17})
    ->Args({64, 64, 64})
    ->Args({1, 1000, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_cached_call(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    call(d);
    for (auto _ : state) {
        call(d);
        benchmark::ClobberMemory();
    }
    anvil_gbench::set_gflops(state, d.M, d.N, d.K);
    if (!d.check()) state.SkipWithError("wrong result");
}
BENCHMARK(BM_cached_call)->ArgNames({"M", "N", "K"})->Args({1, 1, 1})->Args({16, 16, 16})
    ->Unit(benchmark::kNanosecond);

void BM_planned_call(benchmark::State &state) {
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
    anvil_gbench::set_gflops(state, d.M, d.N, d.K);
    if (!d.check()) state.SkipWithError("wrong result");
}
BENCHMARK(BM_planned_call)->ArgNames({"M", "N", "K"})->Args({16, 16, 16})
    ->Unit(benchmark::kNanosecond);

void BM_dnnl_sgemm_call(benchmark::State &state) {
    anvil_gbench::setup_threads();
    gemm_data d(state.range(0), state.range(1), state.range(2));
    for (auto _ : state) {
        dnnl_sgemm('N', 'N', d.M, d.N, d.K, 1.0f, d.A.data(), d.K, d.B.data(), d.N, 0.0f,
                   d.C.data(), d.N);
        benchmark::ClobberMemory();
    }
    anvil_gbench::set_gflops(state, d.M, d.N, d.K);
    if (!d.check()) state.SkipWithError("wrong result");
}
BENCHMARK(BM_dnnl_sgemm_call)->ArgNames({"M", "N", "K"})->Args({16, 16, 16})
    ->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
