// anvil_example_resnet50: ResNet-50 v1.5 inference (NHWC) built on anvil's
// public API and, for comparison, on oneDNN primitives; both run exactly the
// same graph (common/ops.h) with the same glue (common/tensor_ops.h).
//
//  stem: 7x7/2 conv 3->64 + bias + ReLU, 3x3/2 max pool (plain)
//  16 bottlenecks [3, 4, 6, 3] of width 64..512 (v1.5: stride on the 3x3):
//    t1 = relu(conv1x1(x) + b);  t2 = relu(conv3x3/s(t1) + b)
//    r  = x, or conv1x1/s(x) + b (projection, first block of each stage)
//    y  = relu(conv1x1(t2) + b + r)     (residual add + ReLU fused as post-ops)
//  global average pool (plain), FC 2048 -> 1000 + bias (fp32 linear).
// 53 convolutions, all on anvil_conv2d_* with bias and post-ops fused.
//
// --dt f32:  fp32 everywhere.
// --dt bf16: bf16 activations between layers (conv src / dst / residual
//            bf16, weights bf16, fp32 accumulation); the image is converted
//            to bf16 first; pooling and the FC run in fp32.
// --dt int8: u8 activations (zero point 0: every activation is post-ReLU
//            except the projection shortcut, which is s8), s8 weights with
//            per-OC scales, requantised u8 / s8 outputs.  Activation scales
//            come from a calibration pass of the fp32 graph on the same
//            image: max |x| / 255 (u8) or / 127 (s8) per conv output; the
//            image (values in [0, 1)) has scale 1/255.  The FC stays fp32 on
//            the dequantised pooled features.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/compare.h"
#include "common/fill.h"
#include "common/ops.h"
#include "common/report.h"
#include "common/tensor_ops.h"

using namespace ex;

