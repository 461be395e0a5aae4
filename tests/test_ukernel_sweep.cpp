// Micro-kernel sweep through the backend interface: for the backend the
// current cap selects, every tile (m in 1..mr, n in 1..max_n(m), which
// includes 1..nr), K in {0, 1, 2, 3, 4, 5, 8, 9, 31, 64, 257}, both A
// addressings, every beta kind and alpha in {1, -0.5} must give the same
// bits as ref::sgemm_ukernel: the ukernel contract fixes the arithmetic
// (one fma chain per element in increasing k, then alpha, then the beta
// epilogue), so there is no tolerance.  Memory outside the C tile must be
// untouched, and B / A / C are never read past their last element (checked
// with PROT_NONE guard pages).
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

using anvil::gemm::a_access;
using anvil::gemm::backend;
using anvil::gemm::beta_kind;
using anvil::gemm::ukernel_args;
using anvil::gemm::ukernel_desc;
using anvil::gemm::ukernel_ref;

const int64_t kKs[] = {0, 1, 2, 3, 4, 5, 8, 9, 31, 64, 257};
const float kBetas[] = {0.0f, 1.0f, 0.3f};
const float kAlphas[] = {1.0f, -0.5f};

int widest(const backend &be, int m) { return std::max(be.nr(), be.max_n(m)); }

ukernel_desc make_desc(const backend &be, int m, int n, a_access a, float alpha, float beta) {
    ukernel_desc d{};
    d.tier = uint8_t(be.tier());
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    d.flags = 0;
    d.a = a;
    d.beta = anvil::gemm::classify_beta(beta);
    d.alpha_one = alpha == 1.0f ? 1 : 0;
    d.epi_ops = 0;
    return d;
}

std::string describe(int m, int n, int64_t K, a_access a, float alpha, float beta,
                     const ukernel_args &args) {
    std::ostringstream s;
    s << "m=" << m << " n=" << n << " K=" << K
      << " a=" << (a == a_access::row_major ? "row_major" : "k_strided") << " a_rs=" << args.a_rs
      << " a_cs=" << args.a_cs << " b_ld=" << args.b_ld << " ldc=" << args.ldc
      << " alpha=" << alpha << " beta=" << beta;
    return s.str();
}

// Collects failure descriptions; reports the count and the first few.
using tu::failures;

// A operand for (m, K, addressing): NaN in every element outside the tile.
struct a_operand {
    tu::fbuf buf;
    int64_t a_rs = 0, a_cs = 0;
};

a_operand make_a(int m, int64_t K, a_access acc, int variant, tu::rng &r) {
    a_operand a;
    if (acc == a_access::row_major) {
        a.a_cs = 1;
        a.a_rs = std::max<int64_t>(K, 1) + (variant ? 3 : 0);
    } else {
        a.a_rs = 1;
        a.a_cs = m + (variant ? 5 : 0);
    }
    const int64_t extent = std::max<int64_t>(1, (m - 1) * a.a_rs + (K > 0 ? (K - 1) * a.a_cs : 0) + 1);
    a.buf.reset(size_t(extent) + 8, size_t(variant), tu::qnan());
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < K; ++k) a.buf[size_t(i * a.a_rs + k * a.a_cs)] = r.frac();
    return a;
}

// The args of one call: A, B (row stride b_ld), K, C's stride, m x n,
// alpha and beta (c is set by run_and_compare).
ukernel_args make_args(const a_operand &A, const float *B, int64_t b_ld, int64_t K, int64_t ldc,
                       int m, int n, float alpha, float beta) {
    ukernel_args args{};
    args.a = A.buf.data();
    args.a_rs = A.a_rs;
    args.a_cs = A.a_cs;
    args.b = B;
    args.b_ld = b_ld;
    args.k = K;
    args.ldc = ldc;
    args.m = m;
    args.n = n;
    args.alpha = alpha;
    args.beta = beta;
    return args;
}

