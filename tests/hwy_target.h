// ANVIL_TEST_HWY_TARGET=<name> (tests/main.cpp): the test binary restricts
// Highway to one target (plus the SIMD-free fallbacks) with
// hwy::SetSupportedTargetsForTest before anvil first asks Highway for the
// CPU's targets (each Highway backend snapshots hwy::SupportedTargets() on
// first use).  Tests that narrow the targets themselves restore this mask
// afterwards, not 0 (which would unmock the real CPU).
#pragma once
#include <cstdint>

#include <hwy/targets.h>

namespace tu {

// The mask main() installed (0: none, Highway sees the real CPU).
inline int64_t &hwy_test_mask() {
    static int64_t mask = 0;
    return mask;
}

// Whether this build compiled a SIMD-free Highway fallback (EMU128 or
// SCALAR): yes on x86-64; not on aarch64, where NEON is the baseline.  There
// the scalar cap has no Highway target (anvil's scalar kernels run) and the
// post-op chain uses the baseline target (the same bits).
inline bool hwy_fallback_compiled() { return (HWY_TARGETS & (HWY_EMU128 | HWY_SCALAR)) != 0; }

// Undoes a test's own hwy::SetSupportedTargetsForTest.
inline void restore_hwy_targets() { hwy::SetSupportedTargetsForTest(hwy_test_mask()); }

}  // namespace tu
