// The small-M dot path of anvil_sgemm: calls whose rows of A and columns of
// B both run contiguously along K, i.e. transa = 'N' with transb = 'T'
// (y = x W^T with weights stored [out, in], PyTorch's Linear layout), or a
// single unit-stride column of B (a matrix-vector product).  There
// C(i, j) = dot(A row i, B column j) of two contiguous vectors: the kernels
// multiply lane-parallel along K and reduce each accumulator once at the
// end, so B is read once, in place.  The blocked path would first copy all
// of B into transposed panels, which for few rows of A costs more than the
// product itself (AVX2, 1x4096x4096 NT: 0.20x dnnl_sgemm).
//
// Arithmetic (fixed per Highway target, independent of threads): for each
// (i, j), L lane sums over k = l, l + L, ... in increasing k (fused
// multiply-adds where the target has them), a K tail read as zeros, then
// the target's lane reduction, then the ukernel contract's epilogue
// (t = alpha * s unless alpha == 1; C = t, t + C, or fma(beta, C, t); C is
// not read when beta == 0).  Bits differ from the blocked path's; integer
// data stays exact and real data within the gamma_K bound.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"

namespace anvil::gemm {

struct sgemm_problem;

// One call of a dot kernel: rows [0, m) of C x columns [0, n), with
//   A(i, k) = a[i * lda + k],  B(k, j) = b[j * ldb + k],  C(i, j) = c[i * ldc + j].
struct dot_args {
    const float *a;
    const float *b;
    float *c;
    int64_t lda, ldb, ldc;
    int64_t m, n, k;
    float alpha, beta;
};
using dot_fn = void (*)(const dot_args *);

// The dot kernel of the best Highway target the tier allows; null for the
// scalar tier (which keeps the reference path) or when none is compiled.
dot_fn dot_kernel(anvil_isa_t tier);

// Rows of A up to which the dot path beats packing B: always up to
// kDotMaxRows; and on the Highway tiers up to kDotMaxRowsLongK when
// K >= kDotLongK, where the lane reductions at the end of each dot product
// are a small part of it.  Measured on AVX2 (Zen 1, 1 thread, NT, dot path
// vs packing B): 16x512x128 0.78x, 24x2048x256 0.96x, 16x4096x512 1.25x,
// 32x1024x1024 1.14x, 32x4096x4096 1.33x, 64x1024x1024 1.05x,
// 64x4096x4096 1.15x.  The JIT tiers keep their packed AVX-512 kernels
// beyond kDotMaxRows rows (not measured against the dot path there).
constexpr int64_t kDotMaxRows = 8;
constexpr int64_t kDotMaxRowsLongK = 64;
constexpr int64_t kDotLongK = 512;
// And, on the Highway tiers, any M when N <= kDotMaxCols (tall-skinny
// products with B transposed: A streams once past a B that stays in cache).
constexpr int64_t kDotMaxCols = 8;

// Whether p takes the dot path on a backend of `tier`.
bool dot_path_applies(const sgemm_problem &p, anvil_isa_t tier);

// Runs p (dot_path_applies(p), K > 0, alpha != 0) with kernel fn, threaded
// over columns of C.
void run_dot_gemm(const sgemm_problem &p, dot_fn fn);

// ---- The row-stream path: M <= kStreamMaxRows with a row-major B read in
// place (transb 'N', not prepacked), on the Highway tiers.  The blocked
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
constexpr int64_t kStreamMaxCols = 8;  // the transposed (tall-skinny) form

// The row-stream kernel of the best Highway target the tier allows; null
// for the scalar and JIT tiers (the JIT's in-place kernels serve there).
stream_fn stream_kernel(anvil_isa_t tier);
bool stream_path_applies(const sgemm_problem &p, anvil_isa_t tier);
// Runs p (stream_path_applies(p), K > 0, alpha != 0), threaded over column
// ranges of C.
void run_stream_gemm(const sgemm_problem &p, stream_fn fn);

}  // namespace anvil::gemm
