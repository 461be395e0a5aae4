// AVX-512 generator of the rowb kernels (lowp/lp_rowb.h): B read in place as
// K rows of n elements (row-major), specialised on the type (int8 with
// VNNI, bf16 with AVX512-BF16), m (1..4) and n (1..rowb_max_n(m, bf16)).
//
// K is walked in groups of 4 B rows.  For each 64-column block of a group
// the 4 rows are loaded (zero-masked loads for a partial last block, so no
// column >= n is touched) and their bytes interleaved into 4 zmm whose
// dwords hold B(k .. k+3, j): vpunpck{l,h}bw of rows (0, 1) and (2, 3),
// then vpunpck{l,h}wd of those.  The unpacks work inside 128-bit lanes, so
// interleaved vector q holds, at dword 4 * L + d, column 16 * L + 4 * q + d
// of the block (L: 128-bit lane).  vpdpbusd accumulates A(i, k .. k+3)
// (one broadcast dword, u8: the first source) times each of them.  The
// accumulators keep that permuted column order through the K loop; a 4 x 4
// transpose of 128-bit lanes (8 vshufi32x4) puts it right before the
// stores (with desc.add, int8, each stored vector is first added to what
// acc holds).  A last group of 1..3 rows (K % 4) uses zero vectors for the
// missing rows: no row >= K is read.
//
// bf16 is the same walk with groups of 2 rows and 32-column blocks (the
// same 64 bytes): vpunpck{l,h}wd of the two rows give dwords
// (B(k, c), B(k+1, c)), vector q holding column 8 * L + 4 * q + d at dword
// 4 * L + d, for vdpbf16ps with the broadcast A(i, k .. k+1); before the
// stores a lane shuffle per output vector restores the column order.
#pragma once
#include <string>

#include "jit/jit_generator.h"
#include "lowp/lp_rowb.h"

namespace anvil::jit {

class jit_lp_rowb_avx512 : public jit_generator {
public:
    static constexpr int kBlockBytes = 64;     // B bytes per row and block: one zmm
    static constexpr int kPrefetchRows = 64;        // bf16: B prefetch distance (rows)
    static constexpr int kRowPrefetchBytes = 256;   // int8: B prefetch distance (bytes of a row)

    explicit jit_lp_rowb_avx512(const lowp::lp_rowb_desc &d);
    static std::string kernel_name(const lowp::lp_rowb_desc &d);

private:
    // ---- register map
    // zmm: accumulators from zmm0 up, (row i, block v, interleaved vector
    // q) at (i * nv + v) * 4 + q; the m A broadcasts from zmm31 down; below
    // them the 5 registers of one block's B rows and interleaving (reused
    // block after block: renaming removes the false dependencies).
    // More than 4 rows (bf16, one block): accumulators zmm0..2m-1, B in
    // zmm24..27, four A broadcasts in zmm28..31 used in turn.
    Xbyak::Zmm acc(int i, int v, int q) const { return Xbyak::Zmm((i * nv_ + v) * vpb_ + q); }
    Xbyak::Zmm a_vec(int i) const { return Xbyak::Zmm(31 - (many_rows() ? i % 4 : i)); }
    Xbyak::Zmm b_reg(int t) const {  // t in 0..4 (bf16 0..3)
        return Xbyak::Zmm((many_rows() ? 27 : 31 - m_) - t);
    }
    bool many_rows() const { return m_ > 4; }
    // Scratch for the final transpose (the A and B registers are free by then).
    Xbyak::Zmm tmp(int t) const { return Xbyak::Zmm(31 - t); }

    // General registers (System V: the args pointer arrives in rdi and is
    // kept; only caller-saved registers are used).
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_a = rsi;      // A(0, k) of the current group
    const Xbyak::Reg64 reg_ars = rdx;    // a_rs
    const Xbyak::Reg64 reg_ars3 = r8;    // 3 * a_rs (m == 4)
    const Xbyak::Reg64 reg_b = r9;       // B(k, 0) of the current group
    const Xbyak::Reg64 reg_brs = r10;    // b_rs
    const Xbyak::Reg64 reg_brs3 = r11;   // 3 * b_rs
    const Xbyak::Reg64 reg_pf = rax;     // bf16: B(k + kPrefetchRows, 0)
    const Xbyak::Reg64 reg_k = rcx;      // full groups left, then K % 4
    // More than 4 rows: A rows 4..7 and 8..11 (callee-saved, pushed).
    const Xbyak::Reg64 reg_a4 = r12;
    const Xbyak::Reg64 reg_a8 = r13;
    // After the K loop.
    const Xbyak::Reg64 reg_c = rsi;      // acc
    const Xbyak::Reg64 reg_ldc = rdx;    // acc_ld in bytes
    const Xbyak::Reg64 reg_ldc3 = r8;    // 3 * acc_ld in bytes (m == 4)
    const Xbyak::Opmask k_cols = k1;     // the columns of a partial last block
    const Xbyak::Opmask k_store = k2;    // the columns of a partial last store

    // Addresses: A(i, k), B(k + r, v * 64 + disp) off base, acc row i.
    Xbyak::RegExp a_at(int i) const;
    Xbyak::RegExp b_at(const Xbyak::Reg64 &base, int r, int disp) const;
    Xbyak::RegExp c_row(int i) const;

    // Columns of block v (block_w_ but for the last), and how many
    // interleaved vectors it needs: int8 vector q covers columns 4q .. 4q+3
    // of every lane, so a block of <= 16 columns needs only ceil(cols / 4);
    // bf16 vector 1 starts at column 4.
    int block_cols(int v) const { return v + 1 < nv_ ? block_w_ : n_ - v * block_w_; }
    int block_vecs(int v) const {
        if (bf16_) return block_cols(v) > 4 ? 2 : 1;
        return block_cols(v) > 16 ? 4 : (block_cols(v) + 3) / 4;
    }

    // ---- steps of the kernel, in order
    void load_args();          // pointers, strides, group count, column mask
    void zero_acc();
    void k_loop();
    // One group of `rows` (1..4) B rows; full groups prefetch ahead.
    void group(int rows, bool prefetch);
    void prefetch_group();
    // Loads rows 0..rows-1 of block v (zeros for the others) and leaves
    // the interleaved vectors in out[0..block_vecs(v)-1].
    void load_interleave(int v, int rows, Xbyak::Zmm out[4]);
    void advance();
    void unpermute_and_store();
    void store_block(int i, int v);
    void store_block_bf16(int i, int v);
    void store_outputs(int i, int v, const Xbyak::Zmm *out, int outs);

    int m_, n_;
    bool bf16_;
    bool add_;     // int8: add the tile to acc instead of overwriting it
    int eb_;       // bytes per element: 1 (int8), 2 (bf16)
    int group_;    // B rows per dot-product step: 4 (int8), 2 (bf16)
    int block_w_;  // columns per block: 64 (int8), 32 (bf16)
    int vpb_;      // accumulators per row and block: 4 (int8), 2 (bf16)
    int nv_;       // blocks: ceil(n / block_w_)
};

}  // namespace anvil::jit
