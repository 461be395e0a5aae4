// The fused epilogue of the AVX-512 lp kernels (lp_ukernel.h) against the
// portable chain, bit for bit: for every chain the kernels can fuse
// (lowp::fuse_chain: compensation, scales, bias, a residual add before or
// after one eltwise op among relu, leaky_relu, gelu_tanh, gelu_erf, silu,
// sigmoid and tanh, the output zero point, every output type), the fused
// kernel's C equals the plain kernel's accumulators put through
// lowp::pp_block_apply, byte for byte, with nothing written outside the
// store mask.  The finished values cover every class: the bias carries
// NaN (both signs), infinities, zeros, denormals, values past each op's
// thresholds (exp's floor, the saturation of u8 / s8) and random floats of
// every magnitude, which the small-integer accumulators shift row by row.
// Every other tile runs the accumulating kernels (the last of several K
// blocks: they add to a tile left in the accumulator buffer).
//
// The kernels depend on the CPU, not on the ISA cap: the suite runs once.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp/lp_ref.h"
#include "lowp/fused_chain.h"
#include "lowp/lp_backend.h"
#include "lowp/postops.h"
#include "lowp_util.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT

namespace {

namespace lowp = anvil::lowp;
using lowp::lp_backend;
using lowp::lp_kind;
using lowp::out_type;
using lowp::post_op;

constexpr int kNR = lowp::kNR;
constexpr uint8_t kSentinel = 0x5a;

// Bias values: every class and the ops' thresholds, then random floats.
std::vector<float> bias_values(tu::rng &r) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float dmin = std::numeric_limits<float>::denorm_min();
    std::vector<float> v = {0.0f,   -0.0f,  inf,    -inf,    nan,     -nan,    dmin,   -dmin,
                            1e-30f, -1e-30f, 0.3f,  -0.3f,   3.5f,    -3.5f,   9.5f,   -9.5f,
                            50.0f,  -50.0f, -80.5f, -90.0f,  -172.5f, -300.0f, 88.0f,  100.0f,
                            250.0f, -250.0f, 3e38f, -3e38f,  127.5f,  -128.5f, 255.5f, 0.625f};
    while (v.size() < 4 * kNR) {
        const float mant = float(r.ival(1 << 23, (1 << 24) - 1)) * 0x1p-23f;
        const float x = std::ldexp(mant, int(r.ival(-30, 7)));
        v.push_back(r.ival(0, 1) ? -x : x);
    }
    return v;
}

struct chain_case {
    lowp::eltwise_alg elt;
    bool has_elt;
    int add;  // 0 none, 1 before the eltwise op, 2 after
    bool add_bf16;
    int sum;  // the add is a sum post-op (dst's old values): 0 no, 1 plain, 2 scale 0.5 and zero point 3
    bool mul;    // the binary op multiplies
    bool per_n;  // its operand is a vector of columns
    out_type out;
    int scale;  // 0 none, 1 per tensor, 2 per column
    bool zp;
};

std::string describe(lp_kind kind, const chain_case &c, int m, int n) {
    static const char *const elts[] = {"relu", "leaky_relu", "clip", "gelu_tanh", "gelu_erf",
                                       "silu", "sigmoid", "tanh"};
    static const char *const outs[] = {"f32", "bf16", "s32", "u8", "s8"};
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s %s add=%d%s out=%s scale=%d zp=%d m=%d n=%d",
                  kind == lp_kind::bf16 ? "bf16" : "u8s8",
                  c.has_elt ? elts[int(c.elt)] : "-", c.add,
                  c.sum == 1 ? "(sum)" : c.sum == 2 ? "(sum 0.5, 3)"
                  : c.mul ? (c.per_n ? (c.add_bf16 ? "(mul bf16 per_n)" : "(mul per_n)") : (c.add_bf16 ? "(mul bf16)" : "(mul)"))
                  : c.per_n ? (c.add_bf16 ? "(bf16 per_n)" : "(per_n)") : c.add_bf16 ? "(bf16)" : "",
                  outs[int(c.out)], c.scale, int(c.zp), m, n);
    return buf;
}

