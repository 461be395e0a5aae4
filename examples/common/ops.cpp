#include "common/ops.h"

#include <algorithm>
#include <cmath>

namespace ex {

size_t dt_size(DT t) {
    switch (t) {
    case DT::f32: return 4;
    case DT::bf16: return 2;
    default: return 1;
    }
}

Elt to_elt(DT t) {
    switch (t) {
    case DT::f32: return Elt::f32;
    case DT::bf16: return Elt::bf16;
    case DT::u8: return Elt::u8;
    default: return Elt::s8;
    }
}

const char *dt_name(DT t) {
    switch (t) {
    case DT::f32: return "f32";
    case DT::bf16: return "bf16";
    case DT::u8: return "u8";
    default: return "s8";
    }
}

QuantW quantize_per_col(const float *W, int64_t K, int64_t N) {
    QuantW r;
    r.q.resize(size_t(K * N));
    r.scales.assign(size_t(N), 0.f);
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
            r.scales[size_t(n)] = std::max(r.scales[size_t(n)], std::fabs(W[k * N + n]));
    for (auto &s : r.scales) s = s > 0 ? s / 127.f : 1.f;
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
            r.q[size_t(k * N + n)] =
                int8_t(std::max(-127.f, std::min(127.f, std::nearbyint(W[k * N + n] / r.scales[size_t(n)]))));
    return r;
}

QuantW quantize_per_row(const float *W, int64_t rows, int64_t cols) {
    QuantW r;
    r.q.resize(size_t(rows * cols));
    r.scales.resize(size_t(rows));
    for (int64_t i = 0; i < rows; ++i) {
        float m = 0;
        for (int64_t j = 0; j < cols; ++j) m = std::max(m, std::fabs(W[i * cols + j]));
        const float s = m > 0 ? m / 127.f : 1.f;
        r.scales[size_t(i)] = s;
        for (int64_t j = 0; j < cols; ++j)
            r.q[size_t(i * cols + j)] =
                int8_t(std::max(-127.f, std::min(127.f, std::nearbyint(W[i * cols + j] / s))));
    }
    return r;
}

std::vector<bf16_t> to_bf16_vec(const float *W, int64_t n) {
    std::vector<bf16_t> r(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) r[size_t(i)] = to_bf16(W[i]);
    return r;
}

float u8_scale_for(float max_abs) { return max_abs > 0 ? max_abs / 255.f : 1.f; }
float s8_scale_for(float max_abs) { return max_abs > 0 ? max_abs / 127.f : 1.f; }

}  // namespace ex
