// Strided batches of GEMMs side by side (Google Benchmark): anvil's
// anvil_sgemm_batch_strided vs oneDNN's matmul primitive over the same 3-D
// tensors (plain memory; attention's operands change every call), on
// attention's per-head products.  Small-integer data, so every correct
// result is exact: the first and last items are checked afterwards.
//
//   ANVIL_BENCH_THREADS=2 ./bench_batch
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>
#include <vector>

#include "anvil/anvil.h"
#include "bench_common.h"

namespace {

// batch items of C (M x N) = A (M x K) op(B); B stored [K, N] ('N') or [N, K] ('T').
struct batch_data {
    int64_t batch, M, N, K;
    bool bt;
    std::vector<float> A, B, C;
    batch_data(int64_t b, int64_t m, int64_t n, int64_t k, bool t)
        : batch(b), M(m), N(n), K(k), bt(t), A(size_t(b * m * k)), B(size_t(b * k * n)),
          C(size_t(b * m * n)) {
        uint64_t s = uint64_t(b * 31 + m * 1315423911 + n * 2654435761u + k);
        auto next = [&s] {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            return float(int((s >> 33) % 7) - 3);
        };
        for (float &x : A) x = next();
        for (float &x : B) x = next();
    }
    float b_at(int64_t item, int64_t k, int64_t j) const {
        return B[size_t(item * K * N + (bt ? j * K + k : k * N + j))];
    }
    bool check() const {
        for (int64_t item : {int64_t(0), batch - 1})
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; ++k)
                        acc += double(A[size_t((item * M + i) * K + k)]) * b_at(item, k, j);
                    if (double(C[size_t((item * M + i) * N + j)]) != acc) return false;
                }
        return true;
    }
};

void attention_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"batch", "M", "N", "K", "transB"});
    // BERT-base at 128 tokens (12 heads, batch 1 and 8): scores Q K^T (NT),
    // context P V (NN); 40 tokens x 16 heads; a decode step against 512
    // cached tokens (32 heads of 128).
    for (int64_t items : {12, 96}) {
        b->Args({items, 128, 128, 64, 1});
        b->Args({items, 128, 64, 128, 0});
    }
    b->Args({16, 40, 40, 64, 1});
    b->Args({16, 40, 64, 40, 0});
    b->Args({32, 1, 512, 128, 1});
    b->Args({32, 1, 128, 512, 0});
}

batch_data make(const benchmark::State &state) {
    return batch_data(state.range(0), state.range(1), state.range(2), state.range(3),
                      state.range(4) != 0);
}

void finish(benchmark::State &state, const batch_data &d) {
    if (!d.check()) state.SkipWithError("wrong result");
    state.counters["GFLOP/s"] = benchmark::Counter(
        2e-9 * double(d.batch) * double(d.M) * double(d.N) * double(d.K),
        benchmark::Counter::kIsIterationInvariantRate);
}

void BM_anvil_sgemm_batch_strided(benchmark::State &state) {
    anvil_gbench::setup_threads();
    batch_data d = make(state);
    const int64_t ldb = d.bt ? d.K : d.N;
    for (auto _ : state) {
        if (anvil_sgemm_batch_strided('N', d.bt ? 'T' : 'N', d.M, d.N, d.K, 1.0f, d.A.data(),
                                      d.K, d.M * d.K, d.B.data(), ldb, d.K * d.N, 0.0f,
                                      d.C.data(), d.N, d.M * d.N, d.batch) != anvil_success) {
            state.SkipWithError("anvil_sgemm_batch_strided failed");
            break;
        }
        benchmark::ClobberMemory();
    }
    finish(state, d);
}

void BM_dnnl_matmul_batched(benchmark::State &state) {
    anvil_gbench::setup_threads();
    batch_data d = make(state);
    using namespace dnnl;
    using dims = memory::dims;
    const auto f32 = memory::data_type::f32;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const memory::desc a_md({d.batch, d.M, d.K}, f32, dims{d.M * d.K, d.K, 1});
    const memory::desc b_md({d.batch, d.K, d.N}, f32,
                            d.bt ? dims{d.K * d.N, 1, d.K} : dims{d.K * d.N, d.N, 1});
    const memory::desc c_md({d.batch, d.M, d.N}, f32, dims{d.M * d.N, d.N, 1});
    const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
    const matmul prim(pd);
    const std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(a_md, eng, d.A.data())},
        {DNNL_ARG_WEIGHTS, memory(b_md, eng, d.B.data())},
        {DNNL_ARG_DST, memory(c_md, eng, d.C.data())}};
    state.SetLabel(pd.impl_info_str());
    for (auto _ : state) {
        prim.execute(strm, args);
        strm.wait();
    }
    finish(state, d);
}

}  // namespace

BENCHMARK(BM_anvil_sgemm_batch_strided)->Apply(attention_args)->UseRealTime();
BENCHMARK(BM_dnnl_matmul_batched)->Apply(attention_args)->UseRealTime();

BENCHMARK_MAIN();
