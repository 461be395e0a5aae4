// The Highway micro-kernels against the scalar reference kernel, bitwise:
// the ukernel contract fixes the arithmetic (fma in increasing k, then the
// alpha/beta epilogue), so every compiled target must give the same bits.
// Also: memory the kernels must not touch (C guard rows/columns, B past
// column n-1, C past column n-1 of the last row) and the ISA cap's choice of
// Highway target.  Independent of the process's ISA cap: suite "once".
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hwy/targets.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"
#include "hwy_target.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

using anvil::fallback::compiled_targets;
using anvil::fallback::hwy_target_kernels;
using anvil::gemm::ukernel_args;
using anvil::gemm::ukernel_fn;

uint32_t to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
// Cells a kernel must not write hold this NaN (recognisable payload).
const uint32_t kSentinel = 0x7fa1b2c3u;

// `floats` floats whose end is the start of a PROT_NONE page: any access
// past end() faults, which is how "nothing past column n-1 is read" is
// checked (a masked load that is really a full load dies here).
class guarded_buffer {
public:
    explicit guarded_buffer(size_t floats) {
        page_ = size_t(sysconf(_SC_PAGESIZE));
        data_bytes_ = (floats * sizeof(float) + page_ - 1) / page_ * page_ + page_;
        void *p = mmap(nullptr, data_bytes_ + page_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base_ = static_cast<char *>(p);
        REQUIRE(mprotect(base_ + data_bytes_, page_, PROT_NONE) == 0);
    }
    ~guarded_buffer() { munmap(base_, data_bytes_ + page_); }
    guarded_buffer(const guarded_buffer &) = delete;
    guarded_buffer &operator=(const guarded_buffer &) = delete;
    float *end() const { return reinterpret_cast<float *>(base_ + data_bytes_); }

private:
    char *base_ = nullptr;
    size_t page_ = 0, data_bytes_ = 0;
};

// Random floats with mixed magnitudes (exponents -6..6) and full mantissas,
// so products and sums round and a non-fused or reordered step shows up.
struct rng {
    std::mt19937 g{12345};
    float value() {
        const float u = std::uniform_real_distribution<float>(-1.0f, 1.0f)(g);
        return std::ldexp(u, std::uniform_int_distribution<int>(-6, 6)(g));
    }
};

const int64_t kDepths[] = {0, 1, 2, 3, 4, 5, 7, 8, 17, 64, 255};
const float kAlphas[] = {1.0f, -0.5f, 0.7f};  // 0.7: alpha * acc really rounds
const float kBetas[] = {0.0f, 1.0f, 0.3f};

// One tile case on one kernel: runs it and the reference on identical C
// buffers ((m + 1) rows, ldc = n + 3, so one guard row and three guard
// columns) and returns an empty string or what went wrong.
struct tile_case {
    int m, n;
    int64_t K, b_ld;
    bool row_major_a;
    float alpha, beta;
};

std::string run_case(ukernel_fn fn, int mr, const tile_case &tc, const float *a_logical,
                     int64_t a_ld_logical, float *b_end, rng &r) {
    const int m = tc.m, n = tc.n;
    const int64_t K = tc.K;
    // A in the requested layout, from the logical m x K values.
    const int64_t lda = K + 2;
    std::vector<float> a(size_t(std::max<int64_t>(1, tc.row_major_a ? m * lda : mr * K)));
    for (int i = 0; i < m; ++i)
        for (int64_t k = 0; k < K; ++k) {
            const float v = a_logical[i * a_ld_logical + k];
            if (tc.row_major_a)
                a[size_t(i * lda + k)] = v;
            else
                a[size_t(i + k * mr)] = v;
        }
    // B: the last element of row K-1, column n-1, is the last float before
    // the guard page.  Columns n..b_ld-1 of earlier rows are NaN: a kernel
    // that used them would not match.
    float *b = b_end - ((K > 0 ? (K - 1) * tc.b_ld : 0) + n);
    if (K == 0) b = b_end;
    for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < tc.b_ld && k * tc.b_ld + j < (K - 1) * tc.b_ld + n; ++j)
            b[k * tc.b_ld + j] = j < n ? r.value() : std::nanf("");

