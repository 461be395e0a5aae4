// The Highway bf16 dot kernels (lowp/lp_dot.h's bf16 contract,
// fallback/hwy_lp_dot_bf16.cc) of every compiled target the CPU supports:
// every tile (m in 1..4, n in 1..max_n) over K values around their 8-element
// steps and 32-element prefetch lines must give the
// bits of the contract's chain, computed here one element at a time.  The
// rows of A and B end exactly at PROT_NONE guard pages (reading an element
// past K faults); the padding between rows holds NaNs (reading one poisons
// the result); acc is a sentinel-filled block of which only rows <
// m, columns < n may change.  Values: random bf16 fractions of both signs
// with, per call, some exact zeros, Inf, NaN, denormals and products that
// overflow or underflow fp32 (where one rounding per product and per sum
// differs from a fused multiply-add).
//
// The kernels are static code that looks at the detected CPU, not the ISA
// cap, so the suite runs once.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_lowp.h"
#include "fallback/hwy_lp_dot.h"
#include "lowp/lp_dot.h"
#include "lowp_util.h"
#include "test_util.h"

namespace {

using anvil::lowp::kDotMaxM;
using anvil::lowp::lp_dot_args;
using anvil::lowp::lp_dot_fn;

constexpr int kMaxN = 8;
const int64_t kKs[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                       100, 511, 512, 513, 520, 1000, 1031, 4097};
constexpr int64_t kMaxK = 4097;
constexpr int64_t kMaxPad = 40;  // elements
constexpr uint16_t kJunk = 0x7fc1;  // a quiet NaN in bf16

float bf(uint16_t v) { return lt::bf16_to_f32(v); }

// The contract's chain for one result: per pair, the odd element's product
// then the even one's, each product and sum rounded to fp32.  The products
// are formed in double (exact: 8-bit significands) and rounded to float
// once, so no compiler can fuse them with the sums.
float chain(const float *a, const uint16_t *b, int64_t K) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k += 2) {
        const float p1 = k + 1 < K ? float(double(a[k + 1]) * double(bf(b[k + 1]))) : 0.0f;
        const float p0 = float(double(a[k]) * double(bf(b[k])));
        acc = acc + p1;
        acc = acc + p0;
    }
    return acc;
}

// One element: mostly fractions in [2^-8, 2]; sometimes a value from the
// special list (zeros, +-Inf, NaN, a denormal, huge and tiny normals).
uint16_t element(tu::rng &r, bool specials) {
    static const uint16_t kSpecial[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8003,
                                        0x7f00, 0xfe80, 0x0080, 0x0100, 0x5f80, 0x2000};
    if (specials && r.ival(0, 40) == 0) return kSpecial[r.ival(0, int(std::size(kSpecial)) - 1)];
    return lt::bf16_frac(r);
}

// A (bf16 values widened to float, as the contract takes it) and B (bf16)
// rows at the end of guarded regions (reused by every call).
struct operands {
    tu::guarded ga{size_t(kDotMaxM * (kMaxK + kMaxPad) * 4)};
    tu::guarded gb{size_t(kMaxN * (kMaxK + kMaxPad) * 2)};
    float *a = nullptr;
    uint16_t *b = nullptr;
    int64_t a_rs = 0, b_rs = 0;  // elements

    template <class T, class Widen>
    static T *place_rows(tu::rng &r, char *end, int rows, int64_t k, int64_t rs, bool specials,
                         Widen widen) {
        T *p = reinterpret_cast<T *>(end) - ((rows - 1) * rs + k);
        for (int i = 0; i < rows; ++i) {
            T *row = p + i * rs;
            for (int64_t t = 0; t < k; ++t) row[t] = widen(element(r, specials));
            if (i + 1 < rows)
                for (int64_t t = k; t < rs; ++t) row[t] = widen(kJunk);
        }
        return p;
    }
    void place(tu::rng &r, int m, int n, int64_t k, int64_t a_pad, int64_t b_pad, bool specials) {
        a_rs = k + a_pad;
        b_rs = k + b_pad;
        a = place_rows<float>(r, ga.end(), m, k, a_rs, specials, bf);
        b = place_rows<uint16_t>(r, gb.end(), n, k, b_rs, specials, [](uint16_t v) { return v; });
    }
};

bool same(float x, float y) { return tu::bits(x) == tu::bits(y) || (std::isnan(x) && std::isnan(y)); }

