// The JIT AVX-512 fp32 <-> bf16 conversions are bitwise the scalar ones
// (lowp::f32_to_bf16 / bf16_to_f32) for special values, random bits and
// every length with unaligned pointers, and never touch memory past n.
// (Compiled where the library has the JIT tier, ANVIL_TESTS_HAVE_JIT.)  The
// public conversion calls are checked under every cap on every build.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_ref.h"
#include "test_util.h"

namespace {

TEST_SUITE("once") {
#if ANVIL_TESTS_HAVE_JIT
using anvil::lowp::jit_convert_fn;

TEST_CASE("bf16 convert: JIT kernels match the scalar conversion bit for bit") {
    const jit_convert_fn to_bf16 = anvil::lowp::jit_bf16_convert_kernel(true);
    const jit_convert_fn to_f32 = anvil::lowp::jit_bf16_convert_kernel(false);
    if (!(anvil::cpu::info().detected & anvil::cpu::f_avx512_core)) {
        MESSAGE("no AVX-512: JIT conversions not available");
        CHECK_FALSE(bool(to_bf16));
        return;
    }
    REQUIRE(bool(to_bf16));
    REQUIRE(bool(to_f32));
    std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u,
                                  0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                  0xffc00001u, 0x7f800001u, 0x7fbfffffu, 0xff800001u, 0x3f808000u,
                                  0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7f7f8000u, 0x7f7f7fffu,
                                  0x00008000u, 0x00018000u, 0x4effffffu};
    tu::rng r(11);
    for (int t = 0; t < 200000; ++t) bits.push_back(uint32_t(r.ival(0, 0xffffffffll)));
    std::vector<float> src(bits.size());
    std::memcpy(src.data(), bits.data(), bits.size() * 4);
    std::vector<uint16_t> got(src.size());
    to_bf16(src.data(), got.data(), int64_t(src.size()));
    int64_t bad = 0;
    for (size_t t = 0; t < src.size(); ++t) bad += got[t] != anvil::lowp::f32_to_bf16(src[t]);
    CHECK(bad == 0);
    std::vector<uint16_t> all(65536);
    for (int t = 0; t < 65536; ++t) all[size_t(t)] = uint16_t(t);
    std::vector<float> wide(65536);
    to_f32(all.data(), wide.data(), 65536);
    bad = 0;
    for (int t = 0; t < 65536; ++t)
        bad += tu::bits(wide[size_t(t)]) != tu::bits(anvil::lowp::bf16_to_f32(uint16_t(t)));
    CHECK(bad == 0);
    // Every length with the data ending at a guard page; outputs have
    // sentinels around them.
    tu::guarded gs(4096), gd(4096);
    for (int64_t n = 0; n <= 67; ++n) {
        CAPTURE(n);
        float *s = gs.tail(size_t(n));
        for (int64_t i = 0; i < n; ++i) s[i] = src[size_t(i * 7)];
        auto *d16 = reinterpret_cast<uint16_t *>(gd.end()) - n;
        std::vector<uint16_t> before(reinterpret_cast<uint16_t *>(gd.head()), d16);
        to_bf16(s, d16, n);
        for (int64_t i = 0; i < n; ++i) CHECK(d16[i] == anvil::lowp::f32_to_bf16(s[i]));
        CHECK(std::memcmp(before.data(), gd.head(), before.size() * 2) == 0);
        auto *s16 = reinterpret_cast<uint16_t *>(gs.end()) - n;
        for (int64_t i = 0; i < n; ++i) s16[i] = uint16_t(bits[size_t(i * 5)] >> 16);
        float *df = gd.tail(size_t(n));
        to_f32(s16, df, n);
        for (int64_t i = 0; i < n; ++i) CHECK(tu::bits(df[i]) == uint32_t(s16[i]) << 16);
    }
}
#endif  // ANVIL_TESTS_HAVE_JIT

TEST_CASE("bf16 convert: public calls under every ISA cap, and their argument checks") {
    const float src[5] = {1.0f, 1.00390625f, 1.01171875f, -tu::inf(), tu::qnan()};
    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        anvil::cpu::set_max_isa_for_test(cap);
        uint16_t d[5];
        REQUIRE(anvil_convert_f32_to_bf16(src, d, 5) == anvil_success);
        for (int i = 0; i < 5; ++i) CHECK(d[i] == anvil::lowp::f32_to_bf16(src[i]));
        CHECK(d[1] == 0x3f80);  // tie, even below
        CHECK(d[2] == 0x3f82);  // tie, even above
        float back[5];
        REQUIRE(anvil_convert_bf16_to_f32(d, back, 5) == anvil_success);
        CHECK(back[0] == 1.0f);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
    uint16_t d[1];
    float f[1];
    CHECK(anvil_convert_f32_to_bf16(src, d, -1) == anvil_bad_size);
    CHECK(anvil_convert_f32_to_bf16(nullptr, d, 1) == anvil_null_pointer);
    CHECK(anvil_convert_bf16_to_f32(d, nullptr, 1) == anvil_null_pointer);
    CHECK(anvil_convert_bf16_to_f32(nullptr, f, 0) == anvil_success);
}
}

}  // namespace
