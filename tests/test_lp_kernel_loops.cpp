// The loops inside the AVX-512 JIT lp kernels (lp_ukernel.h) that the
// convolution's tile walk relies on and its differential tests only see
// indirectly, plus the fused epilogue's bf16 store:
//
// * row tiles: one call with args.m_tiles = T writes exactly what T calls of
//   one tile each (A, dst and the residual advanced by a tile) write, bit
//   for bit, and nothing outside those rows and the store mask's columns;
// * bf16 output: the kernels convert with vcvtne2ps2bf16, which flushes
//   denormal inputs to zero, and fall back to the exact conversion for a
//   tile that holds one.  Outputs of every class (normal, denormal of both
//   signs, zeros, infinities, NaN) must equal lowp::f32_to_bf16 of the
//   finished value.
//
// * K segments (args.k_segs, every kernel of the backend): a call that
//   reduces over S segments of kg groups, whose A lie a_seg_rs bytes apart
//   and whose B groups lie b_seg_skip groups apart, equals one call over
//   the S * kg groups gathered into one A and one B, bit for bit.
//
// * widened A (desc.a_f32, bf16): plain and fused kernels, with row tiles
//   and K segments, on A widened to fp32 (every A offset doubled) store the
//   bits of the vdpbf16ps kernels on the bf16 A, for data whose rounding
//   order matters.
//
// * k_tail (bf16): each segment's last element 1 is taken as 0 whatever A
//   holds there (NaN / Inf in the test).
//
// The kernels depend on the CPU, not on the ISA cap: the suite runs once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "fallback/hwy_lowp.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_ref.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT

