// The fused post-op chain of the low-precision matmul, applied to one row
// segment of a finished accumulator block at a time (in L1, just before
// the single store to C):
//   x = accumulator (fp32; int8 dot products after zero-point compensation)
//   x = x * scale            (per tensor, or per output column)
//   x = x + bias[j]          (fp32, per output column; optional)
//   x = op(x) for each eltwise / binary post-op, in the order given
//   x = x + c_zero_point
//   C = convert(x)           (f32; bf16 round-to-nearest-even, NaN kept;
//                             s32 / u8 / s8 round-to-nearest-even, saturated)
// Each step is a function over a row segment so the portable (Highway,
// dispatched under the ISA cap) and scalar versions share one shape.  The
// accuracy of every eltwise op is documented in docs/postops.md and checked
// by tests/test_postops.cpp.
#pragma once
#include <cstdint>

namespace anvil::lowp {

enum class out_type : uint8_t { f32, bf16, s32, u8, s8 };

enum class eltwise_alg : uint8_t {
    relu,        // max(x, 0)
    leaky_relu,  // x > 0 ? x : alpha * x
    clip,        // min(max(x, alpha), beta)
    gelu_tanh,   // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    gelu_erf,    // 0.5 x (1 + erf(x / sqrt(2)))
    silu,        // x * sigmoid(x)  (swish with beta = 1)
    sigmoid,     // 1 / (1 + exp(-x))
    tanh,
};

// sum: oneDNN's sum post-op, x = x + alpha * (C_old - beta), where the
// operand is the output itself (C's value before the call, read as
// sum_type); see post_op.  Its operand pointer (srcs[t]) is C, set by the
// handle at each call, never a caller's binary operand.
enum class binary_alg : uint8_t { add, mul, sum };

struct post_op {
    bool is_binary = false;            // add, mul or sum: reads srcs[t]
    eltwise_alg eltwise = eltwise_alg::relu;
    float alpha = 0, beta = 0;         // eltwise parameters; sum: scale, zero point
    binary_alg binary = binary_alg::add;
    bool per_n = false;                // binary operand: a vector of N (true) or M x N
    bool src_bf16 = false;             // binary operand stored as bf16 (else f32)
    out_type sum_type = out_type::f32; // sum: the type C is stored in
    int64_t ld = 0;                    // M x N operand: elements between rows
    bool is_sum() const { return is_binary && binary == binary_alg::sum; }
    // A binary op whose operand the caller passes (add / mul).
    bool takes_operand() const { return is_binary && binary != binary_alg::sum; }
};

// The sum op on one value, in this order of fp32 operations: t = c_old;
// t = t - beta (only when beta != 0); t = t * alpha (only when alpha != 1);
// x = x + t (docs/postops.md; Highway's SumStep, the references).

// x[c] *= (per_n ? scales[c] : scales[0]) for c in [0, n); scales == nullptr
// means 1 (nothing to do).  Then x[c] += bias[c] when bias != nullptr.
// Callers pass scales / bias already offset to the segment's first column.
void pp_scale_bias(float *x, int64_t n, const float *scales, bool per_n, const float *bias);

// Applies ops[0..nops) to x[0..n), the columns j0 .. j0+n-1 of row i.
// srcs[t] is the operand of ops[t] (only read for binary ops): element
// (i, j) at srcs[t][i * ops[t].ld + j] (M x N) or srcs[t][j] (per_n), in
// f32 or bf16 as the op says (sum: in sum_type, M x N).
void pp_apply(float *x, int64_t n, int64_t i, int64_t j0, const post_op *ops, int nops,
              const void *const *srcs);

// dst[c] = convert(x[c] + zero_point) for c in [0, n), dst typed by `type`
// (a pointer to the segment's first element).
void pp_store(const float *x, int64_t n, float zero_point, out_type type, void *dst);

// A whole accumulator block through the chain in one call (the epilogue of
// the matmul and conv paths): the same arithmetic, element by element, as
//   x = acc                                        (fp32 accumulators)
//   x = float(int32(acc + k_term - row_factor * rowsum[r]
//                       - col_factor * colsum[c]))  (int32, modulo 2^32;
//                                                   rowsum / colsum may be null)
//   pp_scale_bias, pp_apply (row i0 + r, columns j0 ..), pp_store
// so results do not depend on which entry point ran.  scales (when per_n)
// and bias point at column j0's entry; dst at element (i0, j0).
struct pp_block {
    const void *acc = nullptr;
    int64_t acc_ld = 0;
    bool acc_int = false;
    int64_t m = 0, n = 0, i0 = 0, j0 = 0;
    const int32_t *colsum = nullptr;
    uint32_t col_factor = 0;
    const int32_t *rowsum = nullptr;
    uint32_t row_factor = 0;
    uint32_t k_term = 0;
    const float *scales = nullptr;
    bool scales_per_n = false;
    const float *bias = nullptr;
    const post_op *ops = nullptr;
    int nops = 0;
    const void *const *srcs = nullptr;
    float zero_point = 0;
    out_type out = out_type::f32;
    uint8_t *dst = nullptr;
    int64_t ldc_bytes = 0;
};
void pp_block_apply(const pp_block &b);

}  // namespace anvil::lowp
