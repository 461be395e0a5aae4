// The example graphs' operations on oneDNN 2.6 primitives, set up the way a
// oneDNN inference server would: matmul / convolution_forward with
// format_tag::any weights reordered once at construction (outside the
// timing), fused bias and post-ops (eltwise, binary add, or sum for int8
// residuals), output scales and zero points as constant attributes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "common/fill.h"
#include "common/ops.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ex {
namespace {

using namespace dnnl;
using tag = memory::format_tag;
using mdt = memory::data_type;

mdt ddt(DT t) {
    switch (t) {
    case DT::f32: return mdt::f32;
    case DT::bf16: return mdt::bf16;
    case DT::u8: return mdt::u8;
    default: return mdt::s8;
    }
}

struct Ctx {
    engine eng{engine::kind::cpu, 0};
    stream strm{eng};
};

Ctx &ctx() {
    static Ctx c;
    return c;
}

bool verbose() {
    static const bool v = std::getenv("EXAMPLES_VERBOSE") != nullptr;
    return v;
}

void set(memory &m, const void *p) { m.set_data_handle(const_cast<void *>(p)); }

// Reorders user weights into the layout the primitive chose (once).
memory reorder_weights(const memory::desc &user_md, const void *data, const memory::desc &want) {
    memory user(user_md, ctx().eng, const_cast<void *>(data));
    memory w(want, ctx().eng);
    reorder(user, w).execute(ctx().strm, user, w);
    ctx().strm.wait();
    return w;
}

class DnnlLinear final : public Linear {
public:
    DnnlLinear(const LinearSpec &s, double &setup) : s_(s), bias_(s.bias, s.bias + s.N) {
        const bool int8 = s.in == DT::u8;
        const mdt wdt = int8 ? mdt::s8 : ddt(s.in);
        std::vector<bf16_t> wb;
        QuantW wq;
        const void *W = s.W;
        std::vector<float> scales;
        if (int8) {
            wq = quantize_per_col(s.W, s.K, s.N);
            for (int64_t n = 0; n < s.N; ++n) {
                scales.push_back(wq.scales[size_t(n)] * s.a_scale);
                // oneDNN 2.6 adds the bias before the output scale.
                bias_[size_t(n)] /= scales.back();
            }
            W = wq.q.data();
        } else if (s.in == DT::bf16) {
            wb = to_bf16_vec(s.W, s.K * s.N);
            W = wb.data();
        }
        const auto t0 = steady::now();
        const memory::desc src_md({s.M, s.K}, ddt(s.in), tag::ab);
        const memory::desc wei_md({s.K, s.N}, wdt, tag::any);
        const memory::desc bias_md({1, s.N}, mdt::f32, tag::ab);
        const memory::desc dst_md({s.M, s.N}, ddt(s.out), tag::ab);
        const memory::desc res_md({s.M, s.N}, mdt::f32, tag::ab);
        post_ops po;
        if (s.gelu) po.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f);
        if (s.residual) po.append_binary(algorithm::binary_add, res_md);
        primitive_attr attr;
        attr.set_post_ops(po);
        if (int8) {
            attr.set_output_scales(2, scales);
            if (s.a_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {s.a_zp});
        }
        matmul::primitive_desc pd(matmul::desc(src_md, wei_md, bias_md, dst_md), attr, ctx().eng);
        if (verbose()) std::fprintf(stderr, "onednn linear %ldx%ldx%ld: %s\n", long(s.M),
                                    long(s.N), long(s.K), pd.impl_info_str());
        prim_ = matmul(pd);
        weights_ = reorder_weights(memory::desc({s.K, s.N}, wdt, tag::ab), W, pd.weights_desc());
        src_ = memory(src_md, ctx().eng, nullptr);
        dst_ = memory(dst_md, ctx().eng, nullptr);
        res_ = memory(res_md, ctx().eng, nullptr);
        args_ = {{DNNL_ARG_SRC, src_},
                 {DNNL_ARG_WEIGHTS, weights_},
                 {DNNL_ARG_BIAS, memory(bias_md, ctx().eng, bias_.data())},
                 {DNNL_ARG_DST, dst_}};
        if (s.residual)
            args_.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(s.gelu ? 1 : 0) | DNNL_ARG_SRC_1, res_});
        setup += seconds_since(t0);
    }
    void run(const void *A, void *C, const float *res, Profile &p) override {
        Scoped t(p, Cat::kernel);
        set(src_, A);
        set(dst_, C);
        if (s_.residual) set(res_, res);
        prim_.execute(ctx().strm, args_);
        ctx().strm.wait();
    }

