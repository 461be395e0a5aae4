// The rowb kernel's scalar definition (lp_rowb.h) and, in builds without the
// JIT tier, the getter that has no kernels to give.
#include "lowp/lp_rowb.h"

#include <cstring>

#include "lowp/lp_ref.h"

namespace anvil::lowp {

void lp_rowb_scalar(const lp_rowb_args *p) {
    for (int64_t i = 0; i < p->m; ++i) {
        const uint8_t *a = p->a + i * p->a_rs;
        for (int64_t j = 0; j < p->n; ++j) {
            // uint32_t: the contract's wrap-around without signed overflow.
            uint32_t s = 0;
            for (int64_t k = 0; k < p->k; ++k)
                s += uint32_t(int32_t(a[k]) * int32_t(int8_t(p->b[k * p->b_rs + j])));
            p->acc[i * p->acc_ld + j] = int32_t(s);
        }
    }
}

void lp_rowb_scalar_bf16(const lp_rowb_args *p) {
    auto at = [](const uint8_t *base, int64_t byte_off) {
        uint16_t v;
        std::memcpy(&v, base + byte_off, 2);
        return bf16_to_f32(v);
    };
    float *acc = reinterpret_cast<float *>(p->acc);
    for (int64_t i = 0; i < p->m; ++i)
        for (int64_t j = 0; j < p->n; ++j) {
            float s = 0.0f;
            for (int64_t k = 0; k < p->k; k += 2) {
                // Element k + 1 first, each product exact, each sum rounded.
                if (k + 1 < p->k) s += at(p->a, i * p->a_rs + (k + 1) * 2) * at(p->b, (k + 1) * p->b_rs + j * 2);
                else s += 0.0f;  // B's missing row: + 0 * A(i, K), as the kernels
                s += at(p->a, i * p->a_rs + k * 2) * at(p->b, k * p->b_rs + j * 2);
            }
            acc[i * p->acc_ld + j] = s;
        }
}

#if !defined(ANVIL_HAVE_JIT)
anvil_status_t get_lp_rowb_kernel(const lp_rowb_desc &d, lp_rowb_fn *fn,
                                  std::shared_ptr<const void> *keep_alive) {
    if (!fn || !keep_alive || !lp_rowb_shape_ok(d)) return anvil_invalid_argument;
    return anvil_unsupported;
}
#endif

}  // namespace anvil::lowp
