#include "jit/jit_sgemm_avx512.h"
#include "jit/jit_tail_access.h"

#include <cstddef>
#include <vector>

namespace anvil::jit {

using namespace Xbyak;
using gemm::a_access;
using gemm::beta_kind;
using gemm::ukernel_args;

std::string jit_sgemm_avx512::kernel_name(const gemm::ukernel_desc &d) {
    static const char *betas[] = {"b0", "b1", "bx"};
    return "anvil_sgemm_avx512_m" + std::to_string(d.m) + "n" + std::to_string(d.n) +
           (d.a == a_access::row_major ? "_arow" : "_acol") + "_" + betas[int(d.beta)] +
           (d.alpha_one ? "" : "_alpha") + ((d.flags & gemm::kUkFlagKSegments) ? "_kseg" : "") +
           ((d.flags & gemm::kUkFlagRowTiles) ? "_tiles" : "") +
           ((d.flags & gemm::kUkFlagBias) ? "_bias" : "") +
           ((d.flags & gemm::kUkFlagNtStore) ? "_nt" : "") +
           (d.epi_ops ? "_epi" + std::to_string(d.epi_ops) : "");
}

std::string jit_sgemm_avx512::kernel_name(const gemm::small_gemm_desc &d) {
    static const char *betas[] = {"b0", "b1", "bx"};
    return "anvil_sgemm_small_avx512_M" + std::to_string(d.M) + "N" + std::to_string(d.N) +
           (d.a == a_access::row_major ? "_arow" : "_acol") + "_" + betas[int(d.beta)] +
           (d.alpha_one ? "" : "_alpha");
}

jit_sgemm_avx512::jit_sgemm_avx512(const gemm::ukernel_desc &d)
    : a_(d.a), beta_(d.beta), alpha_one_(d.alpha_one != 0), row_major_(d.a == a_access::row_major),
      k_segments_(row_major_ && (d.flags & gemm::kUkFlagKSegments) != 0),
      row_tiles_(row_major_ && (d.flags & gemm::kUkFlagRowTiles) != 0),
      bias_((d.flags & gemm::kUkFlagBias) != 0),
      epi_ops_(d.epi_ops),
      has_add_(gemm::uk_epi_op(d.epi_ops, 0) == gemm::kUkEpiAdd ||
               gemm::uk_epi_op(d.epi_ops, 1) == gemm::kUkEpiAdd) {
    nt_store_ = (d.flags & gemm::kUkFlagNtStore) != 0 && beta_ == beta_kind::zero;
    set_tile(d.m, d.n, 0, 0);
    std::vector<Reg64> saved{reg_b_pf};
    if (row_major_ && m_ > 10) saved.push_back(rbx);
    if (k_segments_) saved.insert(saved.end(), {reg_segs, reg_seg_a});
    preamble(saved);
    if (row_tiles_)
        tile_loop();
    else
        emit_tile();
    // No sfence after non-temporal stores: the driver fences once per
    // thread (cpu::store_fence).
    postamble();
}

jit_sgemm_avx512::jit_sgemm_avx512(const gemm::small_gemm_desc &d)
    : a_(d.a), beta_(d.beta), alpha_one_(d.alpha_one != 0), row_major_(d.a == a_access::row_major),
      whole_(true) {
    // Near-equal row tiles of at most kMaxM rows; columns in the widest
    // tiles the row height allows, the row's A staying in L1 across them.
    // One vector per row (N <= 16): up to kMaxMNarrow rows, so a 16 x 16
    // product runs as one tile of 16 independent accumulators instead of
    // two of 8, whose FMA chains (K long, 4 cycles each) bound them.
    const int max_rows = d.N <= kLanes ? kMaxMNarrow : kMaxM;
    const int row_tiles = (d.M + max_rows - 1) / max_rows;
    const bool four_bases = row_major_ && (d.M + row_tiles - 1) / row_tiles > 15;
    if (four_bases)
        preamble({rbx, reg_tmp, reg_b_pf, reg_a15});
    else
        preamble({rbx, reg_tmp, reg_b_pf});
    for (int t = 0; t < row_tiles; ++t) {
        const int h = d.M / row_tiles + (t < d.M % row_tiles ? 1 : 0);
        const int row0 = t * (d.M / row_tiles) + std::min(t, d.M % row_tiles);
        const int w_max = max_n(h);
        for (int col0 = 0; col0 < d.N; col0 += w_max) {
            set_tile(h, std::min(w_max, d.N - col0), row0, col0);
            emit_tile();
        }
    }
    postamble();
}

void jit_sgemm_avx512::set_tile(int m, int n, int row0, int col0) {
    m_ = m;
    n_ = n;
    nv_ = (n + kLanes - 1) / kLanes;
    row0_ = row0;
    col0_ = col0;
    // Broadcast registers rotate so consecutive rows' broadcasts are
    // independent; whatever the accumulators and B vectors leave, up to 4.
    n_bcast_ = std::min(4, 32 - m_ * nv_ - nv_);
}

void jit_sgemm_avx512::emit_tile() {
    load_args();
    zero_accumulators();
    if (k_segments_)
        segment_loop();
    else
        k_loop();
    store_c();
}

// args.m_tiles tiles (at least one) with the same B: tile t's A starts
// t * a_tile_rs elements and its C t * m rows further on.  Both, and the
// count, live in a small stack frame (every GPR is taken by the tile).
void jit_sgemm_avx512::tile_loop() {
    Label loop;
    sub(rsp, kTileFrame);
    mov(rax, ptr[reg_args + offsetof(ukernel_args, a)]);
    mov(ptr[rsp + kTileA], rax);
    mov(rax, ptr[reg_args + offsetof(ukernel_args, c)]);
    mov(ptr[rsp + kTileC], rax);
    mov(rax, ptr[reg_args + offsetof(ukernel_args, binary)]);
    mov(ptr[rsp + kTileBin], rax);
    mov(rax, ptr[reg_args + offsetof(ukernel_args, m_tiles)]);
    mov(reg_k, 1);
    cmp(rax, 1);
    cmovl(rax, reg_k);  // 0 (the default) or a bad count: one tile
    mov(ptr[rsp + kTilesLeft], rax);
    L(loop);
    emit_tile();
    mov(rax, ptr[reg_args + offsetof(ukernel_args, a_tile_rs)]);
    shl(rax, 2);
    add(ptr[rsp + kTileA], rax);
    mov(rax, ptr[reg_args + offsetof(ukernel_args, ldc)]);
    imul(rax, rax, m_ * 4);
    add(ptr[rsp + kTileC], rax);
    if (has_add_) {
        mov(rax, ptr[reg_args + offsetof(ukernel_args, binary_ld)]);
        imul(rax, rax, m_ * 4);
        add(ptr[rsp + kTileBin], rax);
    }
    dec(qword[rsp + kTilesLeft]);
    jnz(loop, T_NEAR);
    add(rsp, kTileFrame);
}

// Where the tile's A and C pointers come from: the args, or the row-tile
// frame.
Address jit_sgemm_avx512::a_source() {
    return row_tiles_ ? ptr[rsp + kTileA] : ptr[reg_args + offsetof(ukernel_args, a)];
}
Address jit_sgemm_avx512::c_source() {
    return row_tiles_ ? ptr[rsp + kTileC] : ptr[reg_args + offsetof(ukernel_args, c)];
}
Address jit_sgemm_avx512::bin_source() {
    return row_tiles_ ? ptr[rsp + kTileBin] : ptr[reg_args + offsetof(ukernel_args, binary)];
}

// args.k_segs K loops into the same accumulators (at least one); before
// each further one, A moves a_seg_rs on (the row base registers follow)
// and K restarts, while B and its prefetch stream continue, b_seg_skip
// rows further on.
void jit_sgemm_avx512::segment_loop() {
    Label seg_loop, done;
    mov(reg_segs, ptr[reg_args + offsetof(ukernel_args, k_segs)]);
    mov(reg_seg_a, 1);
    cmp(reg_segs, 1);
    cmovl(reg_segs, reg_seg_a);  // 0 (the default) or a bad count: one segment
    mov(reg_seg_a, reg_a);
    L(seg_loop);
    k_loop();
    dec(reg_segs);
    jz(done, T_NEAR);
    mov(reg_k, ptr[reg_args + offsetof(ukernel_args, a_seg_rs)]);
    shl(reg_k, 2);
    add(reg_seg_a, reg_k);
    mov(reg_a, reg_seg_a);
    set_row_bases();
    mov(reg_k, ptr[reg_args + offsetof(ukernel_args, b_seg_skip)]);
    imul(reg_k, reg_bld);
    add(reg_b, reg_k);
    add(reg_b_pf, reg_k);
    mov(reg_k, ptr[reg_args + offsetof(ukernel_args, k)]);
    jmp(seg_loop, T_NEAR);
    L(done);
}

Address jit_sgemm_avx512::a_addr(int i, int u) {
    if (!row_major_) {
        // A(i, k+u) = a + u*a_cs + i: column u of the panel, row i.
        const int disp = i * 4;
        switch (u) {
            case 0: return ptr[reg_a + disp];
            case 1: return ptr[reg_a + reg_astr + disp];
            case 2: return ptr[reg_a + reg_astr * 2 + disp];
            default: return ptr[reg_a + reg_astr3 + disp];
        }
    }
    // A(i, k+u) = row_base(i) + (i % 5) * a_rs + u: rows in groups of five
    // off three base registers, since x86 scales only reach 1, 2, 4 (and
    // reg_astr3 gives 3).
    const Reg64 base = i < 5 ? reg_a : i < 10 ? reg_a5 : i < 15 ? reg_a10 : reg_a15;
    const int disp = u * 4;
    switch (i % 5) {
        case 0: return ptr[base + disp];
        case 1: return ptr[base + reg_astr + disp];
        case 2: return ptr[base + reg_astr * 2 + disp];
        case 3: return ptr[base + reg_astr3 + disp];
        default: return ptr[base + reg_astr * 4 + disp];
    }
}

Address jit_sgemm_avx512::b_addr(int u, int j) {
    const int disp = j * kLanes * 4;
    switch (u) {
        case 0: return ptr[reg_b + disp];
        case 1: return ptr[reg_b + reg_bld + disp];
        case 2: return ptr[reg_b + reg_bld * 2 + disp];
        default: return ptr[reg_b + reg_bld3 + disp];
    }
}

// Loads the tile's pointers and strides from the args (plus the tile's
// offset, for whole-GEMM kernels: A row row0_, B and C column col0_).
Address jit_sgemm_avx512::b_pf_addr(int u, int j) {
    const int disp = j * kLanes * 4;
    switch (u) {
        case 0: return ptr[reg_b_pf + disp];
        case 1: return ptr[reg_b_pf + reg_bld + disp];
        case 2: return ptr[reg_b_pf + reg_bld * 2 + disp];
        default: return ptr[reg_b_pf + reg_bld3 + disp];
    }
}

void jit_sgemm_avx512::load_args() {
    // Touch the C tile first: its lines arrive while the K loop runs
    // (C is revisited once per K block and is usually out of L1 by then;
    // whole-GEMM kernels' C is small and hot, so they skip this).  Into L2,
    // not L1: the K loop streams a B panel nearly as large as L1 and
    // evicted prefetchw's lines before the stores (Zen 5, 1 thread,
    // in-process A/B: 1024x4096x512 +4%, 2048^3 +2%, others level).
    // Not when the call's whole K loop (k times its segments) is at most
    // kMaxKWithoutCTouch: the lines could not arrive much before the
    // stores, and the touches took load slots from a loop that short
    // (Intel Xeon VM, 1 thread, K = 64: planned 96x256x64 +4.4%,
    // 3136x256x64 +3%, 3136x64x64 +3.5% without them; MobileNet-v2's fp32
    // 1x1 layers over 16..32 channels +5..8%, but block2_expand, K = 16
    // with a 4.8 MiB output, -3.5%; the f32 stack 0.95-0.99 -> 0.98-1.00x
    // oneDNN.  Not measured on Zen 5.)
    if (!whole_) {
        Label no_touch;
        mov(reg_a5, ptr[reg_args + offsetof(ukernel_args, k)]);
        if (k_segments_) {
            Label one_segment;
            mov(reg_astr, ptr[reg_args + offsetof(ukernel_args, k_segs)]);
            test(reg_astr, reg_astr);  // 0: a plain call, one segment
            jz(one_segment);
            imul(reg_a5, reg_astr);
            L(one_segment);
        }
        cmp(reg_a5, kMaxKWithoutCTouch);
        jle(no_touch, T_NEAR);
        mov(reg_a5, c_source());
        mov(reg_astr, ptr[reg_args + offsetof(ukernel_args, ldc)]);
        shl(reg_astr, 2);
        for (int i = 0; i < m_; ++i) {
            for (int j = 0; j < nv_; ++j) prefetcht1(ptr[reg_a5 + j * kLanes * 4]);
            if (i + 1 < m_) add(reg_a5, reg_astr);
        }
        L(no_touch);
    }
    // Opmask for the last, partial vector of a row: loads of B and C and
    // stores of C never touch columns >= n.
    if (n_ % kLanes != 0) {
        mov(eax, (1u << (n_ % kLanes)) - 1);
        kmovw(k1, eax);
    }
    mov(reg_b, ptr[reg_args + offsetof(ukernel_args, b)]);
    if (col0_) add(reg_b, col0_ * 4);
    mov(reg_bld, ptr[reg_args + offsetof(ukernel_args, b_ld)]);
    shl(reg_bld, 2);
    lea(reg_bld3, ptr[reg_bld + reg_bld * 2]);
    // Prefetch stream: the caller's hint, else B itself a few rows ahead
    // (whole-GEMM kernels always use the latter).
    Label have_hint;
    if (row0_ == 0 && col0_ == 0 && !whole_) {
        mov(reg_b_pf, ptr[reg_args + offsetof(ukernel_args, b_next)]);
        test(reg_b_pf, reg_b_pf);
        jnz(have_hint);
    }
    lea(reg_b_pf, ptr[reg_b + reg_bld * kPrefetchRows]);
    L(have_hint);
    mov(reg_a, a_source());
    if (row0_) {
        // A(row0, 0): row0 rows down (row-major) or row0 floats across.
        if (row_major_) {
            mov(reg_tmp, ptr[reg_args + offsetof(ukernel_args, a_rs)]);
            add_offset(reg_a, reg_tmp, row0_ * 4, 0);
        } else {
            add(reg_a, row0_ * 4);
        }
    }
    mov(reg_astr, ptr[reg_args + (row_major_ ? offsetof(ukernel_args, a_rs)
                                             : offsetof(ukernel_args, a_cs))]);
    shl(reg_astr, 2);
    lea(reg_astr3, ptr[reg_astr + reg_astr * 2]);
    set_row_bases();
    mov(reg_k, ptr[reg_args + offsetof(ukernel_args, k)]);
}

// Row-major A: the bases of rows 5..9, 10..14 and (whole-GEMM tiles) 15..19 from reg_a.
void jit_sgemm_avx512::set_row_bases() {
    if (!row_major_ || m_ <= 5) return;
    lea(reg_a5, ptr[reg_a + reg_astr * 4]);
    add(reg_a5, reg_astr);
    if (m_ > 10) {
        lea(reg_a10, ptr[reg_a5 + reg_astr * 4]);
        add(reg_a10, reg_astr);
    }
    if (m_ > 15) {
        lea(reg_a15, ptr[reg_a10 + reg_astr * 4]);
        add(reg_a15, reg_astr);
    }
}

// base += rows * stride + bytes (stride in a register, rows and bytes
// constants; a no-op for a kernel's first tile).
void jit_sgemm_avx512::add_offset(const Xbyak::Reg64 &base, const Xbyak::Reg64 &stride, int rows,
                                  int bytes) {
    if (rows) {
        imul(reg_tmp, stride, rows);
        add(base, reg_tmp);
    }
    if (bytes) add(base, bytes);
}

void jit_sgemm_avx512::zero_accumulators() {
    for (int i = 0; i < m_; ++i)
        for (int j = 0; j < nv_; ++j) vpxord(acc(i, j), acc(i, j), acc(i, j));
}

// One k: load the B row's vectors, then for each row broadcast A(i,k) and
// FMA into the row's accumulators.  Two vectors per row: register broadcast
// (the embedded {1to16} form loads A twice and is 8-19% slower on Zen 5).
// One vector per row: the embedded form, which loads A once per FMA either
// way; on Zen 4 a broadcast into a register takes a vector-pipe slot, so
// the register form ran at 1.32 cycles per FMA there instead of 1.0
// (measured in L1; the 1x1 convolutions with 16 output channels).
void jit_sgemm_avx512::k_step(int u) {
    // B rows a few steps ahead: small-M calls stream B from memory, and the
    // software prefetch keeps more lines in flight than the hardware's.
    // (Whole-GEMM kernels work on operands that sit in L1: no prefetches.)
    if (!whole_)
        for (int j = 0; j < nv_; ++j) prefetcht0(b_pf_addr(u, j));
    for (int j = 0; j < nv_; ++j) {
        if (tail_vec(j))
            load_tail(*this, b_vec(j), b_addr(u, j), n_ % kLanes, k1);
        else
            vmovups(b_vec(j), b_addr(u, j));
    }
    for (int i = 0; i < m_; ++i) {
        if (nv_ == 1) {
            vfmadd231ps(acc(i, 0), b_vec(0), ptr_b[a_addr(i, u).getRegExp()]);
            continue;
        }
        vbroadcastss(bcast(i), a_addr(i, u));
        for (int j = 0; j < nv_; ++j) vfmadd231ps(acc(i, j), b_vec(j), bcast(i));
    }
}

void jit_sgemm_avx512::advance(int steps) {
    if (steps == kUnrollK) {
        lea(reg_b, ptr[reg_b + reg_bld * 4]);
        lea(reg_b_pf, ptr[reg_b_pf + reg_bld * 4]);
    } else {
        add(reg_b, reg_bld);
        add(reg_b_pf, reg_bld);
    }
    if (!row_major_) {
        if (steps == kUnrollK)
            lea(reg_a, ptr[reg_a + reg_astr * 4]);
        else
            add(reg_a, reg_astr);
        return;
    }
    add(reg_a, steps * 4);
    if (m_ > 5) add(reg_a5, steps * 4);
    if (m_ > 10) add(reg_a10, steps * 4);
    if (m_ > 15) add(reg_a15, steps * 4);
}

void jit_sgemm_avx512::k_loop() {
    Label loop4, tail, loop1, done;
    cmp(reg_k, kUnrollK);
    jl(tail, T_NEAR);
    L(loop4);
    for (int u = 0; u < kUnrollK; ++u) k_step(u);
    advance(kUnrollK);
    sub(reg_k, kUnrollK);
    cmp(reg_k, kUnrollK);
    jge(loop4, T_NEAR);
    L(tail);
    test(reg_k, reg_k);
    jz(done, T_NEAR);
    L(loop1);
    k_step(0);
    advance(1);
    dec(reg_k);
    jnz(loop1, T_NEAR);
    L(done);
}

// C = alpha*acc (+ C | + beta*C), per the contract's rounding order.
void jit_sgemm_avx512::store_c() {
    const Reg64 reg_c = reg_a5, reg_ldc = reg_astr;  // free once the K loop is done
    // The top registers are B vectors or broadcasts during the loop (the
    // accumulators sit below them; with the fused epilogue m * nv <= 24),
    // free now (store_rows: alpha, beta, a C temporary).
    const Zmm z_alpha = Zmm(31), z_beta = Zmm(30);
    mov(reg_c, c_source());
    mov(reg_ldc, ptr[reg_args + offsetof(ukernel_args, ldc)]);
    shl(reg_ldc, 2);
    add_offset(reg_c, reg_ldc, row0_, col0_ * 4);
    if (!alpha_one_) vbroadcastss(z_alpha, ptr[reg_args + offsetof(ukernel_args, alpha)]);
    if (beta_ == beta_kind::general)
        vbroadcastss(z_beta, ptr[reg_args + offsetof(ukernel_args, beta)]);
    load_epilogue_args();
    if (!nt_store_) {
        store_rows(false);
        return;
    }
    // Non-temporal stores need 64-byte aligned addresses: C and its row
    // stride are checked once per tile (reg_k is free after the K loop).
    Label plain, done;
    mov(reg_k, reg_c);
    or_(reg_k, reg_ldc);
    test(reg_k, 63);
    jnz(plain, T_NEAR);
    store_rows(true);
    jmp(done, T_NEAR);
    L(plain);
    store_rows(false);
    L(done);
}

// The tile's rows from reg_c on: alpha, beta, the fused epilogue, the
// store (nt: whole vectors by vmovntps, C known to be 64-byte aligned).
void jit_sgemm_avx512::store_rows(bool nt) {
    const Reg64 reg_c = reg_a5, reg_ldc = reg_astr;
    const Zmm z_alpha = Zmm(31), z_beta = Zmm(30), z_c = Zmm(29);
    for (int i = 0; i < m_; ++i) {
        for (int j = 0; j < nv_; ++j) {
            const Address c = ptr[reg_c + j * kLanes * 4];
            const Zmm a = acc(i, j);
            if (!alpha_one_) vmulps(a, a, z_alpha);
            if (beta_ != beta_kind::zero) {
                if (tail_vec(j))
                    load_tail(*this, z_c, c, n_ % kLanes, k1);
                else
                    vmovups(z_c, c);
                if (beta_ == beta_kind::one)
                    vaddps(a, a, z_c);
                else
                    vfmadd231ps(a, z_c, z_beta);  // a = C*beta + a, one rounding
            }
            epilogue(a, j);
            if (tail_vec(j))
                store_tail(*this, c, a, n_ % kLanes, k1);
            else if (nt)
                vmovntps(c, a);
            else
                vmovups(c, a);
        }
        if (i + 1 < m_) {
            add(reg_c, reg_ldc);
            if (has_add_) add(reg_epi_bin, reg_epi_bin_ld);
        }
    }
}

// The fused epilogue's pointers and constants (ukernel_args), in registers
// the K loop no longer needs.
void jit_sgemm_avx512::load_epilogue_args() {
    if (bias_) mov(reg_epi_bias, ptr[reg_args + offsetof(ukernel_args, bias)]);
    if (has_add_) {
        mov(reg_epi_bin, bin_source());
        mov(reg_epi_bin_ld, ptr[reg_args + offsetof(ukernel_args, binary_ld)]);
        shl(reg_epi_bin_ld, 2);
    }
    for (int t = 0; t < 2; ++t) {
        const uint8_t op = gemm::uk_epi_op(epi_ops_, t);
        if (op == gemm::kUkEpiRelu || op == gemm::kUkEpiLeaky) vxorps(z_epi_zero, z_epi_zero, z_epi_zero);
        if (op == gemm::kUkEpiLeaky || op == gemm::kUkEpiClip)
            vbroadcastss(z_epi_p1, ptr[reg_args + offsetof(ukernel_args, elt_alpha)]);
        if (op == gemm::kUkEpiClip)
            vbroadcastss(z_epi_p2, ptr[reg_args + offsetof(ukernel_args, elt_beta)]);
    }
}

// Vector j of a row: a += operand vector j at base (a masked load into a
// temporary for the tail, so nothing past column n is read).
void jit_sgemm_avx512::add_operand(const Zmm &a, const Reg64 &base, int j) {
    const Address src = ptr[base + j * kLanes * 4];
    if (tail_vec(j)) {
        load_tail(*this, z_epi_tmp, src, n_ % kLanes, k1);
        vaddps(a, a, z_epi_tmp);
    } else {
        vaddps(a, a, src);
    }
}

// vcmpps predicates (quiet: no exception flags matter, only the results).
constexpr uint8_t kCmpLtOq = 17, kCmpLeOq = 18, kCmpNgtUq = 26;

// bias, then the ops, on vector j of a row (the formulas of the Highway
// chain, hwy_postops.cc, so the bits match).
void jit_sgemm_avx512::epilogue(const Zmm &a, int j) {
    if (bias_) add_operand(a, reg_epi_bias, j);
    for (int t = 0; t < 2; ++t) {
        switch (gemm::uk_epi_op(epi_ops_, t)) {
            case gemm::kUkEpiRelu:  // a <= 0 -> +0; NaN fails the compare
                vcmpps(k2, a, z_epi_zero, kCmpLeOq);
                vxorps(a | k2, a, a);
                break;
            case gemm::kUkEpiLeaky:  // !(a > 0), NaN included: a * alpha
                vcmpps(k2, a, z_epi_zero, kCmpNgtUq);
                vmulps(a | k2, a, z_epi_p1);
                break;
            case gemm::kUkEpiClip:
                vcmpps(k2, a, z_epi_p1, kCmpLtOq);
                vmovaps(a | k2, z_epi_p1);
                vcmpps(k2, z_epi_p2, a, kCmpLtOq);
                vmovaps(a | k2, z_epi_p2);
                break;
            case gemm::kUkEpiAdd:
                add_operand(a, reg_epi_bin, j);
                break;
            default:
                break;
        }
    }
}

}  // namespace anvil::jit
