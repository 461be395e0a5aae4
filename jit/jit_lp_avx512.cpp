#include "jit/jit_lp_avx512.h"

#include <algorithm>
#include <optional>

#include "jit/jit_eltwise_exact.h"
#include "jit/jit_store_convert.h"

namespace anvil::jit {

using namespace Xbyak;
using lowp::lp_kind;

std::string jit_lp_avx512::kernel_name(const lowp::lp_ukernel_desc &d) {
    static const char *const outs[] = {"", "f32", "bf16", "u8", "s8", "s32"};
    std::string name = std::string("lp_avx512_") +
                       (d.kind == lp_kind::bf16 ? (d.a_f32 ? "bf16_f32a" : "bf16") : "u8s8") +
                       "_m" + std::to_string(d.m) + "_nv" + std::to_string(d.nv) + "_acc" +
                       std::to_string(d.accumulate) +
                       (d.k_tail ? "_ktail" : "");
    const int add = d.epi_ops & lowp::EPI_ADD_MASK;
    const bool mul = (d.epi_ops & lowp::EPI_BIN_MUL) != 0;
    const std::string add_name = add == lowp::EPI_ADD_F32    ? (mul ? "_mulf32" : "_addf32")
                                 : add == lowp::EPI_ADD_BF16 ? (mul ? "_mulbf16" : "_addbf16")
                                 : add == lowp::EPI_ADD_SUM  ? "_sum"
                                                             : "";
    const bool add_early = !(d.epi_ops & lowp::EPI_ADD_LATE);
    static const char *const elt_names[8] = {"", "_gelu_tanh", "_silu", "_sigmoid", "_gelu_erf", "_tanh", "_clip", ""};
    const int elt = (d.epi_ops & lowp::EPI_ELT_MASK) >> 3;
    if (d.epi_out != lowp::EPI_NONE && d.epi_out <= lowp::EPI_S32)
        name += std::string("_epi_") + outs[d.epi_out] + (d.epi_flags & lowp::EPI_COMP ? "_comp" : "") +
                (d.epi_flags & lowp::EPI_SCALE_1 ? "_scale1" : "") +
                (d.epi_flags & lowp::EPI_SCALE_N ? "_scalen" : "") +
                (d.epi_flags & lowp::EPI_BIAS ? "_bias" : "") +
                (add_early ? add_name : "") + (d.epi_flags & lowp::EPI_RELU ? "_relu" : "") +
                (d.epi_flags & lowp::EPI_LEAKY ? "_leaky" : "") + elt_names[elt] +
                (add_early ? "" : add_name) + (d.epi_flags & lowp::EPI_ZP ? "_zp" : "") +
                (d.nt_store ? "_nt" : "");
    return name;
}

jit_lp_avx512::jit_lp_avx512(const lowp::lp_ukernel_desc &d) : jit_lp_generator(d) {
    n_bcast_ = std::min(4, 32 - d_.m * d_.nv - d_.nv);
    generate(lowp::kMR, true);  // 12 x 2 accumulators fit the 32 zmm: one chunk
    if (d_.epi_out != lowp::EPI_NONE) {
        emit_store_constants(*this, consts_);  // after the return
        if (elt_op()) emit_eltwise_constants(*this, elt_consts_);
    }
    if (d_.k_tail && !d_.a_f32) {
        ud2();  // never reached
        align(64);
        L(tail_mask_);
        dd(0xFFFFu);  // element 0's word
    }
}

// Integer moves for int32 data, fp moves for fp32 and bf16 pairs: the same
// bits either way, but no bypass delay between execution domains.
void jit_lp_avx512::load_vec(const Zmm &z, const Address &src) {
    if (is_int())
        vmovdqu32(z, src);
    else
        vmovups(z, src);
}

void jit_lp_avx512::store_vec(const Address &dst, const Zmm &z) {
    if (is_int())
        vmovdqu32(dst, z);
    else
        vmovups(dst, z);
}

void jit_lp_avx512::init_acc() {
    if (d_.a_f32) {
        // The split's mask, per chunk (an epilogue may have used the
        // register); r11 is free until load_args (rax may be reg_c here).
        mov(r11d, 0xFFFF0000u);
        vpbroadcastd(high_words_mask(), r11d);
    }
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) {
            const Zmm a = acc(i, j);
            if (d_.accumulate)
                load_vec(a, ptr[reg_c + j * kVecBytes]);
            else
                vpxord(a, a, a);
        }
        if (d_.accumulate && i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

// One k-group: load its nv B vectors, then multiply each row's A dword
// into the row's accumulators.
void jit_lp_avx512::k_group(int u) {
    if (d_.a_f32) {
        k_group_widened(u);
        return;
    }
    prefetch_b(u);
    for (int j = 0; j < d_.nv; ++j) load_vec(b_vec(j), ptr[b_at(u, j * kVecBytes)]);
    // A's dword is broadcast into a register, not used as an m32bcst
    // operand: on Zen 5 the embedded-broadcast form loses 8-19% (measured:
    // a 12x32 bf16 tile in L1 went from 338 to 391 GFLOP/s).  For vpdpbusd it is
    // required anyway: the first source is the unsigned one, so A (u8) must
    // be a register and B (s8) the second source.  bf16 with one vector per
    // row takes the embedded form (one A load per product either way; on
    // Zen 4 a register broadcast costs a vector-pipe slot: see
    // jit_sgemm_avx512::k_step).  vdpbf16ps is symmetric in its sources: the
    // same products, summed in the same order.
    for (int i = 0; i < rows_; ++i) {
        if (!is_int() && d_.nv == 1) {
            vdpbf16ps(acc(i, 0), b_vec(0), ptr_b[a_at(i, u)]);
            continue;
        }
        vpbroadcastd(bcast(i), dword[a_at(i, u)]);
        for (int j = 0; j < d_.nv; ++j) {
            if (is_int())
                vpdpbusd(acc(i, j), bcast(i), b_vec(j), EvexEncoding);
            else  // acc += A_1*B_1, then += A_0*B_0, each rounded: the contract's order
                vdpbf16ps(acc(i, j), bcast(i), b_vec(j));
        }
    }
}

// One k-group on widened A (CPUs where vdpbf16ps runs at half the FMA's
// rate, cpu_info::bf16_dot_half_rate): each B vector of bf16 pairs becomes
// two fp32 vectors (2 integer ops, shared by all rows), then each row
// takes two FMAs per vector with its fp32 A values broadcast from memory,
// element 1 first: acc + A_1*B_1, then + A_0*B_0, each rounded once, the
// products of bf16 values exact -- vdpbf16ps' bits.  A 12 x 32 tile does
// 48 FMAs and 4 integer ops per group where vdpbf16ps takes 24 issues of
// 2 cycles each.
void jit_lp_avx512::k_group_widened(int u) {
    prefetch_b(u);
    for (int j = 0; j < d_.nv; ++j) {
        vmovups(b_lo(j), ptr[b_at(u, j * kVecBytes)]);
        vpandd(b_hi(j), b_lo(j), high_words_mask());
        vpslld(b_lo(j), b_lo(j), 16);
    }
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) vfmadd231ps(acc(i, j), b_hi(j), ptr_b[a_at(i, u) + 4]);
        for (int j = 0; j < d_.nv; ++j) vfmadd231ps(acc(i, j), b_lo(j), ptr_b[a_at(i, u)]);
    }
}

