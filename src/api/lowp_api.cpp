// anvil_gemm_bf16bf16f32, anvil_gemm_u8s8s32, anvil_gemm_s8s8s32.
#include <string>

#include "anvil/anvil.h"
#include "api/validate.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_epilogue.h"
#include "threading/parallel.h"

namespace {

using namespace anvil;

void log_exec(const char *dt, char ta, char tb, int64_t M, int64_t N, int64_t K,
              const lowp::lp_backend &be, anvil_status_t st, double t0) {
    const double us = (verbose::now_seconds() - t0) * 1e6;
    verbose::emit(std::string("exec,op=gemm,dt=") + dt + ",trans=" + ta + tb +
                  ",shape=" + std::to_string(M) + "x" + std::to_string(N) + "x" +
                  std::to_string(K) + ",backend=" + be.name() +
                  ",threads=" + std::to_string(threading::num_threads()) +
                  ",status=" + anvil_status_str(st) + ",time_us=" + std::to_string(us));
}

anvil_status_t run_logged(const char *dt, char ta, char tb, const lowp::lp_problem &p,
                          const lowp::lp_epilogue &epi) {
    const lowp::lp_backend *be = &lowp::select_lp_backend(p.kind);
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    anvil_status_t st = lowp::run_lp_gemm(*be, p, epi);
    if (jit_state::retry_without_jit(st)) {  // nothing was written: run it again without the JIT
        be = &lowp::select_lp_backend(p.kind);
        st = lowp::run_lp_gemm(*be, p, epi);
    }
    if (vl >= 2) log_exec(dt, ta, tb, p.M, p.N, p.K, *be, st, t0);
    return st;
}

anvil_status_t gemm_int8(bool a_signed, char transa, char transb, char offsetc, int64_t M,
                         int64_t N, int64_t K, float alpha, const void *A, int64_t lda,
                         int32_t ao, const int8_t *B, int64_t ldb, int32_t bo, float beta,
                         int32_t *C, int64_t ldc, const int32_t *co) {
    bool ta = false, tb = false;
    anvil_status_t st = api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, 1, 1, 4, &ta, &tb);
    if (st != anvil_success) return st;
    lowp::s32_blas_epilogue::offset_kind ok;
    if (!lowp::s32_blas_epilogue::parse_offsetc(offsetc, &ok)) return anvil_invalid_argument;
    if (M == 0 || N == 0) return anvil_success;
    if (!C || !co) return anvil_null_pointer;
    const bool zero_product = K == 0 || alpha == 0.0f;
    if (!zero_product && (!A || !B)) return anvil_null_pointer;
    const lowp::lp_problem p = lowp::blas_lp_problem(
        lowp::lp_kind::u8s8, a_signed ? lowp::lp_elem::s8 : lowp::lp_elem::u8, ta, tb, M, N, K,
        A, lda, B, ldb, zero_product);
    lowp::s32_blas_epilogue epi(alpha, beta, C, ldc, ok, co, zero_product ? 0 : ao,
                                zero_product ? 0 : bo, (a_signed && !zero_product) ? 128 : 0, K);
    return run_logged(a_signed ? "s8s8s32" : "u8s8s32", transa, transb, p, epi);
}

}  // namespace

extern "C" {

anvil_status_t anvil_convert_f32_to_bf16(const float *src, anvil_bf16_t *dst, int64_t n) {
    if (n < 0) return anvil_bad_size;
    if (n > 0 && (!src || !dst)) return anvil_null_pointer;
    lowp::convert_f32_to_bf16(src, dst, n);
    return anvil_success;
}

anvil_status_t anvil_convert_bf16_to_f32(const anvil_bf16_t *src, float *dst, int64_t n) {
    if (n < 0) return anvil_bad_size;
    if (n > 0 && (!src || !dst)) return anvil_null_pointer;
    lowp::convert_bf16_to_f32(src, dst, n);
    return anvil_success;
}

anvil_status_t anvil_gemm_bf16bf16f32(char transa, char transb, int64_t M, int64_t N, int64_t K,
                                      float alpha, const anvil_bf16_t *A, int64_t lda,
                                      const anvil_bf16_t *B, int64_t ldb, float beta, float *C,
                                      int64_t ldc) {
    bool ta = false, tb = false;
    anvil_status_t st = api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, 2, 2, 4, &ta, &tb);
    if (st != anvil_success) return st;
    if (M == 0 || N == 0) return anvil_success;
    if (!C) return anvil_null_pointer;
    const bool zero_product = K == 0 || alpha == 0.0f;
    if (!zero_product && (!A || !B)) return anvil_null_pointer;
    const lowp::lp_problem p =
        lowp::blas_lp_problem(lowp::lp_kind::bf16, lowp::lp_elem::bf16, ta, tb, M, N, K, A,
                              lda, B, ldb, zero_product);
    lowp::bf16_blas_epilogue epi(alpha, beta, C, ldc);
    return run_logged("bf16bf16f32", transa, transb, p, epi);
}

anvil_status_t anvil_gemm_u8s8s32(char transa, char transb, char offsetc, int64_t M, int64_t N,
                                  int64_t K, float alpha, const uint8_t *A, int64_t lda,
                                  uint8_t ao, const int8_t *B, int64_t ldb, int8_t bo, float beta,
                                  int32_t *C, int64_t ldc, const int32_t *co) {
    return gemm_int8(false, transa, transb, offsetc, M, N, K, alpha, A, lda, ao, B, ldb, bo,
                     beta, C, ldc, co);
}

anvil_status_t anvil_gemm_s8s8s32(char transa, char transb, char offsetc, int64_t M, int64_t N,
                                  int64_t K, float alpha, const int8_t *A, int64_t lda,
                                  int8_t ao, const int8_t *B, int64_t ldb, int8_t bo, float beta,
                                  int32_t *C, int64_t ldc, const int32_t *co) {
    return gemm_int8(true, transa, transb, offsetc, M, N, K, alpha, A, lda, ao, B, ldb, bo,
                     beta, C, ldc, co);
}

}  // extern "C"
