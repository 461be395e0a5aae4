// The int8 rowb kernels (lowp/lp_rowb.h, jit/jit_lp_rowb_avx512): every m in
// 1..4 over column counts around the 16-column vectors and 64-column blocks
// and K values around the 4-row group must give the bits of lp_rowb_scalar.
// A's last row and B's last row end at a PROT_NONE guard page: either B's
// last row with its padding (a read of row K faults) or B(K-1, n-1) itself
// (a read of any column >= n of the last row faults too).  The padding
// between B rows and A's bytes past K are junk that would change the result
// if it were used; acc is a sentinel-filled block of which only rows < m,
// columns < n may change.
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
#include "fallback/hwy_lp_rowb.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_rowb.h"
#include "test_util.h"

namespace {

using anvil::lowp::get_lp_rowb_kernel;
using anvil::lowp::kRowbMaxM;
using anvil::lowp::lp_rowb_args;
using anvil::lowp::lp_rowb_fn;
using anvil::lowp::make_lp_rowb_desc;
using anvil::lowp::rowb_max_n;

const int kNs[] = {1, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100, 127, 128, 129, 191, 192};
const int64_t kKs[] = {1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000, 1001, 1002, 1003, 4096};
constexpr int kMaxN = 512;  // the Highway kernels take any n
constexpr int64_t kMaxK = 4096;
constexpr int64_t kMaxPad = 64;

bool cpu_has_rowb() {
    using namespace anvil::cpu;
    const uint32_t need = f_avx512_core | f_avx512_vnni;
    return (info().detected & need) == need;
}

struct kernel {
    lp_rowb_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
};

kernel get_kernel(int m, int n, bool add = false) {
    kernel k;
    REQUIRE(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_vnni, m, n, false, add), &k.fn,
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

int64_t round_up4(int64_t k) { return (k + 3) / 4 * 4; }

// A and B at the end of guarded regions (reused by every call).
struct operands {
    tu::guarded ga{size_t(kRowbMaxM * (round_up4(kMaxK) + 64 + 64))};
    tu::guarded gb{size_t((kMaxK + 1) * (kMaxN + kMaxPad))};
    uint8_t *a = nullptr, *b = nullptr;
    int64_t a_rs = 0, b_rs = 0;

    // A as the driver packs it: rows of roundup(K, 4) bytes, a_rs a
    // multiple of 64; the last row ends at the guard.  The bytes past K
    // (up to 3) are junk: the kernel reads them but multiplies them by
    // zero.  Every row has 255 and 0 somewhere.
    void place_a(tu::rng &r, int m, int64_t k, int64_t extra_lines) {
        const int64_t kp = round_up4(k);
        a_rs = (kp + 63) / 64 * 64 + 64 * extra_lines;
        a = reinterpret_cast<uint8_t *>(ga.end()) - ((m - 1) * a_rs + kp);
        for (int i = 0; i < m; ++i) {
            uint8_t *row = a + i * a_rs;
            fill_bytes(r, row, kp);
            row[(i * 7 + 1) % k] = 0xff;
            if (k > 1) row[(i * 7 + 2) % k] = 0;
            if (i + 1 < m) std::memset(row + kp, 0xa5, size_t(a_rs - kp));
        }
    }
    // B: K rows of n bytes, b_rs = n + pad.  tight: B(K-1, n-1) is the last
    // byte before the guard; else the last row's padding is too.  Junk in
    // the padding; -128 and 127 in every row (when n allows).
    void place_b(tu::rng &r, int n, int64_t k, int64_t pad, bool tight) {
        b_rs = n + pad;
        b = reinterpret_cast<uint8_t *>(gb.end()) - ((k - 1) * b_rs + (tight ? n : b_rs));
        for (int64_t kk = 0; kk < k; ++kk) {
            uint8_t *row = b + kk * b_rs;
            fill_bytes(r, row, n);
            row[(kk * 5 + 3) % n] = 0x80;
            if (n > 1) row[(kk * 5 + 4) % n] = 0x7f;
            if (kk + 1 < k || !tight) std::memset(row + n, 0x5a, size_t(pad));
        }
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

std::string describe(const lp_rowb_args &a) {
    std::ostringstream s;
    s << "m=" << a.m << " n=" << a.n << " k=" << a.k << " a_rs=" << a.a_rs << " b_rs=" << a.b_rs
      << " acc_ld=" << a.acc_ld << " b%64=" << (reinterpret_cast<uintptr_t>(a.b) % 64)
      << " acc%64=" << (reinterpret_cast<uintptr_t>(a.acc) % 64);
    return s.str();
}

// Runs the kernel and lp_rowb_scalar on the same operands; "" when every
// element of the two acc blocks (margins and padding included) agrees.
// With `adding` (an adding kernel), the tile starts with random values,
// the same in both blocks, and the scalar result is added to them
// (wrapping, as the kernels' vpaddd).
std::string run_one(const kernel &k, const operands &ops, int m, int n, int64_t K,
                    int64_t c_pad, int c_off, tu::fault_reporter &fr, tu::rng *adding = nullptr) {
    acc_block got(m, n + c_pad, c_off), want(m, n + c_pad, c_off);
    std::vector<uint32_t> start;
    if (adding)
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
                const uint32_t v = uint32_t(adding->g());
                start.push_back(v);
                reinterpret_cast<uint32_t *>(got.tile())[i * got.acc_ld + j] = v;
            }
    lp_rowb_args args{ops.a, ops.b, got.tile(), ops.a_rs, ops.b_rs, got.acc_ld, K, m, n};
    const std::string what = describe(args) + (adding ? " (adding)" : "");
    fr.set(what);
    k.fn(&args);
    args.acc = want.tile();
    anvil::lowp::lp_rowb_scalar(&args);
    if (adding)
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
                uint32_t &w = reinterpret_cast<uint32_t *>(want.tile())[i * want.acc_ld + j];
                w += start[size_t(i * n + j)];
            }
    const std::string diff = first_difference(got, want, m, n);
    return diff.empty() ? diff : what + ": " + diff;
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp rowb: the getter checks its arguments and caches kernels") {
    using anvil::lowp::lp_rowb_desc;
    lp_rowb_fn fn = nullptr;
    std::shared_ptr<const void> keep;
    const uint8_t t = anvil_isa_avx512_core_vnni;
    CHECK(rowb_max_n(1) == 192);
    CHECK(rowb_max_n(4) == 64);
    CHECK(rowb_max_n(0) == 0);
    CHECK(rowb_max_n(kRowbMaxM + 1) == 0);
    for (int m = 1; m <= kRowbMaxM; ++m) {
        // Accumulators, 5 B registers and m A broadcasts fit in 32 zmm; n
        // fits the descriptor's byte.
        CHECK(m * 4 * (rowb_max_n(m) / 64) + 5 + m <= 32);
        CHECK(rowb_max_n(m) <= 255);
        CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, m, 0), &fn, &keep) ==
              anvil_invalid_argument);
        CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, m, rowb_max_n(m) + 1), &fn, &keep) ==
              anvil_invalid_argument);
    }
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, 0, 1), &fn, &keep) == anvil_invalid_argument);
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, kRowbMaxM + 1, 1), &fn, &keep) ==
          anvil_invalid_argument);
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, 1, 1), nullptr, &keep) ==
          anvil_invalid_argument);
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, 1, 1), &fn, nullptr) == anvil_invalid_argument);
    // Tiers without AVX-512 VNNI have no rowb kernel.
    for (anvil_isa_t low : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core})
        CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(uint8_t(low), 2, 33), &fn, &keep) ==
              anvil_unsupported);

    if (!cpu_has_rowb()) {
        CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(t, 2, 33), &fn, &keep) == anvil_unsupported);
        MESSAGE("lp rowb kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    // One kernel per shape: a second lookup, a higher tier and stray
    // reserved bytes all find the same code.
    const kernel k = get_kernel(2, 33);
    lp_rowb_desc d = make_lp_rowb_desc(anvil_isa_amx, 2, 33);
    d.reserved[2] = 0x77;
    for (const lp_rowb_desc &dd : {make_lp_rowb_desc(t, 2, 33), d}) {
        fn = nullptr;
        keep.reset();
        CHECK(get_lp_rowb_kernel(dd, &fn, &keep) == anvil_success);
        CHECK(bool(fn == k.fn));
        CHECK(keep == k.keep_alive);
    }
    const kernel other = get_kernel(3, 33);
    CHECK(bool(other.fn != k.fn));
    // The adding kernels are other code; bf16 has none.
    const kernel adding = get_kernel(2, 33, true);
    CHECK(bool(adding.fn != k.fn));
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_bf16, 2, 32, true, true), &fn,
                             &keep) == anvil_invalid_argument);
}