// The last k-group of a segment with desc.k_tail (bf16): as k_group on the
// A dword with element 1 zeroed (vpandd), so that whatever the caller's A
// holds there -- the next pixel's first channel, maybe a NaN -- only 0
// meets the zero weight, exactly as if A held 0.  Widened A: vdpbf16ps
// on a dword whose element 1 is 0 adds 0 * B_1 = +0 (B_1 being the zero
// padding) before A_0 * B_0; the FMAs do the same with an explicit +0 and
// never read A_1.
void jit_lp_avx512::k_group_tail(int u) {
    prefetch_b(u);
    if (d_.a_f32) {
        for (int j = 0; j < d_.nv; ++j) {
            vmovups(b_lo(j), ptr[b_at(u, j * kVecBytes)]);
            vpslld(b_lo(j), b_lo(j), 16);
            vpxord(b_hi(j), b_hi(j), b_hi(j));
        }
        for (int i = 0; i < rows_; ++i) {
            for (int j = 0; j < d_.nv; ++j) vaddps(acc(i, j), acc(i, j), b_hi(j));
            for (int j = 0; j < d_.nv; ++j) vfmadd231ps(acc(i, j), b_lo(j), ptr_b[a_at(i, u)]);
        }
        return;
    }
    for (int j = 0; j < d_.nv; ++j) load_vec(b_vec(j), ptr[b_at(u, j * kVecBytes)]);
    for (int i = 0; i < rows_; ++i) {
        vpbroadcastd(bcast(i), dword[a_at(i, u)]);
        vpandd(bcast(i), bcast(i), ptr_b[rip + tail_mask_]);
        for (int j = 0; j < d_.nv; ++j) vdpbf16ps(acc(i, j), bcast(i), b_vec(j));
    }
}

