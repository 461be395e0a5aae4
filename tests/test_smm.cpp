// anvil_smm_*: dispatched small GEMMs.  The direct kernels (JIT tier) and
// the execute path (every tier) against an fma-chain reference bit for bit
// (the contract: one fused multiply-add chain over k from zero, then alpha,
// then beta), and against anvil_sgemm on the same data; leading dimensions
// above the sizes, unaligned pointers, C outside the matrix untouched, NaN
// in C never read with beta = 0, guard pages, bad input, threads, and a
// kernel that outlives its cache entry.
#include <cmath>
#include <thread>

#include "onednn_peer.h"
#include "test_util.h"

namespace {

struct smm_case {
    bool ta = false;
    int64_t M = 1, N = 1, K = 1;
    float alpha = 1.0f, beta = 0.0f;
    int64_t lda = 1, ldb = 1, ldc = 1;
};

std::string describe(const smm_case &c) {
    std::ostringstream s;
    s << (c.ta ? 'T' : 'N') << " M=" << c.M << " N=" << c.N << " K=" << c.K << " alpha=" << c.alpha
      << " beta=" << c.beta << " lda=" << c.lda << " ldb=" << c.ldb << " ldc=" << c.ldc;
    return s.str();
}

float a_at(const smm_case &c, const float *A, int64_t i, int64_t k) {
    return c.ta ? A[k * c.lda + i] : A[i * c.lda + k];
}

// The contract's arithmetic, element by element.
void reference(const smm_case &c, const float *A, const float *B, float *C) {
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
            float x = 0.0f;
            for (int64_t k = 0; k < c.K; ++k) x = std::fma(a_at(c, A, i, k), B[k * c.ldb + j], x);
            if (c.alpha != 1.0f) x *= c.alpha;
            float &out = C[i * c.ldc + j];
            if (c.beta == 1.0f)
                x += out;
            else if (c.beta != 0.0f)
                x = std::fma(out, c.beta, x);
            out = x;
        }
}

// The operands of one case: fractions (rounding matters, so the order is
// tested), A and B at unaligned offsets, C with sentinels in its padding and
// NaN in C when beta is 0.
struct operands {
    tu::fbuf A, B, C;
    operands(const smm_case &c, tu::rng &r) {
        const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
        A.reset(size_t(a_rows * c.lda), size_t(1 + c.M % 3), tu::sentinel());
        B.reset(size_t(c.K * c.ldb), size_t(c.N % 2), tu::sentinel());
        C.reset(size_t(c.M * c.ldc), size_t(c.K % 2), tu::sentinel());
        for (int64_t i = 0; i < a_rows; ++i)
            for (int64_t k = 0; k < a_cols; ++k) A[size_t(i * c.lda + k)] = r.frac();
        for (int64_t k = 0; k < c.K; ++k)
            for (int64_t j = 0; j < c.N; ++j) B[size_t(k * c.ldb + j)] = r.frac();
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j)
                C[size_t(i * c.ldc + j)] = c.beta == 0.0f ? tu::qnan() : r.frac() * 4.0f;
    }
};

bool same_bits(const tu::fbuf &x, const tu::fbuf &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
}

// Whether anvil_sgemm runs the problem as tiles with all of K in one block
// (one fma chain per element, the contract's order), not the dot or
// row-stream path and not several K blocks: then it must give the
// function's bits.
bool sgemm_is_one_chain(const smm_case &c) {
    char text[4096];
    size_t needed = 0;
    if (anvil_explain_sgemm(c.ta ? 'T' : 'N', 'N', c.M, c.N, c.K, text, sizeof(text), &needed) !=
        anvil_success)
        return false;
    const std::string t(text);
    const size_t kc = t.find(" kc=");
    return t.find(" path (") == std::string::npos && kc != std::string::npos &&
           std::atoll(t.c_str() + kc + 4) >= c.K;
}

