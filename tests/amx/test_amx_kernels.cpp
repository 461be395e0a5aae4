// AMX lp kernels (jit/jit_amx_lp.h), every configuration: bf16 and the four
// int8 sign combinations x m = 1..32 (one and two tile rows, every M tail)
// x nv = 1, 2 x accumulate x K tails (kg = 1, 7, 16, 17, 35: below, at and
// past one tile step), against scalar dot products.  They run natively
// where the CPU has AMX and the kernel granted XTILEDATA, otherwise in the
// AMX emulator (tests/amx_emu) on the bytes the generator emitted; each
// configuration prints which.
//
// Exactness: int8 dot products are exact int32; bf16 operands are small
// integers, so every fp32 sum is exact whatever the order of additions.
// A separate case takes random fractions and checks the bound
// gamma(2 kg) * sum |a b| (the rounding of 2 kg additions in fp32).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "amx/amx_test_backend.h"
#include "jit/amx_runtime.h"
#include "jit/jit_amx_lp.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_ukernel.h"
#include "test_util.h"

namespace {

using anvil::jit::amx_int8_signs;
using anvil::jit::amx_lp_desc;
using anvil::lowp::lp_kind;
using anvil::lowp::lp_ukernel_args;

struct type_case {
    const char *name;
    lp_kind kind;
    amx_int8_signs signs;
    bool a_signed, b_signed;
};
const type_case kTypes[] = {
    {"bf16", lp_kind::bf16, amx_int8_signs::u8s8, false, false},
    {"u8s8", lp_kind::u8s8, amx_int8_signs::u8s8, false, true},
    {"s8s8", lp_kind::u8s8, amx_int8_signs::s8s8, true, true},
    {"s8u8", lp_kind::u8s8, amx_int8_signs::s8u8, true, false},
    {"u8u8", lp_kind::u8s8, amx_int8_signs::u8u8, false, false},
};

float bf(uint16_t v) { return anvil::lowp::bf16_to_f32(v); }
uint16_t to_bf(float f) { return anvil::lowp::f32_to_bf16(f); }

// One kernel call on fresh operands; returns the number of wrong elements
// (described in *first).  fraction: bf16 values are random fractions and
// the result is checked against the rounding bound instead of exactly.
int64_t run_one(amxt::mode md, const type_case &t, int m, int nv, bool accumulate, int64_t kg,
                tu::rng &r, bool fraction, std::string *first) {
    const amx_lp_desc d = anvil::jit::make_amx_lp_desc(t.kind, m, nv, accumulate, t.signs);
    anvil::cache::kernel_ptr k;
    REQUIRE(anvil::jit::get_amx_lp_kernel(d, &k) == anvil_success);
    const int ncols = 16 * nv;
    // A rows a_rs bytes apart (padding, and a 4-byte offset from 64),
    // B k-groups b_ld apart (wider than the tile for odd kg), acc rows
    // acc_ld apart with sentinel columns and one sentinel row.
    const int64_t a_rs = kg * 4 + 4 * (m % 3) + 8;
    const int64_t b_ld = 128 + (kg % 2 ? 64 : 0);
    const int64_t acc_ld = ncols + 5;
    std::vector<uint8_t> abuf(size_t(m * a_rs + 4)), bbuf(size_t(kg * b_ld));
    uint8_t *A = abuf.data() + 4;
    for (auto &v : abuf) v = uint8_t(r.ival(0, 255));
    for (auto &v : bbuf) v = uint8_t(r.ival(0, 255));
    if (t.kind == lp_kind::bf16) {
        auto fill = [&](uint8_t *p) {
            const float f = fraction ? r.frac() : float(r.ival(-4, 4));
            const uint16_t b = to_bf(f);
            std::memcpy(p, &b, 2);
        };
        for (int i = 0; i < m; ++i)
            for (int64_t e = 0; e < kg * 2; ++e) fill(A + i * a_rs + e * 2);
        for (int64_t g = 0; g < kg; ++g)
            for (int e = 0; e < 64; ++e) fill(bbuf.data() + g * b_ld + e * 2);
    }
    std::vector<int32_t> acc(size_t((m + 1) * acc_ld));
    const int32_t sentinel = 0x7f3a5a5a;
    for (int64_t i = 0; i < int64_t(acc.size()); ++i) {
        const bool inside = i / acc_ld < m && i % acc_ld < ncols;
        if (!inside || !accumulate) {
            acc[size_t(i)] = sentinel;
        } else if (t.kind == lp_kind::bf16) {
            const float f = float(r.ival(-50, 50));
            std::memcpy(&acc[size_t(i)], &f, 4);
        } else {
            acc[size_t(i)] = int32_t(r.ival(-100000, 100000));
        }
    }
    const std::vector<int32_t> acc0 = acc;

    lp_ukernel_args a{};
    a.a = A;
    a.b = bbuf.data();
    a.acc = acc.data();
    a.a_rs = a_rs;
    a.b_ld = b_ld;
    a.acc_ld = acc_ld;
    a.kg = kg;
    a.m = m;
    a.n = ncols;
    a.accumulate = accumulate;
    a.m_tiles = 1;
    a.k_segs = 1;
    amxt::run_kernel(md, k, anvil::jit::amx_lp_tile_config(m, nv), &a);

    int64_t bad = 0;
    for (int i = 0; i <= m; ++i)
        for (int64_t j = 0; j < acc_ld; ++j) {
            const size_t at = size_t(i * acc_ld + j);
            std::string what;
            if (i == m || j >= ncols) {
                if (acc[at] != sentinel) what = "written outside the tile";
            } else if (t.kind == lp_kind::bf16) {
                float c0;
                std::memcpy(&c0, &acc0[at], 4);
                double exact = accumulate ? c0 : 0.0, mag = std::fabs(exact);
                for (int64_t e = 0; e < kg * 2; ++e) {
                    uint16_t av, bv;
                    std::memcpy(&av, A + i * a_rs + e * 2, 2);
                    std::memcpy(&bv, bbuf.data() + (e / 2) * b_ld + j * 4 + (e % 2) * 2, 2);
                    exact += double(bf(av)) * double(bf(bv));
                    mag += std::fabs(double(bf(av)) * double(bf(bv)));
                }
                float got;
                std::memcpy(&got, &acc[at], 4);
                const double u = std::ldexp(1.0, -24), n = double(2 * kg + 1);
                const double bound = fraction ? n * u / (1 - n * u) * mag : 0.0;
                if (!(std::fabs(double(got) - exact) <= bound))
                    what = "got " + std::to_string(got) + " want " + std::to_string(exact);
            } else {
                int64_t want = accumulate ? acc0[at] : 0;
                for (int64_t e = 0; e < kg * 4; ++e) {
                    const uint8_t av = A[i * a_rs + e], bv = bbuf[size_t((e / 4) * b_ld + j * 4 + e % 4)];
                    const int64_t x = t.a_signed ? int64_t(int8_t(av)) : int64_t(av);
                    const int64_t y = t.b_signed ? int64_t(int8_t(bv)) : int64_t(bv);
                    want += x * y;
                }
                const int32_t w32 = int32_t(uint32_t(uint64_t(want)));  // wraps modulo 2^32
                if (acc[at] != w32)
                    what = "got " + std::to_string(acc[at]) + " want " + std::to_string(w32);
            }
            if (!what.empty() && bad++ == 0)
                *first = k->name() + " kg=" + std::to_string(kg) + " (" + std::to_string(i) + "," +
                         std::to_string(j) + "): " + what;
        }
    return bad;
}

amxt::mode test_mode() { return amxt::native_usable() ? amxt::mode::native : amxt::mode::emulated; }

}  // namespace

