// The small-M dot and row-stream paths of anvil_sgemm (gemm/dot.h,
// gemm/stream.h): every compiled Highway target's dot kernel on every tile
// shape and K tail, exact on integer data and within the gamma_K bound on
// fractions; every target's
// row-stream kernel the contract's fma chain bit for bit; neither reads
// past A's or B's last row nor writes outside C's tile; and through
// anvil_sgemm, bitwise identical for 1 and 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fallback/hwy_dot.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/dot.h"
#include "gemm/stream.h"
#include "gemm/driver.h"
#include "test_util.h"

namespace {

using anvil::gemm::dot_args;
using anvil::gemm::dot_fn;

struct dot_case {
    int64_t m, n, k;
    float alpha, beta;
    bool ints;
};

// Runs one case with A's last row and B's last column ending at guard
// pages and C inside a larger matrix; returns "" or what went wrong.
std::string run_case(dot_fn fn, const dot_case &c, tu::rng &r) {
    const int64_t lda = c.k + 1, ldb = c.k, ldc = c.n + 2;
    tu::guarded ga(size_t((c.m - 1) * lda + c.k) * 4), gb(size_t(c.n * ldb) * 4);
    float *A = ga.tail(size_t((c.m - 1) * lda + c.k));
    float *B = gb.tail(size_t(c.n * ldb));
    auto value = [&] { return c.ints ? r.small_int() : r.frac(); };
    for (int64_t i = 0; i < (c.m - 1) * lda + c.k; ++i) A[i] = value();
    for (int64_t i = 0; i < c.n * ldb; ++i) B[i] = value();
    std::vector<float> C(size_t(c.m * ldc)), C0;
    for (float &v : C) v = c.beta == 0.0f ? tu::qnan() : (c.ints ? r.exact_c(c.beta) : r.frac());
    C0 = C;
    dot_args a{A, B, C.data(), lda, ldb, ldc, c.m, c.n, c.k, c.alpha, c.beta};
    fn(&a);
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = size_t(i * ldc + j);
            if (j >= c.n) {
                if (std::memcmp(&C[at], &C0[at], 4) != 0)
                    return "wrote C(" + std::to_string(i) + "," + std::to_string(j) + ")";
                continue;
            }
            double dot = 0, abs_sum = 0;
            for (int64_t k = 0; k < c.k; ++k) {
                dot += double(A[i * lda + k]) * double(B[j * ldb + k]);
                abs_sum += std::fabs(double(A[i * lda + k]) * double(B[j * ldb + k]));
            }
            const double want = c.alpha * dot + (c.beta == 0.0f ? 0.0 : c.beta * double(C0[at]));
            // Integer data: every partial sum is exact, and so are alpha (-0.5)
            // and the beta terms of exact_c.  Fractions: gamma_{K+2} of the
            // absolute terms (any summation order).
            const double bound =
                c.ints ? 0.0
                       : tu::gamma_n(c.k + 2, 0x1p-24) *
                             (std::fabs(c.alpha) * abs_sum +
                              (c.beta == 0.0f ? 0.0 : std::fabs(c.beta * double(C0[at]))));
            if (!(std::fabs(double(C[at]) - want) <= bound))
                return "C(" + std::to_string(i) + "," + std::to_string(j) + ") = " +
                       std::to_string(C[at]) + ", want " + std::to_string(want);
        }
    return "";
}