namespace {

using anvil::lowp::lp_backend;
using anvil::lowp::lp_kind;
using anvil::lowp::lp_ukernel_args;
using anvil::lowp::lp_ukernel_ref;
namespace lowp = anvil::lowp;

constexpr int kNR = lowp::kNR;
constexpr uint8_t kSentinel = 0xa5;

const lp_backend *avx512_for(lp_kind kind) {
    const lp_backend *be = lowp::jit_avx512_lp_backend();
    return be && be->supports(kind) ? be : nullptr;
}

lp_ukernel_ref fused_kernel(const lp_backend &be, lp_kind kind, int m, int nv, uint8_t out,
                            uint8_t flags, uint8_t binary) {
    lp_ukernel_ref k;
    REQUIRE(be.get(lowp::make_lp_epi_desc(uint8_t(be.tier()), kind, m, nv, false, out, flags, binary),
                   &k) == anvil_success);
    REQUIRE(bool(k.fn));
    return k;
}

int out_bytes(uint8_t out) {
    return out == lowp::EPI_F32 ? 4 : out == lowp::EPI_BF16 ? 2 : 1;
}

// The operands of `rows` rows of A (K = kg groups), one packed B panel, a
// residual and per-column bias, scales and column sums, all small integers
// so that every path is exact.
struct operands {
    int64_t rows, kg, a_rs, dst_ld;
    std::vector<uint8_t> a, b;
    std::vector<float> bias, scales, residual;
    std::vector<int32_t> colsum;
    operands(lp_kind kind, int64_t rows_, int64_t kg_, tu::rng &r, int64_t dst_ld_ = kNR + 5)
        : rows(rows_), kg(kg_), a_rs(kg_ * 4 + 8), dst_ld(dst_ld_) {
        a.resize(size_t(rows * a_rs));
        b.resize(size_t(kg * kNR * 4));
        auto fill = [&](std::vector<uint8_t> &v, bool is_b) {
            for (size_t i = 0; i + 1 < v.size(); i += 2) {
                if (kind == lp_kind::bf16) {
                    const uint16_t x = lowp::f32_to_bf16(float(r.ival(-3, 3)));
                    std::memcpy(&v[i], &x, 2);
                } else {
                    v[i] = uint8_t(is_b ? r.ival(-8, 8) : r.ival(0, 9));
                    v[i + 1] = uint8_t(is_b ? r.ival(-8, 8) : r.ival(0, 9));
                }
            }
        };
        fill(a, false);
        fill(b, true);
        for (int c = 0; c < kNR; ++c) {
            bias.push_back(float(r.ival(-20, 20)));
            scales.push_back(float(r.ival(1, 4)) * 0.25f);
            colsum.push_back(int32_t(r.ival(-50, 50)));
        }
        residual.resize(size_t(rows * dst_ld));
        for (auto &x : residual) x = float(r.ival(-30, 30));
    }
};

// Runs rows [0, tiles * m) of `ops` through the fused kernel: one call with
// m_tiles = tiles, or (one_call false) one call per tile; returns dst.
std::vector<uint8_t> run_tiles(const lp_ukernel_ref &k, const operands &ops, int m, int n,
                               int64_t tiles, uint8_t out, bool one_call) {
    const int ob = out_bytes(out);
    // dst from a 64-byte boundary (with dst_ld a multiple of 64 bytes, the
    // rows are aligned as non-temporal stores need).
    const size_t dst_bytes = size_t((ops.rows + 2) * ops.dst_ld * ob);
    std::vector<uint8_t> dst_buf(dst_bytes + 64, kSentinel);
    uint8_t *const dst_base =
        dst_buf.data() + (64 - reinterpret_cast<uintptr_t>(dst_buf.data()) % 64) % 64;
    std::vector<float> acc(size_t(lowp::kMR * kNR));
    lp_ukernel_args a{};
    a.b = ops.b.data();
    a.b_ld = kNR * 4;
    a.acc = acc.data();
    a.acc_ld = kNR;
    a.kg = ops.kg;
    a.m = m;
    a.n = n;
    a.a_rs = ops.a_rs;
    a.dst_ld = ops.dst_ld * ob;
    a.colsum = ops.colsum.data();
    a.col_factor = 3;
    a.scales = ops.scales.data();
    a.bias = ops.bias.data();
    a.zero_point = 2.0f;
    a.alpha = 0.5f;
    a.binary_ld = ops.dst_ld * 4;
    a.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    a.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
    uint8_t *dst0 = dst_base + ops.dst_ld * ob;  // a guard row above
    auto at_tile = [&](int64_t t) {
        a.a = ops.a.data() + t * m * ops.a_rs;
        a.dst = dst0 + t * m * a.dst_ld;
        a.binary = reinterpret_cast<const uint8_t *>(ops.residual.data() + t * m * ops.dst_ld);
    };
    if (one_call) {
        at_tile(0);
        a.m_tiles = tiles;
        a.a_tile_rs = m * ops.a_rs;
        k.fn(&a);
    } else {
        for (int64_t t = 0; t < tiles; ++t) {
            at_tile(t);
            k.fn(&a);
        }
    }
    return std::vector<uint8_t>(dst_base, dst_base + dst_bytes);
}

// A fused epilogue: output type, EPI_* flags, residual add.
struct epi_case {
    uint8_t out, flags, binary;
};

// A bf16 kernel of the backend: plain, or fused with `e`; A widened or not.
lp_ukernel_ref bf16_kernel(const lp_backend &be, bool fused, int m, int nv, bool widened,
                           const epi_case &e, bool k_tail = false) {
    lowp::lp_ukernel_desc d =
        fused ? lowp::make_lp_epi_desc(uint8_t(be.tier()), lp_kind::bf16, m, nv, false, e.out, e.flags,
                                       e.binary, widened)
              : lowp::make_lp_desc(uint8_t(be.tier()), lp_kind::bf16, m, nv, false, widened);
    d.k_tail = k_tail ? 1 : 0;
    lp_ukernel_ref k;
    REQUIRE(be.get(d, &k) == anvil_success);
    return k;
}

// The arguments of a call over `segs` K segments of kg groups (A rows a_rs
// and segments seg_rs bytes apart) writing m x n into out (ld elements of
// out_bytes a row), as both the accumulators and the fused kernels' dst.
lp_ukernel_args segment_args(const void *a, int64_t a_rs, int64_t seg_rs, int64_t segs, const void *b,
                             int64_t kg, int m, int n, void *out, int64_t ld, int out_bytes) {
    lp_ukernel_args args{};
    args.a = static_cast<const uint8_t *>(a);
    args.a_rs = a_rs;
    args.a_seg_rs = seg_rs;
    args.k_segs = segs;
    args.b = static_cast<const uint8_t *>(b);
    args.b_ld = kNR * 4;
    args.kg = kg;
    args.m = m;
    args.n = n;
    args.acc = out;
    args.acc_ld = ld;
    args.dst = static_cast<uint8_t *>(out);
    args.dst_ld = ld * out_bytes;
    args.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    args.store_mask[1] = uint16_t(n > 16 ? (1u << (n - 16)) - 1 : 0);
    return args;
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp fused kernels: m_tiles row tiles equal tile-by-tile calls, bit for bit") {
    int ran = 0;
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8}) {
        const lp_backend *be = avx512_for(kind);
        if (!be) continue;
        const bool int8 = kind == lp_kind::u8s8;
        const uint8_t comp = int8 ? lowp::EPI_COMP : 0;
        const epi_case epis[] = {
            {lowp::EPI_F32, uint8_t(comp | lowp::EPI_BIAS), lowp::EPI_ADD_F32},
            {lowp::EPI_BF16, uint8_t(lowp::EPI_BIAS | lowp::EPI_RELU), lowp::EPI_ADD_F32},
            {lowp::EPI_BF16, 0, lowp::EPI_ADD_NONE},
            {lowp::EPI_U8, uint8_t(comp | lowp::EPI_SCALE_N | lowp::EPI_ZP), lowp::EPI_ADD_NONE},
            {lowp::EPI_S8, uint8_t(comp | lowp::EPI_SCALE_1 | lowp::EPI_LEAKY), lowp::EPI_ADD_F32},
        };
        tu::rng r(7);
        for (const epi_case &e : epis)
            for (int m : {1, 5, 11, 12})
                for (int n : {7, 16, 23, 32})
                    for (int64_t tiles : {1, 2, 3, 9}) {
                        const int nv = n > 16 ? 2 : 1;
                        const int64_t kg = int64_t(r.ival(1, 9));
                        const operands ops(kind, tiles * m + 3, kg, r);
                        const lp_ukernel_ref k = fused_kernel(*be, kind, m, nv, e.out, e.flags, e.binary);
                        const auto one = run_tiles(k, ops, m, n, tiles, e.out, true);
                        const auto each = run_tiles(k, ops, m, n, tiles, e.out, false);
                        INFO(k.name, " m=", m, " n=", n, " tiles=", tiles, " kg=", kg);
                        CHECK(one == each);
                        // Nothing outside rows < tiles * m and columns < n.
                        const int ob = out_bytes(e.out);
                        bool untouched = true;
                        for (int64_t row = 0; row < ops.rows + 2; ++row)
                            for (int64_t c = 0; c < ops.dst_ld; ++c) {
                                const bool written = row >= 1 && row <= tiles * m && c < n;
                                if (written) continue;
                                for (int byte = 0; byte < ob; ++byte)
                                    untouched &= one[size_t((row * ops.dst_ld + c) * ob + byte)] == kSentinel;
                            }
                        CHECK(untouched);
                        ++ran;
                    }
    }
    if (ran == 0) MESSAGE("no AVX-512 lp JIT backend on this CPU: nothing to check");
}