// Runs kernel kr on args over a C whose initial values are C0 (with beta
// == 0 the kernel's C starts as NaN / Inf instead: it must not be read) and
// records where it differs from ref::sgemm_ukernel in any bit, or wrote
// outside C.
void run_and_compare(const ukernel_ref &kr, ukernel_args args, const tu::cmat &C0,
                     const std::string &what, failures *bad_bits, failures *bad_sentinel) {
    const int64_t m = args.m, n = args.n;
    tu::cmat Cg(m, n, args.ldc, (m + n) % 7), Cr(m, n, args.ldc, 0);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            Cg.at(i, j) = args.beta == 0.0f ? ((i + j) % 2 ? tu::qnan() : tu::inf()) : C0.at(i, j);
            Cr.at(i, j) = C0.at(i, j);
        }
    args.c = Cg.c();
    kr.fn(&args);
    ukernel_args ra = args;
    ra.c = Cr.c();
    anvil::ref::sgemm_ukernel(&ra);
    std::string f;
    if (tu::count_bit_mismatches(Cg, Cr, &f)) bad_bits->add(what + " [" + kr.name + "]: " + f);
    std::string w;
    if (Cg.sentinel_damage(&w)) bad_sentinel->add(what + " [" + kr.name + "]: " + w);
}

}  // namespace

namespace {

// Every tile of one backend (up to its widest, max_n) against the reference.
void sweep_backend(const backend &be) {
    const int mr = be.mr(), nr = be.nr();
    int max_all = 0;
    for (int m = 1; m <= mr; ++m) max_all = std::max(max_all, widest(be, m));
    MESSAGE("ukernel sweep: backend ", std::string(be.name()), " (tier ",
            std::string(anvil_isa_name(be.tier())), "), mr=", mr, " nr=", nr,
            " widest tile=", max_all);
    REQUIRE(mr >= 1);
    REQUIRE(nr >= 1);

    failures bad_bits, bad_sentinel, bad_status;
    int64_t calls = 0;
    tu::rng r(20260101);
    constexpr size_t nK = sizeof(kKs) / sizeof(kKs[0]);
    // Loop order: each kernel is fetched once and then run for every K, so
    // the sweep does not churn through the (bounded) kernel cache.
    for (int m = 1; m <= mr; ++m) {
        std::vector<a_operand> A[2];  // [addressing][K index]
        for (size_t ki = 0; ki < nK; ++ki) {
            const int variant = int((kKs[ki] + m) % 2);
            A[0].push_back(make_a(m, kKs[ki], a_access::k_strided, variant, r));
            A[1].push_back(make_a(m, kKs[ki], a_access::row_major, variant, r));
        }
        for (int n = 1; n <= widest(be, m); ++n) {
            // Under emulation a subset of the widths (tu::emulated_sweeps_width;
            // nr is two vectors on every Highway target).
            if (!tu::emulated_sweeps_width(n, std::max(1, nr / 2), widest(be, m))) continue;
            // B: b_ld > n (n + 1, the panel width, or wider), NaN padding.
            const int64_t b_ld = (n % 3 == 0) ? n + 1 : (n % 3 == 1 ? std::max(n + 1, nr) : n + 19);
            std::vector<tu::fbuf> B(nK);
            for (size_t ki = 0; ki < nK; ++ki) {
                const int64_t K = kKs[ki];
                B[ki].reset(size_t(std::max<int64_t>(K, 1) * b_ld), size_t(n % 4), tu::qnan());
                for (int64_t k = 0; k < K; ++k)
                    for (int64_t j = 0; j < n; ++j) B[ki][size_t(k * b_ld + j)] = r.frac();
            }
            const int64_t ldc = n + ((n % 2) ? 1 : 16 + (m % 3));
            tu::cmat C0(m, n, ldc, 0);
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) C0.at(i, j) = r.frac() * 4.0f;

            for (int ai = 0; ai < 2; ++ai) {
                const a_access acc = ai == 0 ? a_access::k_strided : a_access::row_major;
                for (int bi = 0; bi < 3; ++bi)
                    for (float alpha : kAlphas) {
                        if (!tu::emulated_sweeps_pair(bi, 0, 3, m + n + ai)) continue;
                        const float beta = kBetas[bi];
                        const ukernel_desc d = make_desc(be, m, n, acc, alpha, beta);
                        ukernel_ref kr;
                        const anvil_status_t st = be.get(d, &kr);
                        for (size_t ki = 0; ki < nK; ++ki) {
                            const int64_t K = kKs[ki];
                            const ukernel_args args = make_args(A[ai][ki], B[ki].data(), b_ld, K,
                                                                ldc, m, n, alpha, beta);
                            const std::string what = describe(m, n, K, acc, alpha, beta, args);
                            if (st != anvil_success || !kr.fn) {
                                bad_status.add(what + ": get() -> " + anvil_status_str(st));
                                break;
                            }
                            run_and_compare(kr, args, C0, what, &bad_bits, &bad_sentinel);
                            ++calls;
                        }
                    }
            }
        }
    }
    MESSAGE("ukernel sweep: ", calls, " kernel calls compared");
    tu::check_failures(bad_status, bad_bits, bad_sentinel, "ref::sgemm_ukernel");
}

}  // namespace

