// The Highway fp32 kernels against the JIT (Google Benchmark), on the
// inference shapes: M in {1, 4, 16, 64, 256} x (N, K) in {(4096, 4096),
// (11008, 4096), (4096, 11008)}, row-major NN, alpha 1, beta 0.
//
// Each shape runs through the internal driver (gemm::run_sgemm, the code
// behind anvil_sgemm) with an explicit backend, whatever ANVIL_MAX_ISA says:
//   jit    the JIT AVX-512 backend (what anvil_sgemm uses from avx512_core up)
//   avx3   the Highway backend's AVX-512 target (HWY_AVX3); no ISA cap
//          selects it, anvil_sgemm never runs it on x86
//   avx2   the Highway backend's AVX2 target (what ANVIL_MAX_ISA=avx2 runs)
// BM_sgemm is the anvil_sgemm path (B read in place or packed per call);
// BM_planned packs B once outside the loop (the planned handle's path).
// Counters: GFLOP/s (wall time), vs_jit = this backend's GFLOP/s / the
// JIT's on the same shape and path (the median of the JIT runs made earlier
// in this process; absent when the JIT run was filtered out, or ran later
// under --benchmark_enable_random_interleaving), and vs_jit_cpu, the same
// from process CPU time: on a shared machine, where the wall time includes
// the time other jobs held the core, it is the steadier of the two (with
// ANVIL_BENCH_THREADS > 1 it compares total CPU work instead of speed).
//
//   taskset -c 1 ./bench_highway                                   # ~1 min
//   taskset -c 1 ./bench_highway --benchmark_filter='BM_sgemm/.*/M:1/'
//   taskset -c 1 ./bench_highway --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
// Not part of ctest (timings are not tests).  docs/highway.md has results.
#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "anvil/anvil.h"
#include "bench_common.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "gemm/driver.h"
#include "gemm/pack.h"

using anvil_gbench::gemm_data;

namespace {

enum which { kJit = 0, kAvx3 = 1, kAvx2 = 2 };
const char *const kWhichName[] = {"jit", "hwy_avx3", "hwy_avx2"};

const anvil::gemm::backend *backend_of(int w) {
    const int64_t supported = hwy::SupportedTargets();
    switch (w) {
        case kJit:
            return anvil::gemm::jit_avx512_backend();
        case kAvx3:
            // The AVX-512 target alone (the avx512_core tier permits it).
            return (supported & HWY_AVX3) ? anvil::fallback::highway_backend_for(
                                                supported & HWY_AVX3, anvil_isa_avx512_core)
                                          : nullptr;
        case kAvx2:
            return (supported & HWY_AVX2) ? anvil::fallback::highway_backend_for(
                                                supported & HWY_AVX2, anvil_isa_avx2)
                                          : nullptr;
    }
    return nullptr;
}

// GFLOP/s (wall, CPU) of the JIT runs so far, per (planned, M, N, K).
std::map<std::tuple<bool, int64_t, int64_t, int64_t>, std::vector<double>> g_jit, g_jit_cpu;

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void run(benchmark::State &state, int w, bool planned) {
    anvil_gbench::setup_threads();
    const anvil::gemm::backend *be = backend_of(w);
    if (!be) {
        state.SkipWithError("backend not available on this CPU/build");
        return;
    }
    gemm_data d(state.range(0), state.range(1), state.range(2));
    anvil::gemm::sgemm_problem p;
    p.M = d.M;
    p.N = d.N;
    p.K = d.K;
    p.A = d.A.data();
    p.lda = d.K;
    p.B = d.B.data();
    p.ldb = d.N;
    p.C = d.C.data();
    p.ldc = d.N;
    float *packed_aligned = nullptr;
    void *packed_mem = nullptr;
    if (planned) {
        // Full-depth panels of the backend's width (driver.h), 64-byte aligned.
        const int nr = be->nr();
        const int64_t floats = (d.N + nr - 1) / nr * nr * d.K;
        packed_mem = std::aligned_alloc(64, size_t(floats * 4 + 63) / 64 * 64);
        if (!packed_mem) {
            state.SkipWithError("out of memory");
            return;
        }
        packed_aligned = static_cast<float *>(packed_mem);
        anvil::gemm::pack_b_panels(d.B.data(), d.N, false, 0, d.K, 0, d.N, nr, packed_aligned);
        p.packed_b = packed_aligned;
    }
    state.SetLabel(be->name());
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_seconds();
    for (auto _ : state) {
        if (anvil::gemm::run_sgemm(*be, p) != anvil_success) {
            state.SkipWithError("run_sgemm failed");
            break;
        }
        benchmark::ClobberMemory();
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu_secs = process_cpu_seconds() - c0;
    std::free(packed_mem);
    if (!d.check()) state.SkipWithError("wrong result");
    anvil_gbench::set_gflops(state, d.M, d.N, d.K);
    if (secs <= 0 || cpu_secs <= 0 || state.iterations() == 0) return;
    const double gflop = 2e-9 * double(d.M) * double(d.N) * double(d.K) * double(state.iterations());
    const auto key = std::make_tuple(planned, d.M, d.N, d.K);
    if (w == kJit) {
        g_jit[key].push_back(gflop / secs);
        g_jit_cpu[key].push_back(gflop / cpu_secs);
    } else {
        auto it = g_jit.find(key);
        if (it != g_jit.end() && !it->second.empty()) {
            state.counters["vs_jit"] = gflop / secs / median(it->second);
            state.counters["vs_jit_cpu"] = gflop / cpu_secs / median(g_jit_cpu[key]);
        }
    }
}

void register_all() {
    const int64_t nk[3][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
    for (bool planned : {false, true})
        for (int64_t m : {1, 4, 16, 64, 256})
            for (const auto &x : nk)
                for (int w : {kJit, kAvx3, kAvx2}) {
                    const std::string name =
                        std::string(planned ? "BM_planned/" : "BM_sgemm/") + kWhichName[w];
                    benchmark::RegisterBenchmark(name.c_str(),
                                                 [w, planned](benchmark::State &s) {
                                                     run(s, w, planned);
                                                 })
                        ->ArgNames({"M", "N", "K"})
                        ->Args({m, x[0], x[1]})
                        ->MinTime(0.1)
                        ->UseRealTime();
                }
}

}  // namespace

int main(int argc, char **argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