TEST_CASE("lp kernels: K segments equal one call over the gathered A, bit for bit") {
    int ran = 0;
    // The AVX-512 JIT backend (plain and fused kernels) and the Highway
    // backend of every compiled target this CPU runs (plain kernels).
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8}) {
    std::vector<const lp_backend *> backends;
    for (const auto &t : anvil::fallback::compiled_lp_targets())
        backends.push_back(anvil::fallback::hwy_lp_backend_for_target(t.target));
    const lp_backend *jit = avx512_for(kind);
    if (jit) backends.push_back(jit);
    for (const lp_backend *be : backends) {
        REQUIRE(be);
        REQUIRE(be->supports_k_segments());
        tu::rng r(11);
        const int fused_kinds = be == jit ? 2 : 1;  // Highway has no fused epilogue
        for (int fused = 0; fused < fused_kinds; ++fused)
            for (int m : {1, 6, 12})
                for (int nv : {1, 2})
                    for (int64_t segs : {1, 2, 3, 7})
                        for (int64_t kg : {1, 3, 4, 9}) {
                            const int n = nv * 16 - 3;
                            const int64_t all = segs * kg;  // groups in all
                            // Segmented A: rows a_rs apart inside a segment,
                            // segments a_seg_rs apart (gaps of junk between).
                            const int64_t a_rs = kg * 4 + 12, seg_rs = m * a_rs + 36;
                            std::vector<uint8_t> a_seg(size_t(segs * seg_rs)), a_cat(size_t(m * all * 4));
                            for (auto &x : a_seg) x = uint8_t(r.ival(0, 255));
                            if (kind == lp_kind::bf16)  // small integers: no NaN, no overflow
                                for (size_t i = 0; i + 1 < a_seg.size(); i += 2) {
                                    const uint16_t v = lowp::f32_to_bf16(float(r.ival(-5, 5)));
                                    std::memcpy(&a_seg[i], &v, 2);
                                }
                            for (int i = 0; i < m; ++i)
                                for (int64_t sg = 0; sg < segs; ++sg)
                                    std::memcpy(&a_cat[size_t((i * all + sg * kg) * 4)],
                                                &a_seg[size_t(sg * seg_rs + i * a_rs)], size_t(kg * 4));
                            std::vector<uint8_t> b(size_t(all * kNR * 4));
                            for (size_t i = 0; i + 1 < b.size(); i += 2) {
                                if (kind == lp_kind::bf16) {
                                    const uint16_t v = lowp::f32_to_bf16(float(r.ival(-5, 5)));
                                    std::memcpy(&b[i], &v, 2);
                                } else {
                                    b[i] = uint8_t(r.ival(0, 255));
                                    b[i + 1] = uint8_t(r.ival(0, 255));
                                }
                            }
                            // The segmented call's B: each segment's kg groups
                            // followed by `skip` groups of 0x7f bytes (a huge
                            // bf16, int8 127) that it must jump over.
                            const int64_t skip = segs > 1 ? (kg + m + nv) % 3 : 0;
                            const size_t group_bytes = size_t(kNR * 4);
                            std::vector<uint8_t> b_gap(size_t(segs * (kg + skip)) * group_bytes, 0x7f);
                            for (int64_t sg = 0; sg < segs; ++sg)
                                std::memcpy(&b_gap[size_t(sg * (kg + skip)) * group_bytes],
                                            &b[size_t(sg * kg) * group_bytes], size_t(kg) * group_bytes);
                            lp_ukernel_ref k;
                            if (fused)
                                k = fused_kernel(*be, kind, m, nv, lowp::EPI_F32, 0, lowp::EPI_ADD_NONE);
                            else
                                REQUIRE(be->get(lowp::make_lp_desc(uint8_t(be->tier()), kind, m, nv, false),
                                                &k) == anvil_success);
                            auto run = [&](bool segmented) {
                                std::vector<uint32_t> out(size_t(m * (kNR + 1)), 0xdeadbeef);
                                lp_ukernel_args args{};
                                args.b = b.data();
                                args.b_ld = kNR * 4;
                                args.m = m;
                                args.n = n;
                                args.acc = out.data();
                                args.acc_ld = kNR + 1;
                                args.dst = reinterpret_cast<uint8_t *>(out.data());
                                args.dst_ld = (kNR + 1) * 4;
                                args.store_mask[0] = 0xffff;
                                args.store_mask[1] = uint16_t((1u << (n - 16 > 0 ? n - 16 : 0)) - 1);
                                if (nv == 1) args.store_mask[0] = uint16_t((1u << n) - 1);
                                if (segmented) {
                                    args.a = a_seg.data();
                                    args.a_rs = a_rs;
                                    args.b = b_gap.data();
                                    args.kg = kg;
                                    args.k_segs = segs;
                                    args.a_seg_rs = seg_rs;
                                    args.b_seg_skip = skip;
                                } else {
                                    args.a = a_cat.data();
                                    args.a_rs = all * 4;
                                    args.kg = all;
                                }
                                k.fn(&args);
                                return out;
                            };
                            INFO(k.name, " segs=", segs, " kg=", kg, " skip=", skip);
                            CHECK(run(true) == run(false));
                            ++ran;
                        }
    }
    }
    CHECK(ran > 0);
}

