// anvil_sgemm_batch_strided and anvil_gemm_bf16bf16f32_batch_strided:
// strided batches of independent GEMMs (attention's per-head products).
#include <string>

#include "anvil/anvil.h"
#include "api/validate.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "gemm/backend.h"
#include "gemm/batch.h"
#include "gemm/driver.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_epilogue.h"
#include "threading/parallel.h"

namespace {

using namespace anvil;

// Item b of an operand (nullptr stays nullptr: an unread operand may be
// absent, and arithmetic on a null pointer is undefined).
template <typename T>
T *item_ptr(T *base, int64_t stride, int64_t b) {
    return base ? base + b * stride : base;
}

// The checks of the single call plus the batch's; sets the transposes.
anvil_status_t check_batch_call(char transa, char transb, int64_t M, int64_t N, int64_t K,
                                int64_t lda, int64_t stride_a, int64_t ldb, int64_t stride_b,
                                int64_t ldc, int64_t stride_c, int64_t batch, int64_t elem_ab,
                                bool *ta, bool *tb) {
    anvil_status_t st =
        api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, elem_ab, elem_ab, 4, ta, tb);
    if (st != anvil_success) return st;
    const api::batch_operand a{stride_a, *ta ? K : M, *ta ? M : K, lda, elem_ab};
    const api::batch_operand b{stride_b, *tb ? N : K, *tb ? K : N, ldb, elem_ab};
    const api::batch_operand c{stride_c, M, N, ldc, 4};
    return api::check_batch(batch, a, b, c);
}

void log_batch(const char *dt, char ta, char tb, int64_t M, int64_t N, int64_t K,
               int64_t batch, const char *backend, anvil_status_t st, double t0) {
    const double us = (verbose::now_seconds() - t0) * 1e6;
    verbose::emit(std::string("exec,op=gemm_batch,dt=") + dt + ",trans=" + ta + tb +
                  ",shape=" + std::to_string(M) + "x" + std::to_string(N) + "x" +
                  std::to_string(K) + ",batch=" + std::to_string(batch) + ",backend=" + backend +
                  ",threads=" + std::to_string(threading::num_threads()) +
                  ",status=" + anvil_status_str(st) + ",time_us=" + std::to_string(us));
}

}  // namespace

extern "C" {

anvil_status_t anvil_sgemm_batch_strided(char transa, char transb, int64_t M, int64_t N,
                                         int64_t K, float alpha, const float *A, int64_t lda,
                                         int64_t stride_a, const float *B, int64_t ldb,
                                         int64_t stride_b, float beta, float *C, int64_t ldc,
                                         int64_t stride_c, int64_t batch) {
    bool ta = false, tb = false;
    anvil_status_t st = check_batch_call(transa, transb, M, N, K, lda, stride_a, ldb, stride_b,
                                         ldc, stride_c, batch, 4, &ta, &tb);
    if (st != anvil_success) return st;
    if (batch == 0 || M == 0 || N == 0) return anvil_success;
    if (!C) return anvil_null_pointer;
    if (K > 0 && alpha != 0.0f && (!A || !B)) return anvil_null_pointer;

    gemm::sgemm_problem p;
    p.transa = ta;
    p.transb = tb;
    p.M = M;
    p.N = N;
    p.K = K;
    p.alpha = alpha;
    p.beta = beta;
    p.A = A;
    p.lda = lda;
    p.B = B;
    p.ldb = ldb;
    p.C = C;
    p.ldc = ldc;
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    // Item 0 alone first: it makes the kernels, and a JIT failure there
    // (nothing written yet) falls back as anvil_sgemm does.
    const gemm::backend *be = &gemm::select_backend();
    st = gemm::run_sgemm(*be, p);
    if (jit_state::retry_without_jit(st)) {
        be = &gemm::select_backend();
        st = gemm::run_sgemm(*be, p);
    }
    if (st == anvil_success)
        st = gemm::run_batch_items(1, batch, 2.0 * double(M) * double(N) * double(K),
                                   [&](int64_t b) {
                                       gemm::sgemm_problem q = p;
                                       q.A = item_ptr(A, stride_a, b);
                                       q.B = item_ptr(B, stride_b, b);
                                       q.C = C + b * stride_c;
                                       return gemm::run_sgemm(*be, q);
                                   });
    if (vl >= 2) log_batch("f32", transa, transb, M, N, K, batch, be->name(), st, t0);
    return st;
}

anvil_status_t anvil_gemm_bf16bf16f32_batch_strided(
    char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
    const anvil_bf16_t *A, int64_t lda, int64_t stride_a, const anvil_bf16_t *B, int64_t ldb,
    int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c, int64_t batch) {
    bool ta = false, tb = false;
    anvil_status_t st = check_batch_call(transa, transb, M, N, K, lda, stride_a, ldb, stride_b,
                                         ldc, stride_c, batch, 2, &ta, &tb);
    if (st != anvil_success) return st;
    if (batch == 0 || M == 0 || N == 0) return anvil_success;
    if (!C) return anvil_null_pointer;
    const bool zero_product = K == 0 || alpha == 0.0f;
    if (!zero_product && (!A || !B)) return anvil_null_pointer;

    lowp::lp_problem p;
    p.kind = lowp::lp_kind::bf16;
    p.a_elem = lowp::lp_elem::bf16;
    p.transa = ta;
    p.transb = tb;
    p.M = M;
    p.N = N;
    p.K = K;
    p.A = A;
    p.lda = lda;
    p.B = B;
    p.ldb = ldb;
    p.zero_product = zero_product;
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const lowp::lp_backend *be = &lowp::select_lp_backend(p.kind);
    auto run_item = [&](int64_t b) {
        lowp::lp_problem q = p;
        q.A = item_ptr(A, stride_a, b);
        q.B = item_ptr(B, stride_b, b);
        const lowp::bf16_blas_epilogue epi(alpha, beta, C + b * stride_c, ldc);
        return lowp::run_lp_gemm(*be, q, epi);
    };
    st = run_item(0);  // makes the kernels; see anvil_sgemm_batch_strided
    if (jit_state::retry_without_jit(st)) {
        be = &lowp::select_lp_backend(p.kind);
        st = run_item(0);
    }
    if (st == anvil_success)
        st = gemm::run_batch_items(1, batch, 2.0 * double(M) * double(N) * double(K), run_item);
    if (vl >= 2) log_batch("bf16bf16f32", transa, transb, M, N, K, batch, be->name(), st, t0);
    return st;
}

}  // extern "C"
