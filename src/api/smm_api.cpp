// anvil_smm_*: dispatched small GEMMs (LIBXSMM-style).  The handle holds
// the problem and, where the JIT serves it, the direct kernel made for it
// (gemm::direct_gemm_desc); execute without one is anvil_sgemm.
#include <cstdint>
#include <memory>
#include <new>

#include "anvil/anvil.h"
#include "api/validate.h"
#include "common/jit_state.h"
#include "gemm/backend.h"
#include "gemm/driver.h"
#include "gemm/one_chain.h"
#include "gemm/ukernel.h"

struct anvil_smm {
    static constexpr uint64_t kMagic = 0x414e56494c534d4dull;  // "ANVILSMM"
    uint64_t magic = kMagic;
    char transa = 'N', transb = 'N';
    int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
    float alpha = 1.0f, beta = 0.0f;
    anvil_smm_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;  // the kernel's code
};

namespace {

bool valid(anvil_smm_t h) { return h && h->magic == anvil_smm::kMagic; }

// The direct kernel of the problem, or none (fn stays null) where the
// backend has none or the JIT was turned off by a failure (fallback
// policy).  Other failures are returned.
anvil_status_t find_kernel(anvil_smm &h, bool ta, bool tb) {
    using namespace anvil;
    if (tb || h.M < 1 || h.M > gemm::kSmallGemmMax || h.N < 1 || h.N > gemm::kSmallGemmMax ||
        h.K < 1 || h.K > INT32_MAX || h.alpha == 0.0f)
        return anvil_success;
    const gemm::direct_gemm_desc d =
        gemm::make_direct_desc(ta, h.M, h.N, h.K, h.alpha, h.lda, h.ldb, h.beta, h.ldc);
    gemm::direct_kernel_ref k;
    const anvil_status_t st = gemm::select_backend().get_direct(d, &k);
    if (st == anvil_unsupported || jit_state::retry_without_jit(st)) return anvil_success;
    if (st != anvil_success) return st;
    h.fn = reinterpret_cast<anvil_smm_fn>(k.fn);
    h.keep_alive = std::move(k.keep_alive);
    return anvil_success;
}

}  // namespace

extern "C" {

anvil_status_t anvil_smm_create(anvil_smm_t *smm, char transa, char transb, int64_t M, int64_t N,
                                int64_t K, float alpha, int64_t lda, int64_t ldb, float beta,
                                int64_t ldc) {
    using namespace anvil;
    if (!smm) return anvil_null_pointer;
    bool ta = false, tb = false;
    const anvil_status_t st =
        api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, 4, 4, 4, &ta, &tb);
    if (st != anvil_success) return st;
    std::unique_ptr<anvil_smm> h(new (std::nothrow) anvil_smm);
    if (!h) return anvil_out_of_memory;
    h->transa = ta ? 'T' : 'N';
    h->transb = tb ? 'T' : 'N';
    h->M = M;
    h->N = N;
    h->K = K;
    h->lda = lda;
    h->ldb = ldb;
    h->ldc = ldc;
    h->alpha = alpha;
    h->beta = beta;
    try {
        if (const anvil_status_t ks = find_kernel(*h, ta, tb); ks != anvil_success) return ks;
    } catch (const std::bad_alloc &) {
        return anvil_out_of_memory;
    }
    *smm = h.release();
    return anvil_success;
}

anvil_smm_fn anvil_smm_get_function(anvil_smm_t smm) { return valid(smm) ? smm->fn : nullptr; }

anvil_status_t anvil_smm_execute(anvil_smm_t smm, const float *A, const float *B, float *C) {
    using namespace anvil;
    if (!valid(smm)) return anvil_invalid_handle;
    const anvil_smm &h = *smm;
    if (h.M > 0 && h.N > 0 && !C) return anvil_null_pointer;
    if (h.M > 0 && h.N > 0 && h.K > 0 && h.alpha != 0.0f && (!A || !B)) return anvil_null_pointer;
    if (h.fn) {
        h.fn(A, B, C);
        return anvil_success;
    }
    // No product (K == 0, alpha == 0, empty C): BLAS scaling, C = beta * C.
    if (h.M == 0 || h.N == 0 || h.K == 0 || h.alpha == 0.0f)
        return anvil_sgemm(h.transa, h.transb, h.M, h.N, h.K, h.alpha, A, h.lda, B, h.ldb, h.beta,
                           C, h.ldc);
    // The direct kernels' arithmetic with the tile kernels of the tier.
    const gemm::sgemm_problem p = gemm::blas_problem(h.transa == 'T', h.transb == 'T', h.M, h.N,
                                                     h.K, h.alpha, A, h.lda, B, h.ldb, h.beta, C,
                                                     h.ldc);
    anvil_status_t st = gemm::run_one_chain(gemm::select_backend(), p);
    if (jit_state::retry_without_jit(st)) st = gemm::run_one_chain(gemm::select_backend(), p);
    return st;
}

anvil_status_t anvil_smm_destroy(anvil_smm_t smm) {
    if (!valid(smm)) return anvil_invalid_handle;
    smm->magic = 0;
    delete smm;
    return anvil_success;
}

}  // extern "C"