namespace {

struct ConvW {
    int64_t IC = 0, OC = 0, K = 1, S = 1, P = 0;
    avec<float> w, b;  // OIHW, OC
};

struct BlockW {
    ConvW c1, c2, c3, down;
    bool has_down = false;
};

struct ModelW {
    ConvW stem;
    std::vector<BlockW> blocks;
    avec<float> fcw, fcb;  // 2048 x 1000, 1000
};

ConvW make_conv(int64_t IC, int64_t OC, int64_t K, int64_t S, float gain, uint64_t &seed) {
    ConvW c;
    c.IC = IC;
    c.OC = OC;
    c.K = K;
    c.S = S;
    c.P = K / 2;
    // He-uniform: Var = gain^2 * 2 / fan_in.
    const float a = gain * std::sqrt(6.f / float(IC * K * K));
    c.w = random_vec(size_t(OC * IC * K * K), -a, a, seed++);
    c.b = random_vec(size_t(OC), -0.05f, 0.05f, seed++);
    return c;
}

ModelW make_model() {
    ModelW m;
    uint64_t seed = 100;
    m.stem = make_conv(3, 64, 7, 2, 1.f, seed);
    const int64_t counts[4] = {3, 4, 6, 3};
    int64_t in_c = 64;
    for (int st = 0; st < 4; ++st) {
        const int64_t width = 64 << st, out_c = 4 * width;
        for (int64_t i = 0; i < counts[st]; ++i) {
            const int64_t s = (i == 0 && st > 0) ? 2 : 1;
            BlockW b;
            b.c1 = make_conv(in_c, width, 1, 1, 1.f, seed);
            b.c2 = make_conv(width, width, 3, s, 1.f, seed);
            // Smaller last conv: the residual stream grows slowly.
            b.c3 = make_conv(width, out_c, 1, 1, 0.5f, seed);
            if (i == 0) {
                b.has_down = true;
                b.down = make_conv(in_c, out_c, 1, s, 0.5f, seed);
            }
            m.blocks.push_back(std::move(b));
            in_c = out_c;
        }
    }
    const float a = std::sqrt(3.f / 2048.f);
    m.fcw = random_vec(2048 * 1000, -a, a, seed++);
    m.fcb = random_vec(1000, -0.05f, 0.05f, seed++);
    return m;
}

class ResNet50 {
public:
    // dt: f32 | bf16 | u8 (int8).  calib: max |dst| of every conv in order
    // (from an fp32 run), needed for int8.
    ResNet50(Backend &be, const ModelW &m, int64_t N, int64_t image, DT dt,
             const std::vector<float> &calib)
        : N_(N), image_(image), dt_(dt) {
        const bool q8 = dt == DT::u8;
        const DT act = dt;
        size_t max_elems = 0;
        int64_t H = image;
        int conv_id = 0;
        auto build = [&](const ConvW &c, int64_t IH, float src_scale, DT dst, bool relu,
                         bool residual, DT res_dt, float res_scale, float *dst_scale_out) {
            ConvSpec s;
            s.N = N;
            s.IH = s.IW = IH;
            s.IC = c.IC;
            s.OC = c.OC;
            s.K = c.K;
            s.S = c.S;
            s.P = c.P;
            s.src = act;
            s.dst = dst;
            s.res_dt = res_dt;
            s.W = c.w.data();
            s.bias = c.b.data();
            s.relu = relu;
            s.residual = residual;
            if (q8) {
                const float mx = calib.at(size_t(conv_id));
                s.src_scale = src_scale;
                s.dst_scale = dst == DT::u8 ? u8_scale_for(mx) : s8_scale_for(mx);
                s.res_scale = res_scale;
            }
            if (dst_scale_out) *dst_scale_out = s.dst_scale;
            ++conv_id;
            max_elems = std::max(max_elems, size_t(N * s.OH() * s.OW() * s.OC));
            sum_sqrt_k_ += std::sqrt(double(c.IC * c.K * c.K));
            return s;
        };
        float scale = 1.f / 255.f;  // image in [0, 1)
        stem_spec_ = build(m.stem, H, scale, act, true, false, act, 1.f, &stem_scale_);
        stem_ = be.conv(stem_spec_);
        H = stem_spec_.OH();
        stem_oh_ = H;
        pool_oh_ = (H + 2 - 3) / 2 + 1;
        H = pool_oh_;
        scale = stem_scale_;  // max pool keeps the scale
        int stage = 2, in_stage = 0;
        for (const BlockW &b : m.blocks) {
            Block k;
            if (b.has_down && in_stage) ++stage;
            in_stage = 1;
            const std::string sn = std::to_string(stage) + " conv" + std::to_string(stage) + "_x ";
            k.names[0] = sn + "1x1 reduce";
            k.names[1] = sn + "3x3";
            k.names[2] = sn + "1x1 expand+add";
            k.names[3] = sn + "1x1 shortcut";
            float s1 = 1, s2 = 1, sd = 1, s3 = 1;
            const ConvSpec c1 = build(b.c1, H, scale, act, true, false, act, 1.f, &s1);
            const ConvSpec c2 = build(b.c2, H, s1, act, true, false, act, 1.f, &s2);
            const int64_t OH = c2.OH();
            DT res_dt = act;
            float res_scale = scale;
            if (b.has_down) {
                const DT ddt = q8 ? DT::s8 : act;
                const ConvSpec cd = build(b.down, H, scale, ddt, false, false, act, 1.f, &sd);
                k.down = be.conv(cd);
                res_dt = ddt;
                res_scale = sd;
            }
            const ConvSpec c3 = build(b.c3, OH, s2, act, true, true, res_dt, res_scale, &s3);
            k.c1 = be.conv(c1);
            k.c2 = be.conv(c2);
            k.c3 = be.conv(c3);
            k.c1_spec = c1;
            k.c2_spec = c2;
            k.c3_spec = c3;
            blocks_.push_back(std::move(k));
            H = OH;
            scale = s3;
        }
        out_h_ = H;
        out_scale_ = scale;
        n_convs_ = conv_id;
        LinearSpec fc;
        fc.M = N;
        fc.K = 2048;
        fc.N = 1000;
        fc.W = m.fcw.data();
        fc.bias = m.fcb.data();
        fc_ = be.linear(fc);
        sum_sqrt_k_ += std::sqrt(2048.0);

        const size_t es = dt_size(act);
        in_.resize(size_t(N * image * image * 3) * es);
        for (auto *buf : {&x_, &y_, &t1_, &t2_, &td_}) buf->resize(max_elems * es);
        pooled_.resize(size_t(N * 2048));
    }

    int n_convs() const { return n_convs_; }
    double sum_sqrt_k() const { return sum_sqrt_k_; }

