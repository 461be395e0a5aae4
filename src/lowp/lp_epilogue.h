// What happens to a finished accumulator block of a low-precision GEMM:
// zero-point compensation, scaling, offsets, post-ops and the one store to
// C.  The kernels never touch C; the driver hands each finished block
// (int32 or fp32 accumulators in a per-thread buffer) to an lp_epilogue.
#pragma once
#include <cstdint>

namespace anvil::lowp {

struct lp_ukernel_args;

struct lp_block {
    const void *acc;        // float (bf16 GEMMs) or int32_t (int8) accumulators
    int64_t acc_ld;         // elements between rows of acc
    int64_t i0, j0;         // where the block sits in C
    int64_t m, n;           // its size
    const int32_t *rowsum;  // sum_k A(i0 + r, k) at rowsum[r] (int8; null when not needed)
    const int32_t *colsum;  // sum_k B(k, j0 + c) at colsum[c] (int8; null when not needed)
};

class lp_epilogue {
public:
    virtual ~lp_epilogue() = default;
    virtual void apply(const lp_block &blk) const = 0;
    // A hint: rows [r0, r1) of the block at (i0, j0), n columns wide, will
    // be finished soon; start fetching the operands apply() reads from
    // memory there (residual tensors) into L2.  The driver spreads these
    // calls over the last K block's kernel calls, so that the operands
    // stream in while the kernels compute instead of stalling the
    // epilogue.  Default: nothing to fetch.
    virtual void prefetch_rows(int64_t i0, int64_t j0, int64_t n, int64_t r0, int64_t r1) const {
        (void)i0, (void)j0, (void)n, (void)r0, (void)r1;
    }
    // Fusing: kernels that finish C themselves (lp_ukernel.h's fused
    // epilogue, bit for bit apply()).  The descriptor bits (epi_out,
    // epi_flags, epi_ops) this epilogue's kernels need, or false when it
    // cannot be fused and the driver calls apply().
    virtual bool fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const {
        (void)out, (void)flags, (void)ops;
        return false;
    }
    // The fused epilogue's arguments (dst, scales, bias, residual, masks...)
    // of a kernel call whose tile starts at element (i, j) of C and is n
    // columns wide (1..32); colsum: the column sums at column j.
    virtual void fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                            lp_ukernel_args *a) const {
        (void)i, (void)j, (void)n, (void)colsum, (void)a;
    }
    // Whether apply() reads rowsum / colsum (the driver only computes them then).
    bool needs_rowsum = false;
    bool needs_colsum = false;
};

// anvil_gemm_bf16bf16f32: C = alpha * acc + beta * C with the fp32 GEMM's
// rules (t = alpha * acc, skipped when alpha == 1; beta == 0: C = t, never
// reading C; beta == 1: t + C; else fma(beta, C, t)).
class bf16_blas_epilogue final : public lp_epilogue {
public:
    bf16_blas_epilogue(float alpha, float beta, float *C, int64_t ldc)
        : alpha_(alpha), beta_(beta), c_(C), ldc_(ldc) {}
    void apply(const lp_block &blk) const override;
    // beta = 0 and beta = 1 fuse (f32 store, alpha as a common scale, C
    // itself as an f32 residual); any other beta needs fma(beta, C, t),
    // which the fused epilogue has no step for.
    bool fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const override;
    void fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                    lp_ukernel_args *a) const override;

private:
    float alpha_, beta_;
    float *c_;
    int64_t ldc_;
};

// anvil_gemm_u8s8s32 / s8s8s32: the dot product of (A - ao) and (B - bo)
// recovered from the raw u8 x s8 accumulator (A shifted by a_shift = 128
// for s8 A) with the row and column sums, then
// alpha * dot + beta * C + co, rounded to nearest-even and saturated.
class s32_blas_epilogue final : public lp_epilogue {
public:
    enum class offset_kind { fixed, per_row, per_col };
    // offsetc of the BLAS-style calls: 'F' fixed, 'C' per row (constant
    // within each column), 'R' per column, either case; false otherwise.
    static bool parse_offsetc(char offsetc, offset_kind *ok);
    s32_blas_epilogue(float alpha, float beta, int32_t *C, int64_t ldc, offset_kind ok,
                      const int32_t *co, int32_t ao, int32_t bo, int32_t a_shift, int64_t K);
    void apply(const lp_block &blk) const override;
    // The bare product (alpha 1, beta 0, no C offset, bo = 0) fuses: the
    // kernels store acc - (a_shift + ao) * colsum as int32 (EPI_S32).
    bool fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const override;
    void fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                    lp_ukernel_args *a) const override;

private:
    float alpha_, beta_;
    int32_t *c_;
    int64_t ldc_;
    offset_kind ok_;
    const int32_t *co_;
    int32_t ao_, bo_, a_shift_;
    uint32_t k_ao_bo_;  // K * ao * bo modulo 2^32
    bool integer_path_;  // alpha == 1 and beta in {0, 1}
};

}  // namespace anvil::lowp
