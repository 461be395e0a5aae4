#include "anvil/anvil.h"
#include "api/post_op_map.h"
#include "cpu/isa.h"

extern "C" {

// Enum arguments are read as ints: C callers may pass any value.
anvil_status_t anvil_set_max_isa(anvil_isa_t isa) {
    const int v = anvil::api::enum_value(isa);
    if (v < anvil_isa_scalar || v > anvil_isa_amx) return anvil_invalid_argument;
    return anvil::cpu::set_max_isa(anvil_isa_t(v));
}

anvil_isa_t anvil_get_effective_isa(void) { return anvil::cpu::effective_tier(false); }

anvil_isa_t anvil_get_detected_isa(void) {
    return anvil::cpu::highest_tier(anvil::cpu::info().detected);
}

const char *anvil_isa_name(anvil_isa_t isa) {
    switch (anvil::api::enum_value(isa)) {
        case anvil_isa_scalar: return "scalar";
        case anvil_isa_avx2: return "avx2";
        case anvil_isa_avx512_core: return "avx512_core";
        case anvil_isa_avx512_core_vnni: return "avx512_core_vnni";
        case anvil_isa_avx512_core_bf16: return "avx512_core_bf16";
        case anvil_isa_amx: return "amx";
    }
    return nullptr;
}

}