// Runs one case through the handle (the function when there is one, and
// execute) and through anvil_sgemm; returns a description of the first
// difference from the reference, or "".
std::string run_case(const smm_case &c, tu::rng &r, bool expect_function) {
    operands in(c, r);
    tu::fbuf want(in.C.size(), 0, 0.0f);
    std::memcpy(want.data(), in.C.data(), in.C.size() * 4);
    reference(c, in.A.data(), in.B.data(), want.data());

    anvil_smm_t h = nullptr;
    const anvil_status_t st = anvil_smm_create(&h, c.ta ? 'T' : 'N', 'N', c.M, c.N, c.K, c.alpha,
                                               c.lda, c.ldb, c.beta, c.ldc);
    if (st != anvil_success) return "create: " + std::string(anvil_status_str(st));
    std::string bad;
    const anvil_smm_fn fn = anvil_smm_get_function(h);
    if ((fn != nullptr) != expect_function)
        bad = std::string("function ") + (fn ? "given" : "missing");
    auto check = [&](const char *path, const tu::fbuf &got) {
        if (!bad.empty() || same_bits(got, want)) return;
        for (size_t e = 0; e < got.size(); ++e)
            if (tu::bits(got[e]) != tu::bits(want[e])) {
                std::ostringstream s;
                s << path << ": element " << e << " (row " << int64_t(e) / c.ldc << ", col "
                  << int64_t(e) % c.ldc << ") " << got[e] << " != " << want[e];
                bad = s.str();
                return;
            }
    };
    tu::fbuf got(in.C.size(), 0, 0.0f);
    if (fn) {
        std::memcpy(got.data(), in.C.data(), in.C.size() * 4);
        fn(in.A.data(), in.B.data(), got.data());
        check("function", got);
    }
    std::memcpy(got.data(), in.C.data(), in.C.size() * 4);
    const anvil_status_t ex = anvil_smm_execute(h, in.A.data(), in.B.data(), got.data());
    if (ex != anvil_success && bad.empty()) bad = "execute: " + std::string(anvil_status_str(ex));
    check("execute", got);
    CHECK(anvil_smm_destroy(h) == anvil_success);
    // anvil_sgemm on the same data: the same bits where it runs one chain.
    if (!sgemm_is_one_chain(c)) return bad;
    std::memcpy(got.data(), in.C.data(), in.C.size() * 4);
    const anvil_status_t sg = anvil_sgemm(c.ta ? 'T' : 'N', 'N', c.M, c.N, c.K, c.alpha,
                                          in.A.data(), c.lda, in.B.data(), c.ldb, c.beta,
                                          got.data(), c.ldc);
    if (sg != anvil_success && bad.empty()) bad = "anvil_sgemm: " + std::string(anvil_status_str(sg));
    check("anvil_sgemm", got);
    return bad;
}

const float kAlphas[] = {1.0f, 0.5f, -1.25f};
const float kBetas[] = {0.0f, 1.0f, 0.3f, -1.5f};

}  // namespace

TEST_CASE("smm: direct kernels and execute are bitwise the fma-chain reference") {
    const bool jit = tu::backend_is_jit();
    std::vector<int> Ms = {1, 2, 3, 5, 7, 8, 11, 12, 13, 16, 17, 19, 20, 21, 24, 31, 33, 47, 64};
    std::vector<int> Ns = {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64};
    // K: unrolled whole (<= 8), and looped with every remainder (mod 4).
    std::vector<int> Ks = {1, 3, 4, 8, 9, 10, 11, 16, 17, 31, 64, 100};
    if (tu::emulated()) {
        Ms = {1, 5, 12, 20, 33, 64};
        Ns = {1, 15, 17, 33, 64};
        Ks = {1, 9, 17};
    }
    tu::rng r(20261205);
    int cases = 0, failures = 0;
    std::string first;
    for (int M : Ms)
        for (int N : Ns)
            for (int K : Ks) {
                smm_case c;
                c.M = M;
                c.N = N;
                c.K = K;
                c.ta = (M + N + K) % 3 == 0;
                c.alpha = kAlphas[(M + K) % 3];
                c.beta = kBetas[(N + K + M / 4) % 4];
                // Leading dimensions: tight, a little wider, or much wider.
                const int pad = (M * 7 + N * 3 + K) % 3;
                const int64_t a_cols = c.ta ? M : K;
                c.lda = a_cols + (pad == 0 ? 0 : pad == 1 ? 3 : 61);
                c.ldb = N + (pad == 1 ? 0 : pad == 2 ? 1 : 35);
                c.ldc = N + (pad == 2 ? 0 : pad == 0 ? 5 : 16);
                const std::string bad = run_case(c, r, jit);
                ++cases;
                if (!bad.empty() && failures++ == 0) first = describe(c) + ": " + bad;
            }
    MESSAGE("smm: ", cases, " cases, backend ", tu::backend_name());
    INFO("first failure: ", first);
    CHECK(failures == 0);
}

