// Differential tests of the BLAS-style low-precision calls
// (anvil_gemm_u8s8s32, anvil_gemm_s8s8s32, anvil_gemm_bf16bf16f32) against
// the scalar references and, where the build has it, oneDNN
// (dnnl_gemm_u8s8s32 / dnnl_gemm_s8s8s32, the bf16 matmul primitive; see
// onednn_peer.h), under whatever ISA cap the process runs with.
//
// Exactness (no tuned tolerances):
//  - int8: the int32 dot products are exact on every path, so results equal
//    the reference exactly.  oneDNN may round an exact .5 tie of
//    alpha * dot + beta * C + co the other way (it rounds half away from
//    zero on some paths): a difference of 1 is accepted only there.
//  - bf16, integer-valued data (|a|, |b| <= 4, K * 16 < 2^24): every partial
//    sum is an exact fp32 integer, so anvil, oneDNN and the reference agree
//    exactly (with alpha in {1, -0.5} and C drawn as in the fp32 tests).
//  - bf16, random fractions (8 significant bits, magnitudes 2^-8..2): the
//    products are exact and each of the K additions rounds once, plus alpha
//    and beta: the bound tu::gemm_error_bound(K, T) of the fp32 tests
//    (gamma_{K+3} * T) holds for anvil and for oneDNN.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "lowp/lp_backend.h"
#include "lowp_util.h"
#include "onednn_peer.h"
#include "test_util.h"

namespace {

using lt::obuf;
using lt::shape;

const int64_t kDims[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 127, 255};
constexpr int kNumDims = int(sizeof(kDims) / sizeof(kDims[0]));
const char kTrans[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
constexpr int32_t kCSentinel = 0x5a5a5a5a;

// A deterministic walk over the shape mixes: every dimension value appears
// as M, N and K against varied partners, plus K that is no multiple of 2 or
// 4, long K, and padded leading dimensions.
std::vector<shape> shape_mix(int trans, int count, uint64_t seed) {
    tu::rng r(seed);
    std::vector<shape> out;
    for (int t = 0; t < count; ++t) {
        shape s;
        s.ta = kTrans[trans][0];
        s.tb = kTrans[trans][1];
        s.M = kDims[t % kNumDims];
        s.N = kDims[(t * 5 + 3) % kNumDims];
        s.K = kDims[(t * 7 + 1) % kNumDims];
        if (t % 6 == 5) s.K = r.ival(1, 9);           // K tails of the k-groups
        if (t % 11 == 10) s.K = 1000 + r.ival(0, 3);  // K mod 4 = 0..3
        s.pad_a = t % 3 == 0 ? 0 : r.ival(1, 17);
        s.pad_b = t % 4 == 0 ? 0 : r.ival(1, 17);
        s.pad_c = t % 2 == 0 ? 0 : r.ival(1, 9);
        out.push_back(s);
    }
    // Few rows over a long K: with B 'T' the in-place dot paths (the JIT's
    // up to M = 16 from K = 64; Highway's M <= 2 from K = 64, M <= 4 from
    // K = 512), which the walk above never reaches.  Then the fp32 issue's
    // 1000 as M and as N (several row / column blocks and their tails), with
    // short and odd K.  {M, N, K, pad_b, pad_c}
    const int64_t extra[][5] = {{1, 33, 1001, 0, 0},   {2, 17, 64, 5, 0},   {3, 31, 613, 0, 0},
                                {4, 16, 515, 5, 0},    {1000, 33, 65, 0, 3}, {17, 1000, 31, 0, 3},
                                {1000, 1000, 7, 0, 3}};
    for (const auto &f : extra) {
        shape s;
        s.ta = kTrans[trans][0];
        s.tb = kTrans[trans][1];
        s.M = f[0];
        s.N = f[1];
        s.K = f[2];
        s.pad_b = f[3];
        s.pad_c = f[4];
        out.push_back(s);
    }
    return out;
}

// ------------------------------------------------------------------ int8

struct int8_params {
    bool a_signed = false;
    char offsetc = 'F';
    float alpha = 1, beta = 0;
    int32_t ao = 0, bo = 0;
    bool full_range = false;  // A and B over the whole u8/s8 range
    bool co_zero = false;     // C offsets all zero (with 'F', alpha 1, beta 0, bo 0: the
                              // bare product, which the JIT kernels store themselves)
    bool vs_onednn = true;
};

void run_int8(const shape &s, const int8_params &q, uint64_t seed) {
    CAPTURE(s.str());
    INFO("signed=", q.a_signed, " offsetc=", q.offsetc, " alpha=", q.alpha, " beta=", q.beta,
         " ao=", q.ao, " bo=", q.bo, " full=", q.full_range, " seed=", seed);
    tu::rng r(seed);
    obuf<uint8_t> A(s.a_rows() * s.lda(), int(seed % 3));
    obuf<int8_t> B(s.b_rows() * s.ldb(), int(seed % 5));
    for (int64_t t = 0; t < s.a_rows() * s.lda(); ++t)
        A.p[t] = q.full_range ? uint8_t(r.ival(0, 255))
                              : uint8_t(q.a_signed ? int8_t(r.ival(-8, 8)) : r.ival(0, 8));
    for (int64_t t = 0; t < s.b_rows() * s.ldb(); ++t)
        B.p[t] = int8_t(q.full_range ? r.ival(-128, 127) : r.ival(-8, 8));
    if (q.full_range) {  // the corners that catch a saturating u8 x s8 pair sum
        A.p[0] = q.a_signed ? uint8_t(0x80) : 255;
        B.p[0] = -128;
    }
    const int64_t ldc = s.ldc();
    std::vector<int32_t> C0(size_t(s.M * ldc), kCSentinel);
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j) C0[size_t(i * ldc + j)] = int32_t(r.ival(-1000, 1000));
    const int64_t nco = q.offsetc == 'F' ? 1 : q.offsetc == 'C' ? s.M : s.N;
    std::vector<int32_t> co(static_cast<size_t>(nco));
    for (auto &v : co) v = q.co_zero ? 0 : int32_t(r.ival(-50, 50));

    std::vector<int32_t> C = C0;
    anvil_status_t st;
    if (q.a_signed)
        st = anvil_gemm_s8s8s32(s.ta, s.tb, q.offsetc, s.M, s.N, s.K, q.alpha,
                                reinterpret_cast<const int8_t *>(A.p), s.lda(), int8_t(q.ao), B.p,
                                s.ldb(), int8_t(q.bo), q.beta, C.data(), ldc, co.data());
    else
        st = anvil_gemm_u8s8s32(s.ta, s.tb, q.offsetc, s.M, s.N, s.K, q.alpha, A.p, s.lda(),
                                uint8_t(q.ao), B.p, s.ldb(), int8_t(q.bo), q.beta, C.data(), ldc,
                                co.data());
    REQUIRE(st == anvil_success);

    std::vector<int32_t> D = C0;
    // oneDNN 2.6 returns without touching C when K == 0.  With an alpha
    // that is not an integer and K beyond a few hundred it also rounds
    // alpha * (partial dot product) per K block (measured: 64x64x1000 with
    // alpha = 0.5 differs from round(alpha * dot) in 829 of 4096 non-tie
    // elements), so it is only a peer there for the reference's exact value.
    const bool alpha_int = q.alpha == std::nearbyint(q.alpha);
    const bool vs_onednn = q.vs_onednn && s.K > 0 && (alpha_int || s.K <= 128) &&
                           peer::gemm_x8s8s32(q.a_signed, s.ta, s.tb, q.offsetc, s.M, s.N, s.K,
                                              q.alpha, A.p, s.lda(), q.ao, B.p, s.ldb(), q.bo,
                                              q.beta, D.data(), ldc, co.data());

    int64_t bad_ref = 0, bad_dnnl = 0, bad_pad = 0;
    std::string first;
    // Contiguous copies with the zero points applied (B by column, A by
    // row): see ref::sgemm_double for why.
    std::vector<int32_t> b_cols(size_t(s.N * s.K)), a_row(static_cast<size_t>(s.K));
    for (int64_t j = 0; j < s.N; ++j)
        for (int64_t k = 0; k < s.K; ++k)
            b_cols[size_t(j * s.K + k)] = int32_t(B.p[s.b_at(k, j)]) - q.bo;
    for (int64_t i = 0; i < s.M; ++i) {
        for (int64_t k = 0; k < s.K; ++k) {
            const uint8_t av = A.p[s.a_at(i, k)];
            a_row[size_t(k)] = (q.a_signed ? int32_t(int8_t(av)) : int32_t(av)) - q.ao;
        }
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = size_t(i * ldc + j);
            if (j >= s.N) {
                bad_pad += C[at] != kCSentinel;
                continue;
            }
            const int32_t *b_col = b_cols.data() + j * s.K;
            int64_t dot = 0;
            for (int64_t k = 0; k < s.K; ++k) dot += int64_t(a_row[size_t(k)]) * b_col[k];
            const int32_t off = q.offsetc == 'F' ? co[0] : q.offsetc == 'C' ? co[size_t(i)] : co[size_t(j)];
            const int32_t want = lt::int8_expected(dot, q.alpha, q.beta, C0[at], off);
            if (C[at] != want) {
                if (bad_ref++ == 0)
                    first = "(" + std::to_string(i) + "," + std::to_string(j) + ") anvil " +
                            std::to_string(C[at]) + " want " + std::to_string(want);
            }
            if (vs_onednn && D[at] != C[at]) {
                const bool tie = lt::int8_is_tie(dot, q.alpha, q.beta, C0[at], off);
                if (!(tie && std::abs(int64_t(D[at]) - int64_t(C[at])) == 1)) {
                    if (bad_dnnl++ == 0 && first.empty())
                        first = "(" + std::to_string(i) + "," + std::to_string(j) + ") anvil " +
                                std::to_string(C[at]) + " onednn " + std::to_string(D[at]);
                }
            }
        }
    }
    INFO(first);
    CHECK(bad_ref == 0);
    CHECK(bad_dnnl == 0);
    CHECK(bad_pad == 0);
}

