// The JIT depthwise backend (conv/dw_backend.h): AVX-512 on zmm, all four
// kinds.  Kernels are generated on first use and cached by descriptor, like
// the lp backends'.  The backend tests what the CPU has; the ISA cap is
// select_dw_backend's.
#include "cache/kernel_cache.h"
#include "conv/dw_backend.h"
#include "cpu/isa.h"
#include "jit/jit_conv_dw_avx512.h"
#include "jit/jit_front_cache.h"
#include "lowp/lp_ukernel.h"

namespace anvil::conv {
namespace {

bool detected(uint32_t features) { return (cpu::info().detected & features) == features; }

thread_local jit::front_cache t_front_dw_avx512;

class jit_avx512_dw_backend_t final : public dw_backend {
public:
    const char *name() const override { return "jit:avx512_dw"; }
    anvil_isa_t tier() const override { return anvil_isa_avx512_core; }
    bool supports_fused_epilogue() const override { return true; }
    // vpdpbusd needs the cap to allow AVX512-VNNI, vpermb the CPU to have
    // AVX512-VBMI.
    bool supports_byte_dot() const override {
        return (cpu::effective_features() & cpu::f_avx512_vnni) != 0 && cpu::info().avx512_vbmi;
    }
    bool supports_rows() const override { return true; }
    // vdpbf16ps needs the cap to allow AVX512-BF16.
    bool supports_bf16_pair_dot() const override {
        return (cpu::effective_features() & cpu::f_avx512_bf16) != 0;
    }
    anvil_status_t get(const dw_ukernel_desc &desc, dw_ukernel_ref *out) const override {
        if (!dw_desc_valid(desc)) return anvil_invalid_argument;
        const bool pair_dot = desc.kind == dw_kind::bf16 && dw_byte_dot_rows(desc.narrow_int) > 0;
        const bool byte_dot = !pair_dot && dw_byte_dot_rows(desc.narrow_int) > 0;
        if (byte_dot && !supports_byte_dot()) return anvil_unsupported;
        if (pair_dot && !supports_bf16_pair_dot()) return anvil_unsupported;
        // The descriptor as cached: this tier and no stray reserved bytes.
        // narrow_int row kernels use vpdpwssd where the cap allows VNNI
        // (the tier byte records it); otherwise the promise is dropped.
        const bool vnni = byte_dot || (desc.narrow_int && desc.row_taps > 0 &&
                                       (cpu::effective_features() & cpu::f_avx512_vnni) != 0);
        // A bf16 output is rounded by vcvtne2ps2bf16 where the cap allows
        // AVX512-BF16 (the tier byte records it; same bits, see
        // jit_conv_dw_avx512::store_bf16_fast).
        const bool bf16_out = (desc.epi & DW_EPI_OUT_MASK) == lowp::EPI_BF16 &&
                              (cpu::effective_features() & cpu::f_avx512_bf16) != 0;
        const anvil_isa_t tier = bf16_out || pair_dot ? anvil_isa_avx512_core_bf16
                                 : vnni   ? anvil_isa_avx512_core_vnni
                                          : anvil_isa_avx512_core;
        const dw_ukernel_desc d =
            make_dw_desc(uint8_t(tier), desc.kind,
                         desc.m, dw_has_zero_point(desc), desc.row_taps, desc.row_step,
                         byte_dot || pair_dot ? desc.narrow_int : vnni ? DW_INT_NARROW16 : 0, desc.epi,
                         (desc.flags & DW_FLAG_NO_SCALE) != 0);
        cache::kernel_ptr k;
        const anvil_status_t st =
            jit::cached_kernel<jit::jit_conv_dw_avx512>(t_front_dw_avx512, d, "conv_dw_avx512:", &k);
        if (st != anvil_success) return st;
        out->fn = reinterpret_cast<dw_ukernel_fn>(const_cast<void *>(k->entry()));
        out->name = k->name().c_str();
        out->keep_alive = k;
        return anvil_success;
    }
};

}  // namespace

const dw_backend *jit_avx512_dw_backend() {
    if (!detected(cpu::f_avx512_core)) return nullptr;
    static const jit_avx512_dw_backend_t b;
    return &b;
}

}  // namespace anvil::conv
