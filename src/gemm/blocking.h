// Cache blocking for the BLIS-style fp32 driver.
#pragma once
#include <cstdint>
#include <string>

#include "gemm/backend.h"

namespace anvil::gemm {

struct blocking {
    int mr = 0, nr = 0;  // register block of the backend
    int64_t kc = 0;      // depth of one pass over C (B micro-panel kc x nr lives in L1)
    int64_t mc = 0;      // rows of A packed at once (mc x kc lives in L2)
    int64_t nc = 0;      // columns of B packed at once (kc x nc lives in L3)
    bool pack_a = false; // copy A into mr-row panels (else read it in place)
    bool pack_b = false; // copy B into nr-wide panels (else read it in place)
};

// The blocking for one problem.  kc (which fixes the order of the sums)
// depends only on the shape, backend and cache sizes, never on the thread
// count, so results are bitwise identical for any number of threads; mc
// may shrink so that nthreads get balanced row blocks.
blocking choose_blocking(const backend &be, bool transa, bool transb, int64_t M, int64_t N,
                         int64_t K, int64_t lda, int64_t ldb, bool b_prepacked, int nthreads);

// B no larger than this (bytes) is read in place when it is not transposed:
// it stays in L1/L2 across the row tiles, so a copy would only add time.
// (A plan keeps such a B as a plain row-major copy: api/plan_api.cpp.)
constexpr int64_t kDirectBBytes = 64 * 1024;

// True when an operand's rows (or, transposed, its k-columns) lie a
// multiple of 2 KiB apart: at most two L1 sets then hold all the lines a
// micro-kernel walks, and reading it in place thrashes L1 (and a 4 KiB
// multiple thrashes L2 too).
bool stride_aliases_l1(int64_t ld);

std::string describe(const blocking &b);

}  // namespace anvil::gemm
