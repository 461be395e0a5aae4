// The JIT kernel cache: statistics, LRU capacity and eviction, and one
// generation per kernel when many threads ask at once.  Runs under every
// cap; the statistics are only asserted where the backend generates code
// (the JIT, effective ISA avx512_core and up).
#include <doctest/doctest.h>

#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

anvil_cache_stats_t stats() {
    anvil_cache_stats_t s{};
    REQUIRE(anvil_get_kernel_cache_stats(&s) == anvil_success);
    return s;
}

// Is this process's backend one that generates (and caches) kernels?
bool jit_active() {
    const bool jit = tu::backend_is_jit();
    // The JIT backend is the one for avx512_core and up (when built).
    if (jit) CHECK(anvil_get_effective_isa() >= anvil_isa_avx512_core);
    return jit && anvil_get_effective_isa() >= anvil_isa_avx512_core;
}

// Restores the capacity found at construction.
struct capacity_guard {
    int64_t initial = stats().capacity;
    ~capacity_guard() { anvil_set_kernel_cache_capacity(initial); }
};

// Runs an integer-data sgemm and checks it exactly against the reference.
void run_checked(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
    tu::gemm_case c;
    c.ta = ta;
    c.tb = tb;
    c.M = M;
    c.N = N;
    c.K = K;
    c.alpha = alpha;
    c.beta = beta;
    c.tighten();
    CAPTURE(c.str());
    tu::rng r(uint64_t(M * 1000003 + N * 1009 + K));
    auto gen = [&] { return r.small_int(); };
    tu::fbuf A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, 1, gen);
    tu::fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, 2, gen);
    tu::cmat C(M, N, c.ldc, 0), R(M, N, c.ldc, 0);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) C.at(i, j) = R.at(i, j) = r.exact_c(beta);
    // (No REQUIRE: this also runs on threads, where a throw would terminate.)
    const anvil_status_t st = anvil_sgemm(ta, tb, M, N, K, alpha, A.data(), c.lda, B.data(),
                                          c.ldb, beta, C.c(), c.ldc);
    CHECK(st == anvil_success);
    if (st != anvil_success) return;
    anvil::ref::sgemm_double(ta, tb, M, N, K, alpha, A.data(), c.lda, B.data(), c.ldb, beta,
                             R.c(), c.ldc);
    std::string f;
    CHECK_MESSAGE(tu::count_value_mismatches(C, R, &f) == 0, f);
    CHECK(C.sentinel_damage() == 0);
}

}  // namespace

TEST_CASE("cache: invalid capacity is refused and changes nothing") {
    capacity_guard guard;
    const int64_t before = stats().capacity;
    CHECK(before >= 1);
    CHECK(anvil_set_kernel_cache_capacity(0) == anvil_invalid_argument);
    CHECK(anvil_set_kernel_cache_capacity(-1) == anvil_invalid_argument);
    CHECK(anvil_set_kernel_cache_capacity(std::numeric_limits<int64_t>::min()) ==
          anvil_invalid_argument);
    CHECK(stats().capacity == before);
    CHECK(anvil_get_kernel_cache_stats(nullptr) == anvil_null_pointer);
    // A valid capacity round-trips through the statistics under any backend.
    CHECK(anvil_set_kernel_cache_capacity(7) == anvil_success);
    CHECK(stats().capacity == 7);
    CHECK(anvil_set_kernel_cache_capacity(before) == anvil_success);
    CHECK(stats().capacity == before);
}

TEST_CASE("cache: hits and misses move as expected") {
    MESSAGE("backend ", tu::backend_name(), ", effective ISA ",
            std::string(anvil_isa_name(anvil_get_effective_isa())));
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    const anvil_cache_stats_t s0 = stats();
    run_checked('N', 'N', 37, 45, 29, 1.0f, 0.0f);
    const anvil_cache_stats_t s1 = stats();
    run_checked('N', 'N', 37, 45, 29, 1.0f, 0.0f);
    const anvil_cache_stats_t s2 = stats();
    // Counters never go backwards.
    CHECK(s1.hits >= s0.hits);
    CHECK(s1.misses >= s0.misses);
    CHECK(s1.evictions >= s0.evictions);
    CHECK(s1.generation_seconds >= s0.generation_seconds);
    if (!jit_active()) return;
    CAPTURE(s0.misses);
    CAPTURE(s1.misses);
    CAPTURE(s2.misses);
    CAPTURE(s1.hits);
    CAPTURE(s2.hits);
    // clear() left nothing cached, so the first call generated its kernels
    // and cached every one of them.
    CHECK(s0.size == 0);
    CHECK(s1.misses > s0.misses);
    CHECK(s1.size == s1.misses - s0.misses);
    CHECK(s1.generation_seconds > s0.generation_seconds);
    // The same call again: all hits, nothing generated.
    CHECK(s2.misses == s1.misses);
    CHECK(s2.hits > s1.hits);
    CHECK(s2.size == s1.size);
    // A different kernel (other beta kind and alpha) is a new miss.
    run_checked('N', 'N', 37, 45, 29, -0.5f, 0.3f);
    const anvil_cache_stats_t s3 = stats();
    CHECK(s3.misses > s2.misses);
    // clear() drops the kernels but keeps the counters.
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    const anvil_cache_stats_t s4 = stats();
    CHECK(s4.size == 0);
    CHECK(s4.misses == s3.misses);
    CHECK(s4.hits == s3.hits);
    // ... and the next call generates again.
    run_checked('N', 'N', 37, 45, 29, 1.0f, 0.0f);
    CHECK(stats().misses - s4.misses == s1.misses - s0.misses);
}

