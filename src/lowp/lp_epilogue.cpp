// The BLAS-style epilogues of the lp GEMMs (see lp_epilogue.h).
#include "lowp/lp_epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lowp/lp_ukernel.h"

namespace anvil::lowp {

void bf16_blas_epilogue::apply(const lp_block &blk) const {
    // One simple loop per case (the library is built at -O2, which does
    // not unswitch loops: a test inside would keep them scalar).
    const float a = alpha_, bt = beta_;
    for (int64_t r = 0; r < blk.m; ++r) {
        const float *acc = static_cast<const float *>(blk.acc) + r * blk.acc_ld;
        float *c = c_ + (blk.i0 + r) * ldc_ + blk.j0;
        const int64_t n = blk.n;
        if (bt == 0.0f) {
            if (a == 1.0f)
                std::copy(acc, acc + n, c);
            else
                for (int64_t j = 0; j < n; ++j) c[j] = a * acc[j];
        } else if (bt == 1.0f) {
            if (a == 1.0f)
                for (int64_t j = 0; j < n; ++j) c[j] = acc[j] + c[j];
            else
                for (int64_t j = 0; j < n; ++j) c[j] = a * acc[j] + c[j];
        } else {
            // fma(beta, C, t): one rounding, as the fp32 GEMM's contract.
            if (a == 1.0f)
                for (int64_t j = 0; j < n; ++j) c[j] = std::fma(bt, c[j], acc[j]);
            else
                for (int64_t j = 0; j < n; ++j) c[j] = std::fma(bt, c[j], a * acc[j]);
        }
    }
}

bool bf16_blas_epilogue::fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const {
    if (beta_ != 0.0f && beta_ != 1.0f) return false;
    *out = EPI_F32;
    // x * alpha is apply()'s t (one rounding); alpha = 1 skips it, as there.
    *flags = alpha_ == 1.0f ? 0 : EPI_SCALE_1;
    // beta = 1: t + C, C read as the residual of the very elements the
    // kernel then stores (each is read before it is written).
    *ops = beta_ == 1.0f ? EPI_ADD_F32 : EPI_ADD_NONE;
    return true;
}

void bf16_blas_epilogue::fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                                    lp_ukernel_args *a) const {
    (void)colsum;
    float *c = c_ + i * ldc_ + j;
    a->dst = reinterpret_cast<uint8_t *>(c);
    a->dst_ld = ldc_ * int64_t(sizeof(float));
    a->colsum = nullptr;
    a->col_factor = 0;
    a->scales = &alpha_;
    a->bias = nullptr;
    a->zero_point = 0.0f;
    a->alpha = 0.0f;
    a->binary = beta_ == 1.0f ? reinterpret_cast<const uint8_t *>(c) : nullptr;
    a->binary_ld = beta_ == 1.0f ? a->dst_ld : 0;
    a->store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    a->store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
}

bool s32_blas_epilogue::parse_offsetc(char offsetc, offset_kind *ok) {
    switch (offsetc) {
        case 'F': case 'f': *ok = offset_kind::fixed; return true;
        case 'C': case 'c': *ok = offset_kind::per_row; return true;
        case 'R': case 'r': *ok = offset_kind::per_col; return true;
        default: return false;
    }
}

s32_blas_epilogue::s32_blas_epilogue(float alpha, float beta, int32_t *C, int64_t ldc,
                                     offset_kind ok, const int32_t *co, int32_t ao, int32_t bo,
                                     int32_t a_shift, int64_t K)
    : alpha_(alpha), beta_(beta), c_(C), ldc_(ldc), ok_(ok), co_(co), ao_(ao), bo_(bo),
      a_shift_(a_shift) {
    k_ao_bo_ = uint32_t(uint64_t(K)) * uint32_t(ao) * uint32_t(bo);
    integer_path_ = alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
    needs_rowsum = bo != 0;
    needs_colsum = (ao + a_shift) != 0;
}

namespace {

// d[t] = acc[t] + row_comp - col_factor * colsum[t] (colsum may be null),
// modulo 2^32.  Restrict-qualified so the loops vectorise (d never aliases
// the accumulators or the sums).
void compensate(const int32_t *__restrict acc, const int32_t *__restrict colsum,
                uint32_t row_comp, uint32_t col_factor, int64_t n, int32_t *__restrict d) {
    if (colsum)
        for (int64_t t = 0; t < n; ++t)
            d[t] = int32_t(uint32_t(acc[t]) + row_comp - col_factor * uint32_t(colsum[t]));
    else
        for (int64_t t = 0; t < n; ++t) d[t] = int32_t(uint32_t(acc[t]) + row_comp);
}

int32_t round_saturate(double v) {
    if (!(v == v)) return 0;  // unreachable with finite alpha/beta; keeps UB out
    if (v <= double(INT32_MIN)) return INT32_MIN;
    if (v >= double(INT32_MAX)) return INT32_MAX;
    return int32_t(std::nearbyint(v));  // default rounding mode: nearest-even
}

}  // namespace