private:
    LinearSpec s_;
    std::vector<float> bias_;
    matmul prim_;
    memory weights_, src_, dst_, res_;
    std::unordered_map<int, memory> args_;
};

class DnnlConv final : public Conv {
public:
    DnnlConv(const ConvSpec &s, double &setup) : s_(s), bias_(s.bias, s.bias + s.OC) {
        const bool int8 = s.src == DT::u8;
        const int64_t per_oc = s.IC * s.K * s.K;
        const mdt wdt = int8 ? mdt::s8 : ddt(s.src);
        std::vector<bf16_t> wb;
        QuantW wq;
        const void *W = s.W;
        std::vector<float> scales;
        if (int8) {
            wq = quantize_per_row(s.W, s.OC, per_oc);
            for (int64_t oc = 0; oc < s.OC; ++oc) {
                scales.push_back(s.src_scale * wq.scales[size_t(oc)] / s.dst_scale);
                // oneDNN 2.6: dst = scale * (acc + bias'), bias' = bias / (src * wei scale)
                bias_[size_t(oc)] /= s.src_scale * wq.scales[size_t(oc)];
            }
            W = wq.q.data();
        } else if (s.src == DT::bf16) {
            wb = to_bf16_vec(s.W, s.OC * per_oc);
            W = wb.data();
        }
        const auto t0 = steady::now();
        const int64_t OH = s.OH(), OW = s.OW();
        const memory::desc src_md({s.N, s.IC, s.IH, s.IW}, ddt(s.src), tag::nhwc);
        const memory::desc wei_md({s.OC, s.IC, s.K, s.K}, wdt, tag::any);
        const memory::desc bias_md({s.OC}, mdt::f32, tag::a);
        const memory::desc dst_md({s.N, s.OC, OH, OW}, ddt(s.dst), tag::nhwc);
        const memory::desc res_md({s.N, s.OC, OH, OW}, ddt(s.res_dt), tag::nhwc);
        post_ops po;
        if (s.residual) {
            if (int8)  // residual copied into dst, accumulated in its own scale
                po.append_sum(s.res_scale / s.dst_scale, ddt(s.res_dt));
            else
                po.append_binary(algorithm::binary_add, res_md);
        }
        if (s.relu) po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
        primitive_attr attr;
        attr.set_post_ops(po);
        if (int8) attr.set_output_scales(2, scales);
        convolution_forward::primitive_desc pd(
            convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                      src_md, wei_md, bias_md, dst_md, {s.S, s.S}, {0, 0},
                                      {s.P, s.P}, {s.P, s.P}),
            attr, ctx().eng);
        if (verbose())
            std::fprintf(stderr, "onednn conv ic%ld oc%ld ih%ld k%ld s%ld: %s\n", long(s.IC),
                         long(s.OC), long(s.IH), long(s.K), long(s.S), pd.impl_info_str());
        prim_ = convolution_forward(pd);
        weights_ = reorder_weights(memory::desc({s.OC, s.IC, s.K, s.K}, wdt, tag::oihw), W,
                                   pd.weights_desc());
        src_ = memory(src_md, ctx().eng, nullptr);
        dst_ = memory(dst_md, ctx().eng, nullptr);
        res_ = memory(res_md, ctx().eng, nullptr);
        args_ = {{DNNL_ARG_SRC, src_},
                 {DNNL_ARG_WEIGHTS, weights_},
                 {DNNL_ARG_BIAS, memory(bias_md, ctx().eng, bias_.data())},
                 {DNNL_ARG_DST, dst_}};
        if (s.residual && !int8)
            args_.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, res_});
        dst_bytes_ = size_t(s.N * OH * OW * s.OC) * dt_size(s.dst);
        setup += seconds_since(t0);
    }
    void run(const void *src, void *dst, const void *res, Profile &p) override {
        if (s_.residual && s_.src == DT::u8 && res != dst) {
            Scoped t(p, Cat::glue);  // the sum post-op accumulates into dst
            std::memcpy(dst, res, dst_bytes_);
        }
        Scoped t(p, Cat::kernel);
        set(src_, src);
        set(dst_, dst);
        if (s_.residual) set(res_, res);
        prim_.execute(ctx().strm, args_);
        ctx().strm.wait();
    }

private:
    ConvSpec s_;
    std::vector<float> bias_;
    convolution_forward prim_;
    memory weights_, src_, dst_, res_;
    std::unordered_map<int, memory> args_;
    size_t dst_bytes_ = 0;
};

