// JIT low-precision micro-kernels (jit/jit_lp_*): for each JIT lp backend
// the CPU has and each kind it supports, every tile (m in 1..12, nv in 1..2)
// over a range of k-group counts, with and without accumulation, must give
// the same bits as lp_ukernel_scalar (the contract's definition).  A and B
// end against PROT_NONE guard pages (rows >= m of A and groups >= kg of B
// are never read); acc is a sentinel-filled block larger than the tile that
// must be untouched outside rows < m, columns < 16 * nv.  The bf16 kernels
// that read A widened to fp32 (desc.a_f32) run on a widened copy of the
// same A, also against a guard page, and must give the same bits.
//
// These kernels do not depend on the ISA cap (the backends test what the
// CPU has), so the suite runs once.
// Compiled only where the library has the JIT tier (ANVIL_TESTS_HAVE_JIT:
// x86-64).
#include <doctest/doctest.h>

#include <climits>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_ref.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT  // JIT kernels exist on x86-64 only

namespace {

using anvil::lowp::lp_backend;
using anvil::lowp::lp_kind;
using anvil::lowp::lp_ukernel_args;
using anvil::lowp::lp_ukernel_desc;
using anvil::lowp::lp_ukernel_ref;

const int64_t kKgs[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 64, 257};
constexpr int64_t kMaxKg = 257;
constexpr int kMR = anvil::lowp::kMR;

struct jit_case {
    const char *what;      // which backend
    const lp_backend *be;  // null when the CPU lacks it
    lp_kind kind;
    bool a_f32 = false;    // kernels on widened A (bf16)
};

std::vector<jit_case> jit_cases() {
    return {{"avx512 bf16", anvil::lowp::jit_avx512_lp_backend(), lp_kind::bf16},
            {"avx512 bf16 widened A", anvil::lowp::jit_avx512_lp_backend(), lp_kind::bf16, true},
            {"avx512 u8s8", anvil::lowp::jit_avx512_lp_backend(), lp_kind::u8s8},
            {"avx2_vnni u8s8", anvil::lowp::jit_avx2_vnni_lp_backend(), lp_kind::u8s8}};
}

const char *kind_name(lp_kind k) { return k == lp_kind::bf16 ? "bf16" : "u8s8"; }

// Random bf16 with magnitude in [2^-20, 2^21) and a random sign: far from
// the denormal range (vdpbf16ps flushes denormals, the contract does not
// cover them), but spread widely enough that the order of the two
// roundings per group changes results.
uint16_t rand_bf16(tu::rng &r) {
    const uint32_t sign = uint32_t(r.ival(0, 1)) << 15;
    const uint32_t exp = uint32_t(127 + r.ival(-20, 20)) << 7;
    return uint16_t(sign | exp | uint32_t(r.ival(0, 127)));
}

// One k-group dword of the given kind: two bf16, or four bytes (full u8 /
// s8 range, so 0, 255, -128 and 127 all occur).
void fill_group(tu::rng &r, lp_kind kind, uint8_t *p) {
    if (kind == lp_kind::bf16) {
        const uint16_t h[2] = {rand_bf16(r), rand_bf16(r)};
        std::memcpy(p, h, sizeof(h));
    } else {
        for (int t = 0; t < 4; ++t) p[t] = uint8_t(r.ival(0, 255));
    }
}

// Initial accumulator values for accumulate == 1.
uint32_t rand_acc(tu::rng &r, lp_kind kind) {
    if (kind == lp_kind::u8s8) return uint32_t(r.ival(INT32_MIN, INT32_MAX));
    const float f = float(r.ival(1 << 23, (1 << 24) - 1)) * 0x1p-23f *
                    std::ldexp(1.0f, int(r.ival(-20, 20))) * (r.ival(0, 1) ? 1.0f : -1.0f);
    return tu::bits(f);
}

// An accumulator block with margins: kMR rows of acc_ld elements plus
// kMargin sentinel elements before and after; all of it starts as the
// sentinel, the tile gets initial values.
struct acc_block {
    static constexpr int64_t kMargin = 37;
    std::vector<uint32_t> raw;
    int64_t acc_ld;
    int off;  // elements from raw's start to the margin: misaligns the tile
    acc_block(int64_t ld, int off_) : raw(size_t(kMR * ld + 2 * kMargin + off_)), acc_ld(ld), off(off_) {
        std::fill(raw.begin(), raw.end(), tu::kSentinelBits);
    }
    uint32_t *tile() { return raw.data() + off + kMargin; }
};

// Where the first difference between two acc blocks is ("" when none).
std::string first_difference(const acc_block &got, const acc_block &want, int m, int ncols) {
    for (size_t t = 0; t < got.raw.size(); ++t) {
        if (got.raw[t] == want.raw[t]) continue;
        const int64_t e = int64_t(t) - got.off - acc_block::kMargin;
        std::ostringstream s;
        const int64_t row = e >= 0 ? e / got.acc_ld : -1, col = e >= 0 ? e % got.acc_ld : e;
        const bool inside = e >= 0 && row < m && col < ncols;
        s << (inside ? "tile" : "OUTSIDE the tile") << " element (" << row << "," << col
          << "): got 0x" << std::hex << got.raw[t] << " want 0x" << want.raw[t] << std::dec;
        if (inside)
            s << " (as float " << tu::from_bits(got.raw[t]) << " vs " << tu::from_bits(want.raw[t])
              << ", as int " << int32_t(got.raw[t]) << " vs " << int32_t(want.raw[t]) << ")";
        return s.str();
    }
    return "";
}

// A and B operands placed at the end of guarded regions (reused by every
// call): the last byte of A's row m-1 and of B's group kg-1 are the last
// readable bytes.
struct operands {
    tu::guarded ga{size_t(kMR) * (kMaxKg * 4 + 128)};
    tu::guarded gb{size_t(kMaxKg) * (2 * 64 + 128)};
    tu::guarded gw{size_t(kMR) * (kMaxKg * 8 + 256)};
    uint8_t *a = nullptr, *b = nullptr;
    int64_t a_rs = 0, b_ld = 0;
    uint8_t *aw = nullptr;  // bf16: A widened to fp32 (the a_f32 kernels' operand)
    int64_t aw_rs = 0;