    // logits [N][1000] = net(img [N][image][image][3] f32).  With `calib`
    // (fp32 graph only), appends max |dst| of every conv (outside timing).
    void forward(const float *img, float *logits, Profile &p, std::vector<float> *calib = nullptr) {
        const int64_t n_in = N_ * image_ * image_ * 3;
        const void *in = img;
        if (dt_ == DT::bf16) {
            Step st(p, "0 convert image");
            Scoped t(p, Cat::glue);
            f32_to_bf16(img, reinterpret_cast<bf16_t *>(in_.data()), n_in);
            in = in_.data();
        } else if (dt_ == DT::u8) {
            Step st(p, "0 convert image");
            Scoped t(p, Cat::glue);
            quantize_u8(img, in_.data(), n_in, 1.f / 255.f, 0);
            in = in_.data();
        }
        auto record = [&](const ConvSpec &s, const void *dst) {
            if (!calib) return;
            const float *d = static_cast<const float *>(dst);
            float mx = 0;
            for (int64_t i = 0, n = s.N * s.OH() * s.OW() * s.OC; i < n; ++i)
                mx = std::max(mx, std::fabs(d[i]));
            calib->push_back(mx);
        };
        {
            Step st(p, "1 stem 7x7 conv");
            stem_->run(in, t1_.data(), nullptr, p);
        }
        record(stem_spec_, t1_.data());
        {
            Step st(p, "1 stem maxpool");
            Scoped t(p, Cat::glue);
            maxpool_nhwc(to_elt(dt_), t1_.data(), x_.data(), N_, stem_oh_, stem_oh_, 64, pool_oh_,
                         pool_oh_, 3, 2, 1);
        }
        uint8_t *x = x_.data(), *y = y_.data();
        for (Block &b : blocks_) {
            {
                Step st(p, b.names[0]);
                b.c1->run(x, t1_.data(), nullptr, p);
            }
            record(b.c1_spec, t1_.data());
            {
                Step st(p, b.names[1]);
                b.c2->run(t1_.data(), t2_.data(), nullptr, p);
            }
            record(b.c2_spec, t2_.data());
            const void *res = x;
            if (b.down) {
                Step st(p, b.names[3]);
                b.down->run(x, td_.data(), nullptr, p);
                record(b.c3_spec, td_.data());  // same output shape as c3
                res = td_.data();
            }
            {
                Step st(p, b.names[2]);
                b.c3->run(t2_.data(), y, res, p);
            }
            record(b.c3_spec, y);
            std::swap(x, y);
        }
        {
            Step st(p, "6 global avgpool");
            Scoped t(p, Cat::glue);
            global_avgpool_nhwc(to_elt(dt_), x, pooled_.data(), N_, out_h_ * out_h_, 2048,
                                dt_ == DT::u8 ? out_scale_ : 1.f);
        }
        Step st(p, "7 fc");
        fc_->run(pooled_.data(), logits, nullptr, p);
    }

private:
    struct Block {
        std::unique_ptr<Conv> c1, c2, c3, down;
        ConvSpec c1_spec, c2_spec, c3_spec;
        std::string names[4];  // per-step table: stage and role of each conv
    };
    int64_t N_, image_;
    DT dt_;
    ConvSpec stem_spec_;
    std::unique_ptr<Conv> stem_;
    float stem_scale_ = 1, out_scale_ = 1;
    int64_t stem_oh_ = 0, pool_oh_ = 0, out_h_ = 0;
    std::vector<Block> blocks_;
    std::unique_ptr<Linear> fc_;
    int n_convs_ = 0;
    double sum_sqrt_k_ = 0;
    avec<uint8_t> in_, x_, y_, t1_, t2_, td_;
    avec<float> pooled_;
};

const char *kUsage =
    "anvil_example_resnet50 [--dt f32|bf16|int8] [--batch 1|8|N] [--image 224|S]\n"
    "                       [--iters N] [--warmup N] [--threads N] [--check] [--json FILE]\n"
    "                       [--per-op]\n"
    "ResNet-50 v1.5 inference (NHWC) on anvil and on oneDNN: median latency, time\n"
    "breakdown and the difference of the two outputs (--check: exit 1 when it\n"
    "exceeds the bound derived in the source).\n";

}  // namespace

