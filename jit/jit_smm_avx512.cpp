#include "jit/jit_smm_avx512.h"

#include <algorithm>
#include <cstdint>

#include "jit/jit_sgemm_avx512.h"
#include "jit/jit_tail_access.h"

namespace anvil::jit {

using namespace Xbyak;
using gemm::a_access;
using gemm::beta_kind;

std::string jit_smm_avx512::kernel_name(const gemm::direct_gemm_desc &d) {
    static const char *betas[] = {"b0", "b1", "bx"};
    return "anvil_smm_avx512_M" + std::to_string(d.M) + "N" + std::to_string(d.N) + "K" +
           std::to_string(d.K) + (d.a == a_access::row_major ? "_arow" : "_acol") + "_lda" +
           std::to_string(d.lda) + "_ldb" + std::to_string(d.ldb) + "_ldc" +
           std::to_string(d.ldc) + "_" + betas[int(d.beta)] + (d.alpha_one ? "" : "_alpha");
}

bool jit_smm_avx512::displacements_fit(const gemm::direct_gemm_desc &d) {
    constexpr int64_t kMax = INT32_MAX;
    // Leading dimensions are checked before the products, which then cannot
    // overflow (M, N, K are small: direct kernels only).
    if (d.lda < 1 || d.ldb < 1 || d.ldc < 1 || d.lda > kMax || d.ldb > kMax || d.ldc > kMax) return false;
    const int64_t k_max = d.K <= kFullUnrollK ? d.K : kUnrollK;  // steps addressed off one pointer
    const bool row_major = d.a == a_access::row_major;
    const int64_t a_disp = row_major ? (int64_t(d.M) - 1) * d.lda * 4 + k_max * 4
                                     : k_max * d.lda * 4 + int64_t(d.M) * 4;
    const int64_t b_disp = k_max * d.ldb * 4 + int64_t(d.N) * 4;
    const int64_t c_disp = (int64_t(d.M) - 1) * d.ldc * 4 + int64_t(d.N) * 4;
    return a_disp <= kMax && b_disp <= kMax && c_disp <= kMax;
}

jit_smm_avx512::jit_smm_avx512(const gemm::direct_gemm_desc &d)
    : d_(d), row_major_(d.a == a_access::row_major) {
    preamble({});
    // One column tile of nv = ceil(N / 16) vectors (N <= 64), and row tiles
    // as tall as the registers allow with two broadcast registers left
    // (h * nv + nv + 2 <= 32; 20 rows at most for one vector, as the
    // whole-GEMM kernels), split evenly.  Wider tiles than the whole-GEMM
    // kernels' (which keep row-base registers and so top out at 12 rows x
    // 2 vectors) mean fewer broadcasts and B loads per FMA: measured
    // against LIBXSMM on the Zen 5 VM, 48x48x48 0.93 -> 1.01x, 40x40x40
    // 0.97 -> 1.02x, 16x64x64 0.94 -> 1.00x, 64x64x64 0.98 -> 1.00x.  The
    // bits do not depend on the tiling (one fma chain per element).
    const int nv = std::min(4, (d.N + kLanes - 1) / kLanes);
    const int max_rows = nv == 1 ? jit_sgemm_avx512::kMaxMNarrow : (30 - nv) / nv;
    const int row_tiles = (d.M + max_rows - 1) / max_rows;
    for (int t = 0; t < row_tiles; ++t) {
        const int h = d.M / row_tiles + (t < d.M % row_tiles ? 1 : 0);
        const int row0 = t * (d.M / row_tiles) + std::min(t, d.M % row_tiles);
        for (int col0 = 0; col0 < d.N; col0 += nv * kLanes) {
            set_tile(h, std::min(nv * kLanes, d.N - col0), row0, col0);
            emit_tile();
        }
    }
    postamble();
    // The constants, read-only after the code (the page is never writable
    // once executable); ud2 marks where the code ends for disassemblers.
    ud2();
    align(4);
    L(alpha_);
    dd(d.alpha_bits);
    L(beta_);
    dd(d.beta_bits);
}

void jit_smm_avx512::set_tile(int m, int n, int row0, int col0) {
    m_ = m;
    n_ = n;
    nv_ = (n + kLanes - 1) / kLanes;
    row0_ = row0;
    col0_ = col0;
    n_bcast_ = std::min(4, 32 - m_ * nv_ - nv_);
}

void jit_smm_avx512::emit_tile() {
    // Opmask of the last, partial vector of a row: B and C are never
    // touched past column N.
    if (n_ % kLanes != 0) {
        mov(r9d, (1u << (n_ % kLanes)) - 1);
        kmovw(k1, r9d);
    }
    for (int i = 0; i < m_; ++i)
        for (int j = 0; j < nv_; ++j) vpxord(acc(i, j), acc(i, j), acc(i, j));
    k_loop();
    store_c();
}

Address jit_smm_avx512::a_addr(int i, int k) const {
    const int64_t row = row0_ + i;
    const int64_t disp = row_major_ ? row * d_.lda * 4 + int64_t(k) * 4  // A(i, k) = A[i * lda + k]
                                    : int64_t(k) * d_.lda * 4 + row * 4;  // A[k * lda + i]
    return ptr[reg_a + int32_t(disp)];
}

Address jit_smm_avx512::b_addr(int k, int j) const {
    return ptr[reg_b + int32_t(int64_t(k) * d_.ldb * 4 + int64_t(col0_ + j * kLanes) * 4)];
}

// One k: the B row's vectors, then each row's broadcast A(i, k) FMA'd into
// the row's accumulators (register broadcast, or the embedded {1to16} form
// for one vector per row, as the whole-GEMM kernels: jit_sgemm_avx512::k_step).
void jit_smm_avx512::k_step(int k) {
    for (int j = 0; j < nv_; ++j) {
        if (tail_vec(j))
            load_tail(*this, b_vec(j), b_addr(k, j), n_ % kLanes, k1);
        else
            vmovups(b_vec(j), b_addr(k, j));
    }
    for (int i = 0; i < m_; ++i) {
        if (nv_ == 1) {
            vfmadd231ps(acc(i, 0), b_vec(0), ptr_b[a_addr(i, k).getRegExp()]);
            continue;
        }
        vbroadcastss(bcast(i), a_addr(i, k));
        for (int j = 0; j < nv_; ++j) vfmadd231ps(acc(i, j), b_vec(j), bcast(i));
    }
}

// K in increasing order: unrolled whole when short, else kUnrollK steps
// per iteration with the running pointers advanced by immediates, and the
// remainder unrolled after the loop.
void jit_smm_avx512::k_loop() {
    mov(reg_a, reg_A);
    mov(reg_b, reg_B);
    if (d_.K <= kFullUnrollK) {
        for (int k = 0; k < d_.K; ++k) k_step(k);
        return;
    }
    const int iters = d_.K / kUnrollK, rest = d_.K % kUnrollK;
    const int64_t a_step = row_major_ ? kUnrollK * 4 : int64_t(kUnrollK) * d_.lda * 4;
    const int64_t b_step = int64_t(kUnrollK) * d_.ldb * 4;
    Label loop;
    mov(reg_k, iters);
    L(loop);
    for (int u = 0; u < kUnrollK; ++u) k_step(u);
    add(reg_a, int32_t(a_step));
    add(reg_b, int32_t(b_step));
    dec(reg_k);
    jnz(loop, T_NEAR);
    for (int u = 0; u < rest; ++u) k_step(u);
}

// C = alpha * acc (+ C | + beta * C), the contract's rounding order.
void jit_smm_avx512::store_c() {
    const Zmm z_alpha = Zmm(31), z_beta = Zmm(30), z_c = Zmm(29);  // free after the K loop
    if (!d_.alpha_one) vbroadcastss(z_alpha, ptr[rip + alpha_]);
    if (d_.beta == beta_kind::general) vbroadcastss(z_beta, ptr[rip + beta_]);
    for (int i = 0; i < m_; ++i) {
        for (int j = 0; j < nv_; ++j) {
            const Address c =
                ptr[reg_C + int32_t((int64_t(row0_ + i) * d_.ldc + col0_ + j * kLanes) * 4)];
            const Zmm a = acc(i, j);
            if (!d_.alpha_one) vmulps(a, a, z_alpha);
            if (d_.beta != beta_kind::zero) {
                if (tail_vec(j))
                    load_tail(*this, z_c, c, n_ % kLanes, k1);
                else
                    vmovups(z_c, c);
                if (d_.beta == beta_kind::one)
                    vaddps(a, a, z_c);
                else
                    vfmadd231ps(a, z_c, z_beta);  // a = C * beta + a, one rounding
            }
            if (tail_vec(j))
                store_tail(*this, c, a, n_ % kLanes, k1);
            else
                vmovups(c, a);
        }
    }
}

}  // namespace anvil::jit