// Both attention GEMMs as one batched matmul primitive each, over strided
// views of the fused QKV tensor (dims B x H x rows x cols).
class DnnlAttention final : public Attention {
public:
    explicit DnnlAttention(const AttnSpec &s) : s_(s) {
        const int64_t B = s.B, H = s.H, S = s.S, D = s.D, HD = H * D, ld = 3 * HD;
        const mdt t = ddt(s.dt);
        const memory::desc q_md({B, H, S, D}, t, {S * ld, D, ld, 1});
        const memory::desc kt_md({B, H, D, S}, t, {S * ld, D, 1, ld});
        const memory::desc sc_md({B, H, S, S}, mdt::f32, tag::abcd);
        const memory::desc p_md({B, H, S, S}, t, tag::abcd);
        const memory::desc v_md({B, H, S, D}, t, {S * ld, D, ld, 1});
        const memory::desc ctx_md({B, H, S, D}, mdt::f32, {S * HD, D, HD, 1});
        primitive_attr attr;
        attr.set_output_scales(0, {1.f / std::sqrt(float(D))});
        matmul::primitive_desc pd1(matmul::desc(q_md, kt_md, sc_md), attr, ctx().eng);
        matmul::primitive_desc pd2(matmul::desc(p_md, v_md, ctx_md), ctx().eng);
        if (verbose())
            std::fprintf(stderr, "onednn attention: scores %s, context %s\n", pd1.impl_info_str(),
                         pd2.impl_info_str());
        scores_ = matmul(pd1);
        context_ = matmul(pd2);
        q_ = memory(q_md, ctx().eng, nullptr);
        kt_ = memory(kt_md, ctx().eng, nullptr);
        sc_ = memory(sc_md, ctx().eng, nullptr);
        p_ = memory(p_md, ctx().eng, nullptr);
        v_ = memory(v_md, ctx().eng, nullptr);
        ctx_ = memory(ctx_md, ctx().eng, nullptr);
    }
    void scores(const void *qkv, float *sc, Profile &p) override {
        const size_t es = dt_size(s_.dt), HD = size_t(s_.H * s_.D);
        Scoped t(p, Cat::kernel);
        set(q_, qkv);
        set(kt_, static_cast<const char *>(qkv) + HD * es);
        set(sc_, sc);
        scores_.execute(ctx().strm, {{DNNL_ARG_SRC, q_}, {DNNL_ARG_WEIGHTS, kt_}, {DNNL_ARG_DST, sc_}});
        ctx().strm.wait();
    }
    void context(const void *P, const void *qkv, float *c, Profile &p) override {
        const size_t es = dt_size(s_.dt), HD = size_t(s_.H * s_.D);
        Scoped t(p, Cat::kernel);
        set(p_, P);
        set(v_, static_cast<const char *>(qkv) + 2 * HD * es);
        set(ctx_, c);
        context_.execute(ctx().strm, {{DNNL_ARG_SRC, p_}, {DNNL_ARG_WEIGHTS, v_}, {DNNL_ARG_DST, ctx_}});
        ctx().strm.wait();
    }

private:
    AttnSpec s_;
    matmul scores_, context_;
    memory q_, kt_, sc_, p_, v_, ctx_;
};

class DnnlBackend final : public Backend {
public:
    std::string name() const override { return "onednn"; }
    std::unique_ptr<Linear> linear(const LinearSpec &s) override {
        return std::make_unique<DnnlLinear>(s, setup_seconds);
    }
    std::unique_ptr<Conv> conv(const ConvSpec &s) override {
        return std::make_unique<DnnlConv>(s, setup_seconds);
    }
    std::unique_ptr<Attention> attention(const AttnSpec &s) override {
        return std::make_unique<DnnlAttention>(s);
    }
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<DnnlBackend>(); }

std::string onednn_cannot_check(DT dt) {
    const unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
    auto has = [&](dnnl_cpu_isa_t want) { return (isa & unsigned(want)) == unsigned(want); };
    if (dt == DT::bf16 && !has(dnnl_cpu_isa_avx512_core))
        return "oneDNN 2.6 has no bf16 primitives on this CPU (it needs AVX-512)";
    if ((dt == DT::u8 || dt == DT::s8) && !has(dnnl_cpu_isa_avx512_core_vnni))
        return "oneDNN's int8 kernels on this CPU (no VNNI) saturate u8 x s8 pair sums at int16, "
               "so they are no reference for anvil's exact int8";
    return "";
}

bool onednn_cannot_run(DT dt, bool check) {
    const std::string why = onednn_cannot_check(dt);
    if (why.empty()) return false;
    if (dt == DT::bf16 || check) {
        std::printf("SKIPPED: %s\n", why.c_str());
        return true;
    }
    std::printf("note: %s\n", why.c_str());
    return false;
}

}  // namespace ex