TEST_CASE("lp fused kernels: non-temporal stores (desc.nt_store) give the same bytes") {
    int ran = 0;
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8}) {
        const lp_backend *be = avx512_for(kind);
        if (!be) continue;
        REQUIRE(be->supports_nt_store());
        const uint8_t comp = kind == lp_kind::u8s8 ? lowp::EPI_COMP : 0;
        const epi_case epis[] = {
            {lowp::EPI_F32, uint8_t(comp | lowp::EPI_BIAS), lowp::EPI_ADD_F32},
            {lowp::EPI_F32, uint8_t(comp | lowp::EPI_SCALE_N), lowp::EPI_ADD_NONE},
            {lowp::EPI_BF16, uint8_t(comp | lowp::EPI_BIAS | lowp::EPI_RELU), lowp::EPI_ADD_F32},
            {lowp::EPI_BF16, comp, lowp::EPI_ADD_NONE},
            {lowp::EPI_U8, uint8_t(comp | lowp::EPI_SCALE_N | lowp::EPI_ZP), lowp::EPI_ADD_NONE},
        };
        tu::rng r(12);
        for (const epi_case &e : epis)
            for (int m : {1, 5, 12})
                for (int n : {29, 32})
                    for (int64_t tiles : {1, 3})
                        for (int64_t dst_ld : {int64_t(kNR + 5), int64_t(64)})
                            for (int zero_a : {0, 1}) {
                                // zero_a: A = 0 and a denormal bias, so bf16's
                                // fast store finds denormals and stores the
                                // tile again exactly (over the non-temporal
                                // stores).
                                operands ops(kind, 3 * m, 5, r, dst_ld);
                                if (zero_a) {
                                    std::fill(ops.a.begin(), ops.a.end(), uint8_t(0));
                                    ops.bias[size_t(n - 1)] = -0x1p-140f;
                                }
                                const int nv = 2;
                                lp_ukernel_ref plain, nt;
                                REQUIRE(be->get(lowp::make_lp_epi_desc(uint8_t(be->tier()), kind, m, nv,
                                                                       false, e.out, e.flags, e.binary),
                                                &plain) == anvil_success);
                                REQUIRE(be->get(lowp::make_lp_epi_desc(uint8_t(be->tier()), kind, m, nv,
                                                                       false, e.out, e.flags, e.binary,
                                                                       false, true),
                                                &nt) == anvil_success);
                                CHECK(std::string(nt.name).find("_nt") != std::string::npos);
                                INFO(nt.name, " n=", n, " tiles=", tiles, " dst_ld=", dst_ld,
                                     " zero_a=", zero_a);
                                CHECK(run_tiles(nt, ops, m, n, tiles, e.out, true) ==
                                      run_tiles(plain, ops, m, n, tiles, e.out, true));
                                ++ran;
                            }
    }
    if (ran == 0) MESSAGE("no AVX-512 lp backend here: nothing to check");
}

