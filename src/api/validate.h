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

}  // namespace anvil::api