// The row-stream kernel on m x n x k with A row-major or transposed and B's
// last row ending at a guard page; C inside a larger matrix.
std::string run_stream_case(anvil::gemm::stream_fn fn, const dot_case &c, bool a_t,
                            tu::rng &r) {
    const int64_t ldb = c.n + 3, ldc = c.n + 2;
    const int64_t a_rs = a_t ? 1 : c.k + 1, a_cs = a_t ? c.m + 1 : 1;
    std::vector<float> A(size_t((c.m - 1) * a_rs + (c.k - 1) * a_cs + 1));
    tu::guarded gb(size_t((c.k - 1) * ldb + c.n) * 4);
    float *B = gb.tail(size_t((c.k - 1) * ldb + c.n));
    auto value = [&] { return c.ints ? r.small_int() : r.frac(); };
    for (float &v : A) v = value();
    for (int64_t i = 0; i < (c.k - 1) * ldb + c.n; ++i) B[i] = value();
    std::vector<float> C(size_t(c.m * ldc));
    for (float &v : C) v = c.beta == 0.0f ? tu::qnan() : (c.ints ? r.exact_c(c.beta) : r.frac());
    const std::vector<float> C0 = C;
    anvil::gemm::stream_args a{A.data(), a_rs, a_cs, B, ldb, C.data(), ldc, c.m, c.n, c.k,
                               c.alpha, c.beta};
    fn(&a);
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = size_t(i * ldc + j);
            if (j >= c.n) {
                if (std::memcmp(&C[at], &C0[at], 4) != 0)
                    return "wrote C(" + std::to_string(i) + "," + std::to_string(j) + ")";
                continue;
            }
            // The contract's arithmetic with one K block: a chain of fmas.
            float acc = 0.0f;
            for (int64_t k = 0; k < c.k; ++k)
                acc = std::fma(A[size_t(i * a_rs + k * a_cs)], B[k * ldb + j], acc);
            const float t = c.alpha == 1.0f ? acc : c.alpha * acc;
            const float want = c.beta == 0.0f   ? t
                               : c.beta == 1.0f ? t + C0[at]
                                                : std::fma(c.beta, C0[at], t);
            if (std::memcmp(&C[at], &want, 4) != 0)
                return "C(" + std::to_string(i) + "," + std::to_string(j) + ") = " +
                       std::to_string(C[at]) + ", want " + std::to_string(want);
        }
    return "";
}

}  // namespace

TEST_CASE("stream path: every compiled target's kernel is the contract's fma chain, bit for bit") {
    // Column tails of every length below 8 and 16 lanes; the tail runs in
    // blocks of 32 rows of B, so narrow widths also take depths around them
    // (and every row count).  The wide widths straddle the column chunks of
    // each row group (4096 / g columns for groups of g = 8, 4, 2, 1 rows),
    // with row counts that between them use every group (7 = 4 + 2 + 1,
    // 16 = 8 + 8) and two depths (the 4-row K step alone and with a
    // remainder): the chunking does not depend on K, and the narrow widths
    // walk the K steps.  (All rows and depths at 2047 .. 4097 columns were
    // a fifth of the x86 jobs' longest ctest entry and more under qemu.)
    const int64_t widths[] = {1, 2, 7, 8, 9, 15, 17, 31, 33, 511, 513, 1025, 2047, 2049, 4097};
    const std::vector<int64_t> wide_rows = {1, 3, 7, 16};
    const std::vector<int64_t> wide_depths = {1, 5};
    const std::vector<int64_t> narrow_depths = {1, 3, 4, 5, 8, 13, 31, 32, 33, 65, 100};
    for (const auto &t : anvil::fallback::compiled_targets()) {
        CAPTURE(std::string(t.name));
        const anvil::gemm::stream_fn fn = anvil::fallback::stream_kernel_of_target(t.target);
        REQUIRE((fn != nullptr));
        tu::rng r(uint64_t(t.target) % 1000 + 9);
        int64_t cases = 0, failures = 0;
        std::string first;
        for (int64_t m : {1, 2, 3, 4, 7, 8, 9, 13, 16})
            for (int64_t n : widths)
                for (int64_t k : n < 64 ? narrow_depths : wide_depths)
                    for (bool a_t : {false, true}) {
                        if (n >= 64 && std::find(wide_rows.begin(), wide_rows.end(), m) == wide_rows.end())
                            continue;
                        for (float beta : {0.0f, 1.0f, 0.3f}) {
                            const float alpha = (n + k + m) % 2 ? -0.5f : 1.0f;
                            const dot_case c{m, n, k, alpha, beta, k % 2 == 0};
                            const std::string why = run_stream_case(fn, c, a_t, r);
                            ++cases;
                            if (!why.empty() && failures++ == 0)
                                first = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                        std::to_string(k) + (a_t ? " A^T" : "") + " beta " +
                                        std::to_string(beta) + ": " + why;
                        }
                    }
        INFO("first failure: " << first);
        CHECK(failures == 0);
        MESSAGE(std::string(t.name) << ": " << cases << " stream cases");
    }
}