TEST_CASE("smm: long K (loop and remainder) and wide leading dimensions") {
    const bool jit = tu::backend_is_jit();
    tu::rng r(7);
    for (const smm_case &c : {smm_case{false, 16, 16, 1001, 1.0f, 0.0f, 1500, 16, 16},
                              smm_case{true, 13, 40, 515, 0.5f, 1.0f, 4099, 40, 100},
                              smm_case{false, 64, 64, 259, 1.0f, 0.3f, 259, 64, 64},
                              smm_case{false, 3, 5, 2, 2.0f, 1.0f, 100000, 300000, 200000}}) {
        CAPTURE(describe(c));
        const std::string bad = run_case(c, r, jit);
        CHECK(bad == "");
    }
}

TEST_CASE("smm: the function reads A, B and C only inside the matrices (guard pages)") {
    if (!tu::backend_is_jit()) return;
    tu::fault_reporter on_fault;
    for (const smm_case &c : {smm_case{false, 5, 17, 9, 1.0f, 1.0f, 9, 17, 17},
                              smm_case{true, 20, 15, 6, 1.0f, 0.3f, 20, 15, 15},
                              smm_case{false, 33, 47, 4, -1.0f, 0.0f, 4, 47, 47}}) {
        CAPTURE(describe(c));
        const int64_t a_n = (c.ta ? c.K : c.M) * c.lda, b_n = c.K * c.ldb, c_n = c.M * c.ldc;
        tu::guarded ga(size_t(a_n) * 4), gb(size_t(b_n) * 4), gc(size_t(c_n) * 4);
        float *A = ga.tail(size_t(a_n)), *B = gb.tail(size_t(b_n)), *C = gc.tail(size_t(c_n));
        for (int64_t e = 0; e < a_n; ++e) A[e] = float(e % 5) - 2.0f;
        for (int64_t e = 0; e < b_n; ++e) B[e] = float(e % 3) - 1.0f;
        for (int64_t e = 0; e < c_n; ++e) C[e] = 1.0f;
        anvil_smm_t h = nullptr;
        REQUIRE(anvil_smm_create(&h, c.ta ? 'T' : 'N', 'N', c.M, c.N, c.K, c.alpha, c.lda, c.ldb,
                                 c.beta, c.ldc) == anvil_success);
        const anvil_smm_fn fn = anvil_smm_get_function(h);
        REQUIRE((fn != nullptr));
        on_fault.set(describe(c));
        fn(A, B, C);
        // And the front edge: C and B starting right after a guard page.
        float *C0 = gc.head(), *B0 = gb.head();
        std::memcpy(B0, B, size_t(b_n) * 4);
        fn(A, B0, C0);
        CHECK(anvil_smm_destroy(h) == anvil_success);
    }
}