void jit_lp_avx512::store_acc() {
    if (d_.epi_out != lowp::EPI_NONE) {
        store_fused();
        return;
    }
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) store_vec(ptr[reg_c + j * kVecBytes], acc(i, j));
        if (i + 1 < rows_) add(reg_c, reg_ldc);
    }
}

// ------------------------------------------------------ fused epilogue
// Register map after the K loop: the accumulators stay where they are
// (zmm0 .. m*nv-1 <= 23); zmm28 / zmm27 / zmm26 temporaries t1..t3, zmm25 =
// 0 (relu / leaky_relu), zmm24 = the leaky slope; zmm24..31 are the
// transcendental ops' scratch (the common scale, zero point and
// compensation factor are read as broadcast memory operands, so they hold
// no register); k1 / k2 the store masks of vectors 0 / 1, k3 a temporary,
// k3 / k4 / k6 / k7 the transcendental ops' masks.  GPRs: r10 = dst_ld,
// rax = the row's dst, r11 = colsum, rsi = scales, rdx = bias, r8 = the
// row's residual, r9 = its row stride (all free after the K loop).
namespace {
const Zmm z_t1(28), z_t2(27), z_t3(26), z_zero(25), z_alpha(24);
const Opmask k_tmp(3);
}  // namespace

// Before the K loop, the rows of the tile its epilogue will touch, into
// L2: by the end of the K loop they are there.
// - The residual rows: a row tile's residual comes from memory (its rows
//   are far apart: one page each for N >= 1024 f32), and that latency,
//   met after the transcendental op, held up the tile's stores (u8s8s32
//   256x4096x4096 with bias + gelu_tanh + add + bf16 out: chain cost
//   +17% -> +11%, bf16 +9% -> +4%).
// - The destination rows: each tile writes a few lines of each of its
//   rows, far apart, so the hardware prefetchers never see a stream, and
//   every line's read-for-ownership met at the store is a miss to L3 or
//   memory (int8 -> s32, Zen 5, 1 thread: 1024x4096x512 0.85x the
//   unfused path that stores C row by row from an accumulator block
//   without the prefetch, 1.18x with it; 2048^3 0.96x -> 1.04x).  L2, not
//   L1 (prefetchw): a long K loop streams more B than L1 holds and evicted
//   them (2048^3: 0.97x).  A line read into L2 by the only core using it
//   is held exclusive, so the store needs no second request.
// Prefetches never fault, so rows past m and columns past n are harmless.
void jit_lp_avx512::prefetch_epilogue() {
    using lowp::lp_ukernel_args;
    if (d_.epi_out == lowp::EPI_NONE) return;
    // Only before a K loop long enough to hide a miss: a short one (a 1x1
    // convolution over 32 channels) would meet the store before the line
    // arrived, and its rows are usually adjacent anyway (a stream the
    // hardware prefetchers follow): there the prefetches cost 2-8%.
    Label no_dst_prefetch;
    cmp(qword[reg_args + offsetof(lp_ukernel_args, kg)], kDstPrefetchMinGroups);
    jl(no_dst_prefetch, T_NEAR);
    prefetch_rows_l2(offsetof(lp_ukernel_args, dst), offsetof(lp_ukernel_args, dst_ld),
                     d_.nv * kLanes * dst_elem_bytes());
    L(no_dst_prefetch);
    const int residual = d_.epi_ops & lowp::EPI_ADD_MASK;
    if (residual)
        prefetch_rows_l2(offsetof(lp_ukernel_args, binary), offsetof(lp_ukernel_args, binary_ld),
                         d_.nv * kLanes *
                             (residual == lowp::EPI_ADD_F32 ? 4 : residual == lowp::EPI_ADD_BF16 ? 2 : dst_elem_bytes()));
}

// prefetcht1 of `bytes` from each of the chunk's rows of the matrix whose
// first row and row stride (bytes) are the args fields at ptr_field and
// ld_field; r8, r9 and r11 are clobbered (free before load_args).
void jit_lp_avx512::prefetch_rows_l2(size_t ptr_field, size_t ld_field, int bytes) {
    const Reg64 row = r8, ld = r9, tmp = r11;
    mov(row, ptr[reg_args + ptr_field]);
    mov(ld, ptr[reg_args + ld_field]);
    to_chunk_row(row, ld, tmp);
    for (int i = 0; i < rows_; ++i) {
        for (int off = 0; off < bytes; off += kLineBytes) prefetcht1(ptr[row + off]);
        prefetcht1(ptr[row + bytes - 1]);  // an unaligned row's last line
        if (i + 1 < rows_) add(row, ld);
    }
}

