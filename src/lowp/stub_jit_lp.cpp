// TEMPORARY stub until jit/jit_lp_backend.cpp lands: no JIT lp kernels.
#include "lowp/lp_backend.h"
namespace anvil::lowp {
const lp_backend *jit_avx512_lp_backend() { return nullptr; }
const lp_backend *jit_avx2_vnni_lp_backend() { return nullptr; }
}  // namespace anvil::lowp
