// The store fence that follows non-temporal stores.
#pragma once

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#endif

namespace anvil::cpu {

// Non-temporal stores (the kernels' nt_store / kUkFlagNtStore modes) are
// weakly ordered: another thread may see a later ordinary store -- the
// worker's "done" in a thread pool, the caller's hand-over of dst -- before
// them.  The kernels do not fence (one sfence per call drained the write-
// combining buffers after every tile row and cost 13% of a 1x1 conv over
// 16 channels, see docs/conv.md); the driver that ran them calls this once
// before its thread's share of the work counts as done.  A no-op where no
// kernel stores non-temporally.
inline void store_fence() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
    _mm_sfence();
#endif
}

}  // namespace anvil::cpu
