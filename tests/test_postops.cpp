// The post-op chain steps (lowp/postops.h, Highway implementation in
// src/fallback/hwy_postops.cc) under every ISA cap this machine allows and
// for every compiled Highway target:
//  - scale/bias, the exact eltwise ops (relu, leaky_relu, clip), the binary
//    ops (f32 / bf16 operands, per-N or M x N) and every store conversion
//    bit-exact against scalar references written out here, for n = 0..70,
//    with operands / outputs ending at a guard page (no access past n) at
//    unaligned addresses;
//  - the transcendental ops within the bounds of docs/postops.md over a
//    dense sweep, their limits (+-inf, NaN, large |x|), and bitwise equal
//    results on every target.
// Setting ANVIL_POSTOPS_MEASURE=1 makes the accuracy case sweep much more
// densely and print the measured errors (the table in docs/postops.md).
// Independent of the process's ISA cap: suite "once".

// The references below round each multiply and add on their own, as the
// contract says; keep GCC from contracting them into FMAs.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <doctest/doctest.h>

#include <hwy/targets.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_postops.h"
#include "fallback/hwy_sgemm.h"
#include "lowp/lp_ref.h"
#include "lowp/postops.h"
#include "hwy_target.h"
#include "test_util.h"

namespace {

using anvil::fallback::hwy_postops_target;
using anvil::lowp::binary_alg;
using anvil::lowp::eltwise_alg;
using anvil::lowp::out_type;
using anvil::lowp::post_op;
using tu::bits;
using tu::from_bits;

// ------------------------------------------------------- implementations
// One way of calling the three steps: the public functions under an ISA
// cap, or one compiled target's entry points.
struct impl {
    std::string name;
    anvil_isa_t cap = anvil_isa_scalar;  // set before each call (public functions)
    bool uses_cap = false;
    hwy_postops_target fns;
};

std::vector<impl> all_impls() {
    std::vector<impl> out;
    const anvil_isa_t detected = anvil_get_detected_isa();
    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        if (cap > detected) continue;
        impl m;
        m.name = std::string("cap ") + anvil_isa_name(cap);
        m.cap = cap;
        m.uses_cap = true;
        m.fns.scale_bias = &anvil::lowp::pp_scale_bias;
        m.fns.apply = &anvil::lowp::pp_apply;
        m.fns.store = &anvil::lowp::pp_store;
        m.fns.block = &anvil::lowp::pp_block_apply;
        out.push_back(m);
    }
    for (const hwy_postops_target &t : anvil::fallback::postops_targets()) {
        impl m;
        m.name = std::string("target ") + t.name;
        m.fns = t;
        out.push_back(m);
    }
    return out;
}

// Runs f for every implementation, with the cap set where it matters, and
// puts the process's cap back afterwards.
void for_each_impl(const std::function<void(const impl &)> &f) {
    const anvil_isa_t saved = anvil_get_effective_isa();
    for (const impl &m : all_impls()) {
        CAPTURE(m.name);
        if (m.uses_cap) anvil::cpu::set_max_isa_for_test(m.cap);
        f(m);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
    CHECK(anvil_get_effective_isa() == saved);
}

// ------------------------------------------------------- scalar references
float ref_eltwise_exact(const post_op &o, float v) {
    switch (o.eltwise) {
        case eltwise_alg::relu: return v <= 0.0f ? 0.0f : v;  // -0 -> +0, NaN stays
        case eltwise_alg::leaky_relu: return v > 0.0f ? v : o.alpha * v;
        case eltwise_alg::clip: return std::min(std::max(v, o.alpha), o.beta);
        default: break;
    }
    FAIL("not an exact op");
    return 0;
}

void ref_store(const float *x, int64_t n, float zp, out_type type, void *dst) {
    for (int64_t c = 0; c < n; ++c) {
        const float v = zp != 0.0f ? x[c] + zp : x[c];
        if (type == out_type::f32) {
            static_cast<float *>(dst)[c] = v;
        } else if (type == out_type::bf16) {
            static_cast<uint16_t *>(dst)[c] = anvil::lowp::f32_to_bf16(v);
        } else {
            const double lo = type == out_type::s32 ? -2147483648.0 : type == out_type::u8 ? 0.0 : -128.0;
            const double hi = type == out_type::s32 ? 2147483647.0 : type == out_type::u8 ? 255.0 : 127.0;
            double r = std::isnan(v) ? 0.0 : std::nearbyint(double(v));  // ties to even
            r = std::min(std::max(r, lo), hi);
            if (type == out_type::s32)
                static_cast<int32_t *>(dst)[c] = int32_t(r);
            else if (type == out_type::u8)
                static_cast<uint8_t *>(dst)[c] = uint8_t(r);
            else
                static_cast<int8_t *>(dst)[c] = int8_t(r);
        }
    }
}

int out_bytes(out_type t) {
    return t == out_type::f32 || t == out_type::s32 ? 4 : t == out_type::bf16 ? 2 : 1;
}

// ------------------------------------------------------- input values
// Values where conversions and exact ops have edges: zeros, ties at .5
// (even and odd neighbours, both signs), the saturation bounds of u8 / s8
// / s32, bf16 rounding ties and carries, subnormals, infinities, NaNs
// (quiet, signalling, negative, with payloads).
std::vector<float> special_values() {
    std::vector<float> v = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 3.5f,
                            0.49999997f, -0.49999997f, 0.50000006f, 1.0f, -1.0f,
                            126.5f, 127.5f, 128.5f, -127.5f, -128.5f, -129.5f, 127.49999f,
                            -128.49998f, 254.5f, 255.5f, 256.5f, 255.49998f, -0.7f, 0.7f,
                            8388607.5f, 4194304.5f, -8388607.5f, 16777216.0f, 16777218.0f,
                            2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f,
                            4294967296.0f, 1e10f, -1e10f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX,
                            FLT_MIN, -FLT_MIN, tu::inf(), -tu::inf(), 3.14159265f, -2.71828f};
    const uint32_t raw[] = {
        0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fc12345u, 0x7fa00000u,
        0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00008000u, 0x00018000u,
        0x00007fffu, 0x0000ffffu, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u,
        0xbf808000u, 0xbf818000u, 0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu, 0x7f7f0000u,
        0xff7f8000u, 0x477fff80u, 0x007f8000u, 0x807f8000u, 0x3fffffffu, 0x4effffffu,
        0xcf000000u, 0xcf000001u, 0x4f000000u, 0x4f000001u};
    for (uint32_t u : raw) v.push_back(from_bits(u));
    return v;
}

