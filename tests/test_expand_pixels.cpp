// fallback::expand_pixels, the convolution view's channel widening (and the
// s8 -> u8 shift), for every Highway target the cap selects: every pixel
// size up to 20 bytes into every wider one, counts around the 16-byte steps,
// with and without the flip, input ending at a guard page (no byte past the
// last pixel is read) and output bytes past the last pixel untouched.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fallback/hwy_expand.h"
#include "test_util.h"

TEST_CASE("expand_pixels: every pixel size, count and flip; no read past the input") {
    int64_t bad = 0;
    std::string first;
    tu::guarded in_mem(4096);
    for (int in_bytes = 1; in_bytes <= 20; ++in_bytes)
        for (int out_bytes = in_bytes; out_bytes <= 20; ++out_bytes)
            for (int64_t count : {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 33, 100})
                for (uint8_t flip : {uint8_t(0), uint8_t(0x80)}) {
                    const size_t in_len = size_t(count * in_bytes);
                    // The input ends exactly at the guard page.
                    uint8_t *in = reinterpret_cast<uint8_t *>(in_mem.end()) - in_len;
                    for (size_t i = 0; i < in_len; ++i) in[i] = uint8_t(i * 37 + in_bytes);
                    std::vector<uint8_t> out(size_t(count * out_bytes) + 64, 0xA5);
                    anvil::fallback::expand_pixels(in, count, in_bytes, out_bytes, flip, out.data());
                    for (int64_t px = 0; px < count; ++px)
                        for (int b = 0; b < out_bytes; ++b) {
                            const uint8_t want =
                                b < in_bytes ? uint8_t(in[px * in_bytes + b] ^ flip) : uint8_t(0);
                            const uint8_t got = out[size_t(px * out_bytes + b)];
                            if (got != want && bad++ == 0)
                                first = "in " + std::to_string(in_bytes) + " out " +
                                        std::to_string(out_bytes) + " count " +
                                        std::to_string(count) + " flip " + std::to_string(flip) +
                                        ": pixel " + std::to_string(px) + " byte " +
                                        std::to_string(b);
                        }
                    for (size_t i = size_t(count * out_bytes); i < out.size(); ++i)
                        if (out[i] != 0xA5 && bad++ == 0)
                            first = "wrote past the output, in " + std::to_string(in_bytes) +
                                    " out " + std::to_string(out_bytes) + " count " +
                                    std::to_string(count);
                }
    INFO(bad, " wrong bytes, first: ", first);
    CHECK(bad == 0);
}
