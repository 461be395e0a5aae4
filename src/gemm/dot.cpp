#include "gemm/dot.h"

#include <algorithm>

#include "gemm/driver.h"
#include "threading/parallel.h"

namespace anvil::gemm {

bool dot_path_applies(const sgemm_problem &p, anvil_isa_t tier) {
    if (p.packed_b || p.transa) return false;
    // B(k, j) contiguous along k: B transposed, or one column of unit stride.
    const bool b_columns = p.transb || (p.N == 1 && p.ldb == 1);
    const bool long_k_rows = tier < anvil_isa_avx512_core && p.M <= kDotMaxRowsLongK &&
                             p.K >= kDotLongK;
    const bool few_rows = p.M <= kDotMaxRows || long_k_rows || p.N == 1;
    return b_columns && few_rows;
}

void run_dot_gemm(const sgemm_problem &p, dot_fn fn) {
    // Threads take contiguous column ranges of C (rows of B^T): each reads
    // its share of B once.  ~2 MFLOP per thread at least, as the blocked
    // path; a matrix-vector product (N == 1) splits rows instead.
    const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
    const int64_t by_work = std::max<int64_t>(1, int64_t(flops / 2e6));
    const bool split_rows = p.N == 1;
    const int64_t extent = split_rows ? p.M : p.N;
    const int64_t tasks =
        std::min<int64_t>({int64_t(threading::num_threads()), by_work, extent});
    const int64_t ldb = p.transb ? p.ldb : 1;  // N == 1 with a unit-stride column
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
            a.n = 1;
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

bool stream_path_applies(const sgemm_problem &p, anvil_isa_t tier) {
    return tier < anvil_isa_avx512_core && !p.packed_b && !p.transb && p.M <= kStreamMaxRows &&
           p.N >= kStreamMinCols;
}

void run_stream_gemm(const sgemm_problem &p, stream_fn fn) {
    const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
    const int64_t by_work = std::max<int64_t>(1, int64_t(flops / 2e6));
    // Column ranges in whole 64-byte lines, so threads never share one.
    const int64_t lines = (p.N + 15) / 16;
    const int64_t tasks =
        std::min<int64_t>({int64_t(threading::num_threads()), by_work, lines});
    threading::parallel_for(tasks, [&](int64_t t) {
        const int64_t lo = std::min(p.N, lines * t / tasks * 16);
        const int64_t hi = std::min(p.N, lines * (t + 1) / tasks * 16);
        if (hi <= lo) return;
        stream_args a;
        a.a = p.A;
        a.a_rs = p.transa ? 1 : p.lda;
        a.a_cs = p.transa ? p.lda : 1;
        a.b = p.B + lo;
        a.ldb = p.ldb;
        a.c = p.C + lo;
        a.ldc = p.ldc;
        a.m = p.M;
        a.n = hi - lo;
        a.k = p.K;
        a.alpha = p.alpha;
        a.beta = p.beta;
        fn(&a);
    });
}

}  // namespace anvil::gemm
