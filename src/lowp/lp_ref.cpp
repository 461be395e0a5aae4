// The scalar lp micro-kernels (the contract in lp_ukernel.h, element by
// element) and the "scalar" tier's lp backend.
#include "lowp/lp_ref.h"

#include "lowp/lp_backend.h"

namespace anvil::lowp {

namespace {
int64_t padded_cols(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }
}  // namespace

void lp_ukernel_scalar_bf16(const lp_ukernel_args *p) {
    const int64_t ncols = padded_cols(p->n);
    for (int64_t i = 0; i < p->m; ++i) {
        float *acc = static_cast<float *>(p->acc) + i * p->acc_ld;
        const uint8_t *a_row = p->a + i * p->a_rs;
        for (int64_t j = 0; j < ncols; ++j) {
            float s = p->accumulate ? acc[j] : 0.0f;
            for (int64_t g = 0; g < p->kg; ++g) {
                uint16_t a[2], b[2];
                std::memcpy(a, a_row + g * kGroupBytes, sizeof(a));
                std::memcpy(b, p->b + g * p->b_ld + j * kGroupBytes, sizeof(b));
                // Element 1 first, one rounding per addition (vdpbf16ps).
                // The products are exact, so the two statements are exact
                // regardless of -ffp-contract.
                const float p1 = bf16_to_f32(a[1]) * bf16_to_f32(b[1]);
                s = s + p1;
                const float p0 = bf16_to_f32(a[0]) * bf16_to_f32(b[0]);
                s = s + p0;
            }
            acc[j] = s;
        }
    }
}

void lp_ukernel_scalar_u8s8(const lp_ukernel_args *p) {
    const int64_t ncols = padded_cols(p->n);
    for (int64_t i = 0; i < p->m; ++i) {
        int32_t *acc = static_cast<int32_t *>(p->acc) + i * p->acc_ld;
        const uint8_t *a_row = p->a + i * p->a_rs;
        for (int64_t j = 0; j < ncols; ++j) {
            // uint32_t: the contract's wrap-around without signed overflow.
            uint32_t s = p->accumulate ? uint32_t(acc[j]) : 0u;
            for (int64_t g = 0; g < p->kg; ++g) {
                const uint8_t *a = a_row + g * kGroupBytes;
                const uint8_t *b = p->b + g * p->b_ld + j * kGroupBytes;
                for (int t = 0; t < 4; ++t)
                    s += uint32_t(int32_t(a[t]) * int32_t(int8_t(b[t])));
            }
            acc[j] = int32_t(s);
        }
    }
}

void lp_ukernel_scalar(const lp_ukernel_args *args, lp_kind kind) {
    if (kind == lp_kind::bf16)
        lp_ukernel_scalar_bf16(args);
    else
        lp_ukernel_scalar_u8s8(args);
}

namespace {

class scalar_lp_backend_t final : public lp_backend {
public:
    const char *name() const override { return "scalar"; }
    anvil_isa_t tier() const override { return anvil_isa_scalar; }
    bool supports(lp_kind) const override { return true; }
    anvil_status_t get(const lp_ukernel_desc &d, lp_ukernel_ref *out) const override {
        if (d.m < 1 || d.m > kMR || d.nv < 1 || d.nv > 2) return anvil_invalid_argument;
        // No fused epilogue, no widened A (lp_ukernel.h) here.
        if (d.epi_out != EPI_NONE || d.a_f32 || d.k_tail) return anvil_unsupported;
        if (d.kind == lp_kind::bf16) {
            out->fn = lp_ukernel_scalar_bf16;
            out->name = "scalar_lp_bf16";
        } else {
            out->fn = lp_ukernel_scalar_u8s8;
            out->name = "scalar_lp_u8s8";
        }
        out->keep_alive.reset();
        return anvil_success;
    }
};

}  // namespace

const lp_backend *scalar_lp_backend() {
    static const scalar_lp_backend_t b;
    return &b;
}

}  // namespace anvil::lowp