TEST_CASE("ukernel sweep: every tile, K, A addressing, alpha and beta kind is bitwise the reference") {
    sweep_backend(anvil::gemm::select_backend());
}

// The Highway backend of every compiled target this CPU supports, whatever
// the cap: on x86 this is the only place the AVX-512 (AVX3) target's wide
// tiles run, since from avx512_core up the JIT serves fp32.
TEST_CASE("ukernel sweep: every compiled Highway target's backend" * doctest::test_suite("once")) {
    for (const auto &t : anvil::fallback::compiled_targets()) {
        const backend *be = anvil::fallback::highway_backend_for(t.target, anvil_isa_avx512_core);
        REQUIRE(be != nullptr);
        CAPTURE(std::string(be->name()));
        sweep_backend(*be);
    }
}

// Whole-GEMM kernels (backend::get_small: one call runs a whole small
// GEMM, tile after tile; the JIT's have tiles of up to 20 rows when N fits
// one vector): every M in 1..64 against narrow and wide N, K short and long
// enough for the unrolled loop and its tail, both A addressings; one beta /
// alpha pair per shape in turn, all of them on a few heights around the
// tile limits.  Bitwise ref::sgemm_ukernel, nothing written outside C.
TEST_CASE("ukernel sweep: whole small-GEMM kernels are bitwise the reference") {
    using anvil::gemm::small_gemm_desc;
    const backend &be = anvil::gemm::select_backend();
    {
        small_gemm_desc probe{};
        probe.tier = uint8_t(be.tier());
        probe.M = probe.N = 1;
        probe.a = a_access::row_major;
        probe.beta = beta_kind::zero;
        probe.alpha_one = 1;
        ukernel_ref kr;
        if (be.get_small(probe, &kr) == anvil_unsupported) {
            MESSAGE("backend ", std::string(be.name()), " has no whole-GEMM kernels");
            return;
        }
    }
    const int Ns[] = {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 64};
    const int64_t Ks[] = {1, 4, 5, 17, 64};
    const int all_pairs_rows[] = {12, 13, 15, 16, 17, 20, 21, 40, 64};
    failures bad_bits, bad_sentinel, bad_status;
    int64_t calls = 0;
    tu::rng r(20261205);
    for (int M = 1; M <= anvil::gemm::kSmallGemmMax; ++M) {
        // Under emulation only every 7th height and the limits.
        const bool all_pairs = std::find(std::begin(all_pairs_rows), std::end(all_pairs_rows), M) !=
                               std::end(all_pairs_rows);
        if (!all_pairs && !tu::emulated_sweeps_width(M, 7, anvil::gemm::kSmallGemmMax)) continue;
        for (int N : Ns)
            for (int ai = 0; ai < 2; ++ai) {
                const a_access acc = ai == 0 ? a_access::k_strided : a_access::row_major;
                for (int pair = 0; pair < 6; ++pair) {
                    if (!all_pairs && pair != (M + N + ai) % 6) continue;
                    const float beta = kBetas[pair % 3], alpha = kAlphas[pair / 3];
                    small_gemm_desc d{};
                    d.tier = uint8_t(be.tier());
                    d.M = uint8_t(M);
                    d.N = uint8_t(N);
                    d.a = acc;
                    d.beta = anvil::gemm::classify_beta(beta);
                    d.alpha_one = alpha == 1.0f ? 1 : 0;
                    ukernel_ref kr;
                    const anvil_status_t st = be.get_small(d, &kr);
                    for (int64_t K : Ks) {
                        const int variant = int((K + M + N) % 2);
                        const a_operand A = make_a(M, K, acc, variant, r);
                        const int64_t b_ld = N + (variant ? 3 : 0);
                        tu::fbuf B;
                        B.reset(size_t(K * b_ld), size_t(N % 4), tu::qnan());
                        for (int64_t k = 0; k < K; ++k)
                            for (int64_t j = 0; j < N; ++j) B[size_t(k * b_ld + j)] = r.frac();
                        const int64_t ldc = N + (M % 2 ? 0 : 5);
                        const ukernel_args args =
                            make_args(A, B.data(), b_ld, K, ldc, M, N, alpha, beta);
                        const std::string what = describe(M, N, K, acc, alpha, beta, args);
                        if (st != anvil_success || !kr.fn) {
                            bad_status.add(what + ": get_small() -> " + anvil_status_str(st));
                            break;
                        }
                        tu::cmat C0(M, N, ldc, 0);
                        for (int64_t i = 0; i < M; ++i)
                            for (int64_t j = 0; j < N; ++j) C0.at(i, j) = r.frac() * 4.0f;
                        run_and_compare(kr, args, C0, what, &bad_bits, &bad_sentinel);
                        ++calls;
                    }
                }
            }
    }
    MESSAGE("whole small-GEMM sweep: ", calls, " kernel calls compared");
    tu::check_failures(bad_status, bad_bits, bad_sentinel, "ref::sgemm_ukernel");
}