TEST_CASE("smm: where there is no function, execute still computes it") {
    tu::rng r(11);
    // B transposed, M or N above 64, alpha = 0, K = 0.
    const smm_case big{false, 65, 20, 7, 1.0f, 0.3f, 7, 20, 20};
    CHECK(run_case(big, r, false) == "");
    const smm_case wide{true, 3, 100, 9, 0.5f, 1.0f, 3, 100, 100};
    CHECK(run_case(wide, r, false) == "");
    const smm_case alpha0{false, 4, 4, 4, 0.0f, 0.5f, 4, 4, 4};
    CHECK(run_case(alpha0, r, false) == "");
    const smm_case k0{false, 4, 4, 0, 1.0f, 0.5f, 1, 4, 4};
    CHECK(run_case(k0, r, false) == "");

    anvil_smm_t h = nullptr;
    REQUIRE(anvil_smm_create(&h, 'N', 'T', 8, 8, 8, 1.0f, 8, 8, 0.0f, 8) == anvil_success);
    CHECK(!anvil_smm_get_function(h));
    std::vector<float> A(64), B(64), C(64, tu::qnan()), want(64);
    for (int e = 0; e < 64; ++e) {
        A[size_t(e)] = float(e % 7 - 3);
        B[size_t(e)] = float(e % 5 - 2);
    }
    REQUIRE(anvil_smm_execute(h, A.data(), B.data(), C.data()) == anvil_success);
    REQUIRE(anvil_sgemm('N', 'T', 8, 8, 8, 1.0f, A.data(), 8, B.data(), 8, 0.0f, want.data(), 8) ==
            anvil_success);
    CHECK(std::memcmp(C.data(), want.data(), 64 * 4) == 0);
    CHECK(anvil_smm_destroy(h) == anvil_success);

    // Zero-size problems: valid, nothing to do.
    REQUIRE(anvil_smm_create(&h, 'N', 'N', 0, 5, 3, 1.0f, 3, 5, 0.0f, 5) == anvil_success);
    CHECK(!anvil_smm_get_function(h));
    CHECK(anvil_smm_execute(h, nullptr, nullptr, nullptr) == anvil_success);
    CHECK(anvil_smm_destroy(h) == anvil_success);
}

TEST_CASE("smm: bad input gets a status and creates nothing") {
    anvil_smm_t h = reinterpret_cast<anvil_smm_t>(0x1);
    CHECK(anvil_smm_create(nullptr, 'N', 'N', 4, 4, 4, 1.0f, 4, 4, 0.0f, 4) == anvil_null_pointer);
    CHECK(anvil_smm_create(&h, 'X', 'N', 4, 4, 4, 1.0f, 4, 4, 0.0f, 4) == anvil_invalid_argument);
    CHECK(anvil_smm_create(&h, 'N', 'N', -1, 4, 4, 1.0f, 4, 4, 0.0f, 4) == anvil_bad_size);
    CHECK(anvil_smm_create(&h, 'N', 'N', 4, 4, 4, 1.0f, 3, 4, 0.0f, 4) == anvil_bad_leading_dim);
    CHECK(anvil_smm_create(&h, 'N', 'N', 4, 4, 4, 1.0f, 4, 4, 0.0f, 3) == anvil_bad_leading_dim);
    CHECK(anvil_smm_create(&h, 'T', 'N', 4, 4, 4, 1.0f, 3, 4, 0.0f, 4) == anvil_bad_leading_dim);
    CHECK(anvil_smm_create(&h, 'N', 'N', INT64_MAX / 2, 4, 4, 1.0f, 4, 4, 0.0f, 4) ==
          anvil_size_overflow);
    CHECK(h == reinterpret_cast<anvil_smm_t>(0x1));  // untouched

    CHECK(!anvil_smm_get_function(nullptr));
    CHECK(anvil_smm_execute(nullptr, nullptr, nullptr, nullptr) == anvil_invalid_handle);
    CHECK(anvil_smm_destroy(nullptr) == anvil_invalid_handle);
    // A pointer that is not a handle.
    alignas(64) char junk[256] = {};
    CHECK(anvil_smm_execute(reinterpret_cast<anvil_smm_t>(junk), nullptr, nullptr, nullptr) ==
          anvil_invalid_handle);
    CHECK(!anvil_smm_get_function(reinterpret_cast<anvil_smm_t>(junk)));

    REQUIRE(anvil_smm_create(&h, 'N', 'N', 4, 4, 4, 1.0f, 4, 4, 0.0f, 4) == anvil_success);
    std::vector<float> A(16, 1.0f), B(16, 1.0f), C(16, 7.0f);
    CHECK(anvil_smm_execute(h, nullptr, B.data(), C.data()) == anvil_null_pointer);
    CHECK(anvil_smm_execute(h, A.data(), nullptr, C.data()) == anvil_null_pointer);
    CHECK(anvil_smm_execute(h, A.data(), B.data(), nullptr) == anvil_null_pointer);
    for (float v : C) CHECK(v == 7.0f);  // nothing written on error
    CHECK(anvil_smm_destroy(h) == anvil_success);
}

