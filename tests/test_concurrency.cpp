// Concurrency: application threads racing on an empty kernel cache, and
// bitwise-identical results for any thread count and for a caller thread
// pool (anvil_set_threadpool).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "test_util.h"

namespace {

using tu::cmat;
using tu::fbuf;
using tu::gemm_case;

// A problem with random-fraction data (so any change in the order of the
// arithmetic shows up in the bits) and its inputs.
struct problem {
    gemm_case c;
    fbuf A, B;
    cmat C0;
};

std::unique_ptr<problem> make_problem(char ta, char tb, int64_t M, int64_t N, int64_t K,
                                      float alpha, float beta, uint64_t seed) {
    auto p = std::make_unique<problem>();
    gemm_case &c = p->c;
    c.ta = ta;
    c.tb = tb;
    c.M = M;
    c.N = N;
    c.K = K;
    c.alpha = alpha;
    c.beta = beta;
    c.tighten(seed % 3, (seed / 3) % 2, seed % 4);
    c.off_a = int(seed % 5);
    c.off_b = int((seed + 2) % 5);
    c.off_c = int((seed + 1) % 3);
    tu::rng r(seed);
    auto gen = [&] { return r.frac(); };
    p->A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, c.off_a, gen);
    p->B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, c.off_b, gen);
    p->C0 = cmat(M, N, c.ldc, c.off_c);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) p->C0.at(i, j) = beta == 0.0f ? tu::qnan() : r.frac();
    return p;
}

// Runs the problem into a fresh C; returns the status.
anvil_status_t run(const problem &p, cmat *out) {
    const gemm_case &c = p.c;
    *out = cmat(c.M, c.N, c.ldc, c.off_c);
    out->copy_window_from(p.C0);
    return anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, p.A.data(), c.lda, p.B.data(), c.ldb,
                       c.beta, out->c(), c.ldc);
}

void check_bits(const problem &p, const cmat &got, const cmat &want, const std::string &what) {
    std::string f;
    const int64_t bad = tu::count_bit_mismatches(got, want, &f);
    CHECK_MESSAGE(bad == 0, what, " ", p.c.str(), ": ", f);
    std::string w;
    CHECK_MESSAGE(got.sentinel_damage(&w) == 0, what, " wrote outside C's window: ", w);
}

void check_bound(const problem &p, const cmat &got) {
    const tu::exact_result x = tu::exact_gemm(p.c, p.A.data(), p.B.data(), p.C0);
    std::string f;
    CHECK_MESSAGE(tu::count_bound_violations(p.c, got, x, &f) == 0, p.c.str(), ": ", f);
}

// Restores anvil's default threading on scope exit, even when a check fails.
struct threading_guard {
    int initial = anvil_get_num_threads();
    ~threading_guard() {
        anvil_set_threadpool(nullptr, nullptr, 1);
        anvil_set_num_threads(initial);
    }
};

// Starts n threads that wait for each other, then each runs body(t).
template <class F>
void run_threads(int n, F body) {
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < n; ++t)
        ts.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < n) std::this_thread::yield();
            body(t);
        });
    for (auto &t : ts) t.join();
}

std::vector<std::unique_ptr<problem>> mixed_problems() {
    std::vector<std::unique_ptr<problem>> v;
    uint64_t s = 1;
    // Different kernels: m/n tails, both A addressings, every beta kind,
    // alpha == 1 or not.
    v.push_back(make_problem('N', 'N', 5, 37, 19, 1.0f, 0.0f, s++));
    v.push_back(make_problem('T', 'N', 13, 70, 33, -0.5f, 1.0f, s++));
    v.push_back(make_problem('N', 'T', 64, 100, 129, 1.0f, 0.3f, s++));
    v.push_back(make_problem('T', 'T', 30, 17, 257, -0.5f, 0.0f, s++));
    v.push_back(make_problem('N', 'N', 1, 300, 64, 1.0f, 1.0f, s++));
    v.push_back(make_problem('N', 'N', 100, 65, 1100, -0.5f, 0.3f, s++));
    v.push_back(make_problem('T', 'N', 3, 1000, 17, 1.0f, 0.0f, s++));
    v.push_back(make_problem('N', 'T', 200, 7, 45, 1.0f, 1.0f, s++));
    return v;
}

}  // namespace

TEST_CASE("concurrency: threads racing on an empty kernel cache, same and different kernels") {
    const auto probs = mixed_problems();
    // Single-threaded results (one application thread, calls in sequence).
    std::vector<cmat> want(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) {
        REQUIRE(run(*probs[i], &want[i]) == anvil_success);
        check_bound(*probs[i], want[i]);
    }
    constexpr int kThreads = 4;
    for (int round = 0; round < 4; ++round) {
        CAPTURE(round);
        REQUIRE(anvil_clear_kernel_cache() == anvil_success);
        // Round 0/2: every thread runs the same problem list in the same
        // order (same kernels first); round 1/3: each thread starts at a
        // different problem (different kernels at once).
        std::vector<std::vector<cmat>> got(kThreads);
        for (auto &g : got) g.resize(probs.size());
        std::vector<std::vector<anvil_status_t>> st(
            kThreads, std::vector<anvil_status_t>(probs.size(), anvil_runtime_error));
        run_threads(kThreads, [&](int t) {
            for (size_t k = 0; k < probs.size(); ++k) {
                const size_t i = (round % 2 == 0) ? k : (k + size_t(t) * 3) % probs.size();
                st[size_t(t)][i] = run(*probs[i], &got[size_t(t)][i]);
            }
        });
        for (int t = 0; t < kThreads; ++t)
            for (size_t i = 0; i < probs.size(); ++i) {
                CAPTURE(t);
                CHECK(st[size_t(t)][i] == anvil_success);
                check_bits(*probs[i], got[size_t(t)][i], want[i], "threaded vs single-thread");
            }
    }
}

