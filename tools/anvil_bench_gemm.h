// anvil-bench: the gemm driver (check and perf modes).
#pragma once
#include <vector>

#include "anvil_bench_cli.h"
#include "anvil_bench_output.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

struct gemm_context {
    int threads = 1;
    std::string isa, backend;
    double peak_gflops = 0;   // at `threads` threads; 0 = unknown
};

// Each returns the number of problems where anvil failed.
int run_check(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
              reporter &rep);
int run_perf(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
             reporter &rep);

}  // namespace anvil_bench
