// Register blocks without arrays of vectors.
//
// Arm SVE vectors are "sizeless" types: the C++ front end refuses them as
// array elements and as struct members, so a Highway kernel compiled for
// SVE / SVE2 cannot hold its accumulators in `V acc[kRows][kVecs]`.  The
// kernels name each register instead (acc3_1 is row 3, vector 1) and let
// ANVIL_HWY_ROWS expand a per-row step for every row index up to the
// largest block; a step guards itself with `if constexpr (r < kRows)`, so
// rows beyond the instantiated height compile to nothing and unused
// variables are dropped by the optimiser.  The same source serves every
// target (x86 included), so there is one kernel body to test.
//
// Include from a Highway translation unit, inside or outside its target
// namespace (it defines macros only).
#ifndef ANVIL_FALLBACK_HWY_NAMED_REGS_H_
#define ANVIL_FALLBACK_HWY_NAMED_REGS_H_

// X(r) for r = 0 .. 11: the largest row block any Highway kernel uses.
#define ANVIL_HWY_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define ANVIL_HWY_MAX_ROWS 12

#endif  // ANVIL_FALLBACK_HWY_NAMED_REGS_H_
