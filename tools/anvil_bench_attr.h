// anvil-bench: attributes of the low-precision matmul (--planned with --dt
// bf16 | u8s8s32 | s8s8s32): output type, scales, zero points, bias and the
// post-op chain, their command-line grammar, the operands they need, and
// the per-element reference of the documented chain with error bounds.
//
// Grammar (benchdnn-like; every value is a plain C number):
//   --dst f32|bf16|s32|u8|s8
//       output type; default f32 for bf16, s32 for int8 (bf16 inputs allow
//       f32 and bf16 only)
//   --attr-post-ops=OP[+OP...]       at most ANVIL_MAX_POST_OPS entries
//       eltwise: relu | leaky_relu[:ALPHA] (default 0.1) | clip:LO:HI |
//                gelu_tanh | gelu_erf | silu (alias swish) |
//                sigmoid (alias logistic) | tanh
//       binary:  add[:f32|bf16][:per_oc] | mul[:f32|bf16][:per_oc]
//                (operand type default f32; an M x N tensor by default,
//                per_oc: one value per output column, a vector of N)
//   --attr-scales=common:S | per_oc[:S]
//       common: one scale S; per_oc: scale_j = S * 2^((j mod 5) - 3)
//       (S default 1), powers of two times S
//   --attr-zero-points=src:V[,wei:V][,dst:V]    int8 only
//   --bias      a bias of N fp32 values
// Operand values (small integers, so exact steps stay exact): bias in
// [-20, 20], add operands in [-9, 9], mul operands in [-2, 2].
//
// Semantics (anvil.h): acc (exact int32, or fp32 for bf16) -> float(acc) *
// scale -> + bias -> post-ops in order -> + dst zero point -> conversion
// (RNE, saturating, NaN -> 0).  oneDNN 2.6 gets the same attributes, with
// bias / scale as its bias because it adds the bias before scaling; that is
// exact when the scales are powers of two, otherwise oneDNN's result may be
// one rounding apart (accounted for in its error bound).
//
// The reference (attr_reference::at) evaluates the chain step by step in
// fp32 (what both libraries do), starting from the exact accumulator, and
// carries a bound on how far each library may be from it:
//  - exact steps (scale, bias, relu, leaky_relu, clip, add, mul, zero point)
//    add nothing as long as the input is exact; on an inexact input they
//    scale the bound by their slope and add one rounding (2^-23 |x|);
//  - transcendental ops add the library's accuracy: anvil's documented
//    bounds (docs/postops.md; 2^-20 + 2^-20 |y| is used, above all of them),
//    oneDNN's 4e-6 + 4e-6 |y| + 2^-22 |x| (benchdnn's eltwise threshold plus
//    the cancellation in 1 + tanh), times the op's slope (gelu 1.13, silu
//    1.1, tanh 1, sigmoid 0.25) on the incoming bound;
//  - bf16 accumulation with non-integer data starts from gamma_{K+2} sum
//    |a b| (with small integers every partial sum is exact: bound 0);
//  - the conversion to bf16 / integers maps [x - e, x + e] monotonically;
//    oneDNN may round an exact .5 tie of an integer output either way.
// So an exact chain (no transcendental op, exact accumulators) must match
// the reference, and anvil must match oneDNN, bit for bit but for .5 ties.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "anvil_bench_data.h"
#include "anvil_bench_lowp.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

struct post_op_spec {
    bool binary = false;
    bool sum = false;             // oneDNN's sum: + alpha * (C_old - beta)
    int alg = 0;                  // anvil_eltwise_alg_t / anvil_binary_alg_t
    float alpha = 0, beta = 0;    // leaky_relu, clip; sum: scale, zero point
    bool per_n = false;           // binary: per_oc vector
    anvil_data_type_t src_dt = anvil_dt_f32;  // binary operand type
};

struct attr_spec {
    bool dst_set = false;
    anvil_data_type_t dst = anvil_dt_f32;
    int scale_mode = 0;           // 0 none, 1 common, 2 per_oc
    float scale = 1.0f;           // common value / per_oc base
    int32_t zp_src = 0, zp_wei = 0, zp_dst = 0;
    bool bias = false;
    std::vector<post_op_spec> ops;
    std::string post_ops_text;    // as given (canonicalised)

