#include "api/matmul_f32.h"

#include <algorithm>
#include <vector>

#include "api/validate.h"
#include "common/jit_state.h"
#include "gemm/backend.h"
#include "gemm/driver.h"
#include "gemm/pack.h"
#include "lowp/chain_epilogue.h"
#include "threading/parallel.h"

namespace anvil::api {

namespace {

// Rows of C per panel: the GEMM writes a panel, then the chain reads and
// rewrites it.  About 512 KiB of fp32 (an L2 on Zen 1; half of one on
// Zen 5) keeps the second pass in cache; at least 48 rows (a multiple of
// the 6- and 12-row micro-tiles) so that a wide N does not cut the GEMM
// into slivers that re-read B for a few rows each.
int64_t panel_rows(int64_t M, int64_t N) {
    const int64_t by_cache = (int64_t(1) << 17) / std::max<int64_t>(1, N);
    const int64_t rows = std::max<int64_t>(48, by_cache / 48 * 48);
    return std::min(M, rows);
}

// The chain has nothing to do: f32 output of the bare product.
bool bare_product(const lowp::chain_spec &c) {
    return c.out == lowp::out_type::f32 && c.scales.empty() && c.bias.empty() && c.ops.empty();
}

anvil_status_t run_gemm(const gemm::backend **be, const gemm::sgemm_problem &p) {
    anvil_status_t st = gemm::run_sgemm(**be, p);
    if (jit_state::retry_without_jit(st))
        if (const gemm::backend *alt = gemm::non_jit_backend_with_nr((*be)->nr())) {
            *be = alt;
            st = gemm::run_sgemm(**be, p);
        }
    return st;
}

}  // namespace

anvil_status_t f32_matmul_panel_bytes(const gemm::backend &be, int64_t K, int64_t N,
                                      int64_t *bytes) {
    const int64_t nr = be.nr();
    int64_t cols, floats;
    if (!mul_ok(N / nr + (N % nr != 0), nr, &cols) || !mul_ok(cols, K, &floats) ||
        !mul_ok(floats, 4, bytes))
        return anvil_size_overflow;
    return anvil_success;
}

void f32_matmul_pack(const gemm::backend &be, bool transb, int64_t K, int64_t N, const float *B,
                     int64_t ldb, float *panels) {
    if (K == 0 || N == 0) return;
    const int nr = be.nr();
    const int64_t count = N / nr + (N % nr != 0);
    threading::parallel_for(count, [&](int64_t q) {
        gemm::pack_b_panel_range(B, ldb, transb, 0, K, 0, N, nr, q, q + 1, panels);
    });
}

anvil_status_t f32_matmul_run(const gemm::backend **be, const lowp::chain_spec &chain,
                              const f32_matmul_call &call) {
    gemm::sgemm_problem p;
    p.transa = call.transa;
    p.transb = false;  // unused with packed panels
    p.N = call.N;
    p.K = call.K;
    p.alpha = 1.0f;
    p.beta = 0.0f;
    p.lda = call.lda;
    p.packed_b = call.panels;
    const bool f32_out = chain.out == lowp::out_type::f32;
    if (bare_product(chain)) {
        p.M = call.M;
        p.A = call.A;
        p.C = static_cast<float *>(call.C);
        p.ldc = call.ldc;
        return run_gemm(be, p);
    }
    // f32 output: the chain runs in place on C (each element is read
    // before it is written, segment by segment).  bf16 output: the panel's
    // fp32 product goes through a scratch buffer first.
    const int64_t rows = panel_rows(call.M, call.N);
    std::vector<float> scratch;
    if (!f32_out) scratch.resize(size_t(rows * call.N));
    lowp::chain_epilogue epi(chain, call.C, call.ldc, call.srcs);
    const int64_t elem = f32_out ? 4 : 2;
    for (int64_t i0 = 0; i0 < call.M; i0 += rows) {
        const int64_t m = std::min(rows, call.M - i0);
        p.M = m;
        p.A = call.transa ? call.A + i0 : call.A + i0 * call.lda;
        p.C = f32_out ? reinterpret_cast<float *>(static_cast<char *>(call.C) +
                                                  i0 * call.ldc * elem)
                      : scratch.data();
        p.ldc = f32_out ? call.ldc : call.N;
        // A failure in the first panel leaves C untouched.  A JIT failure
        // in a later one (the last panel's row tiles may need new
        // kernels) is retried without the JIT where the failure policy
        // allows; otherwise the error returns with the earlier panels of C
        // written.
        const anvil_status_t st = run_gemm(be, p);
        if (st != anvil_success) return st;
        const float *acc = p.C;
        const int64_t acc_ld = p.ldc;
        // Threads take row ranges of the panel (whole rows: the chain's
        // result per element does not depend on the split).
        const int64_t tasks = std::min<int64_t>(threading::num_threads(), m);
        threading::parallel_for(tasks, [&](int64_t t) {
            const int64_t r0 = m * t / tasks, r1 = m * (t + 1) / tasks;
            if (r1 <= r0) return;
            lowp::lp_block b{};
            b.acc = acc + r0 * acc_ld;
            b.acc_ld = acc_ld;
            b.i0 = i0 + r0;
            b.j0 = 0;
            b.m = r1 - r0;
            b.n = call.N;
            epi.apply(b);
        });
    }
    return anvil_success;
}

}  // namespace anvil::api
