// anvil-bench: low-precision GEMMs (--dt bf16 | u8s8s32 | s8s8s32).
//
//   bf16     anvil_gemm_bf16bf16f32 vs oneDNN's matmul primitive (bf16 src
//            and weights, f32 dst) on the plain weights and on weights
//            prepacked once (format_tag::any, reordered outside the timing)
//   u8s8s32  anvil_gemm_u8s8s32 vs dnnl_gemm_u8s8s32 (offsetc 'F', ao = bo =
//            0, co = {0}) and oneDNN's int8 matmul primitive (u8 src, s8
//            weights prepacked, s32 dst)
//   s8s8s32  the same with signed A (dnnl_gemm_s8s8s32, s8 src)
//
// Exactness (check mode; no tuned tolerances):
//  - int8: int32 dot products are exact, so anvil equals the reference (the
//    documented semantics: integers for alpha 1 and beta 0 / 1, otherwise
//    double rounded to nearest-even) exactly; oneDNN may round an exact .5
//    tie the other way, so anvil vs oneDNN may differ by 1 there only.
//    Data: the whole u8 / s8 range where the CPU has VNNI (oneDNN's
//    non-VNNI kernels saturate pair sums of vpmaddubsw), else 7-bit values.
//  - bf16, small integers (|a|, |b| <= 4, 16 K < 2^24, alpha 1, beta 0 / 1):
//    every partial sum is an exact fp32 integer, so anvil, oneDNN and the
//    reference agree exactly.  bf16 random data (uniform [-1, 1) rounded to
//    bf16): products are exact and the fp32 sums obey the gamma_{K+2} bound
//    of anvil_bench_check.h; anvil vs oneDNN within twice a cheap upper
//    bound of it (max_k |a_ik| * sum_k |b_kj|).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "anvil_bench_check.h"
#include "anvil_bench_cli.h"
#include "anvil_bench_data.h"
#include "anvil_bench_gemm.h"
#include "anvil_bench_output.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

// f32: only the matmul handle with attributes (--dt f32 --planned with
// --attr-*/--bias/--dst); plain f32 runs the fp32 GEMM paths.
enum class lowp_dt { bf16, u8s8s32, s8s8s32, f32 };

bool parse_lowp_dt(const std::string &s, lowp_dt *dt);

// Random int8 operands a (u8, or s8 when a_signed) and b (s8), shared by
// the GEMM and conv data: the whole range where the CPU has VNNI, 7-bit
// data otherwise (oneDNN's u8 x s8 pair sums saturate at 16 bits there).
// Returns whether the whole range was used.
bool fill_int8_operands(uint8_t *a, int64_t na, bool a_signed, uint8_t *b, int64_t nb,
                        uint64_t seed);
const char *lowp_name(lowp_dt dt);
inline bool is_int8(lowp_dt dt) { return dt == lowp_dt::u8s8s32 || dt == lowp_dt::s8s8s32; }
// f32 or bf16 operands: the values are also kept as floats (Af, Bf).
inline bool is_float(lowp_dt dt) { return !is_int8(dt); }
inline int64_t elem_bytes(lowp_dt dt) {
    return dt == lowp_dt::f32 ? 4 : dt == lowp_dt::bf16 ? 2 : 1;
}
// Peak probe kind for measure_lowp_peak ("bf16" / "int8"), "" for f32.
std::string peak_kind(const std::string &dt);

uint16_t f32_to_bf16_rne(float v);
float bf16_to_f32(uint16_t v);

// One problem's operands in their storage type, row-major with the
// problem's leading dimensions (op(A) is M x K, op(B) is K x N).
struct lowp_data {
    lowp_dt dt = lowp_dt::bf16;
    gemm_problem p;
    data_kind kind = data_kind::ints;  // bf16 fill; int8 ignores it
    bool full_range = true;            // int8: the whole u8 / s8 range
    buffer A, B;
    std::vector<float> Af, Bf;         // bf16: the same values as floats

    bool init(lowp_dt t, const gemm_problem &prob, data_kind k, uint64_t seed);
    int64_t a(int64_t i, int64_t k) const;  // op(A)(i, k) of an int8 A
    int64_t b(int64_t k, int64_t j) const;  // op(B)(k, j) of an int8 B
    int64_t dot(int64_t i, int64_t j) const;
    bool exact(float alpha, float beta) const;  // bf16: results must be bit-equal
};

// C (float for bf16, int32 otherwise) of M x N with ldc = N.  C0 is beta's
// input (or the sentinel fill for beta == 0).
void fill_c(lowp_dt dt, void *C, int64_t n, float beta, data_kind kind, uint64_t seed);

// anvil's call; int8 with offsetc 'F', ao = bo = 0, co = {0}.
anvil_status_t run_anvil_lowp(const lowp_data &d, float alpha, float beta, void *C);

// The documented result at chosen points.
class lowp_reference {
public:
    lowp_reference(const lowp_data &d, float alpha, float beta, const void *C0,
                   std::vector<point> pts);
    // tie_slack: an int8 result may be 1 off where the exact value is a .5 tie.
    check_result check(const void *C, bool tie_slack) const;
    bool exact() const { return int8_ || exact_; }

private:
    const lowp_data &d_;
    bool int8_ = false, exact_ = false;
    std::vector<point> pts_;
    std::vector<double> want_, bound_;  // bf16: value and error bound
    std::vector<int32_t> want_i_;       // int8: the exact result
    std::vector<char> tie_;             // int8: the double value is a .5 tie
};

// Every element of two results (anvil X vs peer Y): int8 equal except 1 off
// at .5 ties (counted in *ties); bf16 equal when d.exact(), else within
// twice the cheap error bound.
check_result compare_full(const lowp_data &d, float alpha, float beta, const void *C0,
                          const void *X, const void *Y, int64_t *ties);

// Drivers (anvil_bench_lowp.cpp); each returns the number of failures.
int run_check_lowp(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
                   reporter &rep);
int run_perf_lowp(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
                  reporter &rep);

}  // namespace anvil_bench
