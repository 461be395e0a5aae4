// AVX-512 generator of direct small-GEMM kernels (gemm::direct_gemm_desc):
// a whole C = alpha op(A) B + beta C of M, N <= 64 in one call taking only
// the three operand pointers, with K, the leading dimensions and alpha /
// beta compiled in -- the kernels anvil_smm_* hands out, LIBXSMM-style.
//
// The arithmetic is that of the whole-GEMM kernels of jit_sgemm_avx512
// (every element one fma chain over k from zero, then alpha, then beta), so
// the result is bitwise the same.  What the constants buy: every address
// is a base register plus an immediate (no stride registers, no row-base
// registers, nothing read from an argument block), so a tile's first FMA
// depends on nothing but the pointers that arrive in registers, no
// callee-saved register is used, and the tiles can be wider (one column
// tile of up to 4 vectors, rows up to what the registers hold).
#pragma once
#include <string>

#include "gemm/ukernel.h"
#include "jit/jit_generator.h"

namespace anvil::jit {

class jit_smm_avx512 : public jit_generator {
public:
    static constexpr int kLanes = 16;
    // K steps per loop iteration; K up to kFullUnrollK is unrolled whole.
    static constexpr int kUnrollK = 4;
    static constexpr int kFullUnrollK = 8;

    explicit jit_smm_avx512(const gemm::direct_gemm_desc &d);
    static std::string kernel_name(const gemm::direct_gemm_desc &d);
    // Whether every immediate displacement the kernel of d needs fits in
    // 32 bits (leading dimensions up to millions of floats do).
    static bool displacements_fit(const gemm::direct_gemm_desc &d);

private:
    // Register map: accumulators from zmm0 up, the tile's B vectors from
    // zmm31 down, then up to four rotating A broadcasts.
    Xbyak::Zmm acc(int i, int j) const { return Xbyak::Zmm(i * nv_ + j); }
    Xbyak::Zmm b_vec(int j) const { return Xbyak::Zmm(31 - j); }
    Xbyak::Zmm bcast(int i) const { return Xbyak::Zmm(31 - nv_ - (i % n_bcast_)); }
    bool tail_vec(int j) const { return j == nv_ - 1 && n_ % kLanes != 0; }

    // Emit steps of one tile.
    void set_tile(int m, int n, int row0, int col0);
    void emit_tile();
    void k_step(int k);  // k: the step's offset from the running A / B pointers
    void k_loop();
    void store_c();

    // A(row0 + i, k) and vector j of B(k, col0 + .) off the running
    // pointers reg_a / reg_b.
    Xbyak::Address a_addr(int i, int k) const;
    Xbyak::Address b_addr(int k, int j) const;

    const gemm::direct_gemm_desc d_;
    const bool row_major_;
    int m_ = 0, n_ = 0, nv_ = 0, n_bcast_ = 0, row0_ = 0, col0_ = 0;
    Xbyak::Label alpha_, beta_;  // broadcast constants after the code

    // Arguments (System V): A, B, C.  The running pointers of the K loop
    // and its counter are caller-saved scratch registers.
    const Xbyak::Reg64 reg_A = rdi, reg_B = rsi, reg_C = rdx;
    const Xbyak::Reg64 reg_a = rax, reg_b = rcx, reg_k = r8;
};

}  // namespace anvil::jit
