#include "common/tensor_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ex {

bf16_t to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return bf16_t(u >> 16);
}

float from_bf16(bf16_t x) {
    const uint32_t u = uint32_t(x) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

void f32_to_bf16(const float *src, bf16_t *dst, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void bf16_to_f32(const bf16_t *src, float *dst, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = from_bf16(src[i]);
}

// Round to nearest even for |x| <= 2^22 with plain adds (vectorises on any
// x86-64; std::nearbyint is a libm call per element without SSE4.1).
static inline float round_even(float x) {
    const float magic = 12582912.f;  // 1.5 * 2^23
    return (x + magic) - magic;
}

static inline uint8_t quantize_one(float x, float inv, float zp) {
    // Clamp first (so the rounding trick stays in range), then round.
    const float q = std::min(255.f, std::max(0.f, x * inv + zp));
    return uint8_t(round_even(q));
}

void quantize_u8(const float *src, uint8_t *dst, int64_t n, float scale, int32_t zp) {
    const float inv = 1.f / scale, z = float(zp);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = quantize_one(src[i], inv, z);
}

void dequantize(const uint8_t *src, float *dst, int64_t n, float scale, int32_t zp) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = float(int32_t(src[i]) - zp) * scale;
}

void dequantize(const int8_t *src, float *dst, int64_t n, float scale) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = float(src[i]) * scale;
}

void softmax_rows(float *x, int64_t rows, int64_t cols, int64_t ld, bf16_t *bf16_out) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        float *row = x + r * ld;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, row[c]);
        float sum = 0.f;
        for (int64_t c = 0; c < cols; ++c) {
            row[c] = std::exp(row[c] - mx);
            sum += row[c];
        }
        const float inv = 1.f / sum;
        for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
        if (bf16_out)
            for (int64_t c = 0; c < cols; ++c) bf16_out[r * cols + c] = to_bf16(row[c]);
    }
}

void layernorm_rows(const float *x, float *y, int64_t rows, int64_t cols, const float *gamma,
                    const float *beta, float eps, bf16_t *bf16_out, uint8_t *u8_out,
                    float u8_scale, int32_t u8_zp) {
    const float inv_q = 1.f / u8_scale;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double mean = 0;
        for (int64_t c = 0; c < cols; ++c) mean += xr[c];
        mean /= double(cols);
        double var = 0;
        for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        var /= double(cols);
        const float m = float(mean), rs = float(1.0 / std::sqrt(var + eps));
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - m) * rs * gamma[c] + beta[c];
        if (bf16_out)
            for (int64_t c = 0; c < cols; ++c) bf16_out[r * cols + c] = to_bf16(yr[c]);
        if (u8_out)
            for (int64_t c = 0; c < cols; ++c)
                u8_out[r * cols + c] = quantize_one(yr[c], inv_q, float(u8_zp));
    }
}

void bias_gelu_residual(float *y, int64_t rows, int64_t cols, const float *bias, bool gelu,
                        const float *res) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        float *yr = y + r * cols;
        if (bias)
            for (int64_t c = 0; c < cols; ++c) yr[c] += bias[c];
        if (gelu)
            for (int64_t c = 0; c < cols; ++c)
                yr[c] = 0.5f * yr[c] * (1.f + std::erf(yr[c] * 0.70710678118654752f));
        if (res)
            for (int64_t c = 0; c < cols; ++c) yr[c] += res[r * cols + c];
    }
}

void min_max(const float *x, int64_t n, float *mn, float *mx) {
    float a = std::numeric_limits<float>::infinity(), b = -a;
    for (int64_t i = 0; i < n; ++i) {
        a = std::min(a, x[i]);
        b = std::max(b, x[i]);
    }
    *mn = a;
    *mx = b;
}

