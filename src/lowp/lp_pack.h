// Packing for the low-precision GEMMs: A and B are rearranged into the
// k-group layout of the lp micro-kernel contract (lp_ukernel.h), with K
// padded with zeros to a whole group, and the row/column sums the
// zero-point compensation needs are taken on the way.
#pragma once
#include <cstdint>

#include "lowp/lp_ukernel.h"

namespace anvil::lowp {

// Element types as stored by the caller.
enum class lp_elem : uint8_t { bf16, u8, s8 };

inline int64_t k_groups(lp_kind kind, int64_t K) {
    const int gk = group_k(kind);
    return (K + gk - 1) / gk;
}

// B (op(B) is K x N; element (k, j) at B[k*ldb + j], or B[j*ldb + k] when
// transb) packed as panels of kNR columns: panel p covers columns
// p*kNR .. p*kNR+31 and holds kg groups of kNR dwords, group g at
// out + (p*kg + g) * kNR*4 bytes.  Columns >= N and k >= K are zero.
// Packs the panels [p0, p1).  When colsum is non-null, colsum[j] receives
// sum_k B(k, j) (as signed s8 values) for every column j of those panels
// (zero for j >= N; colsum must hold p1*kNR entries).
int64_t packed_b_bytes(lp_kind kind, int64_t K, int64_t N);
void pack_b(lp_kind kind, bool transb, int64_t K, int64_t N, const void *B, int64_t ldb,
            int64_t p0, int64_t p1, uint8_t *out, int32_t *colsum);

// Groups [g0, g0 + gn) of panels [p0, p1), panel p at
// out + (p - p0) * gn * kNR*4 (a K block of several panels, packed in one
// pass over B's rows).
void pack_b_block(lp_kind kind, bool transb, int64_t K, int64_t N, const void *B, int64_t ldb,
                  int64_t p0, int64_t p1, int64_t g0, int64_t gn, uint8_t *out);
// colsum[j] = sum_k B(k, j) (s8) for the columns of panels [p0, p1), zero
// past N, modulo 2^32.
void b_column_sums(bool transb, int64_t K, int64_t N, const int8_t *B, int64_t ldb, int64_t p0,
                   int64_t p1, int32_t *colsum);

// Bytes between packed rows of A: an odd number of cache lines.  A row
// tile reads 12 rows in step; with a stride that is a multiple of 4 KiB
// (K = 4096 int8) they would all share one L1 set (12 ways, which B and
// the accumulators need too) and miss on every group.  An odd number of
// 64-byte lines puts the 12 rows into 12 different sets.
inline int64_t a_row_bytes(int64_t kg) {
    int64_t lines = (kg * kGroupBytes + 63) / 64;
    if (lines % 2 == 0) ++lines;
    return lines * 64;
}

// Rows [i0, i1) of op(A) (M x K; element (i, k) at A[i*lda + k], or
// A[k*lda + i] when transa), one row of kg dwords each, row i at
// out + (i - i0) * row_bytes (row_bytes >= kg*4).  `elem` says what A holds;
// s8 A is shifted to u8 (+128, the vpdpbusd operand is unsigned).  When
// rowsum is non-null, rowsum[i - i0] = sum_k op(A)(i, k) of the values as
// given (before the shift).
void pack_a(lp_elem elem, bool transa, int64_t K, const void *A, int64_t lda, int64_t i0,
            int64_t i1, uint8_t *out, int64_t row_bytes, int32_t *rowsum);

// Bytes of a widened bf16 A row (two fp32 per k-group, lp_ukernel.h's
// a_f32): an odd number of cache lines, as a_row_bytes.
inline int64_t a_row_bytes_f32(int64_t kg) { return a_row_bytes(2 * kg); }

// Rows [i0, i1) of a bf16 op(A) widened to fp32 (exact) for kernels with
// a_f32: kg * 2 floats per row, zero past K, row i at out + (i - i0) *
// row_bytes (row_bytes >= kg * 8).
void pack_a_bf16_widened(bool transa, int64_t K, const uint16_t *A, int64_t lda, int64_t i0,
                         int64_t i1, uint8_t *out, int64_t row_bytes);

}  // namespace anvil::lowp