TEST_CASE("smm: one function called from several threads at once") {
    const int64_t M = 20, N = 33, K = 40;
    std::vector<float> A(size_t(M * K)), B(size_t(K * N));
    tu::rng r(3);
    for (float &v : A) v = r.frac();
    for (float &v : B) v = r.frac();
    anvil_smm_t h = nullptr;
    REQUIRE(anvil_smm_create(&h, 'N', 'N', M, N, K, 1.0f, K, N, 0.0f, N) == anvil_success);
    std::vector<float> want(size_t(M * N));
    REQUIRE(anvil_smm_execute(h, A.data(), B.data(), want.data()) == anvil_success);
    constexpr int kThreads = 4;
    std::vector<std::vector<float>> out(kThreads, std::vector<float>(size_t(M * N)));
    std::vector<int> ok(kThreads, 1);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t] {
            for (int rep = 0; rep < 200; ++rep) {
                if (anvil_smm_execute(h, A.data(), B.data(), out[size_t(t)].data()) != anvil_success ||
                    std::memcmp(out[size_t(t)].data(), want.data(), want.size() * 4) != 0)
                    ok[size_t(t)] = 0;
            }
        });
    for (auto &th : pool) th.join();
    for (int t = 0; t < kThreads; ++t) CHECK(ok[size_t(t)] == 1);
    CHECK(anvil_smm_destroy(h) == anvil_success);
}

TEST_CASE("smm: the function outlives its kernel cache entry") {
    if (!tu::backend_is_jit()) return;
    anvil_cache_stats_t before{};
    REQUIRE(anvil_get_kernel_cache_stats(&before) == anvil_success);
    anvil_smm_t h = nullptr;
    REQUIRE(anvil_smm_create(&h, 'N', 'N', 9, 9, 9, 1.0f, 9, 9, 0.0f, 9) == anvil_success);
    const anvil_smm_fn fn = anvil_smm_get_function(h);
    REQUIRE((fn != nullptr));
    // Evict everything: capacity 1, then other kernels, then a clear.
    REQUIRE(anvil_set_kernel_cache_capacity(1) == anvil_success);
    std::vector<float> A(81, 1.0f), B(81, 2.0f), C(81, 0.0f);
    for (int n = 1; n <= 5; ++n)
        REQUIRE(anvil_sgemm('N', 'N', 9, n, 9, 1.0f, A.data(), 9, B.data(), 9, 0.0f, C.data(), 9) ==
                anvil_success);
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    fn(A.data(), B.data(), C.data());
    for (float v : C) CHECK(v == 18.0f);
    CHECK(anvil_smm_destroy(h) == anvil_success);
    REQUIRE(anvil_set_kernel_cache_capacity(before.capacity) == anvil_success);
}