// p += ld * (the chunk's first row in the kernel's rows, plus the current
// row tile's first row when the kernel walks row tiles); tmp is clobbered.
void jit_lp_avx512::to_chunk_row(const Reg64 &p, const Reg64 &ld, const Reg64 &tmp) {
    if (row0_) {
        imul(tmp, ld, row0_);
        add(p, tmp);
    }
    if (row_loop_) {
        mov(tmp, reg_tile_row);
        imul(tmp, ld);
        add(p, tmp);
    }
}

// rax = the dst row of the chunk's first row (r11 is clobbered).
void jit_lp_avx512::load_dst_row0() {
    using lowp::lp_ukernel_args;
    mov(rax, ptr[reg_args + offsetof(lp_ukernel_args, dst)]);
    to_chunk_row(rax, r10, r11);
}

void jit_lp_avx512::store_fused() {
    using lowp::lp_ukernel_args;
    const uint8_t f = d_.epi_flags;
    mov(r10, ptr[reg_args + offsetof(lp_ukernel_args, dst_ld)]);
    load_dst_row0();
    if (d_.epi_ops & lowp::EPI_ADD_MASK) {
        mov(r8, ptr[reg_args + offsetof(lp_ukernel_args, binary)]);
        mov(r9, ptr[reg_args + offsetof(lp_ukernel_args, binary_ld)]);
        to_chunk_row(r8, r9, r11);  // before r11 holds colsum
    }
    if (f & lowp::EPI_COMP) mov(r11, ptr[reg_args + offsetof(lp_ukernel_args, colsum)]);
    kmovw(k1, word[reg_args + offsetof(lp_ukernel_args, store_mask)]);
    if (d_.nv > 1) kmovw(k2, word[reg_args + offsetof(lp_ukernel_args, store_mask) + 2]);
    if (comp_hoisted()) {
        // colsum x col_factor is the same for every row of the tile: once
        // here, then one vpsubd per vector instead of a load, a vpmulld (two
        // uops) and the vpsubd per row (a 1x1 convolution over 32 channels
        // with a source zero point: 0.75x -> see docs/lowp.md).
        for (int j = 0; j < d_.nv; ++j) {
            vmovdqu32(z_comp(j) | (j == 0 ? k1 : k2) | T_z, ptr[r11 + j * kVecBytes]);
            vpmulld(z_comp(j), z_comp(j), ptr_b[reg_args + offsetof(lp_ukernel_args, col_factor)]);
        }
    }
    if (f & (lowp::EPI_SCALE_1 | lowp::EPI_SCALE_N))
        mov(rsi, ptr[reg_args + offsetof(lp_ukernel_args, scales)]);
    if (f & lowp::EPI_BIAS) mov(rdx, ptr[reg_args + offsetof(lp_ukernel_args, bias)]);
    if (f & (lowp::EPI_RELU | lowp::EPI_LEAKY)) vxorps(z_zero, z_zero, z_zero);
    if (f & lowp::EPI_LEAKY) vbroadcastss(z_alpha, dword[reg_args + offsetof(lp_ukernel_args, alpha)]);
    if (is_clip()) {  // the bounds in the registers relu / leaky_relu would use
        vbroadcastss(z_zero, dword[reg_args + offsetof(lp_ukernel_args, alpha)]);
        vbroadcastss(z_alpha, dword[reg_args + offsetof(lp_ukernel_args, beta)]);
    }
    // A tile whose columns are all there (the store masks all ones, as in
    // every tile but a panel's last) is stored without masks: on Zen 4 a
    // masked 512-bit store whose line is not in L1 cost several times an
    // unmasked one (a 1x1 convolution over 16 channels into 96, bf16:
    // 0.86x -> 0.97x oneDNN; in L1 the two cost the same).  Without a
    // transcendental op only: with one, the store is a small part of the
    // epilogue and the copy would double a long stretch of code.
    if (elt_op()) {
        store_fused_rows();
        return;
    }
    Label masked, done;
    kortestw(d_.nv > 1 ? k2 : k1, d_.nv > 1 ? k2 : k1);  // CF: all ones (k2 full implies k1 full)
    jnc(masked, T_NEAR);
    full_cols_ = true;
    if (nt_capable()) {
        // Non-temporal stores need 64-byte aligned rows (a row is one line).
        Label plain;
        test(rax, 63);
        jnz(plain, T_NEAR);
        test(r10, 63);
        jnz(plain, T_NEAR);
        nt_ = true;
        store_fused_rows();
        nt_ = false;
        jmp(done, T_NEAR);
        L(plain);
    }
    store_fused_rows();
    full_cols_ = false;
    jmp(done, T_NEAR);
    L(masked);
    store_fused_rows();
    L(done);
}