// n floats: special values, random bit patterns (every class), and
// moderate random values, mixed.
std::vector<float> mixed_values(tu::rng &r, size_t n) {
    static const std::vector<float> sp = special_values();
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t kind = r.ival(0, 3);
        if (kind == 0)
            v[i] = sp[size_t(r.ival(0, int64_t(sp.size()) - 1))];
        else if (kind == 1)
            v[i] = from_bits(uint32_t(r.ival(0, 0xffffffffLL)));
        else if (kind == 2)
            v[i] = float(r.ival(-300000, 300000)) * 0.0009765625f;  // many .5 ties
        else
            v[i] = float(r.ival(-(1 << 24), 1 << 24)) * 0x1p-16f;
    }
    return v;
}

bool same_bits(float a, float b) { return bits(a) == bits(b); }

// ------------------------------------------------------- guarded buffers
// An n-element array ending right at a guard page (so any access past the
// end faults), its start 4-byte (float) or 1-byte (u8) aligned as n makes
// it: with n odd not even 8-byte aligned.
template <class T>
T *guarded_tail(tu::guarded &g, size_t n) {
    return reinterpret_cast<T *>(g.end()) - n;
}

constexpr int kMaxN = 70;

}  // namespace

TEST_SUITE("once") {

TEST_CASE("postops: the ISA cap picks the Highway target") {
    const anvil_isa_t detected = anvil_get_detected_isa();
    const std::vector<hwy_postops_target> targets = anvil::fallback::postops_targets();
    REQUIRE(!targets.empty());
    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core,
                            anvil_isa_avx512_core_vnni, anvil_isa_avx512_core_bf16, anvil_isa_amx}) {
        CAPTURE(std::string(anvil_isa_name(cap)));
        const hwy_postops_target *t = anvil::fallback::postops_target_for(cap);
        REQUIRE(t != nullptr);
        const int64_t allowed = anvil::fallback::allowed_targets(cap);
        if (cap == anvil_isa_scalar && !tu::hwy_fallback_compiled()) {
            CHECK(t->target == HWY_STATIC_TARGET);  // no SIMD-free target: the baseline
            continue;
        }
        CHECK((t->target & allowed) != 0);
        // The best listed target the cap allows.
        for (const hwy_postops_target &c : targets)
            if (c.target & allowed) {
                CHECK(std::string(c.name) == t->name);
                break;
            }
        if (cap == anvil_isa_scalar) CHECK((t->target == HWY_EMU128 || t->target == HWY_SCALAR));
        if (cap < anvil_isa_avx512_core)
            CHECK((t->target & (HWY_AVX3 | HWY_AVX3_DL)) == 0);
        if (cap <= detected && cap >= anvil_isa_avx2 && (hwy::SupportedTargets() & HWY_AVX2))
            CHECK(t->target != HWY_SCALAR);
    }
}

