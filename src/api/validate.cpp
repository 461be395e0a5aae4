#include "api/validate.h"

#include <algorithm>

namespace anvil::api {

bool parse_trans(char c, bool *transposed) {
    if (c == 'N' || c == 'n') {
        *transposed = false;
        return true;
    }
    if (c == 'T' || c == 't') {
        *transposed = true;
        return true;
    }
    return false;
}

bool mul_ok(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    return !__builtin_mul_overflow(a, b, out);
}

anvil_status_t check_matrix(int64_t rows, int64_t cols, int64_t ld, int64_t elem_size) {
    if (ld < std::max<int64_t>(1, cols)) return anvil_bad_leading_dim;
    if (rows == 0 || cols == 0) return anvil_success;
    // Highest element offset: (rows - 1) * ld + cols, in bytes; and the row
    // stride in bytes, which the epilogues form even for one row (found by
    // fuzzing: M = 1 with ldc = 2^62).
    int64_t off, end, bytes, stride;
    if (!mul_ok(rows - 1, ld, &off) || __builtin_add_overflow(off, cols, &end) ||
        !mul_ok(end, elem_size, &bytes) || !mul_ok(ld, elem_size, &stride))
        return anvil_size_overflow;
    return anvil_success;
}

anvil_status_t check_gemm_shape(char transa, char transb, int64_t M, int64_t N, int64_t K,
                                int64_t lda, int64_t ldb, int64_t ldc, int64_t elem_a,
                                int64_t elem_b, int64_t elem_c, bool *ta, bool *tb) {
    if (!parse_trans(transa, ta) || !parse_trans(transb, tb)) return anvil_invalid_argument;
    if (M < 0 || N < 0 || K < 0) return anvil_bad_size;
    // Stored shapes (row-major): op(A) is M x K, so A is M x K or K x M.
    anvil_status_t st;
    if ((st = check_matrix(*ta ? K : M, *ta ? M : K, lda, elem_a)) != anvil_success) return st;
    if ((st = check_matrix(*tb ? N : K, *tb ? K : N, ldb, elem_b)) != anvil_success) return st;
    if ((st = check_matrix(M, N, ldc, elem_c)) != anvil_success) return st;
    // Work and packed sizes (M*N*K is counted in flops by tools).
    int64_t mn, nk, mk;
    if (!mul_ok(M, N, &mn) || !mul_ok(N, K, &nk) || !mul_ok(M, K, &mk)) return anvil_size_overflow;
    // Packed B of a plan: (N + up to 64 columns of panel padding) x K floats.
    int64_t pad, tmp;
    if (!mul_ok(64, K, &pad) || __builtin_add_overflow(nk, pad, &tmp) || !mul_ok(tmp, 4, &tmp))
        return anvil_size_overflow;
    return anvil_success;
}

namespace {

// Elements from an item's first to one past its last (0 when empty).
int64_t item_extent(const batch_operand &o) {
    return o.rows == 0 || o.cols == 0 ? 0 : (o.rows - 1) * o.ld + o.cols;
}

anvil_status_t check_batch_operand(int64_t batch, const batch_operand &o) {
    if (o.stride < 0) return anvil_bad_leading_dim;
    int64_t off, end, bytes;
    if (!mul_ok(batch - 1, o.stride, &off) || __builtin_add_overflow(off, item_extent(o), &end) ||
        !mul_ok(end, o.elem_size, &bytes))
        return anvil_size_overflow;
    return anvil_success;
}

}  // namespace

anvil_status_t check_batch(int64_t batch, const batch_operand &a, const batch_operand &b,
                           const batch_operand &c) {
    if (batch < 0) return anvil_bad_size;
    if (batch <= 1) return a.stride < 0 || b.stride < 0 || c.stride < 0 ? anvil_bad_leading_dim
                                                                        : anvil_success;
    for (const batch_operand *o : {&a, &b, &c})
        if (const anvil_status_t st = check_batch_operand(batch, *o); st != anvil_success)
            return st;
    const int64_t extent = item_extent(c);
    if (extent == 0) return anvil_success;
    const bool one_after_another = c.stride >= extent;
    // (batch - 1) * stride_c fits: check_batch_operand formed it.
    const bool side_by_side = c.stride >= c.cols && (batch - 1) * c.stride + c.cols <= c.ld;
    return one_after_another || side_by_side ? anvil_success : anvil_bad_leading_dim;
}

}  // namespace anvil::api
