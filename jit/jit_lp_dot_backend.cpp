// get_lp_dot_kernel (lowp/lp_dot.h): the AVX-512 VNNI dot kernels, generated
// on first use and cached by descriptor like the lp micro-kernels
// (jit_lp_backend.cpp): a per-thread front cache, then the shared cache.
#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "jit/jit_front_cache.h"
#include "jit/jit_lp_dot_avx512.h"
#include "lowp/lp_dot.h"

namespace anvil::lowp {
namespace {

constexpr uint32_t kNeeds = cpu::f_avx512_core | cpu::f_avx512_vnni;

thread_local jit::front_cache t_front_dot;

}  // namespace

anvil_status_t get_lp_dot_kernel(const lp_dot_desc &desc, lp_dot_fn *fn,
                                 std::shared_ptr<const void> *keep_alive) {
    if (!fn || !keep_alive || !lp_dot_shape_ok(desc)) return anvil_invalid_argument;
    if (desc.tier > anvil_isa_amx ||
        (cpu::tier_features(anvil_isa_t(desc.tier)) & kNeeds) != kNeeds)
        return anvil_unsupported;
    // What the CPU has, not the cap: the driver applies the cap.
    if ((cpu::info().detected & kNeeds) != kNeeds) return anvil_unsupported;

    // As cached: one kernel per shape whatever tier asked for it, and no
    // stray reserved bytes.
    const lp_dot_desc d = make_lp_dot_desc(uint8_t(anvil_isa_avx512_core_vnni), desc.m, desc.n);
    cache::kernel_ptr k;
    const anvil_status_t st = jit::cached_kernel<jit::jit_lp_dot_avx512>(t_front_dot, d, "lp_dot_avx512:", &k);
    if (st != anvil_success) return st;
    *fn = reinterpret_cast<lp_dot_fn>(const_cast<void *>(k->entry()));
    *keep_alive = k;
    return anvil_success;
}

}  // namespace anvil::lowp
