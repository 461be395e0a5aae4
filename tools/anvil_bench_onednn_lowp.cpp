// anvil-bench: oneDNN bf16 / int8 peers (dnnl_gemm_x8s8s32 and the matmul
// primitive on plain or prepacked weights).
#include "anvil_bench_onednn_lowp.h"

#include "anvil_bench_onednn.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

namespace anvil_bench {

dnnl::memory::data_type to_dnnl(anvil_data_type_t t) {
    using d = dnnl::memory::data_type;
    switch (t) {
        case anvil_dt_f32: return d::f32;
        case anvil_dt_bf16: return d::bf16;
        case anvil_dt_s32: return d::s32;
        case anvil_dt_u8: return d::u8;
        case anvil_dt_s8: return d::s8;
    }
    return d::undef;
}

dnnl::algorithm eltwise_alg(int alg) {
    using a = dnnl::algorithm;
    switch (alg) {
        case anvil_eltwise_relu:
        case anvil_eltwise_leaky_relu: return a::eltwise_relu;
        case anvil_eltwise_clip: return a::eltwise_clip;
        case anvil_eltwise_gelu_tanh: return a::eltwise_gelu_tanh;
        case anvil_eltwise_gelu_erf: return a::eltwise_gelu_erf;
        case anvil_eltwise_silu: return a::eltwise_swish;
        case anvil_eltwise_sigmoid: return a::eltwise_logistic;
        default: return a::eltwise_tanh;
    }
}

binary_mds append_post_ops(
    dnnl::post_ops &po, const attr_spec &a,
    const std::function<dnnl::memory::desc(const post_op_spec &, size_t)> &binary_md) {
    binary_mds bin_mds;
    for (size_t t = 0; t < a.ops.size(); ++t) {
        const post_op_spec &o = a.ops[t];
        if (o.sum) {  // accumulates into dst, read in dst's type
            po.append_sum(o.alpha, int32_t(o.beta), to_dnnl(a.dst));
            continue;
        }
        if (!o.binary) {
            const float alpha = o.alg == anvil_eltwise_silu ? 1.0f : o.alpha;
            po.append_eltwise(1.0f, eltwise_alg(o.alg), alpha, o.beta);
            continue;
        }
        const dnnl::memory::desc md = binary_md(o, bin_mds.size());
        po.append_binary(o.alg == anvil_binary_add ? dnnl::algorithm::binary_add
                                                   : dnnl::algorithm::binary_mul,
                         md);
        bin_mds.push_back({int(t), md});
    }
    return bin_mds;
}

void insert_attr_args(std::unordered_map<int, dnnl::memory> &args, const dnnl::engine &eng,
                      const attr_spec &a, const attr_data &ad, const dnnl::memory::desc &bias_md,
                      const binary_mds &bin_mds) {
    if (a.bias)
        args.insert({DNNL_ARG_BIAS,
                     dnnl::memory(bias_md, eng, const_cast<float *>(ad.dnnl_bias.data()))});
    for (size_t b = 0; b < bin_mds.size(); ++b)
        args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(bin_mds[b].first) | DNNL_ARG_SRC_1,
                     dnnl::memory(bin_mds[b].second, eng, ad.bin[b].data())});
}

int onednn_gemm_int8(const gemm_problem &p, bool a_signed, float alpha, const void *A,
                     const void *B, float beta, int32_t *C) {
    static const int32_t co = 0;
    const int8_t *b = static_cast<const int8_t *>(B);
    if (a_signed)
        return int(dnnl_gemm_s8s8s32(p.ta, p.tb, 'F', p.M, p.N, p.K, alpha,
                                     static_cast<const int8_t *>(A), p.lda(), 0, b, p.ldb(), 0,
                                     beta, C, p.ldc(), &co));
    return int(dnnl_gemm_u8s8s32(p.ta, p.tb, 'F', p.M, p.N, p.K, alpha,
                                 static_cast<const uint8_t *>(A), p.lda(), 0, b, p.ldb(), 0, beta,
                                 C, p.ldc(), &co));
}

struct onednn_lowp_matmul::state {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::matmul prim;
    dnnl::memory weights;
    std::unordered_map<int, dnnl::memory> args;
    std::string impl;
};

onednn_lowp_matmul::onednn_lowp_matmul() = default;
onednn_lowp_matmul::~onednn_lowp_matmul() = default;

