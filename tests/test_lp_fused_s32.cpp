// The int32 fused store of the JIT int8 kernels (lowp::EPI_S32, which
// anvil_gemm_u8s8s32 / s8s8s32 use for alpha 1, beta 0 and no offsets):
// for every tile height, column tails of both vectors, with and without
// column-sum compensation and with the accumulating (later K block)
// kernels, the stored int32 equals the plain kernel's accumulator minus
// col_factor * colsum, wrapping modulo 2^32 (the accumulators start near
// the int32 limits so that the wrap happens).  Columns outside the store
// mask and rows below the tile keep their sentinel.
//
// The kernels look at the detected CPU, not the ISA cap: the suite runs once.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "lowp/lp_backend.h"
#include "lowp/lp_ukernel.h"
#include "lowp_util.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT

namespace {

namespace lowp = anvil::lowp;

constexpr int kNR = lowp::kNR;
constexpr int32_t kSentinel = 0x5a5a5a5a;

void check_tile(const lowp::lp_backend &be, int m, int n, bool accumulate, bool comp, tu::rng &r) {
    INFO("m=", m, " n=", n, " accumulate=", accumulate, " comp=", comp);
    const int nv = n > 16 ? 2 : 1;
    lowp::lp_ukernel_ref plain, fused;
    const uint8_t tier = uint8_t(be.tier());
    REQUIRE(be.get(lowp::make_lp_desc(tier, lowp::lp_kind::u8s8, m, nv, accumulate), &plain) ==
            anvil_success);
    REQUIRE(be.get(lowp::make_lp_epi_desc(tier, lowp::lp_kind::u8s8, m, nv, accumulate,
                                          lowp::EPI_S32, comp ? lowp::EPI_COMP : 0, 0),
                   &fused) == anvil_success);

    // Full-range bytes: the products and their sums use all of int32's
    // low bits, and the accumulators of earlier K blocks sit near the
    // limits, so acc - col_factor * colsum wraps.
    const int kg = 3;
    const int64_t a_rs = kg * 4 + 8;
    std::vector<uint8_t> a(size_t(m * a_rs)), b(size_t(kg * kNR * 4));
    for (auto &x : a) x = uint8_t(r.ival(0, 255));
    for (auto &x : b) x = uint8_t(r.ival(0, 255));
    std::vector<int32_t> colsum(kNR);
    for (auto &x : colsum) x = int32_t(r.ival(-400000, 400000));
    const int32_t col_factor = comp ? int32_t(r.ival(1, 255)) + 128 : 0;

    std::vector<int32_t> acc(size_t(m * kNR));
    if (accumulate)
        for (auto &x : acc) x = int32_t(r.ival(0, 1) ? INT32_MAX - r.ival(0, 5000) : INT32_MIN + r.ival(0, 5000));
    const std::vector<int32_t> acc0 = acc;

    lowp::lp_ukernel_args pa =
        lt::tile_args(a.data(), a_rs, b.data(), acc.data(), kg, m, n, accumulate);
    plain.fn(&pa);

    // The fused call: the same operands (and, accumulating, the same
    // starting accumulators), C one row longer than the tile and wider
    // than the panel.
    const int64_t ldc = kNR + 5;
    std::vector<int32_t> c(size_t((m + 1) * ldc), kSentinel);
    std::vector<int32_t> acc_f = acc0;
    lowp::lp_ukernel_args fa = pa;
    fa.acc = acc_f.data();
    fa.dst = reinterpret_cast<uint8_t *>(c.data());
    fa.dst_ld = ldc * 4;
    fa.colsum = comp ? colsum.data() : nullptr;
    fa.col_factor = col_factor;
    fa.store_mask[0] = uint16_t(n >= 16 ? 0xffff : (1u << n) - 1);
    fa.store_mask[1] = uint16_t(n >= 32 ? 0xffff : n > 16 ? (1u << (n - 16)) - 1 : 0);
    fused.fn(&fa);

    for (int i = 0; i <= m; ++i)
        for (int j = 0; j < ldc; ++j) {
            int32_t want = kSentinel;
            if (i < m && j < n) {
                const uint32_t raw = uint32_t(acc[size_t(i * kNR + j)]);
                want = int32_t(raw - (comp ? uint32_t(col_factor) * uint32_t(colsum[size_t(j)]) : 0u));
            }
            if (c[size_t(i * ldc + j)] != want) {
                INFO("row ", i, " column ", j);
                REQUIRE(c[size_t(i * ldc + j)] == want);
            }
        }
}

}  // namespace

TEST_CASE("lp fused kernels: int32 store (EPI_S32) is the wrapping compensated accumulator") {
    const lowp::lp_backend *be = lowp::jit_avx512_lp_backend();
    if (!be || !be->supports(lowp::lp_kind::u8s8)) {
        MESSAGE("no AVX-512 int8 lp kernels here: nothing to check");
        return;
    }
    tu::rng r(0x532);
    for (int m = 1; m <= lowp::kMR; ++m)
        for (int n : {1, 7, 16, 17, 23, 31, 32})
            for (bool accumulate : {false, true})
                for (bool comp : {false, true}) check_tile(*be, m, n, accumulate, comp, r);

    // What the descriptor check refuses: S32 with anything but EPI_COMP,
    // with epi_ops, or for bf16.
    lowp::lp_ukernel_ref k;
    const uint8_t tier = uint8_t(be->tier());
    CHECK(be->get(lowp::make_lp_epi_desc(tier, lowp::lp_kind::u8s8, 4, 1, false, lowp::EPI_S32,
                                         lowp::EPI_SCALE_1, 0),
                  &k) != anvil_success);
    CHECK(be->get(lowp::make_lp_epi_desc(tier, lowp::lp_kind::u8s8, 4, 1, false, lowp::EPI_S32, 0,
                                         lowp::EPI_ADD_F32),
                  &k) != anvil_success);
    CHECK(be->get(lowp::make_lp_epi_desc(tier, lowp::lp_kind::bf16, 4, 1, false, lowp::EPI_S32, 0, 0),
                  &k) != anvil_success);
}

#endif  // ANVIL_TESTS_HAVE_JIT