namespace {

// Max over the in-bounds taps of each window, in the element type (f32,
// u8, s8: std::max vectorises) or, for bf16, on order-preserving integer
// keys of the bits.
template <class T, class Acc, class ToAcc, class FromAcc>
void maxpool_impl(const T *src, T *dst, int64_t N, int64_t H, int64_t W, int64_t C, int64_t OH,
                  int64_t OW, int64_t k, int64_t s, int64_t pad, ToAcc to_acc, FromAcc from_acc) {
#pragma omp parallel
    {
        std::vector<Acc> acc(static_cast<size_t>(C));
#pragma omp for collapse(2) schedule(static)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    Acc *a = acc.data();
                    for (int64_t c = 0; c < C; ++c) a[c] = std::numeric_limits<Acc>::lowest();
                    for (int64_t kh = 0; kh < k; ++kh) {
                        const int64_t ih = oh * s - pad + kh;
                        if (ih < 0 || ih >= H) continue;
                        for (int64_t kw = 0; kw < k; ++kw) {
                            const int64_t iw = ow * s - pad + kw;
                            if (iw < 0 || iw >= W) continue;
                            const T *p = src + ((n * H + ih) * W + iw) * C;
                            for (int64_t c = 0; c < C; ++c) a[c] = std::max(a[c], to_acc(p[c]));
                        }
                    }
                    T *d = dst + ((n * OH + oh) * OW + ow) * C;
                    for (int64_t c = 0; c < C; ++c) d[c] = from_acc(a[c]);
                }
    }
}

template <class T, class ToF>
void gap_impl(const T *src, float *dst, int64_t N, int64_t HW, int64_t C, float scale, ToF tof) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        float *d = dst + n * C;
        for (int64_t c = 0; c < C; ++c) d[c] = 0.f;
        for (int64_t p = 0; p < HW; ++p) {
            const T *s = src + (n * HW + p) * C;
            for (int64_t c = 0; c < C; ++c) d[c] += tof(s[c]);
        }
        const float f = scale / float(HW);
        for (int64_t c = 0; c < C; ++c) d[c] *= f;
    }
}

}  // namespace

void maxpool_nhwc(Elt t, const void *src, void *dst, int64_t N, int64_t H, int64_t W, int64_t C,
                  int64_t OH, int64_t OW, int64_t k, int64_t s, int64_t pad) {
    auto same_f = [](float v) { return v; };
    auto same_u = [](uint8_t v) { return v; };
    auto same_s = [](int8_t v) { return v; };
    switch (t) {
    case Elt::f32:
        maxpool_impl<float, float>(static_cast<const float *>(src), static_cast<float *>(dst), N,
                                   H, W, C, OH, OW, k, s, pad, same_f, same_f);
        break;
    case Elt::bf16:
        // bf16 bits as an integer with the order of the values
        // (sign-magnitude -> two's complement); NaNs are not expected.
        maxpool_impl<bf16_t, int32_t>(
            static_cast<const bf16_t *>(src), static_cast<bf16_t *>(dst), N, H, W, C, OH, OW, k,
            s, pad,
            [](bf16_t v) { return (v & 0x8000) ? -int32_t(v & 0x7fff) : int32_t(v); },
            [](int32_t k_) { return k_ < 0 ? bf16_t(0x8000 | -k_) : bf16_t(k_); });
        break;
    case Elt::u8:
        maxpool_impl<uint8_t, uint8_t>(static_cast<const uint8_t *>(src),
                                       static_cast<uint8_t *>(dst), N, H, W, C, OH, OW, k, s, pad,
                                       same_u, same_u);
        break;
    case Elt::s8:
        maxpool_impl<int8_t, int8_t>(static_cast<const int8_t *>(src), static_cast<int8_t *>(dst),
                                     N, H, W, C, OH, OW, k, s, pad, same_s, same_s);
        break;
    }
}

void global_avgpool_nhwc(Elt t, const void *src, float *dst, int64_t N, int64_t HW, int64_t C,
                         float scale) {
    switch (t) {
    case Elt::f32:
        gap_impl(static_cast<const float *>(src), dst, N, HW, C, scale, [](float v) { return v; });
        break;
    case Elt::bf16:
        gap_impl(static_cast<const bf16_t *>(src), dst, N, HW, C, scale,
                 [](bf16_t v) { return from_bf16(v); });
        break;
    case Elt::u8:
        gap_impl(static_cast<const uint8_t *>(src), dst, N, HW, C, scale,
                 [](uint8_t v) { return float(v); });
        break;
    case Elt::s8:
        gap_impl(static_cast<const int8_t *>(src), dst, N, HW, C, scale,
                 [](int8_t v) { return float(v); });
        break;
    }
}

}  // namespace ex
