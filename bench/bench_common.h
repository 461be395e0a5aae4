// Shared helpers for the Google Benchmark suites: data, thread setup, a
// sampled check against double precision, the GFLOP/s counter.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace anvil_gbench {

// Threads for every library: ANVIL_BENCH_THREADS, else 1.  Applied once.
int setup_threads();

struct gemm_data {
    int64_t M, N, K;
    std::vector<float> A, B, C;
    gemm_data(int64_t m, int64_t n, int64_t k);
    // Checks ~32 points of C (row-major, NN, alpha 1, beta 0) exactly: the
    // data are small integers, so any correct fp32 kernel is exact.
    bool check() const;
};

void set_gflops(benchmark::State &state, int64_t M, int64_t N, int64_t K);

}  // namespace anvil_gbench
