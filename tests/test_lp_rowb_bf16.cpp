// The bf16 rowb kernels (lowp/lp_rowb.h, jit/jit_lp_rowb_avx512 with
// desc.bf16): every m in 1..12 over column counts around the 16-column
// vectors and 32-column blocks, odd and even K, must give the bits of
// lp_rowb_scalar_bf16.  B's last row ends at a PROT_NONE guard page (either
// with its padding or right after B(K-1, n-1)), so a read of row K or of a
// column >= n of the last row faults; A's last row ends at one too, past
// its element K rounded up to 2 (the packed A's zero).  acc is a
// sentinel-filled block of which only rows < m, columns < n may change.
//
// The Highway kernels (fallback/hwy_lp_rowb.h, any n) of every compiled
// target the CPU supports take the same checks, with n also past 192.
//
// The kernels look at the detected CPU, not the ISA cap: the suite runs once.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_lowp.h"
#include "fallback/hwy_lp_rowb.h"
#include "lowp/lp_ref.h"
#include "lowp/lp_rowb.h"
#include "test_util.h"

namespace {

using anvil::lowp::get_lp_rowb_kernel;
using anvil::lowp::kRowbMaxMBf16;
using anvil::lowp::lp_rowb_args;
using anvil::lowp::lp_rowb_fn;
using anvil::lowp::make_lp_rowb_desc;
using anvil::lowp::rowb_max_n_bf16;

const int kNs[] = {1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 95, 96, 97, 129, 160, 191, 192};
const int64_t kKs[] = {1, 2, 3, 4, 5, 7, 63, 64, 65, 1000, 1001, 4096};
constexpr int kMaxN = 512;  // the Highway kernels take any n
constexpr int64_t kMaxK = 4096;
constexpr int64_t kMaxPad = 40;

bool cpu_has_bf16_rowb() {
    using namespace anvil::cpu;
    const uint32_t need = f_avx512_core | f_avx512_bf16;
    return (info().detected & need) == need;
}

struct kernel {
    lp_rowb_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
};

kernel get_kernel(int m, int n) {
    kernel k;
    REQUIRE(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_bf16, m, n, true), &k.fn,
                               &k.keep_alive) == anvil_success);
    REQUIRE(bool(k.fn));
    return k;
}

// A bf16 of magnitude 2^-20 .. 2^20 with a random sign and mantissa: no
// denormal appears in any product or sum (vdpbf16ps would flush it; the
// contract leaves them out), but the two roundings per pair matter.
uint16_t rand_bf16(tu::rng &r) {
    const uint32_t sign = uint32_t(r.ival(0, 1)) << 15;
    const uint32_t exp = uint32_t(127 + r.ival(-20, 20)) << 7;
    return uint16_t(sign | exp | uint32_t(r.ival(0, 127)));
}

struct operands {
    tu::guarded ga{size_t(kRowbMaxMBf16 * (kMaxK + 2 + 64) * 2 + 128)};
    tu::guarded gb{size_t((kMaxK + 1) * (kMaxN + kMaxPad) * 2)};
    uint8_t *a = nullptr, *b = nullptr;
    int64_t a_rs = 0, b_rs = 0;

    // A as the driver packs it: rows of K rounded up to 2 elements (the
    // extra one 0), a_rs a multiple of 64 bytes.
    void place_a(tu::rng &r, int m, int64_t k, int64_t extra_lines) {
        const int64_t kp = (k + 1) / 2 * 2;
        a_rs = (kp * 2 + 63) / 64 * 64 + 64 * extra_lines;
        a = reinterpret_cast<uint8_t *>(ga.end()) - ((m - 1) * a_rs + kp * 2);
        for (int i = 0; i < m; ++i) {
            auto *row = reinterpret_cast<uint16_t *>(a + i * a_rs);
            for (int64_t kk = 0; kk < k; ++kk) row[kk] = rand_bf16(r);
            if (kp > k) row[k] = 0;
            if (i + 1 < m) std::memset(a + i * a_rs + kp * 2, 0xa5, size_t(a_rs - kp * 2));
        }
    }
    // B: K rows of n bf16, b_rs = 2 * (n + pad) bytes; NaN in the padding.
    void place_b(tu::rng &r, int n, int64_t k, int64_t pad, bool tight) {
        b_rs = 2 * (n + pad);
        b = reinterpret_cast<uint8_t *>(gb.end()) - ((k - 1) * b_rs + (tight ? 2 * n : b_rs));
        for (int64_t kk = 0; kk < k; ++kk) {
            auto *row = reinterpret_cast<uint16_t *>(b + kk * b_rs);
            for (int j = 0; j < n; ++j) row[j] = rand_bf16(r);
            if (kk + 1 < k || !tight)
                for (int64_t j = n; j < n + pad; ++j) row[j] = 0x7fc1;
        }
    }
};

