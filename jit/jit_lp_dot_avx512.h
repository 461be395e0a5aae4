// AVX-512 VNNI generator of the int8 dot kernel (lowp/lp_dot.h): B read in
// place as n rows of K bytes, specialised on m (1..4) and n (1..8).
//
// K is walked in 64-byte steps: each step loads one zmm of every A row and
// every B row and accumulates with vpdpbusd, so accumulator (i, j) holds
// 16 partial dot products (one per dword lane, 4 bytes each).  The K tail
// (K % 64 bytes) is one more step with zero-masked byte loads, which never
// touch (and so never fault on) a byte past the end of a row.  At the end
// the m * n accumulators are reduced in a shuffle tree, eight at a time,
// and stored with one masked store per row.
#pragma once
#include <string>

#include "jit/jit_generator.h"
#include "lowp/lp_dot.h"

namespace anvil::jit {

class jit_lp_dot_avx512 : public jit_generator {
public:
    static constexpr int kStepBytes = 64;        // K bytes per step: one zmm
    static constexpr int kUnroll = 2;            // steps per main-loop iteration
    static constexpr int kPrefetchBytes = 512;   // B prefetch distance along a row
    static constexpr int kSlots = 8;             // accumulators reduced together

    explicit jit_lp_dot_avx512(const lowp::lp_dot_desc &d);
    static std::string kernel_name(const lowp::lp_dot_desc &d);

private:
    // ---- register map
    // zmm: accumulators from zmm0 up, set-major then row-major (set s, row
    // i, column j); the m A vectors of the current step from zmm31 down;
    // below them two B vectors, alternating so that consecutive columns'
    // loads do not wait on each other's multiplies.  With two accumulator
    // sets (when they fit), the two steps of a main-loop iteration feed
    // different sets: twice as many independent vpdpbusd chains for small
    // tiles, whose single chain per (i, j) would otherwise be latency-bound.
    Xbyak::Zmm acc(int set, int i, int j) const { return Xbyak::Zmm((set * m_ + i) * n_ + j); }
    Xbyak::Zmm a_vec(int i) const { return Xbyak::Zmm(31 - i); }
    Xbyak::Zmm b_vec(int j) const { return Xbyak::Zmm(31 - m_ - j % 2); }
    // Scratch for the reduction (the A and B registers are free by then).
    Xbyak::Zmm tmp(int t) const { return Xbyak::Zmm(31 - t % (m_ + 2)); }

    // General registers (System V: the args pointer arrives in rdi and is
    // kept; only caller-saved registers are used).
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_a = rsi;      // A row 0 at the current step
    const Xbyak::Reg64 reg_ars = rdx;    // a_rs
    const Xbyak::Reg64 reg_ars3 = r8;    // 3 * a_rs (m == 4)
    const Xbyak::Reg64 reg_b = r9;       // B row 0 at the current step
    const Xbyak::Reg64 reg_brs = r10;    // b_rs
    const Xbyak::Reg64 reg_brs3 = r11;   // 3 * b_rs (n >= 4)
    const Xbyak::Reg64 reg_b4 = rax;     // B row 4 (n >= 6)
    const Xbyak::Reg64 reg_k = rcx;      // K bytes left; cl shifts the tail mask
    // After the K loop (the A registers are free then).
    const Xbyak::Reg64 reg_c = rsi;      // acc
    const Xbyak::Reg64 reg_ldc = rdx;    // acc_ld in bytes
    const Xbyak::Reg64 reg_ldc3 = r8;    // 3 * acc_ld in bytes (m == 4)
    const Xbyak::Opmask k_tail = k1;     // the K % 64 bytes of the last step
    const Xbyak::Opmask k_store = k2;    // the n columns of a row

    // Addresses: A(i, step + disp), B(j, step + disp); acc row i.
    Xbyak::RegExp a_at(int i, int disp) const;
    Xbyak::RegExp b_at(int j, int disp) const;
    Xbyak::RegExp c_row(int i) const;

    // ---- steps of the kernel, in order
    void load_args();                  // pointers, strides, K, the tail mask
    void zero_acc();
    void k_loop();
    // One 64-byte step at offset u * 64 into accumulator set `set`.
    // masked: the tail step (zero-masked loads under k_tail).
    void k_step(int u, int set, bool masked, bool prefetch);
    void advance(int bytes);
    void sum_sets();                   // set 1 into set 0
    void reduce_and_store();
    // Slot s (0..7) of a reduction group starting at row r0: which
    // accumulator it holds, or none (columns >= n, rows >= m).
    bool slot_valid(int r0, int s) const;
    Xbyak::Zmm slot_acc(int r0, int s) const;
    // Reduces the group's up to 8 accumulators; returns the register whose
    // dword s holds the full sum of slot s.
    Xbyak::Zmm reduce_group(int r0);
    void store_group(int r0, const Xbyak::Zmm &sums);

    int m_, n_;
    int sets_;           // accumulator sets, 1 or 2
    int rows_per_group_; // 2 when n <= 4 (two rows share the 8 slots), else 1
    int slot_cols_;      // slots per row in a group: 8 / rows_per_group_
};

}  // namespace anvil::jit
