// make_direct_desc: the descriptor of a direct small-GEMM kernel
// (gemm/ukernel.h), every byte set.
#include <cstring>

#include "gemm/ukernel.h"

namespace anvil::gemm {

direct_gemm_desc make_direct_desc(bool transa, int64_t M, int64_t N, int64_t K, float alpha,
                                  int64_t lda, int64_t ldb, float beta, int64_t ldc) {
    direct_gemm_desc d;
    std::memset(&d, 0, sizeof(d));
    d.M = uint8_t(M);
    d.N = uint8_t(N);
    d.a = transa ? a_access::k_strided : a_access::row_major;
    d.beta = classify_beta(beta);
    d.alpha_one = alpha == 1.0f;
    d.K = int32_t(K);
    std::memcpy(&d.alpha_bits, &alpha, 4);
    std::memcpy(&d.beta_bits, &beta, 4);
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldc;
    return d;
}

}  // namespace anvil::gemm
