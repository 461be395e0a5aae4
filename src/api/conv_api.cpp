// anvil_conv2d_*: the convolution handle (see anvil.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "anvil/anvil.h"
#include "api/post_op_map.h"
#include "common/memory.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "conv/conv_dw.h"
#include "conv/conv_gemm.h"
#include "conv/conv_pack.h"
#include "conv/conv_plan.h"
#include "lowp/chain_describe.h"
#include "threading/parallel.h"
#include "lowp/chain_epilogue.h"

using namespace anvil;

struct anvil_conv2d {
    anvil_conv2d_desc_t d{};  // pointers cleared (their data is copied below)
    conv::conv_plan plan;
    lowp::chain_spec chain;
    int num_binary = 0;
    conv::conv_gemm_kernels gemm_kernels;
    conv::conv_dw_kernels dw_kernels;
    int64_t packed_bytes = 0;  // header + weights
    std::string name;          // for ANVIL_VERBOSE lines
};

namespace {

// The packed weights start with this header so that a buffer made for
// another shape or type is refused instead of misread.  It records nothing
// about the CPU: the layout is the same for every backend.
struct packed_header {
    char magic[8];  // "ANVLCNV1"
    uint32_t path, src;
    int64_t G, IC, OC, KH, KW;
    int64_t weights_bytes;
};
static_assert(sizeof(packed_header) == 64, "the packed header is 64 bytes");
constexpr char kMagic[8] = {'A', 'N', 'V', 'L', 'C', 'N', 'V', '1'};

bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

anvil_status_t check_types(const anvil_conv2d_desc_t &d) {
    using api::valid_dt;
    if (!valid_dt(d.src_dt) || !valid_dt(d.wei_dt) || !valid_dt(d.dst_dt)) return anvil_invalid_argument;
    const bool f32 = d.src_dt == anvil_dt_f32 && d.wei_dt == anvil_dt_f32;
    const bool bf16 = d.src_dt == anvil_dt_bf16 && d.wei_dt == anvil_dt_bf16;
    const bool int8 = (d.src_dt == anvil_dt_u8 || d.src_dt == anvil_dt_s8) && d.wei_dt == anvil_dt_s8;
    if (f32 && d.dst_dt != anvil_dt_f32) return anvil_unsupported;
    if (bf16 && d.dst_dt != anvil_dt_f32 && d.dst_dt != anvil_dt_bf16) return anvil_unsupported;
    if (!f32 && !bf16 && !int8) return anvil_unsupported;
    if (!int8 && (d.src_zero_point || d.dst_zero_point)) return anvil_invalid_argument;
    if (d.src_dt == anvil_dt_u8 && (d.src_zero_point < 0 || d.src_zero_point > 255))
        return anvil_invalid_argument;
    if (d.src_dt == anvil_dt_s8 && (d.src_zero_point < -128 || d.src_zero_point > 127))
        return anvil_invalid_argument;
    return anvil_success;
}

// Sizes, groups, output size and every byte count the handle may need.
anvil_status_t check_geometry(const anvil_conv2d_desc_t &d, conv::conv_geom *g) {
    if (d.N < 0 || d.IC <= 0 || d.IH <= 0 || d.IW <= 0 || d.OC <= 0 || d.OH <= 0 || d.OW <= 0 ||
        d.KH <= 0 || d.KW <= 0 || d.SH <= 0 || d.SW <= 0)
        return anvil_bad_size;
    if (d.pad_t < 0 || d.pad_l < 0 || d.pad_b < 0 || d.pad_r < 0 || d.DH < 0 || d.DW < 0)
        return anvil_bad_size;
    if (d.G <= 0 || d.IC % d.G != 0 || d.OC % d.G != 0) return anvil_invalid_argument;
    // Every product below must fit (with room for the kernels' byte
    // offsets); a 2^40 cap on each factor keeps the sums from overflowing.
    const int64_t kCap = int64_t(1) << 40;
    const int64_t dims[] = {d.N, d.IC, d.IH, d.IW, d.OC, d.OH, d.OW, d.KH, d.KW, d.SH, d.SW,
                            d.pad_t, d.pad_l, d.pad_b, d.pad_r, d.DH, d.DW};
    for (int64_t v : dims)
        if (v > kCap) return anvil_size_overflow;
    int64_t ext_h, ext_w, t;
    if (!mul_ok(d.KH - 1, d.DH + 1, &ext_h) || !mul_ok(d.KW - 1, d.DW + 1, &ext_w))
        return anvil_size_overflow;
    const int64_t num_h = d.IH + d.pad_t + d.pad_b - (ext_h + 1);
    const int64_t num_w = d.IW + d.pad_l + d.pad_r - (ext_w + 1);
    if (num_h < 0 || num_w < 0) return anvil_invalid_argument;  // kernel larger than the input
    if (d.OH != num_h / d.SH + 1 || d.OW != num_w / d.SW + 1) return anvil_invalid_argument;
    // Source and destination elements (with padding, at 4 bytes each),
    // weights (packed K x OC at 4 bytes, rounded up a little).
    const int64_t hp = d.IH + d.pad_t + d.pad_b, wp = d.IW + d.pad_l + d.pad_r;
    if (!mul_ok(d.N, hp, &t) || !mul_ok(t, wp, &t) || !mul_ok(t, d.IC + 3 * d.G, &t) ||
        !mul_ok(t, 16, &t))
        return anvil_size_overflow;
    if (!mul_ok(d.N, d.OH, &t) || !mul_ok(t, d.OW, &t) || !mul_ok(t, d.OC, &t) || !mul_ok(t, 16, &t))
        return anvil_size_overflow;
    if (!mul_ok(d.KH, d.KW, &t) || !mul_ok(t, d.IC / d.G + 4, &t) || !mul_ok(t, d.OC + 32 * d.G, &t) ||
        !mul_ok(t, 16, &t))
        return anvil_size_overflow;
    g->N = d.N;
    g->G = d.G;
    g->IC = d.IC;
    g->IH = d.IH;
    g->IW = d.IW;
    g->OC = d.OC;
    g->OH = d.OH;
    g->OW = d.OW;
    g->KH = d.KH;
    g->KW = d.KW;
    g->SH = d.SH;
    g->SW = d.SW;
    g->PT = d.pad_t;
    g->PL = d.pad_l;
    g->PB = d.pad_b;
    g->PR = d.pad_r;
    g->DH = d.DH;
    g->DW = d.DW;
    g->ICg = d.IC / d.G;
    g->OCg = d.OC / d.G;
    return anvil_success;
}

std::string describe(const anvil_conv2d &c) {
    const conv::conv_geom &g = c.plan.g;
    std::string s = "mb" + std::to_string(g.N) + "_g" + std::to_string(g.G) + "ic" +
                    std::to_string(g.IC) + "ih" + std::to_string(g.IH) + "iw" + std::to_string(g.IW) +
                    "_oc" + std::to_string(g.OC) + "oh" + std::to_string(g.OH) + "ow" +
                    std::to_string(g.OW) + "_kh" + std::to_string(g.KH) + "kw" + std::to_string(g.KW) +
                    "sh" + std::to_string(g.SH) + "sw" + std::to_string(g.SW) + "ph" +
                    std::to_string(g.PT) + "pw" + std::to_string(g.PL);
    if (g.DH || g.DW) s += "dh" + std::to_string(g.DH) + "dw" + std::to_string(g.DW);
    return s;
}

}  // namespace