TEST_CASE("lowp int8: u8s8s32 and s8s8s32 match oneDNN and the reference over the shape mixes") {
    const float kAB[5][2] = {{1.f, 0.f}, {1.f, 1.f}, {0.5f, 0.f}, {2.f, 0.5f}, {-1.f, 1.f}};
    const char kOff[3] = {'F', 'C', 'R'};
    uint64_t seed = 1;
    for (int sgn = 0; sgn < 2; ++sgn)
        for (int trans = 0; trans < 4; ++trans)
            for (const shape &s : shape_mix(trans, 40, 100 + trans + 10 * sgn)) {
                int8_params q;
                q.a_signed = sgn != 0;
                q.offsetc = kOff[seed % 3];
                q.alpha = kAB[seed % 5][0];
                q.beta = kAB[seed % 5][1];
                q.ao = seed % 4 == 1 ? (q.a_signed ? -3 : 5) : 0;
                q.bo = seed % 4 >= 2 ? -2 : 0;
                run_int8(s, q, seed++);
            }
}

// The random offsets above almost never give the bare product (alpha 1,
// beta 0, fixed offset 0, bo 0), the case whose int32 C the JIT kernels of
// the last K block store directly (lowp::EPI_S32):
// every shape mix again in that form, with and without an A zero point
// (with one, the column-sum compensation runs in the kernels), full-range
// data so the int32 sums use every bit.
TEST_CASE("lowp int8: the bare product (alpha 1, beta 0, no offsets) over the shape mixes") {
    uint64_t seed = 500;
    for (int sgn = 0; sgn < 2; ++sgn)
        for (int trans = 0; trans < 4; ++trans)
            for (const shape &s : shape_mix(trans, 16, 500 + trans + 10 * sgn)) {
                int8_params q;
                q.a_signed = sgn != 0;
                q.co_zero = true;
                q.full_range = seed % 2 == 0;
                q.ao = seed % 3 == 1 ? (q.a_signed ? -3 : 5) : 0;
                run_int8(s, q, seed++);
            }
}

TEST_CASE("lowp int8: full u8/s8 ranges, zero points and long K are exact") {
    const int64_t kK[] = {1, 3, 4, 5, 63, 64, 65, 1023, 4097, 8192};
    uint64_t seed = 7;
    for (int sgn = 0; sgn < 2; ++sgn)
        for (int64_t K : kK) {
            shape s;
            s.M = 1 + (seed % 13);
            s.N = 17 + (seed % 40);
            s.K = K;
            s.tb = seed % 2 ? 'T' : 'N';
            int8_params q;
            q.a_signed = sgn != 0;
            q.full_range = true;
            q.ao = q.a_signed ? -128 : 255;
            q.bo = 127;
            q.offsetc = 'R';
            q.vs_onednn = true;
            run_int8(s, q, seed++);
            q.ao = 0;
            q.bo = 0;
            run_int8(s, q, seed++);
        }
}

TEST_CASE("lowp int8: row-major B in place, rows 4 KiB apart and not, matches oneDNN and the reference") {
    // The in-place row-B walk (lp_inplace.cpp, VNNI caps; packed paths
    // elsewhere): K in blocks of 64 rows, or 16 where B's rows are a
    // multiple of 4 KiB apart; M up to 8 (9 rows with the row of ones that
    // a B zero point or s8 A adds), chunks of up to 4 rows.
    uint64_t seed = 900;
    for (int sgn = 0; sgn < 2; ++sgn)
        for (int64_t M : {1, 3, 4, 5, 8})
            for (int64_t K : {15, 64, 65, 333})
                for (int64_t ldb : {int64_t(0), int64_t(4096), int64_t(8192)}) {
                    shape s;
                    s.M = M;
                    s.N = 70 + (seed % 3) * 61;
                    s.K = K;
                    s.pad_b = ldb ? ldb - s.N : 0;
                    int8_params q;
                    q.a_signed = sgn != 0;
                    q.full_range = true;
                    q.bo = seed % 2 ? -2 : 0;
                    q.offsetc = 'F';
                    run_int8(s, q, seed++);
                }
}

