// The "scalar" tier: the reference micro-kernel behind the backend interface.
#include "gemm/backend.h"
#include "ref/ref_ukernel.h"

namespace anvil::gemm {
namespace {

class scalar_backend_t final : public backend {
public:
    const char *name() const override { return "scalar"; }
    anvil_isa_t tier() const override { return anvil_isa_scalar; }
    // Small blocks: the scalar loops gain nothing from larger ones.
    int mr() const override { return 4; }
    int nr() const override { return 16; }
    anvil_status_t get(const ukernel_desc &desc, ukernel_ref *out) const override {
        if (desc.flags != 0 || desc.epi_ops != 0) return anvil_unsupported;  // no call flags here
        out->fn = ref::sgemm_ukernel;
        out->keep_alive.reset();
        out->name = "scalar_sgemm_generic";
        return anvil_success;
    }
};

}  // namespace

const backend *scalar_backend() {
    static const scalar_backend_t b;
    return &b;
}

}  // namespace anvil::gemm
