#include "threading/parallel.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "anvil/anvil.h"

namespace anvil::threading {
namespace {

// The installed pool.  Read on every call without a lock: the three fields
// are published together through one pointer to an immutable record (old
// records are kept: a racing reader may still be using one).
struct pool_config {
    anvil_parallel_for_fn fn = nullptr;
    void *ctx = nullptr;
    int pool_threads = 1;
};

std::atomic<const pool_config *> g_pool{nullptr};
std::mutex g_install_mu;
std::atomic<int> g_default_threads{0};  // 0: not set, use the OpenMP default
thread_local int t_depth = 0;           // > 0 inside an anvil parallel region

int default_threads() {
    int n = g_default_threads.load(std::memory_order_relaxed);
    if (n > 0) return n;
#ifdef _OPENMP
    static const int omp_default = omp_get_max_threads();
    return omp_default;
#else
    return 1;
#endif
}

void trampoline(void *ctx, int64_t i) {
    auto *body = static_cast<const std::function<void(int64_t)> *>(ctx);
    ++t_depth;
    (*body)(i);
    --t_depth;
}

}  // namespace

bool in_parallel_region() { return t_depth > 0; }

int num_threads() {
    const pool_config *p = g_pool.load(std::memory_order_acquire);
    return (p && p->fn) ? p->pool_threads : default_threads();
}

void parallel_for_pool(int64_t n, const std::function<void(int64_t)> &body) {
    const pool_config *p = g_pool.load(std::memory_order_acquire);
    void *ctx = const_cast<std::function<void(int64_t)> *>(&body);
    if (p && p->fn) {
        p->fn(p->ctx, n, trampoline, ctx);
        return;
    }
#ifdef _OPENMP
    const int nthr = default_threads();
    const int use = int(n < nthr ? n : nthr);
#pragma omp parallel for num_threads(use) schedule(static)
    for (int64_t i = 0; i < n; ++i) trampoline(ctx, i);
#else
    for (int64_t i = 0; i < n; ++i) trampoline(ctx, i);
#endif
}

}  // namespace anvil::threading

extern "C" {

anvil_status_t anvil_set_threadpool(anvil_parallel_for_fn fn, void *pool_ctx, int num_threads) {
    using namespace anvil::threading;
    if (fn && num_threads < 1) return anvil_invalid_argument;
    std::lock_guard<std::mutex> lk(g_install_mu);
    // Records are immutable and kept until exit (a handful per process), so
    // a concurrent reader never sees a torn or dangling configuration.
    static std::vector<std::unique_ptr<pool_config>> records;
    records.push_back(std::make_unique<pool_config>(
        pool_config{fn, fn ? pool_ctx : nullptr, fn ? num_threads : 1}));
    g_pool.store(records.back().get(), std::memory_order_release);
    return anvil_success;
}

anvil_status_t anvil_set_num_threads(int num_threads) {
    if (num_threads < 1) return anvil_invalid_argument;
    anvil::threading::g_default_threads.store(num_threads);
    return anvil_success;
}

int anvil_get_num_threads(void) { return anvil::threading::num_threads(); }

}  // extern "C"
