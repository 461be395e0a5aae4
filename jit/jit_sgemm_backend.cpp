// The JIT AVX-512 fp32 backend: kernels generated on first use, cached by
// descriptor.
#include <cstring>

#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "gemm/backend.h"
#include "jit/jit_sgemm_avx512.h"

namespace anvil::gemm {
namespace {

std::string cache_key(const ukernel_desc &d) {
    // "sgemm" + the descriptor bytes: distinct ops never share keys.
    std::string key = "sgemm:";
    key.append(reinterpret_cast<const char *>(&d), sizeof(d));
    return key;
}

class jit_avx512_backend_t final : public backend {
public:
    const char *name() const override { return "jit:avx512_core"; }
    anvil_isa_t tier() const override { return anvil_isa_avx512_core; }
    int mr() const override { return jit::jit_sgemm_avx512::kMaxM; }
    int nr() const override { return jit::jit_sgemm_avx512::kMaxN; }

    anvil_status_t get(const ukernel_desc &desc, ukernel_ref *out) const override {
        if (desc.m < 1 || desc.m > mr() || desc.n < 1 || desc.n > nr())
            return anvil_invalid_argument;
        ukernel_desc d = desc;
        d.tier = uint8_t(anvil_isa_avx512_core);
        cache::kernel_ptr k;
        anvil_status_t st = cache::get_or_generate(
            cache_key(d),
            [&](cache::kernel_ptr *made) -> anvil_status_t {
                try {
                    jit::jit_sgemm_avx512 gen(d);
                    return gen.finalize(jit::jit_sgemm_avx512::kernel_name(d), made);
                } catch (const Xbyak::Error &) {
                    return anvil_jit_error;
                } catch (const std::bad_alloc &) {
                    return anvil_out_of_memory;
                }
            },
            &k);
        if (st != anvil_success) return st;
        out->fn = reinterpret_cast<ukernel_fn>(const_cast<void *>(k->entry()));
        out->name = k->name();
        out->keep_alive = k;
        return anvil_success;
    }
};

}  // namespace

const backend *jit_avx512_backend() {
    if (!cpu::has(cpu::f_avx512_core)) return nullptr;
    static const jit_avx512_backend_t b;
    return &b;
}

}  // namespace anvil::gemm