TEST_CASE("lowp int8: saturation of the int32 result and K == 0, alpha == 0") {
    // C near INT32_MAX plus a large positive dot product saturates.
    {
        const uint8_t A[4] = {255, 255, 255, 255};
        const int8_t B[4] = {127, 127, 127, 127};
        int32_t C[1] = {INT32_MAX - 10};
        const int32_t co[1] = {0};
        REQUIRE(anvil_gemm_u8s8s32('N', 'N', 'F', 1, 1, 4, 1.0f, A, 4, 0, B, 1, 0, 1.0f, C, 1, co) ==
                anvil_success);
        CHECK(C[0] == INT32_MAX);
        C[0] = INT32_MIN + 10;
        const int8_t Bn[4] = {-128, -128, -128, -128};
        REQUIRE(anvil_gemm_u8s8s32('N', 'N', 'F', 1, 1, 4, 3.0f, A, 4, 0, Bn, 1, 0, 1.0f, C, 1, co) ==
                anvil_success);
        CHECK(C[0] == INT32_MIN);
    }
    // K == 0 and alpha == 0: C = beta * C + co, A and B never read.
    for (int k0 = 0; k0 < 2; ++k0) {
        int32_t C[6] = {1, 2, 3, 4, 5, 6};
        const int32_t co[3] = {10, 20, 30};
        const int64_t K = k0 ? 0 : 5;
        const float alpha = k0 ? 1.0f : 0.0f;
        REQUIRE(anvil_gemm_s8s8s32('N', 'N', 'R', 2, 3, K, alpha, nullptr, 5, 3, nullptr, 3, 4, 2.0f,
                                   C, 3, co) == anvil_success);
        const int32_t want[6] = {12, 24, 36, 18, 30, 42};
        for (int t = 0; t < 6; ++t) CHECK(C[t] == want[t]);
    }
}

// ------------------------------------------------------------------ bf16

enum class bf16_fill { integer, fraction };

void run_bf16(const shape &s, bf16_fill fill, float alpha, float beta, uint64_t seed) {
    CAPTURE(s.str());
    INFO("fill=", fill == bf16_fill::integer ? "integer" : "fraction", " alpha=", alpha,
         " beta=", beta, " seed=", seed);
    tu::rng r(seed);
    obuf<uint16_t> A(s.a_rows() * s.lda(), 2 * int(seed % 3));
    obuf<uint16_t> B(s.b_rows() * s.ldb(), 2 * int(seed % 5));
    auto gen = [&]() { return fill == bf16_fill::integer ? lt::bf16_small_int(r) : lt::bf16_frac(r); };
    for (int64_t t = 0; t < s.a_rows() * s.lda(); ++t) A.p[t] = gen();
    for (int64_t t = 0; t < s.b_rows() * s.ldb(); ++t) B.p[t] = gen();
    const int64_t ldc = s.ldc();
    std::vector<float> C0(size_t(s.M * ldc), tu::sentinel());
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j)
            C0[size_t(i * ldc + j)] = beta == 0.0f ? tu::qnan()
                                      : fill == bf16_fill::integer ? r.exact_c(beta)
                                                                  : r.frac();
    std::vector<float> C = C0, D = C0;
    REQUIRE(anvil_gemm_bf16bf16f32(s.ta, s.tb, s.M, s.N, s.K, alpha, A.p, s.lda(), B.p, s.ldb(),
                                   beta, C.data(), ldc) == anvil_success);
    const bool vs_onednn = peer::bf16_matmul(s, alpha, A.p, B.p, beta, D.data());

    int64_t bad = 0, bad_dnnl = 0, bad_pad = 0;
    std::string first;
    // The reference reads contiguous float copies (B by column, A by row):
    // see ref::sgemm_double for why.
    const std::vector<float> b_cols = lt::b_columns_f32(s, B.p);
    std::vector<float> a_row(static_cast<size_t>(s.K));
    for (int64_t i = 0; i < s.M; ++i) {
        for (int64_t k = 0; k < s.K; ++k) a_row[size_t(k)] = lt::bf16_to_f32(A.p[s.a_at(i, k)]);
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = size_t(i * ldc + j);
            if (j >= s.N) {
                bad_pad += tu::bits(C[at]) != tu::kSentinelBits;
                continue;
            }
            const float *b_col = b_cols.data() + j * s.K;
            double e = 0, t = 0;
            for (int64_t k = 0; k < s.K; ++k) {
                const double p = double(a_row[size_t(k)]) * double(b_col[k]);
                e += p;
                t += std::fabs(p);
            }
            e *= alpha;
            t *= std::fabs(alpha);
            if (beta != 0.0f) {
                e += double(beta) * double(C0[at]);
                t += std::fabs(double(beta) * double(C0[at]));
            }
            const double bound = fill == bf16_fill::integer ? 0.0 : tu::gemm_error_bound(s.K, t);
            const bool ok = std::fabs(double(C[at]) - e) <= bound;
            const bool ok_dnnl = !vs_onednn || std::fabs(double(D[at]) - e) <= bound;
            if (!ok && bad++ == 0)
                first = "(" + std::to_string(i) + "," + std::to_string(j) + ") anvil " +
                        std::to_string(C[at]) + " exact " + std::to_string(e);
            if (!ok_dnnl && bad_dnnl++ == 0 && first.empty())
                first = "(" + std::to_string(i) + "," + std::to_string(j) + ") onednn " +
                        std::to_string(D[at]) + " exact " + std::to_string(e);
        }
    }
    INFO(first);
    CHECK(bad == 0);
    CHECK(bad_dnnl == 0);
    CHECK(bad_pad == 0);
}

TEST_CASE("lowp bf16: bf16bf16f32 matches oneDNN's matmul and the reference over the shape mixes") {
    const float kAB[6][2] = {{1.f, 0.f},   {-0.5f, 1.f}, {1.f, 0.3f},
                             {-0.5f, 0.f}, {1.f, 1.f},   {-0.5f, 0.3f}};
    uint64_t seed = 1;
    for (int trans = 0; trans < 4; ++trans)
        for (const shape &s : shape_mix(trans, 36, 300 + trans)) {
            const float alpha = kAB[seed % 6][0], beta = kAB[seed % 6][1];
            run_bf16(s, bf16_fill::integer, alpha, beta, seed++);
            run_bf16(s, bf16_fill::fraction, alpha, beta, seed++);
        }
}