bool onednn_lowp_matmul::init(lowp_dt dt, const gemm_problem &p, const void *A, const void *B,
                              void *C, float alpha, float beta, bool prepacked, std::string *err) {
    using namespace dnnl;
    using dims = memory::dims;
    using mdt = memory::data_type;
    try {
        auto s = std::make_unique<state>();
        const mdt a_t = dt == lowp_dt::bf16      ? mdt::bf16
                        : dt == lowp_dt::u8s8s32 ? mdt::u8
                                                 : mdt::s8;
        const mdt b_t = dt == lowp_dt::bf16 ? mdt::bf16 : mdt::s8;
        const mdt c_t = dt == lowp_dt::bf16 ? mdt::f32 : mdt::s32;
        const dims src_strides = p.ta == 'N' ? dims{p.lda(), 1} : dims{1, p.lda()};
        const dims wei_strides = p.tb == 'N' ? dims{p.ldb(), 1} : dims{1, p.ldb()};
        const memory::desc src_md({p.M, p.K}, a_t, src_strides);
        const memory::desc user_wei_md({p.K, p.N}, b_t, wei_strides);
        const memory::desc wei_md =
            prepacked ? memory::desc({p.K, p.N}, b_t, memory::format_tag::any) : user_wei_md;
        const memory::desc dst_md({p.M, p.N}, c_t, dims{p.ldc(), 1});
        const primitive_attr attr = blas_attr(alpha, beta);
        const matmul::primitive_desc pd(matmul::desc(src_md, wei_md, dst_md), attr, s->eng);
        s->impl = pd.impl_info_str();
        s->prim = matmul(pd);
        memory user(user_wei_md, s->eng, const_cast<void *>(B));
        if (prepacked) {
            s->weights = memory(pd.weights_desc(), s->eng);
            reorder(user, s->weights).execute(s->strm, user, s->weights);
            s->strm.wait();
        } else {
            s->weights = user;
        }
        s->args = {{DNNL_ARG_SRC, memory(src_md, s->eng, const_cast<void *>(A))},
                   {DNNL_ARG_WEIGHTS, s->weights},
                   {DNNL_ARG_DST, memory(dst_md, s->eng, C)}};
        s_ = std::move(s);
        return true;
    } catch (const dnnl::error &e) {
        *err = std::string("oneDNN ") + lowp_name(dt) + " matmul" +
               (prepacked ? " (prepacked)" : "") + ": " + e.what();
        return false;
    }
}

void onednn_lowp_matmul::execute() {
    s_->prim.execute(s_->strm, s_->args);
    s_->strm.wait();
}

const std::string &onednn_lowp_matmul::impl() const {
    static const std::string none = "none";
    return s_ ? s_->impl : none;
}

struct onednn_attr_matmul::state {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::matmul prim;
    std::unordered_map<int, dnnl::memory> args;
    std::string impl;
};

onednn_attr_matmul::onednn_attr_matmul() = default;
onednn_attr_matmul::~onednn_attr_matmul() = default;

bool onednn_attr_matmul::init(lowp_dt dt, const gemm_problem &p, const void *A, const void *B,
                              void *C, const attr_spec &a, const attr_data &ad, std::string *err) {
    using namespace dnnl;
    using dims = memory::dims;
    using mdt = memory::data_type;
    try {
        auto s = std::make_unique<state>();
        const mdt a_t = dt == lowp_dt::f32    ? mdt::f32
                        : dt == lowp_dt::bf16 ? mdt::bf16
                        : dt == lowp_dt::u8s8s32 ? mdt::u8 : mdt::s8;
        const mdt b_t = dt == lowp_dt::f32 ? mdt::f32 : dt == lowp_dt::bf16 ? mdt::bf16 : mdt::s8;
        const memory::desc src_md({p.M, p.K}, a_t, p.ta == 'N' ? dims{p.lda(), 1} : dims{1, p.lda()});
        const memory::desc user_wei_md({p.K, p.N}, b_t,
                                       p.tb == 'N' ? dims{p.ldb(), 1} : dims{1, p.ldb()});
        const memory::desc wei_md({p.K, p.N}, b_t, memory::format_tag::any);
        const memory::desc dst_md({p.M, p.N}, to_dnnl(a.dst), dims{p.ldc(), 1});
        const memory::desc bias_md({1, p.N}, mdt::f32, dims{p.N, 1});
        primitive_attr attr;
        if (a.scale_mode) attr.set_output_scales(a.scale_mode == 2 ? 2 : 0, ad.scales);
        if (a.zp_src) attr.set_zero_points(DNNL_ARG_SRC, 0, {a.zp_src});
        if (a.zp_wei) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {a.zp_wei});
        if (a.zp_dst) attr.set_zero_points(DNNL_ARG_DST, 0, {a.zp_dst});
        post_ops po;
        const binary_mds bin_mds =
            append_post_ops(po, a, [&](const post_op_spec &o, size_t b) {
                return o.per_n ? memory::desc({1, p.N}, to_dnnl(o.src_dt), dims{p.N, 1})
                               : memory::desc({p.M, p.N}, to_dnnl(o.src_dt), dims{ad.bin_ld[b], 1});
            });
        if (!a.ops.empty()) attr.set_post_ops(po);
        const matmul::primitive_desc pd =
            a.bias ? matmul::primitive_desc(matmul::desc(src_md, wei_md, bias_md, dst_md), attr, s->eng)
                   : matmul::primitive_desc(matmul::desc(src_md, wei_md, dst_md), attr, s->eng);
        s->impl = pd.impl_info_str();
        s->prim = matmul(pd);
        memory user(user_wei_md, s->eng, const_cast<void *>(B));
        memory weights(pd.weights_desc(), s->eng);
        reorder(user, weights).execute(s->strm, user, weights);
        s->strm.wait();
        s->args = {{DNNL_ARG_SRC, memory(src_md, s->eng, const_cast<void *>(A))},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DST, memory(dst_md, s->eng, C)}};
        insert_attr_args(s->args, s->eng, a, ad, bias_md, bin_mds);
        s_ = std::move(s);
        return true;
    } catch (const dnnl::error &e) {
        *err = std::string("oneDNN ") + lowp_name(dt) + " matmul (" + a.str() + "): " + e.what();
        return false;
    }
}

void onednn_attr_matmul::execute() {
    s_->prim.execute(s_->strm, s_->args);
    s_->strm.wait();
}

const std::string &onednn_attr_matmul::impl() const {
    static const std::string none = "none";
    return s_ ? s_->impl : none;
}

}  // namespace anvil_bench
