#include "api/post_op_map.h"

#include <cmath>
#include <cstdint>

#include <algorithm>

namespace anvil::api {

anvil_status_t map_post_op(const anvil_post_op_t &in, int64_t N, lowp::post_op *out) {
    const int kind = enum_value(in.kind);
    if (kind == anvil_post_op_eltwise) {
        if (in.alg < anvil_eltwise_relu || in.alg > anvil_eltwise_tanh) return anvil_invalid_argument;
        out->is_binary = false;
        out->eltwise = lowp::eltwise_alg(in.alg);
        out->alpha = in.alpha;
        out->beta = in.beta;
        if (in.alg == anvil_eltwise_clip && !(in.alpha <= in.beta)) return anvil_invalid_argument;
        return anvil_success;
    }
    if (kind == anvil_post_op_sum) {
        // The operand is C itself (c_dt, ldc): the handle sets sum_type and
        // ld (set_sum_operand) and passes C at each call.
        if (!std::isfinite(in.alpha) || !std::isfinite(in.beta)) return anvil_invalid_argument;
        out->is_binary = true;
        out->binary = lowp::binary_alg::sum;
        out->alpha = in.alpha;
        out->beta = in.beta;
        return anvil_success;
    }
    if (kind != anvil_post_op_binary) return anvil_invalid_argument;
    if (in.alg != anvil_binary_add && in.alg != anvil_binary_mul) return anvil_invalid_argument;
    const int src_dt = enum_value(in.src_dt);
    if (!valid_dt(in.src_dt)) return anvil_invalid_argument;
    if (src_dt != anvil_dt_f32 && src_dt != anvil_dt_bf16) return anvil_unsupported;
    out->is_binary = true;
    out->binary = lowp::binary_alg(in.alg);
    out->per_n = in.per_n != 0;
    out->src_bf16 = src_dt == anvil_dt_bf16;
    out->ld = in.ld;
    if (!out->per_n && in.ld < std::max<int64_t>(1, N)) return anvil_bad_leading_dim;
    // Its row stride in bytes must be representable (the epilogues form it).
    if (!out->per_n && in.ld > INT64_MAX / 4) return anvil_size_overflow;
    return anvil_success;
}

lowp::out_type map_out(anvil_data_type_t t) {
    switch (t) {
        case anvil_dt_f32: return lowp::out_type::f32;
        case anvil_dt_bf16: return lowp::out_type::bf16;
        case anvil_dt_s32: return lowp::out_type::s32;
        case anvil_dt_u8: return lowp::out_type::u8;
        default: return lowp::out_type::s8;
    }
}

}  // namespace anvil::api
