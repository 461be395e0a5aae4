// get_lp_rowb_kernel (lowp/lp_rowb.h): the AVX-512 VNNI / BF16 rowb kernels, generated
// on first use and cached by descriptor like the lp micro-kernels
// (jit_lp_backend.cpp): a per-thread front cache, then the shared cache.
#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "jit/jit_front_cache.h"
#include "jit/jit_lp_rowb_avx512.h"
#include "lowp/lp_rowb.h"

namespace anvil::lowp {
namespace {

constexpr uint32_t kNeedsInt8 = cpu::f_avx512_core | cpu::f_avx512_vnni;
constexpr uint32_t kNeedsBf16 = cpu::f_avx512_core | cpu::f_avx512_bf16;

thread_local jit::front_cache t_front_rowb;

}  // namespace

anvil_status_t get_lp_rowb_kernel(const lp_rowb_desc &desc, lp_rowb_fn *fn,
                                 std::shared_ptr<const void> *keep_alive) {
    if (!fn || !keep_alive || !lp_rowb_shape_ok(desc)) return anvil_invalid_argument;
    const bool bf16 = desc.bf16 != 0;
    const uint32_t needs = bf16 ? kNeedsBf16 : kNeedsInt8;
    if (desc.tier > anvil_isa_amx ||
        (cpu::tier_features(anvil_isa_t(desc.tier)) & needs) != needs)
        return anvil_unsupported;
    // What the CPU has, not the cap: the driver applies the cap.
    if ((cpu::info().detected & needs) != needs) return anvil_unsupported;

    // As cached: one kernel per shape whatever tier asked for it, and no
    // stray reserved bytes.
    const lp_rowb_desc d = make_lp_rowb_desc(
        uint8_t(bf16 ? anvil_isa_avx512_core_bf16 : anvil_isa_avx512_core_vnni), desc.m, desc.n, bf16, desc.add != 0);
    cache::kernel_ptr k;
    const anvil_status_t st = jit::cached_kernel<jit::jit_lp_rowb_avx512>(t_front_rowb, d, "lp_rowb_avx512:", &k);
    if (st != anvil_success) return st;
    *fn = reinterpret_cast<lp_rowb_fn>(const_cast<void *>(k->entry()));
    *keep_alive = k;
    return anvil_success;
}

}  // namespace anvil::lowp
