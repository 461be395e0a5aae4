// The example graphs' operations on anvil's public C API only
// (include/anvil/anvil.h): planned fp32 GEMM, the low-precision matmul
// handle, the NHWC conv2d handle and the BLAS-style GEMMs, all with
// weights packed once at construction.
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "anvil/anvil.h"
#include "common/fill.h"
#include "common/ops.h"

namespace ex {
namespace {

void check(anvil_status_t st, const char *what) {
    if (st != anvil_success)
        throw std::runtime_error(std::string("anvil: ") + what + ": " + anvil_status_str(st));
}

anvil_data_type_t adt(DT t) {
    switch (t) {
    case DT::f32: return anvil_dt_f32;
    case DT::bf16: return anvil_dt_bf16;
    case DT::u8: return anvil_dt_u8;
    default: return anvil_dt_s8;
    }
}

anvil_post_op_t eltwise(anvil_eltwise_alg_t alg) {
    anvil_post_op_t o{};
    o.kind = anvil_post_op_eltwise;
    o.alg = alg;
    return o;
}

anvil_post_op_t binary_add(DT src_dt, int64_t ld) {
    anvil_post_op_t o{};
    o.kind = anvil_post_op_binary;
    o.alg = anvil_binary_add;
    o.per_n = 0;
    o.src_dt = adt(src_dt);
    o.ld = ld;
    return o;
}

// ---- fp32 linear on the planned GEMM (--f32-linear plan): the GEMM is
// fused with nothing, the epilogue (bias, GELU, residual) is a plain loop
// (glue).
class PlanLinear final : public Linear {
public:
    PlanLinear(const LinearSpec &s, double &setup) : s_(s) {
        const auto t0 = steady::now();
        check(anvil_gemm_plan_create(&plan_, 'N', 'N', s.M, s.N, s.K, s.K, s.N, s.N),
              "gemm_plan_create");
        size_t bytes = 0;
        check(anvil_gemm_plan_packed_b_size(plan_, &bytes), "gemm_plan_packed_b_size");
        packed_.resize(bytes);
        check(anvil_gemm_plan_pack_b(plan_, s.W, packed_.data()), "gemm_plan_pack_b");
        setup += seconds_since(t0);
        bias_.assign(s.bias, s.bias + s.N);
    }
    ~PlanLinear() override { anvil_gemm_plan_destroy(plan_); }
    void run(const void *A, void *C, const float *res, Profile &p) override {
        {
            Scoped t(p, Cat::kernel);
            check(anvil_gemm_plan_execute(plan_, 1.f, static_cast<const float *>(A),
                                          packed_.data(), 0.f, static_cast<float *>(C)),
                  "gemm_plan_execute");
        }
        Scoped t(p, Cat::glue);
        bias_gelu_residual(static_cast<float *>(C), s_.M, s_.N, bias_.data(), s_.gelu,
                           s_.residual ? res : nullptr);
    }

private:
    LinearSpec s_;
    anvil_gemm_plan_t plan_ = nullptr;
    avec<uint8_t> packed_;
    std::vector<float> bias_;
};

// ---- fp32 linear as a 1x1 convolution over M "pixels" (--f32-linear conv:
// the conv handle's kernels with the epilogue fused).
class ConvLinear final : public Linear {
public:
    ConvLinear(const LinearSpec &s, double &setup) : s_(s), bias_(s.bias, s.bias + s.N) {
        if (s.gelu) ops_.push_back(eltwise(anvil_eltwise_gelu_erf));
        if (s.residual) ops_.push_back(binary_add(DT::f32, s.N));
        anvil_conv2d_desc_t d{};
        d.src_dt = d.wei_dt = d.dst_dt = anvil_dt_f32;
        d.N = 1;
        d.G = 1;
        d.IC = s.K;
        d.IH = s.M;
        d.IW = 1;
        d.OC = s.N;
        d.OH = s.M;
        d.OW = 1;
        d.KH = d.KW = 1;
        d.SH = d.SW = 1;
        d.num_post_ops = int(ops_.size());
        d.post_ops = ops_.data();
        const auto t0 = steady::now();
        check(anvil_conv2d_create(&h_, &d), "conv2d_create (1x1 linear)");
        size_t bytes = 0;
        check(anvil_conv2d_packed_weights_size(h_, &bytes), "conv2d_packed_weights_size");
        packed_.resize(bytes);
        // K x N row-major is the HWIO layout of a 1x1 kernel.
        check(anvil_conv2d_pack_weights(h_, s.W, anvil_conv_weights_hwio, packed_.data()),
              "conv2d_pack_weights");
        setup += seconds_since(t0);
    }
    ~ConvLinear() override { anvil_conv2d_destroy(h_); }
    void run(const void *A, void *C, const float *res, Profile &p) override {
        const void *bins[1] = {res};
        Scoped t(p, Cat::kernel);
        check(anvil_conv2d_execute(h_, A, packed_.data(), bias_.data(), C,
                                   s_.residual ? bins : nullptr),
              "conv2d_execute (1x1 linear)");
    }

private:
    LinearSpec s_;
    std::vector<float> bias_;
    std::vector<anvil_post_op_t> ops_;
    anvil_conv2d_t h_ = nullptr;
    avec<uint8_t> packed_;
};

// ---- fp32 / bf16 / int8 linear on the matmul handle, everything fused.
class MatmulLinear final : public Linear {
public:
    MatmulLinear(const LinearSpec &s, double &setup) : s_(s), bias_(s.bias, s.bias + s.N) {
        const bool int8 = s.in == DT::u8, f32 = s.in == DT::f32;
        std::vector<bf16_t> wb;
        QuantW wq;
        const void *W = nullptr;
        if (f32) {
            W = s.W;
        } else if (int8) {
            wq = quantize_per_col(s.W, s.K, s.N);
            for (auto &v : wq.scales) scales_.push_back(v * s.a_scale);
            W = wq.q.data();
        } else {
            wb = to_bf16_vec(s.W, s.K * s.N);
            W = wb.data();
        }
        if (s.gelu) ops_.push_back(eltwise(anvil_eltwise_gelu_erf));
        if (s.residual) ops_.push_back(binary_add(DT::f32, s.N));
        anvil_matmul_desc_t d{};
        d.a_dt = adt(s.in);
        d.b_dt = f32 ? anvil_dt_f32 : int8 ? anvil_dt_s8 : anvil_dt_bf16;
        d.c_dt = adt(s.out);
        d.transa = d.transb = 'N';
        d.M = s.M;
        d.N = s.N;
        d.K = s.K;
        d.lda = s.K;
        d.ldb = s.N;
        d.ldc = s.N;
        d.a_zero_point = int8 ? s.a_zp : 0;
        d.scales = int8 ? scales_.data() : nullptr;
        d.scales_per_n = int8 ? 1 : 0;
        d.bias = bias_.data();
        d.num_post_ops = int(ops_.size());
        d.post_ops = ops_.data();
        const auto t0 = steady::now();
        check(anvil_matmul_create(&h_, &d), "matmul_create");
        size_t bytes = 0;
        check(anvil_matmul_packed_weights_size(h_, &bytes), "matmul_packed_weights_size");
        packed_.resize(bytes);
        check(anvil_matmul_pack_weights(h_, W, packed_.data()), "matmul_pack_weights");
        setup += seconds_since(t0);
    }
    ~MatmulLinear() override { anvil_matmul_destroy(h_); }
    void run(const void *A, void *C, const float *res, Profile &p) override {
        const void *bins[1] = {res};
        Scoped t(p, Cat::kernel);
        check(anvil_matmul_execute(h_, A, packed_.data(), C, s_.residual ? bins : nullptr),
              "matmul_execute");
    }

private:
    LinearSpec s_;
    std::vector<float> bias_, scales_;
    std::vector<anvil_post_op_t> ops_;
    anvil_matmul_t h_ = nullptr;
    avec<uint8_t> packed_;
};

// ---- NHWC convolution on the conv2d handle.
class AnvilConv final : public Conv {
public:
    AnvilConv(const ConvSpec &s, double &setup) : s_(s) {
        const bool int8 = s.src == DT::u8;
        const int64_t per_oc = s.IC * s.K * s.K;
        std::vector<bf16_t> wb;
        QuantW wq;
        const void *W = s.W;
        bias_.assign(s.bias, s.bias + s.OC);
        if (int8) {
            wq = quantize_per_row(s.W, s.OC, per_oc);
            for (int64_t oc = 0; oc < s.OC; ++oc) {
                scales_.push_back(s.src_scale * wq.scales[size_t(oc)] / s.dst_scale);
                bias_[size_t(oc)] /= s.dst_scale;  // anvil: acc * scale + bias
            }
            W = wq.q.data();
        } else if (s.src == DT::bf16) {
            wb = to_bf16_vec(s.W, s.OC * per_oc);
            W = wb.data();
        }
        // int8 residuals enter the chain as f32 in units of the output
        // scale (binary operands are f32 or bf16 only).
        if (s.residual) ops_.push_back(binary_add(int8 ? DT::f32 : s.res_dt, s.OC));
        if (s.relu) ops_.push_back(eltwise(anvil_eltwise_relu));
        if (int8 && s.residual) res_f32_.resize(size_t(s.N * s.OH() * s.OW() * s.OC));
        anvil_conv2d_desc_t d{};
        d.src_dt = adt(s.src);
        d.wei_dt = int8 ? anvil_dt_s8 : adt(s.src);
        d.dst_dt = adt(s.dst);
        d.N = s.N;
        d.G = 1;
        d.IC = s.IC;
        d.IH = s.IH;
        d.IW = s.IW;
        d.OC = s.OC;
        d.OH = s.OH();
        d.OW = s.OW();
        d.KH = d.KW = s.K;
        d.SH = d.SW = s.S;
        d.pad_t = d.pad_l = d.pad_b = d.pad_r = s.P;
        d.scales = int8 ? scales_.data() : nullptr;
        d.scales_per_oc = int8 ? 1 : 0;
        d.num_post_ops = int(ops_.size());
        d.post_ops = ops_.data();
        const auto t0 = steady::now();
        check(anvil_conv2d_create(&h_, &d), "conv2d_create");
        size_t bytes = 0;
        check(anvil_conv2d_packed_weights_size(h_, &bytes), "conv2d_packed_weights_size");
        packed_.resize(bytes);
        check(anvil_conv2d_pack_weights(h_, W, anvil_conv_weights_oihw, packed_.data()),
              "conv2d_pack_weights");
        setup += seconds_since(t0);
    }
    ~AnvilConv() override { anvil_conv2d_destroy(h_); }
    void run(const void *src, void *dst, const void *res, Profile &p) override {
        const void *bins[1] = {res};
        if (s_.residual && s_.src == DT::u8) {
            Scoped t(p, Cat::glue);
            const int64_t n = int64_t(res_f32_.size());
            const float f = s_.res_scale / s_.dst_scale;
            if (s_.res_dt == DT::u8)
                dequantize(static_cast<const uint8_t *>(res), res_f32_.data(), n, f, 0);
            else
                dequantize(static_cast<const int8_t *>(res), res_f32_.data(), n, f);
            bins[0] = res_f32_.data();
        }
        Scoped t(p, Cat::kernel);
        check(anvil_conv2d_execute(h_, src, packed_.data(), bias_.data(), dst,
                                   s_.residual ? bins : nullptr),
              "conv2d_execute");
    }

private:
    ConvSpec s_;
    std::vector<float> bias_, scales_;
    std::vector<anvil_post_op_t> ops_;
    avec<float> res_f32_;
    anvil_conv2d_t h_ = nullptr;
    avec<uint8_t> packed_;
};

// ---- attention: per sequence, one strided batch over the heads (the
// heads' Q, K and V are D columns apart in the fused QKV rows; the context
// of each head lands D columns apart in one [tokens, heads * D] row).
class AnvilAttention final : public Attention {
public:
    explicit AnvilAttention(const AttnSpec &s) : s_(s) {}
    void scores(const void *qkv, float *sc, Profile &p) override {
        const int64_t S = s_.S, D = s_.D, H = s_.H, HD = H * D, ld = 3 * HD;
        const float alpha = 1.f / std::sqrt(float(D));
        Scoped t(p, Cat::kernel);
        for (int64_t b = 0; b < s_.B; ++b) {
            const int64_t q = b * S * ld, k = q + HD;
            float *C = sc + b * H * S * S;
            if (s_.dt == DT::f32) {
                const float *x = static_cast<const float *>(qkv);
                check(anvil_sgemm_batch_strided('N', 'T', S, S, D, alpha, x + q, ld, D, x + k, ld,
                                                D, 0.f, C, S, S * S, H),
                      "sgemm_batch_strided (scores)");
            } else {
                const bf16_t *x = static_cast<const bf16_t *>(qkv);
                check(anvil_gemm_bf16bf16f32_batch_strided('N', 'T', S, S, D, alpha, x + q, ld, D,
                                                           x + k, ld, D, 0.f, C, S, S * S, H),
                      "gemm_bf16bf16f32_batch_strided (scores)");
            }
        }
    }
    void context(const void *P, const void *qkv, float *ctx, Profile &p) override {
        const int64_t S = s_.S, D = s_.D, H = s_.H, HD = H * D, ld = 3 * HD;
        Scoped t(p, Cat::kernel);
        for (int64_t b = 0; b < s_.B; ++b) {
            const int64_t v = b * S * ld + 2 * HD, pp = b * H * S * S;
            float *C = ctx + b * S * HD;
            if (s_.dt == DT::f32) {
                const float *x = static_cast<const float *>(qkv);
                const float *pr = static_cast<const float *>(P);
                check(anvil_sgemm_batch_strided('N', 'N', S, D, S, 1.f, pr + pp, S, S * S, x + v,
                                                ld, D, 0.f, C, HD, D, H),
                      "sgemm_batch_strided (context)");
            } else {
                const bf16_t *x = static_cast<const bf16_t *>(qkv);
                const bf16_t *pr = static_cast<const bf16_t *>(P);
                check(anvil_gemm_bf16bf16f32_batch_strided('N', 'N', S, D, S, 1.f, pr + pp, S,
                                                           S * S, x + v, ld, D, 0.f, C, HD, D, H),
                      "gemm_bf16bf16f32_batch_strided (context)");
            }
        }
    }

private:
    AttnSpec s_;
};

class AnvilBackend final : public Backend {
public:
    explicit AnvilBackend(std::string f32_linear) : f32_linear_(std::move(f32_linear)) {}
    std::string name() const override { return "anvil"; }
    std::unique_ptr<Linear> linear(const LinearSpec &s) override {
        if (s.in == DT::f32) {
            if (f32_linear_ == "conv") return std::make_unique<ConvLinear>(s, setup_seconds);
            if (f32_linear_ == "plan") return std::make_unique<PlanLinear>(s, setup_seconds);
        }
        return std::make_unique<MatmulLinear>(s, setup_seconds);
    }
    std::unique_ptr<Conv> conv(const ConvSpec &s) override {
        return std::make_unique<AnvilConv>(s, setup_seconds);
    }
    std::unique_ptr<Attention> attention(const AttnSpec &s) override {
        return std::make_unique<AnvilAttention>(s);
    }

private:
    std::string f32_linear_;
};

}  // namespace

std::unique_ptr<Backend> make_anvil_backend(const std::string &f32_linear) {
    return std::make_unique<AnvilBackend>(f32_linear);
}

}  // namespace ex