// The fused epilogue's rows, after store_fused's setup (rax = the first
// row's dst, r10 = dst_ld, the masks in k1 / k2).
void jit_lp_avx512::store_fused_rows() {
    if (fast_bf16_store()) {
        store_rows_bf16_fast();
        return;
    }
    // With a transcendental op, a row's two vectors go through it together.
    const bool pair = elt_op() && d_.nv == 2;
    for (int i = 0; i < rows_; ++i) {
        if (pair) {
            finish_pre(acc(i, 0), 0);
            finish_pre(acc(i, 1), 1);
            const eltwise_regs r0{acc(i, 0), {z_t1, z_t3, z_zero, z_alpha}, Opmask(6), Opmask(7)};
            const eltwise_regs r1{acc(i, 1), {z_t2, Zmm(29), Zmm(30), Zmm(31)}, k_tmp, Opmask(4)};
            emit_exact_eltwise2(*this, *elt_op(), elt_consts_, r0, r1);
        }
        for (int j = 0; j < d_.nv; ++j) {
            if (pair)
                finish_post(acc(i, j), j);
            else
                finish_vec(acc(i, j), j);
            store_converted(acc(i, j), j);
        }
        if (i + 1 < rows_) {
            add(rax, r10);
            if (d_.epi_ops & lowp::EPI_ADD_MASK) add(r8, r9);
        }
    }
}

// bf16 output from a bf16 kernel (so the CPU has AVX512-BF16): one
// vcvtne2ps2bf16 per row instead of the ten-instruction exact rounding.
// The instruction rounds as lowp::f32_to_bf16 does (RNE, NaN quieted) except
// that it flushes denormal inputs to a signed zero (checked on Zen 5), so
// the tile is also screened for denormals: if it holds any, the whole tile
// is stored again with the exact sequence (the finished values are still in
// the accumulators) and the result is the portable epilogue's, bit for bit.
//
// The screen is integer arithmetic, not vfpclassps: a mask per vector OR-ed
// into a running mask serialises on the mask registers and cost a quarter
// of a 1x1 convolution's time over 16 channels.  With y = bits(x) << 1 (the
// sign shifted out), x is denormal exactly when 2 <= y <= 0x00fffffe, i.e.
// when y - 2 (wrapping: zeros become 0xfffffffe) is unsigned-below
// 0x00fffffe; the running unsigned minimum of y - 2 over the tile is
// compared once at the end.
//
// Only steps of the chain can make a denormal: vdpbf16ps flushes denormal
// results to zero, and every accumulator goes through at least one of them
// in this kernel (kg >= 1), whatever an accumulating kernel loaded, so
// none holds a denormal after the K loop (checked on Zen 5, as the SDM
// says); relu gives x or +0, and clip gives
// x or one of its bounds.  So without scales, bias, a residual add,
// leaky_relu or a zero point the per-vector screen is left out and only
// clip's two bounds are screened, once per tile: with K = 16 (1x1
// convolutions over 16 channels) the screen was a sixth of the time.
bool jit_lp_avx512::fast_store_screens_rows() const {
    const uint8_t makes_denormals =
        lowp::EPI_COMP | lowp::EPI_SCALE_1 | lowp::EPI_SCALE_N | lowp::EPI_BIAS | lowp::EPI_LEAKY |
        lowp::EPI_ZP;
    return (d_.epi_flags & makes_denormals) || (d_.epi_ops & lowp::EPI_ADD_MASK);
}

bool jit_lp_avx512::comp_hoisted() const {
    return is_int() && (d_.epi_flags & lowp::EPI_COMP) && !(elt_op() && d_.nv == 2);
}

