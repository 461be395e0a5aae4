// anvil_example_bert: one BERT-base encoder layer (hidden 768, 12 heads x 64,
// FFN 3072) for inference, built on anvil's public API and, for comparison,
// on oneDNN primitives; both run exactly the same graph (common/ops.h) with
// the same glue (common/tensor_ops.h).
//
//   qkv = x Wqkv + bqkv                     (one GEMM, N = 2304)
//   per head: P = softmax(Q K^T / 8);  ctx = P V   (anvil: one strided
//             batch of GEMMs over the heads, anvil_sgemm_batch_strided)
//   h   = x + ctx Wo + bo                   (bias + residual fused)
//   h1  = LayerNorm(h)
//   f   = GELU_erf(h1 W1 + b1)              (bias + GELU fused)
//   o   = h1 + f W2 + b2                    (bias + residual fused)
//   y   = LayerNorm(o)
//
// --dt f32:  everything fp32.  The four linear layers run on the fp32
//            matmul handle (anvil_matmul f32 x f32, B packed once, bias /
//            GELU / residual in its chain); --f32-linear plan runs them on
//            the planned GEMM (anvil_gemm_plan_*) with a plain epilogue,
//            --f32-linear conv on a 1x1 anvil_conv2d that fuses it.
// --dt bf16: bf16 weights and activations into every GEMM, fp32 accumulation
//            (anvil_matmul bf16 x bf16; attention with
//            anvil_gemm_bf16bf16f32_batch_strided, one batch over the heads);
//            QKV and FFN1 write bf16, the other outputs are fp32 (residual
//            and LayerNorm stay fp32).
// --dt int8: the four linear layers take u8 activations (per-tensor scale and
//            zero point from a calibration pass of the fp32 layer on the same
//            input: static quantisation) and s8 weights with per-output-
//            channel scales, fp32 output.  The attention score / context
//            GEMMs stay fp32.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/cli.h"
#include "common/compare.h"
#include "common/fill.h"
#include "common/ops.h"
#include "common/report.h"
#include "common/tensor_ops.h"

using namespace ex;

