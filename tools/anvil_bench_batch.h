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
#include <vector>

#include "anvil_bench_cli.h"
#include "anvil_bench_gemm.h"
#include "anvil_bench_output.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

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
