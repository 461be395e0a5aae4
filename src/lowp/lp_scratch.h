// Per-thread scratch memory of the lp GEMM paths: 64-byte aligned buffers
// that only grow, one per thread and purpose, taken by the calling thread
// before a call writes anything (so running out of memory leaves C
// untouched) and shared with its workers for the duration of the call.
#pragma once
#include <cstdint>

#include "common/memory.h"

namespace anvil::lowp {

// get(bytes): at least `bytes` bytes, 64-byte aligned, or nullptr when
// allocation fails or would exceed the memory cap (common/memory.h).
using scratch = mem::growing_buffer;

scratch &scratch_acc();    // accumulator slots (one per worker)
scratch &scratch_apack();  // packed A + row sums
scratch &scratch_bpack();  // packed B + column sums
void release_thread_scratch();  // frees all three of this thread's

}  // namespace anvil::lowp
