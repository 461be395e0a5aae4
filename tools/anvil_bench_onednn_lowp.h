// anvil-bench: oneDNN peers of the low-precision GEMMs.
//   dnnl_gemm_u8s8s32 / dnnl_gemm_s8s8s32  BLAS-style calls, offsetc 'F',
//                       ao = bo = 0, co = {0}
//   matmul primitive    bf16 x bf16 -> f32, or u8 / s8 x s8 -> s32, with the
//                       problem's strides for src and dst; weights either
//                       used in place (plain) or with format_tag::any and
//                       reordered once in init (prepacked).  The primitive is
//                       created in init; only execute + wait is timed.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "anvil_bench_attr.h"
#include "anvil_bench_lowp.h"

namespace anvil_bench {

// ---- attribute setup shared by the matmul and convolution peers

dnnl::memory::data_type to_dnnl(anvil_data_type_t t);
// anvil's eltwise ops as oneDNN algorithms (leaky_relu: eltwise_relu with
// alpha; silu: eltwise_swish, given alpha = 1 by append_post_ops).
dnnl::algorithm eltwise_alg(int alg);

// The binary post-op operands: (index of the post-op in the chain, desc).
using binary_mds = std::vector<std::pair<int, dnnl::memory::desc>>;

// Appends the attr_spec's post-ops to po; binary_md(o, b) is the memory
// descriptor of binary operand b (0, 1, ... in chain order).
binary_mds append_post_ops(
    dnnl::post_ops &po, const attr_spec &a,
    const std::function<dnnl::memory::desc(const post_op_spec &, size_t)> &binary_md);

// Adds the bias (ad.dnnl_bias, when a.bias) and the binary operands
// (ad.bin) to the execution arguments.
void insert_attr_args(std::unordered_map<int, dnnl::memory> &args, const dnnl::engine &eng,
                      const attr_spec &a, const attr_data &ad, const dnnl::memory::desc &bias_md,
                      const binary_mds &bin_mds);

// Returns 0 on success (a dnnl_status_t otherwise).
int onednn_gemm_int8(const gemm_problem &p, bool a_signed, float alpha, const void *A,
                     const void *B, float beta, int32_t *C);

class onednn_lowp_matmul {
public:
    onednn_lowp_matmul();
    ~onednn_lowp_matmul();
    // alpha becomes an output scale, beta a sum post-op.
    bool init(lowp_dt dt, const gemm_problem &p, const void *A, const void *B, void *C,
              float alpha, float beta, bool prepacked, std::string *err);
    void execute();
    const std::string &impl() const;

private:
    struct state;
    std::unique_ptr<state> s_;
};

// The oneDNN matmul primitive with an attr_spec's attributes and prepacked
// weights (format_tag::any, reordered once in init).
class onednn_attr_matmul {
public:
    onednn_attr_matmul();
    ~onednn_attr_matmul();
    bool init(lowp_dt dt, const gemm_problem &p, const void *A, const void *B, void *C,
              const attr_spec &a, const attr_data &ad, std::string *err);
    void execute();
    const std::string &impl() const;

private:
    struct state;
    std::unique_ptr<state> s_;
};

}  // namespace anvil_bench
