#include "lowp/chain_epilogue.h"

#include <algorithm>

#include "lowp/fused_chain.h"

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
    fused_chain fc;
    if (exact_s32_ && spec.bo == 0 && spec.c_zero_point == 0.0f) {
        // The bare product in int32: the kernels' EPI_S32 store subtracts
        // (ao + a_shift) * colsum[j] with the same wrapping arithmetic as
        // apply() (bo = 0: no row term), so C is written from the registers
        // instead of through the accumulator block (a whole extra pass over
        // C: 7% of a 1024^3 int8 matmul's profile on Zen 5).
        fusable_ = true;
        fused_out_ = EPI_S32;
        fused_flags_ = needs_colsum ? EPI_COMP : 0;
        fused_ops_ = EPI_ADD_NONE;
    } else if (!exact_s32_ && fuse_chain(spec, &fc)) {
        fusable_ = true;
        fused_out_ = fc.out;
        fused_flags_ = uint8_t(fc.flags | (bias_ ? EPI_BIAS : 0));
        fused_ops_ = fc.ops;
        fused_alpha_ = fc.eltwise_op >= 0 ? spec.ops[size_t(fc.eltwise_op)].alpha : 0.0f;
        fused_beta_ = fc.eltwise_op >= 0 ? spec.ops[size_t(fc.eltwise_op)].beta : 0.0f;
        fused_binary_ = fc.binary_op;
    }
}

bool chain_epilogue::fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const {
    if (!fusable_) return false;
    *out = fused_out_;
    *flags = fused_flags_;
    *ops = fused_ops_;
    return true;
}

void chain_epilogue::fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                                lp_ukernel_args *a) const {
    a->dst = c_ + i * ldc_bytes_ + j * elem_bytes_;
    a->dst_ld = ldc_bytes_;
    a->colsum = colsum;
    a->col_factor = s_.ao + s_.a_shift;
    a->scales = s_.scales.empty() ? nullptr : s_.scales.data() + (s_.scales_per_n ? j : 0);
    a->bias = bias_ ? bias_ + j : nullptr;
    a->zero_point = s_.c_zero_point;
    a->alpha = fused_alpha_;
    a->beta = fused_beta_;
    a->sum_scale = 1.0f;
    a->sum_zero_point = 0.0f;
    if (fused_binary_ >= 0) {
        const post_op &o = s_.ops[size_t(fused_binary_)];
        // A sum's operand is C itself (srcs_), in the output's type.
        const int64_t eb = o.is_sum() ? elem_bytes_ : o.src_bf16 ? 2 : 4;
        // A per-N vector: the same row for every row (stride 0).
        const int64_t ld = o.per_n ? 0 : o.ld;
        a->binary = static_cast<const uint8_t *>(srcs_[fused_binary_]) + (i * ld + j) * eb;
        a->binary_ld = ld * eb;
        if (o.is_sum()) {
            a->sum_scale = o.alpha;
            a->sum_zero_point = o.beta;
        }
    } else {
        a->binary = nullptr;
        a->binary_ld = 0;
    }
    a->store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    a->store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
}

void chain_epilogue::prefetch_rows(int64_t i0, int64_t j0, int64_t n, int64_t r0,
                                   int64_t r1) const {
    for (size_t t = 0; t < s_.ops.size(); ++t) {
        const post_op &o = s_.ops[t];
        if (!o.is_binary || o.per_n) continue;  // a per-N vector stays in cache
        const int64_t eb = o.is_sum() ? elem_bytes_ : o.src_bf16 ? 2 : 4;  // a sum's operand is C
        const auto *base = static_cast<const uint8_t *>(srcs_[t]);
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *p = base + ((i0 + r) * o.ld + j0) * eb;
            // Into L2 (locality 2: prefetcht1 on x86): the epilogue reads it
            // after the rest of this block's kernel calls.
            for (int64_t off = 0; off < n * eb; off += 64) __builtin_prefetch(p + off, 0, 2);
        }
    }
}

void chain_epilogue::apply(const lp_block &blk) const {
    const uint32_t k_ao_bo = uint32_t(uint64_t(s_.K)) * uint32_t(s_.ao) * uint32_t(s_.bo);
    const uint32_t col_factor = uint32_t(s_.ao + s_.a_shift);
    if (exact_s32_) {
        // s32 output of a bare product: stored exactly (through fp32 it
        // would lose bits above 2^24).
        const int64_t zp = int64_t(s_.c_zero_point);
        for (int64_t r = 0; r < blk.m; ++r) {
            const uint32_t row_comp =
                k_ao_bo - (needs_rowsum ? uint32_t(s_.bo) * uint32_t(blk.rowsum[r]) : 0u);
            const int32_t *acc = static_cast<const int32_t *>(blk.acc) + r * blk.acc_ld;
            int32_t *dst = reinterpret_cast<int32_t *>(c_ + (blk.i0 + r) * ldc_bytes_) + blk.j0;
            const int32_t *cs = blk.colsum;
            const int64_t n = blk.n;
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
        }
        return;
    }
    // Everything else: the whole block in one call of the chain.
    pp_block b;
    b.acc = blk.acc;
    b.acc_ld = blk.acc_ld;
    b.acc_int = s_.kind == lp_kind::u8s8;
    b.m = blk.m;
    b.n = blk.n;
    b.i0 = blk.i0;
    b.j0 = blk.j0;
    if (b.acc_int) {
        b.colsum = needs_colsum ? blk.colsum : nullptr;
        b.col_factor = col_factor;
        b.rowsum = needs_rowsum ? blk.rowsum : nullptr;
        b.row_factor = uint32_t(s_.bo);
        b.k_term = k_ao_bo;
    }
    b.scales = s_.scales.empty() ? nullptr : s_.scales.data() + (s_.scales_per_n ? blk.j0 : 0);
    b.scales_per_n = s_.scales_per_n;
    b.bias = bias_ ? bias_ + blk.j0 : nullptr;
    b.ops = s_.ops.data();
    b.nops = int(s_.ops.size());
    b.srcs = srcs_;
    b.zero_point = s_.c_zero_point;
    b.out = s_.out;
    b.dst = c_ + blk.i0 * ldc_bytes_ + blk.j0 * elem_bytes_;
    b.ldc_bytes = ldc_bytes_;
    pp_block_apply(b);
}

}  // namespace anvil::lowp
