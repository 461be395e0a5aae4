// anvil-bench: this CPU's measured fp32 FMA peak, low-precision dot-product
// peaks and read bandwidth.
//
// The FMA probe runs vfmadd231ps on 16 independent zmm accumulators (AVX-512
// CPUs) or 12 ymm accumulators (AVX2 + FMA), 64 / 48 FMAs per loop iteration,
// on every requested thread at once; the best of several short runs is the
// peak.  The low-precision probes work the same way with vdpbf16ps zmm
// (bf16: 64 flop per instruction) and vpdpbusd zmm (int8: 128 ops; the
// AVX-VNNI ymm form, 64 ops, with 12 accumulators where only that exists).  The read sweep streams a buffer (256 MiB by default, split between
// the threads) and reports the best pass in GB/s.  Nothing is pinned.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace anvil_bench {

struct peak_result {
    std::string probe;    // "zmm vfmadd231ps x16 acc" ...
    int threads = 1;
    double gflops = 0;
};

peak_result measure_fma_peak(int threads, double seconds);
// kind "bf16" or "int8".  gflops == 0 and probe "n/a (...)" when the CPU
// lacks avx512_bf16 (bf16) or both avx512_vnni and avx_vnni (int8).
peak_result measure_lowp_peak(const std::string &kind, int threads, double seconds);
double measure_read_gbps(int threads, size_t bytes, double seconds);

// Per-ISA loops (compiled with -mavx512f -mfma / -mavx2 -mfma in their own
// files).  Return a value derived from the accumulators so nothing is dropped.
float fma_loop_zmm(int64_t iters);   // iters * 64 zmm FMAs (32 flop each)
float fma_loop_ymm(int64_t iters);   // iters * 48 ymm FMAs (16 flop each)
float dpbf16_loop_zmm(int64_t iters);     // iters * 64 vdpbf16ps zmm (64 flop each)
uint64_t dpbusd_loop_zmm(int64_t iters);  // iters * 64 vpdpbusd zmm (128 ops each)
uint64_t dpbusd_loop_ymm(int64_t iters);  // iters * 48 VEX vpdpbusd ymm (64 ops each)
uint64_t read_sweep_avx2(const void *p, size_t bytes);

}  // namespace anvil_bench
