// The int8 "rowb" micro-kernel: a small-M GEMM tile whose B is the caller's
// row-major K x N matrix (transb = 'N', N contiguous), read in place, never
// packed.  The sibling of lp_dot.h, whose B is stored N x K.
//
//   acc(i, j) = sum_{k < K} u8(A(i, k)) * s8(B(k, j))       i < m, j < n
//   A(i, k)   = a[i * a_rs + k]          (bytes, unsigned)
//   B(k, j)   = b[k * b_rs + j]          (bytes, signed)
//   acc(i, j) = acc[i * acc_ld + j]      (int32)
//
// in int32 arithmetic that wraps modulo 2^32 (exact, never saturating).
// acc(i, j) is overwritten (there is no accumulate mode); nothing else of
// acc is written.  Any K >= 1.
//
// What is read: B(k, j) for k < K, j < n only (no row >= K, no column >= n,
// whatever the alignment of b and b_rs); A rows < m, each up to K rounded
// up to a multiple of 4 bytes: A(i, 0 .. roundup(K, 4) - 1).  The bytes of
// A past K are multiplied by zero (B's missing rows), so their values do
// not matter, but they must be readable (the driver's packed A pads its
// rows to a multiple of 4 bytes, and a_rs to a multiple of 64).  JIT
// kernels prefetch B rows past K; a prefetch never faults and reads nothing
// architecturally.
//
// Each step takes a group of 4 B rows (k .. k+3): the bytes of the 4 rows
// are interleaved so that every dword holds B(k .. k+3, j) of one column,
// and vpdpbusd multiplies it with the broadcast dword A(i, k .. k+3).  No
// reduction at the end (unlike lp_dot): accumulator lanes are columns.
#pragma once
#include <cstdint>
#include <memory>

#include "anvil/anvil.h"

namespace anvil::lowp {

struct lp_rowb_args {
    const uint8_t *a;  // A(0, 0)
    const uint8_t *b;  // B(0, 0)
    int32_t *acc;      // acc(0, 0)
    int64_t a_rs;      // bytes between rows of A
    int64_t b_rs;      // bytes between rows of B (any value >= n)
    int64_t acc_ld;    // int32 elements between rows of acc
    int64_t k;         // rows of B / columns of A, >= 1
    int64_t m;         // rows of A / acc (lp_rowb_scalar; a JIT kernel is
    int64_t n;         // columns of B / acc  specialised on both)
};

using lp_rowb_fn = void (*)(const lp_rowb_args *);

// Tile limits.  A JIT kernel covers n columns in 64-column blocks (one zmm
// of bytes per B row); each block takes 4 accumulators per row of A (16
// columns each).  In the 32 zmm registers: m * 4 * blocks accumulators,
// 5 for the B rows and their interleaving, m A broadcasts.
constexpr int kRowbMaxM = 4;
constexpr int kRowbBlockCols = 64;
constexpr int rowb_max_blocks(int m) {
    // Registers allow 6, 3, 2, 1 blocks; 3 at most keeps n in a byte of the
    // descriptor (more blocks for m = 1 would only share the one A
    // broadcast further: the interleaving per block is the cost).
    return m < 1 || m > kRowbMaxM ? 0 : ((32 - 5 - m) / (4 * m) < 3 ? (32 - 5 - m) / (4 * m) : 3);
}
constexpr int rowb_max_n(int m) { return kRowbBlockCols * rowb_max_blocks(m); }  // 192, 192, 128, 64

// What a rowb kernel is specialised on.  POD, hashed bytewise by the kernel
// cache, so every byte is set (make_lp_rowb_desc zeroes the reserved ones).
struct lp_rowb_desc {
    uint8_t tier;  // anvil_isa_t; the kernels need avx512_core_vnni (any
                   // tier that includes it is accepted)
    uint8_t m;     // 1..kRowbMaxM
    uint8_t n;     // 1..rowb_max_n(m)
    uint8_t reserved[5];
};
static_assert(sizeof(lp_rowb_desc) == 8, "lp_rowb_desc must stay 8 packed bytes");

inline lp_rowb_desc make_lp_rowb_desc(uint8_t tier, int m, int n) {
    lp_rowb_desc d{};
    d.tier = tier;
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    return d;
}

inline bool lp_rowb_shape_ok(const lp_rowb_desc &d) {
    return d.m >= 1 && d.m <= kRowbMaxM && d.n >= 1 && d.n <= rowb_max_n(d.m);
}

// The contract, one element at a time (any m, n >= 0 from args).
void lp_rowb_scalar(const lp_rowb_args *args);

// The JIT kernel for d (generated on first use, then cached; *keep_alive
// holds the code mapped while the caller uses *fn).  The reserved bytes
// are ignored (the cache key is built from tier, m and n).  Returns
//   anvil_invalid_argument  fn or keep_alive null, m or n out of range
//   anvil_unsupported       d.tier below avx512_core_vnni, the CPU lacks
//                           AVX-512 core + VNNI (detected features: the ISA
//                           cap is the caller's business), or no JIT build
//   anvil_jit_error / anvil_out_of_memory  generation failed
anvil_status_t get_lp_rowb_kernel(const lp_rowb_desc &d, lp_rowb_fn *fn,
                                  std::shared_ptr<const void> *keep_alive);

}  // namespace anvil::lowp