    // Anything beyond a plain matmul with the default output?
    bool any(lowp_dt dt) const;
    // Canonical text: "dst=bf16 scales=common:0.5 zp=src:3 bias po=gelu_tanh+add:f32".
    std::string str() const;
};

anvil_data_type_t default_dst(lowp_dt dt);
const char *dt_name(anvil_data_type_t t);
bool parse_dst(const std::string &s, anvil_data_type_t *t);
bool parse_post_ops(const std::string &s, std::vector<post_op_spec> *ops, std::string *err);
bool parse_scales(const std::string &s, int *mode, float *scale, std::string *err);
bool parse_zero_points(const std::string &s, int32_t *src, int32_t *wei, int32_t *dst,
                       std::string *err);
// Checks the combination against the input type; "" when fine.
std::string validate_attr(lowp_dt dt, const attr_spec &a);
// The spec with everything but the types removed (the chain-cost baseline).
attr_spec plain_attr(lowp_dt dt);

int64_t dt_bytes(anvil_data_type_t t);
double load_elem(anvil_data_type_t t, const void *p, int64_t at);
bool is_pow2(float v);

// The operands of a spec for one problem (scales, bias, binary tensors) and
// anvil's post-op array.
struct attr_data {
    std::vector<float> scales, bias, dnnl_bias;  // dnnl_bias = bias / scale
    std::vector<buffer> bin;                     // binary operands, in order
    std::vector<int64_t> bin_ld;                 // 0 for per_oc
    std::vector<anvil_data_type_t> bin_dt;
    std::vector<anvil_post_op_t> ops;
    std::vector<const void *> bin_ptrs;
    // A sum op reads C's old values: C's initial contents (small integers
    // of the output type, p.M x p.ldc()), copied into every output buffer
    // before each checked call.
    bool has_sum = false;
    buffer c_old;
    anvil_data_type_t c_dt = anvil_dt_f32;
    int64_t c_ld = 0;
    bool init(const attr_spec &a, const gemm_problem &p, int64_t full_ld, uint64_t seed);
    double bin_value(size_t t, int64_t i, int64_t j) const;
    double c_old_value(int64_t i, int64_t j) const { return load_elem(c_dt, c_old.data(), i * c_ld + j); }
    // C = C's initial contents (with a sum op), else 0xA5 bytes.
    void reset_output(buffer &C) const;
    float scale(int64_t j) const { return scales.empty() ? 1.0f : scales[scales.size() == 1 ? 0 : size_t(j)]; }
};

// The chain at one element: the fp32 value before the conversion, the
// conversion's result, and each library's bound.
struct chain_value {
    double x = 0;          // fp32 chain value before the output conversion
    double want = 0;       // the converted result
    double err_anvil = 0, err_dnnl = 0;
    bool exact_int = false;  // s32 stored from the integer accumulator
};

class attr_reference {
public:
    attr_reference(const lowp_data &d, const attr_spec &a, const attr_data &ad);
    chain_value at(int64_t i, int64_t j) const;
    const attr_data *data() const { return &ad_; }
    // Whether a result is within the library's bound of the chain value.
    bool accepts(const chain_value &v, double got, bool dnnl) const;
    // Whether every element must be exact (no bound anywhere).
    bool exact_chain() const { return exact_chain_; }

private:
    const lowp_data &d_;
    const attr_spec &a_;
    const attr_data &ad_;
    bool exact_chain_ = true;
    bool bare_s32_ = false;
};

// The spec of a run from the options (--dst, --attr-*, --bias); false with
// *err when the combination does not fit the input type.
bool build_attr_spec(const options &o, lowp_dt dt, attr_spec *a, std::string *err);

// Drivers of the matmul handle (anvil_bench_matmul.cpp); each returns the
// number of problems where anvil failed.
int run_check_matmul(const options &o, const gemm_context &ctx,
                     const std::vector<gemm_problem> &ps, reporter &rep);
int run_perf_matmul(const options &o, const gemm_context &ctx,
                    const std::vector<gemm_problem> &ps, reporter &rep);

}  // namespace anvil_bench
