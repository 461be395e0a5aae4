#include "ref/ref_ukernel.h"

#include <cmath>

namespace anvil::ref {

void sgemm_ukernel(const gemm::ukernel_args *p) {
    const int64_t m = p->m, n = p->n, K = p->k, ld = p->b_ld;
    for (int64_t i = 0; i < m; ++i) {
        float *c = p->c + i * p->ldc;
        for (int64_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k)
                acc = std::fma(p->a[i * p->a_rs + k * p->a_cs], p->b[k * ld + j], acc);
            gemm::store_contract(acc, p->alpha, p->beta, &c[j]);
        }
    }
}

void sgemm_double(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                  float *C, int64_t ldc) {
    const bool ta = transa == 'T' || transa == 't';
    const bool tb = transb == 'T' || transb == 't';
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const double a = ta ? A[k * lda + i] : A[i * lda + k];
                const double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                acc += a * b;
            }
            double r = double(alpha) * acc;
            if (beta != 0.0f) r += double(beta) * double(C[i * ldc + j]);
            C[i * ldc + j] = float(r);
        }
    }
}

}  // namespace anvil::ref