TEST_CASE("postops: scale and bias, bit-exact, n = 0..70") {
    tu::rng r(11);
    for_each_impl([&](const impl &m) {
        for (int n = 0; n <= kMaxN; ++n) {
            CAPTURE(n);
            const std::vector<float> x0 = mixed_values(r, size_t(n));
            std::vector<float> sc(size_t(n) + 1), bi(size_t(n) + 1);
            for (auto &s : sc) s = r.ival(0, 5) == 0 ? from_bits(uint32_t(r.ival(0, 0xffffffffLL)))
                                                     : float(r.ival(-1000, 1000)) * 0.0137f;
            for (auto &b : bi) b = float(r.ival(-1000000, 1000000)) * 0.001f;
            for (int mode = 0; mode < 6; ++mode) {
                CAPTURE(mode);
                const bool has_scale = mode != 4 && mode != 5, per_n = mode % 2 == 1;
                const bool has_bias = mode >= 2;
                // x, scales and bias end at guard pages.
                tu::guarded gx(4 * kMaxN + 64), gs(4 * kMaxN + 64), gb(4 * kMaxN + 64);
                float *x = guarded_tail<float>(gx, size_t(n));
                std::copy(x0.begin(), x0.end(), x);
                const size_t ns = per_n ? size_t(n) : 1;
                float *s = guarded_tail<float>(gs, ns);
                std::copy(sc.begin(), sc.begin() + ptrdiff_t(ns), s);
                float *b = guarded_tail<float>(gb, size_t(n));
                std::copy(bi.begin(), bi.begin() + n, b);
                m.fns.scale_bias(x, n, has_scale ? s : nullptr, per_n, has_bias ? b : nullptr);
                for (int c = 0; c < n; ++c) {
                    float want = x0[size_t(c)];
                    if (has_scale) want = want * s[per_n ? c : 0];
                    if (has_bias) want = want + b[c];
                    // Two NaN operands in one step: which payload is unspecified.
                    const bool two_nans =
                        std::isnan(x0[size_t(c)]) &&
                        ((has_scale && std::isnan(s[per_n ? c : 0])) || (has_bias && std::isnan(b[c])));
                    if (two_nans ? !std::isnan(x[c]) : !same_bits(x[c], want)) {
                        CAPTURE(c);
                        CAPTURE(x0[size_t(c)]);
                        CHECK(bits(x[c]) == bits(want));
                    }
                }
            }
        }
    });
}

TEST_CASE("postops: store conversions, bit-exact, n = 0..70") {
    tu::rng r(12);
    const out_type types[] = {out_type::f32, out_type::bf16, out_type::s32, out_type::u8, out_type::s8};
    const float zps[] = {0.0f, -0.0f, 0.5f, -3.0f, 1e9f};
    for_each_impl([&](const impl &m) {
        for (out_type t : types) {
            CAPTURE(int(t));
            const size_t eb = size_t(out_bytes(t));
            for (float zp : zps) {
                CAPTURE(zp);
                // Every special value, vector-aligned and not.
                {
                    const std::vector<float> sp = special_values();
                    for (size_t off = 0; off < 3; ++off) {
                        std::vector<float> xs(sp.size() + off);
                        std::copy(sp.begin(), sp.end(), xs.begin() + ptrdiff_t(off));
                        // Output offset by `off` elements (element-aligned).
                        const size_t base = off * eb;
                        std::vector<uint8_t> got((sp.size() + 3) * eb, 0xcd), want(got);
                        m.fns.store(xs.data() + off, int64_t(sp.size()), zp, t, got.data() + base);
                        ref_store(xs.data() + off, int64_t(sp.size()), zp, t, want.data() + base);
                        for (size_t c = 0; c < sp.size(); ++c)
                            if (std::memcmp(&got[base + c * eb], &want[base + c * eb], eb) != 0) {
                                CAPTURE(c);
                                CAPTURE(bits(sp[c]));
                                CHECK(std::memcmp(&got[base + c * eb], &want[base + c * eb], eb) == 0);
                            }
                        CHECK(got == want);  // nothing outside [0, n) touched either
                    }
                }
                // Every n, x and dst ending at guard pages; dst preceded by
                // a canary that must survive.
                for (int n = 0; n <= kMaxN; ++n) {
                    CAPTURE(n);
                    const std::vector<float> x0 = mixed_values(r, size_t(n));
                    tu::guarded gx(4 * kMaxN + 64), gd(4 * kMaxN + 64);
                    float *x = guarded_tail<float>(gx, size_t(n));
                    std::copy(x0.begin(), x0.end(), x);
                    uint8_t *dst = guarded_tail<uint8_t>(gd, size_t(n) * eb);
                    std::memset(dst - 8, 0xcd, size_t(n) * eb + 8);
                    std::vector<uint8_t> want(size_t(n) * eb + 1);
                    m.fns.store(x, n, zp, t, dst);
                    ref_store(x0.data(), n, zp, t, want.data());
                    for (int i = 1; i <= 8; ++i) CHECK(dst[-i] == 0xcd);
                    for (int c = 0; c < n; ++c)
                        if (std::memcmp(dst + size_t(c) * eb, &want[size_t(c) * eb], eb) != 0) {
                            CAPTURE(c);
                            CAPTURE(bits(x0[size_t(c)]));
                            CHECK(std::memcmp(dst + size_t(c) * eb, &want[size_t(c) * eb], eb) == 0);
                        }
                }
            }
        }
        // bf16: random bit patterns (every class) against lowp::f32_to_bf16.
        std::vector<float> xs(1 << 16);
        std::vector<uint16_t> got(xs.size());
        for (int rep = 0; rep < 8; ++rep) {
            for (float &v : xs) v = from_bits(uint32_t(r.ival(0, 0xffffffffLL)));
            m.fns.store(xs.data(), int64_t(xs.size()), 0.0f, out_type::bf16, got.data());
            int64_t bad = 0;
            for (size_t c = 0; c < xs.size(); ++c)
                if (got[c] != anvil::lowp::f32_to_bf16(xs[c]) && bad++ == 0) {
                    CAPTURE(bits(xs[c]));
                    CHECK(got[c] == anvil::lowp::f32_to_bf16(xs[c]));
                }
            CHECK(bad == 0);
        }
    });
}

