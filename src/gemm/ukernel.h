// The one micro-kernel contract shared by the JIT, Highway and scalar
// backends.  The driver cannot tell them apart: it fills ukernel_args and
// calls a ukernel_fn.  JIT kernels read the fields by offsetof and are
// specialised on (m, n, a_access, beta_kind, alpha == 1); generic kernels
// read m, n, alpha and beta from the struct.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace anvil::gemm {

// One call computes an m x n tile of C (1 <= m <= MR, 1 <= n <= NR):
//   C(i,j) = alpha * sum_{k<K} A(i,k) * B(k,j) + beta * C(i,j)
// where
//   A(i,k) = a[i * a_rs + k * a_cs]      (elements; one of a_rs/a_cs is 1)
//   B(k,j) = b[k * b_ld + j]             (a packed panel, b_ld = its width,
//                                          or the caller's B read in place);
//                                          nothing past column n-1 is read
//   C(i,j) = c[i * ldc + j]
// beta == 0 means C is never read (NaN/Inf in C do not propagate), and
// K == 0 gives C = beta * C (or 0 when beta == 0).
// Arithmetic, fixed so that every backend gives the same bits for a tile:
//   acc = 0; for k in 0..K-1: acc = fma(A(i,k), B(k,j), acc)   (increasing k,
//         one accumulator per (i,j))
//   t   = alpha * acc            (skipped when alpha == 1: same value)
//   C   = t                      if beta == 0
//   C   = t + C                  if beta == 1
//   C   = fma(beta, C, t)        otherwise
// The epilogue above for one element: C = (alpha * acc or acc) then
// combined with beta * C (the library builds with -ffp-contract=off, so
// t + C is not fused into the product).
inline void store_contract(float acc, float alpha, float beta, float *c) {
    const float t = alpha == 1.0f ? acc : alpha * acc;
    if (beta == 0.0f)
        *c = t;
    else if (beta == 1.0f)
        *c = t + *c;
    else
        *c = std::fma(beta, *c, t);
}

struct ukernel_args {
    const float *a;
    const float *b;
    float *c;
    int64_t a_rs;
    int64_t a_cs;
    int64_t ldc;
    int64_t k;
    int64_t b_ld;
    int64_t m;   // rows of this tile    (generic kernels; JIT kernels are
    int64_t n;   // columns of this tile  specialised on m and n and ignore them)
    float alpha;
    float beta;
    // Prefetch hint, no effect on results: B rows to pull into cache while
    // this tile runs (laid out like b, with stride b_ld), e.g. the next
    // panel's block when the current one is already in L1; nullptr means
    // "b, a few rows ahead".  Kernels never read it architecturally.
    const float *b_next;
    // K segments (kernels made with kUkFlagKSegments only; 0 or 1: one).
    // A call with k_segs = S reduces over S * k rows of B: segment s reads
    // A(i, k') at a + s * a_seg_rs + i * a_rs + k' (k' < k) and B rows
    // s * (k + b_seg_skip) .. s * (k + b_seg_skip) + k - 1 (B continues,
    // b_seg_skip rows further on at each new segment), all into the same
    // accumulators, in that order, before the one alpha / beta store -- the
    // batch-reduce over a convolution's kernel rows, whose A rows lie a
    // source row apart.  Bitwise the same as S calls accumulating with
    // beta = 1 (the contract's order is kept: increasing k over all rows).
    int64_t k_segs;
    int64_t a_seg_rs;  // elements between the A of consecutive segments
    // B rows skipped between segments (0: B simply continues): a
    // convolution's edge pixels read only the taps of each kernel row that
    // are not in the left / right padding (conv_gemm.cpp, edge columns).
    int64_t b_seg_skip;
    // Row tiles (kernels made with kUkFlagRowTiles only; 0 or 1: one).  A
    // call with m_tiles = T computes T tiles of m rows one after another
    // with the same B (and K segments): tile t reads A at a + t * a_tile_rs
    // and writes C rows t * m .. t * m + m - 1, as T calls with a and c
    // advanced would -- without paying the call and setup cost T times,
    // which dominates a 1x1 convolution over 16..32 channels.
    int64_t m_tiles;
    int64_t a_tile_rs;  // elements between the A of consecutive tiles
    // Fused epilogue (desc.flags kUkFlagBias, desc.epi_ops; kernels of
    // backends whose supports_k_segments() is true).  After the alpha /
    // beta step above, in this order, each as the portable post-op chain
    // (lowp::pp_scale_bias / pp_apply) computes it, bit for bit:
    //   C += bias[j]                       (kUkFlagBias)
    //   then epi_ops op 0, then op 1 (kUkEpi*):
    //   relu:   C <= 0 (-0 too) -> +0, NaN stays
    //   leaky:  C > 0 ? C : C * elt_alpha
    //   clip:   C < elt_alpha -> elt_alpha; then elt_beta < C -> elt_beta
    //   add:    C += binary[i * binary_ld + j]  (an f32 tensor of C's shape;
    //           row tiles: tile t's rows continue at row t * m)
    const float *bias;    // column 0 of the tile
    const float *binary;  // element (0, 0) of the tile
    int64_t binary_ld;    // elements between its rows
    float elt_alpha, elt_beta;
};

