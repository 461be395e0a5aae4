// Picks the backend for the effective ISA: JIT from avx512_core up, Highway
// for avx2 (and any non-x86 CPU), scalar when capped to scalar
// (cpu::dispatch_tier).
#include "cpu/isa.h"
#include "common/jit_state.h"
#include "gemm/backend.h"

namespace anvil::gemm {

const backend *backend_for_tier(anvil_isa_t tier) {
    switch (tier) {
        case anvil_isa_amx:
        case anvil_isa_avx512_core_bf16:
        case anvil_isa_avx512_core_vnni:
        case anvil_isa_avx512_core:
            return jit_avx512_backend();
        case anvil_isa_avx2:
            return highway_backend_at(anvil_isa_avx2);
        case anvil_isa_scalar:
            return scalar_backend();
    }
    return nullptr;
}

const backend *non_jit_backend_with_nr(int nr) {
    if (cpu::dispatch_tier() >= anvil_isa_avx2)
        if (const backend *h = highway_backend(); h && h->nr() == nr) return h;
    const backend *s = scalar_backend();
    return s->nr() == nr ? s : nullptr;
}

const backend &select_backend() {
    const anvil_isa_t t = cpu::dispatch_tier();
    if (t >= anvil_isa_avx512_core && jit_state::usable()) {
        // Looked up once: asked only when the tier has avx512_core, where
        // it is never null (on x86-64 builds).
        static const backend *const jit = jit_avx512_backend();
        if (jit) return *jit;
    }
    if (t >= anvil_isa_avx2)
        if (const backend *b = highway_backend()) return *b;
    return *scalar_backend();
}

}  // namespace anvil::gemm
