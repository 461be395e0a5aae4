// fallback::interleave_panels, the 256-bit k-group interleave that packs
// row-major B for the lp GEMMs, for the Highway target the ISA cap
// selects: int8 (4 rows of bytes) and bf16 (2 rows of 16-bit elements),
// panel counts around one and several, each row ending at a guard page (no
// byte past the last panel is read), and the bytes between panels in dst
// untouched.  On x86-64 with a cap of avx2 or more the shuffles must take
// every panel (otherwise the packing silently fell back to the SSE2 loop);
// elsewhere the function may decline (returns 0) and must write nothing.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.h"
#include "fallback/hwy_interleave.h"
#include "test_util.h"

TEST_CASE("interleave_panels: int8 and bf16 k-groups in column order; no read past the rows") {
    constexpr int64_t kStride = 128 + 64;  // a panel's group is 128 bytes; 64 sentinel bytes after it
    const bool must_take = anvil::cpu::effective_tier(false) >= anvil_isa_avx2;
    int64_t bad = 0;
    std::string first;
    for (int elem : {1, 2})
        for (int64_t panels : {1, 2, 3, 5}) {
            CAPTURE(elem);
            CAPTURE(panels);
            const int nrows = elem == 1 ? 4 : 2;
            const size_t row_bytes = size_t(32 * panels * elem);
            std::unique_ptr<tu::guarded> mem[4];
            const uint8_t *rows[4] = {};
            for (int t = 0; t < nrows; ++t) {
                mem[t] = std::make_unique<tu::guarded>(row_bytes);
                auto *r = reinterpret_cast<uint8_t *>(mem[t]->end()) - row_bytes;  // ends at the guard
                for (size_t i = 0; i < row_bytes; ++i) r[i] = uint8_t(i * 29 + t * 101 + 7);
                rows[t] = r;
            }
            std::vector<uint8_t> dst(size_t(panels * kStride), 0xA5);
            const int64_t done = anvil::fallback::interleave_panels(elem, rows, panels, dst.data(), kStride);
            CHECK((done == 0 || done == panels));
#if defined(__x86_64__)
            if (must_take) CHECK(done == panels);
#else
            (void)must_take;
#endif
            for (int64_t p = 0; p < panels; ++p)
                for (int64_t i = 0; i < kStride; ++i) {
                    uint8_t want = 0xA5;  // untouched: a declined call, or the gap after a group
                    if (done == panels && i < 128) {
                        // Dword j = column 32 p + j: int8 byte t of row t; bf16
                        // element t (2 bytes) of row t.
                        const int64_t col = 32 * p + i / 4, within = i % 4;
                        const int t = elem == 1 ? int(within) : int(within / 2);
                        want = rows[t][col * elem + (elem == 1 ? 0 : within % 2)];
                    }
                    const uint8_t got = dst[size_t(p * kStride + i)];
                    if (got != want && bad++ == 0)
                        first = "elem " + std::to_string(elem) + " panels " + std::to_string(panels) +
                                ": panel " + std::to_string(p) + " byte " + std::to_string(i);
                }
        }
    INFO(bad, " wrong bytes, first: ", first);
    CHECK(bad == 0);
}

TEST_CASE("interleave_panels: nothing to do, or a bad element size, writes nothing") {
    const uint8_t row[64] = {};
    const uint8_t *rows[4] = {row, row, row, row};
    uint8_t dst[256];
    std::memset(dst, 0xA5, sizeof(dst));
    CHECK(anvil::fallback::interleave_panels(1, rows, 0, dst, 128) == 0);
    CHECK(anvil::fallback::interleave_panels(1, rows, -3, dst, 128) == 0);
    CHECK(anvil::fallback::interleave_panels(4, rows, 1, dst, 128) == 0);
    for (uint8_t b : dst) CHECK(b == 0xA5);
}
