// Picks the dw backend for the effective ISA (see dw_backend.h).
#include "common/jit_state.h"
#include "conv/dw_backend.h"
#include "cpu/isa.h"

namespace anvil::conv {

const dw_backend &select_dw_backend() {
    const uint32_t eff = cpu::effective_features();
    if ((eff & cpu::f_avx512_core) && jit_state::usable())
        if (const dw_backend *b = jit_avx512_dw_backend()) return *b;
    if (cpu::dispatch_tier() != anvil_isa_scalar)
        if (const dw_backend *b = highway_dw_backend()) return *b;
    return *scalar_dw_backend();
}

}  // namespace anvil::conv
