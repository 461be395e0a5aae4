// anvil-bench: zmm FMA peak loop.  This file alone is compiled with
// -mavx512f -mfma; it is only called when the CPU reports AVX-512F.
#include <immintrin.h>

#include "anvil_bench_peak.h"

namespace anvil_bench {

float fma_loop_zmm(int64_t iters) {
    // acc = acc * m + c converges to 1: no overflow, no denormals.
    const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(0.1f), a2 = _mm512_set1_ps(0.2f),
           a3 = _mm512_set1_ps(0.3f), a4 = _mm512_set1_ps(0.4f), a5 = _mm512_set1_ps(0.5f),
           a6 = _mm512_set1_ps(0.6f), a7 = _mm512_set1_ps(0.7f), a8 = _mm512_set1_ps(0.8f),
           a9 = _mm512_set1_ps(0.9f), a10 = _mm512_set1_ps(1.0f), a11 = _mm512_set1_ps(1.1f),
           a12 = _mm512_set1_ps(1.2f), a13 = _mm512_set1_ps(1.3f), a14 = _mm512_set1_ps(1.4f),
           a15 = _mm512_set1_ps(1.5f);
    for (int64_t i = 0; i < iters; ++i) {
        for (int u = 0; u < 4; ++u) {
            a0 = _mm512_fmadd_ps(a0, m, c);
            a1 = _mm512_fmadd_ps(a1, m, c);
            a2 = _mm512_fmadd_ps(a2, m, c);
            a3 = _mm512_fmadd_ps(a3, m, c);
            a4 = _mm512_fmadd_ps(a4, m, c);
            a5 = _mm512_fmadd_ps(a5, m, c);
            a6 = _mm512_fmadd_ps(a6, m, c);
            a7 = _mm512_fmadd_ps(a7, m, c);
            a8 = _mm512_fmadd_ps(a8, m, c);
            a9 = _mm512_fmadd_ps(a9, m, c);
            a10 = _mm512_fmadd_ps(a10, m, c);
            a11 = _mm512_fmadd_ps(a11, m, c);
            a12 = _mm512_fmadd_ps(a12, m, c);
            a13 = _mm512_fmadd_ps(a13, m, c);
            a14 = _mm512_fmadd_ps(a14, m, c);
            a15 = _mm512_fmadd_ps(a15, m, c);
        }
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)),
                                       _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15))));
    alignas(64) float out[16];
    _mm512_store_ps(out, s);
    float sum = 0;
    for (float v : out) sum += v;
    return sum;
}

}  // namespace anvil_bench