// One tile through the fused kernel and through plain kernel + chain.
void check_case(const lp_backend &be, lp_kind kind, const chain_case &c, int m, int n, bool accumulate,
                tu::rng &r) {
    lowp::chain_spec spec;
    spec.kind = kind;
    spec.out = c.out;
    spec.ao = kind == lp_kind::u8s8 ? 3 : 0;
    spec.K = 8;
    if (c.scale == 1) spec.scales = {0.75f};
    if (c.scale == 2)
        for (int j = 0; j < kNR; ++j) spec.scales.push_back(float(r.ival(1, 8)) * 0.25f);
    spec.scales_per_n = c.scale == 2;
    spec.c_zero_point = c.zp ? 5.0f : 0.0f;
    const int64_t ld = kNR + 3;
    post_op add_op;
    add_op.is_binary = true;
    add_op.binary = lowp::binary_alg::add;
    add_op.src_bf16 = c.add_bf16;
    add_op.ld = ld;
    if (c.mul) add_op.binary = lowp::binary_alg::mul;
    add_op.per_n = c.per_n;
    if (c.sum) {  // the operand is the output itself
        add_op.binary = lowp::binary_alg::sum;
        add_op.sum_type = c.out;
        add_op.alpha = c.sum == 2 ? 0.5f : 1.0f;
        add_op.beta = c.sum == 2 ? 3.0f : 0.0f;
    }
    post_op elt_op;
    elt_op.eltwise = c.elt;
    elt_op.alpha = c.elt == lowp::eltwise_alg::clip ? -0.5f : 0.125f;  // clip: [-0.5, 0.75]
    elt_op.beta = 0.75f;
    if (c.add == 1) spec.ops.push_back(add_op);
    if (c.has_elt) spec.ops.push_back(elt_op);
    if (c.add == 2) spec.ops.push_back(add_op);

    lowp::fused_chain fc;
    REQUIRE(lowp::fuse_chain(spec, &fc));
    const int nv = n > 16 ? 2 : 1;
    lowp::lp_ukernel_ref plain, fused;
    REQUIRE(be.get(lowp::make_lp_desc(uint8_t(be.tier()), kind, m, nv, accumulate), &plain) ==
            anvil_success);
    REQUIRE(be.get(lowp::make_lp_epi_desc(uint8_t(be.tier()), kind, m, nv, accumulate, fc.out,
                                          uint8_t(fc.flags | lowp::EPI_BIAS), fc.ops),
                   &fused) == anvil_success);

    // Operands: small integers in A and B (exact accumulators), specials
    // and random floats in the bias, small values in the residual.
    const int kg = 2;
    const int64_t a_rs = kg * 4 + 4;
    std::vector<uint8_t> a(size_t(m * a_rs)), b(size_t(kg * kNR * 4));
    for (size_t i = 0; i + 1 < a.size(); i += 2) {
        if (kind == lp_kind::bf16) {
            const uint16_t x = lowp::f32_to_bf16(float(r.ival(-3, 3)));
            std::memcpy(&a[i], &x, 2);
        } else {
            a[i] = uint8_t(r.ival(0, 9));
            a[i + 1] = uint8_t(r.ival(0, 9));
        }
    }
    for (size_t i = 0; i + 1 < b.size(); i += 2) {
        if (kind == lp_kind::bf16) {
            const uint16_t x = lowp::f32_to_bf16(float(r.ival(-3, 3)));
            std::memcpy(&b[i], &x, 2);
        } else {
            b[i] = uint8_t(r.ival(-8, 8));
            b[i + 1] = uint8_t(r.ival(-8, 8));
        }
    }
    const std::vector<float> pool = bias_values(r);
    std::vector<float> bias(kNR);
    const int64_t shift = r.ival(0, int64_t(pool.size()) - 1);
    for (int j = 0; j < kNR; ++j) bias[size_t(j)] = pool[size_t((shift + j) % int64_t(pool.size()))];
    std::vector<int32_t> colsum(kNR);
    for (auto &x : colsum) x = int32_t(r.ival(-50, 50));
    std::vector<float> res_f32(size_t(m * ld));
    std::vector<uint16_t> res_bf16(size_t(m * ld));
    for (size_t i = 0; i < res_f32.size(); ++i) {
        res_f32[i] = float(r.ival(-12, 12)) * 0.5f;
        res_bf16[i] = lowp::f32_to_bf16(res_f32[i]);
    }
    const void *res = c.add_bf16 ? static_cast<const void *>(res_bf16.data()) : res_f32.data();

    const int ob = lowp::out_type_bytes(c.out);
    std::vector<uint8_t> want(size_t(m * ld * ob), kSentinel);
    if (c.sum)  // the old output values the sum reads: small integers of its type
        for (int64_t e = 0; e < m * ld; ++e)
            lt::store_int(anvil_data_type_t(c.out == out_type::f32 ? anvil_dt_f32 : c.out == out_type::bf16 ? anvil_dt_bf16
                                            : c.out == out_type::u8 ? anvil_dt_u8 : anvil_dt_s8),
                          want.data(), e, c.out == out_type::u8 ? r.ival(0, 40) : r.ival(-20, 20));
    std::vector<uint8_t> got(want);
    // The reference: accumulators, then the portable chain.
    // accumulate: the kernels add to a tile that earlier K blocks left
    // (small integers, int32 for int8, so every sum stays exact); both
    // calls start from the same copy.
    std::vector<float> acc(size_t(m * kNR));
    if (accumulate)
        for (auto &x : acc) {
            if (kind == lp_kind::u8s8) {
                const int32_t v = int32_t(r.ival(-1000, 1000));
                std::memcpy(&x, &v, 4);
            } else {
                x = float(r.ival(-1000, 1000));
            }
        }
    std::vector<float> acc_fused = acc;
    lowp::lp_ukernel_args pa =
        lt::tile_args(a.data(), a_rs, b.data(), acc.data(), kg, m, n, accumulate);
    plain.fn(&pa);
    const void *srcs[2] = {nullptr, nullptr};
    if (fc.binary_op >= 0) srcs[fc.binary_op] = c.sum ? static_cast<const void *>(want.data()) : res;
    lowp::pp_block blk;
    blk.acc = acc.data();
    blk.acc_ld = kNR;
    blk.acc_int = kind == lp_kind::u8s8;
    blk.m = m;
    blk.n = n;
    if (blk.acc_int) {
        blk.colsum = colsum.data();
        blk.col_factor = uint32_t(spec.ao);
    }
    blk.scales = spec.scales.empty() ? nullptr : spec.scales.data();
    blk.scales_per_n = spec.scales_per_n;
    blk.bias = bias.data();
    blk.ops = spec.ops.data();
    blk.nops = int(spec.ops.size());
    blk.srcs = srcs;
    blk.zero_point = spec.c_zero_point;
    blk.out = c.out;
    blk.dst = want.data();
    blk.ldc_bytes = ld * ob;
    lowp::pp_block_apply(blk);

    lowp::lp_ukernel_args fa = pa;
    fa.acc = acc_fused.data();
    fa.dst = got.data();
    fa.dst_ld = ld * ob;
    fa.colsum = colsum.data();
    fa.col_factor = spec.ao;
    fa.scales = blk.scales;
    fa.bias = bias.data();
    fa.zero_point = spec.c_zero_point;
    fa.alpha = elt_op.alpha;
    fa.beta = elt_op.beta;
    fa.binary = c.sum ? got.data() : static_cast<const uint8_t *>(res);
    fa.binary_ld = c.per_n ? 0 : ld * (c.sum ? ob : c.add_bf16 ? 2 : 4);
    fa.sum_scale = add_op.alpha;
    fa.sum_zero_point = add_op.beta;
    if (!c.sum) {
        fa.sum_scale = 1.0f;
        fa.sum_zero_point = 0.0f;
    }
    fa.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    fa.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
    fused.fn(&fa);

    int bad = 0;
    for (int i = 0; i < m; ++i)
        for (int64_t j = 0; j < ld; ++j) {
            const size_t at = size_t((i * ld + j) * ob);
            if (std::memcmp(&want[at], &got[at], size_t(ob)) == 0) continue;
            if (bad++ >= 4) continue;
            uint32_t w = 0, g = 0;
            std::memcpy(&w, &want[at], size_t(ob));
            std::memcpy(&g, &got[at], size_t(ob));
            char msg[320];
            std::snprintf(msg, sizeof msg, "%s acc=%d: row %d col %lld (bias %a): got 0x%x want 0x%x",
                          describe(kind, c, m, n).c_str(), int(accumulate), i, (long long)j,
                          j < kNR ? double(bias[size_t(j)]) : 0.0, g, w);
            FAIL_CHECK(msg);
        }
    CHECK(bad == 0);
}


