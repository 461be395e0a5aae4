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
// kDotMaxRows; and when K >= kDotLongK, where the lane reductions at the
// end of each dot product are a small part of it, up to kDotMaxRowsLongK
// on the Highway tiers and kDotMaxRowsLongKJit on the JIT tiers (whose
// packed kernels are AVX-512; the dot kernels there are Highway's AVX-512
// target).  Measured on AVX2 (Zen 1, 1 thread, NT, dot path vs packing
// B): 16x512x128 0.78x, 24x2048x256 0.96x, 16x4096x512 1.25x,
// 32x1024x1024 1.14x, 32x4096x4096 1.33x, 64x1024x1024 1.05x,
// 64x4096x4096 1.15x.  On AVX-512 (Zen 5, same form): 12x4096x4096 1.34x,
// 16x4096x4096 1.25x, 16x11008x4096 1.47x, 16x1024x1024 1.38x,
// 16x4096x512 1.58x, 16x4096x11008 1.12x, 10x1024x512 1.61x, but
// 32x4096x4096 0.90x, 64x4096x4096 0.73x, 64x768x3072 0.63x; up to 8
// rows the packed path loses 1.3-6x except at K = 64 (8x512x64: 0.6x).
constexpr int64_t kDotMaxRows = 8;
constexpr int64_t kDotMaxRowsLongK = 64;
constexpr int64_t kDotMaxRowsLongKJit = 16;
constexpr int64_t kDotLongK = 512;
// And, on the Highway tiers, any M when N <= kDotMaxCols (tall-skinny
// products with B transposed: A streams once past a B that stays in cache).
constexpr int64_t kDotMaxCols = 8;

// Whether p takes the dot path on a backend of `tier`.
bool dot_path_applies(const sgemm_problem &p, anvil_isa_t tier);

// Runs p (dot_path_applies(p), K > 0, alpha != 0) with kernel fn, threaded
// over columns of C.
void run_dot_gemm(const sgemm_problem &p, dot_fn fn);

}  // namespace anvil::gemm