TEST_CASE("dot path: every compiled target's kernel, every tile, K tail, alpha and beta") {
    const int64_t depths[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 257};
    for (const auto &t : anvil::fallback::compiled_targets()) {
        CAPTURE(std::string(t.name));
        const dot_fn fn = anvil::fallback::dot_kernel_of_target(t.target);
        REQUIRE((fn != nullptr));
        tu::rng r(uint64_t(t.target) % 1000 + 5);
        int64_t cases = 0, failures = 0;
        std::string first;
        for (int64_t m = 1; m <= 9; ++m)
            for (int64_t n = 1; n <= 17; ++n)
                for (int64_t k : depths)
                    for (float alpha : {1.0f, -0.5f})
                        for (float beta : {0.0f, 1.0f, 0.3f})
                            for (bool ints : {true, false}) {
                                if (!ints && (n % 3 != 0 || k % 2 == 0)) continue;  // fewer fraction runs
                                const dot_case c{m, n, k, alpha, beta, ints};
                                const std::string why = run_case(fn, c, r);
                                ++cases;
                                if (!why.empty() && failures++ == 0)
                                    first = std::to_string(m) + "x" + std::to_string(n) + "x" +
                                            std::to_string(k) + " alpha " +
                                            std::to_string(alpha) + " beta " +
                                            std::to_string(beta) + (ints ? " ints: " : " fractions: ") + why;
                            }
        INFO("first failure: " << first);
        CHECK(failures == 0);
        MESSAGE(std::string(t.name) << ": " << cases << " dot cases");
    }
}

