// The Highway low-precision kernels and fp32 <-> bf16 conversions against
// the scalar definitions (lowp/lp_ref.h), bitwise, on every compiled target
// this CPU supports: the lp contract fixes the arithmetic (bf16: element 1
// then element 0 of each group, one rounding per product and per sum, groups
// in increasing order; u8s8: exact, wrapping int32), so no target may differ
// in a single bit.  Also: memory the kernels must not touch (A rows >= m
// against a guard page, B past the panel, acc padding), and the ISA cap's
// choice of target.  Independent of the process's ISA cap: suite "once".
#include <doctest/doctest.h>

#include <hwy/targets.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_lowp.h"
#include "fallback/hwy_sgemm.h"
#include "hwy_target.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_ukernel.h"
#include "test_util.h"

namespace {

using anvil::fallback::compiled_lp_targets;
using anvil::fallback::hwy_lp_target;
using anvil::lowp::lp_kind;
using anvil::lowp::lp_ukernel_args;
using anvil::lowp::lp_ukernel_fn;

const uint32_t kAccSentinel = 0x7fa5c3e1u;  // acc cells outside the tile
const int64_t kGroups[] = {1, 2, 3, 4, 5, 7, 9, 17, 64, 257};
constexpr int64_t kMaxGroups = 257;

const char *kind_name(lp_kind k) { return k == lp_kind::bf16 ? "bf16" : "u8s8"; }

// A random bf16 of magnitude 2^-20 .. 2^21 (exponent -20..20, all 7 mantissa
// bits random), random sign: products are normal and exact, sums round.
uint16_t bf16_normal(tu::rng &r) {
    const uint32_t sign = uint32_t(r.ival(0, 1)) << 15;
    const uint32_t exp = uint32_t(127 + r.ival(-20, 20)) << 7;
    return uint16_t(sign | exp | uint32_t(r.ival(0, 127)));
}
// Any bf16 but a NaN: zeros, denormals, huge values and (rarely) infinities,
// so products overflow or fall below the normal range and sums reach Inf
// and (Inf - Inf) the default NaN.  A fused multiply-add differs here.
uint16_t bf16_extreme(tu::rng &r) {
    for (;;) {
        const uint16_t h = uint16_t(r.ival(0, 0xffff));
        if ((h & 0x7f80) != 0x7f80) return h;
        if ((h & 0x7f) == 0 && r.ival(0, 15) == 0) return h;  // Inf, rarely
    }
}
float f32_random(tu::rng &r) {  // full mantissa, magnitude 2^-20 .. 2^21
    const float u = float(r.ival(1 << 23, (1 << 24) - 1)) * 0x1p-23f;
    return (r.ival(0, 1) ? -1.0f : 1.0f) * std::ldexp(u, int(r.ival(-20, 20)));
}

// One tile case.  Fill modes: bf16 0 = normal range, 1 = extreme values;
// u8s8 0 = full range (255 and -128 included), 1 = A 255 / B -128 (each pair
// of products -65280: a saturating int16 step is wrong), 2 = A 255 / B 127,
// 3 = byte values near the ends.  With accumulate, u8s8 modes 1 and 2 start
// from INT32_MIN + small / INT32_MAX - small, so the sums wrap.
struct lp_case {
    lp_kind kind;
    int m, nv, n;
    int64_t kg;
    bool accumulate;
    int a_pad, b_pad, c_pad, b_off;
    int fill;
};

std::string describe(const lp_case &c) {
    std::ostringstream s;
    s << kind_name(c.kind) << " m=" << c.m << " nv=" << c.nv << " n=" << c.n << " kg=" << c.kg
      << " accumulate=" << c.accumulate << " a_pad=" << c.a_pad << " b_pad=" << c.b_pad
      << " c_pad=" << c.c_pad << " b_off=" << c.b_off << " fill=" << c.fill;
    return s.str();
}

// Inputs of one case: A's last row ends at a guard page (a kernel reading a
// row >= m, or past group kg-1, faults), B's last group ends at a guard page
// when b_off == 0, acc has a sentinel margin and padding.
struct lp_setup {
    lp_ukernel_args args{};
    std::vector<uint32_t> acc_init;  // the whole acc buffer, margins included
    size_t acc_offset = 0;           // element offset of acc(0, 0)
    int64_t acc_ld = 0, ncols = 0;
};

lp_setup make_case(const lp_case &c, tu::rng &r, tu::guarded &abuf, tu::guarded &bbuf) {
    lp_setup s;
    const int64_t ncols = 16 * c.nv;
    s.ncols = ncols;
    const int64_t a_rs = c.kg * 4 + c.a_pad;
    const int64_t a_bytes = (c.m - 1) * a_rs + c.kg * 4;
    uint8_t *a = reinterpret_cast<uint8_t *>(abuf.end()) - a_bytes;
    const int64_t b_ld = ncols * 4 + c.b_pad;
    const int64_t b_bytes = (c.kg - 1) * b_ld + ncols * 4;
    uint8_t *b = reinterpret_cast<uint8_t *>(bbuf.end()) - b_bytes - c.b_off;

    auto a_byte = [&]() -> uint8_t {
        switch (c.fill) {
            case 1: case 2: return 255;
            case 3: { const uint8_t v[] = {0, 1, 127, 128, 254, 255}; return v[r.ival(0, 5)]; }
            default: return uint8_t(r.ival(0, 255));
        }
    };
    auto b_byte = [&]() -> uint8_t {
        switch (c.fill) {
            case 1: return uint8_t(int8_t(-128));
            case 2: return 127;
            case 3: { const int8_t v[] = {-128, -127, -1, 0, 1, 126, 127}; return uint8_t(v[r.ival(0, 6)]); }
            default: return uint8_t(r.ival(0, 255));
        }
    };
    // Everything in the spans (padding too) gets a value; padding must not
    // matter.
    for (int64_t x = 0; x < a_bytes; ++x) a[x] = uint8_t(r.ival(0, 255));
    for (int64_t x = 0; x < b_bytes; ++x) b[x] = uint8_t(r.ival(0, 255));
    for (int i = 0; i < c.m; ++i)
        for (int64_t g = 0; g < c.kg; ++g) {
            uint8_t *p = a + i * a_rs + g * 4;
            if (c.kind == lp_kind::bf16) {
                for (int e = 0; e < 2; ++e) {
                    const uint16_t h = c.fill == 1 ? bf16_extreme(r) : bf16_normal(r);
                    std::memcpy(p + 2 * e, &h, 2);
                }
            } else {
                for (int t = 0; t < 4; ++t) p[t] = a_byte();
            }
        }
    for (int64_t g = 0; g < c.kg; ++g)
        for (int64_t j = 0; j < ncols; ++j) {
            uint8_t *p = b + g * b_ld + j * 4;
            if (c.kind == lp_kind::bf16) {
                for (int e = 0; e < 2; ++e) {
                    const uint16_t h = c.fill == 1 ? bf16_extreme(r) : bf16_normal(r);
                    std::memcpy(p + 2 * e, &h, 2);
                }
            } else {
                for (int t = 0; t < 4; ++t) p[t] = b_byte();
            }
        }
    // A few forced extremes in the random u8s8 fill.
    if (c.kind == lp_kind::u8s8 && c.fill == 0) {
        a[0] = 255;
        b[3] = uint8_t(int8_t(-128));
        b[(c.kg - 1) * b_ld + ncols * 4 - 1] = uint8_t(int8_t(-128));
    }

    // acc: one margin row before, one guard row after, padded rows; the
    // tile starts one element past a 16-element boundary (not vector
    // aligned).
    s.acc_ld = ncols + c.c_pad;
    const size_t margin = 17;
    s.acc_offset = margin + size_t(s.acc_ld);
    s.acc_init.assign(s.acc_offset + size_t((c.m + 1) * s.acc_ld) + margin, kAccSentinel);
    for (int i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ncols; ++j) {
            uint32_t v;
            if (!c.accumulate) {
                v = 0x7fc0dead;  // must be ignored: a NaN (bf16) / garbage (u8s8)
            } else if (c.kind == lp_kind::bf16) {
                v = tu::bits(f32_random(r));
            } else if (c.fill == 1) {
                v = uint32_t(INT32_MIN) + uint32_t(r.ival(0, 1000));
            } else if (c.fill == 2) {
                v = uint32_t(INT32_MAX) - uint32_t(r.ival(0, 1000));
            } else {
                v = uint32_t(r.ival(0, UINT32_MAX));
            }
            s.acc_init[s.acc_offset + size_t(i * s.acc_ld + j)] = v;
        }

    s.args.a = a;
    s.args.b = b;
    s.args.a_rs = a_rs;
    s.args.b_ld = b_ld;
    s.args.acc_ld = s.acc_ld;
    s.args.kg = c.kg;
    s.args.m = c.m;
    s.args.n = c.n;
    s.args.accumulate = c.accumulate ? 1 : 0;
    s.args.b_next = nullptr;
    return s;
}

// Runs fn on a copy of the case's acc and compares the whole buffer with
// `want` bitwise; empty string or what went wrong.
std::string check_kernel(lp_ukernel_fn fn, const lp_setup &s, const std::vector<uint32_t> &want) {
    std::vector<uint32_t> got = s.acc_init;
    lp_ukernel_args args = s.args;
    args.acc = got.data() + s.acc_offset;
    fn(&args);
    for (size_t x = 0; x < got.size(); ++x) {
        if (got[x] == want[x]) continue;
        const int64_t e = int64_t(x) - int64_t(s.acc_offset);
        const int64_t row = e >= 0 ? e / s.acc_ld : -1, col = e >= 0 ? e % s.acc_ld : e;
        const bool inside = row >= 0 && row < s.args.m && col < s.ncols;
        std::ostringstream w;
        w << (inside ? "acc(" : "wrote outside the tile at (") << row << "," << col << ") = 0x"
          << std::hex << got[x] << ", reference 0x" << want[x];
        return w.str();
    }
    return {};
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("hwy lp ukernel: every compiled target matches the scalar lp kernels bit for bit") {
    const std::vector<hwy_lp_target> targets = compiled_lp_targets();
    REQUIRE(!targets.empty());
    if (tu::hwy_fallback_compiled())
        CHECK((targets.back().target == HWY_EMU128 || targets.back().target == HWY_SCALAR));
    for (const hwy_lp_target &t : targets) {
        CAPTURE(std::string(t.name));
        REQUIRE((t.get != nullptr));
        for (lp_kind k : {lp_kind::bf16, lp_kind::u8s8}) {
            CHECK((t.get(k, 0, 1) == nullptr));
            CHECK((t.get(k, 13, 1) == nullptr));
            CHECK((t.get(k, 1, 0) == nullptr));
            CHECK((t.get(k, 1, 3) == nullptr));
            CHECK((t.get(k, 12, 2) != nullptr));
        }
    }

    tu::rng r(20240611);
    tu::guarded abuf(size_t(anvil::lowp::kMR * (kMaxGroups * 4 + 8)));
    tu::guarded bbuf(size_t(kMaxGroups * (anvil::lowp::kNR * 4 + 64) + 64));
    const int a_pads[] = {0, 1, 3, 4, 6};
    const int b_pads[] = {0, 4, 1, 12, 64};
    const int c_pads[] = {0, 1, 3, 16};
    std::vector<int64_t> cases(targets.size(), 0), failures(targets.size(), 0);
    std::vector<std::string> first(targets.size());
    int64_t counter = 0;
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8})
        for (int m = 1; m <= anvil::lowp::kMR; ++m)
            for (int nv = 1; nv <= 2; ++nv) {
                const int ns[2][3] = {{1, 15, 16}, {17, 31, 32}};
                for (int n : ns[nv - 1])
                    for (int64_t kg : kGroups)
                        for (bool accumulate : {false, true}) {
                            ++counter;
                            lp_case c{kind, m, nv, n, kg, accumulate, 0, 0, 0, 0, 0};
                            c.a_pad = a_pads[counter % 5];
                            c.b_pad = b_pads[(counter / 5) % 5];
                            c.c_pad = c_pads[(counter / 3) % 4];
                            c.b_off = int((counter / 7) % 4);
                            c.fill = kind == lp_kind::bf16 ? int(counter % 3 == 2)
                                                           : int((counter / 2) % 4);
                            const lp_setup s = make_case(c, r, abuf, bbuf);
                            std::vector<uint32_t> want = s.acc_init;
                            lp_ukernel_args args = s.args;
                            args.acc = want.data() + s.acc_offset;
                            anvil::lowp::lp_ukernel_scalar(&args, kind);
                            for (size_t ti = 0; ti < targets.size(); ++ti) {
                                const lp_ukernel_fn fn = targets[ti].get(kind, m, nv);
                                ++cases[ti];
                                const std::string why =
                                    fn ? check_kernel(fn, s, want) : std::string("no kernel");
                                if (!why.empty() && failures[ti]++ == 0)
                                    first[ti] = describe(c) + ": " + why;
                            }
                        }
            }
    for (size_t ti = 0; ti < targets.size(); ++ti) {
        CAPTURE(std::string(targets[ti].name));
        INFO("first failure: " << first[ti]);
        CHECK(failures[ti] == 0);
        MESSAGE(std::string(targets[ti].name) << ": " << cases[ti] << " lp tile cases");
    }
}