// The fused bf16 kernel (bf16 output, no bias) for a chain that fits.
lowp::lp_ukernel_ref fused_bf16_kernel(const lp_backend &be, const lowp::chain_spec &spec, int m,
                                       int nv) {
    lowp::fused_chain fc;
    REQUIRE(lowp::fuse_chain(spec, &fc));
    lowp::lp_ukernel_ref fused;
    REQUIRE(be.get(lowp::make_lp_epi_desc(uint8_t(be.tier()), lp_kind::bf16, m, nv, false, fc.out,
                                          fc.flags, fc.ops),
                   &fused) == anvil_success);
    return fused;
}

// The portable chain's bf16 output of an m x n fp32 tile (acc, row stride
// kNR) in an m x ld buffer whose other elements hold a sentinel.
std::vector<uint16_t> bf16_reference(const lowp::chain_spec &spec, const float *acc, int m, int n,
                                     int64_t ld, const void *const *srcs) {
    std::vector<uint16_t> want(size_t(m) * size_t(ld), 0x5a5a);
    lowp::pp_block blk;
    blk.acc = acc;
    blk.acc_ld = kNR;
    blk.m = m;
    blk.n = n;
    blk.ops = spec.ops.data();
    blk.nops = int(spec.ops.size());
    blk.srcs = srcs;
    blk.out = out_type::bf16;
    blk.dst = reinterpret_cast<uint8_t *>(want.data());
    blk.ldc_bytes = ld * 2;
    lowp::pp_block_apply(blk);
    return want;
}

