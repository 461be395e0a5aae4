// The low-precision GEMM driver: packs A and B into the k-group layout,
// runs the lp micro-kernels over cache blocks into per-thread accumulator
// blocks and hands each finished block to the epilogue (the only writer of C).
#pragma once
#include <cstdint>

#include "anvil/anvil.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_epilogue.h"
#include "lowp/lp_pack.h"

namespace anvil::lowp {

// One validated problem (row-major, see anvil.h).  Either B (packed per
// call) or packed_b (panels from pack_b over all of N; with packed_colsum
// when the epilogue needs column sums) is set.
struct lp_problem {
    lp_kind kind = lp_kind::bf16;
    lp_elem a_elem = lp_elem::bf16;
    bool transa = false, transb = false;
    int64_t M = 0, N = 0, K = 0;
    const void *A = nullptr;
    int64_t lda = 0;
    const void *B = nullptr;
    int64_t ldb = 0;
    const uint8_t *packed_b = nullptr;
    const int32_t *packed_colsum = nullptr;
    // The product is known to be zero (K == 0, or a BLAS alpha == 0): no
    // kernel runs and A and B are not read; the epilogue sees zeros.
    bool zero_product = false;
};

// The problem of one BLAS-style call (anvil_gemm_bf16bf16f32's or
// anvil_gemm_[us]8s8s32's arguments after validation).
inline lp_problem blas_lp_problem(lp_kind kind, lp_elem a_elem, bool transa, bool transb,
                                  int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                                  const void *B, int64_t ldb, bool zero_product) {
    lp_problem p;
    p.kind = kind;
    p.a_elem = a_elem;
    p.transa = transa;
    p.transb = transb;
    p.M = M;
    p.N = N;
    p.K = K;
    p.A = A;
    p.lda = lda;
    p.B = B;
    p.ldb = ldb;
    p.zero_product = zero_product;
    return p;
}

// Blocking of one call (in k-groups, rows and columns).
struct lp_blocking {
    int64_t kg = 0;      // k-groups in all
    int64_t kcg = 0;     // k-groups per K block (the B micro-panel in L1)
    int64_t mc = 0;      // rows per M block (multiple of kMR unless M is smaller)
    int64_t nc = 0;      // columns per N block (multiple of kNR)
    int nthreads = 1;
};
lp_blocking choose_lp_blocking(const lp_problem &p);
// Whether the packed path's kernels read A's rows in place (no copy); see
// lp_driver.cpp.  want_rowsum: the epilogue needs A's row sums.
bool a_read_in_place(const lp_backend &be, const lp_problem &p, bool want_rowsum);
// Whether the packed path runs bf16 kernels on A widened to fp32
// (lp_ukernel.h's a_f32; see lp_driver.cpp).
bool widen_bf16_a(const lp_backend &be, const lp_problem &p);
// Whether other callers (convolution) widen: the override, else the
// backend's preference where the caller judged that widening pays.
bool widen_bf16_a_when(const lp_backend &be, bool pays);
// Tests: 1 widens A wherever the backend takes a_f32 kernels (any M, any
// CPU), 0 never, -1 (the default) as the CPU prefers.  The bits are the
// same either way (denormals aside).
void set_widen_bf16_a_override(int mode);

// Runs the problem.  Fetches kernels and memory before writing C, so a
// failure leaves C untouched.
anvil_status_t run_lp_gemm(const lp_backend &be, const lp_problem &p, const lp_epilogue &epi);

}  // namespace anvil::lowp