TEST_CASE("lp fused kernels: bf16 output of every value class equals f32_to_bf16") {
    const lp_backend *be = avx512_for(lp_kind::bf16);
    if (!be) {
        MESSAGE("no AVX512-BF16 here: nothing to check");
        return;
    }
    // A is zero, so acc = 0 and the finished value is 0 + bias[c]: the
    // bias carries the classes to the conversion unchanged (0 + -0 is +0).
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float denorm = std::numeric_limits<float>::denorm_min();
    const float values[] = {1.0f,          -2.5f,        0x1p-126f,        0x1.fffffep-127f,
                            -0x1p-130f,    denorm,       -denorm,          0x1.0081p-127f,
                            0.0f,          -0.0f,        inf,              -inf,
                            nan,           -nan,         0x1.ff7fp127f,    3.0e38f,
                            0x1.008p0f,    0x1.018p0f,   0x1.7fffffp-127f, -0x1.00ffp-126f};
    const int nvals = int(sizeof(values) / sizeof(values[0]));
    for (int m : {1, 4, 12})
        for (int n : {9, 16, 32}) {
            const int nv = n > 16 ? 2 : 1;
            const lp_ukernel_ref k =
                fused_kernel(*be, lp_kind::bf16, m, nv, lowp::EPI_BF16, lowp::EPI_BIAS, lowp::EPI_ADD_NONE);
            // Tile sets: all normal (the fast conversion stands), then one
            // denormal in the last row only, then every class.
            for (int variant = 0; variant < 3; ++variant) {
                std::vector<uint16_t> a(size_t(m * 4), 0), b(size_t(2 * kNR * 2), 0);
                std::vector<float> bias(kNR), acc(size_t(lowp::kMR * kNR));
                for (int c = 0; c < kNR; ++c)
                    bias[c] = variant == 2 ? values[c % nvals] : float(c - 7) * 0.375f;
                if (variant == 1) bias[size_t(n - 1)] = -0x1p-140f;
                const int64_t ld = kNR + 3;
                std::vector<uint16_t> dst(size_t(m * ld), 0xdead);
                lp_ukernel_args args{};
                args.a = reinterpret_cast<const uint8_t *>(a.data());
                args.a_rs = 8;
                args.b = reinterpret_cast<const uint8_t *>(b.data());
                args.b_ld = kNR * 4;
                args.acc = acc.data();
                args.acc_ld = kNR;
                args.kg = 2;
                args.m = m;
                args.n = n;
                args.dst = reinterpret_cast<uint8_t *>(dst.data());
                args.dst_ld = ld * 2;
                args.bias = bias.data();
                args.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
                args.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
                k.fn(&args);
                int bad = 0;
                for (int i = 0; i < m; ++i)
                    for (int c = 0; c < ld; ++c) {
                        const uint16_t want = c < n ? lowp::f32_to_bf16(0.0f + bias[size_t(c)]) : 0xdead;
                        const uint16_t got = dst[size_t(i * ld + c)];
                        if (got != want && bad++ < 5) {
                            char msg[160];
                            std::snprintf(msg, sizeof msg,
                                          "m=%d n=%d variant=%d row %d col %d (bias %a): got 0x%04x want 0x%04x",
                                          m, n, variant, i, c, double(bias[size_t(c)]), got, want);
                            FAIL_CHECK(msg);
                        }
                    }
                CHECK(bad == 0);
            }
        }
}