int count_diffs(const std::vector<uint16_t> &want, const std::vector<uint16_t> &got) {
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += want[i] != got[i];
    return bad;
}

// bf16 output from the bf16 kernels stores with vcvtne2ps2bf16, which
// flushes denormals, and screens the tile for them (falling back to the
// exact rounding): one denormal anywhere in the tile -- every row, both
// vectors -- must come out as the portable chain rounds it.  The tile is
// zero accumulators + a residual of ones with the one denormal.
int check_single_denormal(const lp_backend &be, int m, int nv, int row, int col, bool relu) {
    lowp::chain_spec spec;
    spec.kind = lp_kind::bf16;
    spec.out = out_type::bf16;
    spec.K = 2;
    const int64_t ld = kNR;
    post_op add_op;
    add_op.is_binary = true;
    add_op.binary = lowp::binary_alg::add;
    add_op.ld = ld;
    spec.ops.push_back(add_op);
    if (relu) spec.ops.push_back(post_op{});  // relu
    const lowp::lp_ukernel_ref fused = fused_bf16_kernel(be, spec, m, nv);
    const int n = 16 * nv;
    std::vector<uint8_t> a(size_t(m) * 4, 0), b(size_t(kNR) * 4, 0);
    std::vector<float> acc(size_t(m) * kNR, 0.0f), res(size_t(m) * ld, 1.0f);
    // 1..15 units of 2^-131: denormal in fp32, and not rounded to zero in
    // bf16 (its denormals are multiples of 2^-133).
    const float denormal = -float(1 + (row * 32 + col) % 15) * 0x1p-131f;
    res[size_t(row * ld + col)] = relu ? -denormal : denormal;
    const void *srcs[2] = {res.data(), nullptr};
    const std::vector<uint16_t> want = bf16_reference(spec, acc.data(), m, n, ld, srcs);
    std::vector<uint16_t> got(want.size(), 0x5a5a);
    lowp::lp_ukernel_args fa = lt::tile_args(a.data(), 4, b.data(), acc.data(), 1, m, n, false);
    fa.dst = reinterpret_cast<uint8_t *>(got.data());
    fa.dst_ld = ld * 2;
    fa.binary = reinterpret_cast<const uint8_t *>(res.data());
    fa.binary_ld = ld * 4;
    fa.store_mask[0] = 0xffff;
    fa.store_mask[1] = uint16_t(nv > 1 ? 0xffff : 0);
    fused.fn(&fa);
    const int bad = count_diffs(want, got);
    if (bad)
        FAIL_CHECK("m=" << m << " nv=" << nv << " denormal at row " << row << " col " << col
                        << (relu ? " (relu)" : "") << ": " << bad << " elements differ");
    return bad;
}

