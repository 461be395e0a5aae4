#include "lowp/chain_describe.h"

#include <cstdio>

namespace anvil::lowp {

namespace {

const char *eltwise_name(eltwise_alg a) {
    switch (a) {
        case eltwise_alg::relu: return "relu";
        case eltwise_alg::leaky_relu: return "leaky_relu";
        case eltwise_alg::clip: return "clip";
        case eltwise_alg::gelu_tanh: return "gelu_tanh";
        case eltwise_alg::gelu_erf: return "gelu_erf";
        case eltwise_alg::silu: return "silu";
        case eltwise_alg::sigmoid: return "sigmoid";
        case eltwise_alg::tanh: return "tanh";
    }
    return "?";
}

// Shortest text that reads back as the same float.
std::string float_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", double(v));
    return buf;
}

}  // namespace

const char *out_type_name(out_type t) {
    switch (t) {
        case out_type::f32: return "f32";
        case out_type::bf16: return "bf16";
        case out_type::s32: return "s32";
        case out_type::u8: return "u8";
        case out_type::s8: return "s8";
    }
    return "?";
}

std::string post_ops_string(const std::vector<post_op> &ops) {
    if (ops.empty()) return "none";
    std::string s;
    for (const post_op &op : ops) {
        if (!s.empty()) s += "+";
        if (op.is_sum()) {  // anvil-bench's spelling: sum[:SCALE[:ZERO_POINT]]
            s += "sum";
            if (op.alpha != 1.0f || op.beta != 0.0f) s += ":" + float_text(op.alpha);
            if (op.beta != 0.0f) s += ":" + float_text(op.beta);
            continue;
        }
        if (op.is_binary) {
            s += op.binary == binary_alg::add ? "add" : "mul";
            if (op.src_bf16) s += ":bf16";
            if (op.per_n) s += ":per_oc";
            continue;
        }
        s += eltwise_name(op.eltwise);
        if (op.eltwise == eltwise_alg::leaky_relu) s += ":" + float_text(op.alpha);
        if (op.eltwise == eltwise_alg::clip) s += ":" + float_text(op.alpha) + ":" + float_text(op.beta);
    }
    return s;
}

std::string chain_fields(const chain_spec &c, bool has_bias, int32_t src_zp, int32_t wei_zp,
                         int32_t dst_zp) {
    std::string s = std::string("dst=") + out_type_name(c.out) + ",scales=";
    if (c.scales.empty())
        s += "none";
    else if (c.scales_per_n)
        s += "per_oc";
    else
        s += "common:" + float_text(c.scales[0]);
    std::string zp;
    auto add_zp = [&](const char *name, int32_t v) {
        if (v == 0) return;
        if (!zp.empty()) zp += ":";
        zp += std::string(name) + ":" + std::to_string(v);
    };
    add_zp("src", src_zp);
    add_zp("wei", wei_zp);
    add_zp("dst", dst_zp);
    s += ",zero_points=" + (zp.empty() ? std::string("none") : zp);
    s += std::string(",bias=") + (has_bias ? "1" : "0");
    s += ",post_ops=" + post_ops_string(c.ops);
    return s;
}

}  // namespace anvil::lowp