// anvil_sgemm: a thread's long streak of one small call tiers up to that
// call's direct kernel (src/gemm/driver.cpp, kDirectAfterRepeats); the
// bits must not change across the switch.
TEST_CASE("smm: anvil_sgemm's repeated small call keeps its bits when it tiers up") {
    struct call {
        char ta;
        int64_t M, N, K, lda, ldb, ldc;
        float beta;
    };
    tu::rng r(99);
    for (const call &c : {call{'N', 16, 16, 16, 16, 16, 16, 0.0f}, call{'T', 7, 33, 9, 8, 40, 35, 1.0f},
                          call{'N', 64, 20, 30, 31, 20, 21, 0.0f}}) {
        CAPTURE(c.M);
        const int64_t a_n = (c.ta == 'T' ? c.K : c.M) * c.lda;
        std::vector<float> A(static_cast<size_t>(a_n)), B(static_cast<size_t>(c.K * c.ldb)),
            C0(static_cast<size_t>(c.M * c.ldc));
        for (float &v : A) v = r.frac();
        for (float &v : B) v = r.frac();
        for (float &v : C0) v = c.beta == 0.0f ? tu::qnan() : r.frac();
        std::vector<float> first(C0), C(C0);
        REQUIRE(anvil_sgemm(c.ta, 'N', c.M, c.N, c.K, 1.0f, A.data(), c.lda, B.data(), c.ldb, c.beta,
                            first.data(), c.ldc) == anvil_success);
        int differ = 0;
        for (int rep = 0; rep < 1100 + 2; ++rep) {
            std::memcpy(C.data(), C0.data(), C.size() * 4);
            REQUIRE(anvil_sgemm(c.ta, 'N', c.M, c.N, c.K, 1.0f, A.data(), c.lda, B.data(), c.ldb,
                                c.beta, C.data(), c.ldc) == anvil_success);
            if (std::memcmp(C.data(), first.data(), C.size() * 4) != 0) ++differ;
        }
        CHECK(differ == 0);
    }
}

// oneDNN as a second peer: small-integer data, alpha and beta powers of
// two (or 1, 0), K <= 100, so every product, partial sum and the alpha /
// beta steps are exact integers below 2^24 in any order: the function (or
// execute) and dnnl_sgemm agree exactly -- compared as values, since the
// sign of a zero result depends on the order (anvil: alpha * (+0 + a*b),
// oneDNN may scale a*b first; -0 == +0).
TEST_CASE("smm: equal to oneDNN's dnnl_sgemm on exact data, every transa, tails and K tails") {
    tu::rng r(31);
    int compared = 0, differ = 0;
    std::string first;
    for (int M : {1, 3, 8, 13, 20, 33, 64})
        for (int N : {1, 5, 16, 17, 40, 64})
            for (int K : {1, 7, 9, 31, 100}) {
                const bool ta = (M + N + K) % 2 == 1;
                const float alpha = (M + K) % 3 == 0 ? 1.0f : (M + K) % 3 == 1 ? 2.0f : -0.5f;
                const float beta = (N + K) % 3 == 0 ? 0.0f : (N + K) % 3 == 1 ? 1.0f : 0.5f;
                const int64_t lda = (ta ? M : K) + (M % 3), ldb = N + (K % 2), ldc = N + 3;
                std::vector<float> A(static_cast<size_t>((ta ? K : M) * lda)),
                    B(static_cast<size_t>(K * ldb)), C0(static_cast<size_t>(M * ldc));
                for (float &v : A) v = r.small_int();
                for (float &v : B) v = r.small_int();
                for (float &v : C0) v = 2.0f * r.small_int();
                std::vector<float> mine(C0), theirs(C0);
                anvil_smm_t h = nullptr;
                REQUIRE(anvil_smm_create(&h, ta ? 'T' : 'N', 'N', M, N, K, alpha, lda, ldb, beta,
                                         ldc) == anvil_success);
                if (const anvil_smm_fn fn = anvil_smm_get_function(h))
                    fn(A.data(), B.data(), mine.data());
                else
                    REQUIRE(anvil_smm_execute(h, A.data(), B.data(), mine.data()) == anvil_success);
                CHECK(anvil_smm_destroy(h) == anvil_success);
                if (!peer::sgemm(ta ? 'T' : 'N', 'N', M, N, K, alpha, A.data(), lda, B.data(), ldb,
                                 beta, theirs.data(), ldc))
                    return;  // no oneDNN in this build
                ++compared;
                if (mine != theirs && differ++ == 0)
                    first = "M=" + std::to_string(M) + " N=" + std::to_string(N) +
                            " K=" + std::to_string(K);
            }
    MESSAGE("smm vs dnnl_sgemm: ", compared, " problems");
    INFO("first difference: ", first);
    CHECK(differ == 0);
}
