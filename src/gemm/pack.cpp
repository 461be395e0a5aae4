#include "gemm/pack.h"

#include <algorithm>
#include <cstring>

namespace anvil::gemm {

void pack_b_panel_range(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc,
                        int64_t n0, int64_t nc, int nr, int64_t p0, int64_t p1, float *dst) {
    for (int64_t p = p0; p < p1; ++p) {
        float *out = dst + p * kc * nr;
        const int64_t j0 = n0 + p * nr;
        const int64_t w = std::min<int64_t>(nr, n0 + nc - j0);
        if (!transb) {
            for (int64_t k = 0; k < kc; ++k) {
                const float *src = B + (k0 + k) * ldb + j0;
                std::memcpy(out + k * nr, src, size_t(w) * sizeof(float));
                if (w < nr) std::memset(out + k * nr + w, 0, size_t(nr - w) * sizeof(float));
            }
        } else {
            // op(B)(k, j) = B[j * ldb + k]: walk each source row (contiguous in k).
            if (w < nr)
                for (int64_t k = 0; k < kc; ++k)
                    std::memset(out + k * nr + w, 0, size_t(nr - w) * sizeof(float));
            for (int64_t j = 0; j < w; ++j) {
                const float *src = B + (j0 + j) * ldb + k0;
                for (int64_t k = 0; k < kc; ++k) out[k * nr + j] = src[k];
            }
        }
    }
}

void pack_b_panels(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc, int64_t n0,
                   int64_t nc, int nr, float *dst) {
    pack_b_panel_range(B, ldb, transb, k0, kc, n0, nc, nr, 0, (nc + nr - 1) / nr, dst);
}

void pack_a_panels(const float *A, int64_t lda, bool transa, int64_t m0, int64_t mc, int64_t k0,
                   int64_t kc, int mr, float *dst) {
    const int64_t panels = (mc + mr - 1) / mr;
    for (int64_t r = 0; r < panels; ++r) {
        float *out = dst + r * kc * mr;
        const int64_t i0 = m0 + r * mr;
        const int64_t h = std::min<int64_t>(mr, m0 + mc - i0);
        if (transa) {
            // op(A)(i, k) = A[k * lda + i]: each k gives h contiguous values.
            for (int64_t k = 0; k < kc; ++k)
                std::memcpy(out + k * mr, A + (k0 + k) * lda + i0, size_t(h) * sizeof(float));
        } else {
            for (int64_t i = 0; i < h; ++i) {
                const float *src = A + (i0 + i) * lda + k0;
                for (int64_t k = 0; k < kc; ++k) out[k * mr + i] = src[k];
            }
        }
    }
}

}  // namespace anvil::gemm