// Whether full tiles store non-temporally (desc.nt_store): two vectors a
// row (a row of 32 f32 or bf16 values is one or two whole lines) of f32,
// or of bf16 by the fast store (the exact bf16 sequence stores 32 bytes a
// vector), and no transcendental op (those tiles have no full-tile path).
bool jit_lp_avx512::nt_capable() const {
    return d_.nt_store && d_.nv == 2 && !elt_op() &&
           (d_.epi_out == lowp::EPI_F32 || fast_bf16_store());
}

bool jit_lp_avx512::fast_bf16_store() const {
    return d_.epi_out == lowp::EPI_BF16 && d_.kind == lowp::lp_kind::bf16 && !elt_op();
}

void jit_lp_avx512::store_rows_bf16_fast() {
    const Opmask k_row(5);
    // zmm29 holds the constant 2 (no transcendental op uses it here); the
    // packed row is in t1 until it is stored, then t1 and t3 hold the
    // row's screen values; three running minima (t2, zmm30, zmm31; relu,
    // leaky_relu and clip keep their constants in zmm24 / zmm25), taken by
    // rows in turn, so that no chain runs through the whole tile: one chain
    // of 24 minima held up the next tile's start and cost 5% of a 1x1
    // convolution over 16 channels (in-process A/B).
    const Zmm packed = z_t1, two(29);
    const Zmm runs[3] = {z_t2, Zmm(30), Zmm(31)};
    const Zmm row_screen[2] = {z_t1, z_t3};
    const bool screen_rows = fast_store_screens_rows();
    if (screen_rows || is_clip()) {
        mov(r11d, 2);
        vpbroadcastd(two, r11d);
        for (const Zmm &r : runs) vpternlogd(r, r, r, 0xff);  // all ones: nothing seen yet
    }
    if (is_clip()) {  // its bounds (in z_zero / z_alpha) may be stored as they are
        for (const Zmm &bound : {z_zero, z_alpha}) {
            vpaddd(row_screen[1], bound, bound);
            vpsubd(row_screen[1], row_screen[1], two);
            vpminud(runs[0], runs[0], row_screen[1]);
        }
    }
    if (d_.nv > 1) kunpckwd(k_row, k2, k1);  // 32 bf16 words: k1 low, k2 high
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) finish_vec(acc(i, j), j);
        if (d_.nv > 1) {
            vcvtne2ps2bf16(packed, acc(i, 1), acc(i, 0));  // words 0..15 from acc(i, 0)
            if (nt_)
                vmovntdq(ptr[rax], packed);
            else if (full_cols_)
                vmovdqu16(ptr[rax], packed);
            else
                vmovdqu16(ptr[rax] | k_row, packed);
        } else {
            vcvtneps2bf16(Ymm(packed.getIdx()), acc(i, 0));
            if (full_cols_)
                vmovdqu16(ptr[rax], Ymm(packed.getIdx()));
            else
                vmovdqu16(ptr[rax] | k1, Ymm(packed.getIdx()));
        }
        if (screen_rows) {
            for (int j = 0; j < d_.nv; ++j) {
                vpaddd(row_screen[j], acc(i, j), acc(i, j));
                vpsubd(row_screen[j], row_screen[j], two);
            }
            if (d_.nv > 1) vpminud(row_screen[0], row_screen[0], row_screen[1]);
            const Zmm &run = runs[i % 3];
            vpminud(run, run, row_screen[0]);
        }
        if (i + 1 < rows_) {
            add(rax, r10);
            if (d_.epi_ops & lowp::EPI_ADD_MASK) add(r8, r9);
        }
    }
    if (!screen_rows && !is_clip()) return;  // nothing can be denormal
    const Zmm screen_min = runs[0], screen_tmp = z_t3;
    vpminud(screen_min, screen_min, runs[1]);
    vpminud(screen_min, screen_min, runs[2]);
    Label done;
    mov(r11d, 0x00fffffe);
    vpbroadcastd(screen_tmp, r11d);
    vpcmpud(k_tmp, screen_min, screen_tmp, 1);  // unsigned less-than
    kortestw(k_tmp, k_tmp);
    jz(done, T_NEAR);
    if (nt_) sfence();  // the non-temporal stores before the exact ones over them
    load_dst_row0();
    for (int i = 0; i < rows_; ++i) {
        for (int j = 0; j < d_.nv; ++j) store_converted(acc(i, j), j);
        if (i + 1 < rows_) add(rax, r10);
    }
    L(done);
}