namespace {

constexpr int64_t kHidden = 768, kHeads = 12, kHeadDim = 64, kFfn = 3072;

struct Weights {
    avec<float> wqkv, bqkv, wo, bo, w1, b1, w2, b2, g1, be1, g2, be2;
};

Weights make_weights() {
    Weights w;
    // Uniform(-a, a) with a = sqrt(3 / fan_in): unit-variance outputs.
    auto lin = [](int64_t K, int64_t N, uint64_t seed) {
        const float a = std::sqrt(3.f / float(K));
        return random_vec(size_t(K * N), -a, a, seed);
    };
    w.wqkv = lin(kHidden, 3 * kHidden, 11);
    w.wo = lin(kHidden, kHidden, 12);
    w.w1 = lin(kHidden, kFfn, 13);
    w.w2 = lin(kFfn, kHidden, 14);
    w.bqkv = random_vec(3 * kHidden, -0.1f, 0.1f, 21);
    w.bo = random_vec(kHidden, -0.1f, 0.1f, 22);
    w.b1 = random_vec(kFfn, -0.1f, 0.1f, 23);
    w.b2 = random_vec(kHidden, -0.1f, 0.1f, 24);
    w.g1 = random_vec(kHidden, 0.9f, 1.1f, 31);
    w.be1 = random_vec(kHidden, -0.1f, 0.1f, 32);
    w.g2 = random_vec(kHidden, 0.9f, 1.1f, 33);
    w.be2 = random_vec(kHidden, -0.1f, 0.1f, 34);
    return w;
}

// Per-tensor asymmetric u8 quantisation of the four linear-layer inputs
// (x, ctx, h1, f), from their min / max in an fp32 pass.
struct Calib {
    float scale[4] = {1, 1, 1, 1};
    int32_t zp[4] = {0, 0, 0, 0};
    float mn[4] = {0, 0, 0, 0}, mx[4] = {0, 0, 0, 0};
    void finish() {
        for (int i = 0; i < 4; ++i) {
            const float lo = std::min(mn[i], 0.f), hi = std::max(mx[i], 0.f);
            scale[i] = hi > lo ? (hi - lo) / 255.f : 1.f;
            zp[i] = int32_t(std::lround(-lo / scale[i]));
            zp[i] = std::max(0, std::min(255, zp[i]));
        }
    }
};

class BertLayer {
public:
    BertLayer(Backend &be, const Weights &w, int64_t B, int64_t S, DT dt, const Calib &c)
        : w_(w), B_(B), S_(S), M_(B * S), dt_(dt), c_(c) {
        const DT lin_in = dt;  // f32 | bf16 | u8
        auto spec = [&](int64_t K, int64_t N, const avec<float> &W, const avec<float> &b, DT out,
                        int qi) {
            LinearSpec s;
            s.M = M_;
            s.K = K;
            s.N = N;
            s.in = lin_in;
            s.out = out;
            s.W = W.data();
            s.bias = b.data();
            if (lin_in == DT::u8) {
                s.a_scale = c.scale[qi];
                s.a_zp = c.zp[qi];
            }
            return s;
        };
        const DT act = dt == DT::bf16 ? DT::bf16 : DT::f32;  // QKV / FFN1 output
        auto sq = spec(kHidden, 3 * kHidden, w.wqkv, w.bqkv, act, 0);
        auto so = spec(kHidden, kHidden, w.wo, w.bo, DT::f32, 1);
        so.residual = true;
        auto s1 = spec(kHidden, kFfn, w.w1, w.b1, act, 2);
        s1.gelu = true;
        auto s2 = spec(kFfn, kHidden, w.w2, w.b2, DT::f32, 3);
        s2.residual = true;
        qkv_lin_ = be.linear(sq);
        out_lin_ = be.linear(so);
        ffn1_ = be.linear(s1);
        ffn2_ = be.linear(s2);
        AttnSpec as;
        as.B = B;
        as.S = S;
        as.H = kHeads;
        as.D = kHeadDim;
        as.dt = act;
        attn_ = be.attention(as);

        const size_t es = dt_size(act);
        qkv_.resize(size_t(M_ * 3 * kHidden) * es);
        sc_.resize(size_t(B * kHeads * S * S));
        if (dt == DT::bf16) pb_.resize(size_t(B * kHeads * S * S));
        ctx_.resize(size_t(M_ * kHidden));
        h_.resize(size_t(M_ * kHidden));
        h1_.resize(size_t(M_ * kHidden));
        f_.resize(size_t(M_ * kFfn) * es);
        o_.resize(size_t(M_ * kHidden));
        if (dt != DT::f32) {  // low-precision copy of each linear input
            const size_t lp = dt_size(dt);
            xl_.resize(size_t(M_ * kHidden) * lp);
            ctxl_.resize(size_t(M_ * kHidden) * lp);
            h1l_.resize(size_t(M_ * kHidden) * lp);
            if (dt == DT::u8) fl_.resize(size_t(M_ * kFfn));
        }
    }

