// The int8 dot kernels (lowp/lp_dot.h, jit/jit_lp_dot_avx512): every tile
// (m in 1..4, n in 1..dot_max_n(m)) over K values around the 64-byte step
// and the 128-byte main-loop iteration must give the bits of lp_dot_scalar.
// A's last row and B's last row end exactly at a PROT_NONE guard page, so
// reading a byte past K (or a row >= m / >= n) faults; the padding between
// rows is junk that would change the result if it were read; acc is a
// sentinel-filled block of which only rows < m, columns < n may change.
//
// The Highway dot kernels (fallback/hwy_lp_dot.h) of every compiled target
// the CPU supports take the same checks, with K around their steps of 8 to
// 32 bytes.
//
// The kernels look at the detected CPU, not the ISA cap, so the suite runs
// once.
#include <doctest/doctest.h>

#include <climits>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_lowp.h"
#include "fallback/hwy_lp_dot.h"
#include "lowp/lp_dot.h"
#include "test_util.h"

namespace {

using anvil::lowp::dot_max_n;
using anvil::lowp::get_lp_dot_kernel;
using anvil::lowp::kDotMaxM;
using anvil::lowp::lp_dot_args;
using anvil::lowp::lp_dot_fn;
using anvil::lowp::make_lp_dot_desc;

constexpr int kMaxN = 8;
const int64_t kKs[] = {1, 2, 3, 4, 5, 15, 63, 64, 65, 127, 128, 129, 1000, 4096, 4097};
constexpr int64_t kMaxK = 4097;
constexpr int64_t kMaxPad = 68;

bool cpu_has_dot() {
    using namespace anvil::cpu;
    const uint32_t need = f_avx512_core | f_avx512_vnni;
    return (info().detected & need) == need;
}

struct kernel {
    lp_dot_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
};

kernel get_kernel(int m, int n) {
    kernel k;
    REQUIRE(get_lp_dot_kernel(make_lp_dot_desc(anvil_isa_avx512_core_vnni, m, n), &k.fn,
                              &k.keep_alive) == anvil_success);
    REQUIRE(bool(k.fn));
    return k;
}

// Random bytes, 8 per generator call.
void fill_bytes(tu::rng &r, uint8_t *p, int64_t count) {
    for (int64_t t = 0; t < count; t += 8) {
        const uint64_t v = r.g();
        std::memcpy(p + t, &v, size_t(std::min<int64_t>(8, count - t)));
    }
}

// A and B at the end of guarded regions (reused by every call).
struct operands {
    tu::guarded ga{size_t(kDotMaxM * (kMaxK + kMaxPad))};
    tu::guarded gb{size_t(kMaxN * (kMaxK + kMaxPad))};
    uint8_t *a = nullptr, *b = nullptr;
    int64_t a_rs = 0, b_rs = 0;

