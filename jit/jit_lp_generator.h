// Shared skeleton of the low-precision micro-kernel generators (the contract
// of src/lowp/lp_ukernel.h): the general-register map, argument loading, A
// and B addressing, B prefetching and the K loop over k-groups.  Subclasses
// (jit_lp_avx512, jit_lp_avx2_vnni) supply the vector code: their register
// map, the accumulator init, one k-group's multiply-accumulate and the store.
//
// A kernel covers rows 0..m-1 in one or more row chunks (a register file
// too small for the whole tile is reused chunk by chunk); each chunk is a
// complete pass: init, K loop, store.
#pragma once
#include <string>
#include <vector>

#include "jit/jit_generator.h"
#include "lowp/lp_ukernel.h"

namespace anvil::jit {

class jit_lp_generator : public jit_generator {
public:
    static constexpr int kUnrollK = 4;          // k-groups per main-loop iteration
    static constexpr int kPrefetchGroups = 8;   // own-B prefetch distance, in k-groups
    static constexpr int kLineBytes = 64;       // one prefetch per cache line
    // K loops shorter than this (k-groups) skip the destination prefetch:
    // 64 groups of a 12-row tile are ~800 cycles, a miss to memory.
    static constexpr int kDstPrefetchMinGroups = 64;

protected:
    explicit jit_lp_generator(const lowp::lp_ukernel_desc &d) : d_(d) {}

    // Emits the kernel: rows 0..m-1 in near-equal chunks of at most max_rows.
    // Called by the subclass constructor (the hooks below are virtual).
    void generate(int max_rows, bool k_segments = false);

    // Vector code for the current chunk (rows row0_ .. row0_ + rows_ - 1).
    virtual void init_acc() = 0;     // zero, or load from acc via reg_c / reg_ldc
    virtual void k_group(int u) = 0; // multiply-accumulate k-group g + u
    // k-group g + u as the last of a segment with desc.k_tail valid
    // elements (generators that accept k_tail != 0 only).
    virtual void k_group_tail(int u);
    virtual void store_acc() = 0;    // write the chunk's tile via reg_c / reg_ldc
    // Called before the chunk's K loop with the A / B / K-loop registers
    // (r8, r9, r11) free: lets a fused epilogue bring its operands in.
    virtual void prefetch_epilogue() {}

    // Addresses, for k-group g + u of the current K-loop position:
    // A(row0_ + i, g + u), and B(g + u, .) + bytes.
    Xbyak::RegExp a_at(int i, int u) const;
    // Bytes of A per k-group: a dword, or two fp32 when A comes widened.
    int a_group_bytes() const { return d_.a_f32 ? 2 * 4 : lowp::kGroupBytes; }
    Xbyak::RegExp b_at(int u, int bytes) const;
    // prefetcht0 of the chunk's prefetch stream for k-group g + u (nv lines).
    void prefetch_b(int u);
    // reg_c = &acc(row0_, 0); reg_ldc = acc row stride in bytes.
    void load_acc_ptr();

    lowp::lp_ukernel_desc d_;
    int rows_ = 0, row0_ = 0;  // the current chunk

    // GPR map (System V: the args pointer arrives in rdi).
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_b = rsi;
    const Xbyak::Reg64 reg_bld = rdx;    // B k-group stride, bytes
    const Xbyak::Reg64 reg_bld3 = rcx;   // 3 * reg_bld
    const Xbyak::Reg64 reg_kg = r8;      // k-groups left
    const Xbyak::Reg64 reg_a = r9;       // A rows 0..4 of the chunk, at group g
    const Xbyak::Reg64 reg_astr = r10;   // a_rs, bytes
    const Xbyak::Reg64 reg_astr3 = r11;  // 3 * a_rs
    const Xbyak::Reg64 reg_a5 = rax;     // A rows 5..9
    const Xbyak::Reg64 reg_a10 = rbx;    // A rows 10..11 (callee-saved)
    const Xbyak::Reg64 reg_b_pf = r13;   // prefetch stream (callee-saved)
    // Outside the K loop only: the A registers are free there.
    const Xbyak::Reg64 reg_c = rax;      // acc row pointer
    const Xbyak::Reg64 reg_ldc = r10;    // acc_ld in bytes
    // The row-tile loop (row_loop_; callee-saved): tiles left, the current
    // tile's A and its first row (m * tile index).
    const Xbyak::Reg64 reg_tiles = r12;
    const Xbyak::Reg64 reg_tile_a = r14;
    const Xbyak::Reg64 reg_tile_row = r15;
    bool row_loop_ = false;  // the kernel walks args.m_tiles row tiles
    // The kernel reduces over args.k_segs K segments; their countdown
    // lives in the stack slot [rsp] (no general register is left).
    bool k_segments_ = false;

private:
    // Which lines a chunk prefetches while it walks B.
    enum class prefetch { none, own_b_ahead, next_or_own_b };

    void emit_chunk();
    void load_args();
    void advance(int groups);
    void k_loop();     // over the K segments (k_segments_), each a k_segment()
    void k_segment();  // reg_kg k-groups, the last by k_group_tail when desc.k_tail
    void k_groups();   // reg_kg k-groups from reg_a / reg_b on

    prefetch pf_ = prefetch::none;
};

}  // namespace anvil::jit