    const int64_t ldc = n + 3;
    const size_t c_size = size_t((m + 1) * ldc);
    std::vector<float> c_ref(c_size), c_hwy(c_size);
    for (size_t x = 0; x < c_size; ++x) c_ref[x] = from_bits(kSentinel);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
            // beta == 0: C must not be read, so NaN there must not leak.
            c_ref[size_t(i * ldc + j)] = tc.beta == 0.0f ? std::nanf("") : r.value();
    c_hwy = c_ref;

    ukernel_args args{};
    args.a = a.data();
    args.b = b;
    args.a_rs = tc.row_major_a ? lda : 1;
    args.a_cs = tc.row_major_a ? 1 : mr;
    args.ldc = ldc;
    args.k = K;
    args.b_ld = tc.b_ld;
    args.m = m;
    args.n = n;
    args.alpha = tc.alpha;
    args.beta = tc.beta;
    args.c = c_ref.data();
    anvil::ref::sgemm_ukernel(&args);
    args.c = c_hwy.data();
    fn(&args);

    std::ostringstream why;
    for (int64_t i = 0; i <= m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t x = size_t(i * ldc + j);
            const bool inside = i < m && j < n;
            if (!inside && to_bits(c_hwy[x]) != kSentinel) {
                why << "wrote guard cell (" << i << "," << j << ")";
                return why.str();
            }
            if (inside && tc.beta == 0.0f && std::isnan(c_hwy[x])) {
                why << "NaN from C leaked with beta = 0 at (" << i << "," << j << ")";
                return why.str();
            }
            if (to_bits(c_hwy[x]) != to_bits(c_ref[x])) {
                why << "C(" << i << "," << j << ") = " << c_hwy[x] << " (0x" << std::hex
                    << to_bits(c_hwy[x]) << "), reference " << std::dec << c_ref[x] << " (0x"
                    << std::hex << to_bits(c_ref[x]) << ")";
                return why.str();
            }
        }
    return {};
}

std::string describe(const hwy_target_kernels &t, const tile_case &tc) {
    std::ostringstream s;
    s << t.name << " m=" << tc.m << " n=" << tc.n << " K=" << tc.K << " b_ld=" << tc.b_ld
      << (tc.row_major_a ? " A row-major" : " A k-strided") << " alpha=" << tc.alpha
      << " beta=" << tc.beta;
    return s.str();
}

bool is_avx512_target(int64_t t) { return (t & (HWY_AVX3 | HWY_AVX3_DL)) != 0; }

}  // namespace