std::string run_one(const kernel &k, const operands &ops, int m, int n, int64_t K, int64_t c_pad,
                    tu::fault_reporter &fr) {
    constexpr int64_t kMargin = 19;
    const int64_t ld = n + c_pad;
    std::vector<uint32_t> got(size_t(m * ld + 2 * kMargin), tu::kSentinelBits), want = got;
    lp_rowb_args args{ops.a, ops.b, reinterpret_cast<int32_t *>(got.data() + kMargin), ops.a_rs,
                      ops.b_rs, ld, K, m, n};
    std::ostringstream what;
    what << "m=" << m << " n=" << n << " k=" << K << " a_rs=" << ops.a_rs << " b_rs=" << ops.b_rs
         << " ld=" << ld;
    fr.set(what.str());
    k.fn(&args);
    args.acc = reinterpret_cast<int32_t *>(want.data() + kMargin);
    anvil::lowp::lp_rowb_scalar_bf16(&args);
    for (size_t t = 0; t < got.size(); ++t) {
        if (got[t] == want[t]) continue;
        const int64_t e = int64_t(t) - kMargin;
        std::ostringstream s;
        s << what.str() << ": element " << e << " (row " << (e >= 0 ? e / ld : -1) << ", col "
          << (e >= 0 ? e % ld : e) << "): got 0x" << std::hex << got[t] << " want 0x" << want[t];
        return s.str();
    }
    return "";
}

}  // namespace

TEST_SUITE("once") {

TEST_CASE("lp rowb bf16: register budget, tier checks and a separate kernel per type") {
    for (int m = 1; m <= kRowbMaxMBf16; ++m) {
        // 2 accumulators per row and 32-column block, 4 B registers, m A
        // broadcasts (4 above 4 rows); n in the descriptor's byte.
        CHECK(m * 2 * (rowb_max_n_bf16(m) / 32) + 4 + (m > 4 ? 4 : m) <= 32);
        CHECK(rowb_max_n_bf16(m) <= 255);
    }
    lp_rowb_fn fn = nullptr;
    std::shared_ptr<const void> keep;
    // VNNI without BF16 is not enough for the bf16 kernels.
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_vnni, 2, 33, true), &fn, &keep) ==
          anvil_unsupported);
    CHECK(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_bf16, 2, rowb_max_n_bf16(2) + 1, true),
                             &fn, &keep) == anvil_invalid_argument);
    if (!cpu_has_bf16_rowb()) {
        MESSAGE("bf16 rowb kernels skipped: the CPU lacks AVX512-BF16");
        return;
    }
    const kernel k = get_kernel(2, 33);
    lp_rowb_fn int8_fn = nullptr;
    REQUIRE(get_lp_rowb_kernel(make_lp_rowb_desc(anvil_isa_avx512_core_bf16, 2, 33, false), &int8_fn,
                               &keep) == anvil_success);
    CHECK(bool(int8_fn != k.fn));
}

TEST_CASE("lp rowb bf16: every m, column tail and K parity matches lp_rowb_scalar_bf16 bitwise") {
    if (!cpu_has_bf16_rowb()) {
        MESSAGE("bf16 rowb kernels skipped: the CPU lacks AVX512-BF16");
        return;
    }
    tu::rng r(20261203);
    operands ops;
    tu::fault_reporter fr;
    const int64_t b_pads[] = {0, 1, 3, 17, 32, 5, 2};
    const int64_t c_pads[] = {1, 0, 3, 9};
    int64_t calls = 0, failed = 0;
    for (int m = 1; m <= kRowbMaxMBf16; ++m)
        for (int n : kNs) {
            if (n > rowb_max_n_bf16(m)) continue;
            const kernel k = get_kernel(m, n);
            for (int64_t K : kKs) {
                const int v = int(calls++);
                ops.place_a(r, m, K, v % 3);
                ops.place_b(r, n, K, b_pads[(v / 2 + v) % 7], v % 2 == 0);
                const std::string diff = run_one(k, ops, m, n, K, c_pads[v % 4], fr);
                if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
            }
        }
    CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
    MESSAGE(calls, " bf16 rowb kernel calls checked");
}