TEST_CASE("hwy lp ukernel: u8s8 wraps modulo 2^32 and never saturates") {
    // One element worked out by hand: 255 * -128 * 4 = -130560 per group.
    for (const hwy_lp_target &t : compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        for (int fill = 0; fill < 2; ++fill) {
            const uint8_t bv = fill == 0 ? uint8_t(int8_t(-128)) : uint8_t(127);
            const int64_t kg = 3;
            std::vector<uint8_t> a(size_t(kg * 4), 255), b(size_t(kg * 32 * 4), bv);
            std::vector<int32_t> acc(32);
            const int32_t start = fill == 0 ? INT32_MIN + 5 : INT32_MAX - 5;
            std::fill(acc.begin(), acc.end(), start);
            lp_ukernel_args args{};
            args.a = a.data();
            args.b = b.data();
            args.acc = acc.data();
            args.a_rs = kg * 4;
            args.b_ld = 32 * 4;
            args.acc_ld = 32;
            args.kg = kg;
            args.m = 1;
            args.n = 32;
            args.accumulate = 1;
            t.get(lp_kind::u8s8, 1, 2)(&args);
            const int32_t per_group = 4 * 255 * (fill == 0 ? -128 : 127);
            const int32_t want = int32_t(uint32_t(start) + uint32_t(int64_t(per_group) * kg));
            for (int32_t v : acc) CHECK(v == want);
        }
    }
}

