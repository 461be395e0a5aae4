#include "jit/jit_lp_generator.h"

#include <cstddef>

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_ukernel_args;

void jit_lp_generator::generate(int max_rows, bool k_segments) {
    k_segments_ = k_segments;
    const int m = d_.m;
    const int chunks = (m + max_rows - 1) / max_rows;
    const int base = m / chunks, extra = m % chunks;  // the first `extra` chunks get a row more
    const bool uses_rbx = base + (extra ? 1 : 0) > 10;
    // Fused-epilogue kernels loop over args.m_tiles row tiles (their tile
    // never leaves the registers, so one chunk covers it).
    row_loop_ = d_.epi_out != lowp::EPI_NONE && chunks == 1;
    std::vector<Reg64> saved{reg_b_pf};
    if (uses_rbx) saved.push_back(reg_a10);
    if (row_loop_) saved.insert(saved.end(), {reg_tiles, reg_tile_a, reg_tile_row});
    preamble(saved);
    if (k_segments_) sub(rsp, 8);  // the segment countdown
    Label tile_loop;
    if (row_loop_) {
        mov(reg_tiles, ptr[reg_args + offsetof(lp_ukernel_args, m_tiles)]);
        mov(reg_tile_a, ptr[reg_args + offsetof(lp_ukernel_args, a)]);
        xor_(reg_tile_row, reg_tile_row);
        mov(eax, 1);
        cmp(reg_tiles, 1);
        cmovl(reg_tiles, rax);  // 0 (the default) or a bad count: one tile
        L(tile_loop);
    }
    for (int t = 0; t < chunks; ++t) {
        rows_ = base + (t < extra ? 1 : 0);
        row0_ = t * base + (t < extra ? t : extra);
        // One chunk: the caller's hint for the next call's B when given,
        // else B itself a few groups ahead.  Several chunks: the first
        // brings B in (later chunks find it in cache, so the middle ones
        // prefetch nothing) and the last one takes the hint.
        if (chunks == 1 || t == chunks - 1)
            pf_ = prefetch::next_or_own_b;
        else
            pf_ = t == 0 ? prefetch::own_b_ahead : prefetch::none;
        emit_chunk();
    }
    if (row_loop_) {
        add(reg_tile_a, ptr[reg_args + offsetof(lp_ukernel_args, a_tile_rs)]);
        add(reg_tile_row, m);
        dec(reg_tiles);
        jnz(tile_loop, T_NEAR);
    }
    if (k_segments_) add(rsp, 8);
    // No sfence after non-temporal stores: the driver fences once per
    // thread (cpu::store_fence).
    postamble();
}

void jit_lp_generator::emit_chunk() {
    // The accumulators are loaded before the A/B registers are set up: the
    // acc pointers borrow two of them.
    if (d_.accumulate) load_acc_ptr();
    init_acc();
    prefetch_epilogue();
    load_args();
    k_loop();
    load_acc_ptr();
    store_acc();
}

void jit_lp_generator::load_acc_ptr() {
    mov(reg_c, ptr[reg_args + offsetof(lp_ukernel_args, acc)]);
    mov(reg_ldc, ptr[reg_args + offsetof(lp_ukernel_args, acc_ld)]);
    shl(reg_ldc, 2);  // fp32 and int32 elements are both 4 bytes
    if (row0_) {
        imul(reg_a, reg_ldc, row0_);  // reg_a is free outside the K loop
        add(reg_c, reg_a);
    }
    if (row_loop_) {
        mov(reg_a, reg_tile_row);
        imul(reg_a, reg_ldc);
        add(reg_c, reg_a);
    }
}

void jit_lp_generator::load_args() {
    mov(reg_b, ptr[reg_args + offsetof(lp_ukernel_args, b)]);
    mov(reg_bld, ptr[reg_args + offsetof(lp_ukernel_args, b_ld)]);
    lea(reg_bld3, ptr[reg_bld + reg_bld * 2]);
    if (pf_ != prefetch::none) {
        Label have_hint;
        if (pf_ == prefetch::next_or_own_b) {
            mov(reg_b_pf, ptr[reg_args + offsetof(lp_ukernel_args, b_next)]);
            test(reg_b_pf, reg_b_pf);
            jnz(have_hint);
        }
        // kPrefetchGroups is a power of two no larger than 8 (an x86 scale).
        static_assert(kPrefetchGroups == 8, "prefetch distance is a lea scale");
        lea(reg_b_pf, ptr[reg_b + reg_bld * kPrefetchGroups]);
        L(have_hint);
    }
    // A rows of the chunk: five off each base register, since x86 scales
    // only reach 1, 2, 4 (and reg_astr3 gives 3).  Only addresses are
    // formed here; rows >= m are never dereferenced.
    if (row_loop_)
        mov(reg_a, reg_tile_a);
    else
        mov(reg_a, ptr[reg_args + offsetof(lp_ukernel_args, a)]);
    mov(reg_astr, ptr[reg_args + offsetof(lp_ukernel_args, a_rs)]);
    if (row0_) {
        imul(reg_a5, reg_astr, row0_);
        add(reg_a, reg_a5);
    }
    lea(reg_astr3, ptr[reg_astr + reg_astr * 2]);
    if (rows_ > 5) {
        lea(reg_a5, ptr[reg_a + reg_astr * 4]);
        add(reg_a5, reg_astr);
    }
    if (rows_ > 10) {
        lea(reg_a10, ptr[reg_a5 + reg_astr * 4]);
        add(reg_a10, reg_astr);
    }
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
}

