// What the low-precision driver would do for a problem, as text (for
// anvil_explain_gemm / anvil-info --explain); nothing is computed and no
// memory is taken.
#pragma once
#include <string>

#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"

namespace anvil::lowp {

// One line: the path (in-place small-M kernels or packed), the blocking,
// the threads and how B is packed.  p.packed_b non-null means prepacked
// weights (the matmul handle's path).
std::string explain_lp_gemm(const lp_backend &be, const lp_problem &p);

}  // namespace anvil::lowp