    void place(tu::rng &r, lp_kind kind, int m, int nv, int64_t kg, int64_t a_pad, int64_t b_pad) {
        a_rs = kg * 4 + a_pad;
        b_ld = nv * 64 + b_pad;
        a = reinterpret_cast<uint8_t *>(ga.end()) - ((m - 1) * a_rs + kg * 4);
        b = reinterpret_cast<uint8_t *>(gb.end()) - ((kg - 1) * b_ld + nv * 64);
        aw_rs = kg * 8 + 2 * a_pad;
        aw = reinterpret_cast<uint8_t *>(gw.end()) - ((m - 1) * aw_rs + kg * 8);
        for (int i = 0; i < m; ++i) {
            uint8_t *row = a + i * a_rs;
            for (int64_t g = 0; g < kg; ++g) fill_group(r, kind, row + g * 4);
            if (i + 1 < m) std::memset(row + kg * 4, 0xa5, size_t(a_pad));  // padding: junk
            if (kind != lp_kind::bf16) continue;
            uint8_t *wide = aw + i * aw_rs;
            for (int64_t e = 0; e < kg * 2; ++e) {
                uint16_t h;
                std::memcpy(&h, row + e * 2, 2);
                const uint32_t w = uint32_t(h) << 16;
                std::memcpy(wide + e * 4, &w, 4);
            }
            if (i + 1 < m) std::memset(wide + kg * 8, 0xa5, size_t(2 * a_pad));
        }
        for (int64_t g = 0; g < kg; ++g) {
            for (int c = 0; c < nv * 16; ++c) fill_group(r, kind, b + g * b_ld + c * 4);
            if (g + 1 < kg) std::memset(b + g * b_ld + nv * 64, 0x5a, size_t(b_pad));
        }
    }
};

std::string describe(const jit_case &jc, int m, int nv, const lp_ukernel_args &a) {
    std::ostringstream s;
    s << jc.what << ": m=" << m << " nv=" << nv << " n=" << a.n << " kg=" << a.kg
      << " accumulate=" << a.accumulate << " a_rs=" << a.a_rs << " b_ld=" << a.b_ld
      << " acc_ld=" << a.acc_ld << " a%64=" << (reinterpret_cast<uintptr_t>(a.a) % 64)
      << " b%64=" << (reinterpret_cast<uintptr_t>(a.b) % 64)
      << " acc%64=" << (reinterpret_cast<uintptr_t>(a.acc) % 64);
    return s.str();
}

// Runs the kernel and the scalar definition on the same inputs; returns
// the first difference ("" when bitwise equal everywhere).
std::string run_one(const jit_case &jc, const lp_ukernel_ref &k, operands &ops, tu::rng &r, int m,
                    int nv, int64_t n, int64_t kg, bool accumulate, int64_t c_pad, int c_off,
                    const uint8_t *b_next, tu::fault_reporter &fr) {
    acc_block got(nv * 16 + c_pad, c_off), want(nv * 16 + c_pad, c_off);
    if (accumulate)
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < nv * 16; ++j)
                got.tile()[i * got.acc_ld + j] = want.tile()[i * want.acc_ld + j] =
                    rand_acc(r, jc.kind);
    lp_ukernel_args args{};
    args.a = ops.a;
    args.b = ops.b;
    args.acc = got.tile();
    args.a_rs = ops.a_rs;
    args.b_ld = ops.b_ld;
    args.acc_ld = got.acc_ld;
    args.kg = kg;
    args.m = m;
    args.n = n;
    args.accumulate = accumulate ? 1 : 0;
    args.b_next = b_next;
    if (jc.a_f32) {
        args.a = ops.aw;
        args.a_rs = ops.aw_rs;
    }
    const std::string what = describe(jc, m, nv, args);
    fr.set(what);
    k.fn(&args);
    args.a = ops.a;
    args.a_rs = ops.a_rs;
    args.acc = want.tile();
    anvil::lowp::lp_ukernel_scalar(&args, jc.kind);
    const std::string diff = first_difference(got, want, m, nv * 16);
    return diff.empty() ? diff : what + ": " + diff;
}