TEST_CASE("postops: store conversion edge cases spelled out") {
    // The documented results, independent of the reference above.
    const float in[] = {2.5f, 3.5f, -2.5f, -0.5f, 0.5f, 255.5f, 254.5f, -128.5f, 127.5f,
                        tu::qnan(), -tu::qnan(), tu::inf(), -tu::inf(), 2147483648.0f,
                        -2147483904.0f, -0.0f, 1e-45f};
    const int32_t s32[] = {2, 4, -2, 0, 0, 256, 254, -128, 128, 0, 0, INT32_MAX, INT32_MIN,
                           INT32_MAX, INT32_MIN, 0, 0};
    const uint8_t u8[] = {2, 4, 0, 0, 0, 255, 254, 0, 128, 0, 0, 255, 0, 255, 0, 0, 0};
    const int8_t s8[] = {2, 4, -2, 0, 0, 127, 127, -128, 127, 0, 0, 127, -128, 127, -128, 0, 0};
    constexpr int n = int(sizeof(in) / sizeof(in[0]));
    for_each_impl([&](const impl &m) {
        int32_t g32[n];
        uint8_t gu8[n];
        int8_t gs8[n];
        m.fns.store(in, n, 0.0f, out_type::s32, g32);
        m.fns.store(in, n, 0.0f, out_type::u8, gu8);
        m.fns.store(in, n, 0.0f, out_type::s8, gs8);
        for (int c = 0; c < n; ++c) {
            CAPTURE(in[c]);
            CHECK(g32[c] == s32[c]);
            CHECK(int(gu8[c]) == int(u8[c]));
            CHECK(int(gs8[c]) == int(s8[c]));
        }
        // zero_point: skipped exactly when it is +-0, so -0.0 stays -0.0.
        float f[2];
        const float mz[2] = {-0.0f, 1.0f};
        m.fns.store(mz, 2, 0.0f, out_type::f32, f);
        CHECK(bits(f[0]) == 0x80000000u);
        m.fns.store(mz, 2, -0.0f, out_type::f32, f);
        CHECK(bits(f[0]) == 0x80000000u);
        m.fns.store(mz, 2, 2.5f, out_type::f32, f);
        CHECK(f[0] == 2.5f);
        CHECK(f[1] == 3.5f);
        // bf16: NaN quietened with sign and high payload kept; ties to even;
        // subnormals rounded, not flushed; overflow to inf.
        const float b_in[] = {from_bits(0x7f800001u), from_bits(0xffa00000u), from_bits(0x3f808000u),
                              from_bits(0x3f818000u), from_bits(0x00018000u), from_bits(0x7f7fffffu)};
        const uint16_t b_want[] = {0x7fc0, 0xffe0, 0x3f80, 0x3f82, 0x0002, 0x7f80};
        uint16_t b_got[6];
        m.fns.store(b_in, 6, 0.0f, out_type::bf16, b_got);
        for (int c = 0; c < 6; ++c) CHECK(b_got[c] == b_want[c]);
    });
}

