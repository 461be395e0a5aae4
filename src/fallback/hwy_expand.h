// Widening pixels with byte shuffles (Highway, dispatched under anvil's ISA
// cap like the other Highway code): the convolution's source view gives
// each pixel's channels a whole k-group (IC = 3 -> 4 for int8, 6 -> 8
// bytes for bf16) and shifts an s8 source into u8.
#pragma once
#include <cstdint>

namespace anvil::fallback {

// For each of `count` pixels: out[0 .. in_bytes) = in[0 .. in_bytes) ^ flip,
// out[in_bytes .. out_bytes) = 0; pixels are in_bytes apart in `in` and
// out_bytes apart in `out` (1 <= in_bytes <= out_bytes).  Reads nothing
// past in + count * in_bytes.
void expand_pixels(const uint8_t *in, int64_t count, int in_bytes, int out_bytes, uint8_t flip,
                   uint8_t *out);

}  // namespace anvil::fallback
