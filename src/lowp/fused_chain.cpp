#include "lowp/fused_chain.h"

namespace anvil::lowp {
namespace {

bool eltwise_bits(const post_op &o, uint8_t *flags, uint8_t *ops) {
    switch (o.eltwise) {
        case eltwise_alg::relu: *flags |= EPI_RELU; return true;
        case eltwise_alg::leaky_relu: *flags |= EPI_LEAKY; return true;
        case eltwise_alg::gelu_tanh: *ops |= EPI_ELT_GELU_TANH; return true;
        case eltwise_alg::silu: *ops |= EPI_ELT_SILU; return true;
        case eltwise_alg::sigmoid: *ops |= EPI_ELT_SIGMOID; return true;
        case eltwise_alg::gelu_erf: *ops |= EPI_ELT_GELU_ERF; return true;
        case eltwise_alg::tanh: *ops |= EPI_ELT_TANH; return true;
        case eltwise_alg::clip: *ops |= EPI_ELT_CLIP; return true;
        default: return false;
    }
}

}  // namespace

bool fuse_chain(const chain_spec &spec, fused_chain *out) {
    if (spec.ops.size() > 2 || spec.bo != 0) return false;
    fused_chain f;
    switch (spec.out) {
        case out_type::f32: f.out = EPI_F32; break;
        case out_type::bf16: f.out = EPI_BF16; break;
        case out_type::u8: f.out = EPI_U8; break;
        case out_type::s8: f.out = EPI_S8; break;
        default: return false;
    }
    for (size_t t = 0; t < spec.ops.size(); ++t) {
        const post_op &o = spec.ops[t];
        if (o.is_binary) {
            if (f.binary_op >= 0) return false;
            f.binary_op = int(t);
            f.ops |= o.is_sum() ? EPI_ADD_SUM : o.src_bf16 ? EPI_ADD_BF16 : EPI_ADD_F32;
            if (o.binary == binary_alg::mul) f.ops |= EPI_BIN_MUL;  // (per_n: row stride 0)
            if (f.eltwise_op >= 0) f.ops |= EPI_ADD_LATE;
        } else {
            if (f.eltwise_op >= 0 || !eltwise_bits(o, &f.flags, &f.ops)) return false;
            f.eltwise_op = int(t);
        }
    }
    if (spec.kind == lp_kind::u8s8 && spec.ao + spec.a_shift != 0) f.flags |= EPI_COMP;
    if (!spec.scales.empty()) f.flags |= spec.scales_per_n ? EPI_SCALE_N : EPI_SCALE_1;
    if (spec.c_zero_point != 0.0f) f.flags |= EPI_ZP;
    *out = f;
    return true;
}

}  // namespace anvil::lowp
