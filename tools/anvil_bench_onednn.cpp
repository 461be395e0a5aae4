// anvil-bench: oneDNN peers (dnnl_sgemm and the prepacked matmul primitive).
#include "anvil_bench_onednn.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace anvil_bench {

void set_onednn_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

std::string onednn_version() {
    const dnnl_version_t *v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
}

dnnl::primitive_attr blas_attr(float alpha, float beta) {
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
    }
    return attr;
}

int onednn_sgemm(const gemm_problem &p, float alpha, const float *A, const float *B, float beta,
                 float *C) {
    return int(dnnl_sgemm(p.ta, p.tb, p.M, p.N, p.K, alpha, A, p.lda(), B, p.ldb(), beta, C,
                          p.ldc()));
}

struct onednn_matmul::state {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::matmul prim;
    std::vector<dnnl::memory> packed;
    std::vector<std::unordered_map<int, dnnl::memory>> args;
    std::string impl;
};

onednn_matmul::onednn_matmul() = default;
onednn_matmul::~onednn_matmul() = default;

bool onednn_matmul::init(const gemm_problem &p, const float *A,
                         const std::vector<const float *> &Bs, float *C, float alpha, float beta,
                         std::string *err) {
    using namespace dnnl;
    using dims = memory::dims;
    try {
        auto s = std::make_unique<state>();
        const auto f32 = memory::data_type::f32;
        const dims src_strides = p.ta == 'N' ? dims{p.lda(), 1} : dims{1, p.lda()};
        const dims wei_strides = p.tb == 'N' ? dims{p.ldb(), 1} : dims{1, p.ldb()};
        const memory::desc src_md({p.M, p.K}, f32, src_strides);
        const memory::desc user_wei_md({p.K, p.N}, f32, wei_strides);
        const memory::desc any_wei_md({p.K, p.N}, f32, memory::format_tag::any);
        const memory::desc dst_md({p.M, p.N}, f32, dims{p.ldc(), 1});
        const primitive_attr attr = blas_attr(alpha, beta);
        const matmul::primitive_desc pd(matmul::desc(src_md, any_wei_md, dst_md), attr, s->eng);
        s->impl = pd.impl_info_str();
        s->prim = matmul(pd);
        memory src(src_md, s->eng, const_cast<float *>(A));
        memory dst(dst_md, s->eng, C);
        for (const float *B : Bs) {
            memory user(user_wei_md, s->eng, const_cast<float *>(B));
            memory packed(pd.weights_desc(), s->eng);
            reorder(user, packed).execute(s->strm, user, packed);
            s->packed.push_back(packed);
            s->args.push_back({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, dst}});
        }
        s->strm.wait();
        s_ = std::move(s);
        return true;
    } catch (const dnnl::error &e) {
        *err = std::string("oneDNN matmul: ") + e.what();
        return false;
    }
}

void onednn_matmul::execute(size_t which) {
    s_->prim.execute(s_->strm, s_->args[which]);
    s_->strm.wait();
}

const std::string &onednn_matmul::impl() const {
    static const std::string none = "none";
    return s_ ? s_->impl : none;
}

}  // namespace anvil_bench
