// A low-precision backend supplies lp micro-kernels (lp_ukernel.h) for one
// ISA tier.  The driver asks select_lp_backend(kind) for the best one the
// effective ISA allows.
#pragma once
#include <memory>
#include <string>

#include "anvil/anvil.h"
#include "lowp/lp_dot.h"
#include "lowp/lp_rowb.h"
#include "lowp/lp_ukernel.h"

namespace anvil::lowp {

struct lp_ukernel_ref {
    lp_ukernel_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;
    const char *name = "";
    // Tile kernels (AMX): the 64-byte tile configuration the calling thread
    // must have loaded (lp_backend::configure_thread) before calling fn;
    // static storage, so the pointer identifies it.  Null for the others.
    const void *tile_config = nullptr;
};

class lp_backend {
public:
    virtual ~lp_backend() = default;
    virtual const char *name() const = 0;  // "jit:avx512_core_vnni", "hwy:AVX2", "scalar", ...
    virtual anvil_isa_t tier() const = 0;
    virtual bool supports(lp_kind kind) const = 0;
    // Kernel for desc (1 <= m <= kMR, nv in {1, 2}, a supported kind).
    virtual anvil_status_t get(const lp_ukernel_desc &desc, lp_ukernel_ref *out) const = 0;
    // Whether get() accepts descriptors with a fused epilogue (epi_out != 0);
    // the others refuse them with anvil_unsupported.  Fused-epilogue
    // kernels also honour args.m_tiles (lp_ukernel.h).
    virtual bool supports_fused_epilogue() const { return false; }
    // Whether its kernels honour args.k_segs / a_seg_rs (lp_ukernel.h);
    // for the others a caller makes one call per segment.
    virtual bool supports_k_segments() const { return false; }
    // Whether its fused-epilogue kernels take lp_ukernel_desc::nt_store
    // (the others refuse descriptors with it).
    virtual bool supports_nt_store() const { return false; }
    // Whether get() takes lp_ukernel_desc::k_tail != 0 (the others refuse
    // descriptors with it).
    virtual bool supports_k_tail() const { return false; }
    // Whether get() takes bf16 descriptors with a_f32 (A widened to fp32,
    // lp_ukernel.h), and whether those kernels outrun the others here: the
    // driver then widens A for calls of a few rows or more (lp_driver.cpp).
    virtual bool accepts_widened_bf16_a() const { return false; }
    virtual bool prefers_widened_bf16_a() const { return false; }
    // Rows of the largest kernel get() accepts (desc.m <= max_rows()).
    virtual int max_rows() const { return kMR; }
    // Tile backends: load a kernel's tile_config on this thread (a no-op
    // when it is the one loaded last), and release the thread's tile state
    // when it leaves anvil's work.  No-ops for the others.
    virtual bool uses_tiles() const { return false; }
    virtual void configure_thread(const void *tile_config) const { (void)tile_config; }
    virtual void release_thread() const {}
    // Dot kernels (lp_dot.h: u8s8, and bf16 with fp32 sums; B stored N x K
    // read in place) that the backend supplies itself as static code
    // (Highway): the widest n of an m-row kernel of `kind` (0: none; the
    // JIT's u8s8 ones come from get_lp_dot_kernel) and the kernel for m
    // rows, n columns (null outside 1..dot_max_n(kind, m)).
    virtual int dot_max_n(lp_kind kind, int m) const {
        (void)kind;
        (void)m;
        return 0;
    }
    virtual lp_dot_fn dot_kernel(lp_kind kind, int m, int n) const {
        (void)kind;
        (void)m;
        (void)n;
        return nullptr;
    }
    // Row-B kernels (lp_rowb.h, B stored K x N read in place) that the
    // backend supplies itself (Highway): columns per call (0: none;
    // the JIT's come from get_lp_rowb_kernel) and the kernel for m rows,
    // which takes any n (null when m is out of range).
    virtual int rowb_cols(lp_kind kind) const {
        (void)kind;
        return 0;
    }
    virtual lp_rowb_fn rowb_kernel(lp_kind kind, int m) const {
        (void)kind;
        (void)m;
        return nullptr;
    }
    // Whether those kernels cost about the packed kernels' work per product
    // (false: more, so they pay off only where B streams from memory).
    virtual bool rowb_lean(lp_kind kind) const {
        (void)kind;
        return false;
    }
};

// Calls kernel k of backend be on args a (configuring tiles first if k is a
// tile kernel).
inline void call_lp_kernel(const lp_backend &be, const lp_ukernel_ref &k,
                           const lp_ukernel_args *a) {
    if (k.tile_config) be.configure_thread(k.tile_config);
    k.fn(a);
}

// Best backend for `kind` under the effective ISA.  Never null.
//   bf16: JIT AMX (amx; permission granted) > JIT (avx512_core_bf16) > Highway > scalar
//   u8s8: JIT AMX > JIT zmm (avx512_core_vnni) > JIT ymm AVX-VNNI (avx2 tier, CPU has
//         AVX-VNNI) > Highway > scalar
const lp_backend &select_lp_backend(lp_kind kind);
// Every backend usable for `kind` under the effective ISA, best first (tests).
// Each tier's own implementation; null when not built or the CPU lacks it
// (they do not look at the ISA cap: select_lp_backend does).
const lp_backend *jit_amx_lp_backend();     // null without AMX or its permission
// Whether AMX kernels can run here ("usable") or why not (no AMX in the CPU,
// XTILEDATA refused, no JIT tier in this build).  Asks the kernel for the
// permission on first use.
std::string amx_status();
const lp_backend *jit_avx512_lp_backend();  // bf16 needs avx512_bf16, u8s8 avx512_vnni
const lp_backend *jit_avx2_vnni_lp_backend();  // u8s8 only; null without AVX-VNNI
const lp_backend *highway_lp_backend();     // best Highway target the cap allows
const lp_backend *scalar_lp_backend();

// Tests: while set, select_lp_backend returns `be` for every kind it
// supports (the AMX tests run the driver on an emulated AMX backend).
// Null restores the normal choice.
void set_lp_backend_override(const lp_backend *be);

}  // namespace anvil::lowp
