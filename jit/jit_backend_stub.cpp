// Temporary until the JIT backend lands.
#include "gemm/backend.h"
namespace anvil::gemm {
const backend *jit_avx512_backend() { return nullptr; }
}
