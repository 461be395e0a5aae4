// Packing A and B into the layouts the micro-kernels stream.
#pragma once
#include <cstdint>

namespace anvil::gemm {

// B panels: nr columns wide, kc deep, zero-padded past column nc-1:
//   dst[p * kc * nr + k * nr + j] = op(B)(k0 + k, n0 + p * nr + j)
// op(B)(k, n) = transb ? B[n * ldb + k] : B[k * ldb + n].
void pack_b_panels(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc, int64_t n0,
                   int64_t nc, int nr, float *dst);
// Only panels [p0, p1) of the above (for splitting packing across threads).
void pack_b_panel_range(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc,
                        int64_t n0, int64_t nc, int nr, int64_t p0, int64_t p1, float *dst);

// One A panel of h rows, kc deep, k-major (the micro-kernel then reads it
// with a_rs = 1, a_cs = h):
//   dst[k * h + i] = op(A)(i0 + i, k0 + k)
// op(A)(m, k) = transa ? A[k * lda + m] : A[m * lda + k].
void pack_a_panel(const float *A, int64_t lda, bool transa, int64_t i0, int64_t h, int64_t k0,
                  int64_t kc, float *dst);

}  // namespace anvil::gemm
