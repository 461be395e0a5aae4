// The AMX low-precision backend (lowp/lp_backend.h): tile kernels of up to
// 32 x 32 (jit_amx_lp.h) for bf16 (tdpbf16ps) and u8s8 (tdpbusd).  Tiles
// are configured per thread by the caller through configure_thread() and
// released with release_thread() (jit/amx_runtime.h).
#include "cpu/isa.h"
#include "jit/amx_runtime.h"
#include "jit/jit_amx_lp.h"
#include "jit/jit_front_cache.h"
#include "lowp/lp_backend.h"

namespace anvil::jit {

anvil_status_t get_amx_lp_kernel(const amx_lp_desc &d, cache::kernel_ptr *out) {
    if (!amx_lp_desc_valid(d)) return anvil_invalid_argument;
    thread_local front_cache front;
    return cached_kernel<jit_amx_lp>(front, d, "lp_amx:", out);
}

}  // namespace anvil::jit

namespace anvil::lowp {
namespace {

class jit_amx_lp_backend_t final : public lp_backend {
public:
    const char *name() const override { return "jit:amx"; }
    anvil_isa_t tier() const override { return anvil_isa_amx; }
    bool supports(lp_kind kind) const override {
        return kind == lp_kind::bf16 || kind == lp_kind::u8s8;  // the getter checked the CPU
    }
    anvil_status_t get(const lp_ukernel_desc &desc, lp_ukernel_ref *out) const override {
        if (desc.m < 1 || desc.m > jit::kAmxMaxRows || desc.nv < 1 || desc.nv > 2 ||
            desc.accumulate > 1 || (desc.kind != lp_kind::bf16 && desc.kind != lp_kind::u8s8))
            return anvil_invalid_argument;
        // The epilogue runs after the tile store; tiles read bf16 A as is.
        if (desc.epi_out != EPI_NONE || desc.a_f32 || desc.k_tail) return anvil_unsupported;
        cache::kernel_ptr k;
        const anvil_status_t st = jit::get_amx_lp_kernel(
            jit::make_amx_lp_desc(desc.kind, desc.m, desc.nv, desc.accumulate != 0), &k);
        if (st != anvil_success) return st;
        out->fn = reinterpret_cast<lp_ukernel_fn>(const_cast<void *>(k->entry()));
        out->name = k->name().c_str();
        out->keep_alive = k;
        out->tile_config = jit::amx_lp_tile_config(desc.m, desc.nv);
        return anvil_success;
    }
    int max_rows() const override { return jit::kAmxMaxRows; }
    bool uses_tiles() const override { return true; }
    void configure_thread(const void *cfg) const override { jit::amx::configure(cfg); }
    void release_thread() const override { jit::amx::release(); }
};

}  // namespace

std::string amx_status() { return jit::amx::request_permission().reason; }

const lp_backend *jit_amx_lp_backend() {
    if (!jit::amx::request_permission().usable) return nullptr;
    static const jit_amx_lp_backend_t b;
    return &b;
}

}  // namespace anvil::lowp