// bf16 output whose chain has no step that can make a denormal (none,
// relu, clip): the kernels leave the per-vector denormal screen out
// (vdpbf16ps never leaves a denormal in an accumulator) and screen only
// clip's bounds.  Bounds that are denormal themselves must still come out
// exact; the rest is compared with the portable chain as everywhere.
int check_unscreened(const lp_backend &be, int m, int nv, int op, tu::rng &r) {
    lowp::chain_spec spec;
    spec.kind = lp_kind::bf16;
    spec.out = out_type::bf16;
    spec.K = 8;
    post_op elt;
    if (op == 1) spec.ops.push_back(elt);  // relu
    if (op >= 2) {
        elt.eltwise = lowp::eltwise_alg::clip;
        // 2: relu6; 3: bounds that are denormal (1..15 units of 2^-131,
        // which bf16 keeps), so most outputs are one of them.
        elt.alpha = op == 2 ? 0.0f : -float(r.ival(1, 15)) * 0x1p-131f;
        elt.beta = op == 2 ? 6.0f : float(r.ival(1, 15)) * 0x1p-131f;
        spec.ops.push_back(elt);
    }
    const lowp::lp_ukernel_ref fused = fused_bf16_kernel(be, spec, m, nv);
    const int n = 16 * nv - int(r.ival(0, 3));
    const int kg = 4;
    std::vector<uint16_t> a(size_t(m) * kg * 2), b(size_t(kg) * kNR * 2);
    for (auto &x : a) x = lowp::f32_to_bf16(float(r.ival(-4, 4)));
    for (auto &x : b) x = lowp::f32_to_bf16(float(r.ival(-4, 4)) * 0.25f);
    std::vector<float> acc(size_t(m) * kNR, 0.0f);
    lowp::lp_ukernel_args pa = lt::tile_args(reinterpret_cast<const uint8_t *>(a.data()), kg * 4,
                                             reinterpret_cast<const uint8_t *>(b.data()),
                                             acc.data(), kg, m, n, false);
    lowp::lp_ukernel_ref plain;
    REQUIRE(be.get(lowp::make_lp_desc(uint8_t(be.tier()), lp_kind::bf16, m, nv, false), &plain) ==
            anvil_success);
    plain.fn(&pa);
    const int64_t ld = kNR + 1;
    const std::vector<uint16_t> want = bf16_reference(spec, acc.data(), m, n, ld, nullptr);
    std::vector<uint16_t> got(want.size(), 0x5a5a);
    std::vector<float> acc2(acc.size(), 0.0f);
    lowp::lp_ukernel_args fa = pa;
    fa.acc = acc2.data();
    fa.dst = reinterpret_cast<uint8_t *>(got.data());
    fa.dst_ld = ld * 2;
    fa.alpha = elt.alpha;
    fa.beta = elt.beta;
    fa.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    fa.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
    fused.fn(&fa);
    const int bad = count_diffs(want, got);
    if (bad)
        FAIL_CHECK("m=" << m << " nv=" << nv << " n=" << n << " op=" << op << ": " << bad
                        << " elements differ");
    return bad;
}