TEST_CASE("hwy lp backend: the ISA cap limits the Highway target, objects are cached") {
    const anvil_isa_t saved = anvil_get_effective_isa();
    const anvil_isa_t detected = anvil_get_detected_isa();
    const std::vector<hwy_lp_target> targets = compiled_lp_targets();
    REQUIRE(!targets.empty());
    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        if (cap > detected) continue;
        CAPTURE(std::string(anvil_isa_name(cap)));
        anvil::cpu::set_max_isa_for_test(cap);
        const anvil::lowp::lp_backend *b = anvil::lowp::highway_lp_backend();
        if (cap == anvil_isa_scalar && !tu::hwy_fallback_compiled()) {
            CHECK(b == nullptr);  // the scalar kernels serve this cap
            continue;
        }
        REQUIRE(b != nullptr);
        CHECK(anvil::lowp::highway_lp_backend() == b);  // cached
        const int64_t allowed = anvil::fallback::allowed_targets(cap);
        const hwy_lp_target *want = nullptr;
        for (const hwy_lp_target &t : targets)
            if (t.target & allowed) {
                want = &t;
                break;
            }
        REQUIRE(want != nullptr);
        CHECK(std::string(b->name()) == std::string("hwy:") + want->name);
        CHECK(b == anvil::fallback::hwy_lp_backend_for_target(want->target));
        CHECK(b->tier() == anvil_isa_avx2);
        if (cap < anvil_isa_avx512_core)
            CHECK((want->target & (HWY_AVX3 | HWY_AVX3_DL)) == 0);
        if (cap == anvil_isa_scalar)
            CHECK((want->target == HWY_EMU128 || want->target == HWY_SCALAR));
        if (cap == anvil_isa_avx2 && (hwy::SupportedTargets() & HWY_AVX2))
            CHECK(std::string(b->name()) == "hwy:AVX2");
        for (lp_kind k : {lp_kind::bf16, lp_kind::u8s8}) {
            CHECK(b->supports(k));
            for (int m = 1; m <= anvil::lowp::kMR; ++m)
                for (int nv = 1; nv <= 2; ++nv)
                    for (bool acc : {false, true}) {
                        anvil::lowp::lp_ukernel_ref ref;
                        REQUIRE(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, k, m, nv, acc), &ref) ==
                                anvil_success);
                        CHECK((ref.fn == want->get(k, m, nv)));
                        CHECK(std::string(ref.name).rfind(b->name(), 0) == 0);
                    }
            anvil::lowp::lp_ukernel_ref ref;
            CHECK(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, k, 0, 1, false), &ref) != anvil_success);
            CHECK(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, k, 13, 1, false), &ref) != anvil_success);
            CHECK(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, k, 1, 0, false), &ref) != anvil_success);
            CHECK(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, k, 1, 3, false), &ref) != anvil_success);
        }
        anvil::lowp::lp_ukernel_ref ref;
        CHECK(b->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, lp_kind(7), 1, 1, false), &ref) !=
              anvil_success);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
    CHECK(anvil_get_effective_isa() == saved);

    // Other CPUs: only the fallback; nothing at all.
    const int64_t real = hwy::SupportedTargets();
    const anvil::lowp::lp_backend *fb =
        anvil::fallback::highway_lp_backend_for(real & (HWY_EMU128 | HWY_SCALAR), anvil_isa_avx2);
    if (tu::hwy_fallback_compiled()) {
        REQUIRE(fb != nullptr);
        CHECK((std::string(fb->name()) == "hwy:EMU128" || std::string(fb->name()) == "hwy:SCALAR"));
    } else {
        CHECK(fb == nullptr);
    }
    CHECK(anvil::fallback::highway_lp_backend_for(0, anvil_isa_avx2) == nullptr);
    CHECK(anvil::fallback::hwy_lp_backend_for_target(0) == nullptr);
    CHECK(anvil::fallback::hwy_lp_backend_for_target(HWY_AVX2 | HWY_SSE4) == nullptr);
}

