// Argument checks shared by the GEMM entry points.  Each returns a status
// and touches nothing.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"

namespace anvil::api {

// 'N'/'n' -> false, 'T'/'t' -> true; anything else is invalid.
bool parse_trans(char c, bool *transposed);

// rows x cols stored row-major with leading dimension ld: checks ld and
// that the highest element offset, in bytes of elem_size, fits in int64.
anvil_status_t check_matrix(int64_t rows, int64_t cols, int64_t ld, int64_t elem_size);

// a * b (or a * b * c) without overflow; false on overflow or negative input.
bool mul_ok(int64_t a, int64_t b, int64_t *out);

// Checks trans chars, sizes, leading dims and byte extents of an sgemm-like
// problem (pointers are checked by the caller, which knows which are needed).
anvil_status_t check_gemm_shape(char transa, char transb, int64_t M, int64_t N, int64_t K,
                                int64_t lda, int64_t ldb, int64_t ldc, int64_t elem_a,
                                int64_t elem_b, int64_t elem_c, bool *ta, bool *tb);

// One operand of a strided batch: item b starts stride elements after item
// b - 1; each item is rows x cols with leading dimension ld (already
// checked by check_gemm_shape).
struct batch_operand {
    int64_t stride, rows, cols, ld, elem_size;
};

// A strided batch (after check_gemm_shape passed for one item): batch >= 0;
// strides >= 0 (0 shares one matrix); the last item of every operand within
// int64 bytes; and C items that cannot overlap, laid out either one after
// another (stride_c >= (M - 1) * ldc + N) or side by side within each row
// (N <= stride_c and (batch - 1) * stride_c + N <= ldc, e.g. attention heads
// written into one [tokens, heads * d] matrix).  A bad stride is
// anvil_bad_leading_dim.
anvil_status_t check_batch(int64_t batch, const batch_operand &a, const batch_operand &b,
                           const batch_operand &c);

}  // namespace anvil::api
