#include <doctest/doctest.h>

#include <vector>

#include "anvil/anvil.h"
#include "ref/ref_ukernel.h"

TEST_CASE("smoke: sgemm small integer problem matches the double reference") {
    const int64_t M = 5, N = 7, K = 3;
    std::vector<float> A(M * K), B(K * N), C(M * N, 0.f), R(M * N, 0.f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = float(int(i % 5) - 2);
    for (size_t i = 0; i < B.size(); ++i) B[i] = float(int(i % 7) - 3);
    REQUIRE(anvil_sgemm('N', 'N', M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N) ==
            anvil_success);
    anvil::ref::sgemm_double('N', 'N', M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, R.data(), N);
    CHECK(C == R);
}
