// Interleaving B's rows into k-groups for the lp packing (lowp/lp_pack.cpp)
// with 256-bit Highway shuffles, dispatched under anvil's ISA cap like the
// other Highway code.  The SSE2 loop it stands in front of moves 16 bytes
// of each row per step; B is packed on every BLAS-style call, where that
// loop took more time than the kernels (16x4096x4096 u8s8s32: 53% of the
// call).
#pragma once
#include <cstdint>

namespace anvil::fallback {

// For each panel p in [0, panels): the 32 columns [32 p, 32 p + 32) of the
// rows (int8, elem 1: 4 rows of bytes; bf16, elem 2: rows[0], rows[1] of
// 2-byte elements) as one packed k-group, 32 dwords at dst + p *
// panel_stride: dword j holds column 32 p + j of each row in turn (int8:
// bytes of rows 0..3; bf16: the elements of rows 0, 1).  Returns the
// panels done: `panels`, or 0 on targets without 256-bit vectors (the
// caller then does them all).  Reads rows[t][0 .. 32 * panels * elem).
int64_t interleave_panels(int elem, const uint8_t *const rows[4], int64_t panels, uint8_t *dst,
                          int64_t panel_stride);

// The same function for the current ISA cap, looked up once: for loops
// that call it per k-group (elem must be 1 or 2, panels >= 0).
using interleave_panels_fn = int64_t (*)(int elem, const uint8_t *const *rows, int64_t panels,
                                         uint8_t *dst, int64_t panel_stride);
interleave_panels_fn interleave_panels_for_cap();

}  // namespace anvil::fallback