bool s32_blas_epilogue::fused_bits(uint8_t *out, uint8_t *flags, uint8_t *ops) const {
    // apply() then writes compensate()'s wrapping int32 straight to C; with
    // bo = 0 its row term K * ao * bo - bo * rowsum is zero.
    const bool bare = integer_path_ && beta_ == 0.0f && ok_ == offset_kind::fixed &&
                      co_[0] == 0 && bo_ == 0;
    if (!bare) return false;
    *out = EPI_S32;
    *flags = needs_colsum ? EPI_COMP : 0;
    *ops = EPI_ADD_NONE;
    return true;
}

void s32_blas_epilogue::fused_args(int64_t i, int64_t j, int64_t n, const int32_t *colsum,
                                   lp_ukernel_args *a) const {
    int32_t *c = c_ + i * ldc_ + j;
    a->dst = reinterpret_cast<uint8_t *>(c);
    a->dst_ld = ldc_ * int64_t(sizeof(int32_t));
    a->colsum = colsum;
    a->col_factor = a_shift_ + ao_;
    a->scales = nullptr;
    a->bias = nullptr;
    a->zero_point = 0.0f;
    a->alpha = 0.0f;
    a->binary = nullptr;
    a->binary_ld = 0;
    a->store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    a->store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
}

void s32_blas_epilogue::apply(const lp_block &blk) const {
    // dot = raw - (a_shift + ao) * colsum[j] - bo * rowsum[i] + K * ao * bo,
    // all modulo 2^32 as the accumulator itself.  Each step is its own
    // branch-free loop over the row so the compiler vectorises it.
    constexpr int64_t kSeg = 256;
    int32_t dot[kSeg], off[kSeg];
    const uint32_t col_factor = uint32_t(a_shift_ + ao_);
    const bool no_offset = ok_ == offset_kind::fixed && co_[0] == 0;
    for (int64_t r = 0; r < blk.m; ++r) {
        const int64_t i = blk.i0 + r;
        const int32_t *acc_row = static_cast<const int32_t *>(blk.acc) + r * blk.acc_ld;
        int32_t *c_row = c_ + i * ldc_ + blk.j0;
        const uint32_t row_comp =
            k_ao_bo_ - (needs_rowsum ? uint32_t(bo_) * uint32_t(blk.rowsum[r]) : 0u);
        for (int64_t c0 = 0; c0 < blk.n; c0 += kSeg) {
            const int64_t n = std::min(kSeg, blk.n - c0);
            const int32_t *acc = acc_row + c0;
            int32_t *c = c_row + c0;
            // The bare product (alpha 1, beta 0, no offset): the int32 dot
            // product is the result, written straight to C.
            int32_t *d = (integer_path_ && beta_ == 0.0f && no_offset) ? c : dot;
            compensate(acc, needs_colsum ? blk.colsum + c0 : nullptr, row_comp, col_factor, n, d);
            if (d == c) continue;
            if (ok_ == offset_kind::per_col)
                std::copy(co_ + blk.j0 + c0, co_ + blk.j0 + c0 + n, off);
            else
                std::fill(off, off + n, ok_ == offset_kind::fixed ? co_[0] : co_[i]);
            if (integer_path_) {
                // Exact: a sum of up to three int32 is an integer well inside
                // double's 53 bits; then saturated.  (double, not int64: the
                // library is built for baseline x86-64, where SSE2 has
                // vector double min/max but no 64-bit integer ones.)
                for (int64_t t = 0; t < n; ++t) {
                    double v = double(dot[t]) + double(off[t]);
                    if (beta_ != 0.0f) v += double(c[t]);
                    v = v < -2147483648.0 ? -2147483648.0 : v;
                    v = v > 2147483647.0 ? 2147483647.0 : v;
                    c[t] = int32_t(v);
                }
            } else {
                for (int64_t t = 0; t < n; ++t) {
                    double v = double(alpha_) * double(dot[t]) + double(off[t]);
                    if (beta_ != 0.0f) v += double(beta_) * double(c[t]);
                    c[t] = round_saturate(v);
                }
            }
        }
    }
}

}  // namespace anvil::lowp