TEST_CASE("hwy lp backend: compiled_lp_targets follows hwy::SetSupportedTargetsForTest") {
    const int64_t real = hwy::SupportedTargets();
    const std::vector<hwy_lp_target> all = compiled_lp_targets();
    for (const hwy_lp_target &t : all) {
        hwy::SetSupportedTargetsForTest(t.target);
        const std::vector<hwy_lp_target> listed = compiled_lp_targets();
        tu::restore_hwy_targets();  // back to the real CPU (or ANVIL_TEST_HWY_TARGET's mask)
        REQUIRE(!listed.empty());
        CHECK(listed.front().target == t.target);
        for (const hwy_lp_target &l : listed)
            CHECK((l.target == t.target || (l.target & (HWY_EMU128 | HWY_SCALAR | HWY_STATIC_TARGET)) != 0));
    }
    CHECK(hwy::SupportedTargets() == real);
}

// ------------------------------------------------------------ conversions

namespace {

std::vector<uint32_t> special_f32_bits() {
    std::vector<uint32_t> v = {
        0x00000000u, 0x00000001u, 0x00007fffu, 0x00008000u, 0x00008001u, 0x00018000u,
        0x0000ffffu, 0x00010000u, 0x007f7fffu, 0x007f8000u, 0x007fffffu,  // denormals
        0x00800000u, 0x00808000u, 0x00818000u, 0x3f800000u, 0x3f807fffu, 0x3f808000u,
        0x3f808001u, 0x3f818000u, 0x3f81ffffu, 0x3fffffffu, 0x40490fdbu,
        0x7f7e8000u, 0x7f7f0000u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu,  // near the top
        0x7f800000u,                                                       // Inf
        0x7f800001u, 0x7f80ffffu, 0x7f810000u, 0x7fbfffffu, 0x7fc00000u, 0x7fc00001u,
        0x7fd12345u, 0x7fff0000u, 0x7fffffffu,                             // NaNs
    };
    const size_t n = v.size();
    for (size_t i = 0; i < n; ++i) v.push_back(v[i] | 0x80000000u);
    return v;
}

uint16_t ref_bf16(uint32_t bits) { return anvil::lowp::f32_to_bf16(tu::from_bits(bits)); }

int64_t count_f32_to_bf16_mismatch(void (*fn)(const float *, uint16_t *, int64_t),
                                   const std::vector<uint32_t> &in, std::string *first) {
    std::vector<float> src(in.size());
    for (size_t i = 0; i < in.size(); ++i) src[i] = tu::from_bits(in[i]);
    std::vector<uint16_t> got(in.size(), 0xabcd);
    fn(src.data(), got.data(), int64_t(src.size()));
    int64_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const uint16_t want = ref_bf16(in[i]);
        if (got[i] != want && bad++ == 0) {
            std::ostringstream s;
            s << std::hex << "0x" << in[i] << " -> 0x" << got[i] << ", scalar 0x" << want;
            *first = s.str();
        }
    }
    return bad;
}

}  // namespace

