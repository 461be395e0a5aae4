#include "api/matmul_f32.h"

#include <algorithm>

#include "api/validate.h"
#include "common/jit_state.h"
#include "common/memory.h"
#include "gemm/backend.h"
#include "gemm/driver.h"
#include "gemm/pack.h"
#include "lowp/chain_epilogue.h"
#include "threading/parallel.h"

namespace anvil::api {

namespace {

// bf16 output, or a sum op: the fp32 product of a panel of rows goes
// through a scratch buffer of at most 2^20 floats (4 MiB), at least 256
// rows (so that few panels re-read B).
int64_t panel_rows(int64_t M, int64_t N) {
    const int64_t by_size = (int64_t(1) << 20) / std::max<int64_t>(1, N);
    return std::min(M, std::max<int64_t>(256, by_size));
}

// The chain on each block of C the fp32 driver finishes, on the thread
// that computed it, while the block is in cache.  acc: the GEMM's C (the
// caller's C itself for f32 output, each element read before it is
// written; a scratch panel for bf16 or a sum op); row0: the panel's first
// row in C.
class chain_on_blocks final : public gemm::c_block_done {
public:
    chain_on_blocks(const lowp::chain_epilogue &epi, const float *acc, int64_t acc_ld, int64_t row0)
        : epi_(epi), acc_(acc), acc_ld_(acc_ld), row0_(row0) {}
    void operator()(int64_t i0, int64_t m, int64_t j0, int64_t n) const override {
        lowp::lp_block b{};
        b.acc = acc_ + i0 * acc_ld_ + j0;
        b.acc_ld = acc_ld_;
        b.i0 = row0_ + i0;
        b.j0 = j0;
        b.m = m;
        b.n = n;
        epi_.apply(b);
    }

private:
    const lowp::chain_epilogue &epi_;
    const float *acc_;
    int64_t acc_ld_, row0_;
};

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

// Whether a binary operand's bytes overlap C's: an in-place residual (the
// operand is C itself) must be read before the product overwrites C.
bool operand_overlaps_c(const lowp::chain_spec &chain, const f32_matmul_call &call) {
    if (!call.srcs) return false;
    const int64_t c_elem = chain.out == lowp::out_type::f32 ? 4 : 2;
    const auto c_lo = reinterpret_cast<uintptr_t>(call.C);
    const uintptr_t c_hi = c_lo + uintptr_t(((call.M - 1) * call.ldc + call.N) * c_elem);
    for (size_t t = 0; t < chain.ops.size(); ++t) {
        const lowp::post_op &o = chain.ops[t];
        if (!o.takes_operand() || !call.srcs[t]) continue;
        const int64_t elem = o.src_bf16 ? 2 : 4;
        const auto lo = reinterpret_cast<uintptr_t>(call.srcs[t]);
        const uintptr_t hi = lo + uintptr_t((o.per_n ? call.N : (call.M - 1) * o.ld + call.N) * elem);
        if (lo < c_hi && c_lo < hi) return true;
    }
    return false;
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
    lowp::chain_epilogue epi(chain, call.C, call.ldc, call.srcs);
    // The product goes straight into an f32 C, the chain running on it in
    // place -- unless a sum op or a binary operand that is (or overlaps) C
    // needs C's old values, which the product (and its K blocks' partial
    // sums) would overwrite first.
    if (chain.out == lowp::out_type::f32 && !lowp::has_sum(chain) && !operand_overlaps_c(chain, call)) {
        p.M = call.M;
        p.A = call.A;
        p.C = static_cast<float *>(call.C);
        p.ldc = call.ldc;
        const chain_on_blocks hook(epi, p.C, p.ldc, 0);
        if (!bare_product(chain)) p.on_done = &hook;
        return run_gemm(be, p);
    }
    const int64_t rows = panel_rows(call.M, call.N);
    // Under the memory cap like every problem-sized buffer (common/memory.h).
    const int64_t scratch_bytes = rows * call.N * int64_t(sizeof(float));
    struct owned {
        void *p;
        int64_t bytes;
        ~owned() { mem::release(p, bytes); }
    } scratch{mem::allocate(scratch_bytes), scratch_bytes};
    if (!scratch.p) return anvil_out_of_memory;
    for (int64_t i0 = 0; i0 < call.M; i0 += rows) {
        p.M = std::min(rows, call.M - i0);
        p.A = call.transa ? call.A + i0 : call.A + i0 * call.lda;
        p.C = static_cast<float *>(scratch.p);
        p.ldc = call.N;
        const chain_on_blocks hook(epi, p.C, p.ldc, i0);
        p.on_done = &hook;
        // A failure in the first panel leaves C untouched.  A JIT failure
        // in a later one (the last panel's row tiles may need new kernels)
        // is retried without the JIT where the failure policy allows;
        // otherwise the error returns with the earlier panels written.
        const anvil_status_t st = run_gemm(be, p);
        if (st != anvil_success) return st;
    }
    return anvil_success;
}

}  // namespace anvil::api