TEST_CASE("lowp bf16: long K within the derived bound; K == 0 and alpha == 0 scale C") {
    const int64_t kK[] = {2047, 2048, 4097, 8192};
    uint64_t seed = 900;
    for (int64_t K : kK) {
        shape s;
        s.M = 5;
        s.N = 33;
        s.K = K;
        s.tb = K % 2 ? 'T' : 'N';
        run_bf16(s, bf16_fill::fraction, 1.0f, 0.0f, seed++);
        run_bf16(s, bf16_fill::integer, 1.0f, 1.0f, seed++);
    }
    float C[4] = {1, 2, 3, tu::qnan()};
    REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, C, 2) ==
            anvil_success);
    CHECK(C[0] == 0.5f);
    CHECK(C[2] == 1.5f);
    REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', 2, 2, 3, 0.0f, nullptr, 3, nullptr, 2, 0.0f, C, 2) ==
            anvil_success);
    for (float v : C) CHECK(v == 0.0f);  // beta == 0: the NaN is not read
}

// M > 256: B is packed ahead by the call (several M blocks share it) and
// runs in long K blocks as prepacked weights do (up to 512 groups): here
// two or three of them, with a short last tail, both layouts of B.
TEST_CASE("lowp: B packed ahead by the call, several M blocks and K blocks") {
    uint64_t seed = 1300;
    for (char tb : {'N', 'T'}) {
        shape s;
        s.M = 301;
        s.N = 45;
        s.tb = tb;
        s.K = 2101;  // bf16: 1051 pairs, three K blocks
        run_bf16(s, bf16_fill::integer, 1.0f, 1.0f, seed++);
        run_bf16(s, bf16_fill::fraction, 1.0f, 0.0f, seed++);
        s.K = 4501;  // int8: 1126 quads, three K blocks
        int8_params q;
        q.full_range = true;
        q.ao = 255;
        q.bo = -7;
        q.offsetc = 'C';
        q.vs_onednn = true;
        run_int8(s, q, seed++);
        q.a_signed = true;
        q.ao = 0;
        q.bo = 0;
        q.offsetc = 'F';
        q.co_zero = true;  // the bare product: stored by the kernels
        run_int8(s, q, seed++);
    }
}

// One row tile of a small M whose B the tasks pack themselves: several K
// blocks (the packed block stays in L2; no longer all of K in one block),
// 512-column tasks with a ragged last one, and N not a multiple of 16.  B
// 'T' with <= 8 rows is packed and used panel by panel (3 and 8 rows; 9
// and 12 take the block-by-block walk); int8 B 'T' reaches that path on
// the caps without the VNNI dot kernels.
TEST_CASE("lowp: small M, B packed in the tasks, several K blocks and wide tasks") {
    uint64_t seed = 1400;
    for (char tb : {'N', 'T'}) {
        for (int64_t m : {3, 8, 9, 12}) {
            shape s;
            s.M = m;
            s.N = 2100;  // 5 tasks of 512 columns, the last 52 wide
            s.tb = tb;
            s.K = 1537;  // bf16: 769 pairs; int8: 385 quads: K blocks of both
            // Under emulation two of the four runs per row count, taken in
            // turn, so that every run still meets both layouts of B and
            // both row paths (3 / 8 rows panel by panel, 9 / 12 block by
            // block).
            const int turn = int(m % 2) + (tb == 'T');
            auto runs = [&](int r) { return tu::emulated_sweeps_pair(r, turn, 2, 0); };
            if (runs(0)) run_bf16(s, bf16_fill::integer, 1.0f, 0.0f, seed);
            ++seed;
            if (runs(1)) run_bf16(s, bf16_fill::fraction, 1.0f, 1.0f, seed);
            ++seed;
            int8_params q;
            q.full_range = true;
            q.ao = 3;
            q.bo = -5;
            q.offsetc = 'R';
            q.vs_onednn = true;
            if (runs(2)) run_int8(s, q, seed);
            ++seed;
            q.ao = 0;
            q.bo = 0;
            q.offsetc = 'F';
            q.co_zero = true;
            if (runs(3)) run_int8(s, q, seed);
            ++seed;
        }
    }
}

// u8 and bf16 rows of A along K (A 'N', K a whole number of groups, no
// row sums) are read where they are, not copied: the gap between rows
// (lda > K) holds garbage (0xff bytes; bf16 NaNs, which would poison any
// product they entered) and the last row ends at a guard page, so a read
// past K would show in C or fault.  Exact integer data, against the
// reference and oneDNN.
TEST_CASE("lowp: A read in place reads nothing past K of each row") {
    tu::fault_reporter fr;
    uint64_t seed = 1400;
    for (int64_t M : {1, 13, 29, 100})
        for (int64_t K : {4, 64, 132})
            for (char tb : {'N', 'T'}) {
                const int64_t N = 37, lda = K + 12;
                CAPTURE(M);
                CAPTURE(K);
                CAPTURE(tb);
                fr.set("A in place: M=" + std::to_string(M) + " K=" + std::to_string(K));
                tu::rng r(seed++);
                const int64_t ldb = tb == 'N' ? N : K;
                std::vector<int8_t> B(size_t((tb == 'N' ? K : N) * ldb));
                for (auto &v : B) v = int8_t(r.ival(-128, 127));
                // u8 x s8 -> s32, the bare product (no row sums: bo = 0).
                tu::guarded ga(size_t(M * lda));
                auto *a8 = reinterpret_cast<uint8_t *>(ga.end()) - (M - 1) * lda - K;
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t k = 0; k < lda && i * lda + k < (M - 1) * lda + K; ++k)
                        a8[i * lda + k] = k < K ? uint8_t(r.ival(0, 255)) : 0xff;
                std::vector<int32_t> C(size_t(M * N), 0x5a5a5a5a);
                const int32_t co = 0;
                REQUIRE(anvil_gemm_u8s8s32('N', tb, 'F', M, N, K, 1.0f, a8, lda, 0, B.data(), ldb,
                                           0, 0.0f, C.data(), N, &co) == anvil_success);
                int64_t bad = 0;
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t j = 0; j < N; ++j) {
                        int64_t dot = 0;
                        for (int64_t k = 0; k < K; ++k)
                            dot += int64_t(a8[i * lda + k]) *
                                   (tb == 'N' ? B[size_t(k * ldb + j)] : B[size_t(j * ldb + k)]);
                        bad += C[size_t(i * N + j)] != dot;
                    }
                CHECK(bad == 0);
                std::vector<int32_t> Cp(C.size(), 0);
                if (peer::gemm_x8s8s32(false, 'N', tb, 'F', M, N, K, 1.0f, a8, lda, 0, B.data(),
                                       ldb, 0, 0.0f, Cp.data(), N, &co))
                    CHECK(std::memcmp(C.data(), Cp.data(), C.size() * 4) == 0);
                // bf16 x bf16 -> f32 with small integers (exact).
                tu::guarded gb(size_t(M * lda * 2));
                auto *a16 = reinterpret_cast<uint16_t *>(gb.end()) - (M - 1) * lda - K;
                std::vector<uint16_t> Bb(B.size());
                for (size_t e = 0; e < Bb.size(); ++e) Bb[e] = lt::f32_to_bf16(float(B[e] % 5));
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t k = 0; k < lda && i * lda + k < (M - 1) * lda + K; ++k)
                        a16[i * lda + k] = k < K ? lt::f32_to_bf16(r.small_int()) : 0x7fc0;
                std::vector<float> Cf(size_t(M * N), tu::qnan());
                REQUIRE(anvil_gemm_bf16bf16f32('N', tb, M, N, K, 1.0f, a16, lda, Bb.data(), ldb, 0.0f,
                                               Cf.data(), N) == anvil_success);
                bad = 0;
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t j = 0; j < N; ++j) {
                        double dot = 0;
                        for (int64_t k = 0; k < K; ++k)
                            dot += double(lt::bf16_to_f32(a16[i * lda + k])) *
                                   lt::bf16_to_f32(tb == 'N' ? Bb[size_t(k * ldb + j)]
                                                             : Bb[size_t(j * ldb + k)]);
                        bad += double(Cf[size_t(i * N + j)]) != dot;
                    }
                CHECK(bad == 0);
                lt::shape sh;
                sh.tb = tb;
                sh.M = M;
                sh.N = N;
                sh.K = K;
                sh.pad_a = lda - K;
                std::vector<float> Cd(Cf.size(), 0.0f);
                if (peer::bf16_matmul(sh, 1.0f, a16, Bb.data(), 0.0f, Cd.data()))
                    CHECK(std::memcmp(Cf.data(), Cd.data(), Cf.size() * 4) == 0);
            }
}