TEST_SUITE("amx") {

TEST_CASE("amx kernels: every configuration matches the scalar dot products") {
    const amxt::mode md = test_mode();
    tu::rng r(77);
    const int64_t kKg[] = {1, 7, 16, 17, 35};
    int64_t configs = 0;
    for (const type_case &t : kTypes)
        for (int m = 1; m <= anvil::jit::kAmxMaxRows; ++m)
            for (int nv = 1; nv <= 2; ++nv)
                for (int acc = 0; acc <= 1; ++acc) {
                    int64_t bad = 0;
                    std::string first;
                    for (int64_t kg : kKg) bad += run_one(md, t, m, nv, acc != 0, kg, r, false, &first);
                    std::printf("amx kernel %s m=%d nv=%d acc=%d: %s\n", t.name, m, nv, acc,
                                amxt::mode_name(md));
                    INFO(first);
                    CHECK(bad == 0);
                    ++configs;
                }
    amxt::release_tiles(md);
    const auto errors = amxt::take_emulation_errors();
    for (const auto &e : errors) FAIL_CHECK(e);
    MESSAGE(configs << " AMX kernel configurations, " << std::string(amxt::mode_name(md)));
}

TEST_CASE("amx kernels: bf16 random fractions stay within the fp32 rounding bound") {
    const amxt::mode md = test_mode();
    tu::rng r(78);
    for (int m : {1, 16, 17, 32})
        for (int nv = 1; nv <= 2; ++nv)
            for (int64_t kg : {3, 16, 100}) {
                std::string first;
                const int64_t bad = run_one(md, kTypes[0], m, nv, kg % 2 == 1, kg, r, true, &first);
                INFO(first);
                CHECK(bad == 0);
            }
    amxt::release_tiles(md);
    for (const auto &e : amxt::take_emulation_errors()) FAIL_CHECK(e);
}

}  // TEST_SUITE
