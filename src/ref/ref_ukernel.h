// Scalar implementation of the ukernel contract (the "scalar" ISA tier) and
// the plain reference GEMM that tests compare against.
#pragma once
#include <cstdint>

#include "gemm/ukernel.h"

namespace anvil::ref {

// Generic micro-kernel: reads m, n, alpha, beta from args.
void sgemm_ukernel(const gemm::ukernel_args *args);

// Reference C = alpha*op(A)*op(B) + beta*C in dnnl_sgemm's row-major
// convention, accumulating in double (for tests' error bounds).
void sgemm_double(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                  float *C, int64_t ldc);

}  // namespace anvil::ref