// u8 / s8 output of an int8 tile with no float step in the chain (the
// compensation and relu at most): the kernels narrow the int32 directly
// instead of going through float.  The accumulators the kernel adds to
// span the int32 range (the saturation bounds and one past them, 2^24 and
// its neighbours, where float conversion rounds, and the extremes), and
// must give the portable chain's bytes.
int check_int_narrow(const lp_backend &be, out_type out, bool comp, bool relu, int m, int n,
                     tu::rng &r) {
    lowp::chain_spec spec;
    spec.kind = lp_kind::u8s8;
    spec.out = out;
    spec.ao = comp ? 3 : 0;
    spec.K = 8;
    post_op relu_op;
    relu_op.eltwise = lowp::eltwise_alg::relu;
    if (relu) spec.ops.push_back(relu_op);
    lowp::fused_chain fc;
    REQUIRE(lowp::fuse_chain(spec, &fc));
    const int nv = n > 16 ? 2 : 1;
    lowp::lp_ukernel_ref plain, fused;
    REQUIRE(be.get(lowp::make_lp_desc(uint8_t(be.tier()), lp_kind::u8s8, m, nv, true), &plain) ==
            anvil_success);
    REQUIRE(be.get(lowp::make_lp_epi_desc(uint8_t(be.tier()), lp_kind::u8s8, m, nv, true, fc.out,
                                          fc.flags, fc.ops),
                   &fused) == anvil_success);
    const int kg = 2;
    const int64_t a_rs = kg * 4;
    std::vector<uint8_t> a(size_t(m * a_rs)), b(size_t(kg * kNR * 4));
    for (auto &x : a) x = uint8_t(r.ival(0, 255));
    for (auto &x : b) x = uint8_t(int8_t(r.ival(-128, 127)));
    static const int64_t kEdges[] = {0,          1,          -1,        127,        128,
                                     -128,       -129,       255,       256,        -255,
                                     1 << 24,    (1 << 24) + 1, -(1 << 24) - 3, 2000000000,
                                     -2000000000, 300000,    -300000};
    std::vector<float> acc(size_t(m * kNR));
    for (size_t i = 0; i < acc.size(); ++i) {
        const int64_t e = kEdges[(i + size_t(r.ival(0, 16))) % 17];
        const int64_t jitter = r.ival(0, 3) == 0 ? r.ival(-1, 1) : 0;  // the edges' neighbours
        const int32_t v = int32_t(e + jitter);
        std::memcpy(&acc[i], &v, 4);
    }
    std::vector<int32_t> colsum(kNR);
    for (auto &x : colsum) x = int32_t(r.ival(-50000, 50000));
    std::vector<float> acc_fused = acc;
    const int64_t ld = kNR + 5;
    std::vector<uint8_t> want(size_t(m * ld), kSentinel), got(want);
    lowp::lp_ukernel_args pa = lt::tile_args(a.data(), a_rs, b.data(), acc.data(), kg, m, n, true);
    plain.fn(&pa);
    lowp::pp_block blk;
    blk.acc = acc.data();
    blk.acc_ld = kNR;
    blk.acc_int = true;
    blk.m = m;
    blk.n = n;
    blk.colsum = colsum.data();
    blk.col_factor = uint32_t(spec.ao);
    blk.ops = spec.ops.data();
    blk.nops = int(spec.ops.size());
    const void *srcs[1] = {nullptr};
    blk.srcs = srcs;
    blk.out = out;
    blk.dst = want.data();
    blk.ldc_bytes = ld;
    lowp::pp_block_apply(blk);
    lowp::lp_ukernel_args fa = pa;
    fa.acc = acc_fused.data();
    fa.dst = got.data();
    fa.dst_ld = ld;
    fa.colsum = colsum.data();
    fa.col_factor = spec.ao;
    fa.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    fa.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
    fused.fn(&fa);
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += want[i] != got[i];
    if (bad)
        FAIL_CHECK((out == out_type::u8 ? "u8" : "s8") << " comp=" << comp << " relu=" << relu
                                                         << " m=" << m << " n=" << n << ": " << bad
                                                         << " bytes differ");
    return bad;
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp fused kernels: every fusable chain equals the portable chain, bit for bit") {
    tu::rng r(20261203);
    const lowp::eltwise_alg elts[] = {lowp::eltwise_alg::gelu_tanh, lowp::eltwise_alg::silu,
                                      lowp::eltwise_alg::sigmoid, lowp::eltwise_alg::gelu_erf,
                                      lowp::eltwise_alg::tanh, lowp::eltwise_alg::relu,
                                      lowp::eltwise_alg::leaky_relu, lowp::eltwise_alg::clip};
    const out_type outs[] = {out_type::f32, out_type::bf16, out_type::u8, out_type::s8};
    int checked = 0;
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8}) {
        const lp_backend *be = lowp::jit_avx512_lp_backend();
        if (!be || !be->supports(kind)) {
            MESSAGE("no AVX-512 lp kernels of this kind here: nothing to check");
            continue;
        }
        for (int e = -1; e < 8; ++e)
            for (int add = 0; add < 3; ++add) {
                if (e < 0 && add == 2) continue;  // "after" needs an eltwise op
                for (out_type out : outs)
                    for (int variant = 0; variant < (add ? 8 : 3); ++variant) {
                        chain_case c{};
                        c.has_elt = e >= 0;
                        c.elt = e >= 0 ? elts[e] : lowp::eltwise_alg::relu;
                        c.add = add;
                        c.add_bf16 = variant == 1 || variant == 6;
                        c.sum = variant == 3 || variant == 4 ? variant - 2 : 0;  // 3, 4: the add is a sum
                        c.mul = variant == 5 || variant == 7;                     // 5, 7: a multiply
                        c.per_n = variant == 6 || variant == 7;                   // 6, 7: per column
                        c.out = out;
                        c.scale = variant % 3;
                        c.zp = variant == 2 || variant == 4;
                        for (int m : {1, 5, 12})
                            for (int n : {7, 16, 23, 32}) {
                                // Accumulating kernels (the last of several
                                // K blocks) on every other tile.
                                check_case(*be, kind, c, m, n, (checked & 1) != 0, r);
                                ++checked;
                            }
                    }
            }
    }
    MESSAGE("fused chains checked: " << checked);
}

