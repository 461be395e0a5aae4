#include "lowp/chain_epilogue.h"

#include <algorithm>

namespace anvil::lowp {

int out_type_bytes(out_type t) {
    switch (t) {
        case out_type::f32:
        case out_type::s32: return 4;
        case out_type::bf16: return 2;
        case out_type::u8:
        case out_type::s8: return 1;
    }
    return 4;
}

chain_epilogue::chain_epilogue(const chain_spec &spec, void *C, int64_t ldc,
                               const void *const *srcs, const float *bias)
    : s_(spec), c_(static_cast<uint8_t *>(C)), elem_bytes_(out_type_bytes(spec.out)),
      srcs_(srcs), bias_(bias ? bias : spec.bias.empty() ? nullptr : spec.bias.data()) {
    ldc_bytes_ = ldc * elem_bytes_;
    exact_s32_ = spec.out == out_type::s32 && spec.kind == lp_kind::u8s8 && spec.scales.empty() &&
                 !bias_ && spec.ops.empty();
    if (spec.kind == lp_kind::u8s8) {
        needs_rowsum = spec.bo != 0;
        needs_colsum = (spec.ao + spec.a_shift) != 0;
    }
}

void chain_epilogue::apply(const lp_block &blk) const {
    // Row segments of at most kSeg columns: the fp32 work row stays in L1
    // (and on the stack) whatever the block width.
    constexpr int64_t kSeg = 256;
    float x[kSeg];
    const uint32_t k_ao_bo = uint32_t(uint64_t(s_.K)) * uint32_t(s_.ao) * uint32_t(s_.bo);
    const uint32_t col_factor = uint32_t(s_.ao + s_.a_shift);
    const float *scales = s_.scales.empty() ? nullptr : s_.scales.data();
    const float *bias = bias_;
    for (int64_t r = 0; r < blk.m; ++r) {
        const int64_t i = blk.i0 + r;
        const uint32_t row_comp =
            k_ao_bo - (needs_rowsum ? uint32_t(s_.bo) * uint32_t(blk.rowsum[r]) : 0u);
        for (int64_t c0 = 0; c0 < blk.n; c0 += kSeg) {
            const int64_t n = std::min(kSeg, blk.n - c0);
            const int64_t j0 = blk.j0 + c0;
            if (exact_s32_) {
                // s32 output of a bare product: stored exactly (through
                // fp32 it would lose bits above 2^24).
                const int32_t *acc = static_cast<const int32_t *>(blk.acc) + r * blk.acc_ld + c0;
                int32_t *dst = reinterpret_cast<int32_t *>(c_ + i * ldc_bytes_) + j0;
                const int64_t zp = int64_t(s_.c_zero_point);
                const int32_t *cs = blk.colsum + c0;
                // Loops without branches so the compiler vectorises them.
                if (needs_colsum)
                    for (int64_t c = 0; c < n; ++c)
                        dst[c] = int32_t(uint32_t(acc[c]) + row_comp - col_factor * uint32_t(cs[c]));
                else
                    for (int64_t c = 0; c < n; ++c) dst[c] = int32_t(uint32_t(acc[c]) + row_comp);
                if (zp != 0)
                    for (int64_t c = 0; c < n; ++c) {
                        const int64_t v = int64_t(dst[c]) + zp;
                        dst[c] = int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)));
                    }
                continue;
            }
            if (s_.kind == lp_kind::bf16) {
                const float *acc = static_cast<const float *>(blk.acc) + r * blk.acc_ld + c0;
                std::copy(acc, acc + n, x);
            } else {
                // The true dot product modulo 2^32 (see s32_blas_epilogue).
                const int32_t *acc = static_cast<const int32_t *>(blk.acc) + r * blk.acc_ld + c0;
                if (needs_colsum) {
                    const int32_t *cs = blk.colsum + c0;
                    for (int64_t c = 0; c < n; ++c)
                        x[c] = float(int32_t(uint32_t(acc[c]) + row_comp - col_factor * uint32_t(cs[c])));
                } else {
                    for (int64_t c = 0; c < n; ++c) x[c] = float(int32_t(uint32_t(acc[c]) + row_comp));
                }
            }
            pp_scale_bias(x, n, scales ? scales + (s_.scales_per_n ? j0 : 0) : nullptr,
                          s_.scales_per_n, bias ? bias + j0 : nullptr);
            if (!s_.ops.empty()) pp_apply(x, n, i, j0, s_.ops.data(), int(s_.ops.size()), srcs_);
            pp_store(x, n, s_.c_zero_point, s_.out, c_ + i * ldc_bytes_ + j0 * elem_bytes_);
        }
    }
}

}  // namespace anvil::lowp