// bf16 with B transposed at M <= 2 and a B of >= 1 MiB runs the Highway
// dot kernels (B read in place) on the JIT tier too: bitwise the same as
// the same product with B stored K x N (the row-B / packed kernels), on
// random fractions (any change in the order of the sums shows); and equal
// to oneDNN's bf16 matmul on small integers.
TEST_CASE("lowp bf16: B transposed and read in place gives the bits of B not transposed") {
    // AMX tiles sum in tdpbf16ps' order (README), the small-M in-place
    // kernels in vdpbf16ps': the bits differ there by design.
    if (anvil::lowp::select_lp_backend(anvil::lowp::lp_kind::bf16).uses_tiles()) return;
    uint64_t seed = 1500;
    // One row with a B larger than L3 (on the JIT's AVX512-BF16 tier the
    // only dot-path case; below it the small ones take the Highway dot
    // kernels): odd K, N not a multiple of the tiles.
    const int64_t big_k = 2051, big_n = int64_t(anvil::cpu::info().caches.l3) / (2 * big_k) + 17;
    const std::vector<std::pair<int64_t, int64_t>> nks = {{600, 1024}, {4100, 130}, {97, 6001}, {big_n, big_k}};
    for (int64_t M : {1, 2, 3})
        for (const auto &nk : nks) {
            const int64_t N = nk.first, K = nk.second;
            if (K == big_k && M > 1) continue;
            // Under emulation (no JIT tier there) the small shapes already
            // take the dot kernels: the B larger than L3 is left out.
            if (K == big_k && tu::emulated()) continue;
            if (K == big_k && anvil::cpu::effective_tier(false) >= anvil_isa_avx512_core_bf16) {
                char text[2048];
                size_t needed = 0;
                REQUIRE(anvil_explain_gemm(anvil_dt_bf16, anvil_dt_bf16, 'N', 'T', M, N, K, text,
                                           sizeof(text), &needed) == anvil_success);
                CHECK(std::string(text).find("inplace_dot") != std::string::npos);
            }
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            tu::rng r(seed++);
            std::vector<uint16_t> A(size_t(M * K)), Bt(size_t(N * K)), Bn(size_t(K * N));
            for (auto &v : A) v = lt::f32_to_bf16(r.frac());
            for (int64_t j = 0; j < N; ++j)
                for (int64_t k = 0; k < K; ++k) {
                    const uint16_t v = lt::f32_to_bf16(r.frac());
                    Bt[size_t(j * K + k)] = v;
                    Bn[size_t(k * N + j)] = v;
                }
            std::vector<float> Ct(size_t(M * N)), Cn(size_t(M * N));
            REQUIRE(anvil_gemm_bf16bf16f32('N', 'T', M, N, K, 1.0f, A.data(), K, Bt.data(), K, 0.0f,
                                           Ct.data(), N) == anvil_success);
            REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', M, N, K, 1.0f, A.data(), K, Bn.data(), N, 0.0f,
                                           Cn.data(), N) == anvil_success);
            CHECK(std::memcmp(Ct.data(), Cn.data(), Ct.size() * 4) == 0);
            // oneDNN on the same path with small integers (every sum exact,
            // so any order gives the same bits).
            for (auto &v : A) v = lt::f32_to_bf16(r.small_int());
            for (auto &v : Bt) v = lt::f32_to_bf16(r.small_int());
            REQUIRE(anvil_gemm_bf16bf16f32('N', 'T', M, N, K, 1.0f, A.data(), K, Bt.data(), K, 0.0f,
                                           Ct.data(), N) == anvil_success);
            lt::shape sh;
            sh.tb = 'T';
            sh.M = M;
            sh.N = N;
            sh.K = K;
            std::vector<float> Cd(Ct.size(), 0.0f);
            if (peer::bf16_matmul(sh, 1.0f, A.data(), Bt.data(), 0.0f, Cd.data()))
                CHECK(std::memcmp(Ct.data(), Cd.data(), Ct.size() * 4) == 0);
        }
}

// ---------------------------------------------------------- random shapes

