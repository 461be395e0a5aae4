// fp32 micro-kernels with K segments (gemm::kUkFlagKSegments, the
// convolution's batch-reduce over kernel rows) and row tiles
// (kUkFlagRowTiles): a call with k_segs = S and m_tiles = T reads segment
// s of tile t's A at a + t * a_tile_rs + s * a_seg_rs and B straight on
// (b_seg_skip rows further at each new segment, over NaN rows), and must give, tile by tile, the bits of one plain call over the S * K
// columns of those A rows laid end to end (the contract's single fma chain
// in increasing k).  Every tile height and width, K around the unroll,
// counts 0 (= 1) and up, A strides that overlap from segment to segment (a
// convolution's rows do) and ones that do not, every beta kind and alpha.
// Backends without them must refuse the flags.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

using anvil::gemm::a_access;
using anvil::gemm::backend;
using anvil::gemm::ukernel_args;
using anvil::gemm::ukernel_desc;
using anvil::gemm::ukernel_ref;

const int64_t kKs[] = {0, 1, 3, 4, 5, 9, 21};
const int64_t kSegs[] = {0, 1, 2, 3, 7};

const int64_t kTiles[] = {0, 1, 2, 5};
constexpr uint8_t kFlags = anvil::gemm::kUkFlagKSegments | anvil::gemm::kUkFlagRowTiles;

ukernel_desc seg_desc(const backend &be, int m, int n, float alpha, float beta, uint8_t flags) {
    ukernel_desc d{};
    d.tier = uint8_t(be.tier());
    d.m = uint8_t(m);
    d.n = uint8_t(n);
    d.flags = flags;
    d.a = a_access::row_major;
    d.beta = anvil::gemm::classify_beta(beta);
    d.alpha_one = alpha == 1.0f ? 1 : 0;
    return d;
}

using tu::failures;

// One call of S segments x T tiles against T reference calls, each over
// its tile's segment rows laid end to end (K' = S * K).
void run_case(const ukernel_ref &kr, int m, int n, int64_t K, int64_t segs, int64_t tiles,
              float alpha, float beta, tu::rng &r, failures *bad_bits, failures *bad_sentinel,
              bool c_aligned = false) {
    const int64_t S = std::max<int64_t>(segs, 1), T = std::max<int64_t>(tiles, 1);
    // A rows a_rs apart; segments a_seg_rs apart (a convolution's rows
    // overlap from one to the next; disjoint ones too); tiles a_tile_rs.
    const int64_t a_rs = K + (m % 3) + 1;
    const int64_t a_seg_rs = (K + m) % 2 ? 2 * a_rs + 1 : m * a_rs + 7;
    const int64_t a_tile_rs = (m + T) % 2 ? m * a_rs : m * a_rs + 3;
    const int64_t a_len =
        (T - 1) * a_tile_rs + (S - 1) * a_seg_rs + (m - 1) * a_rs + K + 1;
    tu::fbuf A(size_t(a_len), size_t(m % 4), tu::qnan());
    for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < S; ++s)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t k = 0; k < K; ++k)
                    A[size_t(t * a_tile_rs + s * a_seg_rs + i * a_rs + k)] = r.frac();
    // B: segment s's K rows start s * (K + skip) rows on; the skipped rows
    // between them hold NaN, which would show in C if a kernel read them.
    const int64_t skip = segs > 1 ? (K + m + n + tiles) % 3 : 0;
    const int64_t b_ld = n + (n % 2 ? 3 : 16);
    tu::fbuf B(size_t(std::max<int64_t>(S * (K + skip), 1) * b_ld), size_t(n % 4), tu::qnan());
    std::vector<float> Bref(size_t(std::max<int64_t>(S * K, 1) * b_ld), 0.0f);
    for (int64_t s = 0; s < S; ++s)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < n; ++j) {
                const float v = r.frac();
                B[size_t((s * (K + skip) + k) * b_ld + j)] = v;
                Bref[size_t((s * K + k) * b_ld + j)] = v;
            }
    // c_aligned: C and ldc 64-byte aligned (c() is kMargin = 37 floats
    // into the buffer, so an offset of 11 floats aligns it).
    const int64_t ldc = c_aligned ? (n + 15) / 16 * 16 + 16 : n + 5, rows = T * m;
    tu::cmat Cg(rows, n, ldc, c_aligned ? 11 : m % 3), Cr(rows, n, ldc, 0);
    if (c_aligned) REQUIRE(reinterpret_cast<uintptr_t>(Cg.c()) % 64 == 0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < n; ++j) {
            const float c0 = r.frac();
            Cg.at(i, j) = beta == 0.0f ? tu::qnan() : c0;
            Cr.at(i, j) = c0;
        }
    ukernel_args a{};
    a.a = A.data();
    a.a_rs = a_rs;
    a.a_cs = 1;
    a.b = B.data();
    a.b_ld = b_ld;
    a.c = Cg.c();
    a.ldc = ldc;
    a.k = K;
    a.m = m;
    a.n = n;
    a.alpha = alpha;
    a.beta = beta;
    a.k_segs = segs;
    a.a_seg_rs = a_seg_rs;
    a.b_seg_skip = skip;
    a.m_tiles = tiles;
    a.a_tile_rs = a_tile_rs;
    kr.fn(&a);
    // The reference: tile t's A with segment s's row i at columns s * K...
    const int64_t ref_rs = std::max<int64_t>(S * K, 1);
    std::vector<float> Aref(size_t(m * ref_rs), 0.0f);
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t s = 0; s < S; ++s)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t k = 0; k < K; ++k)
                    Aref[size_t(i * ref_rs + s * K + k)] =
                        A[size_t(t * a_tile_rs + s * a_seg_rs + i * a_rs + k)];
        ukernel_args ra = a;
        ra.a = Aref.data();
        ra.a_rs = ref_rs;
        ra.b = Bref.data();
        ra.k = S * K;
        ra.k_segs = 0;
        ra.b_seg_skip = 0;
        ra.m_tiles = 0;
        ra.c = Cr.c() + t * m * ldc;
        anvil::ref::sgemm_ukernel(&ra);
    }
    std::ostringstream what;
    what << "m=" << m << " n=" << n << " K=" << K << " segs=" << segs << " skip=" << skip
         << " tiles=" << tiles
         << " a_rs=" << a_rs << " a_seg_rs=" << a_seg_rs << " a_tile_rs=" << a_tile_rs
         << " alpha=" << alpha << " beta=" << beta << " [" << kr.name << "]";
    std::string f;
    if (tu::count_bit_mismatches(Cg, Cr, &f)) bad_bits->add(what.str() + ": " + f);
    if (Cg.sentinel_damage(&f)) bad_sentinel->add(what.str() + ": " + f);
}

}  // namespace