// The transcendental eltwise op of the descriptor, if any.
std::optional<exact_eltwise> jit_lp_avx512::elt_op() const {
    switch (d_.epi_ops & lowp::EPI_ELT_MASK) {
        case lowp::EPI_ELT_GELU_TANH: return exact_eltwise::gelu_tanh;
        case lowp::EPI_ELT_SILU: return exact_eltwise::silu;
        case lowp::EPI_ELT_SIGMOID: return exact_eltwise::sigmoid;
        case lowp::EPI_ELT_GELU_ERF: return exact_eltwise::gelu_erf;
        case lowp::EPI_ELT_TANH: return exact_eltwise::tanh;
        default: return std::nullopt;
    }
}

void jit_lp_avx512::finish_vec(const Zmm &v, int j) {
    finish_pre(v, j);
    if (const auto op = elt_op()) {
        // Scratch: zmm24 / zmm25 (relu's zero and leaky's slope, not used
        // with these ops), t1 and t3; t2 and zmm29 are the bf16 fast store's
        // running screen and constant.
        emit_exact_eltwise(*this, *op, v, elt_consts_, z_t1, z_t3, z_zero, z_alpha, Opmask(6),
                           Opmask(7));
    }
    finish_post(v, j);
}

// Compensation, scales, bias, an early residual add and relu / leaky_relu /
// clip.
void jit_lp_avx512::finish_pre(const Zmm &v, int j) {
    using lowp::lp_ukernel_args;
    const uint8_t f = d_.epi_flags;
    const Opmask km = j == 0 ? k1 : k2;
    if (is_int()) {
        if (comp_hoisted()) {
            vpsubd(v, v, z_comp(j));
        } else if (f & lowp::EPI_COMP) {
            // Masked loads: the arrays may end at the tile's last column.
            vmovdqu32(z_t1 | km | T_z, ptr[r11 + j * kVecBytes]);
            vpmulld(z_t1, z_t1, ptr_b[reg_args + offsetof(lp_ukernel_args, col_factor)]);
            vpsubd(v, v, z_t1);
        }
        if (d_.epi_out == lowp::EPI_S32) return;  // stored as int32: nothing else applies
        if (int_narrow_store()) return;           // narrowed as int32 by store_converted
        vcvtdq2ps(v, v);  // exact int32 -> float, rounded to nearest even
    }
    if (f & lowp::EPI_SCALE_N) {
        vmovups(z_t1 | km | T_z, ptr[rsi + j * kVecBytes]);
        vmulps(v, v, z_t1);
    }
    if (f & lowp::EPI_SCALE_1) vmulps(v, v, ptr_b[rsi]);
    if (f & lowp::EPI_BIAS) {
        vmovups(z_t1 | km | T_z, ptr[rdx + j * kVecBytes]);
        vaddps(v, v, z_t1);
    }
    if (!(d_.epi_ops & lowp::EPI_ADD_LATE)) add_residual(v, j);
    if (f & lowp::EPI_RELU) {
        vcmpps(k_tmp, v, z_zero, 2);  // x <= 0 (ordered): +0; NaN stays
        vxorps(v | k_tmp, v, v);
    }
    if (f & lowp::EPI_LEAKY) {
        vcmpps(k_tmp, v, z_zero, 14);  // x > 0 keeps x; else (NaN too) alpha * x
        knotw(k_tmp, k_tmp);
        vmulps(v | k_tmp, z_alpha, v);
    }
    if (is_clip()) {  // x < lo -> lo, then hi < x -> hi (NaN stays)
        vcmpps(k_tmp, v, z_zero, 17);
        vmovaps(v | k_tmp, z_zero);
        vcmpps(k_tmp, z_alpha, v, 17);
        vmovaps(v | k_tmp, z_alpha);
    }
}

// A late residual add and the output zero point.
void jit_lp_avx512::finish_post(const Zmm &v, int j) {
    using lowp::lp_ukernel_args;
    if (d_.epi_ops & lowp::EPI_ADD_LATE) add_residual(v, j);
    if (d_.epi_flags & lowp::EPI_ZP) vaddps(v, v, ptr_b[reg_args + offsetof(lp_ukernel_args, zero_point)]);
}