TEST_CASE("hwy bf16 convert: the scalar rounding itself (RNE, NaN quiet, overflow to Inf)") {
    CHECK(ref_bf16(0x3f808000u) == 0x3f80);  // tie, even: down
    CHECK(ref_bf16(0x3f818000u) == 0x3f82);  // tie, odd: up
    CHECK(ref_bf16(0x3f808001u) == 0x3f81);
    CHECK(ref_bf16(0x00008000u) == 0x0000);  // denormal tie, even
    CHECK(ref_bf16(0x00018000u) == 0x0002);  // denormal tie, odd
    CHECK(ref_bf16(0x007fffffu) == 0x0080);  // largest denormal rounds to the smallest normal
    CHECK(ref_bf16(0x7f7fffffu) == 0x7f80);  // max float rounds to Inf
    CHECK(ref_bf16(0x7f7f8000u) == 0x7f80);  // tie, odd: up to Inf
    CHECK(ref_bf16(0x7f7e8000u) == 0x7f7e);  // tie, even: stays
    CHECK(ref_bf16(0x7f800000u) == 0x7f80);
    CHECK(ref_bf16(0xff800000u) == 0xff80);
    CHECK(ref_bf16(0x7f800001u) == 0x7fc0);  // signalling NaN, payload below: quiet, not Inf
    CHECK(ref_bf16(0xff80ffffu) == 0xffc0);
    CHECK(ref_bf16(0x7fd12345u) == 0x7fd1);
    CHECK(ref_bf16(0x80000000u) == 0x8000);
}

