// Which post-op chains the lp kernels can finish themselves (the fused
// epilogue of lp_ukernel.h: the chain applied to the accumulator registers
// and C stored straight from them, bit for bit the portable chain), and
// the descriptor bits that say how.  Shared by the matmul driver and the
// convolution's GEMM path.
#pragma once
#include <cstdint>

#include "lowp/chain_epilogue.h"

namespace anvil::lowp {

struct fused_chain {
    uint8_t out = EPI_NONE;  // EPI_F32 .. EPI_S8
    uint8_t flags = 0;       // EPI_COMP | EPI_SCALE_* | EPI_ZP | EPI_RELU / EPI_LEAKY (no EPI_BIAS)
    uint8_t ops = 0;         // EPI_ADD_* | EPI_ADD_LATE | EPI_ELT_*
    int binary_op = -1;      // index in spec.ops of the residual add (or sum), or -1
    int eltwise_op = -1;     // index in spec.ops of the eltwise op, or -1
};

// True, with *out filled, when the chain fits: no B zero point (its row
// sums), an output of f32 / bf16 / u8 / s8, and at most one binary op
// (add or mul with an M x N tensor or a per-N vector, f32 or bf16, or a
// sum op: the output's old values) and one eltwise op among relu,
// leaky_relu, gelu_tanh, gelu_erf, silu, sigmoid and tanh, in either order.  EPI_BIAS is
// the caller's to add (whether a bias is given can change per call).
bool fuse_chain(const chain_spec &spec, fused_chain *out);

}  // namespace anvil::lowp
