// The dot and row-stream kernels of gemm/dot.h per compiled Highway target, for tests
// (the driver takes gemm::dot_kernel(tier)).
#pragma once
#include <cstdint>

#include "gemm/dot.h"

namespace anvil::fallback {

// The dot kernel compiled for Highway target t (one HWY_* bit); null when
// this build's tables do not hold t.  Call it only on a CPU with t.
gemm::dot_fn dot_kernel_of_target(int64_t t);
// The row-stream kernel of target t, likewise.
gemm::stream_fn stream_kernel_of_target(int64_t t);

}  // namespace anvil::fallback
