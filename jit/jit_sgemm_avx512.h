// AVX-512 fp32 GEMM micro-kernel generator (the ukernel contract of
// src/gemm/ukernel.h), specialised on m, n, A addressing, beta and alpha==1.
#pragma once
#include "gemm/ukernel.h"
#include "jit/jit_generator.h"

namespace anvil::jit {

class jit_sgemm_avx512 : public jit_generator {
public:
    static constexpr int kMaxM = 12;   // rows: 12 x 2 accumulators + 2 B + broadcasts = 32 zmm
    static constexpr int kMaxN = 32;   // packed panel width: 2 zmm of 16 lanes
    // Whole-GEMM kernels with N <= 16 (one vector per row): tiles of up to
    // 20 rows (20 accumulators + B + broadcasts; A rows off four bases).
    static constexpr int kMaxMNarrow = 20;
    // Widest tile of height m: m*nv accumulators + nv B vectors + at least
    // one broadcast register must fit the 32 zmm; at most 8 vectors.
    static constexpr int max_n(int m) {
        const int nv = 31 / (m + 1);
        return kLanes * (nv < 8 ? nv : 8);
    }
    static constexpr int kLanes = 16;
    static constexpr int kUnrollK = 4;

    // One m x n tile (the micro-kernel).
    explicit jit_sgemm_avx512(const gemm::ukernel_desc &d);
    // A whole small GEMM: the same tile code, emitted once per tile.
    explicit jit_sgemm_avx512(const gemm::small_gemm_desc &d);
    static std::string kernel_name(const gemm::ukernel_desc &d);
    static std::string kernel_name(const gemm::small_gemm_desc &d);

private:
    // Register map.
    Xbyak::Zmm acc(int i, int j) const { return Xbyak::Zmm(i * nv_ + j); }
    Xbyak::Zmm b_vec(int j) const { return Xbyak::Zmm(31 - j); }
    Xbyak::Zmm bcast(int i) const { return Xbyak::Zmm(31 - nv_ - (i % n_bcast_)); }
    bool tail_vec(int j) const { return j == nv_ - 1 && n_ % kLanes != 0; }

    // Addresses of A(i, k + u) and of vector j of B(k + u, .).
    Xbyak::Address a_addr(int i, int u);
    Xbyak::Address b_addr(int u, int j);
    Xbyak::Address b_pf_addr(int u, int j);  // B(k + u + kPrefetchRows, .)

    // Emit steps.  set_tile() selects the tile (shape and offset into the
    // caller's A, B, C) that the following steps emit code for.
    void set_tile(int m, int n, int row0, int col0);
    void emit_tile();
    void load_args();
    void add_offset(const Xbyak::Reg64 &base, const Xbyak::Reg64 &stride, int rows, int bytes);
    void zero_accumulators();
    void k_step(int u);
    void advance(int steps);
    void set_row_bases();
    void k_loop();
    void segment_loop();
    void tile_loop();
    Xbyak::Address a_source();
    Xbyak::Address c_source();
    Xbyak::Address bin_source();
    void load_epilogue_args();
    void add_operand(const Xbyak::Zmm &a, const Xbyak::Reg64 &base, int j);
    void epilogue(const Xbyak::Zmm &a, int j);
    void store_c();
    void store_rows(bool nt);

    gemm::a_access a_;
    gemm::beta_kind beta_;
    bool alpha_one_;
    int m_ = 0, n_ = 0, nv_ = 0, n_bcast_ = 0;
    int row0_ = 0, col0_ = 0;  // tile offset (whole-GEMM kernels)
    bool row_major_;
    bool k_segments_ = false;  // args.k_segs K loops per call (kUkFlagKSegments)
    bool row_tiles_ = false;   // args.m_tiles tiles per call (kUkFlagRowTiles)
    bool bias_ = false;        // the fused epilogue adds args.bias (kUkFlagBias)
    uint8_t epi_ops_ = 0;      // its ops (ukernel_desc::epi_ops)
    bool has_add_ = false;     // one of them is the residual add
    bool nt_store_ = false;    // whole vectors of C stored non-temporally (kUkFlagNtStore)
    bool whole_ = false;       // a whole-GEMM kernel (several tiles)

    // GPR map (System V: the args pointer arrives in rdi).
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_b = rsi;
    const Xbyak::Reg64 reg_bld = rdx;    // B row stride, bytes
    const Xbyak::Reg64 reg_bld3 = rcx;   // 3 * reg_bld
    const Xbyak::Reg64 reg_k = r8;       // K steps left
    const Xbyak::Reg64 reg_a = r9;       // A: k-walking pointer, or rows 0..4 base
    const Xbyak::Reg64 reg_astr = r10;   // A stride in bytes: a_cs (k_strided) or a_rs (row_major)
    const Xbyak::Reg64 reg_astr3 = r11;  // 3 * reg_astr
    const Xbyak::Reg64 reg_a5 = rax;     // row_major: rows 5..9 base
    const Xbyak::Reg64 reg_a10 = rbx;    // row_major: rows 10..11 base (callee-saved)
    const Xbyak::Reg64 reg_tmp = r12;    // offset arithmetic (callee-saved)
    const Xbyak::Reg64 reg_b_pf = r13;   // B, kPrefetchRows rows ahead (callee-saved)
    const Xbyak::Reg64 reg_segs = r14;   // K segments left (callee-saved)
    const Xbyak::Reg64 reg_a15 = r14;    // row_major whole-GEMM tiles: rows 15..19 base
    const Xbyak::Reg64 reg_seg_a = r15;  // A of the current segment (callee-saved)
    static constexpr int kPrefetchRows = 8;
    // Calls whose K loop is this short skip the C touch (load_args).
    static constexpr int kMaxKWithoutCTouch = 64;
    // The row-tile frame (tile_loop): the tile's A and C, tiles left.
    static constexpr int kTileA = 0, kTileC = 8, kTileBin = 16, kTilesLeft = 24, kTileFrame = 32;
    // The fused epilogue's registers, free after the K loop: pointers in
    // what held B and its strides, constants in the top zmm below those
    // store_c takes (alpha, beta, a C temporary).
    const Xbyak::Reg64 reg_epi_bias = rsi;
    const Xbyak::Reg64 reg_epi_bin = rdx;
    const Xbyak::Reg64 reg_epi_bin_ld = rcx;  // bytes
    const Xbyak::Zmm z_epi_zero = Xbyak::Zmm(28);
    const Xbyak::Zmm z_epi_p1 = Xbyak::Zmm(27);
    const Xbyak::Zmm z_epi_p2 = Xbyak::Zmm(26);
    const Xbyak::Zmm z_epi_tmp = Xbyak::Zmm(25);
};

}  // namespace anvil::jit