extern "C" {

anvil_status_t anvil_conv2d_create(anvil_conv2d_t *conv, const anvil_conv2d_desc_t *desc) {
    if (!conv || !desc) return anvil_null_pointer;
    try {
        auto c = std::make_unique<anvil_conv2d>();
        const anvil_conv2d_desc_t &d = *desc;
        anvil_status_t st = check_types(d);
        if (st != anvil_success) return st;
        conv::conv_geom g;
        if ((st = check_geometry(d, &g)) != anvil_success) return st;
        if (d.num_post_ops < 0 || d.num_post_ops > ANVIL_MAX_POST_OPS) return anvil_invalid_argument;
        if (d.num_post_ops > 0 && !d.post_ops) return anvil_null_pointer;
        if (d.scales_per_oc && !d.scales) return anvil_null_pointer;
        c->d = d;
        c->d.scales = nullptr;
        c->d.post_ops = nullptr;
        conv::make_conv_plan(g, d.src_dt, &c->plan);
        lowp::chain_spec &ch = c->chain;
        const bool int8 = d.src_dt == anvil_dt_u8 || d.src_dt == anvil_dt_s8;
        ch.kind = int8 ? lowp::lp_kind::u8s8 : lowp::lp_kind::bf16;  // bf16: fp32 accumulators
        ch.out = api::map_out(d.dst_dt);
        // The depthwise kernels subtract the source zero point themselves;
        // the GEMM kernels leave it to the column-sum compensation (with
        // the +128 shift of an s8 source).
        const bool dw = c->plan.path == conv::conv_path::depthwise;
        ch.ao = dw ? 0 : d.src_zero_point;
        ch.a_shift = !dw && d.src_dt == anvil_dt_s8 ? 128 : 0;
        ch.bo = 0;
        ch.K = c->plan.K;
        ch.c_zero_point = float(d.dst_zero_point);
        if (d.scales) ch.scales.assign(d.scales, d.scales + (d.scales_per_oc ? d.OC : 1));
        ch.scales_per_n = d.scales_per_oc != 0;
        for (int t = 0; t < d.num_post_ops; ++t) {
            lowp::post_op op;
            if ((st = api::map_post_op(d.post_ops[t], d.OC, &op)) != anvil_success) return st;
            if (op.is_sum()) {  // the operand is dst: its type and row stride
                op.sum_type = ch.out;
                op.ld = d.OC;
            }
            ch.ops.push_back(op);
            c->num_binary += op.takes_operand();
        }
        auto prepare = [&] {
            c->dw_kernels = conv::conv_dw_kernels{};
            c->gemm_kernels = conv::conv_gemm_kernels{};
            return dw ? conv::prepare_conv_dw_kernels(c->plan, c->chain, d.src_zero_point, &c->dw_kernels)
                      : conv::prepare_conv_gemm_kernels(c->plan, c->chain, &c->gemm_kernels);
        };
        st = prepare();
        // The JIT was turned off by a failure: the kernels come from Highway
        // or scalar code instead (the packed weights' layout does not depend
        // on the backend).
        if (jit_state::retry_without_jit(st)) st = prepare();
        if (st != anvil_success) return st;
        c->packed_bytes = int64_t(sizeof(packed_header)) + c->plan.weights_bytes;
        c->name = describe(*c);
        *conv = c.release();
        return anvil_success;
    } catch (const std::bad_alloc &) {
        return anvil_out_of_memory;
    }
}

anvil_status_t anvil_conv2d_packed_weights_size(anvil_conv2d_t conv, size_t *bytes) {
    if (!conv) return anvil_invalid_handle;
    if (!bytes) return anvil_null_pointer;
    if (!anvil::mem::fits_cap(conv->packed_bytes)) return anvil_out_of_memory;
    *bytes = size_t(conv->packed_bytes);
    return anvil_success;
}

anvil_status_t anvil_conv2d_pack_weights(anvil_conv2d_t conv, const void *weights,
                                         anvil_conv_weights_layout_t layout, void *packed) {
    if (!conv) return anvil_invalid_handle;
    if (!weights || !packed) return anvil_null_pointer;
    const int lay = api::enum_value(layout);
    if (lay != anvil_conv_weights_oihw && lay != anvil_conv_weights_hwio) return anvil_invalid_argument;
    if (reinterpret_cast<uintptr_t>(packed) % 4 != 0) return anvil_invalid_argument;
    if (!anvil::mem::fits_cap(conv->packed_bytes)) return anvil_out_of_memory;
    auto *out = static_cast<uint8_t *>(packed);
    const conv::conv_plan &p = conv->plan;
    anvil_status_t st = conv::pack_conv_weights(p, conv->d.wei_dt, weights,
                                                anvil_conv_weights_layout_t(lay), out + sizeof(packed_header));
    if (st != anvil_success) return st;
    packed_header h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    h.path = uint32_t(p.path);
    h.src = uint32_t(p.src);
    h.G = p.g.G;
    h.IC = p.g.IC;
    h.OC = p.g.OC;
    h.KH = p.g.KH;
    h.KW = p.g.KW;
    h.weights_bytes = p.weights_bytes;
    std::memcpy(out, &h, sizeof(h));
    return anvil_success;
}

anvil_status_t anvil_conv2d_execute(anvil_conv2d_t conv, const void *src, const void *packed,
                                    const float *bias, void *dst, const void *const *binary_srcs) {
    if (!conv) return anvil_invalid_handle;
    const conv::conv_plan &p = conv->plan;
    if (p.g.N == 0) return anvil_success;
    if (!src || !dst) return anvil_null_pointer;
    if (!packed) return anvil_bad_packed_buffer;
    if (reinterpret_cast<uintptr_t>(packed) % 4 != 0) return anvil_invalid_argument;
    packed_header h;
    std::memcpy(&h, packed, sizeof(h));
    if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.path != uint32_t(p.path) ||
        h.src != uint32_t(p.src) || h.G != p.g.G || h.IC != p.g.IC || h.OC != p.g.OC ||
        h.KH != p.g.KH || h.KW != p.g.KW || h.weights_bytes != p.weights_bytes)
        return anvil_bad_packed_buffer;
    const void *srcs[ANVIL_MAX_POST_OPS] = {};
    if (conv->num_binary > 0) {
        if (!binary_srcs) return anvil_null_pointer;
        int b = 0;
        for (size_t t = 0; t < conv->chain.ops.size(); ++t) {
            if (!conv->chain.ops[t].takes_operand()) continue;
            if (!binary_srcs[b]) return anvil_null_pointer;
            srcs[t] = binary_srcs[b++];
        }
    }
    for (size_t t = 0; t < conv->chain.ops.size(); ++t)
        if (conv->chain.ops[t].is_sum()) srcs[t] = dst;  // sum reads dst before storing it
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    conv::conv_operands ops;
    ops.src = src;
    ops.weights = static_cast<const uint8_t *>(packed) + sizeof(packed_header);
    ops.bias = bias;
    ops.dst = dst;
    ops.binary = srcs;
    anvil_status_t st;
    if (p.path == conv::conv_path::depthwise)
        st = conv::run_conv_dw(p, conv->dw_kernels, conv->chain, conv->d.src_zero_point, ops);
    else
        st = conv::run_conv_gemm(p, conv->gemm_kernels, conv->chain, conv->d.src_zero_point, ops);
    if (vl >= 2 && st == anvil_success) {
        const double us = (verbose::now_seconds() - t0) * 1e6;
        const char *path = p.path == conv::conv_path::depthwise ? "depthwise"
                           : p.path == conv::conv_path::gemm_lp ? "implicit_gemm_lp"
                                                                 : "implicit_gemm_f32";
        const std::string be = p.path == conv::conv_path::depthwise ? conv->dw_kernels.backend_name
                                                                    : conv->gemm_kernels.backend_name;
        const anvil_conv2d_desc_t &d = conv->d;
        verbose::emit(std::string("exec,op=conv2d,dt=") + api::dt_name(d.src_dt) + api::dt_name(d.wei_dt) +
                      api::dt_name(d.dst_dt) + ",problem=" + conv->name + "," +
                      lowp::chain_fields(conv->chain, bias != nullptr, d.src_zero_point, 0,
                                         d.dst_zero_point) +
                      ",path=" + path + ",backend=" + be +
                      ",threads=" + std::to_string(threading::num_threads()) +
                      ",status=success,time_us=" + std::to_string(us));
    }
    return st;
}

anvil_status_t anvil_conv2d_destroy(anvil_conv2d_t conv) {
    if (!conv) return anvil_invalid_handle;
    delete conv;
    return anvil_success;
}

}  // extern "C"
