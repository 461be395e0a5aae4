// The fp32 form of the matmul handle (a_dt = b_dt = f32): B packed once in
// the fp32 GEMM's panels (the gemm plan's layout, which depends on the
// backend's panel width), the product computed by the fp32 GEMM driver,
// and the matmul's post-op chain (lowp::chain_epilogue, the one the bf16
// matmul runs on its fp32 accumulators) applied to each block of C as the
// driver finishes it (gemm::c_block_done), while the block is in cache.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"

namespace anvil::gemm {
class backend;
}
namespace anvil::lowp {
struct chain_spec;
}

namespace anvil::api {

// Bytes of B packed for `be` (K x N in panels of be.nr() columns), or
// anvil_size_overflow.
anvil_status_t f32_matmul_panel_bytes(const gemm::backend &be, int64_t K, int64_t N,
                                      int64_t *bytes);
void f32_matmul_pack(const gemm::backend &be, bool transb, int64_t K, int64_t N, const float *B,
                     int64_t ldb, float *panels);

struct f32_matmul_call {
    bool transa = false;
    int64_t M = 0, N = 0, K = 0;
    const float *A = nullptr;
    int64_t lda = 0;
    const float *panels = nullptr;
    void *C = nullptr;  // f32 or bf16 (chain.out)
    int64_t ldc = 0;
    const void *const *srcs = nullptr;  // one per post-op (nullptr for eltwise)
};

// Runs the call on *be; on a JIT failure (nothing written) it retries on a
// non-JIT backend reading panels of the same width where the JIT policy
// allows, updating *be.  M, N > 0.
anvil_status_t f32_matmul_run(const gemm::backend **be, const lowp::chain_spec &chain,
                              const f32_matmul_call &call);

}  // namespace anvil::api
