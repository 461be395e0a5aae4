// The implicit-GEMM convolution driver (the gemm paths of conv_plan.h):
// output pixels in row tiles, output channels in 32-wide panels of packed
// weights, micro-kernel calls walking (kh, kw) over the source in place,
// and the matmul's post-op chain on each finished tile.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "anvil/anvil.h"
#include "conv/conv_plan.h"
#include "gemm/backend.h"
#include "lowp/chain_epilogue.h"
#include "lowp/lp_backend.h"

namespace anvil::conv {

constexpr int kConvMaxMR = 16;

// Kernels a handle needs, fetched once at creation (and kept alive here,
// whatever the kernel cache evicts later).
struct conv_gemm_kernels {
    int mr = 0;        // rows per tile (the backend's)
    int nrb = 0;       // f32: columns per kernel call (min(backend nr, 32))
    // f32: [beta one?][m][n]; lp: [accumulate][m][nv]
    gemm::ukernel_fn f32[2][kConvMaxMR + 1][kConvNR + 1] = {};
    lowp::lp_ukernel_fn lp[2][kConvMaxMR + 1][3] = {};
    // Tile backends (AMX): the backend, and each lp kernel's tile
    // configuration, loaded on the calling thread before the call.
    const lowp::lp_backend *tile_backend = nullptr;
    const void *lp_tile_config[2][kConvMaxMR + 1][3] = {};
    // lp kernels with the chain fused into their store (JIT AVX-512, chains
    // without post-ops): [bias given][accumulate][m][nv]; null when not used.
    bool fused = false;
    bool k_segments = false;  // the kernels honour k_segs (lp: all; f32: the beta = 0 ones)
    lowp::lp_ukernel_fn lp_fused[2][2][kConvMaxMR + 1][3] = {};
    // fp32 kernels with the chain fused into their store (JIT AVX-512:
    // bias, one of relu / leaky_relu / clip, an f32 residual add):
    // [bias given][m][n]; f32_epi says whether they are there.
    bool f32_epi = false;
    gemm::ukernel_fn f32_fused[2][kConvMaxMR + 1][kConvNR + 1] = {};
    // Some kernels store non-temporally: each worker runs cpu::store_fence()
    // after its last call.
    bool nt_stores = false;
    std::vector<std::shared_ptr<const void>> keep_alive;
    std::string backend_name;
};

anvil_status_t prepare_conv_gemm_kernels(const conv_plan &p, const lowp::chain_spec &chain,
                                         conv_gemm_kernels *k);

// One execute call's operands.
struct conv_operands {
    const void *src = nullptr;
    const uint8_t *weights = nullptr;  // the packed weights after the header
    const float *bias = nullptr;
    void *dst = nullptr;
    const void *const *binary = nullptr;  // one per post-op (nullptr for eltwise)
};

// Runs the convolution.  Takes all scratch memory before writing dst, so
// a failure leaves dst untouched.
anvil_status_t run_conv_gemm(const conv_plan &p, const conv_gemm_kernels &k,
                             const lowp::chain_spec &chain, int32_t src_zero_point,
                             const conv_operands &ops);

}  // namespace anvil::conv
