// A backend supplies micro-kernels of the ukernel contract for one ISA tier
// (JIT AVX-512, Highway, scalar).  The driver asks it for the register block
// (mr x nr) and for one kernel per tile kind.
#pragma once
#include <memory>
#include <string>

#include "anvil/anvil.h"
#include "gemm/ukernel.h"

namespace anvil::gemm {

// A callable kernel plus whatever keeps its code alive.  name points into
// the kernel (or a literal) and stays valid while keep_alive is held.
struct ukernel_ref {
    ukernel_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
    const char *name = "";
};

struct direct_kernel_ref {
    direct_gemm_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
    const char *name = "";
};

class backend {
public:
    virtual ~backend() = default;
    virtual const char *name() const = 0;   // e.g. "jit:avx512_core", "hwy:AVX2", "scalar"
    virtual anvil_isa_t tier() const = 0;
    virtual int mr() const = 0;              // max rows per kernel call
    virtual int nr() const = 0;              // packed panel width (multiple of the lane count)
    // Widest tile a kernel of height m supports when B is read in place
    // (any row stride): wider tiles stream more contiguous bytes per B row,
    // which is what the small-M, bandwidth-bound calls need.  >= nr().
    virtual int max_n(int m) const { (void)m; return nr(); }
    // When a row-major B is read in place instead of copied into panels
    // (gemm/blocking.cpp): up to max_rows rows of C, each kc x panel strip
    // of B is read from memory by the first row tile and from cache by the
    // others; kc_cap (0: none) shortens the K blocks then.  The defaults
    // suit kernels with few accumulators (Highway): beyond 16 rows their
    // many row tiles re-read strips that a 4 KiB-multiple row stride keeps
    // out of L1 (measured AVX2, 64x4096x4096: 0.32x oneDNN in place, 0.47x
    // packed).
    // Up to few_rows rows with a B larger than half of L3 (streamed from
    // memory): kc_cap_few_rows, fewer concurrent row streams, which the
    // hardware prefetchers keep up with (AVX2, Zen 1, 1 thread, kc 64 ->
    // 16: 4x4096x4096 NN 0.86x -> 1.2x dnnl_sgemm, 4x11008x4096 0.70x ->
    // 0.92x, 3x11008x4096 0.77x -> 1.1x).  With more rows the kernels are
    // compute-bound and the passes over C that short K blocks add cost
    // more (5x11008x4096: 1.05x at kc 64, 0.85x at 16), as they do when B
    // comes from L3 (4x512x512: 1.17x at 64, 0.76x at 16).
    // A B whose row stride is not a multiple of 2 KiB spreads its strips
    // over L1's and L2's sets, so in place it serves up to max_rows_spread
    // rows, in K blocks of at most kc_cap_spread beyond max_rows: packing
    // a B used by so few rows costs more than the product saves (AVX2,
    // Zen 1, 1 thread: 32x11008x4096 NN 0.70x -> 0.98x dnnl_sgemm,
    // 20x3000x3000 0.69x -> 1.0x, 48x4099x1000 0.75x -> 0.91x,
    // 128x768x768 0.90x -> 1.04x; with ldb = 3072 or 4096 packing stays
    // faster, 32x4096x4096 1.15x vs 1.05x).
    struct in_place_b_policy {
        int64_t max_rows = 16;
        int64_t kc_cap = 64;
        int64_t few_rows = 4;
        int64_t kc_cap_few_rows = 16;
        int64_t max_rows_spread = 128;
        int64_t kc_cap_spread = 128;
        // K blocks at most this long (0: no cap of its own) when the rows
        // of an in-place B alias in L1 (a stride that is a multiple of
        // 2 KiB), for any M up to the in-place limit; the smaller cap wins.
        int64_t kc_cap_aliased = 0;
    };
    virtual in_place_b_policy in_place_b() const { return {}; }
    // Whether get() makes kernels with kUkFlagKSegments and kUkFlagRowTiles
    // (ukernel.h).
    virtual bool supports_k_segments() const { return false; }
    // Kernel for a tile; 1 <= desc.m <= mr(), 1 <= desc.n <= max_n(desc.m).
    virtual anvil_status_t get(const ukernel_desc &desc, ukernel_ref *out) const = 0;
    // A kernel for a whole small GEMM (see small_gemm_desc), or
    // anvil_unsupported when the backend has none (the driver then tiles).
    virtual anvil_status_t get_small(const small_gemm_desc &desc, ukernel_ref *out) const {
        (void)desc;
        (void)out;
        return anvil_unsupported;
    }
    // The direct kernel of a whole small GEMM (see direct_gemm_desc), or
    // anvil_unsupported when the backend makes none (only the JIT does:
    // a plain function pointer needs code made for the shape).  out->fn is
    // valid while out->keep_alive lives.
    virtual anvil_status_t get_direct(const direct_gemm_desc &desc, direct_kernel_ref *out) const {
        (void)desc;
        (void)out;
        return anvil_unsupported;
    }
};

// The backend for the current effective ISA (scalar < avx2 (Highway) <
// avx512_core (JIT)).  Never null.
const backend &select_backend();
// A specific one, for tests and anvil-info; null when this CPU/build lacks it.
const backend *backend_for_tier(anvil_isa_t tier);
// The best backend that generates no code and packs B in panels `nr` wide
// (a plan's packed B after the JIT was turned off); null when none does.
const backend *non_jit_backend_with_nr(int nr);

// Implemented by each tier (defined in jit/, fallback/, ref/).
const backend *jit_avx512_backend();   // null when not built (non-x86) or CPU lacks AVX-512
const backend *highway_backend();      // best Highway target allowed by the ISA cap
const backend *highway_backend_at(anvil_isa_t tier);  // ... allowed by `tier` instead
const backend *scalar_backend();

}  // namespace anvil::gemm
