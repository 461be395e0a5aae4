// The row-stream path of anvil_sgemm: M <= kStreamMaxRows with a row-major B read in
// place (transb 'N', not prepacked), on the Highway tiers (and on the JIT
// tiers where cpu_info::jit_row_stream, with the best Highway target's
// kernel: Zen 4 measured 0.57x -> 1.18x dnnl_sgemm at 1x4096x4096).  The blocked
// path reads B there in kc x (up to 112) column strips, short runs at a
// large stride that the hardware prefetchers follow badly (AVX2, Zen 1,
// 1x4096x4096 NN: 11 GB/s, 0.60x dnnl_sgemm).  Here the kernels walk whole
// rows of B (four at a time) across a column chunk whose accumulators stay
// in L1, so B streams sequentially.  It also serves A transposed with
// N <= kStreamMaxCols (tall-skinny C): C^T = op(B)^T A, N rows over M
// columns, A as stored streaming once per group of up to 8 rows (AVX2,
// 4096x1x4096 TN: the blocked path reached 0.05x dnnl_sgemm, 4096x8x4096
// TT 0.26x).
//
// Arithmetic: the ukernel contract's with one K block, (acc = 0, then
// acc = fma(A(i,k), B(k,j), acc) for increasing k, then the contract's
// epilogue), so integer data are exact and real data within gamma_K; the
// blocked path's K blocks round differently (not bit-identical to it).
#pragma once
#include <cstdint>

#include "anvil/anvil.h"

namespace anvil::gemm {

struct sgemm_problem;

struct stream_args {
    const float *a;
    int64_t a_rs, a_cs;  // A(i, k) = a[i * a_rs + k * a_cs]
    const float *b;
    int64_t ldb;         // B(k, j) = b[k * ldb + j]
    float *c;
    int64_t ldc;
    int64_t m, n, k;
    float alpha, beta;
};
using stream_fn = void (*)(const stream_args *);

constexpr int64_t kStreamMaxRows = 2;
constexpr int64_t kStreamMinCols = 256;
// Narrower B (N >= kStreamMinColsLargeB) streams too once it exceeds a
// 512 KiB L2 by half (AVX2, Zen 1, 1 thread: 1x100x4096 0.70x -> 1.06x
// dnnl_sgemm, 1x255x1000 0.67x -> 0.96x, 2x100x4096 0.85x -> 1.33x).
// Below 64 columns the accumulators' load-store chain per four rows of B
// is slower than the blocked path (2x16x4096: 0.68x vs 1.01x).
constexpr int64_t kStreamMinColsLargeB = 64;
constexpr int64_t kStreamMinBFloats = int64_t(1) << 18;
// The transposed (tall-skinny) form: N <= kStreamMaxCols, or up to
// kStreamMaxColsLargeA when A exceeds kStreamMinBFloats (the blocked path
// then packs a large A for few columns: AVX2, Zen 1, 1 thread, 4096x12x4096
// TN 0.51x -> 1.22x dnnl_sgemm, 1024x12x512 0.72x -> 1.58x, 4096x16x1024
// 0.33x -> 0.69x; 256x16x256 stays blocked: 1.03x vs 0.62x).
constexpr int64_t kStreamMaxCols = 8;
constexpr int64_t kStreamMaxColsLargeA = 16;

// The row-stream kernel of the best Highway target the tier allows; null
// for the scalar tier, and for the JIT tiers unless cpu_info::jit_row_stream
// (elsewhere the JIT's in-place kernels serve there).
stream_fn stream_kernel(anvil_isa_t tier);
bool stream_path_applies(const sgemm_problem &p, anvil_isa_t tier);
// Runs p (stream_path_applies(p), K > 0, alpha != 0), threaded over column
// ranges of C.
void run_stream_gemm(const sgemm_problem &p, stream_fn fn);

}  // namespace anvil::gemm