    // y = layer(x).  With `calib`, records the ranges of the linear inputs
    // (outside any timing; used on the fp32 layer only).
    void forward(const float *x, float *y, Profile &p, Calib *calib = nullptr) {
        const int64_t nh = M_ * kHidden;
        const bool bf = dt_ == DT::bf16, q8 = dt_ == DT::u8;
        const void *lin_x = x;
        if (bf) {
            Step st(p, "00 convert x");
            Scoped t(p, Cat::glue);
            f32_to_bf16(x, reinterpret_cast<bf16_t *>(xl_.data()), nh);
            lin_x = xl_.data();
        } else if (q8) {
            Step st(p, "00 convert x");
            Scoped t(p, Cat::glue);
            quantize_u8(x, xl_.data(), nh, c_.scale[0], c_.zp[0]);
            lin_x = xl_.data();
        }
        {
            Step st(p, "01 qkv linear");
            qkv_lin_->run(lin_x, qkv_.data(), nullptr, p);
        }
        {
            Step st(p, "02 attn scores");
            attn_->scores(qkv_.data(), sc_.data(), p);
        }
        {
            Step st(p, "03 softmax");
            Scoped t(p, Cat::glue);
            softmax_rows(sc_.data(), B_ * kHeads * S_, S_, S_, bf ? pb_.data() : nullptr);
        }
        {
            Step st(p, "04 attn context");
            attn_->context(bf ? static_cast<const void *>(pb_.data()) : sc_.data(), qkv_.data(),
                           ctx_.data(), p);
        }
        const void *lin_ctx = ctx_.data();
        if (bf) {
            Step st(p, "05 convert ctx");
            Scoped t(p, Cat::glue);
            f32_to_bf16(ctx_.data(), reinterpret_cast<bf16_t *>(ctxl_.data()), nh);
            lin_ctx = ctxl_.data();
        } else if (q8) {
            Step st(p, "05 convert ctx");
            Scoped t(p, Cat::glue);
            quantize_u8(ctx_.data(), ctxl_.data(), nh, c_.scale[1], c_.zp[1]);
            lin_ctx = ctxl_.data();
        }
        {
            Step st(p, "06 out proj+res");
            out_lin_->run(lin_ctx, h_.data(), x, p);
        }
        {
            Step st(p, "07 layernorm1");
            Scoped t(p, Cat::glue);
            layernorm_rows(h_.data(), h1_.data(), M_, kHidden, w_.g1.data(), w_.be1.data(), 1e-12f,
                           bf ? reinterpret_cast<bf16_t *>(h1l_.data()) : nullptr,
                           q8 ? h1l_.data() : nullptr, c_.scale[2], c_.zp[2]);
        }
        {
            Step st(p, "08 ffn1+gelu");
            ffn1_->run(dt_ == DT::f32 ? static_cast<const void *>(h1_.data()) : h1l_.data(),
                       f_.data(), nullptr, p);
        }
        const void *lin_f = f_.data();
        if (q8) {
            Step st(p, "09 convert f");
            Scoped t(p, Cat::glue);
            quantize_u8(reinterpret_cast<const float *>(f_.data()), fl_.data(), M_ * kFfn,
                        c_.scale[3], c_.zp[3]);
            lin_f = fl_.data();
        }
        {
            Step st(p, "10 ffn2+res");
            ffn2_->run(lin_f, o_.data(), h1_.data(), p);
        }
        {
            Step st(p, "11 layernorm2");
            Scoped t(p, Cat::glue);
            layernorm_rows(o_.data(), y, M_, kHidden, w_.g2.data(), w_.be2.data(), 1e-12f);
        }
        if (calib) {
            min_max(x, nh, &calib->mn[0], &calib->mx[0]);
            min_max(ctx_.data(), nh, &calib->mn[1], &calib->mx[1]);
            min_max(h1_.data(), nh, &calib->mn[2], &calib->mx[2]);
            min_max(reinterpret_cast<const float *>(f_.data()), M_ * kFfn, &calib->mn[3],
                    &calib->mx[3]);
            calib->finish();
        }
    }

private:
    const Weights &w_;
    int64_t B_, S_, M_;
    DT dt_;
    Calib c_;
    std::unique_ptr<Linear> qkv_lin_, out_lin_, ffn1_, ffn2_;
    std::unique_ptr<Attention> attn_;
    avec<uint8_t> qkv_, f_, xl_, ctxl_, h1l_, fl_;
    avec<float> sc_, ctx_, h_, h1_, o_;
    avec<bf16_t> pb_;
};

const char *kUsage =
    "anvil_example_bert [--dt f32|bf16|int8] [--seq 128|384|N] [--batch 1|8|N]\n"
    "                   [--iters N] [--warmup N] [--threads N] [--f32-linear matmul|plan|conv]\n"
    "                   [--check] [--json FILE] [--per-op]\n"
    "One BERT-base encoder layer on anvil and on oneDNN: median latency, time\n"
    "breakdown and the difference of the two outputs (--check: exit 1 when it\n"
    "exceeds the bound derived in the source).\n";

}  // namespace