lp_ukernel_ref get_kernel(const jit_case &jc, int m, int nv, bool accumulate) {
    lp_ukernel_ref k;
    const lp_ukernel_desc d =
        anvil::lowp::make_lp_desc(uint8_t(jc.be->tier()), jc.kind, m, nv, accumulate, jc.a_f32);
    REQUIRE(jc.be->get(d, &k) == anvil_success);
    REQUIRE(bool(k.fn));
    return k;
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp jit backends: presence follows the detected CPU features") {
    using namespace anvil::cpu;
    const uint32_t f = info().detected;
    const bool avx512 = (f & f_avx512_core) && (f & (f_avx512_bf16 | f_avx512_vnni));
    const bool avx2_vnni = (f & f_avx2) && (f & f_avx2_vnni);
    const lp_backend *z = anvil::lowp::jit_avx512_lp_backend();
    const lp_backend *y = anvil::lowp::jit_avx2_vnni_lp_backend();
    CHECK((z != nullptr) == avx512);
    CHECK((y != nullptr) == avx2_vnni);
    if (z) {
        CHECK(std::string(z->name()).rfind("jit", 0) == 0);
        CHECK(z->supports(lp_kind::bf16) == bool(f & f_avx512_bf16));
        CHECK(z->supports(lp_kind::u8s8) == bool(f & f_avx512_vnni));
    }
    if (y) {
        CHECK(std::string(y->name()).rfind("jit", 0) == 0);
        CHECK(y->tier() == anvil_isa_avx2);
        CHECK(y->supports(lp_kind::u8s8));
        CHECK_FALSE(y->supports(lp_kind::bf16));
        lp_ukernel_ref k;
        CHECK(y->get(anvil::lowp::make_lp_desc(anvil_isa_avx2, lp_kind::bf16, 4, 1, false), &k) ==
              anvil_unsupported);
    }
    for (const lp_backend *be : {z, y}) {
        if (!be) continue;
        lp_ukernel_ref k;
        for (auto bad : {std::make_pair(0, 1), std::make_pair(13, 1), std::make_pair(4, 0),
                         std::make_pair(4, 3)})
            CHECK(be->get(anvil::lowp::make_lp_desc(uint8_t(be->tier()), lp_kind::u8s8,
                                                    bad.first, bad.second, false),
                          &k) == anvil_invalid_argument);
    }
    if (!z && !y) MESSAGE("no JIT lp backend on this CPU (needs AVX512-VNNI/BF16 or AVX-VNNI)");
}

