// anvil-bench: the gemm driver (check and perf modes).
#pragma once
#include <vector>

#include "anvil_bench_cli.h"
#include "anvil_bench_output.h"
#include "anvil_bench_problem.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {

struct gemm_context {
    int threads = 1;
    std::string isa, backend;
    double peak_gflops = 0;   // at `threads` threads; 0 = unknown
};

// Fills r's timed fields from run_alternating's results (anvil first, the
// peer second when there is one): GFLOP/s of `gflop` per call, weight GB/s
// of `weight_bytes`, % of ctx's peak, the ratio; notes a wrong peer or anvil
// result in *detail and sets r.status.  Returns whether anvil verified.
bool fill_timed_row(const gemm_context &ctx, const std::vector<timing_result> &tr, double gflop,
                    double weight_bytes, row *r, std::string *detail);

// Each returns the number of problems where anvil failed.
int run_check(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
              reporter &rep);
int run_perf(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
             reporter &rep);

}  // namespace anvil_bench
