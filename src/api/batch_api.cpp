// anvil_sgemm_batch_strided, anvil_gemm_bf16bf16f32_batch_strided and
// anvil_gemm_u8s8s32 / s8s8s32_batch_strided: strided batches of
// independent GEMMs (attention's per-head products).
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

// Every item, side by side or one after another.  Items whose kernels the
// JIT failed to make wrote nothing; when the JIT has been turned off for it
// (anvil_set_jit_failure_policy's fallback) they run again on the backend
// reselect() picks, as the single calls do.
template <typename F, typename R>
anvil_status_t run_items(int64_t batch, double item_flops, const F &run_item, const R &reselect) {
    std::vector<anvil_status_t> status;
    gemm::run_batch_items(batch, item_flops, run_item, &status);
    std::vector<int64_t> again;
    anvil_status_t st = gemm::batch_status(status, &again);
    if (st != anvil_jit_error || !jit_state::retry_without_jit(st)) return st;
    reselect();
    gemm::run_batch_items(int64_t(again.size()), item_flops,
                          [&](int64_t i) { return run_item(again[size_t(i)]); }, &status);
    return gemm::batch_status(status, &again);
}

// The strided-batch call as it was made (one line per call, not per item);
// "shared" names the operands with stride 0 (anvil-bench replays it as a
// benchdnn batched line with a batch of 1 on that side).
struct batch_call {
    const char *dt;
    char ta, tb;
    int64_t M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c, batch;
    float alpha, beta;
};