// Runs one call on a sentinel-filled acc block (margins before and after,
// row padding) and compares every element with the chain / the sentinel.
std::string run_one(lp_dot_fn fn, const operands &ops, int m, int n, int64_t K, int64_t c_pad,
                    tu::fault_reporter &fr) {
    constexpr int64_t kMargin = 19;
    const int64_t acc_ld = n + c_pad;
    std::vector<float> raw(size_t(m * acc_ld + 2 * kMargin), tu::sentinel());
    float *acc = raw.data() + kMargin;
    lp_dot_args args{reinterpret_cast<const uint8_t *>(ops.a), reinterpret_cast<const uint8_t *>(ops.b),
                     reinterpret_cast<int32_t *>(acc), ops.a_rs * 4, ops.b_rs * 2, acc_ld, K, m, n};
    std::ostringstream what;
    what << "m=" << m << " n=" << n << " K=" << K << " a_rs=" << ops.a_rs << " b_rs=" << ops.b_rs
         << " acc_ld=" << acc_ld;
    fr.set(what.str());
    fn(&args);
    for (size_t t = 0; t < raw.size(); ++t) {
        const int64_t e = int64_t(t) - kMargin;
        const int64_t i = e >= 0 ? e / acc_ld : -1, j = e >= 0 ? e % acc_ld : e;
        const bool inside = e >= 0 && i < m && j < n;
        const float want = inside ? chain(ops.a + i * ops.a_rs, ops.b + j * ops.b_rs, K) : tu::sentinel();
        if (!same(raw[t], want)) {
            std::ostringstream s;
            s << what.str() << ": " << (inside ? "" : "OUTSIDE the tile ") << "element (" << i << ","
              << j << "): got " << raw[t] << " want " << want;
            return s.str();
        }
    }
    return "";
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp dot bf16: Highway kernels of every compiled target, every tile and K tail, the contract's chain bitwise") {
    static const int64_t a_pads[] = {0, 1, 3, 17, 40};
    static const int64_t b_pads[] = {5, 0, 32, 2, 33};
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        CHECK(anvil::fallback::hwy_lp_dot_bf16_max_n(t.target, 0) == 0);
        CHECK(anvil::fallback::hwy_lp_dot_bf16_max_n(t.target, kDotMaxM + 1) == 0);
        tu::rng r(20261205);
        operands ops;
        tu::fault_reporter fr;
        int64_t calls = 0, failed = 0;
        for (int m = 1; m <= kDotMaxM; ++m) {
            const int max_n = anvil::fallback::hwy_lp_dot_bf16_max_n(t.target, m);
            REQUIRE(max_n >= 1);
            REQUIRE(max_n <= kMaxN);
            CHECK(!anvil::fallback::hwy_lp_dot_bf16_kernel(t.target, m, max_n + 1));
            CHECK(!anvil::fallback::hwy_lp_dot_bf16_kernel(t.target, m, 0));
            for (int n = 1; n <= max_n; ++n) {
                const lp_dot_fn fn = anvil::fallback::hwy_lp_dot_bf16_kernel(t.target, m, n);
                REQUIRE(bool(fn));
                for (int64_t K : kKs) {
                    const int v = int(calls++);
                    ops.place(r, m, n, K, a_pads[v % 5], b_pads[(v / 5 + v) % 5], v % 3 == 0);
                    const std::string diff = run_one(fn, ops, m, n, K, v % 4, fr);
                    if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
                }
            }
        }
        CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
        MESSAGE("Highway ", std::string(t.name), ": ", calls, " bf16 dot kernel calls checked");
    }
}

TEST_CASE("lp dot bf16: one rounding per product and per sum, never a fused multiply-add") {
    auto h = [](float v) { return lt::f32_to_bf16(v); };
    // K = 4, pairs (0, 1) then (2, 3), the odd element first.
    struct row_pair {
        float a[4];
        uint16_t b[4];
        float want;
    };
    const row_pair cases[] = {
        // -2^127, then a product of 2^128: Inf once rounded (a fused
        // multiply-add would give 2^127).
        {{0, 0x1p100f, 0, 0x1p100f}, {0, h(-0x1p27f), 0, h(0x1p28f)}, INFINITY},
        // 2^-149 (the least denormal, exact), then a product of 2^-150 that
        // rounds to 0 (a tie, to even) before it is added (fused: 2^-148).
        {{0, 0x1p-74f, 0, 0x1p-75f}, {0, h(0x1p-75f), 0, h(0x1p-75f)}, 0x1p-149f},
    };
    for (const row_pair &c : cases) REQUIRE(same(chain(c.a, c.b, 4), c.want));
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        const lp_dot_fn fn = anvil::fallback::hwy_lp_dot_bf16_kernel(t.target, 1, 1);
        REQUIRE(bool(fn));
        for (const row_pair &c : cases) {
            float acc = tu::sentinel();
            lp_dot_args args{reinterpret_cast<const uint8_t *>(c.a), reinterpret_cast<const uint8_t *>(c.b),
                             reinterpret_cast<int32_t *>(&acc), 16, 8, 1, 4, 1, 1};
            fn(&args);
            CHECK(same(acc, c.want));
        }
    }
}

TEST_CASE("lp dot bf16: the Highway backend reads a transposed bf16 B in place for M <= 4 and long K") {
    anvil::cpu::set_max_isa_for_test(anvil_isa_avx2);
    auto explain = [](int64_t M, int64_t K, char tb) {
        std::string buf(4096, '\0');
        size_t needed = 0;
        REQUIRE(anvil_explain_gemm(anvil_dt_bf16, anvil_dt_bf16, 'N', tb, M, 1000, K, buf.data(),
                                   buf.size(), &needed) == anvil_success);
        buf.resize(needed - 1);
        return buf;
    };
    const std::string s = explain(2, 128, 'T');
    if (s.find("backend=hwy:") == std::string::npos) {
        MESSAGE("the avx2 tier's bf16 backend is not Highway here: skipped\n", s);
    } else {
        CHECK(s.find("path=inplace_dot") != std::string::npos);
        CHECK(s.find("Highway dot kernels") != std::string::npos);
        CHECK(explain(1, 4096, 'T').find("path=inplace_dot") != std::string::npos);
        CHECK(explain(5, 4096, 'T').find("path=inplace_dot") == std::string::npos);
        CHECK(explain(2, 127, 'T').find("path=inplace_dot") == std::string::npos);
        CHECK(explain(4, 512, 'T').find("path=inplace_dot") != std::string::npos);
        CHECK(explain(3, 511, 'T').find("path=inplace_dot") == std::string::npos);
        CHECK(explain(1, 4096, 'N').find("path=inplace_dot") == std::string::npos);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

}  // TEST_SUITE
