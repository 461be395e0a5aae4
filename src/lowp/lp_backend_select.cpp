// Picks the lp backend for the effective ISA (see lp_backend.h).
#include "common/jit_state.h"
#include "cpu/isa.h"
#include "lowp/lp_backend.h"

#include <atomic>

namespace anvil::lowp {

// With the JIT off (common/jit_state.h) the tiers only the JIT serves are
// treated as absent, which leaves Highway (or scalar).
constexpr uint32_t kJitOnlyFeatures = cpu::f_avx512_core | cpu::f_avx2_vnni;

namespace {
std::atomic<const lp_backend *> g_override{nullptr};
}  // namespace

void set_lp_backend_override(const lp_backend *be) { g_override.store(be); }

const lp_backend &select_lp_backend(lp_kind kind) {
    if (const lp_backend *o = g_override.load(std::memory_order_relaxed); o && o->supports(kind))
        return *o;
    const uint32_t eff = jit_state::usable() ? cpu::effective_features()
                                             : cpu::effective_features() & ~kJitOnlyFeatures;
    const uint32_t need_jit = cpu::f_avx512_core |
        (kind == lp_kind::bf16 ? uint32_t(cpu::f_avx512_bf16) : uint32_t(cpu::f_avx512_vnni));
    const uint32_t need_amx = cpu::f_amx_tile |
        (kind == lp_kind::bf16 ? uint32_t(cpu::f_amx_bf16) : uint32_t(cpu::f_amx_int8));
    if (jit_state::usable() && (eff & need_amx) == need_amx)
        if (const lp_backend *b = jit_amx_lp_backend(); b && b->supports(kind)) return *b;
    if ((eff & need_jit) == need_jit)
        if (const lp_backend *b = jit_avx512_lp_backend(); b && b->supports(kind)) return *b;
    if (kind == lp_kind::u8s8 && (eff & (cpu::f_avx2 | cpu::f_avx2_vnni)) == (cpu::f_avx2 | cpu::f_avx2_vnni))
        if (const lp_backend *b = jit_avx2_vnni_lp_backend(); b && b->supports(kind)) return *b;
    if (cpu::dispatch_tier() != anvil_isa_scalar)
        if (const lp_backend *b = highway_lp_backend(); b && b->supports(kind)) return *b;
    return *scalar_lp_backend();
}

}  // namespace anvil::lowp