TEST_CASE("postops: exact eltwise and binary ops, bit-exact, n = 0..70") {
    tu::rng r(13);
    std::vector<post_op> exact_ops;
    {
        post_op o;
        o.eltwise = eltwise_alg::relu;
        exact_ops.push_back(o);
        o.eltwise = eltwise_alg::leaky_relu;
        for (float a : {0.1f, -2.0f, 0.0f, 1.5f}) {
            o.alpha = a;
            exact_ops.push_back(o);
        }
        o.eltwise = eltwise_alg::clip;
        for (auto ab : {std::pair<float, float>{0.0f, 6.0f}, {-1.0f, 1.0f}, {-0.0f, 0.0f},
                        {-tu::inf(), 3.0f}, {2.0f, 2.0f}}) {
            o.alpha = ab.first;
            o.beta = ab.second;
            exact_ops.push_back(o);
        }
    }
    for_each_impl([&](const impl &m) {
        for (int n = 0; n <= kMaxN; ++n) {
            CAPTURE(n);
            const std::vector<float> x0 = mixed_values(r, size_t(n));
            // Eltwise.
            for (const post_op &o : exact_ops) {
                CAPTURE(int(o.eltwise));
                CAPTURE(o.alpha);
                CAPTURE(o.beta);
                tu::guarded gx(4 * kMaxN + 64);
                float *x = guarded_tail<float>(gx, size_t(n));
                std::copy(x0.begin(), x0.end(), x);
                m.fns.apply(x, n, 0, 0, &o, 1, nullptr);
                for (int c = 0; c < n; ++c) {
                    const float want = ref_eltwise_exact(o, x0[size_t(c)]);
                    if (!same_bits(x[c], want)) {
                        CAPTURE(bits(x0[size_t(c)]));
                        CHECK(bits(x[c]) == bits(want));
                    }
                }
            }
            // Binary: add / mul, f32 / bf16 operand, per-N / M x N, the
            // operand's last element at a guard page.
            for (int variant = 0; variant < 8; ++variant) {
                post_op o;
                o.is_binary = true;
                o.binary = (variant & 1) ? binary_alg::mul : binary_alg::add;
                o.src_bf16 = (variant & 2) != 0;
                o.per_n = (variant & 4) != 0;
                CAPTURE(variant);
                const int64_t i = 2, j0 = 5;
                o.ld = o.per_n ? 0 : j0 + n + 3;
                const int64_t count = o.per_n ? j0 + n : i * o.ld + j0 + n;  // elements used
                std::vector<float> sv(static_cast<size_t>(count));
                for (float &v : sv) {
                    v = r.ival(0, 7) == 0 ? from_bits(uint32_t(r.ival(0, 0xffffffffLL)))
                                          : float(r.ival(-100000, 100000)) * 0.01f;
                    if (o.src_bf16) v = anvil::lowp::bf16_to_f32(anvil::lowp::f32_to_bf16(v));
                }
                tu::guarded gs(4 * size_t(count) + 64), gx(4 * kMaxN + 64);
                const void *src;
                if (o.src_bf16) {
                    uint16_t *s = guarded_tail<uint16_t>(gs, size_t(count));
                    for (int64_t e = 0; e < count; ++e) s[e] = uint16_t(bits(sv[size_t(e)]) >> 16);
                    src = s;
                } else {
                    float *s = guarded_tail<float>(gs, size_t(count));
                    std::copy(sv.begin(), sv.end(), s);
                    src = s;
                }
                float *x = guarded_tail<float>(gx, size_t(n));
                std::copy(x0.begin(), x0.end(), x);
                m.fns.apply(x, n, i, j0, &o, 1, &src);
                for (int c = 0; c < n; ++c) {
                    const float s = sv[size_t(o.per_n ? j0 + c : i * o.ld + j0 + c)];
                    const float a = x0[size_t(c)];
                    const float want = o.binary == binary_alg::add ? a + s : a * s;
                    // Two NaN operands: which payload is unspecified.
                    const bool ok = (std::isnan(a) && std::isnan(s)) ? std::isnan(x[c])
                                                                     : same_bits(x[c], want);
                    if (!ok) {
                        CAPTURE(c);
                        CAPTURE(bits(a));
                        CAPTURE(bits(s));
                        CHECK(bits(x[c]) == bits(want));
                    }
                }
            }
        }
    });
}

TEST_CASE("postops: a chain is applied in order") {
    // x + bf16 per-N row, relu, x * (M x N f32), clip, leaky_relu, tanh, sigmoid.
    tu::rng r(14);
    const int n = 37;
    const int64_t i = 1, j0 = 3, ld = 50;
    std::vector<uint16_t> rowv(size_t(j0 + n));
    for (auto &h : rowv) h = anvil::lowp::f32_to_bf16(float(r.ival(-500, 500)) * 0.01f);
    std::vector<float> mat(size_t(2 * ld));
    for (float &v : mat) v = float(r.ival(-300, 300)) * 0.01f;
    std::vector<post_op> ops(7);
    ops[0].is_binary = true;
    ops[0].per_n = true;
    ops[0].src_bf16 = true;
    ops[1].eltwise = eltwise_alg::relu;
    ops[2].is_binary = true;
    ops[2].binary = binary_alg::mul;
    ops[2].ld = ld;
    ops[3].eltwise = eltwise_alg::clip;
    ops[3].alpha = -1.0f;
    ops[3].beta = 2.0f;
    ops[4].eltwise = eltwise_alg::leaky_relu;
    ops[4].alpha = 0.25f;
    ops[5].eltwise = eltwise_alg::tanh;
    ops[6].eltwise = eltwise_alg::sigmoid;
    const void *srcs[7] = {rowv.data(), nullptr, mat.data(), nullptr, nullptr, nullptr, nullptr};
    std::vector<float> x0(n);
    for (float &v : x0) v = float(r.ival(-400, 400)) * 0.01f;
    for_each_impl([&](const impl &m) {
        std::vector<float> all(x0), one(x0);
        m.fns.apply(all.data(), n, i, j0, ops.data(), int(ops.size()), srcs);
        for (size_t t = 0; t < ops.size(); ++t)
            m.fns.apply(one.data(), n, i, j0, &ops[t], 1, &srcs[t]);
        // By hand for the exact prefix.
        std::vector<float> hand(x0);
        for (int c = 0; c < n; ++c) {
            float v = hand[size_t(c)] + anvil::lowp::bf16_to_f32(rowv[size_t(j0 + c)]);
            v = v <= 0 ? 0.0f : v;
            v = v * mat[size_t(i * ld + j0 + c)];
            v = std::min(std::max(v, -1.0f), 2.0f);
            hand[size_t(c)] = v > 0 ? v : 0.25f * v;
        }
        std::vector<float> prefix(x0);
        m.fns.apply(prefix.data(), n, i, j0, ops.data(), 5, srcs);
        for (int c = 0; c < n; ++c) {
            CHECK(bits(all[size_t(c)]) == bits(one[size_t(c)]));
            CHECK(bits(prefix[size_t(c)]) == bits(hand[size_t(c)]));
        }
        // nops == 0 and n == 0 do nothing.
        std::vector<float> same(x0);
        m.fns.apply(same.data(), n, i, j0, ops.data(), 0, srcs);
        m.fns.apply(same.data(), 0, i, j0, ops.data(), int(ops.size()), srcs);
        CHECK(same == x0);
    });
}

}  // TEST_SUITE("once")

