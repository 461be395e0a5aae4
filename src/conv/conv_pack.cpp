#include "conv/conv_pack.h"

#include <algorithm>
#include <cstring>

#include "common/memory.h"
#include "conv/dw_ukernel.h"
#include "gemm/pack.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_pack.h"

namespace anvil::conv {
namespace {

// Index of weight (oc, ic within the group, kh, kw) in the caller's layout.
int64_t weight_index(const conv_geom &g, anvil_conv_weights_layout_t layout, int64_t oc,
                     int64_t ic, int64_t kh, int64_t kw) {
    if (layout == anvil_conv_weights_oihw) return ((oc * g.ICg + ic) * g.KH + kh) * g.KW + kw;
    return ((kh * g.KW + kw) * g.ICg + ic) * g.OC + oc;
}

void pack_depthwise(const conv_plan &p, anvil_data_type_t wdt, const void *w,
                    anvil_conv_weights_layout_t layout, uint8_t *out) {
    const conv_geom &g = p.g;
    std::memset(out, 0, size_t(p.weights_bytes));
    for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw)
            for (int64_t c = 0; c < g.OC; ++c) {
                const int64_t src = weight_index(g, layout, c, 0, kh, kw);
                const int64_t dst = (kh * g.KW + kw) * p.dw_cpad + c;
                if (wdt == anvil_dt_f32) {
                    reinterpret_cast<float *>(out)[dst] = static_cast<const float *>(w)[src];
                } else if (wdt == anvil_dt_bf16) {
                    reinterpret_cast<float *>(out)[dst] =
                        lowp::bf16_to_f32(static_cast<const uint16_t *>(w)[src]);
                } else {
                    const int32_t v = static_cast<const int8_t *>(w)[src];
                    reinterpret_cast<int32_t *>(out)[dst] = v;
                    reinterpret_cast<int32_t *>(out + p.dw_dot_offset)[dst] = dw_byte_dot_entry(v, c);
                }
            }
    if (!p.dw_pair_offset) return;
    // The bf16 weight of (kh, kw, c): its f32 row entry's high half (exact).
    auto h = [&](int64_t kh, int64_t kw, int64_t c) {
        uint32_t b;
        std::memcpy(&b, out + ((kh * g.KW + kw) * p.dw_cpad + c) * 4, 4);
        return uint16_t(b >> 16);
    };
    auto *pair = reinterpret_cast<uint32_t *>(out + p.dw_pair_offset);
    for (int alone = 0; alone < 2; ++alone)
        for (int64_t kh = 0; kh < g.KH; ++kh)
            for (int64_t kw = 0; kw < g.KW; ++kw) {
                uint32_t *row = pair + ((alone * g.KH + kh) * g.KW + kw) * p.dw_pair_cpad;
                for (int64_t c = 0; c < g.OC; ++c)
                    row[dw_pair_pos(c)] =
                        dw_pair_entry(h(kh, kw, c), !alone && kh + 1 < g.KH ? h(kh + 1, kw, c) : 0);
            }
}

// One group's weights as a plain K x OCg matrix, row k = kh*row_k + kw*ICgp
// + ic (rows of the channel or kernel-row padding are zero), then packed
// into panels.
template <typename T>
void pack_group(const conv_plan &p, const T *w, anvil_conv_weights_layout_t layout, int64_t grp,
                T *mat, uint8_t *out) {
    const conv_geom &g = p.g;
    std::fill(mat, mat + p.K * g.OCg, T(0));
    for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw)
            for (int64_t ic = 0; ic < g.ICg; ++ic) {
                T *row = mat + (kh * p.row_k + kw * p.ICgp + ic) * g.OCg;
                for (int64_t o = 0; o < g.OCg; ++o)
                    row[o] = w[weight_index(g, layout, grp * g.OCg + o, ic, kh, kw)];
            }
    if (p.path == conv_path::gemm_f32) {
        gemm::pack_b_panels(reinterpret_cast<const float *>(mat), g.OCg, false, 0, p.K, 0,
                            g.OCg, kConvNR, reinterpret_cast<float *>(out));
        return;
    }
    int32_t *colsum = p.colsum_offset ? reinterpret_cast<int32_t *>(out + p.colsum_offset) : nullptr;
    lowp::pack_b(p.lp, false, p.K, g.OCg, mat, g.OCg, 0, p.np, out, colsum);
}

}  // namespace

anvil_status_t pack_conv_weights(const conv_plan &p, anvil_data_type_t wdt, const void *w,
                                 anvil_conv_weights_layout_t layout, uint8_t *out) {
    if (p.path == conv_path::depthwise) {
        pack_depthwise(p, wdt, w, layout, out);
        return anvil_success;
    }
    // One group's plain matrix at a time, counted against the memory cap;
    // taken before anything is written to `out`.
    const int64_t elem_bytes = wdt == anvil_dt_f32 ? 4 : wdt == anvil_dt_bf16 ? 2 : 1;
    const int64_t mat_bytes = p.K * p.g.OCg * elem_bytes;
    void *mat = mem::allocate(mat_bytes);
    if (!mat) return anvil_out_of_memory;
    std::memset(out, 0, size_t(p.weights_bytes));
    for (int64_t grp = 0; grp < p.g.G; ++grp) {
        uint8_t *dst = out + grp * p.group_bytes;
        if (wdt == anvil_dt_f32)
            pack_group(p, static_cast<const float *>(w), layout, grp, static_cast<float *>(mat), dst);
        else if (wdt == anvil_dt_bf16)
            pack_group(p, static_cast<const uint16_t *>(w), layout, grp, static_cast<uint16_t *>(mat), dst);
        else
            pack_group(p, static_cast<const int8_t *>(w), layout, grp, static_cast<int8_t *>(mat), dst);
    }
    mem::release(mat, mat_bytes);
    return anvil_success;
}

}  // namespace anvil::conv
