#include "gemm/stream.h"

#include <algorithm>

#include "cpu/isa.h"
#include "gemm/driver.h"
#include "gemm/ukernel.h"
#include "threading/parallel.h"

namespace anvil::gemm {

namespace {

// A transposed with N == 1 (M >= 16), or N <= kStreamMaxCols and
// M >= kStreamMinCols, or N <= kStreamMaxColsLargeA with M >= kStreamMinCols
// and M x K >= kStreamMinBFloats:
// C^T (N x M) = op(B)^T (N x K) * A
// as stored (K x M, row-major), N rows of the row-stream path over M
// columns.  N == 1 with a unit-stride C column writes C directly; otherwise
// C^T goes through a stack block and the contract's epilogue stores it.
bool transposed_small_n(const sgemm_problem &p) {
    // N == 1 from two vectors of M on: the blocked path packs all of A for
    // one column (AVX2, 64x1x300 TN: 0.09x dnnl_sgemm).
    if (!p.transa) return false;
    if (p.N == 1) return p.M >= 16;
    if (p.M < kStreamMinCols) return false;
    return p.N <= kStreamMaxCols ||
           (p.N <= kStreamMaxColsLargeA && p.M * p.K >= kStreamMinBFloats);
}

// Columns of C^T per block of the transposed store (32 KiB of stack).
constexpr int64_t kTransposedBlock = 512;

void run_transposed(const sgemm_problem &p, stream_fn fn, int64_t lo, int64_t hi) {
    stream_args a;
    a.a = p.B;
    a.a_rs = p.transb ? p.ldb : 1;  // A'(j, k) = op(B)(k, j)
    a.a_cs = p.transb ? 1 : p.ldb;
    a.ldb = p.lda;
    a.m = p.N;
    a.k = p.K;
    if (p.N == 1 && p.ldc == 1) {
        a.b = p.A + lo;
        a.c = p.C + lo;
        a.ldc = 1;
        a.n = hi - lo;
        a.alpha = p.alpha;
        a.beta = p.beta;
        fn(&a);
        return;
    }
    alignas(64) float block[kStreamMaxColsLargeA * kTransposedBlock];
    for (int64_t i0 = lo; i0 < hi; i0 += kTransposedBlock) {
        const int64_t n = std::min(kTransposedBlock, hi - i0);
        a.b = p.A + i0;
        a.c = block;
        a.ldc = n;
        a.n = n;
        a.alpha = 1.0f;  // the accumulators themselves
        a.beta = 0.0f;
        fn(&a);
        for (int64_t i = 0; i < n; ++i) {
            float *c = p.C + (i0 + i) * p.ldc;
            for (int64_t j = 0; j < p.N; ++j)
                store_contract(block[j * n + i], p.alpha, p.beta, c + j);
        }
    }
}

}  // namespace

bool stream_path_applies(const sgemm_problem &p, anvil_isa_t tier) {
    if (p.packed_b) return false;
    if (tier >= anvil_isa_avx512_core) {  // where measured better than the in-place kernels
        if (!cpu::info().jit_row_stream || p.transb || p.N < kStreamMinCols) return false;
        const double b_bytes = 4.0 * double(p.N) * double(p.K);
        return p.M == 1 || (p.M == 2 && b_bytes > double(cpu::info().caches.l3));
    }
    const bool wide_b = p.N >= kStreamMinCols ||
                        (p.N >= kStreamMinColsLargeB && p.N * p.K >= kStreamMinBFloats);
    return (!p.transb && p.M <= kStreamMaxRows && wide_b) || transposed_small_n(p);
}

void run_stream_gemm(const sgemm_problem &p, stream_fn fn) {
    // A task per 2 MFLOP, or per 256 KiB of B streamed (M <= 2 is
    // bandwidth-bound: at 2 threads 1x100x4096 NN ran at 0.67x dnnl_sgemm
    // on one thread, Zen 1).
    const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
    const double b_bytes = 4.0 * double(p.N) * double(p.K);
    const int64_t by_work =
        std::max<int64_t>(1, int64_t(std::max(flops / 2e6, b_bytes / double(1 << 18))));
    const bool transposed = transposed_small_n(p);
    const int64_t cols = transposed ? p.M : p.N;
    // Column ranges in whole 64-byte lines, so threads never share one.
    const int64_t lines = (cols + 15) / 16;
    const int64_t tasks =
        std::min<int64_t>({int64_t(threading::num_threads()), by_work, lines});
    threading::parallel_for(tasks, [&](int64_t t) {
        const int64_t lo = std::min(cols, lines * t / tasks * 16);
        const int64_t hi = std::min(cols, lines * (t + 1) / tasks * 16);
        if (hi <= lo) return;
        if (transposed) return run_transposed(p, fn, lo, hi);
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
