// The int8 "dot" micro-kernel: a small-M GEMM tile whose B is stored
// transposed (N x K, K contiguous: the layout of linear-layer weights), so
// B is read in place, never packed.  Each result is a dot product of an A
// row and a B row:
//
//   acc(i, j) = sum_{k < K} u8(A(i, k)) * s8(B(j, k))      i < m, j < n
//   A(i, k)   = a[i * a_rs + k]          (bytes, unsigned)
//   B(j, k)   = b[j * b_rs + k]          (bytes, signed)
//   acc(i, j) = acc[i * acc_ld + j]      (int32)
//
// in int32 arithmetic that wraps modulo 2^32 (exact, never saturating).
// acc(i, j) is overwritten (there is no accumulate mode); nothing else of
// acc is written.  Any K >= 1: no byte past A(i, K-1) or B(j, K-1) is read,
// nor any byte of A rows >= m or B rows >= n.  (JIT kernels may prefetch
// past the end of B rows; a prefetch never faults and reads nothing
// architecturally.)
//
// Implementations: the JIT's (jit/jit_lp_dot_avx512, get_lp_dot_kernel
// below) and Highway's for every other CPU (fallback/hwy_lp_dot.h, reached
// through lp_backend::dot_kernel).
//
// bf16 dot kernels (Highway only: fallback/hwy_lp_dot.h) take the same
// arguments with B holding bf16 (2-byte elements), A holding its bf16
// values widened to float (4-byte elements: the caller widens its few rows
// once, not every tile), acc holding float; a_rs and b_rs in bytes, k
// counts elements.  They add the
// products in the packed kernels' order (lp_ukernel.h), pair by pair:
//
//   acc(i, j) = 0;  for g = 0 .. ceil(K / 2) - 1:
//     acc(i, j) = acc(i, j) + A(i, 2g+1) * B(j, 2g+1)
//     acc(i, j) = acc(i, j) + A(i, 2g) * B(j, 2g)
//
// each product and each sum rounded to fp32 (the products of two bf16 are
// exact unless they overflow or leave the normal range), with A(i, K) =
// B(j, K) = 0 for odd K (added like the packed path's zero padding, never
// read).  So the results equal the packed path's bit for bit and the bf16
// GEMM stays bitwise identical under every ISA cap.  As for int8: no
// element past A(i, K-1) or B(j, K-1) is read.
//
// Compared with lp_ukernel.h (a packed B panel, one k-group at a time),
// each accumulator here is a vector of 16 partial dot products that is
// reduced to one value at the end, so the kernel pays off when K is large
// next to m * n (small-M GEMMs: inference with few tokens).
#pragma once
#include <cstdint>
#include <memory>

#include "anvil/anvil.h"

namespace anvil::lowp {

struct lp_dot_args {
    const uint8_t *a;  // A(0, 0)
    const uint8_t *b;  // B(0, 0)
    int32_t *acc;      // acc(0, 0)
    int64_t a_rs;      // bytes between rows of A
    int64_t b_rs;      // bytes between rows of B
    int64_t acc_ld;    // int32 elements between rows of acc
    int64_t k;         // bytes per dot product, >= 1
    int64_t m;         // rows of A / acc (read by lp_dot_scalar; a JIT
                       // kernel is specialised on it)
    int64_t n;         // rows of B / columns of acc: read by lp_dot_scalar
                       // and by the Highway kernels (one instance serves
                       // several n: it computes half or all of its widest
                       // block and stores n columns), so it must be the n
                       // the kernel was asked for; a JIT kernel is
                       // specialised on it.
};

using lp_dot_fn = void (*)(const lp_dot_args *);

// Tile limits: a JIT kernel keeps m * n zmm accumulators, the m A vectors
// of the current K step and two B vectors in the 32 zmm registers.
constexpr int kDotMaxM = 4;
constexpr int dot_max_n(int m) {
    return m < 1 || m > kDotMaxM ? 0 : (24 / m < 8 ? 24 / m : 8);  // 8, 8, 8, 6
}

// What a dot kernel is specialised on.  POD, hashed bytewise by the kernel
// cache, so every byte is set (make_lp_dot_desc zeroes the reserved ones).
struct lp_dot_desc {
    uint8_t tier;  // anvil_isa_t; the kernels need avx512_core_vnni (any
                   // tier that includes it is accepted)
    uint8_t m;     // 1..kDotMaxM
    uint8_t n;     // 1..dot_max_n(m)
    uint8_t reserved[5];
};
static_assert(sizeof(lp_dot_desc) == 8, "lp_dot_desc must stay 8 packed bytes");

inline lp_dot_desc make_lp_dot_desc(uint8_t tier, int m, int n) {
    lp_dot_desc d{};
    d.tier = tier;
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    return d;
}

inline bool lp_dot_shape_ok(const lp_dot_desc &d) {
    return d.m >= 1 && d.m <= kDotMaxM && d.n >= 1 && d.n <= dot_max_n(d.m);
}

// The contract, one element at a time (any m, n >= 0 from args).
void lp_dot_scalar(const lp_dot_args *args);

// The JIT kernel for d (generated on first use, then cached; *keep_alive
// holds the code mapped while the caller uses *fn).  The reserved bytes
// are ignored (the cache key is built from tier, m and n).  Returns
//   anvil_invalid_argument  fn or keep_alive null, m or n out of range
//   anvil_unsupported       d.tier below avx512_core_vnni, the CPU lacks
//                           AVX-512 core + VNNI (detected features: the ISA
//                           cap is the caller's business), or no JIT build
//   anvil_jit_error / anvil_out_of_memory  generation failed
anvil_status_t get_lp_dot_kernel(const lp_dot_desc &d, lp_dot_fn *fn,
                                 std::shared_ptr<const void> *keep_alive);

}  // namespace anvil::lowp
