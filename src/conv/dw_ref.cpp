// The scalar depthwise micro-kernels (the contract in dw_ukernel.h, element
// by element) and the "scalar" tier's dw backend.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "conv/dw_backend.h"

namespace anvil::conv {

namespace {

constexpr int64_t kChunk = 64;  // channels accumulated in a local row at a time

inline float load_x_f32(const uint8_t *p) {
    float v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

inline float load_x_bf16(const uint8_t *p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
    const uint32_t u = uint32_t(h) << 16;  // exact widening
    float v;
    std::memcpy(&v, &u, sizeof(v));
    return v;
}

// f32 / bf16: acc = fma(X, W, acc) per tap in increasing t, from +0.0f.
template <dw_kind K>
void rows_fp(const dw_ukernel_args *p, int64_t c0, int64_t c1) {
    constexpr int64_t elem = K == dw_kind::f32 ? 4 : 2;
    for (int64_t r = 0, rows = dw_call_rows(*p); r < rows; ++r) {
        float *acc = static_cast<float *>(p->acc) + r * p->acc_ld;
        for (int64_t cb = c0; cb < c1; cb += kChunk) {
            const int64_t n = std::min(kChunk, c1 - cb);
            float s[kChunk];
            std::fill(s, s + n, 0.0f);
            for (int64_t t = 0; t < p->ntaps; ++t) {
                const uint8_t *x = p->src_taps[t] + r * p->pix_stride + cb * elem;
                const float *w = static_cast<const float *>(p->w_taps[t]) + cb;
                for (int64_t c = 0; c < n; ++c) {
                    const float xv = K == dw_kind::f32 ? load_x_f32(x + c * elem)
                                                       : load_x_bf16(x + c * elem);
                    s[c] = std::fma(xv, w[c], s[c]);
                }
            }
            std::memcpy(acc + cb, s, size_t(n) * sizeof(float));
        }
    }
}

// u8 / s8: exact int32, wrapping: all arithmetic in uint32.
template <dw_kind K>
void rows_int(const dw_ukernel_args *p, bool zero_point, int64_t c0, int64_t c1) {
    const uint32_t zp = zero_point ? uint32_t(p->zero_point) : 0u;
    for (int64_t r = 0, rows = dw_call_rows(*p); r < rows; ++r) {
        int32_t *acc = static_cast<int32_t *>(p->acc) + r * p->acc_ld;
        for (int64_t cb = c0; cb < c1; cb += kChunk) {
            const int64_t n = std::min(kChunk, c1 - cb);
            uint32_t s[kChunk];
            std::fill(s, s + n, 0u);
            for (int64_t t = 0; t < p->ntaps; ++t) {
                const uint8_t *x = p->src_taps[t] + r * p->pix_stride + cb;
                const int32_t *w = static_cast<const int32_t *>(p->w_taps[t]) + cb;
                for (int64_t c = 0; c < n; ++c) {
                    const int32_t xi = K == dw_kind::u8 ? int32_t(x[c]) : int32_t(int8_t(x[c]));
                    s[c] += (uint32_t(xi) - zp) * uint32_t(w[c]);
                }
            }
            for (int64_t c = 0; c < n; ++c) acc[cb + c] = int32_t(s[c]);
        }
    }
}

void scalar_f32(const dw_ukernel_args *p) { rows_fp<dw_kind::f32>(p, 0, p->channels); }
void scalar_bf16(const dw_ukernel_args *p) { rows_fp<dw_kind::bf16>(p, 0, p->channels); }
void scalar_u8(const dw_ukernel_args *p) { rows_int<dw_kind::u8>(p, false, 0, p->channels); }
void scalar_u8_zp(const dw_ukernel_args *p) { rows_int<dw_kind::u8>(p, true, 0, p->channels); }
void scalar_s8(const dw_ukernel_args *p) { rows_int<dw_kind::s8>(p, false, 0, p->channels); }
void scalar_s8_zp(const dw_ukernel_args *p) { rows_int<dw_kind::s8>(p, true, 0, p->channels); }

}  // namespace

void dw_ukernel_scalar_range(const dw_ukernel_args *args, dw_kind kind, bool zero_point,
                             int64_t c0, int64_t c1) {
    if (c0 >= c1) return;
    switch (kind) {
        case dw_kind::f32: rows_fp<dw_kind::f32>(args, c0, c1); break;
        case dw_kind::bf16: rows_fp<dw_kind::bf16>(args, c0, c1); break;
        case dw_kind::u8: rows_int<dw_kind::u8>(args, zero_point, c0, c1); break;
        case dw_kind::s8: rows_int<dw_kind::s8>(args, zero_point, c0, c1); break;
    }
}

namespace {

class scalar_dw_backend_t final : public dw_backend {
public:
    const char *name() const override { return "scalar"; }
    anvil_isa_t tier() const override { return anvil_isa_scalar; }
    anvil_status_t get(const dw_ukernel_desc &d, dw_ukernel_ref *out) const override {
        if (!dw_desc_valid(d)) return anvil_invalid_argument;
        if (d.epi != 0) return anvil_unsupported;  // no fused epilogue here
        if (dw_byte_dot_rows(d.narrow_int) > 0) return anvil_unsupported;  // plain int32 weight rows only
        const bool zp = dw_has_zero_point(d);
        switch (d.kind) {
            case dw_kind::f32: out->fn = scalar_f32, out->name = "scalar_dw_f32"; break;
            case dw_kind::bf16: out->fn = scalar_bf16, out->name = "scalar_dw_bf16"; break;
            case dw_kind::u8:
                out->fn = zp ? scalar_u8_zp : scalar_u8;
                out->name = zp ? "scalar_dw_u8_zp" : "scalar_dw_u8";
                break;
            case dw_kind::s8:
                out->fn = zp ? scalar_s8_zp : scalar_s8;
                out->name = zp ? "scalar_dw_s8_zp" : "scalar_dw_s8";
                break;
        }
        out->keep_alive.reset();
        return anvil_success;
    }
};

}  // namespace

const dw_backend *scalar_dw_backend() {
    static const scalar_dw_backend_t b;
    return &b;
}

}  // namespace anvil::conv
