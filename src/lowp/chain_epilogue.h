// The matmul's epilogue: int8 zero-point compensation (or the bf16 fp32
// accumulator as is), then the post-op chain of postops.h, row segment by
// row segment, ending in the single store to C.
#pragma once
#include <cstdint>
#include <vector>

#include "lowp/lp_epilogue.h"
#include "lowp/lp_ukernel.h"
#include "lowp/postops.h"

namespace anvil::lowp {

// Everything about the chain that is fixed at matmul creation.
struct chain_spec {
    lp_kind kind = lp_kind::bf16;
    out_type out = out_type::f32;
    int32_t ao = 0, bo = 0;  // zero points of A and B (int8)
    int32_t a_shift = 0;     // 128 when s8 A was shifted to u8 for vpdpbusd
    int64_t K = 0;
    std::vector<float> scales;  // empty: 1
    bool scales_per_n = false;
    std::vector<float> bias;    // empty: none
    std::vector<post_op> ops;
    float c_zero_point = 0;
};

// Whether the chain has a sum op (it reads C before the store: C must not
// be written earlier, e.g. by a GEMM accumulating into it).
inline bool has_sum(const chain_spec &spec) {
    for (const post_op &o : spec.ops)
        if (o.is_sum()) return true;
    return false;
}

class chain_epilogue final : public lp_epilogue {
public:
    // srcs[t] is the operand of ops[t] (nullptr for eltwise ops).  bias,
    // when non-null, replaces spec.bias (an operand given per call).
    chain_epilogue(const chain_spec &spec, void *C, int64_t ldc, const void *const *srcs,
                   const float *bias = nullptr);
    void apply(const lp_block &blk) const override;
    void prefetch_rows(int64_t i0, int64_t j0, int64_t n, int64_t r0, int64_t r1) const override;
    bool fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const override;
    void fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                    lp_ukernel_args *a) const override;

private:
    const chain_spec &s_;
    uint8_t *c_;
    int64_t ldc_bytes_;
    int elem_bytes_;
    const void *const *srcs_;
    const float *bias_;       // nullptr: none
    bool exact_s32_ = false;  // int8 -> s32 with no scale, bias or post-op
    bool fusable_ = false;    // fuse_chain() holds for the spec
    uint8_t fused_out_ = 0, fused_flags_ = 0, fused_ops_ = 0;
    float fused_alpha_ = 0;        // the eltwise op's alpha (leaky_relu, clip)
    float fused_beta_ = 0;         // and beta (clip)
    int fused_binary_ = -1;        // the residual add's index in spec.ops
};

int out_type_bytes(out_type t);

}  // namespace anvil::lowp