// The residual (masked: the row may end at the tile's last column).
void jit_lp_avx512::add_residual(const Zmm &v, int j) {
    const Opmask km = j == 0 ? k1 : k2;
    const int add = d_.epi_ops & lowp::EPI_ADD_MASK;
    const bool mul = (d_.epi_ops & lowp::EPI_BIN_MUL) != 0;
    if (add == lowp::EPI_ADD_F32) {
        vmovups(z_t1 | km | T_z, ptr[r8 + j * kVecBytes]);
        if (mul) vmulps(v, v, z_t1); else vaddps(v, v, z_t1);
    } else if (add == lowp::EPI_ADD_BF16) {
        vpmovzxwd(z_t1 | km | T_z, ptr[r8 + j * kLanes * 2]);  // bf16 -> the f32's high half
        vpslld(z_t1, z_t1, 16);
        if (mul) vmulps(v, v, z_t1); else vaddps(v, v, z_t1);
    } else if (add == lowp::EPI_ADD_SUM) {
        // dst's old values (r8 walks dst: read before this row is stored),
        // exactly as floats, then (t - zero point) * scale, then the add.
        switch (d_.epi_out) {
            case lowp::EPI_F32: vmovups(z_t1 | km | T_z, ptr[r8 + j * kVecBytes]); break;
            case lowp::EPI_BF16:
                vpmovzxwd(z_t1 | km | T_z, ptr[r8 + j * kLanes * 2]);
                vpslld(z_t1, z_t1, 16);
                break;
            case lowp::EPI_U8:
                vpmovzxbd(z_t1 | km | T_z, ptr[r8 + j * kLanes]);
                vcvtdq2ps(z_t1, z_t1);
                break;
            default:  // s8
                vpmovsxbd(z_t1 | km | T_z, ptr[r8 + j * kLanes]);
                vcvtdq2ps(z_t1, z_t1);
                break;
        }
        vsubps(z_t1, z_t1, ptr_b[reg_args + offsetof(lowp::lp_ukernel_args, sum_zero_point)]);
        vmulps(z_t1, z_t1, ptr_b[reg_args + offsetof(lowp::lp_ukernel_args, sum_scale)]);
        vaddps(v, v, z_t1);
    }
}

// Element bytes of the output (f32 / s32 4, bf16 2, u8 / s8 1): 16 lanes each.
int jit_lp_avx512::dst_elem_bytes() const {
    switch (d_.epi_out) {
        case lowp::EPI_F32:
        case lowp::EPI_S32: return 4;
        case lowp::EPI_BF16: return 2;
        default: return 1;
    }
}

// Without scales, bias, binary or eltwise ops (relu aside) and a zero point
// the float detour of the u8 / s8 store (convert, clamp, round, narrow) is
// the identity on integers up to the saturation, so the int32 is narrowed
// directly: the same bits in two instructions instead of four (a 1x1
// convolution over 32 channels into 16, whose time is mostly this
// epilogue: 0.87x -> 0.97x oneDNN on an Intel Xeon VM).
bool jit_lp_avx512::int_narrow_store() const {
    return is_int() && (d_.epi_out == lowp::EPI_U8 || d_.epi_out == lowp::EPI_S8) &&
           (d_.epi_flags & ~(lowp::EPI_COMP | lowp::EPI_RELU)) == 0 && d_.epi_ops == 0;
}

// dst + offset, under vector j's store mask unless the tile's columns are
// all there (full_cols_).
Address jit_lp_avx512::dst_at(int offset, int j) const {
    const Opmask km = j == 0 ? k1 : k2;
    return full_cols_ ? ptr[rax + offset] : ptr[rax + offset] | km;
}

void jit_lp_avx512::store_converted(const Zmm &v, int j) {
    if (nt_ && d_.epi_out == lowp::EPI_F32) {
        vmovntps(ptr[rax + j * kVecBytes], v);
        return;
    }
    if (d_.epi_out == lowp::EPI_S32) {
        vmovdqu32(dst_at(j * kVecBytes, j), v);
        return;
    }
    if (int_narrow_store()) {
        // u8: negatives to 0 first (vpmovusdb reads the int32 as unsigned);
        // relu is the same max.  s8: the signed saturation is the clamp.
        const Address zero = ptr_b[rip + consts_ + 20];  // int32 0 (the 0.0f bits)
        if (d_.epi_out == lowp::EPI_U8 || (d_.epi_flags & lowp::EPI_RELU)) vpmaxsd(v, v, zero);
        if (d_.epi_out == lowp::EPI_U8)
            vpmovusdb(dst_at(j * 16, j), v);
        else
            vpmovsdb(dst_at(j * 16, j), v);
        return;
    }
    const int ob = dst_elem_bytes();
    emit_store_converted(*this, d_.epi_out, dst_at(j * 16 * ob, j), v, consts_, z_t1, z_t2, z_t3,
                         k_tmp);
}

}  // namespace anvil::jit
