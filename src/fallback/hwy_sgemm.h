// The Highway backend: fp32 micro-kernels of the ukernel contract compiled
// once per Highway target (dynamic dispatch), for the "avx2" ISA tier and for
// every CPU the JIT does not serve.  gemm::highway_backend() (backend.h) is
// the driver's entry point; what is declared here is for tests and tools.
#pragma once
#include <cstdint>
#include <vector>

#include "anvil/anvil.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"

namespace anvil::fallback {

// The kernels of one compiled Highway target.
struct hwy_target_kernels {
    int64_t target = 0;          // one HWY_* target bit (HWY_AVX2, HWY_EMU128, ...)
    const char *name = nullptr;  // hwy::TargetName(target)
    int mr = 0;                  // rows of the register block
    int nr = 0;                  // columns: two vectors
    // Kernel for an m x n tile (1 <= m <= mr, 1 <= n <= nr), nullptr
    // outside that range.  The kernel reads n, alpha, beta and the A layout
    // from its ukernel_args, so it serves any n in 1..nr, not only the n it
    // was fetched for.  Call it only on a CPU that supports `target`.
    gemm::ukernel_fn (*get)(int m, int n) = nullptr;
};

// Every target compiled into this library that hwy::SupportedTargets()
// reports for this CPU (so SetSupportedTargetsForTest narrows it), best
// first.  Never empty: the SIMD-free fallback is always there (EMU128, or
// SCALAR where Highway considers EMU128 broken, e.g. GCC < 12.3).
std::vector<hwy_target_kernels> compiled_targets();

// The Highway targets an anvil ISA tier permits (a mask of HWY_* bits):
// below avx512_core nothing that executes AVX-512 (on x86: AVX2, SSE4
// and the fallback); the scalar tier only the SIMD-free fallback.
int64_t allowed_targets(anvil_isa_t tier);

// hwy::SupportedTargets() as first asked (a snapshot: see hwy_sgemm.cc);
// the other Highway kernel files pick their targets from it too.
int64_t supported_targets_once();

// The backend highway_backend() returns when the CPU supports the targets in
// `supported` (an hwy::SupportedTargets()-style mask) and the effective tier
// is `tier`: the best compiled target in both.  Null when there is none.
// Exposed so tests can check the cap logic for CPUs other than this one.
const gemm::backend *highway_backend_for(int64_t supported, anvil_isa_t tier);

}  // namespace anvil::fallback
