#include "gemm/pack.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace anvil::gemm {
namespace {

// Rows ahead that transpose_block prefetches: each row's segment (kc
// floats of a B^T row, a few lines) is a short stream the hardware
// prefetchers barely start on, and the rows are far apart (in-process A/B,
// Zen 5 VM, 1 thread: NT 64x4096x4096 and 256x4096x4096, see the commit).
constexpr int64_t kPrefetchRows = 16;

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols.
// 4 x 4 blocks go through SSE registers (baseline on x86-64), several times
// faster than element copies; the edges are copied element by element.
void transpose_block(const float *src, int64_t ld_src, int64_t rows, int64_t cols, float *dst,
                     int64_t ld_dst) {
    int64_t r = 0;
#if defined(__SSE2__)
    for (; r + 4 <= rows; r += 4) {
        const float *s0 = src + r * ld_src, *s1 = s0 + ld_src, *s2 = s1 + ld_src,
                    *s3 = s2 + ld_src;
        // An address, not a pointer into src: it may lie past its end
        // (prefetches never fault).
        const uintptr_t pf =
            reinterpret_cast<uintptr_t>(src) + uintptr_t((r + kPrefetchRows) * ld_src) * sizeof(float);
        int64_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            if (c % 16 == 0)  // one line of each of the 4 rows per 16 columns
                for (int t = 0; t < 4; ++t)
                    _mm_prefetch(reinterpret_cast<const char *>(
                                     pf + uintptr_t(t * ld_src + c) * sizeof(float)),
                                 _MM_HINT_T0);
            __m128 a = _mm_loadu_ps(s0 + c), b = _mm_loadu_ps(s1 + c);
            __m128 x = _mm_loadu_ps(s2 + c), y = _mm_loadu_ps(s3 + c);
            _MM_TRANSPOSE4_PS(a, b, x, y);
            _mm_storeu_ps(dst + (c + 0) * ld_dst + r, a);
            _mm_storeu_ps(dst + (c + 1) * ld_dst + r, b);
            _mm_storeu_ps(dst + (c + 2) * ld_dst + r, x);
            _mm_storeu_ps(dst + (c + 3) * ld_dst + r, y);
        }
        for (; c < cols; ++c) {
            dst[c * ld_dst + r + 0] = s0[c];
            dst[c * ld_dst + r + 1] = s1[c];
            dst[c * ld_dst + r + 2] = s2[c];
            dst[c * ld_dst + r + 3] = s3[c];
        }
    }
#endif
    for (; r < rows; ++r) {
        const float *s = src + r * ld_src;
        for (int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = s[c];
    }
}

// Copies one B row segment into a panel row; full panels of the common
// width use a fixed-size copy the compiler inlines (no libc call per row).
inline void copy_row(float *dst, const float *src, int64_t w, int nr) {
    if (w == 32 && nr == 32) {
        std::memcpy(dst, src, 32 * sizeof(float));
    } else if (w == 16 && nr == 16) {
        std::memcpy(dst, src, 16 * sizeof(float));
    } else {
        for (int64_t j = 0; j < w; ++j) dst[j] = src[j];
        for (int64_t j = w; j < nr; ++j) dst[j] = 0.0f;
    }
}

}  // namespace

void pack_b_panel_range(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc,
                        int64_t n0, int64_t nc, int nr, int64_t p0, int64_t p1, float *dst) {
    if (!transb) {
        // Row by row, so B is read sequentially (it usually comes from DRAM);
        // the writes fan out over the panels, which sit in cache.
        for (int64_t k = 0; k < kc; ++k) {
            const float *src = B + (k0 + k) * ldb + n0;
            for (int64_t p = p0; p < p1; ++p) {
                const int64_t w = std::min<int64_t>(nr, nc - p * nr);
                copy_row(dst + p * kc * nr + k * nr, src + p * nr, w, nr);
            }
        }
        return;
    }
    // op(B)(k, j) = B[j * ldb + k]: each panel is a transpose of w rows of B.
    for (int64_t p = p0; p < p1; ++p) {
        float *out = dst + p * kc * nr;
        const int64_t j0 = n0 + p * nr;
        const int64_t w = std::min<int64_t>(nr, n0 + nc - j0);
        transpose_block(B + j0 * ldb + k0, ldb, w, kc, out, nr);
        if (w < nr)
            for (int64_t k = 0; k < kc; ++k)
                std::memset(out + k * nr + w, 0, size_t(nr - w) * sizeof(float));
    }
}

void pack_b_panels(const float *B, int64_t ldb, bool transb, int64_t k0, int64_t kc, int64_t n0,
                   int64_t nc, int nr, float *dst) {
    pack_b_panel_range(B, ldb, transb, k0, kc, n0, nc, nr, 0, (nc + nr - 1) / nr, dst);
}

void pack_a_panel(const float *A, int64_t lda, bool transa, int64_t i0, int64_t h, int64_t k0,
                  int64_t kc, float *dst) {
    if (transa) {
        // op(A)(i, k) = A[k * lda + i]: each k gives h contiguous values.
        for (int64_t k = 0; k < kc; ++k)
            std::memcpy(dst + k * h, A + (k0 + k) * lda + i0, size_t(h) * sizeof(float));
    } else {
        transpose_block(A + i0 * lda + k0, lda, h, kc, dst, h);
    }
}

}  // namespace anvil::gemm