TEST_CASE("hwy bf16 convert: every target, bitwise equal to the scalar conversions") {
    const std::vector<hwy_lp_target> targets = compiled_lp_targets();
    REQUIRE(!targets.empty());

    const std::vector<uint32_t> specials = special_f32_bits();
    std::vector<uint32_t> random_bits(size_t(1) << 22);
    {
        std::mt19937_64 g(77);
        for (size_t i = 0; i < random_bits.size(); i += 2) {
            const uint64_t x = g();
            random_bits[i] = uint32_t(x);
            random_bits[i + 1] = uint32_t(x >> 32);
        }
        // Ties and near-ties in bulk: low 16 bits 0x8000 / 0x7fff / 0x8001.
        const uint32_t lows[] = {0x8000u, 0x7fffu, 0x8001u, 0x0000u};
        for (size_t i = 0; i < random_bits.size(); i += 7)
            random_bits[i] = (random_bits[i] & 0xffff0000u) | lows[(i / 7) % 4];
    }
    std::vector<uint16_t> all_bf16(65536);
    for (uint32_t h = 0; h < 65536; ++h) all_bf16[h] = uint16_t(h);

    for (const hwy_lp_target &t : targets) {
        CAPTURE(std::string(t.name));
        REQUIRE((t.f32_to_bf16 != nullptr));
        REQUIRE((t.bf16_to_f32 != nullptr));
        std::string first;
        INFO("first mismatch: " << first);
        CHECK(count_f32_to_bf16_mismatch(t.f32_to_bf16, specials, &first) == 0);
        CHECK(count_f32_to_bf16_mismatch(t.f32_to_bf16, random_bits, &first) == 0);

        // bf16 -> fp32: all 65536 patterns.
        std::vector<float> wide(65536);
        t.bf16_to_f32(all_bf16.data(), wide.data(), 65536);
        int64_t bad = 0;
        for (uint32_t h = 0; h < 65536; ++h)
            bad += tu::bits(wide[h]) != tu::bits(anvil::lowp::bf16_to_f32(uint16_t(h)));
        CHECK(bad == 0);
    }
}

