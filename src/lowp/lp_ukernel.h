// The micro-kernel contract for the low-precision GEMMs (bf16 and int8),
// shared by the JIT (AVX512-BF16, AVX512-VNNI, AVX-VNNI), Highway and scalar
// backends.  A kernel only accumulates dot products into a small fp32/int32
// tile; zero points, scales, bias, activations and the conversion to the
// output type are applied afterwards to that tile by the post-op chain
// (lowp/postops.h), so every backend shares one epilogue.
//
// K is consumed in groups of one dword: 2 bf16 or 4 int8 values, in k order
// (element 0 of a group is the lowest k).  That is the operand shape of
// vdpbf16ps and vpdpbusd, so JIT kernels broadcast one dword of A and
// multiply it with a vector of B dwords.
#pragma once
#include <cstddef>
#include <cstdint>

namespace anvil::lowp {

// What a k-group holds and how it is multiplied.
enum class lp_kind : uint8_t {
    bf16 = 0,  // A, B: 2 x bf16 each; acc fp32
    u8s8 = 1,  // A: 4 x u8, B: 4 x s8; acc int32
};

constexpr int kGroupBytes = 4;                 // one dword per k-group
constexpr int group_k(lp_kind k) { return k == lp_kind::bf16 ? 2 : 4; }
constexpr int kMR = 12;                        // rows of the largest tile (vector kernels)
constexpr int kMaxKernelRows = 32;             // ... of any backend's (AMX: 2 x 16-row tiles)
constexpr int kNR = 32;                        // packed B panel width (columns)
constexpr int kLanes = 16;                     // columns per tile vector

// One call computes the accumulator tile of rows 0..m-1 and columns
// 0..ncols-1, ncols = 16 * nv (nv = ceil(n / 16), 1 or 2):
//   A(i, g)   = the dword at a + i * a_rs + g * 4        (bytes)
//   B(g, j)   = the dword at b + g * b_ld + j * 4        (bytes; a packed
//               panel: columns past the matrix's N are zero-filled, so all
//               ncols columns may be read)
//   acc(i, j) = ((float or int32_t *) acc)[i * acc_ld + j]
// Rows >= m of A are never read and rows >= m of acc never written; all
// ncols columns of acc rows 0..m-1 are written.  kg >= 1 groups.
// accumulate == 0 starts each element from 0, == 1 from acc(i, j).
//
// Arithmetic, fixed so that the backends agree bit for bit:
//   u8s8: acc += sum_{t<4} u8(A_t) * s8(B_t) for g = 0..kg-1, in int32
//         arithmetic that wraps modulo 2^32 (exact; never saturating).
//   bf16: for g = 0..kg-1:  acc = acc + A_1 * B_1;  acc = acc + A_0 * B_0
//         each addition rounded to fp32 (RNE); the products of two bf16
//         are exact in fp32.  That is vdpbf16ps' order (element 1 first),
//         checked on hardware.  vdpbf16ps also treats denormal inputs as
//         zero and flushes denormal results; the portable kernels do not,
//         so results may differ only where denormals occur.
//   Kernels with desc.a_f32 (bf16 only) read A widened: A(i, g) is the
//   two fp32 values (element 0, then 1) at a + i * a_rs + g * 8, each the
//   bf16 value exactly (its bits shifted up by 16), and every A offset
//   above (a_tile_rs, a_seg_rs) is in those bytes.  The arithmetic is the
//   bf16 one just given: the same bits (FMAs on the widened values round
//   each step as vdpbf16ps does), denormals aside.
//   The AMX tile kernels (jit/jit_amx_lp.h) are the exception: int8 is the
//   same exact sum, but bf16 follows tdpbf16ps (per 16 k-groups, even and
//   odd products in two accumulators, then added to acc), so their bf16
//   results may differ in the last bits unless the sums are exact.
struct lp_ukernel_args {
    const uint8_t *a;
    const uint8_t *b;
    void *acc;
    int64_t a_rs;        // bytes between rows of A
    int64_t b_ld;        // bytes between k-groups of the B panel (>= ncols * 4)
    int64_t acc_ld;      // elements between rows of acc
    int64_t kg;          // k-groups, >= 1
    int64_t m;           // rows (generic kernels; JIT kernels are specialised)
    int64_t n;           // columns needed, 1..32 (generic kernels compute ncols)
    int64_t accumulate;  // 0 or 1 (must match the descriptor)
    // Prefetch hint only, never read architecturally: where the next call's
    // B starts (laid out like b), or nullptr.
    const uint8_t *b_next;
    // Fused epilogue (desc.epi_out != 0, backends with
    // supports_fused_epilogue() only).  Instead of writing acc, row i of
    // the tile is finished and stored at dst + i * dst_ld (bytes; the
    // tile's first column), only the columns whose bit is set in
    // store_mask[j] (vector j), element by element as lowp::pp_block_apply:
    //   x = float(int32(acc - col_factor * colsum[c]))   (u8s8; EPI_COMP)
    //     | acc                                           (bf16)
    //   x = x * scales[c] (EPI_SCALE_N) | x * scales[0] (EPI_SCALE_1)
    //   x = x + bias[c]  (EPI_BIAS)
    //   x = x + binary(i, c)  (EPI_ADD_F32 / EPI_ADD_BF16 in desc.epi_ops: a
    //       residual tensor, row i at binary + i * binary_ld bytes, f32 or
    //       bf16; bf16 widened exactly; binary_ld 0: a per-column vector;
    //       x * binary(i, c) with EPI_BIN_MUL) -- here, or after the
    //       eltwise op when desc.epi_ops has EPI_ADD_LATE
    //     | x + (t - sum_zero_point) * sum_scale  (EPI_ADD_SUM: the sum
    //       post-op; t = binary(i, c) read in the output's type -- binary
    //       is dst itself, read before it is stored -- f32, bf16, u8 and s8
    //       exactly; the subtraction and product always run: with 0 and 1
    //       they give t's bits, as the portable chain's skipping them)
    //   x = relu(x) (EPI_RELU) | leaky_relu(x, alpha) (EPI_LEAKY) |
    //       gelu_tanh / gelu_erf / silu / sigmoid / tanh / clip(x, alpha,
    //       beta) (EPI_ELT_* in desc.epi_ops), as the chain's eltwise ops,
    //       bit for bit (x <= 0 -> +0; x > 0 ? x : alpha * x; clip: x <
    //       alpha -> alpha, then beta < x -> beta; docs/postops.md)
    //   x = x + zero_point (EPI_ZP)
    //   dst = convert(x) to epi_out (f32; bf16 RNE, NaN quiet; u8 / s8:
    //         NaN -> 0, clamped, rounded to nearest even)
    uint8_t *dst;
    int64_t dst_ld;
    const int32_t *colsum;
    const float *scales;
    const float *bias;
    int32_t col_factor;
    float zero_point;
    uint16_t store_mask[2];
    float alpha;  // EPI_LEAKY's slope; EPI_ELT_CLIP's low bound
    float beta;   // EPI_ELT_CLIP's high bound
    const uint8_t *binary;  // desc.epi_ops: the residual at the tile's first element
    int64_t binary_ld;      // bytes between its rows
    // Row tiles (fused-epilogue kernels only; 0 or 1: one tile).  A call
    // with m_tiles = T computes T tiles of m rows each, one after another
    // with the same B: tile t reads A at a + t * a_tile_rs and writes the
    // rows m * t .. m * t + m - 1 of dst (and reads those of binary), as T
    // calls with a, dst and binary advanced would -- without paying the
    // call, argument and setup cost T times, which dominates when K is
    // small (1x1 convolutions over 16..32 channels).
    int64_t m_tiles;
    int64_t a_tile_rs;  // bytes between the A of consecutive tiles
    // K segments (backends with supports_k_segments() only; 0 or 1: one).
    // A call with k_segs = S reduces over S * kg k-groups: segment s reads
    // A(i, g) at a + s * a_seg_rs + i * a_rs + g * 4 (g < kg) and the B
    // groups s * (kg + b_seg_skip) .. s * (kg + b_seg_skip) + kg - 1 (B
    // continues, b_seg_skip groups further on at each new segment), all
    // into the same accumulators -- the batch-reduce of a convolution's
    // kernel rows, whose A rows lie a source row apart, without storing
    // and reloading the tile between them.
    int64_t k_segs;
    int64_t a_seg_rs;  // bytes between the A of consecutive segments
    // B k-groups skipped between segments (0: B simply continues): a
    // convolution's edge pixels read only the taps of each kernel row that
    // are not in the left / right padding (conv_gemm.cpp, edge columns).
    int64_t b_seg_skip;
    float sum_scale;       // EPI_ADD_SUM (1: none)
    float sum_zero_point;  // EPI_ADD_SUM (0: none)
};

// desc.epi_out: what the fused epilogue stores (0: none, acc as above).
// EPI_S32 (u8s8 only, no flag but EPI_COMP, no epi_ops): the int32
// acc - col_factor * colsum[c] itself, wrapping modulo 2^32 as the
// accumulator (the BLAS-style int8 call with alpha 1, beta 0, no offsets).
enum : uint8_t { EPI_NONE = 0, EPI_F32 = 1, EPI_BF16 = 2, EPI_U8 = 3, EPI_S8 = 4, EPI_S32 = 5 };
// desc.epi_flags
enum : uint8_t {
    EPI_COMP = 1,
    EPI_SCALE_1 = 2,
    EPI_SCALE_N = 4,
    EPI_BIAS = 8,
    EPI_ZP = 16,
    EPI_RELU = 32,
    EPI_LEAKY = 64,
};

// desc.epi_ops: bits 0-1 a residual add fused after the bias, its operand
// f32 or bf16; bit 2 moves that add after the eltwise op (a chain "gelu,
// add" rather than ResNet's "add, relu"); bits 3-5 a transcendental eltwise
// op (at most one eltwise op in all: not with EPI_RELU / EPI_LEAKY).
enum : uint8_t {
    EPI_ADD_NONE = 0,
    EPI_ADD_F32 = 1,
    EPI_ADD_BF16 = 2,
    EPI_ADD_SUM = 3,  // the sum post-op: the operand is dst, in epi_out's type (not s32)
    EPI_ADD_MASK = 3,
    EPI_ADD_LATE = 4,
    EPI_ELT_GELU_TANH = 1 << 3,
    EPI_ELT_SILU = 2 << 3,
    EPI_ELT_SIGMOID = 3 << 3,
    EPI_ELT_GELU_ERF = 4 << 3,
    EPI_ELT_TANH = 5 << 3,
    EPI_ELT_CLIP = 6 << 3,  // not transcendental: compares (relu6 is clip(0, 6))
    EPI_ELT_MASK = 7 << 3,
    // The binary op (EPI_ADD_F32 / EPI_ADD_BF16) multiplies instead:
    // x = x * binary(i, c).  (A per-N operand is a row stride of 0.)
    EPI_BIN_MUL = 1 << 6,
};

using lp_ukernel_fn = void (*)(const lp_ukernel_args *);

// What a kernel is specialised on.  POD, hashed bytewise by the cache, so
// every byte is set.
struct lp_ukernel_desc {
    uint8_t tier;        // anvil_isa_t the kernel was made for
    lp_kind kind;
    uint8_t m;           // 1..kMR
    uint8_t nv;          // 1 or 2 vectors of 16 columns
    uint8_t accumulate : 1;  // 0 or 1
    uint8_t a_f32 : 1;       // bf16: A arrives widened to fp32 (see above)
    // Fused epilogues of backends with supports_nt_store() only: a tile with
    // every column there, 32 of them, stores its f32 or bf16 rows around the
    // caches (non-temporal, with no store fence: the caller runs
    // cpu::store_fence() before its thread's work counts as done) when dst
    // and dst_ld are 64-byte aligned, checked per tile; otherwise as usual.  The same values (see gemm::kUkFlagNtStore).
    uint8_t nt_store : 1;
    // bf16, backends with supports_k_tail() only: the last k-group of each
    // segment (of the call, with one) holds only its element 0.  The
    // kernel reads the group's whole dword of A but takes element 1 as
    // zero, whatever A holds there (its weight B must be zero): a
    // convolution whose kernel row of KW x ICg elements is odd reads it in
    // place, and the next pixel's first channel -- possibly NaN or Inf,
    // which times 0 would be NaN -- is never multiplied (conv_plan::row_k).
    // int8 needs no such flag: whatever byte meets a zero weight adds 0.
    uint8_t k_tail : 1;
    uint8_t unused_bits : 4; // zero
    uint8_t epi_out;     // EPI_*: fused epilogue output type (0: none)
    uint8_t epi_flags;   // EPI_COMP | EPI_SCALE_* | EPI_BIAS | EPI_RELU / EPI_LEAKY | EPI_ZP
    uint8_t epi_ops;     // EPI_ADD_* | EPI_ADD_LATE | EPI_ELT_* (epi_out != 0 only)
};
static_assert(sizeof(lp_ukernel_desc) == 8, "lp_ukernel_desc must stay 8 packed bytes");

inline lp_ukernel_desc make_lp_desc(uint8_t tier, lp_kind kind, int m, int nv, bool accumulate,
                                    bool a_f32 = false) {
    lp_ukernel_desc d{};
    d.a_f32 = a_f32 ? 1 : 0;
    d.tier = tier;
    d.kind = kind;
    d.m = uint8_t(m);
    d.nv = uint8_t(nv);
    d.accumulate = accumulate ? 1 : 0;
    return d;
}

inline lp_ukernel_desc make_lp_epi_desc(uint8_t tier, lp_kind kind, int m, int nv, bool accumulate,
                                        uint8_t epi_out, uint8_t epi_flags,
                                        uint8_t epi_ops = EPI_ADD_NONE, bool a_f32 = false,
                                        bool nt_store = false) {
    lp_ukernel_desc d = make_lp_desc(tier, kind, m, nv, accumulate, a_f32);
    d.nt_store = epi_out && nt_store ? 1 : 0;
    d.epi_out = epi_out;
    d.epi_flags = epi_out ? epi_flags : 0;
    d.epi_ops = epi_out ? epi_ops : 0;
    return d;
}

}  // namespace anvil::lowp
