// The JIT depthwise backend for builds without the JIT tier (non-x86):
// none, so select_dw_backend() takes Highway or scalar.
#if !defined(ANVIL_HAVE_JIT)
#include "conv/dw_backend.h"

namespace anvil::conv {

const dw_backend *jit_avx512_dw_backend() { return nullptr; }

}  // namespace anvil::conv
#endif
