// What the JIT tier provides, for builds without it (non-x86): nothing, so
// callers take their portable paths.
#if !defined(ANVIL_HAVE_JIT)
#include "lowp/bf16_convert.h"

namespace anvil::lowp {

jit_convert_fn jit_bf16_convert_kernel(bool) { return nullptr; }

}  // namespace anvil::lowp
#endif
