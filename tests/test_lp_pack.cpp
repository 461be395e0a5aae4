// B packing of the lp GEMMs (lowp/lp_pack.h) against the layout written
// out element by element: for every N in 1..70 (each column tail of the
// 32-wide panels and of the 8 / 16-column vector steps), K around the group
// size, both orientations, both element sizes, whole-K packs and K blocks
// of panel ranges.  Every packed byte is compared, so padding that is not
// zero (columns >= N, k >= K) fails as surely as a misplaced element; the
// output buffer starts as junk, so a byte left unwritten fails too.
//
// Packing is portable C++ (the same on every ISA cap): the suite runs once.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "lowp/lp_pack.h"

namespace {

using namespace anvil::lowp;

// Byte b (0..3) of the dword of column c (0..31) in group g of panel p.
uint8_t expected_byte(lp_kind kind, bool transb, int64_t K, int64_t N, const uint8_t *B,
                      int64_t ldb, int64_t p, int64_t g, int64_t c, int b) {
    const int elem = kind == lp_kind::bf16 ? 2 : 1;
    const int gk = 4 / elem;
    const int64_t j = p * kNR + c;
    const int64_t k = g * gk + b / elem;
    if (j >= N || k >= K) return 0;
    const int64_t at = transb ? j * ldb + k : k * ldb + j;
    return B[at * elem + b % elem];
}

void check_pack(lp_kind kind, bool transb, int64_t K, int64_t N) {
    const int elem = kind == lp_kind::bf16 ? 2 : 1;
    const int64_t ldb = (transb ? K : N) + 3;  // rows longer than the data
    const int64_t rows = transb ? N : K;
    std::vector<uint8_t> B(size_t(rows * ldb * elem));
    for (size_t i = 0; i < B.size(); ++i) B[i] = uint8_t(i * 131 + 7);
    const int64_t kg = k_groups(kind, K), panels = (N + kNR - 1) / kNR;
    const int64_t bytes = packed_b_bytes(kind, K, N);
    REQUIRE(bytes == panels * kg * kNR * 4);
    INFO("kind=", kind == lp_kind::bf16 ? "bf16" : "u8s8", " transb=", transb, " K=", K,
         " N=", N);

    // Whole K, all panels.
    std::vector<uint8_t> out(size_t(bytes), 0xA5);
    pack_b(kind, transb, K, N, B.data(), ldb, 0, panels, out.data(), nullptr);
    for (int64_t p = 0; p < panels; ++p)
        for (int64_t g = 0; g < kg; ++g)
            for (int64_t c = 0; c < kNR; ++c)
                for (int b = 0; b < 4; ++b) {
                    const uint8_t got = out[size_t(((p * kg + g) * kNR + c) * 4 + b)];
                    const uint8_t want = expected_byte(kind, transb, K, N, B.data(), ldb, p, g, c, b);
                    if (got != want) {
                        INFO("p=", p, " g=", g, " c=", c, " byte=", b);
                        REQUIRE(int(got) == int(want));
                    }
                }

    // A K block (groups [g0, g0 + gn)) of panels [p0, p1), as the tasks
    // pack it.
    const int64_t g0 = kg / 3, gn = kg - g0, p0 = panels / 2, p1 = panels;
    std::vector<uint8_t> blk(size_t((p1 - p0) * gn * kNR * 4), 0x5A);
    pack_b_block(kind, transb, K, N, B.data(), ldb, p0, p1, g0, gn, blk.data());
    for (int64_t p = p0; p < p1; ++p)
        for (int64_t g = 0; g < gn; ++g)
            for (int64_t c = 0; c < kNR; ++c)
                for (int b = 0; b < 4; ++b) {
                    const uint8_t got = blk[size_t((((p - p0) * gn + g) * kNR + c) * 4 + b)];
                    const uint8_t want =
                        expected_byte(kind, transb, K, N, B.data(), ldb, p, g0 + g, c, b);
                    if (got != want) {
                        INFO("block p=", p, " g=", g0 + g, " c=", c, " byte=", b);
                        REQUIRE(int(got) == int(want));
                    }
                }
}

}  // namespace

TEST_CASE("lp pack: B panels byte for byte, every column tail, both orientations and types") {
    for (lp_kind kind : {lp_kind::bf16, lp_kind::u8s8})
        for (bool transb : {false, true})
            for (int64_t K : {1, 2, 3, 4, 5, 7, 8, 9, 17})
                for (int64_t N = 1; N <= 70; ++N) check_pack(kind, transb, K, N);
}
