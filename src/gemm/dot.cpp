#include "gemm/dot.h"

#include <algorithm>

#include "gemm/driver.h"
#include "threading/parallel.h"

namespace anvil::gemm {

bool dot_path_applies(const sgemm_problem &p, anvil_isa_t tier) {
    if (p.packed_b) return false;
    // A(i, k) contiguous along k: A not transposed, or one row of unit
    // stride; B(k, j) likewise: B transposed, or one column of unit stride.
    const bool a_rows = !p.transa || (p.M == 1 && p.lda == 1);
    const bool b_columns = p.transb || (p.N == 1 && p.ldb == 1);
    const bool highway = tier < anvil_isa_avx512_core;
    const bool long_k_rows =
        p.K >= kDotLongK && p.M <= (highway ? kDotMaxRowsLongK : kDotMaxRowsLongKJit);
    const bool few_rows = p.M <= kDotMaxRows || long_k_rows;
    const bool few_cols = p.N == 1 || (highway && p.N <= kDotMaxCols);
    return a_rows && b_columns && (few_rows || few_cols);
}

void run_dot_gemm(const sgemm_problem &p, dot_fn fn) {
    // Threads take contiguous column ranges of C (rows of B^T): each reads
    // its share of B once.  ~2 MFLOP per thread at least, as the blocked
    // path; with few columns (a matrix-vector product, N == 1) they split
    // rows instead.
    const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
    const int64_t by_work = std::max<int64_t>(1, int64_t(flops / 2e6));
    const bool split_rows = p.N <= kDotMaxCols && p.M > p.N;
    const int64_t extent = split_rows ? p.M : p.N;
    const int64_t tasks =
        std::min<int64_t>({int64_t(threading::num_threads()), by_work, extent});
    const int64_t ldb = p.transb ? p.ldb : 1;  // else N == 1 with a unit-stride column
    threading::parallel_for(tasks, [&](int64_t t) {
        const int64_t lo = extent * t / tasks, hi = extent * (t + 1) / tasks;
        dot_args a;
        a.lda = p.lda;
        a.ldb = ldb;
        a.ldc = p.ldc;
        a.k = p.K;
        a.alpha = p.alpha;
        a.beta = p.beta;
        if (split_rows) {
            a.a = p.A + lo * p.lda;
            a.b = p.B;
            a.c = p.C + lo * p.ldc;
            a.m = hi - lo;
            a.n = p.N;
        } else {
            a.a = p.A;
            a.b = p.B + lo * ldb;
            a.c = p.C + lo;
            a.m = p.M;
            a.n = hi - lo;
        }
        fn(&a);
    });
}

}  // namespace anvil::gemm