TEST_CASE("concurrency: results are bitwise identical for any thread count and a caller pool") {
    threading_guard guard;
    std::vector<std::unique_ptr<problem>> probs;
    probs.push_back(make_problem('N', 'N', 300, 500, 700, 1.0f, 0.0f, 11));
    probs.push_back(make_problem('N', 'N', 1, 4096, 1024, -0.5f, 1.0f, 12));
    probs.push_back(make_problem('T', 'T', 300, 500, 700, -0.5f, 0.3f, 13));
    probs.push_back(make_problem('N', 'T', 1, 4096, 1024, 1.0f, 0.0f, 14));
    probs.push_back(make_problem('T', 'N', 17, 33, 8192, 1.0f, 0.3f, 15));
    probs.push_back(make_problem('N', 'N', 1000, 64, 127, 1.0f, 1.0f, 16));
    probs.push_back(make_problem('N', 'T', 64, 1000, 255, -0.5f, 0.0f, 17));
    probs.push_back(make_problem('N', 'N', 8, 2000, 300, 1.0f, 0.0f, 18));

    REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
    REQUIRE(anvil_set_num_threads(1) == anvil_success);
    CHECK(anvil_get_num_threads() == 1);
    std::vector<cmat> base(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) {
        REQUIRE(run(*probs[i], &base[i]) == anvil_success);
        check_bound(*probs[i], base[i]);
    }
    for (int n : {2, 3}) {
        CAPTURE(n);
        REQUIRE(anvil_set_num_threads(n) == anvil_success);
        CHECK(anvil_get_num_threads() == n);
        for (size_t i = 0; i < probs.size(); ++i) {
            cmat c;
            REQUIRE(run(*probs[i], &c) == anvil_success);
            check_bits(*probs[i], c, base[i], "default pool vs 1 thread");
        }
    }
    // 64 and 300: a pool that reports many more workers than it runs (4
    // threads take the indices), as a server's shared pool might.
    for (int n : {1, 2, 3, 5, 64, 300}) {
        CAPTURE(n);
        tu::std_thread_pool pool;
        pool.threads = std::min(n, 4);
        REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, n) ==
                anvil_success);
        CHECK(anvil_get_num_threads() == n);
        for (size_t i = 0; i < probs.size(); ++i) {
            cmat c;
            REQUIRE(run(*probs[i], &c) == anvil_success);
            check_bits(*probs[i], c, base[i], "caller pool vs 1 thread");
        }
        if (n > 1) CHECK(pool.calls.load() > 0);  // the pool did run the work
        REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
    }
}

TEST_CASE("concurrency: a caller pool used from several application threads at once") {
    threading_guard guard;
    const auto probs = mixed_problems();
    REQUIRE(anvil_set_num_threads(1) == anvil_success);
    std::vector<cmat> want(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) REQUIRE(run(*probs[i], &want[i]) == anvil_success);

    tu::std_thread_pool pool;
    pool.threads = 3;
    REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 3) == anvil_success);
    constexpr int kThreads = 3;
    std::vector<std::vector<cmat>> got(kThreads);
    for (auto &g : got) g.resize(probs.size());
    std::vector<std::vector<anvil_status_t>> st(
        kThreads, std::vector<anvil_status_t>(probs.size(), anvil_runtime_error));
    run_threads(kThreads, [&](int t) {
        for (size_t k = 0; k < probs.size(); ++k) {
            const size_t i = (k + size_t(t)) % probs.size();
            st[size_t(t)][i] = run(*probs[i], &got[size_t(t)][i]);
        }
    });
    for (int t = 0; t < kThreads; ++t)
        for (size_t i = 0; i < probs.size(); ++i) {
            CAPTURE(t);
            CHECK(st[size_t(t)][i] == anvil_success);
            check_bits(*probs[i], got[size_t(t)][i], want[i], "pool from 3 app threads vs 1 thread");
        }
}

TEST_SUITE("once") {
TEST_CASE("concurrency: invalid thread settings are refused and change nothing") {
    threading_guard guard;
    const int before = anvil_get_num_threads();
    CHECK(anvil_set_num_threads(0) == anvil_invalid_argument);
    CHECK(anvil_set_num_threads(-3) == anvil_invalid_argument);
    CHECK(anvil_get_num_threads() == before);
    tu::std_thread_pool pool;
    CHECK(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 0) ==
          anvil_invalid_argument);
    CHECK(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, -1) ==
          anvil_invalid_argument);
    CHECK(anvil_get_num_threads() == before);
    // Restoring the default pool with NULL is always accepted.
    CHECK(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
    CHECK(anvil_get_num_threads() >= 1);
}
}