int main(int argc, char **argv) try {
    static const char *const flags[] = {"check", "per-op", nullptr};
    Args args(argc, argv, kUsage, flags);
    const std::string dts = args.str("dt", "f32");
    const int64_t S = args.num("seq", 128), B = args.num("batch", 1);
    const int iters = int(args.num("iters", 10)), warmup = int(args.num("warmup", 2));
    const std::string f32_linear = args.str("f32-linear", "matmul");
    if ((dts != "f32" && dts != "bf16" && dts != "int8") || S < 1 || B < 1 || iters < 1 ||
        (f32_linear != "matmul" && f32_linear != "plan" && f32_linear != "conv")) {
        std::fprintf(stderr, "bad arguments\n%s", kUsage);
        return 2;
    }
    const DT dt = dts == "f32" ? DT::f32 : dts == "bf16" ? DT::bf16 : DT::u8;
    const int threads = set_threads(int(args.num("threads", 0)));

    const Weights w = make_weights();
    const int64_t M = B * S, n_out = M * kHidden;
    const avec<float> x = random_vec(size_t(n_out), -1.f, 1.f, 1);
    Profile scratch;

    if (onednn_cannot_run(dt, args.has("check"))) return kExitSkipped;

    // The fp32 layer on anvil: calibration for int8, accuracy reference
    // (info only) for bf16 / int8.
    Calib calib;
    avec<float> y_f32;
    if (dt != DT::f32) {
        auto be = make_anvil_backend(f32_linear);
        BertLayer ref(*be, w, B, S, DT::f32, Calib{});
        y_f32.resize(size_t(n_out));
        ref.forward(x.data(), y_f32.data(), scratch, &calib);
    }

    auto anvil_be = make_anvil_backend(f32_linear);
    auto dnnl_be = make_onednn_backend();
    BertLayer la(*anvil_be, w, B, S, dt, calib);
    BertLayer lb(*dnnl_be, w, B, S, dt, calib);
    avec<float> ya(static_cast<size_t>(n_out)), yb(static_cast<size_t>(n_out));
    la.forward(x.data(), ya.data(), scratch);
    lb.forward(x.data(), yb.data(), scratch);

    Report r;
    r.model = "bert_layer";
    char cfg[200];
    std::snprintf(cfg, sizeof cfg, "seq %ld batch %ld dt %s threads %d f32-linear %s", long(S),
                  long(B), dts.c_str(), threads, f32_linear.c_str());
    r.config = cfg;
    r.per_op = args.has("per-op");
    r.a.name = anvil_be->name();
    r.b.name = dnnl_be->name();
    r.a.setup_s = anvil_be->setup_seconds;
    r.b.setup_s = dnnl_be->setup_seconds;
    r.diff = compare(ya.data(), yb.data(), size_t(n_out));
    if (dt != DT::f32) {
        r.has_ref = true;
        r.vs_f32 = compare(ya.data(), y_f32.data(), size_t(n_out));
    }
    r.notes.push_back({"attention_gemms", dt == DT::bf16 ? "bf16 x bf16 -> f32" : "f32"});

    // ---- the --check bound (derived, not fitted to observed values) ------
    // Both backends evaluate the same graph with the same glue; they differ
    // in the order of the fp32 accumulations inside the GEMMs and in the
    // GELU approximation (a few ulp either way, docs/postops.md).
    //  fp32: two summation orders of a length-K dot product differ by about
    //    sqrt(K) * u (u = 2^-24) relative to the result scale (probabilistic
    //    rounding-error bound); the six GEMMs on the path (QKV K=768, scores
    //    K=64, context K=S, Wo K=768, FFN1 K=768, FFN2 K=3072) add up, and a
    //    factor 10 covers the maximum over ~1e5..1e6 elements (~sqrt(2 ln n))
    //    and the LayerNorm / softmax gain: bound = 10 u sum sqrt(K)
    //    (~1.0e-4 at S = 128).
    //  bf16: every rounding of an activation to bf16 can land one ulp
    //    apart where the two fp32 values straddle a rounding boundary: one
    //    bf16 epsilon (2^-7) relative; L = 5 such stages (x, qkv, P, ctx,
    //    h1 / f) contribute independently: bound = sqrt(L) * 2^-7 (0.0175).
    //  int8: likewise one quantisation step (range / 255, at most 1/127 of
    //    a tensor's max magnitude for the asymmetric u8 scales used) per
    //    quantised input, L = 4: bound = sqrt(4) / 127 (0.0157).
    double bound;
    if (dt == DT::f32) {
        const double u = std::ldexp(1.0, -24);
        bound = 10 * u * (3 * std::sqrt(768.0) + std::sqrt(64.0) + std::sqrt(double(S)) +
                          std::sqrt(3072.0));
    } else if (dt == DT::bf16) {
        bound = std::sqrt(5.0) * std::ldexp(1.0, -7);
    } else {
        bound = 2.0 / 127.0;
    }
    r.bound = bound;

    time_pair([&](Profile &p) { la.forward(x.data(), ya.data(), p); },
              [&](Profile &p) { lb.forward(x.data(), yb.data(), p); }, warmup, iters, r.a, r.b);
    return finish_run(r, args.has("check"), args.str("json", ""));
} catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
}
