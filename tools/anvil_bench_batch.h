// anvil-bench: batched matmul lines (benchdnn's BxMxK:BxKxN) through
// anvil_sgemm_batch_strided (--dt f32) and
// anvil_gemm_bf16bf16f32_batch_strided (--dt bf16) and the int8 batches
// (--dt u8s8s32 / s8s8s32), against oneDNN's matmul
// primitive over the same 3-D tensors (plain strided memory, nothing
// prepacked: attention's operands change with every call).
//   check: the double reference at sampled items (first, last and a spread
//          of others; every point of small items) and oneDNN element by
//          element on every item.
//   perf:  alternating timed trials, both results verified after each.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "anvil_bench_cli.h"
#include "anvil_bench_gemm.h"
#include "anvil_bench_output.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

// oneDNN's matmul over the problem's {batch, rows, cols} tensors (plain
// strided memory, op(A) / op(B) by strides; a shared operand is a batch of
// 1, broadcast) with the BLAS alpha / beta as attributes.
class onednn_batched_matmul {
public:
    // false, with the reason in *err, when oneDNN refuses the problem.
    bool init(const gemm_problem &p, dnnl::memory::data_type a_dt, const void *A,
              dnnl::memory::data_type b_dt, const void *B, dnnl::memory::data_type c_dt, void *C,
              float alpha, float beta, std::string *err);
    void execute();
    const std::string &impl() const { return impl_; }

private:
    dnnl::engine eng_{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm_{eng_};
    dnnl::matmul prim_;
    std::unordered_map<int, dnnl::memory> args_;
    std::string impl_;
};

// The report row of a batched problem (variant "batch").
row batch_row(const gemm_context &ctx, const gemm_problem &p, const std::string &dt);

// Each returns the number of problems where anvil failed.
int run_check_batch(const options &o, const gemm_context &ctx,
                    const std::vector<gemm_problem> &ps, reporter &rep);
int run_perf_batch(const options &o, const gemm_context &ctx,
                   const std::vector<gemm_problem> &ps, reporter &rep);
// --dt u8s8s32 / s8s8s32 (anvil_bench_batch_int8.cpp): exact int32 results.
int run_check_batch_int8(const options &o, const gemm_context &ctx,
                         const std::vector<gemm_problem> &ps, reporter &rep);
int run_perf_batch_int8(const options &o, const gemm_context &ctx,
                        const std::vector<gemm_problem> &ps, reporter &rep);

}  // namespace anvil_bench
