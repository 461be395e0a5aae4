#include "bench_common.h"

#include <cstdlib>
#include <mutex>

#include "anvil/anvil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace anvil_gbench {

int setup_threads() {
    static int threads = [] {
        const char *e = std::getenv("ANVIL_BENCH_THREADS");
        int n = e ? std::atoi(e) : 1;
        if (n < 1) n = 1;
        anvil_set_num_threads(n);
#ifdef _OPENMP
        omp_set_num_threads(n);
#endif
        benchmark::AddCustomContext("threads (anvil, oneDNN)", std::to_string(n));
        return n;
    }();
    return threads;
}

gemm_data::gemm_data(int64_t m, int64_t n, int64_t k)
    : M(m), N(n), K(k), A(size_t(m * k)), B(size_t(k * n)), C(size_t(m * n)) {
    // Non-zero integers in [-3, 3]: every sum is exact in fp32 for K < 2^20.
    uint64_t s = uint64_t(m * 1315423911 + n * 2654435761u + k);
    auto next = [&s] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return int((s >> 33) % 6);
    };
    static const float v[6] = {-3, -2, -1, 1, 2, 3};
    for (float &x : A) x = v[next()];
    for (float &x : B) x = v[next()];
}

bool gemm_data::check() const {
    for (int t = 0; t < 32; ++t) {
        const int64_t i = t < 2 ? (t ? M - 1 : 0) : (int64_t(t) * 7919) % M;
        const int64_t j = t < 2 ? (t ? N - 1 : 0) : (int64_t(t) * 104729) % N;
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(A[size_t(i * K + k)]) * B[size_t(k * N + j)];
        if (double(C[size_t(i * N + j)]) != acc) return false;
    }
    return true;
}

void set_gflops(benchmark::State &state, int64_t M, int64_t N, int64_t K) {
    state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(M) * double(N) * double(K),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace anvil_gbench
