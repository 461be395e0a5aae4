#include "threading/parallel.h"

#include <atomic>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "anvil/anvil.h"

namespace anvil::threading {
namespace {

struct pool_config {
    anvil_parallel_for_fn fn = nullptr;
    void *ctx = nullptr;
    int pool_threads = 1;
};

std::mutex g_mu;
pool_config g_pool;
std::atomic<int> g_default_threads{0};  // 0: not set, use the OpenMP default
thread_local int t_depth = 0;           // > 0 inside an anvil parallel region

pool_config current_pool() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_pool;
}

int default_threads() {
    int n = g_default_threads.load();
    if (n > 0) return n;
#ifdef _OPENMP
    return omp_get_max_threads();
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

int num_threads() {
    pool_config p = current_pool();
    return p.fn ? p.pool_threads : default_threads();
}

void parallel_for(int64_t n, const std::function<void(int64_t)> &body) {
    if (n <= 0) return;
    pool_config p = current_pool();
    const int nthr = p.fn ? p.pool_threads : default_threads();
    if (n == 1 || nthr <= 1 || t_depth > 0) {
        ++t_depth;
        for (int64_t i = 0; i < n; ++i) body(i);
        --t_depth;
        return;
    }
    if (p.fn) {
        p.fn(p.ctx, n, trampoline, const_cast<std::function<void(int64_t)> *>(&body));
        return;
    }
#ifdef _OPENMP
    const int use = int(n < nthr ? n : nthr);
#pragma omp parallel for num_threads(use) schedule(static)
    for (int64_t i = 0; i < n; ++i) trampoline(const_cast<std::function<void(int64_t)> *>(&body), i);
#else
    for (int64_t i = 0; i < n; ++i) body(i);
#endif
}

}  // namespace anvil::threading

extern "C" {

anvil_status_t anvil_set_threadpool(anvil_parallel_for_fn fn, void *pool_ctx, int num_threads) {
    if (fn && num_threads < 1) return anvil_invalid_argument;
    std::lock_guard<std::mutex> lk(anvil::threading::g_mu);
    anvil::threading::g_pool.fn = fn;
    anvil::threading::g_pool.ctx = fn ? pool_ctx : nullptr;
    anvil::threading::g_pool.pool_threads = fn ? num_threads : 1;
    return anvil_success;
}

anvil_status_t anvil_set_num_threads(int num_threads) {
    if (num_threads < 1) return anvil_invalid_argument;
    anvil::threading::g_default_threads.store(num_threads);
    return anvil_success;
}

int anvil_get_num_threads(void) { return anvil::threading::num_threads(); }

}  // extern "C"