TEST_CASE("cache: hits of threads that have finished still count") {
    // Front-cache hits are counted per thread; a finished thread's count
    // must stay in the totals, and counting must not race (TSan job).
    run_checked('N', 'N', 23, 31, 17, 1.0f, 0.0f);  // kernels made once
    const anvil_cache_stats_t before = stats();
    constexpr int kThreads = 3, kCalls = 4;
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([] {
            for (int i = 0; i < kCalls; ++i) run_checked('N', 'N', 23, 31, 17, 1.0f, 0.0f);
        });
    for (int i = 0; i < 50; ++i) (void)stats();  // reads while the threads count
    for (std::thread &th : pool) th.join();
    const anvil_cache_stats_t after = stats();
    CHECK(after.hits >= before.hits);
    if (!jit_active()) return;
    // Every call after a thread's first reuses its setup: a hit each.
    CHECK(after.hits - before.hits >= kThreads * (kCalls - 1));
}

TEST_CASE("cache: capacity 2 with many distinct kernels evicts and stays correct") {
    capacity_guard guard;
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    REQUIRE(anvil_set_kernel_cache_capacity(2) == anvil_success);
    const anvil_cache_stats_t s0 = stats();
    CHECK(s0.capacity == 2);
    int64_t max_size = 0;
    int idx = 0;
    for (int64_t M : {1, 2, 3, 5, 7, 11, 13, 30})
        for (int64_t N : {3, 17, 40, 100}) {
            const float alpha = (idx % 2) ? -0.5f : 1.0f;
            const float beta = (idx % 3 == 0) ? 0.0f : (idx % 3 == 1 ? 1.0f : 0.3f);
            run_checked(idx % 4 < 2 ? 'N' : 'T', 'N', M, N, 19 + idx % 5, alpha, beta);
            max_size = std::max(max_size, stats().size);
            ++idx;
        }
    const anvil_cache_stats_t s1 = stats();
    CHECK(s1.size <= 2);
    CHECK(max_size <= 2);
    CHECK(s1.capacity == 2);
    if (jit_active()) {
        CHECK(s1.misses - s0.misses > 2);
        CHECK(s1.evictions > s0.evictions);
    }
    // Shrinking the capacity evicts at once; growing it back is accepted.
    REQUIRE(anvil_set_kernel_cache_capacity(1) == anvil_success);
    CHECK(stats().size <= 1);
    REQUIRE(anvil_set_kernel_cache_capacity(guard.initial) == anvil_success);
    CHECK(stats().capacity == guard.initial);
    run_checked('T', 'T', 21, 50, 33, 1.0f, 1.0f);  // still correct after it all
}

TEST_CASE("cache: concurrent first calls from 4 threads generate each kernel exactly once") {
    struct shape {
        char ta, tb;
        int64_t M, N, K;
        float alpha, beta;
    };
    const shape shapes[] = {{'N', 'N', 29, 77, 41, 1.0f, 0.0f},
                            {'T', 'N', 5, 300, 64, -0.5f, 0.3f},
                            {'N', 'T', 100, 45, 500, 1.0f, 1.0f}};
    for (const shape &s : shapes) {
        CAPTURE(s.M);
        CAPTURE(s.N);
        CAPTURE(s.K);
        // Single-thread: how many kernels does this call need?
        REQUIRE(anvil_clear_kernel_cache() == anvil_success);
        const anvil_cache_stats_t a0 = stats();
        run_checked(s.ta, s.tb, s.M, s.N, s.K, s.alpha, s.beta);
        const int64_t single = stats().misses - a0.misses;

        REQUIRE(anvil_clear_kernel_cache() == anvil_success);
        const anvil_cache_stats_t b0 = stats();
        constexpr int kThreads = 4;
        std::atomic<int> ready{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < kThreads; ++t)
            ts.emplace_back([&] {
                ready.fetch_add(1);
                while (ready.load() < kThreads) std::this_thread::yield();
                run_checked(s.ta, s.tb, s.M, s.N, s.K, s.alpha, s.beta);
            });
        for (auto &t : ts) t.join();
        const anvil_cache_stats_t b1 = stats();
        if (jit_active()) {
            CHECK(single > 0);
            CHECK(b1.misses - b0.misses == single);
            CHECK(b1.size == single);
        }
    }
}
