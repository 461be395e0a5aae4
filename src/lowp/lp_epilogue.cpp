// The BLAS-style epilogues of the lp GEMMs (see lp_epilogue.h).
#include "lowp/lp_epilogue.h"

#include <cmath>
#include <cstdint>

namespace anvil::lowp {

void bf16_blas_epilogue::apply(const lp_block &blk) const {
    const bool alpha_one = alpha_ == 1.0f;
    for (int64_t r = 0; r < blk.m; ++r) {
        const float *acc = static_cast<const float *>(blk.acc) + r * blk.acc_ld;
        float *c = c_ + (blk.i0 + r) * ldc_ + blk.j0;
        if (beta_ == 0.0f) {
            for (int64_t j = 0; j < blk.n; ++j) c[j] = alpha_one ? acc[j] : alpha_ * acc[j];
        } else if (beta_ == 1.0f) {
            for (int64_t j = 0; j < blk.n; ++j) c[j] = (alpha_one ? acc[j] : alpha_ * acc[j]) + c[j];
        } else {
            for (int64_t j = 0; j < blk.n; ++j)
                c[j] = std::fma(beta_, c[j], alpha_one ? acc[j] : alpha_ * acc[j]);
        }
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

int32_t saturate(int64_t v) {
    return int32_t(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
}

int32_t round_saturate(double v) {
    if (!(v == v)) return 0;  // unreachable with finite alpha/beta; keeps UB out
    if (v <= double(INT32_MIN)) return INT32_MIN;
    if (v >= double(INT32_MAX)) return INT32_MAX;
    return int32_t(std::nearbyint(v));  // default rounding mode: nearest-even
}

}  // namespace

void s32_blas_epilogue::apply(const lp_block &blk) const {
    // dot = raw - (a_shift + ao) * colsum[j] - bo * rowsum[i] + K * ao * bo,
    // all modulo 2^32 as the accumulator itself.
    const uint32_t col_factor = uint32_t(a_shift_ + ao_);
    for (int64_t r = 0; r < blk.m; ++r) {
        const int64_t i = blk.i0 + r;
        const int32_t *acc = static_cast<const int32_t *>(blk.acc) + r * blk.acc_ld;
        int32_t *c = c_ + i * ldc_ + blk.j0;
        const uint32_t row_comp =
            k_ao_bo_ - (needs_rowsum ? uint32_t(bo_) * uint32_t(blk.rowsum[r]) : 0u);
        for (int64_t cc = 0; cc < blk.n; ++cc) {
            const int64_t j = blk.j0 + cc;
            uint32_t d = uint32_t(acc[cc]) + row_comp;
            if (needs_colsum) d -= col_factor * uint32_t(blk.colsum[cc]);
            const int32_t dot = int32_t(d);
            const int32_t off = ok_ == offset_kind::fixed ? co_[0]
                                : ok_ == offset_kind::per_row ? co_[i]
                                                               : co_[j];
            if (integer_path_) {
                const int64_t base = beta_ == 0.0f ? 0 : int64_t(c[cc]);
                c[cc] = saturate(base + int64_t(dot) + int64_t(off));
            } else {
                double v = double(alpha_) * double(dot) + double(off);
                if (beta_ != 0.0f) v += double(beta_) * double(c[cc]);
                c[cc] = round_saturate(v);
            }
        }
    }
}

}  // namespace anvil::lowp