// Every m, every n of kNs the kernel takes and every K of kKs, with
// b_rs = n + pad (mostly not a multiple of 64; with the guard-page
// placement the base b takes many alignments); `adding`: the kernels that
// add to acc, started from random tiles.
static void sweep_kernels(bool adding) {
    tu::rng r(adding ? 20261205 : 20260311), start(7);
    operands ops;
    tu::fault_reporter fr;
    const int64_t b_pads[] = {0, 1, 3, 17, 64, 5, 2};
    const int64_t c_pads[] = {1, 0, 3, 9};
    int64_t calls = 0, failed = 0;
    for (int m = 1; m <= kRowbMaxM; ++m)
        for (int n : kNs) {
            if (n > rowb_max_n(m)) continue;
            const kernel k = get_kernel(m, n, adding);
            for (int64_t K : kKs) {
                const int v = int(calls++);
                ops.place_a(r, m, K, v % 3);
                ops.place_b(r, n, K, b_pads[(v / 2 + v) % 7], v % 2 == 0);
                const std::string diff =
                    run_one(k, ops, m, n, K, c_pads[v % 4], v % 3, fr, adding ? &start : nullptr);
                if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
            }
        }
    CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
    MESSAGE(calls, std::string(adding ? " adding" : ""), " rowb kernel calls checked");
}