    static uint8_t *place_rows(tu::rng &r, char *end, int rows, int64_t k, int64_t rs,
                               uint8_t junk, uint8_t extreme, int salt) {
        uint8_t *p = reinterpret_cast<uint8_t *>(end) - ((rows - 1) * rs + k);
        for (int i = 0; i < rows; ++i) {
            uint8_t *row = p + i * rs;
            fill_bytes(r, row, k);
            // The range's ends occur in every row: u8 255 (A) / s8 -128 (B),
            // and the other end (0 / 127) when there is room.
            row[(i * 7 + salt) % k] = extreme;
            if (k > 1) row[(i * 7 + salt + 1) % k] = uint8_t(extreme ^ 0xff);
            if (i + 1 < rows) std::memset(row + k, junk, size_t(rs - k));
        }
        return p;
    }
    void place(tu::rng &r, int m, int n, int64_t k, int64_t a_pad, int64_t b_pad) {
        a_rs = k + a_pad;
        b_rs = k + b_pad;
        a = place_rows(r, ga.end(), m, k, a_rs, 0xa5, 0xff, 1);
        b = place_rows(r, gb.end(), n, k, b_rs, 0x5a, 0x80, 2);
    }
};

// acc with kMargin sentinel elements before and after the m x acc_ld block;
// `off` elements more in front misalign the tile.
struct acc_block {
    static constexpr int64_t kMargin = 37;
    std::vector<uint32_t> raw;
    int64_t acc_ld;
    int off;
    acc_block(int m, int64_t ld, int off_)
        : raw(size_t(m * ld + 2 * kMargin + off_), tu::kSentinelBits), acc_ld(ld), off(off_) {}
    int32_t *tile() { return reinterpret_cast<int32_t *>(raw.data() + off + kMargin); }
};

std::string first_difference(const acc_block &got, const acc_block &want, int m, int n) {
    for (size_t t = 0; t < got.raw.size(); ++t) {
        if (got.raw[t] == want.raw[t]) continue;
        const int64_t e = int64_t(t) - got.off - acc_block::kMargin;
        const int64_t row = e >= 0 ? e / got.acc_ld : -1, col = e >= 0 ? e % got.acc_ld : e;
        const bool inside = e >= 0 && row < m && col < n;
        std::ostringstream s;
        s << (inside ? "tile" : "OUTSIDE the tile") << " element (" << row << "," << col
          << "): got " << int32_t(got.raw[t]) << " want " << int32_t(want.raw[t]);
        return s.str();
    }
    return "";
}

std::string describe(const lp_dot_args &a) {
    std::ostringstream s;
    s << "m=" << a.m << " n=" << a.n << " k=" << a.k << " a_rs=" << a.a_rs << " b_rs=" << a.b_rs
      << " acc_ld=" << a.acc_ld << " a%64=" << (reinterpret_cast<uintptr_t>(a.a) % 64)
      << " b%64=" << (reinterpret_cast<uintptr_t>(a.b) % 64)
      << " acc%64=" << (reinterpret_cast<uintptr_t>(a.acc) % 64);
    return s.str();
}

// Runs the kernel and lp_dot_scalar on the same operands; "" when every
// element of the two acc blocks (margins and padding included) agrees.
std::string run_one(const kernel &k, const operands &ops, int m, int n, int64_t K,
                    int64_t c_pad, int c_off, tu::fault_reporter &fr) {
    acc_block got(m, n + c_pad, c_off), want(m, n + c_pad, c_off);
    lp_dot_args args{ops.a, ops.b, got.tile(), ops.a_rs, ops.b_rs, got.acc_ld, K, m, n};
    const std::string what = describe(args);
    fr.set(what);
    k.fn(&args);
    args.acc = want.tile();
    anvil::lowp::lp_dot_scalar(&args);
    const std::string diff = first_difference(got, want, m, n);
    return diff.empty() ? diff : what + ": " + diff;
}

// One kernel over a list of K values against lp_dot_scalar, the rows placed
// at guard pages with padding, acc strides and offsets varying per call.
struct tile_sweep {
    tu::rng r;
    operands ops;
    tu::fault_reporter fr;
    int64_t calls = 0, failed = 0;
    explicit tile_sweep(uint64_t seed) : r(seed) {}
    template <size_t kN>
    void run(const kernel &k, int m, int n, const int64_t (&ks)[kN]) {
        static const int64_t a_pads[] = {0, 1, 3, 17, 68};
        static const int64_t b_pads[] = {5, 0, 64, 2, 33};
        static const int64_t c_pads[] = {1, 0, 3, 9};
        for (int64_t K : ks) {
            const int v = int(calls++);
            ops.place(r, m, n, K, a_pads[v % 5], b_pads[(v / 5 + v) % 5]);
            const std::string diff = run_one(k, ops, m, n, K, c_pads[v % 4], v % 3, fr);
            if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
        }
    }
    void report(const std::string &what) const {
        CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
        MESSAGE(what, ": ", calls, " dot kernel calls checked");
    }
};

// A all 255, B rows all +127 or all -128: with K = 70001 every dot product
// is past the int32 range (255 * 127 * K > 2^31), upwards or downwards.
struct wrap_operands {
    static constexpr int64_t K = 70001;
    std::vector<uint8_t> a = std::vector<uint8_t>(size_t(kDotMaxM * K), 255);
    std::vector<uint8_t> b = std::vector<uint8_t>(size_t(kMaxN * K));
    wrap_operands() {
        for (int j = 0; j < kMaxN; ++j) std::memset(b.data() + j * K, j % 2 ? 0x80 : 0x7f, size_t(K));
    }
    static int64_t exact(int j) { return 255 * (j % 2 ? -128 : 127) * K; }
    static int32_t want(int j) { return int32_t(uint32_t(uint64_t(exact(j)))); }
    // Elements of an m x n call of fn that differ from want.
    int bad(lp_dot_fn fn, int m, int n) const {
        std::vector<int32_t> acc(size_t(m * n));
        lp_dot_args args{a.data(), b.data(), acc.data(), K, K, n, K, m, n};
        fn(&args);
        int count = 0;
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) count += acc[size_t(i * n + j)] != want(j);
        return count;
    }
};

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp dot: the getter checks its arguments and caches kernels") {
    using anvil::lowp::lp_dot_desc;
    lp_dot_fn fn = nullptr;
    std::shared_ptr<const void> keep;
    const uint8_t t = anvil_isa_avx512_core_vnni;
    CHECK(dot_max_n(1) == 8);
    CHECK(dot_max_n(4) == 6);
    for (int m = 1; m <= kDotMaxM; ++m) {
        // m * n accumulators, m A vectors and two B vectors fit in 32 zmm.
        CHECK(m * dot_max_n(m) + m + 2 <= 32);
        CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, m, 0), &fn, &keep) == anvil_invalid_argument);
        CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, m, dot_max_n(m) + 1), &fn, &keep) ==
              anvil_invalid_argument);
    }
    CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, 0, 1), &fn, &keep) == anvil_invalid_argument);
    CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, kDotMaxM + 1, 1), &fn, &keep) ==
          anvil_invalid_argument);
    CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, 1, 1), nullptr, &keep) == anvil_invalid_argument);
    CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, 1, 1), &fn, nullptr) == anvil_invalid_argument);
    // Tiers without AVX-512 VNNI have no dot kernel.
    for (anvil_isa_t low : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core})
        CHECK(get_lp_dot_kernel(make_lp_dot_desc(uint8_t(low), 2, 3), &fn, &keep) ==
              anvil_unsupported);

    if (!cpu_has_dot()) {
        CHECK(get_lp_dot_kernel(make_lp_dot_desc(t, 2, 3), &fn, &keep) == anvil_unsupported);
        MESSAGE("lp dot kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    // One kernel per shape: a second lookup, a higher tier and stray
    // reserved bytes all find the same code.
    const kernel k = get_kernel(2, 3);
    lp_dot_desc d = make_lp_dot_desc(anvil_isa_amx, 2, 3);
    d.reserved[2] = 0x77;
    for (const lp_dot_desc &dd : {make_lp_dot_desc(t, 2, 3), d}) {
        fn = nullptr;
        keep.reset();
        CHECK(get_lp_dot_kernel(dd, &fn, &keep) == anvil_success);
        CHECK(bool(fn == k.fn));
        CHECK(keep == k.keep_alive);
    }
    const kernel other = get_kernel(3, 2);
    CHECK(bool(other.fn != k.fn));
}

TEST_CASE("lp dot: every tile and K tail matches lp_dot_scalar bitwise") {
    if (!cpu_has_dot()) {
        MESSAGE("lp dot kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    tile_sweep sweep(20260310);
    for (int m = 1; m <= kDotMaxM; ++m)
        for (int n = 1; n <= dot_max_n(m); ++n) sweep.run(get_kernel(m, n), m, n, kKs);
    sweep.report("JIT");
}

TEST_CASE("lp dot: int32 sums wrap modulo 2^32") {
    // First the scalar definition against int64 arithmetic, then the
    // kernels against it.
    const wrap_operands w;
    for (int j = 0; j < kMaxN; ++j)
        REQUIRE((wrap_operands::exact(j) > INT32_MAX || wrap_operands::exact(j) < INT32_MIN));
    CHECK(w.bad(anvil::lowp::lp_dot_scalar, kDotMaxM, kMaxN) == 0);
    if (!cpu_has_dot()) {
        MESSAGE("lp dot kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    for (int m = 1; m <= kDotMaxM; ++m) {
        const int n = dot_max_n(m);
        const kernel k = get_kernel(m, n);
        CHECK_MESSAGE(w.bad(k.fn, m, n) == 0, "m=", m, " n=", n);
    }
}

TEST_CASE("lp dot: Highway kernels of every compiled target, every tile and K tail, bitwise") {
    const int64_t ks[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4097};
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        tile_sweep sweep(20261205);
        CHECK(anvil::fallback::hwy_lp_dot_max_n(t.target, 0) == 0);
        CHECK(anvil::fallback::hwy_lp_dot_max_n(t.target, kDotMaxM + 1) == 0);
        for (int m = 1; m <= kDotMaxM; ++m) {
            const int max_n = anvil::fallback::hwy_lp_dot_max_n(t.target, m);
            REQUIRE(max_n >= 1);
            REQUIRE(max_n <= kMaxN);
            CHECK(!anvil::fallback::hwy_lp_dot_kernel(t.target, m, max_n + 1));
            CHECK(!anvil::fallback::hwy_lp_dot_kernel(t.target, m, 0));
            for (int n = 1; n <= max_n; ++n) {
                kernel k;
                k.fn = anvil::fallback::hwy_lp_dot_kernel(t.target, m, n);
                REQUIRE(bool(k.fn));
                sweep.run(k, m, n, ks);
            }
        }
        sweep.report(std::string("Highway ") + t.name);
    }
}

TEST_CASE("lp dot: Highway kernels' int32 sums wrap modulo 2^32") {
    const wrap_operands w;
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        for (int m = 1; m <= kDotMaxM; ++m) {
            const int n = anvil::fallback::hwy_lp_dot_max_n(t.target, m);
            const lp_dot_fn fn = anvil::fallback::hwy_lp_dot_kernel(t.target, m, n);
            REQUIRE(bool(fn));
            CHECK_MESSAGE(w.bad(fn, m, n) == 0, "m=", m, " n=", n);
        }
    }
}

TEST_CASE("lp dot: the Highway backend reads a transposed B in place for M <= 4 and long K") {
    anvil::cpu::set_max_isa_for_test(anvil_isa_avx2);
    auto explain = [](int64_t M, int64_t K) {
        std::string buf(4096, '\0');
        size_t needed = 0;
        REQUIRE(anvil_explain_gemm(anvil_dt_u8, anvil_dt_s8, 'N', 'T', M, 1000, K, buf.data(),
                                   buf.size(), &needed) == anvil_success);
        buf.resize(needed - 1);
        return buf;
    };
    const std::string s = explain(2, 64);
    if (s.find("backend=hwy:") == std::string::npos) {
        MESSAGE("the avx2 tier's u8s8 backend is not Highway here: skipped\n", s);
    } else {
        CHECK(s.find("path=inplace_dot") != std::string::npos);
        CHECK(s.find("Highway dot kernels") != std::string::npos);
        CHECK(explain(1, 4096).find("path=inplace_dot") != std::string::npos);
        CHECK(explain(5, 4096).find("path=inplace_dot") == std::string::npos);
        CHECK(explain(2, 63).find("path=inplace_dot") == std::string::npos);
        CHECK(explain(4, 512).find("path=inplace_dot") != std::string::npos);
        CHECK(explain(3, 511).find("path=inplace_dot") == std::string::npos);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

}  // TEST_SUITE