TEST_CASE("dot path: anvil_sgemm takes it for small M with B transposed and for N == 1") {
    anvil::gemm::sgemm_problem p;
    p.transb = true;
    p.M = 4;
    p.N = 100;
    p.K = 64;
    CHECK(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));
    CHECK(anvil::gemm::dot_path_applies(p, anvil_isa_avx512_core));
    p.M = 64;
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));  // short K: packing wins
    p.K = 4096;
    CHECK(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx512_core));
    // The JIT tiers: up to 16 rows once K >= 512.
    p.M = 16;
    CHECK(anvil::gemm::dot_path_applies(p, anvil_isa_avx512_core));
    p.M = 17;
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx512_core));
    p.M = 16;
    p.K = 511;
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx512_core));
    p.M = 64;
    p.K = 4096;
    p.transa = true;
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));
    p.transa = p.transb = false;
    p.M = 1000;
    p.N = 1;
    p.ldb = 1;
    CHECK(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));  // matrix-vector
    p.ldb = 2;
    CHECK_FALSE(anvil::gemm::dot_path_applies(p, anvil_isa_avx2));
    CHECK((anvil::gemm::dot_kernel(anvil_isa_scalar) == nullptr));
    // The row-stream path: M <= 2, B row-major, wide; on the JIT tiers only
    // where cpu_info::jit_row_stream (M = 1, or M = 2 with B past L3).
    p.N = 4096;
    p.M = 2;
    p.ldb = 4096;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    const bool jit_stream = anvil::cpu::info().jit_row_stream;
    const bool b_past_l3 = 4.0 * double(p.N) * double(p.K) > double(anvil::cpu::info().caches.l3);
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx512_core) == (jit_stream && b_past_l3));
    CHECK((anvil::gemm::stream_kernel(anvil_isa_avx512_core) == nullptr) == !jit_stream);
    p.M = 1;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx512_core) == jit_stream);
    p.transb = true;
    CHECK_FALSE(anvil::gemm::stream_path_applies(p, anvil_isa_avx512_core));
    p.transb = false;
    p.M = 3;
    CHECK_FALSE(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    // A transposed with N <= 8: rows of C^T (N == 1 straight into C).
    p.M = 4096;
    p.N = 1;
    p.transa = true;
    p.ldc = 1;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    p.N = 8;
    p.ldc = 8;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    // 9 <= N <= 16 only when A is large (M x K >= 2^18).
    p.N = 9;
    p.K = 64;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    p.N = 16;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    p.N = 17;
    CHECK_FALSE(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    p.N = 16;
    p.M = 256;
    p.K = 256;
    CHECK_FALSE(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
    p.M = 16;
    p.N = 1;
    CHECK(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));  // N == 1: M >= 16
    p.N = 2;
    CHECK_FALSE(anvil::gemm::stream_path_applies(p, anvil_isa_avx2));
}

TEST_CASE("dot and stream paths: bitwise identical for 1 and 2 threads") {
    struct shape {
        int64_t M, N, K;
        char tb;
        char ta = 'N';
    };
    for (const shape s : {shape{5, 3001, 700, 'T'}, shape{3001, 1, 700, 'N'},
                          shape{40, 2000, 600, 'T'}, shape{1, 9000, 333, 'T'},
                          shape{2, 9001, 700, 'N'}, shape{1, 5000, 999, 'N'},
                          shape{5000, 1, 999, 'N', 'T'}, shape{1, 6000, 800, 'T', 'T'},
                          shape{7000, 5, 600, 'T'}, shape{3000, 7, 500, 'N', 'T'},
                          shape{2500, 3, 400, 'T', 'T'}, shape{3000, 13, 500, 'N', 'T'},
                          shape{1200, 16, 300, 'T', 'T'}, shape{1, 100, 4096, 'N'},
                          shape{2, 77, 4000, 'N'}}) {
        CAPTURE(s.M);
        CAPTURE(s.N);
        tu::rng r(uint64_t(s.M * 7 + s.N));
        std::vector<float> A(size_t(s.M * s.K)), B(size_t(s.N * s.K)), C0(size_t(s.M * s.N));
        for (float &v : A) v = r.frac();
        for (float &v : B) v = r.frac();
        for (float &v : C0) v = r.frac();
        const int64_t ldb = s.tb == 'T' ? s.K : s.N;
        std::vector<std::vector<float>> out;
        for (int threads : {1, 2}) {
            REQUIRE(anvil_set_num_threads(threads) == anvil_success);
            std::vector<float> C = C0;
            const int64_t lda = s.ta == 'T' ? s.M : s.K;
            REQUIRE(anvil_sgemm(s.ta, s.tb, s.M, s.N, s.K, 0.7f, A.data(), lda, B.data(), ldb,
                                0.3f, C.data(), s.N) == anvil_success);
            out.push_back(C);
        }
        REQUIRE(anvil_set_num_threads(2) == anvil_success);
        CHECK(std::memcmp(out[0].data(), out[1].data(), out[0].size() * 4) == 0);
    }
}

TEST_CASE("dot and stream paths: anvil_sgemm is exact on integer data in every form") {
    // Small integers (|a|, |b| <= 4, K <= 4099): every partial sum is an
    // integer below 2^24, so any summation order gives the exact result.
    struct shape {
        int64_t M, N, K;
        char ta, tb;
    };
    for (const shape s : {shape{3, 301, 700, 'N', 'T'}, shape{1, 1000, 517, 'T', 'T'},
                          shape{2, 300, 257, 'N', 'N'}, shape{1, 93, 4099, 'N', 'N'},
                          shape{2, 64, 4096, 'N', 'N'}, shape{700, 1, 300, 'T', 'N'},
                          shape{300, 7, 500, 'T', 'T'}, shape{1030, 11, 300, 'T', 'N'},
                          shape{600, 16, 450, 'T', 'T'}, shape{999, 9, 263, 'T', 'N'}}) {
        CAPTURE(s.M);
        CAPTURE(s.N);
        CAPTURE(s.K);
        CAPTURE(s.ta);
        CAPTURE(s.tb);
        tu::rng r(uint64_t(s.M * 31 + s.N * 7 + s.K));
        const int64_t lda = (s.ta == 'T' ? s.M : s.K) + 3, ldb = (s.tb == 'T' ? s.K : s.N) + 5;
        const int64_t ldc = s.N + 2;
        std::vector<float> A(size_t((s.ta == 'T' ? s.K : s.M) * lda)),
            B(size_t((s.tb == 'T' ? s.N : s.K) * ldb)), C(size_t(s.M * ldc), 2.0f);
        for (float &v : A) v = r.small_int();
        for (float &v : B) v = r.small_int();
        auto a = [&](int64_t i, int64_t k) { return s.ta == 'T' ? A[k * lda + i] : A[i * lda + k]; };
        auto b = [&](int64_t k, int64_t j) { return s.tb == 'T' ? B[j * ldb + k] : B[k * ldb + j]; };
        REQUIRE(anvil_sgemm(s.ta, s.tb, s.M, s.N, s.K, 2.0f, A.data(), lda, B.data(), ldb, -1.0f,
                            C.data(), ldc) == anvil_success);
        int64_t bad = 0;
        for (int64_t i = 0; i < s.M; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
                double want = 2.0;  // the padding columns keep their value
                if (j < s.N) {
                    double acc = 0.0;
                    for (int64_t k = 0; k < s.K; ++k) acc += double(a(i, k)) * double(b(k, j));
                    want = 2.0 * acc - 2.0;
                }
                bad += double(C[size_t(i * ldc + j)]) != want;
            }
        CHECK(bad == 0);
    }
}