int main(int argc, char **argv) try {
    static const char *const flags[] = {"check", "per-op", nullptr};
    Args args(argc, argv, kUsage, flags);
    const std::string dts = args.str("dt", "f32");
    const int64_t N = args.num("batch", 1), image = args.num("image", 224);
    const int iters = int(args.num("iters", 10)), warmup = int(args.num("warmup", 2));
    if ((dts != "f32" && dts != "bf16" && dts != "int8") || N < 1 || image < 32 || iters < 1) {
        std::fprintf(stderr, "bad arguments (--image >= 32)\n%s", kUsage);
        return 2;
    }
    const DT dt = dts == "f32" ? DT::f32 : dts == "bf16" ? DT::bf16 : DT::u8;
    const int threads = set_threads(int(args.num("threads", 0)));

    const ModelW m = make_model();
    const avec<float> img = random_vec(size_t(N * image * image * 3), 0.f, 1.f, 7);
    const size_t n_out = size_t(N * 1000);
    Profile scratch;

    if (onednn_cannot_run(dt, args.has("check"))) return kExitSkipped;

    // fp32 graph on anvil: calibration (int8) and accuracy reference (info).
    std::vector<float> calib;
    avec<float> y_f32;
    if (dt != DT::f32) {
        auto be = make_anvil_backend("plan");
        ResNet50 ref(*be, m, N, image, DT::f32, {});
        y_f32.resize(n_out);
        ref.forward(img.data(), y_f32.data(), scratch, &calib);
    }

    auto anvil_be = make_anvil_backend("plan");
    auto dnnl_be = make_onednn_backend();
    ResNet50 na(*anvil_be, m, N, image, dt, calib);
    ResNet50 nb(*dnnl_be, m, N, image, dt, calib);
    avec<float> ya(n_out), yb(n_out);
    na.forward(img.data(), ya.data(), scratch);
    nb.forward(img.data(), yb.data(), scratch);

    Report r;
    r.model = "resnet50";
    char cfg[200];
    std::snprintf(cfg, sizeof cfg, "image %ld batch %ld dt %s threads %d", long(image), long(N),
                  dts.c_str(), threads);
    r.config = cfg;
    r.per_op = args.has("per-op");
    r.a.name = anvil_be->name();
    r.b.name = dnnl_be->name();
    r.a.setup_s = anvil_be->setup_seconds;
    r.b.setup_s = dnnl_be->setup_seconds;
    r.diff = compare(ya.data(), yb.data(), n_out);
    if (dt != DT::f32) {
        r.has_ref = true;
        r.vs_f32 = compare(ya.data(), y_f32.data(), n_out);
    }
    r.notes.push_back({"convolutions", std::to_string(na.n_convs())});

    // ---- the --check bound (derived, not fitted to observed values) ------
    // Same graph and glue on both sides; only the accumulation order inside
    // the conv / FC kernels differs (oneDNN 2.6 int8 also adds the bias
    // before the output scale: a few fp32 ulp).
    //  fp32: sqrt(K) * u per layer (probabilistic bound for two summation
    //    orders of a length-K dot product, u = 2^-24), summed over the 53
    //    convs and the FC (K = IC * KH * KW), times 10 for the maximum over
    //    all outputs and the gain of the residual stream.
    //  bf16: each of the L = 54 roundings to bf16 (image + 53 conv outputs)
    //    can land one bf16 epsilon (2^-7) apart where the fp32 values
    //    straddle a rounding boundary; independent: sqrt(L) * 2^-7.
    //  int8: likewise one quantisation step per requantised tensor, at most
    //    1/127 of its max magnitude (s8; u8 steps are 1/255): sqrt(L) / 127.
    const int L = na.n_convs() + 1;
    double bound;
    if (dt == DT::f32)
        bound = 10 * std::ldexp(1.0, -24) * na.sum_sqrt_k();
    else if (dt == DT::bf16)
        bound = std::sqrt(double(L)) * std::ldexp(1.0, -7);
    else
        bound = std::sqrt(double(L)) / 127.0;
    r.bound = bound;

    time_pair([&](Profile &p) { na.forward(img.data(), ya.data(), p); },
              [&](Profile &p) { nb.forward(img.data(), yb.data(), p); }, warmup, iters, r.a, r.b);
    return finish_run(r, args.has("check"), args.str("json", ""));
} catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
}