TEST_CASE("lp jit kernels: every tile matches lp_ukernel_scalar bitwise") {
    tu::rng r(20261202);
    operands ops;
    tu::fault_reporter fr;
    const int64_t a_pads[] = {3, 17, 68};
    const int64_t b_pads[] = {4, 36, 76};
    const int64_t c_pads[] = {1, 3, 16};
    int64_t calls = 0, failed = 0;
    for (const jit_case &jc : jit_cases()) {
        if (!jc.be || !jc.be->supports(jc.kind)) {
            MESSAGE(std::string(jc.what), ": skipped, the CPU lacks the feature");
            continue;
        }
        for (int m = 1; m <= kMR; ++m)
            for (int nv = 1; nv <= 2; ++nv)
                for (int acc = 0; acc <= 1; ++acc) {
                    const lp_ukernel_ref k = get_kernel(jc, m, nv, acc != 0);
                    CAPTURE(k.name);
                    const int64_t ns[2][3] = {{1, 15, 16}, {17, 31, 32}};
                    for (int64_t n : ns[nv - 1])
                        for (int64_t kg : kKgs) {
                            const int v = int(calls++ % 3);
                            ops.place(r, jc.kind, m, nv, kg, a_pads[v], b_pads[(v + 1) % 3]);
                            // Half the calls pass a prefetch hint (never read).
                            const uint8_t *b_next = calls % 2 ? ops.b + 4096 : nullptr;
                            const std::string diff =
                                run_one(jc, k, ops, r, m, nv, n, kg, acc != 0, c_pads[(v + 2) % 3],
                                        1 + v, b_next, fr);
                            if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
                        }
                }
    }
    CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
    MESSAGE(calls, " JIT lp kernel calls checked");
}

TEST_CASE("lp jit kernels: bf16 data tells the rounding order apart") {
    // The sweep's data would be useless if the other order of the two
    // additions per group (element 0 first) gave the same bits: check that
    // it does not, on one large tile of the same kind of data.
    tu::rng r(7);
    const int64_t kg = 64, cols = 32;
    std::vector<uint16_t> a(size_t(kg * 2)), b(size_t(kg * cols * 2));
    for (auto &x : a) x = rand_bf16(r);
    for (auto &x : b) x = rand_bf16(r);
    int differ = 0;
    for (int64_t j = 0; j < cols; ++j) {
        float s10 = 0.0f, s01 = 0.0f;
        for (int64_t g = 0; g < kg; ++g) {
            const float p0 = anvil::lowp::bf16_to_f32(a[size_t(2 * g)]) *
                             anvil::lowp::bf16_to_f32(b[size_t((g * cols + j) * 2)]);
            const float p1 = anvil::lowp::bf16_to_f32(a[size_t(2 * g + 1)]) *
                             anvil::lowp::bf16_to_f32(b[size_t((g * cols + j) * 2 + 1)]);
            s10 = s10 + p1;
            s10 = s10 + p0;
            s01 = s01 + p0;
            s01 = s01 + p1;
        }
        differ += tu::bits(s10) != tu::bits(s01);
    }
    CHECK(differ > 0);
}

