// anvil_sgemm and anvil_explain_sgemm.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "anvil/anvil.h"
#include "api/validate.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "gemm/backend.h"
#include "gemm/blocking.h"
#include "gemm/dot.h"
#include "gemm/stream.h"
#include "gemm/driver.h"
#include "threading/parallel.h"

namespace {

std::string shape_str(char ta, char tb, int64_t M, int64_t N, int64_t K) {
    return "trans=" + std::string(1, ta) + std::string(1, tb) + ",shape=" + std::to_string(M) +
           "x" + std::to_string(N) + "x" + std::to_string(K);
}

}  // namespace

extern "C" {

anvil_status_t anvil_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                           float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                           float beta, float *C, int64_t ldc) {
    using namespace anvil;
    bool ta = false, tb = false;
    anvil_status_t st =
        api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, 4, 4, 4, &ta, &tb);
    if (st != anvil_success) return st;
    if (M > 0 && N > 0 && !C) return anvil_null_pointer;
    if (M > 0 && N > 0 && K > 0 && alpha != 0.0f && (!A || !B)) return anvil_null_pointer;

    const gemm::sgemm_problem p =
        gemm::blas_problem(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    const gemm::backend *bp = &gemm::select_backend();
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    st = gemm::run_sgemm(*bp, p);
    if (jit_state::retry_without_jit(st)) {  // nothing was written: run it again without the JIT
        bp = &gemm::select_backend();
        st = gemm::run_sgemm(*bp, p);
    }
    const gemm::backend &be = *bp;
    if (vl >= 2) {
        const double us = (verbose::now_seconds() - t0) * 1e6;
        verbose::emit("exec,op=gemm,dt=f32," + shape_str(transa, transb, M, N, K) +
                      ",lda=" + std::to_string(lda) + ",ldb=" + std::to_string(ldb) +
                      ",ldc=" + std::to_string(ldc) + ",alpha=" + std::to_string(alpha) +
                      ",beta=" + std::to_string(beta) + ",backend=" + be.name() +
                      ",threads=" + std::to_string(threading::num_threads()) +
                      ",status=" + anvil_status_str(st) + ",time_us=" + std::to_string(us));
    }
    return st;
}

anvil_status_t anvil_explain_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
                                   char *buf, size_t size, size_t *needed) {
    using namespace anvil;
    bool ta = false, tb = false;
    if (!api::parse_trans(transa, &ta) || !api::parse_trans(transb, &tb))
        return anvil_invalid_argument;
    if (M < 0 || N < 0 || K < 0) return anvil_bad_size;
    if (!buf && size > 0) return anvil_null_pointer;
    // The sizes must be those of a call anvil_sgemm would accept with tight
    // leading dimensions (so no product below overflows).
    const int64_t lda = std::max<int64_t>(1, ta ? M : K), ldb = std::max<int64_t>(1, tb ? K : N);
    if (const anvil_status_t st = api::check_gemm_shape(transa, transb, M, N, K, lda, ldb,
                                                        std::max<int64_t>(1, N), 4, 4, 4, &ta, &tb);
        st != anvil_success)
        return st;
    const gemm::backend &be = gemm::select_backend();
    int64_t packed_floats = 0;
    if (!api::mul_ok(N / be.nr() + 1, int64_t(be.nr()) * 4, &packed_floats) ||
        !api::mul_ok(packed_floats, K, &packed_floats) || packed_floats > INT64_MAX - 64)
        return anvil_size_overflow;
    std::string s = "op=sgemm " + shape_str(transa, transb, M, N, K) + "\n";
    s += "backend=" + std::string(be.name()) + " isa=" +
         anvil_isa_name(be.tier()) + " threads=" + std::to_string(threading::num_threads()) + "\n";
    const gemm::blocking b = gemm::choose_blocking(be, ta, tb, M, N, K, ta ? M : K, tb ? K : N, false,
                                                   threading::num_threads());
    // The tight C of the explained call: ldc = N.
    const gemm::sgemm_problem dp = gemm::blas_problem(ta, tb, M, N, K, 1.0f, nullptr, lda,
                                                      nullptr, ldb, 0.0f, nullptr,
                                                      std::max<int64_t>(1, N));
    if (gemm::dot_path_applies(dp, be.tier()) && gemm::dot_kernel(be.tier()))
        s += "anvil_sgemm: dot path (rows of A x columns of B along K, B read in place, "
             "not packed; gemm/dot.h)\n";
    else if (gemm::stream_path_applies(dp, be.tier()) && gemm::stream_kernel(be.tier()))
        s += "anvil_sgemm: row-stream path (whole rows of the row-major operand streamed "
             "past accumulators in L1, nothing packed; gemm/stream.h)\n";
    else
        s += "anvil_sgemm: " + gemm::describe(b) + "\n";
    const gemm::blocking bp = gemm::choose_blocking(be, ta, tb, M, N, K, ta ? M : K, tb ? K : N, true,
                                                    threading::num_threads());
    const int64_t panels = N / be.nr() + (N % be.nr() != 0);
    if (N * K * 4 <= gemm::kDirectBBytes)  // api/plan_api.cpp
        s += "planned: B kept as a row-major K x N copy (<= " +
             std::to_string(gemm::kDirectBBytes / 1024) +
             " KiB), each execute runs as anvil_sgemm 'N' on it; packed_b_bytes=" +
             std::to_string(N * K * 4 + 64) + "\n";
    else
        s += "planned (prepacked B): " + gemm::describe(bp) +
             " packed_b_bytes=" + std::to_string(panels * be.nr() * K * 4 + 64) + "\n";
    if (M > 0 && N > 0) {
        gemm::ukernel_desc d{};
        d.tier = uint8_t(be.tier());
        d.m = uint8_t(std::min<int64_t>(M, be.mr()));
        d.n = uint8_t(std::min<int64_t>(N, be.nr()));
        d.a = b.pack_a || ta ? gemm::a_access::k_strided : gemm::a_access::row_major;
        d.beta = gemm::beta_kind::zero;
        d.alpha_one = 1;
        gemm::ukernel_ref ref;
        if (be.get(d, &ref) == anvil_success) s += "main kernel=" + std::string(ref.name) + "\n";
    }
    if (needed) *needed = s.size() + 1;
    if (size > 0) {
        const size_t n = std::min(size - 1, s.size());
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return anvil_success;
}

}  // extern "C"