TEST_CASE("ukernel K segments and row tiles: bitwise one call per tile over the rows laid end to end") {
    const backend &be = anvil::gemm::select_backend();
    if (!be.supports_k_segments()) {
        // The flags must be refused, never silently ignored.
        ukernel_ref kr;
        CHECK(be.get(seg_desc(be, 1, 1, 1.0f, 0.0f, kFlags), &kr) != anvil_success);
        MESSAGE("backend ", std::string(be.name()), " has no K segments / row tiles");
        return;
    }
    MESSAGE("K segments / row tiles: backend ", std::string(be.name()));
    const int mr = be.mr();
    tu::rng r(20261204);
    failures bad_bits, bad_sentinel, bad_status;
    int64_t calls = 0;
    for (const uint8_t flags : {anvil::gemm::kUkFlagKSegments, anvil::gemm::kUkFlagRowTiles, kFlags})
        for (int m = 1; m <= mr; ++m) {
            const int widest = std::max(be.nr(), be.max_n(m));
            for (int n = 1; n <= widest; n += (n < 18 ? 1 : 13))
                for (const float beta : {0.0f, 1.0f, -0.75f})
                    for (const float alpha : {1.0f, 0.5f}) {
                        ukernel_ref kr;
                        const anvil_status_t st = be.get(seg_desc(be, m, n, alpha, beta, flags), &kr);
                        if (st != anvil_success || !kr.fn) {
                            bad_status.add("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                           ": " + anvil_status_str(st));
                            continue;
                        }
                        for (const int64_t K : kKs)
                            for (const int64_t segs : kSegs)
                                for (const int64_t tiles : kTiles) {
                                    if (!(flags & anvil::gemm::kUkFlagKSegments) && segs > 1) continue;
                                    if (!(flags & anvil::gemm::kUkFlagRowTiles) && tiles > 1) continue;
                                    run_case(kr, m, n, K, segs, tiles, alpha, beta, r, &bad_bits,
                                             &bad_sentinel);
                                    ++calls;
                                }
                    }
        }
    MESSAGE("K segments / row tiles: ", calls, " kernel calls compared");
    tu::check_failures(bad_status, bad_bits, bad_sentinel);
}

TEST_CASE("ukernel non-temporal stores: the same bits, aligned C or not; refused with beta != 0") {
    const backend &be = anvil::gemm::select_backend();
    if (!be.supports_k_segments()) return;  // (the flags test above covers refusal)
    const uint8_t nt = uint8_t(kFlags | anvil::gemm::kUkFlagNtStore);
    ukernel_ref refused;
    CHECK(be.get(seg_desc(be, 2, 16, 1.0f, 1.0f, nt), &refused) != anvil_success);
    tu::rng r(20261207);
    failures bad_bits, bad_sentinel, bad_status;
    int64_t calls = 0;
    for (int m = 1; m <= be.mr(); ++m)
        for (int n = 1; n <= be.nr(); n += (n < 17 ? 1 : 7))
            for (const float alpha : {1.0f, 0.5f}) {
                ukernel_ref kr;
                if (be.get(seg_desc(be, m, n, alpha, 0.0f, nt), &kr) != anvil_success || !kr.fn) {
                    bad_status.add("m=" + std::to_string(m) + " n=" + std::to_string(n));
                    continue;
                }
                CHECK(std::string(kr.name).find("_nt") != std::string::npos);
                for (const bool aligned : {true, false})
                    for (const int64_t K : {int64_t(0), int64_t(3), int64_t(9)})
                        for (const int64_t segs : {int64_t(1), int64_t(3)})
                            for (const int64_t tiles : {int64_t(1), int64_t(2)}) {
                                run_case(kr, m, n, K, segs, tiles, alpha, 0.0f, r, &bad_bits,
                                         &bad_sentinel, aligned);
                                ++calls;
                            }
            }
    MESSAGE("non-temporal stores: ", calls, " kernel calls compared");
    tu::check_failures(bad_status, bad_bits, bad_sentinel);
}

TEST_CASE("ukernel K segments: refused on column-major A and by the generic backends") {
    const backend &be = anvil::gemm::select_backend();
    ukernel_desc d = seg_desc(be, 2, 16, 1.0f, 0.0f, kFlags);
    d.a = a_access::k_strided;
    ukernel_ref kr;
    CHECK(be.get(d, &kr) != anvil_success);
    d.a = a_access::row_major;
    d.flags = 0x80;  // an unknown flag
    CHECK(be.get(d, &kr) != anvil_success);
    for (const backend *g : {anvil::gemm::scalar_backend(), anvil::gemm::highway_backend()}) {
        if (!g || g->supports_k_segments()) continue;
        for (const uint8_t flags : {anvil::gemm::kUkFlagKSegments, anvil::gemm::kUkFlagRowTiles}) {
            const ukernel_desc gd = seg_desc(*g, 1, 1, 1.0f, 0.0f, flags);
            CHECK(g->get(gd, &kr) != anvil_success);
        }
    }
}

namespace {

// The portable chain's arithmetic on one element (lowp::pp_scale_bias /
// pp_apply, hwy_postops.cc), for the fused epilogue's reference.
float ref_epi_op(uint8_t op, float x, float alpha, float beta, float operand) {
    switch (op) {
        case anvil::gemm::kUkEpiRelu: return x <= 0.0f ? 0.0f : x;
        case anvil::gemm::kUkEpiLeaky: return x > 0.0f ? x : alpha * x;
        case anvil::gemm::kUkEpiClip: {
            const float v = x < alpha ? alpha : x;
            return beta < v ? beta : v;
        }
        case anvil::gemm::kUkEpiAdd: return x + operand;
        default: return x;
    }
}

bool same_bits_or_nan(float a, float b) {
    return tu::bits(a) == tu::bits(b) || (std::isnan(a) && std::isnan(b));
}

}  // namespace

TEST_CASE("ukernel fused epilogue: bias, relu / leaky / clip and a residual add, bitwise the chain") {
    using namespace anvil::gemm;
    const backend &be = select_backend();
    if (!be.supports_k_segments()) {
        ukernel_desc d = seg_desc(be, 1, 1, 1.0f, 0.0f, kUkFlagBias);
        ukernel_ref kr;
        CHECK(be.get(d, &kr) != anvil_success);
        return;
    }
    const uint8_t chains[] = {
        kUkEpiNone, kUkEpiRelu, kUkEpiLeaky, kUkEpiClip, kUkEpiAdd,
        uint8_t(kUkEpiRelu | kUkEpiAdd << 3), uint8_t(kUkEpiAdd | kUkEpiRelu << 3),
        uint8_t(kUkEpiLeaky | kUkEpiAdd << 3), uint8_t(kUkEpiAdd | kUkEpiClip << 3)};
    // Values that find the edges: zeros of both signs, NaN, infinities.
    const float specials[] = {0.0f, -0.0f, tu::qnan(), INFINITY, -INFINITY, 1e-40f, -3.0f, 7.5f};
    tu::rng r(4242);
    int64_t bad = 0, calls = 0;
    std::string first;
    for (const uint8_t epi : chains)
        for (const int bias : {0, 1})
            for (const int m : {1, 3, 7, 12})
                for (const int n : {1, 15, 16, 17, 32})
                    for (const float alpha : {1.0f, -1.0f})
                        for (const float beta : {0.0f, 1.0f}) {
                            if (epi == kUkEpiNone && !bias) continue;
                            ukernel_desc d = seg_desc(be, m, n, alpha, beta,
                                                      uint8_t(kFlags | (bias ? kUkFlagBias : 0)));
                            d.epi_ops = epi;
                            ukernel_ref kr;
                            if (be.get(d, &kr) != anvil_success || !kr.fn) {
                                if (bad++ == 0) first = "kernel refused: m=" + std::to_string(m);
                                continue;
                            }
                            for (const int64_t K : {0, 1, 5})
                                for (const int64_t tiles : {0, 3}) {
                                    const int64_t T = std::max<int64_t>(tiles, 1), rows = T * m;
                                    const int64_t a_rs = K + 1;
                                    tu::fbuf A(size_t(rows * a_rs + 1), 1, tu::qnan());
                                    for (int64_t i = 0; i < rows; ++i)
                                        for (int64_t k = 0; k < K; ++k)
                                            A[size_t(i * a_rs + k)] =
                                                r.ival(0, 9) == 0 ? specials[r.ival(0, 7)] : r.frac();
                                    const int64_t b_ld = n + 3;
                                    tu::fbuf B(size_t(std::max<int64_t>(K, 1) * b_ld), 2, tu::qnan());
                                    for (int64_t k = 0; k < K; ++k)
                                        for (int64_t j = 0; j < n; ++j) B[size_t(k * b_ld + j)] = r.frac();
                                    std::vector<float> bias_v(static_cast<size_t>(n));
                                    std::vector<float> bin(static_cast<size_t>(rows * (n + 2)));
                                    for (float &v : bias_v) v = r.ival(0, 5) == 0 ? specials[r.ival(0, 7)] : r.frac();
                                    for (float &v : bin) v = r.ival(0, 5) == 0 ? specials[r.ival(0, 7)] : r.frac();
                                    const float elt_a = epi == kUkEpiClip || (epi >> 3) == kUkEpiClip ? -0.25f : 0.125f;
                                    const float elt_b = 0.5f;
                                    const int64_t ldc = n + 1;
                                    tu::cmat Cg(rows, n, ldc, 0), Cr(rows, n, ldc, 0);
                                    for (int64_t i = 0; i < rows; ++i)
                                        for (int64_t j = 0; j < n; ++j) {
                                            const float c0 = r.ival(0, 4) == 0 ? specials[r.ival(0, 7)] : r.frac();
                                            Cg.at(i, j) = beta == 0.0f ? tu::qnan() : c0;
                                            Cr.at(i, j) = c0;
                                        }
                                    ukernel_args a{};
                                    a.a = A.data();
                                    a.a_rs = a_rs;
                                    a.a_cs = 1;
                                    a.b = B.data();
                                    a.b_ld = b_ld;
                                    a.c = Cg.c();
                                    a.ldc = ldc;
                                    a.k = K;
                                    a.m = m;
                                    a.n = n;
                                    a.alpha = alpha;
                                    a.beta = beta;
                                    a.m_tiles = tiles;
                                    a.a_tile_rs = m * a_rs;
                                    a.bias = bias ? bias_v.data() : nullptr;
                                    a.binary = bin.data();
                                    a.binary_ld = n + 2;
                                    a.elt_alpha = elt_a;
                                    a.elt_beta = elt_b;
                                    kr.fn(&a);
                                    ++calls;
                                    for (int64_t t = 0; t < T; ++t) {
                                        ukernel_args ra = a;
                                        ra.a = A.data() + t * m * a_rs;
                                        ra.c = Cr.c() + t * m * ldc;
                                        ra.m_tiles = 0;
                                        anvil::ref::sgemm_ukernel(&ra);
                                    }
                                    for (int64_t i = 0; i < rows; ++i)
                                        for (int64_t j = 0; j < n; ++j) {
                                            float x = Cr.at(i, j);
                                            if (bias) x = x + bias_v[size_t(j)];
                                            for (int t = 0; t < 2; ++t)
                                                x = ref_epi_op(uk_epi_op(epi, t), x, elt_a, elt_b,
                                                               bin[size_t(i * (n + 2) + j)]);
                                            if (!same_bits_or_nan(Cg.at(i, j), x) && bad++ == 0)
                                                first = "epi " + std::to_string(epi) + " bias " +
                                                        std::to_string(bias) + " m " + std::to_string(m) +
                                                        " n " + std::to_string(n) + " K " + std::to_string(K) +
                                                        " alpha " + std::to_string(alpha) + " beta " +
                                                        std::to_string(beta) + " tiles " +
                                                        std::to_string(tiles) + " at (" + std::to_string(i) +
                                                        "," + std::to_string(j) + ")";
                                        }
                                    std::string w;
                                    if (Cg.sentinel_damage(&w) && bad++ == 0) first = "wrote outside C: " + w;
                                }
                        }
    MESSAGE("fused epilogue: ", calls, " kernel calls compared");
    INFO(bad, " wrong, first: ", first);
    CHECK(bad == 0);
}