// Seeded random problems (the same every run) on top of the structured
// mixes: shapes 1..300 with small-M bias, every transpose, padding,
// alpha/beta, offsets and zero points, int8 in full range or small values.
TEST_CASE("lowp: random BLAS-style problems match the reference and oneDNN") {
    tu::rng r(4242);
    const float kAlpha[] = {1.f, 0.5f, -1.f, 2.f};
    const float kBeta[] = {0.f, 1.f, 0.5f};
    const char kOff[] = {'F', 'C', 'R'};
    for (int c = 0; c < 80; ++c) {
        shape s;
        s.M = r.ival(0, 2) == 0 ? r.ival(1, 16) : r.ival(1, 300);
        s.N = r.ival(1, 300);
        s.K = r.ival(0, 3) == 0 ? r.ival(1, 12) : r.ival(1, 700);
        s.ta = r.ival(0, 1) ? 'T' : 'N';
        s.tb = r.ival(0, 1) ? 'T' : 'N';
        s.pad_a = r.ival(0, 1) ? 0 : r.ival(1, 13);
        s.pad_b = r.ival(0, 1) ? 0 : r.ival(1, 13);
        s.pad_c = r.ival(0, 1) ? 0 : r.ival(1, 13);
        int8_params q;
        q.a_signed = r.ival(0, 1) != 0;
        q.offsetc = kOff[r.ival(0, 2)];
        q.alpha = kAlpha[r.ival(0, 3)];
        q.beta = kBeta[r.ival(0, 2)];
        q.full_range = r.ival(0, 1) != 0;
        if (r.ival(0, 1)) q.ao = q.a_signed ? int32_t(r.ival(-128, 127)) : int32_t(r.ival(0, 255));
        if (r.ival(0, 1)) q.bo = int32_t(r.ival(-128, 127));
        run_int8(s, q, 9000 + uint64_t(c));
        // bf16 with integer data is exact only for beta in {0, 1, 0.3} (see
        // tu::rng::exact_c), so 0.3 stands in for 0.5 there.
        const float kBf16Beta[] = {0.f, 1.f, 0.3f};
        run_bf16(s, c % 3 ? bf16_fill::fraction : bf16_fill::integer, c % 2 ? 1.f : -0.5f,
                 kBf16Beta[r.ival(0, 2)], 9500 + uint64_t(c));
    }
}

// ------------------------------------------------------------- threads

TEST_CASE("lowp: results are bitwise identical for 1 and 2 threads and a caller pool") {
    // (The pool also reports 300 workers while it runs 3: splits for many
    // more workers than the machine has.)
    const int initial = anvil_get_num_threads();
    tu::rng r(42);
    const int64_t M = 200, N = 300, K = 700;
    std::vector<uint16_t> A(size_t(M * K)), B(size_t(K * N));
    for (auto &v : A) v = lt::bf16_frac(r);
    for (auto &v : B) v = lt::bf16_frac(r);
    std::vector<uint8_t> A8(size_t(M * K));
    std::vector<int8_t> B8(size_t(K * 900));  // also 900 x K for the small-M case
    for (auto &v : A8) v = uint8_t(r.ival(0, 255));
    for (auto &v : B8) v = int8_t(r.ival(-128, 127));
    std::vector<float> C[4];
    std::vector<int32_t> C8[4], CS[4];
    const int32_t co = 3;
    tu::std_thread_pool pool;
    pool.threads = 3;
    for (int t = 0; t < 4; ++t) {
        if (t < 2)
            REQUIRE(anvil_set_num_threads(t + 1) == anvil_success);
        else  // a caller's pool with 3 threads that reports 3, then 300 workers
            REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, t == 2 ? 3 : 300) ==
                    anvil_success);
        C[t].assign(size_t(M * N), 0.0f);
        C8[t].assign(size_t(M * N), 0);
        REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                                       C[t].data(), N) == anvil_success);
        REQUIRE(anvil_gemm_u8s8s32('N', 'T', 'F', M, N, K, 1.0f, A8.data(), K, 7, B8.data(), K, -3,
                                   0.0f, C8[t].data(), N, &co) == anvil_success);
        // Small M with transposed B: the dot-kernel path, split over N.
        // (7 x 900 x 700 = 8.8 MOP: enough work for 2 threads.)
        CS[t].assign(size_t(7 * 900), 0);
        REQUIRE(anvil_gemm_s8s8s32('N', 'T', 'F', 7, 900, K, 1.0f,
                                   reinterpret_cast<const int8_t *>(A8.data()), K, 7, B8.data(), K,
                                   -3, 0.0f, CS[t].data(), 900, &co) == anvil_success);
    }
    REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
    anvil_set_num_threads(initial);
    CHECK(pool.calls.load() > 0);
    for (int t = 1; t < 4; ++t) {
        CAPTURE(t);
        CHECK(std::memcmp(C[0].data(), C[t].data(), C[0].size() * 4) == 0);
        CHECK(C8[0] == C8[t]);
        CHECK(CS[0] == CS[t]);
    }
}

}  // namespace

// ------------------------------------------- every ISA path, same bits

namespace {

TEST_SUITE("once") {
// Kernels on A widened to fp32 (lp_ukernel.h's a_f32; the default on CPUs
// whose vdpbf16ps is slow, cpu_info::bf16_dot_half_rate) against the
// vdpbf16ps kernels: the same bits through the whole driver -- every
// transpose, padded leading dims, tails of every tile, odd K, several K
// blocks, B packed in the tasks and ahead, alpha / beta, and the matmul
// handle's fused chain (bias, residual add, gelu_tanh, bf16 output) on
// prepacked weights.  Random fractions, so the rounding order shows.
TEST_CASE("lowp bf16: kernels on widened A give the vdpbf16ps kernels' bits") {
    if (!lt::widened_bf16_kernels_here()) return;
    const lt::widen_override_scope restore;
    tu::rng r(77);
    struct dims {
        int64_t M, N, K;
    };
    const dims shapes[] = {{1, 17, 3},    {4, 70, 301},   {13, 33, 2},  {37, 300, 1030},
                           {100, 64, 129}, {301, 47, 515}, {12, 4097, 64}};
    int64_t compared = 0;
    for (const dims &s : shapes)
        for (const char *tr : {"NN", "NT", "TN", "TT"}) {
            const int64_t M = s.M, N = s.N, K = s.K;
            const bool ta = tr[0] == 'T', tb = tr[1] == 'T';
            const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
            std::vector<uint16_t> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb));
            for (auto &v : A) v = lt::bf16_frac(r);
            for (auto &v : B) v = lt::bf16_frac(r);
            std::vector<float> C0(size_t(M * ldc));
            for (auto &v : C0) v = r.frac();
            std::vector<float> got[2];
            for (int widen = 0; widen <= 1; ++widen) {
                anvil::lowp::set_widen_bf16_a_override(widen);
                got[widen] = C0;
                REQUIRE(anvil_gemm_bf16bf16f32(tr[0], tr[1], M, N, K, -0.75f, A.data(), lda, B.data(),
                                               ldb, 0.5f, got[widen].data(), ldc) == anvil_success);
            }
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            CAPTURE(tr);
            CHECK(std::memcmp(got[0].data(), got[1].data(), got[0].size() * 4) == 0);
            ++compared;
        }
    // The matmul handle: prepacked weights, the fused chain, bf16 output.
    for (const dims &s : shapes) {
        const int64_t M = s.M, N = s.N, K = s.K;
        std::vector<uint16_t> A(size_t(M * K)), B(size_t(K * N));
        for (auto &v : A) v = lt::bf16_frac(r);
        for (auto &v : B) v = lt::bf16_frac(r);
        std::vector<float> bias(static_cast<size_t>(N)), residual(static_cast<size_t>(M * N));
        for (auto &v : bias) v = r.frac();
        for (auto &v : residual) v = r.frac();
        const anvil_post_op_t ops[] = {lt::binary(anvil_binary_add, false, anvil_dt_f32, N),
                                       lt::eltwise(anvil_eltwise_gelu_tanh)};
        anvil_matmul_desc_t d = lt::bf16_matmul_desc(M, N, K, anvil_dt_bf16);
        d.bias = bias.data();
        d.num_post_ops = 2;
        d.post_ops = ops;
        anvil_matmul_t h = nullptr;
        REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<uint32_t> packed(bytes / 4 + 1);
        REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
        const void *bin[] = {residual.data()};
        std::vector<uint16_t> got[2];
        for (int widen = 0; widen <= 1; ++widen) {
            anvil::lowp::set_widen_bf16_a_override(widen);
            got[widen].assign(size_t(M * N), 0xdead);
            REQUIRE(anvil_matmul_execute(h, A.data(), packed.data(), got[widen].data(), bin) ==
                    anvil_success);
        }
        anvil_matmul_destroy(h);
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(got[0] == got[1]);
        ++compared;
    }
    // The explain text names the widened path when it is taken.
    anvil::lowp::set_widen_bf16_a_override(1);
    char text[2048];
    size_t needed = 0;
    REQUIRE(anvil_explain_gemm(anvil_dt_bf16, anvil_dt_bf16, 'N', 'N', 64, 256, 256, text,
                               sizeof(text), &needed) == anvil_success);
    CHECK(std::string(text).find("pack_a=widened") != std::string::npos);
    MESSAGE(compared, " problems compared");
}

