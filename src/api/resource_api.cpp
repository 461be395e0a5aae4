// Resource controls of the C API: the memory cap, per-thread scratch and
// the JIT failure policy (common/memory.h, common/jit_state.h).
#include "anvil/anvil.h"
#include "api/post_op_map.h"
#include "common/jit_state.h"
#include "common/memory.h"
#include "cpu/isa.h"
#include "gemm/driver.h"
#include "lowp/lp_scratch.h"

extern "C" {

anvil_status_t anvil_set_memory_cap(int64_t bytes) { return anvil::mem::set_cap(bytes); }

anvil_status_t anvil_get_memory_stats(anvil_memory_stats_t *stats) {
    if (!stats) return anvil_null_pointer;
    stats->cap = anvil::mem::cap();
    stats->in_use = anvil::mem::in_use();
    stats->peak = anvil::mem::peak();
    return anvil_success;
}

anvil_status_t anvil_release_thread_scratch(void) {
    anvil::gemm::release_thread_scratch();
    anvil::lowp::release_thread_scratch();
    return anvil_success;
}

anvil_status_t anvil_set_jit_failure_policy(anvil_jit_failure_policy_t policy) {
    const int v = anvil::api::enum_value(policy);  // C callers may pass any int
    if (v != anvil_jit_failure_fallback && v != anvil_jit_failure_error) return anvil_invalid_argument;
    return anvil::jit_state::set_policy(anvil_jit_failure_policy_t(v));
}

anvil_jit_failure_policy_t anvil_get_jit_failure_policy(void) {
    return anvil::jit_state::policy();
}

int anvil_jit_enabled(void) {
#if defined(ANVIL_HAVE_JIT)
    using namespace anvil::cpu;
    const uint32_t eff = effective_features(false);
    const bool tier = (eff & f_avx512_core) || (eff & (f_avx2 | f_avx2_vnni)) == (f_avx2 | f_avx2_vnni);
    return tier && anvil::jit_state::usable() ? 1 : 0;
#else
    return 0;
#endif
}

}  // extern "C"