TEST_CASE("hwy bf16 convert: every length 0..67, unaligned, nothing outside touched") {
    const std::vector<hwy_lp_target> targets = compiled_lp_targets();
    tu::rng r(99);
    const std::vector<uint32_t> specials = special_f32_bits();
    // Source rows ending at a guard page: a full-vector tail read faults.
    tu::guarded gsrc(68 * 4 + 64);
    for (const hwy_lp_target &t : targets) {
        CAPTURE(std::string(t.name));
        int64_t bad = 0;
        for (int64_t n = 0; n <= 67; ++n)
            for (int src_off = 0; src_off < 4; ++src_off)
                for (int dst_off = 0; dst_off < 4; ++dst_off) {
                    // fp32 -> bf16.
                    std::vector<float> src(size_t(n + src_off + 1));
                    for (float &f : src)
                        f = tu::from_bits(r.ival(0, 3) == 0 ? specials[size_t(r.ival(0, int64_t(specials.size()) - 1))]
                                                            : uint32_t(r.ival(0, UINT32_MAX)));
                    std::vector<uint16_t> dst(size_t(n + dst_off + 8), 0x5a5a);
                    t.f32_to_bf16(src.data() + src_off, dst.data() + dst_off, n);
                    for (size_t x = 0; x < dst.size(); ++x) {
                        const int64_t i = int64_t(x) - dst_off;
                        const uint16_t want = (i >= 0 && i < n)
                                                  ? anvil::lowp::f32_to_bf16(src[size_t(src_off + i)])
                                                  : uint16_t(0x5a5a);
                        bad += dst[x] != want;
                    }
                    // bf16 -> fp32.
                    std::vector<uint16_t> hsrc(size_t(n + src_off + 1));
                    for (uint16_t &h : hsrc) h = uint16_t(r.ival(0, 0xffff));
                    std::vector<float> fdst(size_t(n + dst_off + 8), tu::sentinel());
                    t.bf16_to_f32(hsrc.data() + src_off, fdst.data() + dst_off, n);
                    for (size_t x = 0; x < fdst.size(); ++x) {
                        const int64_t i = int64_t(x) - dst_off;
                        const uint32_t want =
                            (i >= 0 && i < n) ? tu::bits(anvil::lowp::bf16_to_f32(hsrc[size_t(src_off + i)]))
                                              : tu::kSentinelBits;
                        bad += tu::bits(fdst[x]) != want;
                    }
                }
        CHECK(bad == 0);
        // Sources that end at the guard page.
        for (int64_t n = 0; n <= 67; ++n) {
            float *fs = gsrc.tail(size_t(n));
            for (int64_t i = 0; i < n; ++i) fs[i] = tu::from_bits(uint32_t(r.ival(0, UINT32_MAX)));
            std::vector<uint16_t> h(size_t(n) + 1);
            t.f32_to_bf16(fs, h.data(), n);
            for (int64_t i = 0; i < n; ++i) bad += h[size_t(i)] != anvil::lowp::f32_to_bf16(fs[i]);
            uint16_t *hs = reinterpret_cast<uint16_t *>(gsrc.end()) - n;
            for (int64_t i = 0; i < n; ++i) hs[i] = uint16_t(r.ival(0, 0xffff));
            std::vector<float> f(size_t(n) + 1);
            t.bf16_to_f32(hs, f.data(), n);
            for (int64_t i = 0; i < n; ++i)
                bad += tu::bits(f[size_t(i)]) != tu::bits(anvil::lowp::bf16_to_f32(hs[i]));
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("hwy bf16 convert: the public row conversions under each ISA cap") {
    const anvil_isa_t detected = anvil_get_detected_isa();
    std::vector<uint32_t> bits = special_f32_bits();
    std::mt19937 g(5);
    for (int i = 0; i < 100000; ++i) bits.push_back(uint32_t(g()));
    std::vector<float> src(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) src[i] = tu::from_bits(bits[i]);
    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        if (cap > detected) continue;
        CAPTURE(std::string(anvil_isa_name(cap)));
        anvil::cpu::set_max_isa_for_test(cap);
        for (size_t n : {size_t(0), size_t(1), size_t(13), bits.size()}) {
            std::vector<uint16_t> h(n + 1, 0x1234);
            anvil::lowp::convert_f32_to_bf16(src.data(), h.data(), int64_t(n));
            int64_t bad = h[n] != 0x1234;
            for (size_t i = 0; i < n; ++i) bad += h[i] != anvil::lowp::f32_to_bf16(src[i]);
            std::vector<float> back(n + 1, tu::sentinel());
            anvil::lowp::convert_bf16_to_f32(h.data(), back.data(), int64_t(n));
            bad += tu::bits(back[n]) != tu::kSentinelBits;
            for (size_t i = 0; i < n; ++i) bad += tu::bits(back[i]) != tu::bits(anvil::lowp::bf16_to_f32(h[i]));
            CHECK(bad == 0);
        }
        // Negative n: nothing.
        uint16_t h = 0x1234;
        anvil::lowp::convert_f32_to_bf16(src.data(), &h, -3);
        CHECK(h == 0x1234);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

}  // TEST_SUITE("once")