TEST_CASE("lowp: every ISA cap gives bitwise identical results (random fractions, full int8 range)") {
    tu::rng r(5);
    const int64_t M = 37, N = 70, K = 301;  // tails of every tile, odd K
    std::vector<uint16_t> A(size_t(M * K)), B(size_t(N * K));
    for (auto &v : A) v = lt::bf16_frac(r);
    for (auto &v : B) v = lt::bf16_frac(r);
    std::vector<uint8_t> A8(size_t(M * K));
    std::vector<int8_t> B8(size_t(N * K));
    for (auto &v : A8) v = uint8_t(r.ival(0, 255));
    for (auto &v : B8) v = int8_t(r.ival(-128, 127));
    const int32_t co = -7;
    // Also M = 3 and 11 with row-major B: the in-place bf16 rowb paths (2-row
    // chunks, one 11-row chunk) under avx512_core_bf16, packed kernels below.
    const int64_t Ms = 3, Ms2 = 11;
    std::vector<float> ref_f, ref_small, ref_bdot;
    std::vector<int32_t> ref_i, ref_s, ref_rb, ref_dot, ref_wide;
    const anvil_isa_t caps[] = {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core,
                                anvil_isa_avx512_core_vnni, anvil_isa_avx512_core_bf16};
    for (anvil_isa_t cap : caps) {
        anvil::cpu::set_max_isa_for_test(cap);
        CAPTURE(anvil_isa_name(anvil::cpu::effective_tier(false)));
        std::vector<float> C(size_t(M * N));
        std::vector<int32_t> Ci(size_t(M * N)), Cs(size_t(M * N));
        REQUIRE(anvil_gemm_bf16bf16f32('N', 'T', M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f,
                                       C.data(), N) == anvil_success);
        std::vector<float> Csmall(size_t((Ms + Ms2) * N));
        REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', Ms, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                                       Csmall.data(), N) == anvil_success);
        REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', Ms2, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                                       Csmall.data() + Ms * N, N) == anvil_success);
        REQUIRE(anvil_gemm_u8s8s32('N', 'T', 'F', M, N, K, 1.0f, A8.data(), K, 9, B8.data(), K, -5,
                                   0.0f, Ci.data(), N, &co) == anvil_success);
        REQUIRE(anvil_gemm_s8s8s32('T', 'T', 'F', M, N, K, 1.0f,
                                   reinterpret_cast<const int8_t *>(A8.data()), M, -9, B8.data(), K,
                                   5, 0.0f, Cs.data(), N, &co) == anvil_success);
        // int8 with row-major B, M = 1..9, with and without B's zero point
        // (which adds a row of ones): the in-place rowb chunk plans (up to
        // 4 rows, 3 + 2, ..., 3 + 3 + 3) under the VNNI caps, packed kernels
        // below them and for 9 rows; K (301) in blocks of 64 rows, or of 16
        // with B's rows 4 KiB apart (lp_inplace.cpp: rowb_k_block).
        std::vector<int32_t> Crb;
        std::vector<int8_t> B4k(size_t(K * 4096), int8_t(-3));
        for (int64_t k = 0; k < K; ++k)
            std::memcpy(B4k.data() + k * 4096, B8.data() + k * N, size_t(N));
        for (int64_t m = 1; m <= 9; ++m)
            for (int32_t bo : {0, -5})
                for (int64_t ldb : {N, int64_t(4096)}) {
                    std::vector<int32_t> Cm(size_t(m * N));
                    const int8_t *b = ldb == N ? B8.data() : B4k.data();
                    REQUIRE(anvil_gemm_u8s8s32('N', 'N', 'F', m, N, K, 1.0f, A8.data(), K, 9, b, ldb, bo,
                                               0.0f, Cm.data(), N, &co) == anvil_success);
                    Crb.insert(Crb.end(), Cm.begin(), Cm.end());
                }
        // int8 with B stored N x K, M = 1..5, u8 and s8 A (s8 adds a row of
        // ones), with and without B's zero point, K = 613 (odd; past the
        // Highway dot path's 512 for 3 and 4 rows) and a B row stride past
        // K: the in-place dot chunk plans (1..4 rows, 4 + 1) of the JIT
        // (VNNI caps) and of Highway (below them, where the CPU has no
        // AVX-VNNI), packed kernels elsewhere.
        std::vector<int32_t> Cdot;
        const int64_t Kd = 613, ldb_t = Kd + 3;
        std::vector<int8_t> Bt(size_t(N * ldb_t), int8_t(77));
        std::vector<uint8_t> Ad(size_t(5 * Kd));
        {
            tu::rng rd(61);
            for (auto &v : Bt) v = int8_t(rd.ival(-128, 127));
            for (auto &v : Ad) v = uint8_t(rd.ival(0, 255));
        }
        for (int64_t m = 1; m <= 5; ++m)
            for (int32_t bo : {0, -5}) {
                std::vector<int32_t> Cm(size_t(m * N)), Cms(size_t(m * N));
                REQUIRE(anvil_gemm_u8s8s32('N', 'T', 'F', m, N, Kd, 1.0f, Ad.data(), Kd, 9, Bt.data(), ldb_t,
                                           bo, 0.0f, Cm.data(), N, &co) == anvil_success);
                REQUIRE(anvil_gemm_s8s8s32('N', 'T', 'F', m, N, Kd, 1.0f,
                                           reinterpret_cast<const int8_t *>(Ad.data()), Kd, -9, Bt.data(),
                                           ldb_t, bo, 0.0f, Cms.data(), N, &co) == anvil_success);
                Cdot.insert(Cdot.end(), Cm.begin(), Cm.end());
                Cdot.insert(Cdot.end(), Cms.begin(), Cms.end());
            }
        // bf16 with B stored N x K, M = 1..5, K = 613, a B row stride past
        // K, and with B row-major: Highway's in-place dot and row-B kernels
        // (M <= 4, below the bf16 JIT tier) add in the packed kernels'
        // order, so they too give the packed path's bits.
        std::vector<float> Cbdot;
        {
            std::vector<uint16_t> Btb(size_t(std::max(N * ldb_t, Kd * (N + 3)))), Adb(size_t(5 * Kd));
            tu::rng rb(62);
            for (auto &v : Btb) v = lt::bf16_frac(rb);
            for (auto &v : Adb) v = lt::bf16_frac(rb);
            for (int64_t m = 1; m <= 5; ++m) {
                std::vector<float> Cm(size_t(m * N)), Cn(size_t(m * N));
                REQUIRE(anvil_gemm_bf16bf16f32('N', 'T', m, N, Kd, 1.0f, Adb.data(), Kd, Btb.data(), ldb_t,
                                               0.0f, Cm.data(), N) == anvil_success);
                // And B row-major (Kd x N, ldb N + 3): Highway's row-B
                // kernels for M <= 4.
                REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', m, N, Kd, 1.0f, Adb.data(), Kd, Btb.data(), N + 3,
                                               0.0f, Cn.data(), N) == anvil_success);
                Cbdot.insert(Cbdot.end(), Cm.begin(), Cm.end());
                Cbdot.insert(Cbdot.end(), Cn.begin(), Cn.end());
            }
        }
        // int8, M = 1, row-major B with K x N >= 2^22: Highway's row-B
        // kernels (below the VNNI tiers where the CPU has no AVX-VNNI), u8
        // and s8 A (s8 adds the row of ones), with and without B's zero
        // point; N = 2053 ends in a partial vector.
        std::vector<int32_t> Cwide;
        {
            const int64_t Nw = 2053, Kw = 2049;
            std::vector<int8_t> Bw(size_t(Kw * (Nw + 1)));
            std::vector<uint8_t> Aw(static_cast<size_t>(Kw));
            tu::rng rw(63);
            for (auto &v : Bw) v = int8_t(rw.ival(-128, 127));
            for (auto &v : Aw) v = uint8_t(rw.ival(0, 255));
            for (int32_t bo : {0, -5}) {
                std::vector<int32_t> Cu(static_cast<size_t>(Nw)), Cs1(static_cast<size_t>(Nw));
                REQUIRE(anvil_gemm_u8s8s32('N', 'N', 'F', 1, Nw, Kw, 1.0f, Aw.data(), Kw, 9, Bw.data(), Nw + 1,
                                           bo, 0.0f, Cu.data(), Nw, &co) == anvil_success);
                REQUIRE(anvil_gemm_s8s8s32('N', 'N', 'F', 1, Nw, Kw, 1.0f,
                                           reinterpret_cast<const int8_t *>(Aw.data()), Kw, -9, Bw.data(),
                                           Nw + 1, bo, 0.0f, Cs1.data(), Nw, &co) == anvil_success);
                Cwide.insert(Cwide.end(), Cu.begin(), Cu.end());
                Cwide.insert(Cwide.end(), Cs1.begin(), Cs1.end());
            }
        }
        if (ref_f.empty()) {
            ref_wide = Cwide;
            ref_bdot = Cbdot;
            ref_f = C;
            ref_small = Csmall;
            ref_i = Ci;
            ref_s = Cs;
            ref_rb = Crb;
            ref_dot = Cdot;
            continue;
        }
        CHECK(Cdot == ref_dot);
        CHECK(Cwide == ref_wide);
        CHECK(std::memcmp(Cbdot.data(), ref_bdot.data(), Cbdot.size() * 4) == 0);
        CHECK(Crb == ref_rb);
        CHECK(std::memcmp(C.data(), ref_f.data(), C.size() * 4) == 0);
        CHECK(std::memcmp(Csmall.data(), ref_small.data(), Csmall.size() * 4) == 0);
        CHECK(Ci == ref_i);
        CHECK(Cs == ref_s);
    }
    anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
}