RegExp jit_lp_generator::a_at(int i, int u) const {
    const Reg64 &base = i < 5 ? reg_a : (i < 10 ? reg_a5 : reg_a10);
    const int disp = u * a_group_bytes();
    switch (i % 5) {
        case 0: return base + disp;
        case 1: return base + reg_astr + disp;
        case 2: return base + reg_astr * 2 + disp;
        case 3: return base + reg_astr3 + disp;
        default: return base + reg_astr * 4 + disp;
    }
}

RegExp jit_lp_generator::b_at(int u, int bytes) const {
    switch (u) {
        case 0: return reg_b + bytes;
        case 1: return reg_b + reg_bld + bytes;
        case 2: return reg_b + reg_bld * 2 + bytes;
        default: return reg_b + reg_bld3 + bytes;
    }
}

void jit_lp_generator::prefetch_b(int u) {
    if (pf_ == prefetch::none) return;
    // A k-group of the panel is nv * 16 dwords: nv cache lines.
    for (int line = 0; line < d_.nv; ++line) {
        const int disp = line * kLineBytes;
        switch (u) {
            case 0: prefetcht0(ptr[reg_b_pf + disp]); break;
            case 1: prefetcht0(ptr[reg_b_pf + reg_bld + disp]); break;
            case 2: prefetcht0(ptr[reg_b_pf + reg_bld * 2 + disp]); break;
            default: prefetcht0(ptr[reg_b_pf + reg_bld3 + disp]); break;
        }
    }
}

void jit_lp_generator::advance(int groups) {
    if (groups == kUnrollK) {
        lea(reg_b, ptr[reg_b + reg_bld * kUnrollK]);
        if (pf_ != prefetch::none) lea(reg_b_pf, ptr[reg_b_pf + reg_bld * kUnrollK]);
    } else {
        add(reg_b, reg_bld);
        if (pf_ != prefetch::none) add(reg_b_pf, reg_bld);
    }
    const int bytes = groups * a_group_bytes();
    add(reg_a, bytes);
    if (rows_ > 5) add(reg_a5, bytes);
    if (rows_ > 10) add(reg_a10, bytes);
}

void jit_lp_generator::k_loop() {
    if (!k_segments_) {
        k_segment();
        return;
    }
    // Segments: the K loop once per segment.  It leaves the A registers
    // kg groups past the segment's start, so the next segment is
    // a_seg_rs - a_group_bytes() * kg bytes on; B (and its prefetch
    // stream) goes on, b_seg_skip groups further.
    Label one, seg_loop, segs_done;
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, k_segs)]);
    cmp(reg_kg, 1);
    jge(one);
    mov(reg_kg, 1);  // 0 (the default) or a bad count: one segment
    L(one);
    mov(ptr[rsp], reg_kg);
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
    L(seg_loop);
    k_segment();
    dec(qword[rsp]);
    jz(segs_done, T_NEAR);
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
    shl(reg_kg, d_.a_f32 ? 3 : 2);
    neg(reg_kg);
    add(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, a_seg_rs)]);
    add(reg_a, reg_kg);
    if (rows_ > 5) add(reg_a5, reg_kg);
    if (rows_ > 10) add(reg_a10, reg_kg);
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, b_seg_skip)]);
    imul(reg_kg, reg_bld);
    add(reg_b, reg_kg);
    if (pf_ != prefetch::none) add(reg_b_pf, reg_kg);
    mov(reg_kg, ptr[reg_args + offsetof(lp_ukernel_args, kg)]);
    jmp(seg_loop, T_NEAR);
    L(segs_done);
}

void jit_lp_generator::k_group_tail(int) { XBYAK_THROW(ERR_INTERNAL) }

void jit_lp_generator::k_segment() {
    if (!d_.k_tail) {
        k_groups();
        return;
    }
    // kg - 1 whole groups (none for kg = 1), then the partial one; A and B
    // end up kg groups on, as without a tail.
    dec(reg_kg);
    k_groups();
    k_group_tail(0);
    advance(1);
}

void jit_lp_generator::k_groups() {
    static_assert(kUnrollK == 4, "b_at / prefetch_b address four groups per iteration");
    Label loop4, tail, loop1, done;
    cmp(reg_kg, kUnrollK);
    jl(tail, T_NEAR);
    L(loop4);
    for (int u = 0; u < kUnrollK; ++u) k_group(u);
    advance(kUnrollK);
    sub(reg_kg, kUnrollK);
    cmp(reg_kg, kUnrollK);
    jge(loop4, T_NEAR);
    L(tail);
    test(reg_kg, reg_kg);
    jle(done, T_NEAR);  // kg >= 1 by contract; a bad count must not spin
    L(loop1);
    k_group(0);
    advance(1);
    dec(reg_kg);
    jnz(loop1, T_NEAR);
    L(done);
}

}  // namespace anvil::jit