TEST_SUITE("once") {

TEST_CASE("hwy ukernel: every compiled target matches the reference bit for bit") {
    const std::vector<hwy_target_kernels> targets = compiled_targets();
    REQUIRE(!targets.empty());
    // The fallback, where it is compiled, is always supported.
    if (tu::hwy_fallback_compiled())
        CHECK((targets.back().target == HWY_EMU128 || targets.back().target == HWY_SCALAR));

    for (const hwy_target_kernels &t : targets) {
        CAPTURE(std::string(t.name));
        REQUIRE((t.get != nullptr));
        REQUIRE(t.mr >= 1);
        REQUIRE(t.nr >= 2);
        CHECK(t.nr % 2 == 0);
        // Out-of-range tiles are refused.
        CHECK((t.get(0, 1) == nullptr));
        CHECK((t.get(t.mr + 1, 1) == nullptr));
        CHECK((t.get(1, 0) == nullptr));
        CHECK((t.get(1, t.nr + 1) == nullptr));

        rng r;
        const int64_t max_k = 255;
        guarded_buffer bbuf(size_t(max_k * (t.nr + 3) + 64));
        std::vector<float> a_logical(size_t(t.mr * max_k));
        int64_t cases = 0, failures = 0;
        std::string first_failure;
        for (int m = 1; m <= t.mr; ++m)
            for (int n = 1; n <= t.nr; ++n) {
                const ukernel_fn fn = t.get(m, n);
                REQUIRE((fn != nullptr));
                for (int64_t K : kDepths) {
                    for (float &v : a_logical) v = r.value();
                    // b_ld > n as for an in-place B; also b_ld == n for a few
                    // depths, where the last row ends right at the guard page.
                    std::vector<int64_t> b_lds{n + 3};
                    if (K == 1 || K == 7 || K == 17) b_lds.push_back(n);
                    for (int64_t b_ld : b_lds)
                        for (bool row_major : {false, true})
                            for (int ai = 0; ai < 3; ++ai)
                                for (int bi = 0; bi < 3; ++bi) {
                                    // Under emulation one diagonal of alpha x beta per case.
                                    if (!tu::emulated_sweeps_pair(ai, bi, 3, m + n + int(K) + row_major))
                                        continue;
                                    const float alpha = kAlphas[ai], beta = kBetas[bi];
                                    const tile_case tc{m, n, K, b_ld, row_major, alpha, beta};
                                    const std::string why =
                                        run_case(fn, t.mr, tc, a_logical.data(), max_k,
                                                 bbuf.end(), r);
                                    ++cases;
                                    if (!why.empty() && failures++ == 0)
                                        first_failure = describe(t, tc) + ": " + why;
                                }
                }
            }
        INFO("first failure: " << first_failure);
        CHECK(failures == 0);
        MESSAGE(std::string(t.name) << " (" << t.mr << "x" << t.nr << "): " << cases << " tile cases");
    }
}

TEST_CASE("hwy ukernel: C tail loads and stores stay inside the matrix") {
    // C with exactly m rows and ldc == n, ending at a guard page: a
    // full-vector load or read-modify-write of the last row's tail faults.
    for (const hwy_target_kernels &t : compiled_targets()) {
        CAPTURE(std::string(t.name));
        rng r;
        const int64_t K = 5;
        guarded_buffer cbuf(size_t(t.mr * t.nr + 64));
        guarded_buffer bbuf(size_t(K * t.nr + 64));
        std::vector<float> a(size_t(t.mr * K));
        for (float &v : a) v = r.value();
        int64_t failures = 0;
        for (int m = 1; m <= t.mr; ++m)
            for (int n = 1; n <= t.nr; ++n)
                for (float beta : kBetas) {
                    float *b = bbuf.end() - K * n;
                    for (int64_t x = 0; x < K * n; ++x) b[x] = r.value();
                    float *c = cbuf.end() - m * n;
                    for (int64_t x = 0; x < m * n; ++x) c[x] = r.value();
                    std::vector<float> expect(c, c + m * n);
                    ukernel_args args{};
                    args.a = a.data();
                    args.b = b;
                    args.a_rs = 1;
                    args.a_cs = t.mr;
                    args.ldc = n;
                    args.k = K;
                    args.b_ld = n;
                    args.m = m;
                    args.n = n;
                    args.alpha = 1.0f;
                    args.beta = beta;
                    args.c = expect.data();
                    anvil::ref::sgemm_ukernel(&args);
                    args.c = c;
                    t.get(m, n)(&args);
                    if (std::memcmp(c, expect.data(), sizeof(float) * size_t(m * n)) != 0)
                        ++failures;
                }
        CHECK(failures == 0);
    }
}

TEST_CASE("hwy backend: the ISA cap limits the Highway target") {
    const anvil_isa_t saved = anvil_get_effective_isa();
    const anvil_isa_t detected = anvil_get_detected_isa();
    const std::vector<hwy_target_kernels> targets = compiled_targets();
    REQUIRE(!targets.empty());

    // The best compiled + supported target whose bit `allowed` contains.
    auto best_allowed = [&](int64_t allowed) -> const hwy_target_kernels * {
        for (const hwy_target_kernels &t : targets)
            if (t.target & allowed) return &t;
        return nullptr;
    };

    for (anvil_isa_t cap : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        if (cap > detected) continue;
        CAPTURE(std::string(anvil_isa_name(cap)));
        anvil::cpu::set_max_isa_for_test(cap);
        const anvil::gemm::backend *b = anvil::gemm::highway_backend();
        if (cap == anvil_isa_scalar && !tu::hwy_fallback_compiled()) {
            CHECK(b == nullptr);  // the scalar kernels serve this cap
            continue;
        }
        REQUIRE(b != nullptr);
        const hwy_target_kernels *want = best_allowed(anvil::fallback::allowed_targets(cap));
        REQUIRE(want != nullptr);
        CHECK(std::string(b->name()) == std::string("hwy:") + want->name);
        CHECK(b->tier() == anvil_isa_avx2);
        CHECK(b->mr() == want->mr);
        CHECK(b->nr() == want->nr);
        if (cap < anvil_isa_avx512_core) CHECK(!is_avx512_target(want->target));
        if (cap == anvil_isa_scalar)
            CHECK((want->target == HWY_EMU128 || want->target == HWY_SCALAR));
        if (cap == anvil_isa_avx2 && (hwy::SupportedTargets() & HWY_AVX2))
            CHECK(std::string(b->name()) == "hwy:AVX2");
        if (cap == anvil_isa_avx512_core && (hwy::SupportedTargets() & HWY_AVX3))
            CHECK(is_avx512_target(want->target));

        // Kernels through the backend interface.
        anvil::gemm::ukernel_desc d{};
        d.tier = anvil_isa_avx2;
        d.m = uint8_t(b->mr());
        d.n = uint8_t(b->nr());
        anvil::gemm::ukernel_ref ref;
        REQUIRE(b->get(d, &ref) == anvil_success);
        CHECK((ref.fn == want->get(b->mr(), b->nr())));
        CHECK(ref.name != nullptr);
        CHECK(std::string(ref.name).rfind(b->name(), 0) == 0);
        d.m = uint8_t(b->mr() + 1);
        CHECK(b->get(d, &ref) != anvil_success);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
    CHECK(anvil_get_effective_isa() == saved);
}

TEST_CASE("hwy backend: target choice for other CPUs (supported-target masks)") {
    // Only targets this CPU really supports are handed in: choosing a
    // target calls into its code.
    const int64_t real = hwy::SupportedTargets();
    for (anvil_isa_t tier : {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core}) {
        CAPTURE(std::string(anvil_isa_name(tier)));
        // A CPU with nothing but the fallback.
        const anvil::gemm::backend *fb =
            anvil::fallback::highway_backend_for(real & (HWY_EMU128 | HWY_SCALAR), tier);
        if (!tu::hwy_fallback_compiled()) {
            CHECK(fb == nullptr);
        } else {
            REQUIRE(fb != nullptr);
            CHECK((std::string(fb->name()) == "hwy:EMU128" || std::string(fb->name()) == "hwy:SCALAR"));
        }
        // A CPU without AVX2 but with SSE4 (when this one has SSE4 and the
        // build compiled it: ANVIL_HWY_DISABLED_TARGETS may leave it out).
        if ((real & HWY_TARGETS & HWY_SSE4) && fb) {
            const anvil::gemm::backend *b =
                anvil::fallback::highway_backend_for(
                    real & (HWY_SSE4 | HWY_SSSE3 | HWY_EMU128 | HWY_SCALAR), tier);
            REQUIRE(b != nullptr);
            CHECK(std::string(b->name()) ==
                  (tier == anvil_isa_scalar ? std::string(fb->name()) : std::string("hwy:SSE4")));
        }
        // Everything this CPU has: AVX-512 only from the avx512_core tier.
        const anvil::gemm::backend *all = anvil::fallback::highway_backend_for(real, tier);
        if (tier == anvil_isa_scalar && !tu::hwy_fallback_compiled()) {
            CHECK(all == nullptr);  // no SIMD-free target: the scalar kernels serve
            continue;
        }
        REQUIRE(all != nullptr);
        const std::string name = all->name();
        if (tier < anvil_isa_avx512_core) CHECK(name.find("AVX3") == std::string::npos);
        if (tier == anvil_isa_avx512_core && (real & HWY_AVX3)) CHECK(name.find("AVX3") != std::string::npos);
    }
    // No target at all (not even the fallback): no backend.
    CHECK(anvil::fallback::highway_backend_for(0, anvil_isa_avx2) == nullptr);
}

TEST_CASE("hwy backend: compiled_targets follows hwy::SetSupportedTargetsForTest") {
    const int64_t real = hwy::SupportedTargets();
    // The SSE4 and fallback targets on x86; elsewhere the baseline (the
    // worst compiled target this CPU supports, NEON on aarch64).
    const int64_t baseline = compiled_targets().back().target;
    const int64_t narrowed = real & (HWY_SSE4 | HWY_EMU128 | HWY_SCALAR | baseline);
    hwy::SetSupportedTargetsForTest(narrowed);
    const std::vector<hwy_target_kernels> listed = compiled_targets();
    tu::restore_hwy_targets();  // back to the real CPU (or ANVIL_TEST_HWY_TARGET's mask)
    REQUIRE(!listed.empty());
    for (const hwy_target_kernels &t : listed) CHECK((t.target & narrowed) != 0);
    if (real & HWY_TARGETS & HWY_SSE4) CHECK(listed.front().target == HWY_SSE4);
    CHECK(hwy::SupportedTargets() == real);
}

}  // TEST_SUITE("once")
