// The dot and row-stream kernels (gemm/dot.h, gemm/stream.h) per compiled
// Highway target, for tests (the driver takes gemm::dot_kernel(tier) and
// gemm::stream_kernel(tier)).
#pragma once
#include <cstdint>

#include "gemm/dot.h"
#include "gemm/stream.h"

namespace anvil::fallback {

// The dot kernel compiled for Highway target t (one HWY_* bit); null when
// this build's tables do not hold t.  Call it only on a CPU with t.
gemm::dot_fn dot_kernel_of_target(int64_t t);
// The row-stream kernel of target t, likewise.
gemm::stream_fn stream_kernel_of_target(int64_t t);

}  // namespace anvil::fallback
