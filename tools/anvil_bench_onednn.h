// anvil-bench: oneDNN peers.
//   dnnl_sgemm          BLAS-style call (packs inside every call)
//   matmul (prepacked)  matmul primitive, weights memory desc format_tag::any,
//                       reordered once outside the timing; only execute + wait
//                       is timed.
// oneDNN 2.6 is an OpenMP build without a thread-count setter of its own, so
// its threads are set with omp_set_num_threads.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>
#include <vector>

#include "anvil_bench_problem.h"

namespace anvil_bench {

void set_onednn_threads(int n);

// C = alpha * product + beta * C as matmul attributes: alpha an output
// scale, beta a sum post-op (none of either when 1 / 0).
dnnl::primitive_attr blas_attr(float alpha, float beta);
std::string onednn_version();

// dnnl_sgemm; returns 0 on success (dnnl_status_t otherwise).
int onednn_sgemm(const gemm_problem &p, float alpha, const float *A, const float *B, float beta,
                 float *C);

class onednn_matmul {
public:
    onednn_matmul();
    ~onednn_matmul();
    // One packed copy of each B in Bs (cold runs rotate them).  alpha becomes
    // an output scale, beta a sum post-op.
    bool init(const gemm_problem &p, const float *A, const std::vector<const float *> &Bs,
              float *C, float alpha, float beta, std::string *err);
    void execute(size_t which);
    const std::string &impl() const;

private:
    struct state;
    std::unique_ptr<state> s_;
};

}  // namespace anvil_bench
