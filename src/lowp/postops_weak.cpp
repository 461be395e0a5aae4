// TEMPORARY scalar definitions of the post-op steps until the Highway ones
// (src/fallback/hwy_postops.cc) land; weak, so those replace them.
#include <cmath>
#include <cstring>

#include "lowp/lp_ref.h"
#include "lowp/postops.h"

namespace anvil::lowp {

__attribute__((weak)) void pp_scale_bias(float *x, int64_t n, const float *scales, bool per_n,
                                         const float *bias) {
    if (scales)
        for (int64_t c = 0; c < n; ++c) x[c] = x[c] * scales[per_n ? c : 0];
    if (bias)
        for (int64_t c = 0; c < n; ++c) x[c] = x[c] + bias[c];
}

__attribute__((weak)) void pp_apply(float *x, int64_t n, int64_t i, int64_t j0, const post_op *ops,
                                    int nops, const void *const *srcs) {
    for (int t = 0; t < nops; ++t) {
        const post_op &o = ops[t];
        for (int64_t c = 0; c < n; ++c) {
            float v = x[c];
            if (o.is_binary) {
                const int64_t at = o.per_n ? j0 + c : i * o.ld + j0 + c;
                const float s = o.src_bf16 ? bf16_to_f32(static_cast<const uint16_t *>(srcs[t])[at])
                                           : static_cast<const float *>(srcs[t])[at];
                v = o.binary == binary_alg::add ? v + s : v * s;
            } else {
                switch (o.eltwise) {
                    case eltwise_alg::relu: v = v > 0 ? v : 0; break;
                    case eltwise_alg::leaky_relu: v = v > 0 ? v : o.alpha * v; break;
                    case eltwise_alg::clip: v = std::min(std::max(v, o.alpha), o.beta); break;
                    case eltwise_alg::gelu_tanh:
                        v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
                        break;
                    case eltwise_alg::gelu_erf: v = 0.5f * v * (1.0f + std::erf(v * 0.70710678f)); break;
                    case eltwise_alg::silu: v = v / (1.0f + std::exp(-v)); break;
                    case eltwise_alg::sigmoid: v = 1.0f / (1.0f + std::exp(-v)); break;
                    case eltwise_alg::tanh: v = std::tanh(v); break;
                }
            }
            x[c] = v;
        }
    }
}

__attribute__((weak)) void pp_store(const float *x, int64_t n, float zero_point, out_type type,
                                    void *dst) {
    for (int64_t c = 0; c < n; ++c) {
        float v = zero_point != 0.0f ? x[c] + zero_point : x[c];
        switch (type) {
            case out_type::f32: static_cast<float *>(dst)[c] = v; break;
            case out_type::bf16: static_cast<uint16_t *>(dst)[c] = f32_to_bf16(v); break;
            default: {
                const double lo = type == out_type::s32 ? -2147483648.0 : type == out_type::u8 ? 0.0 : -128.0;
                const double hi = type == out_type::s32 ? 2147483647.0 : type == out_type::u8 ? 255.0 : 127.0;
                double r = v != v ? 0.0 : std::nearbyint(double(v));
                r = r < lo ? lo : r > hi ? hi : r;
                if (type == out_type::s32) static_cast<int32_t *>(dst)[c] = int32_t(r);
                else if (type == out_type::u8) static_cast<uint8_t *>(dst)[c] = uint8_t(r);
                else static_cast<int8_t *>(dst)[c] = int8_t(r);
            }
        }
    }
}

}  // namespace anvil::lowp