TEST_CASE("lp rowb: every m, column tail and K tail matches lp_rowb_scalar bitwise") {
    if (!cpu_has_rowb()) {
        MESSAGE("lp rowb kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    sweep_kernels(false);
}

TEST_CASE("lp rowb: the adding kernels add every m, column tail and K tail to acc bitwise") {
    // The in-place driver walks K in blocks, the later ones through these
    // kernels (lp_inplace.cpp): the tile must be acc + the block's sums,
    // nothing outside it written.
    if (!cpu_has_rowb()) {
        MESSAGE("lp rowb kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    sweep_kernels(true);
}

TEST_CASE("lp rowb: int32 sums wrap modulo 2^32") {
    // A all 255, B columns all +127 or all -128 (alternating): with K =
    // 70001 every sum is past the int32 range (255 * 127 * K > 2^31),
    // upwards or downwards.  First the scalar definition against int64
    // arithmetic, then the kernels against it.
    const int64_t K = 70001, Kp = round_up4(K);
    const int m = kRowbMaxM;
    constexpr int kWrapN = 192;  // the JIT kernels' widest
    std::vector<uint8_t> a(size_t(m * Kp), 255), b(size_t(K * kWrapN));
    for (int64_t k = 0; k < K; ++k)
        for (int j = 0; j < kWrapN; ++j) b[size_t(k * kWrapN + j)] = j % 2 ? 0x80 : 0x7f;
    auto want = [&](int j) {
        const int64_t exact = 255 * (j % 2 ? -128 : 127) * K;
        REQUIRE((exact > INT32_MAX || exact < INT32_MIN));
        return int32_t(uint32_t(uint64_t(exact)));
    };
    std::vector<int32_t> acc(size_t(m * kWrapN));
    lp_rowb_args args{a.data(), b.data(), acc.data(), Kp, kWrapN, kWrapN, K, m, kWrapN};
    anvil::lowp::lp_rowb_scalar(&args);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < kWrapN; ++j) CHECK(acc[size_t(i * kWrapN + j)] == want(j));

    if (!cpu_has_rowb()) {
        MESSAGE("lp rowb kernels skipped: the CPU lacks AVX-512 VNNI");
        return;
    }
    for (int mm = 1; mm <= kRowbMaxM; ++mm) {
        const int n = rowb_max_n(mm);
        const kernel k = get_kernel(mm, n);
        std::fill(acc.begin(), acc.end(), 0);
        lp_rowb_args ka{a.data(), b.data(), acc.data(), Kp, kWrapN, n, K, mm, n};
        k.fn(&ka);
        int bad = 0;
        for (int i = 0; i < mm; ++i)
            for (int j = 0; j < n; ++j) bad += acc[size_t(i * n + j)] != want(j);
        CHECK_MESSAGE(bad == 0, "m=", mm, " n=", n);
    }
}

TEST_CASE("lp rowb: Highway u8s8 kernels of every compiled target match lp_rowb_scalar bitwise") {
    const int wide_ns[] = {255, 256, 257, 511, 512, 700, 1100};  // past 512: several strips
    const int64_t wide_ks[] = {1, 3, 4, 65};
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        CHECK(!anvil::fallback::hwy_lp_rowb_u8s8_kernel(t.target, 0));
        CHECK(!anvil::fallback::hwy_lp_rowb_u8s8_kernel(t.target, kRowbMaxM + 1));
        tu::rng r(20261205);
        operands ops;
        tu::fault_reporter fr;
        const int64_t b_pads[] = {0, 1, 3, 17, 64, 5, 2};
        const int64_t c_pads[] = {1, 0, 3, 9};
        int64_t calls = 0, failed = 0;
        auto check = [&](const kernel &k, int m, int n, int64_t K) {
            const int v = int(calls++);
            ops.place_a(r, m, K, v % 3);
            ops.place_b(r, n, K, b_pads[(v / 2 + v) % 7], v % 2 == 0);
            const std::string diff = run_one(k, ops, m, n, K, c_pads[v % 4], v % 3, fr);
            if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
        };
        for (int m = 1; m <= kRowbMaxM; ++m) {
            kernel k;
            k.fn = anvil::fallback::hwy_lp_rowb_u8s8_kernel(t.target, m);
            REQUIRE(bool(k.fn));
            for (int n : kNs)
                for (int64_t K : kKs)
                    // Under emulation (qemu) the long K values only with
                    // n <= 33 (the scalar reference dominates there).
                    if (!tu::emulated() || K < 1000 || n <= 33) check(k, m, n, K);
            for (int n : wide_ns)
                for (int64_t K : wide_ks) check(k, m, n, K);
        }
        CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
        MESSAGE("Highway ", std::string(t.name), ": ", calls, " u8s8 rowb kernel calls checked");
    }
}

TEST_CASE("lp rowb: Highway u8s8 kernels' int32 sums wrap modulo 2^32") {
    const int64_t K = 70001, Kp = round_up4(K);
    const int m = kRowbMaxM, n = 40;  // two 16-column vectors and a tail on AVX2
    std::vector<uint8_t> a(size_t(m * Kp), 255), b(size_t(K * n));
    for (int64_t k = 0; k < K; ++k)
        for (int j = 0; j < n; ++j) b[size_t(k * n + j)] = j % 2 ? 0x80 : 0x7f;
    const int32_t want[2] = {int32_t(uint32_t(uint64_t(255 * 127 * K))),
                             int32_t(uint32_t(uint64_t(int64_t(255) * -128 * K)))};
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        for (int mm = 1; mm <= m; ++mm) {
            std::vector<int32_t> acc(size_t(mm * n), 0);
            lp_rowb_args ka{a.data(), b.data(), acc.data(), Kp, n, n, K, mm, n};
            anvil::fallback::hwy_lp_rowb_u8s8_kernel(t.target, mm)(&ka);
            int bad = 0;
            for (int i = 0; i < mm; ++i)
                for (int j = 0; j < n; ++j) bad += acc[size_t(i * n + j)] != want[j % 2];
            CHECK_MESSAGE(bad == 0, "m=", mm);
        }
    }
}

TEST_CASE("lp rowb: the Highway backend reads a row-major int8 B in place for few rows") {
    anvil::cpu::set_max_isa_for_test(anvil_isa_avx2);
    auto explain = [](int64_t M, int64_t N, int64_t K) {
        std::string buf(4096, '\0');
        size_t needed = 0;
        REQUIRE(anvil_explain_gemm(anvil_dt_u8, anvil_dt_s8, 'N', 'N', M, N, K, buf.data(), buf.size(),
                                   &needed) == anvil_success);
        buf.resize(needed - 1);
        return buf;
    };
    auto in_place = [&](int64_t M, int64_t N, int64_t K) {
        return explain(M, N, K).find("path=inplace_rowb") != std::string::npos;
    };
    const std::string s = explain(1, 4096, 1024);
    if (s.find("backend=hwy:") == std::string::npos) {
        MESSAGE("the avx2 tier's u8s8 backend is not Highway here: skipped\n", s);
    } else {
        CHECK(s.find("Highway row-B kernels") != std::string::npos);
        CHECK(in_place(1, 4096, 1024));
        CHECK(!in_place(4, 4096, 1024));
        if (anvil::lowp::select_lp_backend(anvil::lowp::lp_kind::u8s8).rowb_lean(anvil::lowp::lp_kind::u8s8)) {
            // Pairwise int16 products (x86): up to 3 rows from K x N = 4096.
            CHECK(in_place(3, 64, 64));
            CHECK(!in_place(3, 64, 63));
        } else {
            // Every product widened (Arm): M = 1 from K x N = 2^22.
            CHECK(!in_place(2, 4096, 1024));
            CHECK(!in_place(1, 4096, 1023));
        }
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

}  // TEST_SUITE