TEST_CASE("lp rowb bf16: Highway kernels of every compiled target match lp_rowb_scalar_bf16 bitwise") {
    const int wide_ns[] = {255, 256, 257, 511, 512, 700, 1100};  // past 512: several strips
    const int64_t wide_ks[] = {1, 2, 3, 64, 65};
    for (const auto &t : anvil::fallback::compiled_lp_targets()) {
        CAPTURE(std::string(t.name));
        CHECK(!anvil::fallback::hwy_lp_rowb_bf16_kernel(t.target, 0));
        CHECK(!anvil::fallback::hwy_lp_rowb_bf16_kernel(t.target, anvil::lowp::kRowbMaxM + 1));
        tu::rng r(20261205);
        operands ops;
        tu::fault_reporter fr;
        const int64_t b_pads[] = {0, 1, 3, 17, 32, 5, 2};
        const int64_t c_pads[] = {1, 0, 3, 9};
        int64_t calls = 0, failed = 0;
        auto check = [&](const kernel &k, int m, int n, int64_t K) {
            const int v = int(calls++);
            ops.place_a(r, m, K, v % 3);
            ops.place_b(r, n, K, b_pads[(v / 2 + v) % 7], v % 2 == 0);
            const std::string diff = run_one(k, ops, m, n, K, c_pads[v % 4], fr);
            if (!diff.empty() && ++failed <= 10) FAIL_CHECK(diff);
        };
        for (int m = 1; m <= anvil::lowp::kRowbMaxM; ++m) {
            kernel k;
            k.fn = anvil::fallback::hwy_lp_rowb_bf16_kernel(t.target, m);
            REQUIRE(bool(k.fn));
            for (int n : kNs)
                for (int64_t K : kKs)
                    // Under emulation (qemu, ~50x slower) the long K values
                    // only with n <= 33: each target's 4 x 192 x 4096 calls
                    // would take most of a minute there.
                    if (!tu::emulated() || K < 1000 || n <= 33) check(k, m, n, K);
            for (int n : wide_ns)
                for (int64_t K : wide_ks) check(k, m, n, K);
        }
        CHECK_MESSAGE(failed == 0, failed, " of ", calls, " calls differ (the first 10 shown)");
        MESSAGE("Highway ", std::string(t.name), ": ", calls, " bf16 rowb kernel calls checked");
    }
}

TEST_CASE("lp rowb bf16: the Highway backend reads a row-major bf16 B in place for M <= 4 and K x N >= 4096") {
    anvil::cpu::set_max_isa_for_test(anvil_isa_avx2);
    auto explain = [](int64_t M, char tb, int64_t N = 1000, int64_t K = 300) {
        std::string buf(4096, '\0');
        size_t needed = 0;
        REQUIRE(anvil_explain_gemm(anvil_dt_bf16, anvil_dt_bf16, 'N', tb, M, N, K, buf.data(),
                                   buf.size(), &needed) == anvil_success);
        buf.resize(needed - 1);
        return buf;
    };
    const std::string s = explain(1, 'N');
    if (s.find("backend=hwy:") == std::string::npos) {
        MESSAGE("the avx2 tier's bf16 backend is not Highway here: skipped\n", s);
    } else {
        CHECK(s.find("path=inplace_rowb") != std::string::npos);
        CHECK(s.find("Highway row-B kernels") != std::string::npos);
        CHECK(explain(4, 'N').find("path=inplace_rowb") != std::string::npos);
        CHECK(explain(5, 'N').find("path=inplace") == std::string::npos);
        CHECK(explain(4, 'N', 4, 1024).find("path=inplace_rowb") != std::string::npos);
        CHECK(explain(4, 'N', 4, 1023).find("path=inplace_rowb") == std::string::npos);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

}  // TEST_SUITE
