// The JIT low-precision backends (lowp/lp_backend.h): AVX-512 on zmm (bf16
// and/or u8s8, as the CPU allows) and AVX-VNNI on ymm (u8s8).  Kernels are
// generated on first use and cached by descriptor, like the fp32 backend's.
// The backends test what the CPU has; the ISA cap is select_lp_backend's.
#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "jit/jit_front_cache.h"
#include "jit/jit_lp_avx2_vnni.h"
#include "jit/jit_lp_avx512.h"
#include "lowp/lp_backend.h"

namespace anvil::lowp {
namespace {

bool detected(uint32_t features) { return (cpu::info().detected & features) == features; }

bool valid_epi_ops(const lp_ukernel_desc &d) {
    const uint8_t ops = d.epi_ops;
    if ((ops & ~(EPI_ADD_MASK | EPI_ADD_LATE | EPI_ELT_MASK | EPI_BIN_MUL)) != 0) return false;
    // A multiply takes a tensor operand (f32 / bf16), not a sum's.
    if ((ops & EPI_BIN_MUL) && ((ops & EPI_ADD_MASK) == EPI_ADD_NONE || (ops & EPI_ADD_MASK) == EPI_ADD_SUM))
        return false;
    if ((ops & EPI_ELT_MASK) > EPI_ELT_CLIP) return false;
    // A sum reads dst in its own type: f32, bf16, u8 or s8 (not s32).
    if ((ops & EPI_ADD_MASK) == EPI_ADD_SUM && (d.epi_out == EPI_NONE || d.epi_out == EPI_S32)) return false;
    // One eltwise op at most.
    return !((ops & EPI_ELT_MASK) && (d.epi_flags & (EPI_RELU | EPI_LEAKY)));
}

bool valid_shape(const lp_ukernel_desc &d) {
    return d.m >= 1 && d.m <= kMR && d.nv >= 1 && d.nv <= 2 && d.accumulate <= 1 &&
           (d.kind == lp_kind::bf16 || d.kind == lp_kind::u8s8) && d.epi_out <= EPI_S32 &&
           (d.epi_out != EPI_S32 ||
            (d.kind == lp_kind::u8s8 && (d.epi_flags & ~EPI_COMP) == 0 && d.epi_ops == 0)) &&
           d.epi_flags < 128 && valid_epi_ops(d) &&
           !((d.epi_flags & EPI_SCALE_1) && (d.epi_flags & EPI_SCALE_N)) &&
           !((d.epi_flags & EPI_RELU) && (d.epi_flags & EPI_LEAKY)) &&
           !(d.kind == lp_kind::bf16 && (d.epi_flags & EPI_COMP)) &&
           (!d.a_f32 || d.kind == lp_kind::bf16) && (!d.nt_store || d.epi_out != EPI_NONE) &&
           (!d.k_tail || d.kind == lp_kind::bf16) && d.unused_bits == 0;
}

// The descriptor as cached: the kernel's tier and no stray reserved bytes.
lp_ukernel_desc normalized(const lp_ukernel_desc &desc, anvil_isa_t tier) {
    lp_ukernel_desc d = make_lp_epi_desc(uint8_t(tier), desc.kind, desc.m, desc.nv,
                                         desc.accumulate != 0, desc.epi_out, desc.epi_flags,
                                         desc.epi_ops, desc.a_f32 != 0, desc.nt_store != 0);
    d.k_tail = desc.k_tail;
    return d;
}

// This thread's front cache (each backend has its own), then the shared
// cache, generating with Gen on a miss.
template <typename Gen>
anvil_status_t lookup(jit::front_cache &front, const lp_ukernel_desc &d, const char *key_prefix,
                      lp_ukernel_ref *out) {
    cache::kernel_ptr k;
    const anvil_status_t st = jit::cached_kernel<Gen>(front, d, key_prefix, &k);
    if (st != anvil_success) return st;
    out->fn = reinterpret_cast<lp_ukernel_fn>(const_cast<void *>(k->entry()));
    out->name = k->name().c_str();
    out->keep_alive = k;
    return anvil_success;
}

thread_local jit::front_cache t_front_avx512;
thread_local jit::front_cache t_front_avx2_vnni;

class jit_avx512_lp_backend_t final : public lp_backend {
public:
    const char *name() const override { return "jit:avx512_lp"; }
    anvil_isa_t tier() const override {
        return detected(cpu::f_avx512_bf16) ? anvil_isa_avx512_core_bf16
                                            : anvil_isa_avx512_core_vnni;
    }
    bool supports(lp_kind kind) const override {
        return detected(cpu::f_avx512_core |
                        (kind == lp_kind::bf16 ? cpu::f_avx512_bf16 : cpu::f_avx512_vnni));
    }
    anvil_status_t get(const lp_ukernel_desc &desc, lp_ukernel_ref *out) const override {
        if (!valid_shape(desc)) return anvil_invalid_argument;
        if (!supports(desc.kind)) return anvil_unsupported;
        const anvil_isa_t t = desc.kind == lp_kind::bf16 ? anvil_isa_avx512_core_bf16
                                                         : anvil_isa_avx512_core_vnni;
        return lookup<jit::jit_lp_avx512>(t_front_avx512, normalized(desc, t), "lp_avx512:", out);
    }
    bool supports_fused_epilogue() const override { return true; }
    bool supports_k_segments() const override { return true; }
    bool supports_nt_store() const override { return true; }
    bool supports_k_tail() const override { return true; }
    bool accepts_widened_bf16_a() const override { return supports(lp_kind::bf16); }
    bool prefers_widened_bf16_a() const override {
        return supports(lp_kind::bf16) && cpu::info().bf16_dot_half_rate;
    }
    // bf16 dot kernels (B transposed, read in place by small M): there are
    // no JIT ones, so the best Highway target's (AVX-512 ones on this
    // tier), which give the packed kernels' bits.  Without them a bf16
    // call with B 'T' packed all of B on every call: 1x4096x4096 ran at
    // 0.45x oneDNN's bf16 matmul (PyTorch's [out, in] weights at batch 1).
    // u8s8 keeps the JIT's own dot kernels (get_lp_dot_kernel): 0 here.
    int dot_max_n(lp_kind kind, int m) const override {
        const lp_backend *hwy = kind == lp_kind::bf16 ? highway_lp_backend() : nullptr;
        return hwy ? hwy->dot_max_n(kind, m) : 0;
    }
    lp_dot_fn dot_kernel(lp_kind kind, int m, int n) const override {
        const lp_backend *hwy = kind == lp_kind::bf16 ? highway_lp_backend() : nullptr;
        return hwy ? hwy->dot_kernel(kind, m, n) : nullptr;
    }
};

class jit_avx2_vnni_lp_backend_t final : public lp_backend {
public:
    const char *name() const override { return "jit:avx2_vnni_lp"; }
    anvil_isa_t tier() const override { return anvil_isa_avx2; }
    bool supports(lp_kind kind) const override {
        return kind == lp_kind::u8s8 && detected(cpu::f_avx2 | cpu::f_avx2_vnni);
    }
    anvil_status_t get(const lp_ukernel_desc &desc, lp_ukernel_ref *out) const override {
        if (!valid_shape(desc)) return anvil_invalid_argument;
        if (!supports(desc.kind) || desc.epi_out != EPI_NONE || desc.a_f32 || desc.nt_store ||
            desc.k_tail)
            return anvil_unsupported;
        return lookup<jit::jit_lp_avx2_vnni>(t_front_avx2_vnni, normalized(desc, anvil_isa_avx2),
                                             "lp_avx2vnni:", out);
    }
};

}  // namespace

const lp_backend *jit_avx512_lp_backend() {
    if (!detected(cpu::f_avx512_core) ||
        !(cpu::info().detected & (cpu::f_avx512_bf16 | cpu::f_avx512_vnni)))
        return nullptr;
    static const jit_avx512_lp_backend_t b;
    return &b;
}

const lp_backend *jit_avx2_vnni_lp_backend() {
    if (!detected(cpu::f_avx2 | cpu::f_avx2_vnni)) return nullptr;
    static const jit_avx2_vnni_lp_backend_t b;
    return &b;
}

}  // namespace anvil::lowp
