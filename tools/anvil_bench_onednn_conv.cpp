// anvil-bench: oneDNN's convolution primitive (the conv peer).
#include "anvil_bench_onednn_conv.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>
#include <vector>

#include "anvil_bench_onednn_lowp.h"

namespace anvil_bench {

struct onednn_conv::state {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::convolution_forward prim;
    std::unordered_map<int, dnnl::memory> args;
    std::vector<int32_t> zp_src, zp_dst;  // runtime zero points
    std::string impl;
};

onednn_conv::onednn_conv() = default;
onednn_conv::~onednn_conv() = default;

bool onednn_conv::init(const conv_types &t, const anvil::conv::conv_shape &s,
                       anvil_conv_weights_layout_t layout, const void *src, const void *wei,
                       void *dst, const attr_spec &a, const attr_data &ad, std::string *err) {
    using namespace dnnl;
    using dims = memory::dims;
    using tag = memory::format_tag;
    // oneDNN 2.6's convolutions crash (SIGSEGV in brgconv's execute) on a
    // sum post-op with more post-ops when some output's window lies wholly
    // in the padding (seen in f32, bf16 and int8: e.g. kh3 ph3 with
    // clip+sum, kh7 ph7 with relu+sum); such problems get no peer.
    bool has_sum = false;
    for (const post_op_spec &o : a.ops) has_sum = has_sum || o.sum;
    const int64_t ekh = (s.kh - 1) * (s.dh + 1), ekw = (s.kw - 1) * (s.dw + 1);
    const bool all_padding_window = ekh < s.pt || ekw < s.pl || (s.oh - 1) * s.sh - s.pt >= s.ih ||
                                    (s.ow - 1) * s.sw - s.pl >= s.iw;
    if (has_sum && a.ops.size() > 1 && all_padding_window) {
        *err = "no oneDNN peer: oneDNN 2.6 crashes on a sum with other post-ops when an output's "
               "window is all padding";
        return false;
    }
    try {
        auto st = std::make_unique<state>();
        const int64_t G = s.g, OCg = s.oc / s.g, ICg = s.ic / s.g;
        const memory::desc src_md({s.mb, s.ic, s.ih, s.iw}, to_dnnl(t.src), tag::nhwc);
        const memory::desc dst_md({s.mb, s.oc, s.oh, s.ow}, to_dnnl(t.dst), tag::nhwc);
        // Plain weights: oc = g * OCg + o everywhere.
        dims wdims, wstrides;
        if (layout == anvil_conv_weights_oihw) {  // [OC][ICg][KH][KW]
            const int64_t ko = ICg * s.kh * s.kw;
            wdims = {G, OCg, ICg, s.kh, s.kw};
            wstrides = {OCg * ko, ko, s.kh * s.kw, s.kw, 1};
        } else {  // [KH][KW][ICg][OC]
            wdims = {G, OCg, ICg, s.kh, s.kw};
            wstrides = {OCg, 1, s.oc, s.kw * ICg * s.oc, ICg * s.oc};
        }
        if (G == 1) {
            wdims.erase(wdims.begin());
            wstrides.erase(wstrides.begin());
        }
        const memory::desc user_wei_md(wdims, to_dnnl(t.wei), wstrides);
        const memory::desc wei_md(wdims, to_dnnl(t.wei), tag::any);
        const memory::desc bias_md({s.oc}, memory::data_type::f32, tag::a);
        const dims strides = {s.sh, s.sw}, dil = {s.dh, s.dw}, pl = {s.pt, s.pl},
                   pr = {s.pb, s.pr};

        post_ops po;
        const binary_mds bin_mds =
            append_post_ops(po, a, [&](const post_op_spec &o, size_t b) {
                const int64_t ld = ad.bin_ld[b];
                return o.per_n ? memory::desc({1, s.oc, 1, 1}, to_dnnl(o.src_dt),
                                              dims{s.oc, 1, s.oc, s.oc})
                               : memory::desc({s.mb, s.oc, s.oh, s.ow}, to_dnnl(o.src_dt),
                                              dims{s.oh * s.ow * ld, 1, s.ow * ld, ld});
            });
        auto make_pd = [&](bool runtime_zp) {
            primitive_attr attr;
            if (a.scale_mode) attr.set_output_scales(a.scale_mode == 2 ? 2 : 0, ad.scales);
            const int32_t rt = DNNL_RUNTIME_S32_VAL;
            if (a.zp_src) attr.set_zero_points(DNNL_ARG_SRC, 0, {runtime_zp ? rt : a.zp_src});
            if (a.zp_dst) attr.set_zero_points(DNNL_ARG_DST, 0, {runtime_zp ? rt : a.zp_dst});
            if (!a.ops.empty()) attr.set_post_ops(po);
            const auto fwd = prop_kind::forward_inference;
            const auto alg = algorithm::convolution_direct;
            return a.bias ? convolution_forward::primitive_desc(
                                convolution_forward::desc(fwd, alg, src_md, wei_md, bias_md,
                                                          dst_md, strides, dil, pl, pr),
                                attr, st->eng)
                          : convolution_forward::primitive_desc(
                                convolution_forward::desc(fwd, alg, src_md, wei_md, dst_md,
                                                          strides, dil, pl, pr),
                                attr, st->eng);
        };
        // Constant zero points first; oneDNN 2.6 convolutions mostly take
        // them only as runtime values.
        bool runtime_zp = false;
        convolution_forward::primitive_desc pd;
        try {
            pd = make_pd(false);
        } catch (const dnnl::error &e) {
            if (!a.zp_src && !a.zp_dst) throw;
            runtime_zp = true;
            pd = make_pd(true);
        }
        st->impl = pd.impl_info_str();
        st->prim = convolution_forward(pd);
        memory user(user_wei_md, st->eng, const_cast<void *>(wei));
        memory weights(pd.weights_desc(), st->eng);
        reorder(user, weights).execute(st->strm, user, weights);
        st->strm.wait();
        st->args = {{DNNL_ARG_SRC, memory(src_md, st->eng, const_cast<void *>(src))},
                    {DNNL_ARG_WEIGHTS, weights},
                    {DNNL_ARG_DST, memory(dst_md, st->eng, dst)}};
        insert_attr_args(st->args, st->eng, a, ad, bias_md, bin_mds);
        if (runtime_zp) {
            const memory::desc zp_md({1}, memory::data_type::s32, tag::a);
            st->zp_src = {a.zp_src};
            st->zp_dst = {a.zp_dst};
            if (a.zp_src)
                st->args.insert({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                                 memory(zp_md, st->eng, st->zp_src.data())});
            if (a.zp_dst)
                st->args.insert({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
                                 memory(zp_md, st->eng, st->zp_dst.data())});
            st->impl += " (runtime zero points)";
        }
        s_ = std::move(st);
        return true;
    } catch (const dnnl::error &e) {
        *err = "oneDNN " + t.name + " convolution (" + a.str() + "): " + e.what();
        return false;
    }
}

void onednn_conv::execute() {
    s_->prim.execute(s_->strm, s_->args);
    s_->strm.wait();
}

const std::string &onednn_conv::impl() const {
    static const std::string none = "none";
    return s_ ? s_->impl : none;
}

}  // namespace anvil_bench
