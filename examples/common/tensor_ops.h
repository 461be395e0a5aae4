// The "glue" of both graphs, written plainly (no library calls) and shared
// by the anvil and the oneDNN runs so that only the GEMM / conv calls differ.
// Rows are independent and split over OpenMP threads.
#pragma once

#include <cstdint>

namespace ex {

using bf16_t = uint16_t;

// fp32 <-> bf16, round to nearest even (NaN kept quiet).
bf16_t to_bf16(float x);
float from_bf16(bf16_t x);
void f32_to_bf16(const float *src, bf16_t *dst, int64_t n);
void bf16_to_f32(const bf16_t *src, float *dst, int64_t n);

// u8 = clamp(round_even(x / scale) + zp, 0, 255).
void quantize_u8(const float *src, uint8_t *dst, int64_t n, float scale, int32_t zp);
// dst = (float(src) - zp) * scale   (u8 / s8 to f32), used for residuals.
void dequantize(const uint8_t *src, float *dst, int64_t n, float scale, int32_t zp);
void dequantize(const int8_t *src, float *dst, int64_t n, float scale);

// In place, per row of `cols` values (leading dimension ld): x = softmax(x).
// With bf16_out non-null the probabilities are also written there as bf16
// (row stride cols).
void softmax_rows(float *x, int64_t rows, int64_t cols, int64_t ld, bf16_t *bf16_out);

// y = (x - mean) / sqrt(var + eps) * gamma + beta per row of `cols`.
// Optional second output of the same values as bf16 or quantised u8.
void layernorm_rows(const float *x, float *y, int64_t rows, int64_t cols, const float *gamma,
                    const float *beta, float eps, bf16_t *bf16_out = nullptr,
                    uint8_t *u8_out = nullptr, float u8_scale = 1.f, int32_t u8_zp = 0);

// y[i, j] += bias[j]; then optional exact-erf GELU; then optional += res[i, j].
void bias_gelu_residual(float *y, int64_t rows, int64_t cols, const float *bias, bool gelu,
                        const float *res);

// min / max of a tensor (calibration).
void min_max(const float *x, int64_t n, float *mn, float *mx);

// NHWC 3x3 / stride 2 / pad 1 max pooling (the ResNet stem's), for f32,
// bf16 (compared as floats) and u8 (scale unchanged).
enum class Elt { f32, bf16, u8, s8 };
void maxpool_nhwc(Elt t, const void *src, void *dst, int64_t N, int64_t H, int64_t W,
                  int64_t C, int64_t OH, int64_t OW, int64_t k, int64_t s, int64_t pad);

// NHWC global average pool into f32 [N][C]; u8 inputs are dequantised
// with `scale`.
void global_avgpool_nhwc(Elt t, const void *src, float *dst, int64_t N, int64_t HW, int64_t C,
                         float scale);

}  // namespace ex