TEST_CASE("lp fused kernels: int8 to u8 / s8 without a float step narrows the int32 exactly") {
    const lp_backend *be = lowp::jit_avx512_lp_backend();
    if (!be || !be->supports(lp_kind::u8s8)) {
        MESSAGE("no AVX-512 int8 kernels here: nothing to check");
        return;
    }
    tu::rng r(20261207);
    int checked = 0;
    for (out_type out : {out_type::u8, out_type::s8})
        for (int flags = 0; flags < 4; ++flags)
            for (int m : {1, 5, 12})
                for (int n : {7, 16, 23, 32}) {
                    check_int_narrow(*be, out, (flags & 1) != 0, (flags & 2) != 0, m, n, r);
                    ++checked;
                }
    MESSAGE("tiles checked: " << checked);
}

TEST_CASE("lp fused kernels: bf16 output without a step that makes denormals (none, relu, clip)") {
    const lp_backend *be = lowp::jit_avx512_lp_backend();
    if (!be || !be->supports(lp_kind::bf16)) {
        MESSAGE("no AVX-512 bf16 lp kernels here: nothing to check");
        return;
    }
    tu::rng r(20261206);
    int bad = 0;
    for (int m = 1; m <= lowp::kMR; ++m)
        for (int nv = 1; nv <= 2; ++nv)
            for (int op = 0; op < 4; ++op) bad += check_unscreened(*be, m, nv, op, r);
    CHECK(bad == 0);
}

TEST_CASE("lp fused kernels: bf16 output finds a denormal in any row and column of the tile") {
    const lp_backend *be = lowp::jit_avx512_lp_backend();
    if (!be || !be->supports(lp_kind::bf16)) {
        MESSAGE("no AVX-512 bf16 lp kernels here: nothing to check");
        return;
    }
    int bad = 0;
    for (int m = 1; m <= lowp::kMR; ++m)
        for (int nv = 1; nv <= 2; ++nv)
            for (int row = 0; row < m; ++row)
                for (int col : {0, 9, 15, 16, 26, 31}) {
                    if (col >= 16 * nv) continue;
                    for (bool relu : {false, true}) bad += check_single_denormal(*be, m, nv, row, col, relu);
                }
    CHECK(bad == 0);
}

}  // TEST_SUITE

#endif  // ANVIL_TESTS_HAVE_JIT