TEST_CASE("lowp matmul: concurrent executes of one handle and shared packed weights") {
    anvil_matmul_desc_t d{};
    d.a_dt = anvil_dt_u8;
    d.b_dt = anvil_dt_s8;
    d.c_dt = anvil_dt_s8;
    d.transa = 'N';
    d.transb = 'T';
    d.M = 33;
    d.N = 100;
    d.K = 257;
    d.lda = d.K;
    d.ldb = d.K;
    d.ldc = d.N;
    d.a_zero_point = 3;
    d.c_zero_point = -4;
    const float scale = 0.01f;
    d.scales = &scale;
    anvil_post_op_t relu{};
    relu.kind = anvil_post_op_eltwise;
    relu.alg = anvil_eltwise_gelu_tanh;
    d.num_post_ops = 1;
    d.post_ops = &relu;
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint32_t> packed(bytes / 4 + 1);
    tu::rng r(3);
    std::vector<int8_t> B(size_t(d.N * d.K));
    for (auto &v : B) v = int8_t(r.ival(-128, 127));
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
    constexpr int kThreads = 4;
    std::vector<std::vector<uint8_t>> A(kThreads, std::vector<uint8_t>(size_t(d.M * d.K)));
    for (auto &a : A)
        for (auto &v : a) v = uint8_t(r.ival(0, 255));
    // Serial results first, then all threads at once, several times each.
    std::vector<std::vector<int8_t>> want(kThreads, std::vector<int8_t>(size_t(d.M * d.N)));
    for (int t = 0; t < kThreads; ++t)
        REQUIRE(anvil_matmul_execute(h, A[size_t(t)].data(), packed.data(), want[size_t(t)].data(),
                                     nullptr) == anvil_success);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t]() {
            std::vector<int8_t> C(size_t(d.M * d.N));
            for (int rep = 0; rep < 20; ++rep) {
                if (anvil_matmul_execute(h, A[size_t(t)].data(), packed.data(), C.data(), nullptr) !=
                        anvil_success ||
                    C != want[size_t(t)])
                    ++mismatches;
            }
        });
    for (auto &th : pool) th.join();
    CHECK(mismatches.load() == 0);
    anvil_matmul_destroy(h);
}
}

}  // namespace