TEST_CASE("lp widened-A kernels equal the bf16 kernels: fused epilogues, row tiles, K segments") {
    const lp_backend *be = avx512_for(lp_kind::bf16);
    if (!be) {
        MESSAGE("no AVX512-BF16 here: nothing to check");
        return;
    }
    REQUIRE(be->accepts_widened_bf16_a());
    tu::rng r(29);
    // Normal bf16 of magnitudes 2^-20 .. 2^21 and both signs: no denormal
    // (vdpbf16ps flushes them, lp_ukernel.h) and the order of each group's
    // two roundings shows.
    auto rand_bf16 = [&] {
        return uint16_t((uint32_t(r.ival(0, 1)) << 15) | (uint32_t(127 + r.ival(-20, 20)) << 7) |
                        uint32_t(r.ival(0, 127)));
    };
    int ran = 0;
    for (int fused = 0; fused <= 1; ++fused)
        for (int m : {1, 5, 12})
            for (int nv : {1, 2})
                for (int64_t tiles : {1, 3})
                    for (int64_t segs : {1, 3})
                        for (int64_t kg : {1, 4, 9}) {
                            if (!fused && tiles > 1) continue;  // plain kernels: one tile
                            const int n = nv * 16 - 5;
                            // bf16 A: tile t, segment s, row i, group g at byte
                            // t * tile_rs + s * seg_rs + i * a_rs + g * 4, junk
                            // between; the widened copy doubles every offset.
                            const int64_t a_rs = kg * 4 + 8, seg_rs = m * a_rs + 20,
                                          tile_rs = segs * seg_rs + 12;
                            std::vector<uint16_t> a(size_t(tiles * tile_rs / 2));
                            for (auto &x : a) x = rand_bf16();
                            std::vector<uint32_t> aw(a.size());
                            for (size_t e = 0; e < a.size(); ++e) aw[e] = uint32_t(a[e]) << 16;
                            std::vector<uint16_t> b(size_t(segs * kg * kNR * 2));
                            for (auto &x : b) x = rand_bf16();
                            std::vector<float> bias(kNR), residual(size_t(tiles * m * kNR));
                            for (auto &x : bias) x = float(r.ival(-20, 20));
                            for (auto &x : residual) x = r.frac();
                            const epi_case e{lowp::EPI_BF16, uint8_t(lowp::EPI_BIAS | lowp::EPI_RELU),
                                             lowp::EPI_ADD_F32};
                            const lp_ukernel_ref k[2] = {bf16_kernel(*be, fused, m, nv, false, e),
                                                         bf16_kernel(*be, fused, m, nv, true, e)};
                            auto run = [&](int w) {
                                std::vector<uint32_t> out(size_t(tiles * m * kNR), 0xdeadbeef);
                                const int64_t scale = w ? 2 : 1;  // bytes of A per bf16 byte
                                const void *a_w = w ? static_cast<const void *>(aw.data()) : a.data();
                                lp_ukernel_args args = segment_args(a_w, a_rs * scale, seg_rs * scale, segs,
                                                                    b.data(), kg, m, n, out.data(), kNR, 2);
                                args.a_tile_rs = tile_rs * scale;
                                args.m_tiles = tiles;
                                args.bias = bias.data();
                                args.binary = reinterpret_cast<const uint8_t *>(residual.data());
                                args.binary_ld = kNR * 4;
                                k[w].fn(&args);
                                return out;
                            };
                            INFO(k[1].name, " tiles=", tiles, " segs=", segs, " kg=", kg);
                            CHECK(run(1) == run(0));
                            ++ran;
                        }
    CHECK(ran > 0);
}

