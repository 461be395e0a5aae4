// anvil-bench: ymm FMA peak loop and the AVX2 read sweep.  This file alone is
// compiled with -mavx2 -mfma; it is only called when the CPU has both.
#include <immintrin.h>

#include "anvil_bench_peak.h"

namespace anvil_bench {

float fma_loop_ymm(int64_t iters) {
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(0.1f), a2 = _mm256_set1_ps(0.2f),
           a3 = _mm256_set1_ps(0.3f), a4 = _mm256_set1_ps(0.4f), a5 = _mm256_set1_ps(0.5f),
           a6 = _mm256_set1_ps(0.6f), a7 = _mm256_set1_ps(0.7f), a8 = _mm256_set1_ps(0.8f),
           a9 = _mm256_set1_ps(0.9f), a10 = _mm256_set1_ps(1.0f), a11 = _mm256_set1_ps(1.1f);
    for (int64_t i = 0; i < iters; ++i) {
        for (int u = 0; u < 4; ++u) {
            a0 = _mm256_fmadd_ps(a0, m, c);
            a1 = _mm256_fmadd_ps(a1, m, c);
            a2 = _mm256_fmadd_ps(a2, m, c);
            a3 = _mm256_fmadd_ps(a3, m, c);
            a4 = _mm256_fmadd_ps(a4, m, c);
            a5 = _mm256_fmadd_ps(a5, m, c);
            a6 = _mm256_fmadd_ps(a6, m, c);
            a7 = _mm256_fmadd_ps(a7, m, c);
            a8 = _mm256_fmadd_ps(a8, m, c);
            a9 = _mm256_fmadd_ps(a9, m, c);
            a10 = _mm256_fmadd_ps(a10, m, c);
            a11 = _mm256_fmadd_ps(a11, m, c);
        }
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

uint64_t read_sweep_avx2(const void *p, size_t bytes) {
    const __m256i *v = static_cast<const __m256i *>(p);
    const size_t n = bytes / 32;
    __m256i x0 = _mm256_setzero_si256(), x1 = x0, x2 = x0, x3 = x0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x0 = _mm256_xor_si256(x0, _mm256_load_si256(v + i + 0));
        x1 = _mm256_xor_si256(x1, _mm256_load_si256(v + i + 1));
        x2 = _mm256_xor_si256(x2, _mm256_load_si256(v + i + 2));
        x3 = _mm256_xor_si256(x3, _mm256_load_si256(v + i + 3));
        x0 = _mm256_xor_si256(x0, _mm256_load_si256(v + i + 4));
        x1 = _mm256_xor_si256(x1, _mm256_load_si256(v + i + 5));
        x2 = _mm256_xor_si256(x2, _mm256_load_si256(v + i + 6));
        x3 = _mm256_xor_si256(x3, _mm256_load_si256(v + i + 7));
    }
    for (; i < n; ++i) x0 = _mm256_xor_si256(x0, _mm256_load_si256(v + i));
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(x0, x1), _mm256_xor_si256(x2, x3));
    alignas(32) uint64_t out[4];
    _mm256_store_si256(reinterpret_cast<__m256i *>(out), x);
    return out[0] ^ out[1] ^ out[2] ^ out[3];
}

}  // namespace anvil_bench