void log_batch(const batch_call &c, const char *backend, anvil_status_t st, double t0) {
    const double us = (verbose::now_seconds() - t0) * 1e6;
    const bool sa = c.stride_a == 0 && c.batch > 1, sb = c.stride_b == 0 && c.batch > 1;
    const char *shared = sa && sb ? "AB" : sa ? "A" : sb ? "B" : "none";
    verbose::emit(std::string("exec,op=gemm_batch,dt=") + c.dt + ",trans=" + c.ta + c.tb +
                  ",shape=" + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
                  std::to_string(c.K) + ",batch=" + std::to_string(c.batch) +
                  ",shared=" + shared + ",lda=" + std::to_string(c.lda) +
                  ",ldb=" + std::to_string(c.ldb) + ",ldc=" + std::to_string(c.ldc) +
                  ",stride_a=" + std::to_string(c.stride_a) +
                  ",stride_b=" + std::to_string(c.stride_b) +
                  ",stride_c=" + std::to_string(c.stride_c) + ",alpha=" + std::to_string(c.alpha) +
                  ",beta=" + std::to_string(c.beta) + ",backend=" + backend +
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

    const gemm::sgemm_problem p =
        gemm::blas_problem(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const gemm::backend *be = &gemm::select_backend();
    auto run_item = [&](int64_t b) {
        gemm::sgemm_problem q = p;
        q.A = item_ptr(A, stride_a, b);
        q.B = item_ptr(B, stride_b, b);
        q.C = C + b * stride_c;
        return gemm::run_sgemm(*be, q);
    };
    st = run_items(batch, 2.0 * double(M) * double(N) * double(K), run_item,
                   [&] { be = &gemm::select_backend(); });
    if (vl >= 2)
        log_batch({"f32", transa, transb, M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c,
                   batch, alpha, beta},
                  be->name(), st, t0);
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

    const lowp::lp_problem p =
        lowp::blas_lp_problem(lowp::lp_kind::bf16, lowp::lp_elem::bf16, ta, tb, M, N, K, A,
                              lda, B, ldb, zero_product);
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
    st = run_items(batch, 2.0 * double(M) * double(N) * double(K), run_item,
                   [&] { be = &lowp::select_lp_backend(p.kind); });
    if (vl >= 2)
        log_batch({"bf16bf16f32", transa, transb, M, N, K, lda, ldb, ldc, stride_a, stride_b,
                   stride_c, batch, alpha, beta},
                  be->name(), st, t0);
    return st;
}

}  // extern "C"

namespace {

// The int8 batches: anvil_gemm_u8s8s32's checks (gemm_int8 in lowp_api.cpp)
// plus the batch's, then each item as that call runs it.
anvil_status_t gemm_int8_batch(bool a_signed, char transa, char transb, char offsetc, int64_t M,
                               int64_t N, int64_t K, float alpha, const void *A, int64_t lda,
                               int64_t stride_a, int32_t ao, const int8_t *B, int64_t ldb,
                               int64_t stride_b, int32_t bo, float beta, int32_t *C,
                               int64_t ldc, int64_t stride_c, const int32_t *co,
                               int64_t batch) {
    bool ta = false, tb = false;
    anvil_status_t st = check_batch_call(transa, transb, M, N, K, lda, stride_a, ldb, stride_b,
                                         ldc, stride_c, batch, 1, &ta, &tb);
    if (st != anvil_success) return st;
    lowp::s32_blas_epilogue::offset_kind ok;
    if (!lowp::s32_blas_epilogue::parse_offsetc(offsetc, &ok)) return anvil_invalid_argument;
    if (batch == 0 || M == 0 || N == 0) return anvil_success;
    if (!C || !co) return anvil_null_pointer;
    const bool zero_product = K == 0 || alpha == 0.0f;
    if (!zero_product && (!A || !B)) return anvil_null_pointer;

    const lowp::lp_problem p = lowp::blas_lp_problem(
        lowp::lp_kind::u8s8, a_signed ? lowp::lp_elem::s8 : lowp::lp_elem::u8, ta, tb, M, N, K,
        A, lda, B, ldb, zero_product);
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const lowp::lp_backend *be = &lowp::select_lp_backend(p.kind);
    const auto *a_bytes = static_cast<const uint8_t *>(A);
    auto run_item = [&](int64_t b) {
        lowp::lp_problem q = p;
        q.A = item_ptr(a_bytes, stride_a, b);
        q.B = item_ptr(B, stride_b, b);
        const lowp::s32_blas_epilogue epi(alpha, beta, C + b * stride_c, ldc, ok, co,
                                          zero_product ? 0 : ao, zero_product ? 0 : bo,
                                          (a_signed && !zero_product) ? 128 : 0, K);
        return lowp::run_lp_gemm(*be, q, epi);
    };
    st = run_items(batch, 2.0 * double(M) * double(N) * double(K), run_item,
                   [&] { be = &lowp::select_lp_backend(p.kind); });
    if (vl >= 2)
        log_batch({a_signed ? "s8s8s32" : "u8s8s32", transa, transb, M, N, K, lda, ldb, ldc,
                   stride_a, stride_b, stride_c, batch, alpha, beta},
                  be->name(), st, t0);
    return st;
}

}  // namespace

extern "C" {

anvil_status_t anvil_gemm_u8s8s32_batch_strided(char transa, char transb, char offsetc,
                                                int64_t M, int64_t N, int64_t K, float alpha,
                                                const uint8_t *A, int64_t lda, int64_t stride_a,
                                                uint8_t ao, const int8_t *B, int64_t ldb,
                                                int64_t stride_b, int8_t bo, float beta,
                                                int32_t *C, int64_t ldc, int64_t stride_c,
                                                const int32_t *co, int64_t batch) {
    return gemm_int8_batch(false, transa, transb, offsetc, M, N, K, alpha, A, lda, stride_a, ao,
                           B, ldb, stride_b, bo, beta, C, ldc, stride_c, co, batch);
}

anvil_status_t anvil_gemm_s8s8s32_batch_strided(char transa, char transb, char offsetc,
                                                int64_t M, int64_t N, int64_t K, float alpha,
                                                const int8_t *A, int64_t lda, int64_t stride_a,
                                                int8_t ao, const int8_t *B, int64_t ldb,
                                                int64_t stride_b, int8_t bo, float beta,
                                                int32_t *C, int64_t ldc, int64_t stride_c,
                                                const int32_t *co, int64_t batch) {
    return gemm_int8_batch(true, transa, transb, offsetc, M, N, K, alpha, A, lda, stride_a, ao, B,
                           ldb, stride_b, bo, beta, C, ldc, stride_c, co, batch);
}

}  // extern "C"