TEST_CASE("lp kernels: k_tail (bf16) takes each segment's last element as 0 whatever A holds there") {
    // A segment's last group with desc.k_tail: element 1 of its A dword is
    // NaN / Inf here (the next pixel's channel in a convolution) and its B
    // element 0 (the contract); the kernel must give the bits of a plain
    // kernel on A with 0 there -- plain, fused (1 or 3 row tiles), widened
    // A, 1..3 segments.
    const lp_backend *be = avx512_for(lp_kind::bf16);
    if (!be) {
        MESSAGE("no AVX-512 BF16 lp JIT backend on this CPU: nothing to check");
        return;
    }
    REQUIRE(be->supports_k_tail());
    tu::rng r(31);
    int ran = 0;
    const uint16_t specials[] = {lowp::f32_to_bf16(tu::qnan()), lowp::f32_to_bf16(tu::inf()),
                                 lowp::f32_to_bf16(-tu::inf())};
    for (int widened = 0; widened < 2; ++widened)
        for (int fused = 0; fused < 2; ++fused)
            for (int m : {1, 5, 12})
                for (int nv : {1, 2})
                    for (int64_t segs : {1, 3})
                        for (int64_t kg : {1, 2, 5})
                            for (int64_t tiles : {1, 3}) {
                            if (!fused && tiles > 1) continue;  // plain kernels: one tile
                            const int n = nv * 16 - 3;
                            // bf16 bytes: tile t, segment s, row i at t * tile_rs +
                            // s * seg_rs + i * a_rs, junk between.
                            const int64_t a_rs = kg * 4 + 8, seg_rs = m * a_rs + 20, tile_rs = segs * seg_rs + 12;
                            std::vector<uint16_t> a(size_t(tiles * tile_rs / 2)), a_zero;
                            for (auto &x : a) x = lowp::f32_to_bf16(float(r.ival(-5, 5)));
                            a_zero = a;
                            std::vector<uint16_t> b(size_t(segs * kg * kNR * 2));
                            for (auto &x : b) x = lowp::f32_to_bf16(float(r.ival(-5, 5)));
                            for (int64_t sg = 0; sg < segs; ++sg) {
                                for (int64_t t = 0; t < tiles; ++t)
                                    for (int i = 0; i < m; ++i) {  // element 1 of the last group
                                        const size_t e = size_t(
                                            (t * tile_rs + sg * seg_rs + i * a_rs + (kg - 1) * 4) / 2 + 1);
                                        a[e] = specials[r.ival(0, 2)];
                                        a_zero[e] = 0;
                                    }
                                for (int c = 0; c < kNR; ++c) b[size_t(((sg * kg + kg - 1) * kNR + c) * 2 + 1)] = 0;
                            }
                            // Widened A: every element as fp32, every offset doubled.
                            auto widen = [](const std::vector<uint16_t> &v) {
                                std::vector<float> w(v.size());
                                for (size_t i = 0; i < v.size(); ++i) w[i] = lowp::bf16_to_f32(v[i]);
                                return w;
                            };
                            const std::vector<float> aw = widen(a), aw_zero = widen(a_zero);
                            auto run = [&](const lp_ukernel_ref &k, const void *a_ptr) {
                                std::vector<uint32_t> out(size_t(tiles * m * (kNR + 1)), 0xdeadbeef);
                                const int64_t scale = widened ? 2 : 1;
                                lp_ukernel_args args = segment_args(a_ptr, a_rs * scale, seg_rs * scale, segs,
                                                                    b.data(), kg, m, n, out.data(), kNR + 1, 4);
                                args.m_tiles = tiles;
                                args.a_tile_rs = tile_rs * scale;
                                k.fn(&args);
                                return out;
                            };
                            const epi_case e{lowp::EPI_F32, 0, lowp::EPI_ADD_NONE};
                            const lp_ukernel_ref kt = bf16_kernel(*be, fused, m, nv, widened, e, true),
                                                 k0 = bf16_kernel(*be, fused, m, nv, widened, e, false);
                            INFO(kt.name, " segs=", segs, " kg=", kg, " tiles=", tiles);
                            CHECK(std::string(kt.name).find("_ktail") != std::string::npos);
                            const void *with_specials = widened ? static_cast<const void *>(aw.data()) : a.data();
                            const void *with_zeros = widened ? static_cast<const void *>(aw_zero.data()) : a_zero.data();
                            CHECK(run(kt, with_specials) == run(k0, with_zeros));
                            ++ran;
                        }
    MESSAGE("k_tail: ", ran, " kernel pairs compared");
    // int8 takes no k_tail (a byte times a zero weight adds 0), nor do the
    // backends without supports_k_tail().
    lowp::lp_ukernel_desc d = lowp::make_lp_desc(uint8_t(be->tier()), lp_kind::u8s8, 4, 1, false);
    d.k_tail = 1;
    lp_ukernel_ref k;
    CHECK(be->get(d, &k) != anvil_success);
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        const lp_backend *hwy = anvil::fallback::hwy_lp_backend_for_target(t.target);
        CHECK_FALSE(hwy->supports_k_tail());
        lowp::lp_ukernel_desc h = lowp::make_lp_desc(uint8_t(hwy->tier()), lp_kind::bf16, 4, 1, false);
        h.k_tail = 1;
        CHECK(hwy->get(h, &k) != anvil_success);
    }
}

}  // TEST_SUITE

#endif  // ANVIL_TESTS_HAVE_JIT