// B's last row ends exactly at a PROT_NONE page, so reading B(K-1, j) for
// any j >= n faults; the same for A's last element and for C with ldc == n.
TEST_CASE("ukernel sweep: A, B and C are never accessed past their last element (guard pages)") {
    const backend &be = anvil::gemm::select_backend();
    const int mr = be.mr(), nr = be.nr();
    int max_all = 0;
    for (int m = 1; m <= mr; ++m) max_all = std::max(max_all, widest(be, m));
    const int64_t Ks[] = {1, 3, 17};
    const int64_t kmax = 17;
    tu::guarded gA(size_t(mr + 8) * size_t(kmax + 8) * 4), gB(size_t(kmax + 1) * size_t(std::max(max_all, nr) + 8) * 4),
        gC(size_t(mr) * size_t(max_all) * 4 + 64);
    tu::rng r(777);
    failures bad_bits, bad_status;
    int64_t calls = 0;
    tu::fault_reporter reporter;  // names the kernel call if it faults on a guard page
    for (int m = 1; m <= mr; ++m)
        for (int n = 1; n <= widest(be, m); ++n)
            for (int64_t K : Ks)
                for (int ai = 0; ai < 2; ++ai) {
                    const a_access acc = ai == 0 ? a_access::k_strided : a_access::row_major;
                    // Tight layouts placed so that the last element is the
                    // last float before the guard page.
                    const int64_t a_rs = acc == a_access::row_major ? K : 1;
                    const int64_t a_cs = acc == a_access::row_major ? 1 : m;
                    const int64_t a_elems = (m - 1) * a_rs + (K - 1) * a_cs + 1;
                    float *a = reinterpret_cast<float *>(gA.end()) - a_elems;
                    for (int64_t t = 0; t < a_elems; ++t) a[t] = r.frac();
                    const int64_t b_ld = (n < nr && (n + K) % 2) ? nr : n;
                    const int64_t b_elems = (K - 1) * b_ld + n;
                    float *b = reinterpret_cast<float *>(gB.end()) - b_elems;
                    for (int64_t t = 0; t < b_elems; ++t) b[t] = r.frac();
                    const int64_t ldc = n;
                    float *c = reinterpret_cast<float *>(gC.end()) - m * n;
                    for (float beta : {0.0f, 0.3f, 1.0f}) {
                        const float alpha = beta == 1.0f ? 1.0f : -0.5f;
                        const ukernel_desc d = make_desc(be, m, n, acc, alpha, beta);
                        ukernel_ref kr;
                        const anvil_status_t st = be.get(d, &kr);
                        ukernel_args args{};
                        args.a = a;
                        args.a_rs = a_rs;
                        args.a_cs = a_cs;
                        args.b = b;
                        args.b_ld = b_ld;
                        args.k = K;
                        args.c = c;
                        args.ldc = ldc;
                        args.m = m;
                        args.n = n;
                        args.alpha = alpha;
                        args.beta = beta;
                        const std::string what = describe(m, n, K, acc, alpha, beta, args);
                        if (st != anvil_success || !kr.fn) {
                            bad_status.add(what + ": get() -> " + anvil_status_str(st));
                            continue;
                        }
                        tu::cmat Cr(m, n, ldc, 0);
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) {
                                Cr.at(i, j) = r.frac();
                                c[i * ldc + j] = beta == 0.0f ? tu::qnan() : Cr.at(i, j);
                            }
                        ukernel_args ra = args;
                        ra.c = Cr.c();
                        anvil::ref::sgemm_ukernel(&ra);
                        reporter.set(what + " [" + kr.name + "]");
                        kr.fn(&args);  // faults if it touches the guard pages
                        reporter.set("");
                        ++calls;
                        tu::cmat Cg(m, n, ldc, 0);
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) Cg.at(i, j) = c[i * ldc + j];
                        std::string f;
                        if (tu::count_bit_mismatches(Cg, Cr, &f))
                            bad_bits.add(what + " [" + kr.name + "]: " + f);
                    }
                }
    MESSAGE("ukernel guard-page sweep: ", calls, " kernel calls");
    INFO(bad_status.count, " kernels not available, first:\n", bad_status.first);
    CHECK(bad_status.count == 0);
    INFO(bad_bits.count, " tiles differ from ref::sgemm_ukernel, first:\n", bad_bits.first);
    CHECK(bad_bits.count == 0);
}

TEST_CASE("ukernel sweep: kernels outside the backend's range are refused") {
    const backend &be = anvil::gemm::select_backend();
    // Only meaningful for backends that specialise on the tile (the generic
    // scalar kernel serves any size and may accept anything).
    if (!tu::backend_is_jit()) return;
    ukernel_ref kr;
    CHECK(be.get(make_desc(be, be.mr() + 1, 1, a_access::k_strided, 1.0f, 0.0f), &kr) !=
          anvil_success);
    CHECK(be.get(make_desc(be, 1, widest(be, 1) + 1, a_access::k_strided, 1.0f, 0.0f), &kr) !=
          anvil_success);
    CHECK(be.get(make_desc(be, 0, 1, a_access::row_major, 1.0f, 0.0f), &kr) != anvil_success);
    CHECK(be.get(make_desc(be, 1, 0, a_access::row_major, 1.0f, 0.0f), &kr) != anvil_success);
}