using ukernel_fn = void (*)(const ukernel_args *);

// How A is walked: which stride is 1.  The JIT specialises on it because
// the addressing differs (displacements vs. row pointers).
enum class a_access : uint8_t {
    k_strided = 0,  // a_rs == 1: A(.,k) is contiguous (packed A panels, transa='T')
    row_major = 1,  // a_cs == 1: A(i,.) is contiguous (transa='N', unpacked)
};

enum class beta_kind : uint8_t { zero = 0, one = 1, general = 2 };

inline beta_kind classify_beta(float beta) {
    if (beta == 0.0f) return beta_kind::zero;
    if (beta == 1.0f) return beta_kind::one;
    return beta_kind::general;
}

// What a kernel is specialised on.  POD, hashed bytewise by the cache, so
// every byte (padding included) is set by the constructor.
struct ukernel_desc {
    uint8_t tier;      // anvil_isa_t the kernel was made for
    uint8_t m;         // rows (1..MR)
    uint8_t n;         // columns (1..nr of the backend)
    uint8_t flags;     // kUkFlag* (0: a plain tile kernel)
    a_access a;
    beta_kind beta;
    uint8_t alpha_one; // 1 when alpha == 1 is known (skips the multiply)
    // The fused epilogue's ops (ukernel_args): op 0 in bits 0..2, op 1 in
    // bits 3..5 (kUkEpi*; 0: none).  Bit 7 stays 0 (the JIT front cache tags
    // its keys there).
    uint8_t epi_ops;
};
static_assert(sizeof(ukernel_desc) == 8, "ukernel_desc must stay 8 packed bytes");

// ukernel_desc.flags: the kernel honours args.k_segs / a_seg_rs (row-major
// A only; backends whose supports_k_segments() is true).
constexpr uint8_t kUkFlagKSegments = 1;
// ukernel_desc.flags: the kernel honours args.m_tiles / a_tile_rs (same
// conditions).
constexpr uint8_t kUkFlagRowTiles = 2;
// ukernel_desc.flags: add args.bias (the fused epilogue; same conditions).
constexpr uint8_t kUkFlagBias = 4;
// ukernel_desc.flags (beta = 0 only; same conditions): whole 16-column
// stores to C bypass the caches (non-temporal, with no store fence: the
// caller runs cpu::store_fence() before its thread's work counts as done)
// when C and ldc are 64-byte aligned, checked at each call; otherwise
// ordinary stores.  The same values -- for an output much
// larger than the cache, whose lines a write-allocate would first read
// from memory and which its reader would not find in the cache anyway.
constexpr uint8_t kUkFlagNtStore = 8;
// ukernel_desc.epi_ops codes.
enum : uint8_t { kUkEpiNone = 0, kUkEpiRelu = 1, kUkEpiLeaky = 2, kUkEpiClip = 3, kUkEpiAdd = 4 };
constexpr uint8_t uk_epi_op(uint8_t epi_ops, int t) { return uint8_t((epi_ops >> (3 * t)) & 7); }

// A whole small GEMM in one JIT call (the LIBXSMM-style path for tiny
// shapes): C (M x N) = alpha * A * B + beta * C with A and B read in place,
// K = args->k, strides from args (a_rs/a_cs, b_ld, ldc; m and n ignored).
// Every element follows the tile arithmetic above, so the result is
// bitwise the same as the tiled path with one K block.
struct small_gemm_desc {
    uint8_t tier;
    uint8_t M;   // 1..kSmallGemmMax
    uint8_t N;   // 1..kSmallGemmMax
    a_access a;
    beta_kind beta;
    uint8_t alpha_one;
    uint8_t reserved[2];
};
static_assert(sizeof(small_gemm_desc) == 8, "small_gemm_desc must stay 8 packed bytes");
constexpr int kSmallGemmMax = 64;

// A whole small GEMM specialised on everything but its three operands: the
// LIBXSMM-style dispatched kernel behind anvil_smm_* (C = alpha op(A) B +
// beta C, B 'N').  Same tiles and arithmetic as the small_gemm_desc kernel
// of that shape, so its result is bitwise that of anvil_sgemm.  K, the
// leading dimensions and alpha / beta are constants in the code; the call
// passes only A, B and C.  make_direct_desc sets every byte (the cache
// hashes it bytewise).
using direct_gemm_fn = void (*)(const float *A, const float *B, float *C);
struct direct_gemm_desc {
    uint8_t tier;
    uint8_t M;  // 1..kSmallGemmMax
    uint8_t N;  // 1..kSmallGemmMax
    a_access a;
    beta_kind beta;
    uint8_t alpha_one;
    uint8_t reserved[2];
    int32_t K;  // >= 1
    uint32_t alpha_bits, beta_bits;
    uint32_t reserved2;
    int64_t lda, ldb, ldc;
};
static_assert(sizeof(direct_gemm_desc) == 48, "direct_gemm_desc has no padding");
direct_gemm_desc make_direct_desc(bool transa, int64_t M, int64_t N, int64_t K, float alpha,
                                  int64_t lda, int64_t ldb, float beta, int64_t ldc);

}  // namespace anvil::gemm
