// The "rowb" micro-kernels: a small-M GEMM tile whose B is the caller's
// row-major K x N matrix (transb = 'N', N contiguous), read in place, never
// packed.  The sibling of lp_dot.h, whose B is stored N x K.  int8 below;
// bf16 (desc.bf16, AVX512-BF16) at the end of this comment.
//
//   acc(i, j) = sum_{k < K} u8(A(i, k)) * s8(B(k, j))       i < m, j < n
//   A(i, k)   = a[i * a_rs + k]          (bytes, unsigned)
//   B(k, j)   = b[k * b_rs + j]          (bytes, signed)
//   acc(i, j) = acc[i * acc_ld + j]      (int32)
//
// in int32 arithmetic that wraps modulo 2^32 (exact, never saturating).
// acc(i, j) is overwritten, or with desc.add (int8 only) the tile is added
// to it (acc(i, j) += ..., modulo 2^32: a K-blocked walk sums its blocks
// exactly); nothing else of acc is written.  Any K >= 1.
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
//
// bf16 kernels: A and B hold bf16 (2 bytes; a_rs, b_rs in bytes), acc is
// float, and a group is 2 B rows: for g = 0 .. ceil(K / 2) - 1
//   acc = acc + A(i, 2g+1) * B(2g+1, j);  acc = acc + A(i, 2g) * B(2g, j)
// each addition rounded to fp32 (vdpbf16ps' order, as lp_ukernel.h), with
// B(K, j) = 0 for odd K (row K is never read; A(i, K) is, and must be
// finite: the driver's packed A is zero there).  That is the packed
// kernels' arithmetic in the same order, so the results are theirs bit for
// bit (denormals aside: vdpbf16ps flushes them).
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
constexpr int kRowbBlockCols = 64;      // int8: 64 one-byte columns per block
constexpr int kRowbBlockColsBf16 = 32;  // bf16: 32 two-byte columns (the same 64 bytes)
constexpr int rowb_max_blocks(int m) {
    // Registers allow 6, 3, 2, 1 blocks; 3 at most keeps n in a byte of the
    // descriptor (more blocks for m = 1 would only share the one A
    // broadcast further: the interleaving per block is the cost).
    return m < 1 || m > kRowbMaxM ? 0 : ((32 - 5 - m) / (4 * m) < 3 ? (32 - 5 - m) / (4 * m) : 3);
}
constexpr int rowb_max_n(int m) { return kRowbBlockCols * rowb_max_blocks(m); }  // 192, 192, 128, 64
// bf16 takes up to 12 rows: 2 accumulators per row and block, 4 registers
// for B, m for A (4, rotating, above 4 rows); 6 blocks at most (n in a
// byte): 6, 6, 4, 3 blocks for m = 1..4, one block (32 columns) for m =
// 5..12 (the in-place path's M = 5..12 in one chunk).
constexpr int kRowbMaxMBf16 = 12;
constexpr int rowb_max_blocks_bf16(int m) {
    return m < 1 || m > kRowbMaxMBf16 ? 0
           : m > kRowbMaxM            ? 1
                                      : ((32 - 4 - m) / (2 * m) < 6 ? (32 - 4 - m) / (2 * m) : 6);
}
constexpr int rowb_max_n_bf16(int m) { return kRowbBlockColsBf16 * rowb_max_blocks_bf16(m); }  // 192, 192, 128, 96, 32 ...
constexpr int rowb_max_n(int m, bool bf16) { return bf16 ? rowb_max_n_bf16(m) : rowb_max_n(m); }

// What a rowb kernel is specialised on.  POD, hashed bytewise by the kernel
// cache, so every byte is set (make_lp_rowb_desc zeroes the reserved ones).
struct lp_rowb_desc {
    uint8_t tier;  // anvil_isa_t; the kernels need avx512_core_vnni (int8)
                   // or avx512_core_bf16 (bf16); any tier that includes it
    uint8_t m;     // 1..kRowbMaxM (bf16: 1..kRowbMaxMBf16)
    uint8_t n;     // 1..rowb_max_n(m, bf16)
    uint8_t bf16;  // 0: u8 x s8 -> int32; 1: bf16 x bf16 -> fp32
    uint8_t add;   // int8 only: 1 adds the tile to acc (acc += ...), 0
                   // overwrites it (the K-blocked walk of lp_inplace.cpp)
    uint8_t reserved[3];
};
static_assert(sizeof(lp_rowb_desc) == 8, "lp_rowb_desc must stay 8 packed bytes");

inline lp_rowb_desc make_lp_rowb_desc(uint8_t tier, int m, int n, bool bf16 = false, bool add = false) {
    lp_rowb_desc d{};
    d.tier = tier;
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    d.bf16 = bf16 ? 1 : 0;
    d.add = add ? 1 : 0;
    return d;
}

inline bool lp_rowb_shape_ok(const lp_rowb_desc &d) {
    return d.bf16 <= 1 && d.add <= 1 && !(d.add && d.bf16) && d.m >= 1 && d.m <= (d.bf16 ? kRowbMaxMBf16 : kRowbMaxM) && d.n >= 1 &&
           d.n <= rowb_max_n(d.m, d.bf16 != 0);
}

// The contract, one element at a time (any m, n >= 0 from args): int8, and
// bf16 (args.acc then points at floats).
void lp_rowb_scalar(const lp_rowb_args *args);
void lp_rowb_scalar_bf16(const lp_rowb_args *args);

// The JIT kernel for d (generated on first use, then cached; *keep_alive
// holds the code mapped while the caller uses *fn).  The reserved bytes
// are ignored (the cache key is built from tier, m, n, bf16 and add).  Returns
//   anvil_invalid_argument  fn or keep_alive null, m or n out of range
//   anvil_unsupported       d.tier below avx512_core_vnni (bf16:
//                           avx512_core_bf16), the CPU lacks AVX-512 core +
//                           VNNI (bf16: + AVX512-BF16; detected features:
//                           the ISA cap is the caller's business), or no
//                           JIT build
//   anvil_jit_error / anvil_out_of_memory  generation failed
anvil_status_t get_lp_rowb_kernel(const lp_rowb_desc &d, lp_rowb_fn *fn,
                                  std::shared_ptr<const void> *keep_alive);

}  // namespace anvil::lowp
