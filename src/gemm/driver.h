// The fp32 GEMM driver: BLIS-style loops around the backend's micro-kernels.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"
#include "gemm/backend.h"
#include "gemm/blocking.h"

namespace anvil::gemm {

// One validated problem, row-major (see anvil.h).  packed_b, when set, holds
// B as full-depth panels of be.nr() columns: panel p at packed_b + p*K*nr,
// B(k, p*nr + j) at panel[k*nr + j] (see pack_b_panels with k0 = 0, kc = K).
// Called once for each block of C the driver has finished (every K block
// added; rows [i0, i0 + m), columns [j0, j0 + n) of the call's C), on the
// thread that computed it, while the block is still in cache: the fp32
// matmul's post-op chain runs here.  Blocks never overlap and together
// cover C once.
class c_block_done {
public:
    virtual ~c_block_done() = default;
    virtual void operator()(int64_t i0, int64_t m, int64_t j0, int64_t n) const = 0;
};

struct sgemm_problem {
    bool transa = false, transb = false;
    int64_t M = 0, N = 0, K = 0;
    float alpha = 1, beta = 0;
    const float *A = nullptr;
    int64_t lda = 0;
    const float *B = nullptr;
    int64_t ldb = 0;
    const float *packed_b = nullptr;
    float *C = nullptr;
    int64_t ldc = 0;
    const c_block_done *on_done = nullptr;  // prepacked B only (the blocked paths)
};

// The problem of one BLAS-style call (row-major, anvil_sgemm's arguments
// after validation; pointers may be null where the call does not read them).
inline sgemm_problem blas_problem(bool transa, bool transb, int64_t M, int64_t N, int64_t K,
                                  float alpha, const float *A, int64_t lda, const float *B,
                                  int64_t ldb, float beta, float *C, int64_t ldc) {
    sgemm_problem p;
    p.transa = transa;
    p.transb = transb;
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
    return p;
}

// Runs the problem.  Fetches every kernel and buffer it needs before it
// writes C, so a failure (JIT, memory) leaves C untouched.
anvil_status_t run_sgemm(const backend &be, const sgemm_problem &p);

// The kernel run_sgemm runs the whole of p with (small shapes in one K
// block), fetched or generated now, and the B row stride it reads B with
// (the panel width for a prepacked B); a null out->fn when p runs another
// way.  A caller that repeats p's shape, transposes, leading dimensions,
// alpha == 1 and beta kind (classify_beta) with other data may run it
// with run_whole_kernel and skip the per-call lookups (the planned handle).
anvil_status_t whole_kernel_for(const backend &be, const sgemm_problem &p, ukernel_ref *out,
                                int64_t *b_ld);
void run_whole_kernel(ukernel_fn fn, const sgemm_problem &p, int64_t b_ld);

// C = beta * C (0 when beta == 0, without reading C): alpha == 0 or K == 0.
void scale_c(const sgemm_problem &p);

// Frees this thread's packing scratch (anvil_release_thread_scratch).
void release_thread_scratch();

}  // namespace anvil::gemm
