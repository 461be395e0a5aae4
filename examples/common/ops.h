// The operations the two example graphs are built from, described once and
// implemented twice: on anvil's public API (anvil_ops.cpp) and on oneDNN
// primitives (onednn_ops.cpp).  Graph code (bert_layer.cpp, resnet50.cpp)
// only sees these interfaces, so both backends run exactly the same graph
// with the same glue.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor_ops.h"
#include "common/timer.h"

namespace ex {

enum class DT { f32, bf16, u8, s8 };
size_t dt_size(DT t);
Elt to_elt(DT t);
const char *dt_name(DT t);

// Y (M x N) = epilogue(A (M x K) * W (K x N)).
//  in  f32 | bf16 | u8 (u8: real value = (q - a_zp) * a_scale)
//  out f32 | bf16
//  epilogue: + bias[n], then exact-erf GELU (gelu), then + res (f32 M x N).
// int8: W is quantised to s8 per output column (scale max|W(:,n)|/127).
struct LinearSpec {
    int64_t M = 0, K = 0, N = 0;
    DT in = DT::f32, out = DT::f32;
    const float *W = nullptr;     // K x N row-major (fp32 master weights)
    const float *bias = nullptr;  // N
    bool gelu = false;
    bool residual = false;
    float a_scale = 1.f;
    int32_t a_zp = 0;
};

class Linear {
public:
    virtual ~Linear() = default;
    virtual void run(const void *A, void *C, const float *res, Profile &p) = 0;
};

// NHWC convolution, square kernel K, stride S, symmetric padding P, groups 1.
//  dst = relu?( conv(src, W) + bias  [+ res] )
//  f32: all f32.  bf16: src, dst, res bf16.
//  int8: src u8 (scale src_scale, zero point 0), W s8 per OC
//        (max|W(oc)|/127), dst u8 (relu) or s8 (no relu) with dst_scale,
//        res u8/s8 with res_scale.
struct ConvSpec {
    int64_t N = 1, IH = 0, IW = 0, IC = 0, OC = 0, K = 1, S = 1, P = 0;
    DT src = DT::f32, dst = DT::f32, res_dt = DT::f32;
    const float *W = nullptr;  // OIHW fp32 master weights
    const float *bias = nullptr;
    bool relu = false;
    bool residual = false;
    float src_scale = 1.f, dst_scale = 1.f, res_scale = 1.f;
    int64_t OH() const { return (IH + 2 * P - K) / S + 1; }
    int64_t OW() const { return (IW + 2 * P - K) / S + 1; }
};

class Conv {
public:
    virtual ~Conv() = default;
    virtual void run(const void *src, void *dst, const void *res, Profile &p) = 0;
};

// Multi-head attention score and context GEMMs on a fused QKV tensor
// qkv [B*S][3*H*D] (Q | K | V, head h at columns h*D), of type dt (f32 or
// bf16):
//   scores[b][h][i][j] = Q_bh(i,:) . K_bh(j,:) / sqrt(D)       (f32)
//   ctx[b*S+i][h*D+d]  = sum_j P[b][h][i][j] * V_bh(j, d)     (f32; P of type dt)
struct AttnSpec {
    int64_t B = 1, S = 0, H = 12, D = 64;
    DT dt = DT::f32;
};

class Attention {
public:
    virtual ~Attention() = default;
    virtual void scores(const void *qkv, float *scores, Profile &p) = 0;
    virtual void context(const void *P, const void *qkv, float *ctx, Profile &p) = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual std::unique_ptr<Linear> linear(const LinearSpec &s) = 0;
    virtual std::unique_ptr<Conv> conv(const ConvSpec &s) = 0;
    virtual std::unique_ptr<Attention> attention(const AttnSpec &s) = 0;
    // One-time weight preparation (anvil: create + pack; oneDNN: primitive
    // creation + weight reorder), summed over all ops built so far.
    double setup_seconds = 0;
};

// f32_linear: "plan" (anvil_gemm_plan_* + plain epilogue, since the matmul
// handle takes no fp32 operands) or "conv" (a 1x1 anvil_conv2d, which does
// fuse bias / GELU / residual for fp32).
std::unique_ptr<Backend> make_anvil_backend(const std::string &f32_linear);
std::unique_ptr<Backend> make_onednn_backend();
// Why oneDNN cannot serve as the reference for `dt` graphs on this CPU, or
// "" when it can: oneDNN 2.6 has bf16 primitives only from AVX-512 on, and
// its int8 kernels give exact int32 sums only with VNNI (without it they
// saturate u8 x s8 pair sums at int16).  The examples then exit with
// kExitSkipped (ctest reports the test as skipped, not passed).
std::string onednn_cannot_check(DT dt);
constexpr int kExitSkipped = 77;
// The examples' gate: true (after printing "SKIPPED: why") when the run
// must stop -- no oneDNN bf16 to compare with, or --check against an
// inexact oneDNN int8; an int8 run without --check goes on (timed) after a
// note.
bool onednn_cannot_run(DT dt, bool check);

// Weight preparation shared by both backends (identical quantised bytes).
struct QuantW {
    std::vector<int8_t> q;
    std::vector<float> scales;  // per output channel
};
// W K x N row-major: one scale per column n.
QuantW quantize_per_col(const float *W, int64_t K, int64_t N);
// W OIHW: one scale per output channel (row of K*K*IC values).
QuantW quantize_per_row(const float *W, int64_t rows, int64_t cols);
std::vector<bf16_t> to_bf16_vec(const float *W, int64_t n);

// Calibrated scale of a tensor whose values lie in [0, max] (u8) or
// [-max, max] (s8).
float u8_scale_for(float max_abs);
float s8_scale_for(float max_abs);

}  // namespace ex