TEST_CASE("lp jit kernels: u8s8 accumulators wrap modulo 2^32") {
    tu::rng r(11);
    tu::fault_reporter fr;
    for (const jit_case &jc : jit_cases()) {
        if (jc.kind != lp_kind::u8s8) continue;
        if (!jc.be || !jc.be->supports(jc.kind)) {
            MESSAGE(std::string(jc.what), ": skipped, the CPU lacks the feature");
            continue;
        }
        // All A = 255, B = +127 (acc near INT32_MAX) or B = -128 (near
        // INT32_MIN): every element passes the int32 limit.
        for (const bool up : {true, false}) {
            const int m = 5, nv = 2;
            const int64_t kg = 9, ld = 32;
            std::vector<uint8_t> a(size_t(m * kg * 4), 255), b(size_t(kg * ld * 4), up ? 0x7f : 0x80);
            std::vector<int32_t> acc(size_t(m * ld));
            for (auto &x : acc) x = up ? INT32_MAX - int32_t(r.ival(0, 1000)) : INT32_MIN + int32_t(r.ival(0, 1000));
            const std::vector<int32_t> acc0 = acc;
            const lp_ukernel_ref k = get_kernel(jc, m, nv, true);
            lp_ukernel_args args{};
            args.a = a.data();
            args.b = b.data();
            args.acc = acc.data();
            args.a_rs = kg * 4;
            args.b_ld = ld * 4;
            args.acc_ld = ld;
            args.kg = kg;
            args.m = m;
            args.n = 32;
            args.accumulate = 1;
            fr.set(std::string(jc.what) + " wrap test");
            k.fn(&args);
            const int64_t step = kg * 4 * 255 * (up ? 127 : -128);
            int bad = 0;
            for (size_t t = 0; t < acc.size(); ++t) {
                const int32_t want = int32_t(uint32_t(acc0[t]) + uint32_t(step));
                bad += acc[t] != want;
            }
            CHECK_MESSAGE(bad == 0, jc.what, (up ? " wrapping up" : " wrapping down"));
        }
    }
}

TEST_CASE("lp jit kernels: cached, named, and no writable+executable mapping") {
    // oneDNN in this binary may own W+X mappings of its own: only mappings
    // that appear while lp kernels are generated are judged.
    const std::vector<std::string> before_v = tu::wx_mappings();
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    int made = 0;
    for (const jit_case &jc : jit_cases()) {
        if (!jc.be || !jc.be->supports(jc.kind)) continue;
        for (int m : {1, 7, 12})
            for (int nv : {1, 2}) {
                const lp_ukernel_ref k = get_kernel(jc, m, nv, m == 7);
                const lp_ukernel_ref again = get_kernel(jc, m, nv, m == 7);
                CHECK(bool(k.fn == again.fn));  // front cache / kernel cache hit
                const std::string name = k.name;
                CHECK(name.find(kind_name(jc.kind)) != std::string::npos);
                CHECK(name.find("_m" + std::to_string(m) + "_") != std::string::npos);
                ++made;
            }
    }
    std::vector<std::string> added;
    for (const auto &mp : tu::wx_mappings())
        if (std::find(before_v.begin(), before_v.end(), mp) == before_v.end()) added.push_back(mp);
    std::string list;
    for (const auto &s : added) list += s + "\n";
    INFO("new W+X mappings:\n", list);
    CHECK(added.empty());
    if (!made) MESSAGE("no JIT lp kernel made: the CPU lacks the features");
}

TEST_CASE("lp jit kernels: the zmm and ymm backends give distinct kernels for one descriptor") {
    const lp_backend *z = anvil::lowp::jit_avx512_lp_backend();
    const lp_backend *y = anvil::lowp::jit_avx2_vnni_lp_backend();
    if (!z || !y || !z->supports(lp_kind::u8s8)) {
        MESSAGE("skipped: needs both AVX512-VNNI and AVX-VNNI");
        return;
    }
    // The same descriptor bytes (tier included) to both: the backends must
    // not share cache entries.
    const lp_ukernel_desc d = anvil::lowp::make_lp_desc(anvil_isa_avx2, lp_kind::u8s8, 6, 2, false);
    lp_ukernel_ref kz, ky;
    REQUIRE(z->get(d, &kz) == anvil_success);
    REQUIRE(y->get(d, &ky) == anvil_success);
    CHECK(bool(kz.fn != ky.fn));
    CHECK(std::string(kz.name) != std::string(ky.name));
}

}  // TEST_SUITE("once")

#endif  // ANVIL_TESTS_HAVE_JIT
