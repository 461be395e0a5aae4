// anvil-bench: runs the peak loops on N threads and the read sweep.
#include "anvil_bench_peak.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "anvil_bench_data.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {
namespace {

volatile float g_sink_f;
volatile uint64_t g_sink_u;

// Starts n threads, releases them together and returns the wall time until
// the last one finishes.
template <class F>
double run_on_threads(int n, F &&fn) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> th;
    th.reserve(size_t(n));
    for (int t = 0; t < n; ++t)
        th.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            fn(t);
        });
    while (ready.load() < n) std::this_thread::yield();
    const double t0 = now_seconds();
    go.store(true, std::memory_order_release);
    for (auto &t : th) t.join();
    return now_seconds() - t0;
}

uint64_t read_sweep_scalar(const void *p, size_t bytes) {
    const uint64_t *v = static_cast<const uint64_t *>(p);
    uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
    const size_t n = bytes / 8;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        x0 ^= v[i];
        x1 ^= v[i + 1];
        x2 ^= v[i + 2];
        x3 ^= v[i + 3];
    }
    return x0 ^ x1 ^ x2 ^ x3;
}

// Calibrates one run of body(iters) to ~10 ms, then runs it on `threads`
// threads at once, again and again for `seconds`: many short runs catch a
// quiet moment on a shared machine, and the best one is the peak.
template <class F>
double best_rate(int threads, double seconds, double ops_per_iter, F &&body) {
    int64_t iters = 1 << 12;
    for (;;) {
        const double t0 = now_seconds();
        body(iters);
        const double t = now_seconds() - t0;
        if (t > 2e-3 || iters > (int64_t(1) << 34)) {
            iters = std::max<int64_t>(1, int64_t(double(iters) * 0.01 / t));
            break;
        }
        iters *= 4;
    }
    double best = 0;
    const double start = now_seconds();
    int runs = 0;
    while (runs < 3 || now_seconds() - start < seconds) {
        const double t = run_on_threads(threads, [&](int) { body(iters); });
        best = std::max(best, double(threads) * double(iters) * ops_per_iter / t * 1e-9);
        ++runs;
    }
    return best;
}

}  // namespace

peak_result measure_fma_peak(int threads, double seconds) {
    peak_result r;
    r.threads = threads;
#if defined(ANVIL_BENCH_X86_PROBES)
    const bool zmm = __builtin_cpu_supports("avx512f");
    const bool ymm = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    const bool zmm = false, ymm = false;
#endif
    if (!zmm && !ymm) {
        r.probe = "none (no FMA)";
        return r;
    }
    r.probe = zmm ? "vfmadd231ps zmm, 16 independent accumulators"
                  : "vfmadd231ps ymm, 12 independent accumulators";
    const double flop_per_iter = zmm ? 64.0 * 32.0 : 48.0 * 16.0;
    r.gflops = best_rate(threads, seconds, flop_per_iter, [zmm](int64_t iters) {
#if defined(ANVIL_BENCH_X86_PROBES)
        g_sink_f = zmm ? fma_loop_zmm(iters) : fma_loop_ymm(iters);
#else
        (void)zmm;
        (void)iters;
#endif
    });
    return r;
}

peak_result measure_lowp_peak(const std::string &kind, int threads, double seconds) {
    peak_result r;
    r.threads = threads;
#if defined(ANVIL_BENCH_X86_PROBES)
    if (kind == "bf16") {
        if (!__builtin_cpu_supports("avx512bf16")) {
            r.probe = "n/a (no avx512_bf16)";
            return r;
        }
        r.probe = "vdpbf16ps zmm, 16 independent accumulators";
        r.gflops = best_rate(threads, seconds, 64.0 * 64.0,
                             [](int64_t iters) { g_sink_f = dpbf16_loop_zmm(iters); });
        // bf16 products also run as fp32 FMAs on widened operands (exact),
        // which anvil does where vdpbf16ps is the slower of the two (Intel:
        // half the FMA's flops): the peak of bf16 work is the faster way.
        const peak_result fma = measure_fma_peak(threads, seconds);
        if (fma.gflops > r.gflops) {
            char text[160];
            std::snprintf(text, sizeof(text),
                          "vfmadd231ps zmm on bf16 widened to fp32 (faster here than vdpbf16ps zmm: %.1f GFLOP/s)",
                          r.gflops);
            r.probe = text;
            r.gflops = fma.gflops;
        }
        return r;
    }
    const bool zmm = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512f");
    const bool ymm = __builtin_cpu_supports("avxvnni");
    if (!zmm && !ymm) {
        r.probe = "n/a (no avx512_vnni or avx_vnni)";
        return r;
    }
    r.probe = zmm ? "vpdpbusd zmm, 16 independent accumulators"
                  : "vpdpbusd ymm (AVX-VNNI), 12 independent accumulators";
    r.gflops = best_rate(threads, seconds, zmm ? 64.0 * 128.0 : 48.0 * 64.0, [zmm](int64_t iters) {
        g_sink_u = zmm ? dpbusd_loop_zmm(iters) : dpbusd_loop_ymm(iters);
    });
#else
    (void)threads;
    (void)seconds;
    r.probe = kind == "bf16" ? "n/a (no avx512_bf16)" : "n/a (no avx512_vnni or avx_vnni)";
#endif
    return r;
}

double measure_read_gbps(int threads, size_t bytes, double seconds) {
    const size_t slice = bytes / size_t(threads) / 4096 * 4096;
    if (slice == 0) return 0;
    buffer buf(slice * size_t(threads));
    if (!buf.ok()) return 0;
    std::memset(buf.data(), 1, buf.bytes());
#if defined(ANVIL_BENCH_X86_PROBES)
    const bool avx2 = __builtin_cpu_supports("avx2");
#endif
    auto sweep = [&](int t) {
        const char *p = static_cast<const char *>(buf.data()) + size_t(t) * slice;
#if defined(ANVIL_BENCH_X86_PROBES)
        g_sink_u = avx2 ? read_sweep_avx2(p, slice) : read_sweep_scalar(p, slice);
#else
        g_sink_u = read_sweep_scalar(p, slice);
#endif
    };
    double best = 0;
    const double start = now_seconds();
    int runs = 0;
    while (runs < 3 || now_seconds() - start < seconds) {
        const double t = run_on_threads(threads, sweep);
        best = std::max(best, double(slice) * double(threads) / t * 1e-9);
        ++runs;
    }
    return best;
}

}  // namespace anvil_bench
