// What the JIT tier provides, for builds without it (non-x86): nothing, so
// callers take their portable paths (Highway, scalar).
#if !defined(ANVIL_HAVE_JIT)
#include "gemm/backend.h"
#include "lowp/bf16_convert.h"
#include "lowp/lp_backend.h"

namespace anvil::lowp {

jit_convert_fn jit_bf16_convert_kernel(bool) { return nullptr; }
const lp_backend *jit_amx_lp_backend() { return nullptr; }
std::string amx_status() { return "no JIT tier in this build"; }
const lp_backend *jit_avx512_lp_backend() { return nullptr; }
const lp_backend *jit_avx2_vnni_lp_backend() { return nullptr; }

}  // namespace anvil::lowp

namespace anvil::gemm {

const backend *jit_avx512_backend() { return nullptr; }

}  // namespace anvil::gemm
#endif