// =================================================== transcendental ops
namespace {

// Double-precision references: the definitions of lowp/postops.h,
// rearranged only where the double formula itself would cancel (1 + tanh
// and 1 + erf for negative arguments):
//   gelu_tanh(x) = x sigmoid(2u)       (1 + tanh(u) = 2 sigmoid(2u))
//   gelu_erf(x)  = 0.5 x erfc(-x / sqrt 2)
// Limits at -inf are -0 (x times a factor that vanishes much faster).
double sigmoid_d(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

double ref_transcendental(eltwise_alg a, float xf) {
    const double x = xf;
    if (std::isnan(x)) return x;
    switch (a) {
        case eltwise_alg::tanh: return std::tanh(x);
        case eltwise_alg::sigmoid: return sigmoid_d(x);
        case eltwise_alg::silu: return std::isinf(x) && x < 0 ? -0.0 : x * sigmoid_d(x);
        case eltwise_alg::gelu_tanh: {
            if (std::isinf(x)) return x < 0 ? -0.0 : x;
            const double u = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
            return x * sigmoid_d(2.0 * u);
        }
        case eltwise_alg::gelu_erf:
            if (std::isinf(x)) return x < 0 ? -0.0 : x;
            return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
        default: break;
    }
    return 0;
}

// The spacing of floats at |v| (the ulp of the float nearest v; 2^-149 in
// the subnormal range).
double float_ulp(double v) {
    v = std::fabs(v);
    if (v < 0x1p-126) return 0x1p-149;
    int e;
    std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
    return std::ldexp(1.0, e - 24);
}

// The documented bound |y - ref| <= abs + ulps * ulp(ref) (docs/postops.md,
// which has the measured maxima they derive from: ulps = the measured
// maximum over the ANVIL_POSTOPS_MEASURE sweep plus half an ulp for inputs
// between sweep points, rounded up to a whole ulp).  The gelus need an
// absolute part: their argument (2u = x (c1 + c2 x^2), resp. -x^2 / 2) is
// rounded in float, which costs up to about |arg| * 2^-23 relative; that
// grows only in the negative tail, where |y| decays exponentially, and
// 2^-26 absorbs it.
struct bound {
    eltwise_alg alg;
    const char *name;
    double abs;
    double ulps;
};
const bound kBounds[] = {
    {eltwise_alg::tanh, "tanh", 0.0, 3.0},            // measured 2.41 ulp
    {eltwise_alg::sigmoid, "sigmoid", 0.0, 3.0},      // measured 2.40 ulp
    {eltwise_alg::silu, "silu", 0.0, 4.0},            // measured 2.91 ulp
    {eltwise_alg::gelu_tanh, "gelu_tanh", 0x1p-26, 5.0},  // measured 2^-26 + 3.53 ulp
    {eltwise_alg::gelu_erf, "gelu_erf", 0x1p-26, 6.0},    // measured 2^-26 + 5.39 ulp
};

// The sweep: every float whose bit pattern is a multiple of `stride`
// (both signs: all magnitudes, subnormals and inf included), plus
// x = -20 + k * step over [-20, 20], plus the special values.
std::vector<float> sweep_inputs(uint32_t stride, float step) {
    std::vector<float> v;
    for (uint64_t u = 0; u <= 0x7f800000u; u += stride) {
        v.push_back(from_bits(uint32_t(u)));
        v.push_back(from_bits(uint32_t(u) | 0x80000000u));
    }
    for (float x = -20.0f; x <= 20.0f; x += step) v.push_back(x);  // exact: step is 2^-k
    for (float s : special_values()) v.push_back(s);
    return v;
}

bool measure_mode() {
    const char *e = std::getenv("ANVIL_POSTOPS_MEASURE");
    return e && e[0] == '1';
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("postops: transcendental ops within the documented bounds, identical on every target") {
    const bool measure = measure_mode();
    // Test: ~1.1M points; measure: ~34M (every 64th float, and [-20, 20]
    // in steps of 2^-16).
    const std::vector<float> xs =
        measure ? sweep_inputs(64, 0x1p-16f) : sweep_inputs(4096, 0x1p-10f);
    const int64_t n = int64_t(xs.size());
    const std::vector<impl> impls = all_impls();
    // Candidate absolute parts for the measurement table.
    const double abs_parts[] = {0.0, 0x1p-30, 0x1p-26, 0x1p-24, 0x1p-22};
    for (const bound &b : kBounds) {
        CAPTURE(b.name);
        post_op o;
        o.eltwise = b.alg;
        std::vector<float> first;  // the first implementation's results
        for (const impl &m : impls) {
            CAPTURE(m.name);
            if (m.uses_cap) anvil::cpu::set_max_isa_for_test(m.cap);
            std::vector<float> y(xs);
            m.fns.apply(y.data(), n, 0, 0, &o, 1, nullptr);
            if (first.empty()) {
                first = y;
            } else {
                int64_t diff = 0;
                for (int64_t c = 0; c < n; ++c)
                    if (!same_bits(y[size_t(c)], first[size_t(c)]) && diff++ == 0) {
                        CAPTURE(xs[size_t(c)]);
                        CHECK(bits(y[size_t(c)]) == bits(first[size_t(c)]));
                    }
                CHECK(diff == 0);
                continue;  // same bits: same errors
            }
            double max_abs = 0, max_ulps = 0, worst_x = 0;
            double need_ulps[5] = {0, 0, 0, 0, 0};
            int64_t violations = 0;
            for (int64_t c = 0; c < n; ++c) {
                const float x = xs[size_t(c)];
                const double want = ref_transcendental(b.alg, x);
                const float got = y[size_t(c)];
                if (std::isnan(want)) {
                    // NaN in: the same NaN out.
                    if (!same_bits(got, x) && violations++ < 3) CHECK(bits(got) == bits(x));
                    continue;
                }
                const double err = std::fabs(double(got) - want);
                if (std::isinf(want) || std::isinf(got)) {
                    if (double(got) != want && violations++ < 3) {
                        CAPTURE(x);
                        CHECK(double(got) == want);
                    }
                    continue;
                }
                const double u = float_ulp(want);
                if (err > b.abs + b.ulps * u && violations++ < 3) {
                    CAPTURE(x);
                    CAPTURE(got);
                    CAPTURE(want);
                    CHECK(err <= b.abs + b.ulps * u);
                }
                max_abs = std::max(max_abs, err);
                if (err / u > max_ulps) {
                    max_ulps = err / u;
                    worst_x = x;
                }
                for (int k = 0; k < 5; ++k)
                    need_ulps[k] = std::max(need_ulps[k], std::max(0.0, err - abs_parts[k]) / u);
            }
            CHECK(violations == 0);
            if (measure) {
                std::printf("%-10s %-14s points %lld  max|err| %.3g  max err/ulp %.3f (x = %.9g)  "
                            "ulps needed with abs 0 / 2^-30 / 2^-26 / 2^-24 / 2^-22: "
                            "%.3f / %.3f / %.3f / %.3f / %.3f\n",
                            b.name, m.name.c_str(), (long long)n, max_abs, max_ulps, worst_x,
                            need_ulps[0], need_ulps[1], need_ulps[2], need_ulps[3], need_ulps[4]);
            }
        }
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

TEST_CASE("postops: transcendental limits, zeros and NaN") {
    const float inf = tu::inf();
    const float big = 1e30f;
    struct expect {
        eltwise_alg a;
        float x;
        float want;  // compared bitwise (sign of zero included)
    };
    const expect cases[] = {
        {eltwise_alg::tanh, inf, 1.0f},         {eltwise_alg::tanh, -inf, -1.0f},
        {eltwise_alg::tanh, 20.0f, 1.0f},       {eltwise_alg::tanh, -20.0f, -1.0f},
        {eltwise_alg::tanh, 0.0f, 0.0f},        {eltwise_alg::tanh, -0.0f, -0.0f},
        {eltwise_alg::tanh, 1e-30f, 1e-30f},    {eltwise_alg::tanh, from_bits(0x80000001u), from_bits(0x80000001u)},
        {eltwise_alg::sigmoid, inf, 1.0f},      {eltwise_alg::sigmoid, -inf, 0.0f},
        {eltwise_alg::sigmoid, 100.0f, 1.0f},   {eltwise_alg::sigmoid, -200.0f, 0.0f},
        {eltwise_alg::sigmoid, 0.0f, 0.5f},     {eltwise_alg::sigmoid, -0.0f, 0.5f},
        {eltwise_alg::silu, inf, inf},          {eltwise_alg::silu, -inf, -0.0f},
        {eltwise_alg::silu, -200.0f, -0.0f},    {eltwise_alg::silu, big, big},
        {eltwise_alg::silu, -big, -0.0f},       {eltwise_alg::silu, 0.0f, 0.0f},
        {eltwise_alg::silu, -0.0f, -0.0f},      {eltwise_alg::gelu_tanh, inf, inf},
        {eltwise_alg::gelu_tanh, -inf, -0.0f},  {eltwise_alg::gelu_tanh, big, big},
        {eltwise_alg::gelu_tanh, -big, -0.0f},  {eltwise_alg::gelu_tanh, -20.0f, -0.0f},
        {eltwise_alg::gelu_tanh, 20.0f, 20.0f}, {eltwise_alg::gelu_tanh, 0.0f, 0.0f},
        {eltwise_alg::gelu_tanh, -0.0f, -0.0f}, {eltwise_alg::gelu_erf, inf, inf},
        {eltwise_alg::gelu_erf, -inf, -0.0f},   {eltwise_alg::gelu_erf, big, big},
        {eltwise_alg::gelu_erf, -big, -0.0f},   {eltwise_alg::gelu_erf, 20.0f, 20.0f},
        {eltwise_alg::gelu_erf, -20.0f, -0.0f}, {eltwise_alg::gelu_erf, 0.0f, 0.0f},
        {eltwise_alg::gelu_erf, -0.0f, -0.0f},
    };
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0x7f800001u, 0xffa5a5a5u};
    for_each_impl([&](const impl &m) {
        for (const expect &e : cases) {
            CAPTURE(int(e.a));
            CAPTURE(e.x);
            post_op o;
            o.eltwise = e.a;
            // In every lane position (a full vector and the tail).
            for (int n : {1, 5, 16, 17, 35}) {
                std::vector<float> v(size_t(n), e.x);
                m.fns.apply(v.data(), n, 0, 0, &o, 1, nullptr);
                for (float y : v) CHECK(bits(y) == bits(e.want));
            }
        }
        for (eltwise_alg a : {eltwise_alg::tanh, eltwise_alg::sigmoid, eltwise_alg::silu,
                              eltwise_alg::gelu_tanh, eltwise_alg::gelu_erf, eltwise_alg::relu,
                              eltwise_alg::leaky_relu, eltwise_alg::clip}) {
            post_op o;
            o.eltwise = a;
            o.alpha = -1.0f;
            o.beta = 1.0f;
            for (uint32_t u : nans) {
                CAPTURE(int(a));
                CAPTURE(u);
                float v[3] = {1.0f, from_bits(u), -1.0f};
                m.fns.apply(v, 3, 0, 0, &o, 1, nullptr);
                // NaN in, NaN out; the transcendental ops and relu / clip
                // return the input NaN unchanged, leaky_relu alpha * NaN
                // (quiet).
                CHECK(std::isnan(v[1]));
                if (a != eltwise_alg::leaky_relu) CHECK(bits(v[1]) == u);
            }
        }
    });
}

}  // TEST_SUITE("once")

TEST_CASE("postops: a block in one pass (compare-and-select and binary chains) equals the row path") {
    // pp_block_apply runs chains of relu / leaky_relu / clip / add / mul on
    // each vector in registers; every element must have the bits of the
    // row-by-row path (scale_bias, apply, store) of the same target.
    tu::rng r(1204);
    const int64_t m = 5, ld_op = 80;
    std::vector<float> mat(size_t(m * ld_op + 8));
    for (float &v : mat) v = float(r.ival(-300, 300)) * 0.01f;
    std::vector<uint16_t> rowv(size_t(ld_op + 8));
    for (auto &h : rowv) h = anvil::lowp::f32_to_bf16(float(r.ival(-500, 500)) * 0.01f);
    std::vector<post_op> ops(5);
    ops[0].is_binary = true;  // + a dst-shaped f32 tensor
    ops[0].ld = ld_op;
    ops[1].eltwise = eltwise_alg::relu;
    ops[2].is_binary = true;  // * a per-N bf16 row
    ops[2].binary = binary_alg::mul;
    ops[2].per_n = true;
    ops[2].src_bf16 = true;
    ops[3].eltwise = eltwise_alg::clip;
    ops[3].alpha = -0.5f;
    ops[3].beta = 3.0f;
    ops[4].eltwise = eltwise_alg::leaky_relu;
    ops[4].alpha = 0.125f;
    const void *srcs[5] = {mat.data(), nullptr, rowv.data(), nullptr, nullptr};
    const out_type types[] = {out_type::f32, out_type::bf16, out_type::u8, out_type::s8};
    for_each_impl([&](const impl &im) {
        for (int n : {1, 7, 16, 17, 33, 64}) {
            CAPTURE(n);
            std::vector<float> acc(size_t(m * 70));
            const std::vector<float> vals = mixed_values(r, acc.size());
            std::copy(vals.begin(), vals.end(), acc.begin());
            std::vector<float> sc(static_cast<size_t>(n)), bi(static_cast<size_t>(n));
            for (float &s : sc) s = float(r.ival(-100, 100)) * 0.03f;
            for (float &b : bi) b = float(r.ival(-1000, 1000)) * 0.01f;
            for (int nops = 1; nops <= 5; ++nops)
                for (out_type t : types) {
                    CAPTURE(nops);
                    CAPTURE(int(t));
                    const size_t eb = size_t(out_bytes(t));
                    anvil::lowp::pp_block b;
                    b.acc = acc.data();
                    b.acc_ld = 70;
                    b.m = m;
                    b.n = n;
                    b.i0 = 0;
                    b.j0 = 2;
                    b.scales = sc.data();
                    b.scales_per_n = (nops % 2) == 1;
                    b.bias = bi.data();
                    b.ops = ops.data();
                    b.nops = nops;
                    b.srcs = srcs;
                    b.zero_point = t == out_type::u8 ? 3.0f : 0.0f;
                    b.out = t;
                    std::vector<uint8_t> got(size_t(m * n) * eb, 0xEE), want(got);
                    b.dst = got.data();
                    b.ldc_bytes = int64_t(n * eb);
                    im.fns.block(b);
                    for (int64_t i = 0; i < m; ++i) {
                        std::vector<float> x(acc.begin() + i * 70, acc.begin() + i * 70 + n);
                        im.fns.scale_bias(x.data(), n, sc.data(), b.scales_per_n, bi.data());
                        im.fns.apply(x.data(), n, i, 2, ops.data(), nops, srcs);
                        im.fns.store(x.data(), n, b.zero_point, t, want.data() + size_t(i * n) * eb);
                    }
                    CHECK(got == want);
                }
        }
    });
}
