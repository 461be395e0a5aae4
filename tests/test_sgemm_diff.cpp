// Differential tests: anvil_sgemm against the scalar double reference and,
// where the build has it, oneDNN's dnnl_sgemm (onednn_peer.h), under
// whatever ISA cap the process runs with.
//
//  - Integer-valued data (|a|, |b| <= 4, K * 16 < 2^24): every partial sum is
//    an exactly representable fp32 integer (half-integer with alpha = -0.5),
//    so results must equal oneDNN and the reference exactly.  For beta = 0.3
//    the initial C is drawn from {0, +-2^23, +-2^24}: 0.3f = 5033165 * 2^-24,
//    so beta * C is an exact multiple of 0.5 below 2^23 and the sum stays
//    exact whatever the evaluation order.
//  - Random fractions: each result is checked against the exact (double)
//    value with the bound of tu::gemm_error_bound (gamma_{K+3} * T), and
//    oneDNN is held to the same bound.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "onednn_peer.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

using tu::cmat;
using tu::fbuf;
using tu::gemm_case;

enum class data_kind { integer, fraction };

const char kTrans[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
// alpha in {1, -0.5} x beta in {0, 1, 0.3}; alpha = 0 has its own cases.
const float kAlphaBeta[6][2] = {{1.f, 0.f},   {-0.5f, 1.f}, {1.f, 0.3f},
                                {-0.5f, 0.f}, {1.f, 1.f},   {-0.5f, 0.3f}};
const int64_t kPads[5] = {0, 1, 3, 16, 5};

// Initial C value at flat index t of the window.
float c_init(tu::rng &r, data_kind kind, float beta, int64_t t) {
    if (beta == 0.0f) {
        // Never read: NaN, +-Inf and huge values must not reach the result.
        const float junk[4] = {tu::qnan(), tu::inf(), -tu::inf(), 3.0e38f};
        return junk[t % 4];
    }
    if (kind == data_kind::fraction) return r.frac();
    return r.exact_c(beta);
}

struct stats {
    int64_t cases = 0;
};

// Runs one case through anvil, the reference and oneDNN (when built with
// it) and checks it.
void run_case(const gemm_case &c, data_kind kind, uint64_t seed) {
    CAPTURE(c.str());
    INFO("data=", kind == data_kind::integer ? "integer" : "fraction", " seed=", seed);
    tu::rng r(seed);
    auto gen = [&]() { return kind == data_kind::integer ? r.small_int() : r.frac(); };
    fbuf A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, c.off_a, gen);
    fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, c.off_b, gen);
    cmat C0(c.M, c.N, c.ldc, c.off_c);
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) C0.at(i, j) = c_init(r, kind, c.beta, i * c.N + j);

    cmat Ca(c.M, c.N, c.ldc, c.off_c), Cd(c.M, c.N, c.ldc, c.off_c);
    Ca.copy_window_from(C0);
    Cd.copy_window_from(C0);
    if (c.beta == 0.0f)  // oneDNN's handling of NaN in C is not under test
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) Cd.at(i, j) = 0.0f;

    const anvil_status_t st = anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda,
                                          B.data(), c.ldb, c.beta, Ca.c(), c.ldc);
    REQUIRE(st == anvil_success);
    const bool have_dnnl = peer::sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda,
                                       B.data(), c.ldb, c.beta, Cd.c(), c.ldc);

    std::string where;
    const int64_t damage = Ca.sentinel_damage(&where);
    INFO("anvil wrote outside the M x N window: ", where);
    CHECK(damage == 0);

    if (kind == data_kind::integer) {
        cmat Cr(c.M, c.N, c.ldc, c.off_c);
        Cr.copy_window_from(C0);
        anvil::ref::sgemm_double(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda, B.data(),
                                 c.ldb, c.beta, Cr.c(), c.ldc);
        std::string f1, f2;
        const int64_t bad_ref = tu::count_value_mismatches(Ca, Cr, &f1);
        INFO("anvil vs reference: ", f1);
        CHECK(bad_ref == 0);
        if (have_dnnl) {
            const int64_t bad_dnnl = tu::count_value_mismatches(Ca, Cd, &f2);
            INFO("anvil vs oneDNN: ", f2);
            CHECK(bad_dnnl == 0);
        }
    } else {
        const tu::exact_result x = tu::exact_gemm(c, A.data(), B.data(), C0);
        std::string f1, f2;
        const int64_t bad_anvil = tu::count_bound_violations(c, Ca, x, &f1);
        INFO("anvil: ", f1);
        CHECK(bad_anvil == 0);
        if (have_dnnl) {
            const int64_t bad_dnnl = tu::count_bound_violations(c, Cd, x, &f2);
            INFO("oneDNN (same bound): ", f2);
            CHECK(bad_dnnl == 0);
        }
    }
}

// Fills in leading dims and pointer offsets from a running case index, so
// padded and tight leading dims and every misalignment mix with all shapes.
gemm_case make_case(int64_t M, int64_t N, int64_t K, int t, int64_t idx, float alpha,
                    float beta) {
    gemm_case c;
    c.ta = kTrans[t][0];
    c.tb = kTrans[t][1];
    c.M = M;
    c.N = N;
    c.K = K;
    c.alpha = alpha;
    c.beta = beta;
    c.tighten(kPads[idx % 5], kPads[(idx / 5) % 5], kPads[(idx + 2) % 5]);
    // Offsets in floats: 0 is 64-byte aligned, 4 is 16- but not 64-byte
    // aligned, the odd ones are only 4-byte aligned.
    c.off_a = int((idx * 3 + 1) % 7);
    c.off_b = int((idx * 5 + 3) % 7);
    c.off_c = int((idx + 5) % 7);
    return c;
}

const int64_t kSmall[] = {1, 2, 3, 7, 15, 16, 17, 31, 33};

// Shapes with at least one of {64, 127, 255, 1000} and K up to 8192.
std::vector<std::array<int64_t, 3>> big_shapes() {
    std::vector<std::array<int64_t, 3>> v;
    const int64_t big[] = {64, 127, 255, 1000};
    const int64_t partners[][2] = {{1, 1}, {2, 33}, {17, 7}, {16, 31}, {3, 15}};
    for (int64_t b : big)
        for (int pos = 0; pos < 3; ++pos)
            for (auto &p : partners) {
                std::array<int64_t, 3> s{};
                s[pos] = b;
                s[(pos + 1) % 3] = p[0];
                s[(pos + 2) % 3] = p[1];
                v.push_back(s);
            }
    const std::array<int64_t, 3> extra[] = {
        {64, 64, 64},     {127, 255, 64},   {255, 127, 255}, {1000, 64, 33},
        {64, 1000, 17},   {33, 64, 1000},   {255, 255, 127}, {127, 127, 1000},
        {1000, 1000, 7},  {1000, 17, 1000}, {1, 1000, 1000}, {1, 1, 8192},
        {2, 17, 8192},    {17, 33, 8192},   {64, 16, 8192},  {7, 127, 4099},
        {33, 64, 2049},   {16, 255, 255},   {17, 1000, 127}, {255, 31, 1000}};
    for (auto &e : extra) v.push_back(e);
    return v;
}

uint64_t seed_of(int64_t idx, data_kind kind) {
    return 0x9e3779b97f4a7c15ull * uint64_t(idx + 1) + (kind == data_kind::integer ? 7 : 13);
}

void small_cube(data_kind kind) {
    int64_t idx = 0;
    for (int64_t M : kSmall)
        for (int64_t N : kSmall)
            for (int64_t K : kSmall)
                for (int t = 0; t < 4; ++t, ++idx) {
                    const float *ab = kAlphaBeta[idx % 6];
                    run_case(make_case(M, N, K, t, idx, ab[0], ab[1]), kind, seed_of(idx, kind));
                }
}

// Integer data: every shape with all four transposes.  Fractions: two
// transposes per shape (NN+TN or NT+TT, alternating), which keeps the file's
// run time down while every transpose still meets every shape class.
void big_set(data_kind kind) {
    int64_t idx = 0, shape = 0;
    for (const auto &s : big_shapes()) {
        for (int t = 0; t < 4; ++t, ++idx) {
            if (kind == data_kind::fraction && (t % 2) != (shape % 2)) continue;
            // Under emulation (only the fractions run there) one transpose
            // per shape, every transpose in turn over the shapes.
            if (tu::emulated() && t != shape % 4) continue;
            const float *ab = kAlphaBeta[idx % 6];
            run_case(make_case(s[0], s[1], s[2], t, idx, ab[0], ab[1]), kind, seed_of(idx, kind));
        }
        ++shape;
    }
}

}  // namespace

TEST_CASE("sgemm diff: effective ISA and backend") {
    const anvil_isa_t eff = anvil_get_effective_isa(), det = anvil_get_detected_isa();
    MESSAGE("anvil_sgemm differential tests: effective ISA ", std::string(anvil_isa_name(eff)),
            ", detected ", std::string(anvil_isa_name(det)), ", backend ", tu::backend_name(),
            ", threads ", anvil_get_num_threads());
    CHECK(eff <= det);
}

TEST_CASE("sgemm diff: integer data, all small shapes, every transpose, exact") {
    small_cube(data_kind::integer);
}

TEST_CASE("sgemm diff: integer data, large and deep shapes, exact") { big_set(data_kind::integer); }

TEST_CASE("sgemm diff: random fractions, all small shapes, within the fp32 bound") {
    small_cube(data_kind::fraction);
}

TEST_CASE("sgemm diff: random fractions, large and deep shapes, within the fp32 bound") {
    big_set(data_kind::fraction);
}

// Up to 4 rows with B read in place and larger than half of L3: the
// Highway tiers cut K into blocks of 16 there (gemm/backend.h,
// in_place_b_policy).  N and K odd, so the panels' column tail and the
// last, shorter K block both occur.
TEST_CASE("sgemm diff: few rows over a B streamed from memory (short K blocks), exact") {
    if (tu::emulated()) {
        // Millions of multiply-adds per case with the references: over a
        // minute per case under qemu-user (measured), as the large-shape
        // sweeps that the emulated runs also leave out.  The rule is
        // portable C++ (gemm/blocking.cpp), checked natively under every
        // ISA cap.
        MESSAGE("skipped under emulation");
        return;
    }
    const int64_t l3 = anvil::cpu::info().caches.l3;
    const int64_t N = 1031;
    const int64_t K = l3 / 2 / 4 / N + 37;  // K * N * 4 > l3 / 2
    char why[512];
    REQUIRE(anvil_explain_sgemm('N', 'N', 4, N, K, why, sizeof why, nullptr) == anvil_success);
    MESSAGE("4x", N, "x", K, ": ", std::string(why));
    // The first kc= is anvil_sgemm's (the planned line follows).
    const std::string text(why);
    const size_t at = text.find(" kc=");
    REQUIRE(at != std::string::npos);
    const int64_t kc = std::stoll(text.substr(at + 4));
    if (anvil_get_effective_isa() == anvil_isa_avx2) CHECK(kc <= 16);
    int64_t idx = 0;
    for (int64_t M : {1, 3, 4, 5})
        for (int t : {0, 2}) {  // B 'N' (read in place), A either way
            const float *ab = kAlphaBeta[idx % 6];
            run_case(make_case(M, N, K, t, idx, ab[0], ab[1]), data_kind::integer,
                     seed_of(idx + 200000, data_kind::integer));
            ++idx;
        }
}

// Up to 128 rows read a B whose row stride is not a 2 KiB multiple in
// place, in K blocks of up to 128, all rows in one block (gemm/backend.h,
// in_place_b_policy): row counts around the tile height and the 128 bound,
// K with a short last block, and ldb = 512 (aliasing: packed) beside it.
TEST_CASE("sgemm diff: up to 128 rows over a B read in place (spread strides), exact") {
    if (tu::emulated()) {
        // Millions of multiply-adds per case with the references: over a
        // minute per case under qemu-user (measured), as the large-shape
        // sweeps that the emulated runs also leave out.  The rule is
        // portable C++ (gemm/blocking.cpp), checked natively under every
        // ISA cap.
        MESSAGE("skipped under emulation");
        return;
    }
    struct shape {
        int64_t M, N, K;
        bool in_place;  // on the Highway tiers
    };
    const shape shapes[] = {{17, 1031, 300, true}, {32, 515, 263, true}, {128, 257, 700, true},
                            {129, 300, 300, false}, {64, 512, 300, false}};
    int64_t idx = 0;
    for (const shape &s : shapes) {
        char why[512];
        REQUIRE(anvil_explain_sgemm('N', 'N', s.M, s.N, s.K, why, sizeof why, nullptr) ==
                anvil_success);
        const std::string text(why);
        CAPTURE(text);
        const size_t at = text.find("anvil_sgemm:");
        REQUIRE(at != std::string::npos);
        const std::string line = text.substr(at, text.find('\n', at) - at);
        if (anvil_get_effective_isa() == anvil_isa_avx2)
            CHECK((line.find("pack_b=no") != std::string::npos) == s.in_place);
        for (int t : {0, 2}) {
            const float *ab = kAlphaBeta[idx % 6];
            gemm_case c = make_case(s.M, s.N, s.K, t, idx, ab[0], ab[1]);
            c.tighten(kPads[idx % 5], 0, kPads[(idx + 2) % 5]);  // ldb = N: the stride explained
            run_case(c, data_kind::integer, seed_of(idx + 300000, data_kind::integer));
            ++idx;
        }
    }
}

TEST_CASE("sgemm diff: every alpha/beta (incl. alpha = 0) x transpose on selected shapes") {
    const int64_t shapes[][3] = {{1, 1, 1},   {7, 17, 33},   {33, 31, 16},  {16, 64, 3},
                                 {64, 127, 255}, {255, 33, 100}, {1, 255, 64}, {100, 1, 31}};
    const float alphas[] = {1.f, -0.5f, 0.f};
    const float betas[] = {0.f, 1.f, 0.3f};
    int64_t idx = 0, shape = 0;
    for (auto &s : shapes) {
        for (int t = 0; t < 4; ++t)
            for (int ai = 0; ai < 3; ++ai)
                for (int bi = 0; bi < 3; ++bi) {
                    // Under emulation one diagonal of alpha x beta per shape
                    // and transpose, rotated, so every pair meets every
                    // transpose across the shapes.
                    const bool runs = tu::emulated_sweeps_pair(ai, bi, 3, int(shape) + t);
                    for (data_kind kind : {data_kind::integer, data_kind::fraction}) {
                        if (runs)
                            run_case(make_case(s[0], s[1], s[2], t, idx, alphas[ai], betas[bi]),
                                     kind, seed_of(idx + 100000, kind));
                        ++idx;
                    }
                }
        ++shape;
    }
}

TEST_CASE("sgemm diff: beta = 0 never reads C (NaN / Inf prefill gives finite results)") {
    const int64_t shapes[][3] = {{1, 1, 1}, {5, 40, 9}, {17, 33, 31}, {64, 64, 64}, {100, 300, 70},
                                 {1, 1000, 64}};
    int64_t idx = 0;
    for (auto &s : shapes)
        for (int t = 0; t < 4; ++t)
            for (float alpha : {1.f, -0.5f, 0.f}) {
                gemm_case c = make_case(s[0], s[1], s[2], t, idx++, alpha, 0.0f);
                CAPTURE(c.str());
                tu::rng r(seed_of(idx, data_kind::fraction));
                auto gen = [&]() { return r.frac(); };
                fbuf A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, c.off_a, gen);
                fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, c.off_b, gen);
                cmat Cn(c.M, c.N, c.ldc, c.off_c), Cz(c.M, c.N, c.ldc, c.off_c);
                const float junk[3] = {tu::qnan(), tu::inf(), -tu::inf()};
                for (int64_t i = 0; i < c.M; ++i)
                    for (int64_t j = 0; j < c.N; ++j) {
                        Cn.at(i, j) = junk[(i + j) % 3];
                        Cz.at(i, j) = 0.0f;
                    }
                REQUIRE(anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, alpha, A.data(), c.lda, B.data(),
                                    c.ldb, 0.0f, Cn.c(), c.ldc) == anvil_success);
                REQUIRE(anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, alpha, A.data(), c.lda, B.data(),
                                    c.ldb, 0.0f, Cz.c(), c.ldc) == anvil_success);
                int64_t nonfinite = 0;
                for (int64_t i = 0; i < c.M; ++i)
                    for (int64_t j = 0; j < c.N; ++j) nonfinite += !std::isfinite(Cn.at(i, j));
                CHECK(nonfinite == 0);
                std::string f;
                CHECK_MESSAGE(tu::count_value_mismatches(Cn, Cz, &f) == 0, f);
                CHECK(Cn.sentinel_damage() == 0);
            }
}

TEST_CASE("sgemm diff: alpha = 0 ignores A and B (NaN in A, B) and gives beta * C") {
    for (float beta : {0.f, 1.f, 0.3f})
        for (int t = 0; t < 4; ++t) {
            gemm_case c = make_case(33, 70, 19, t, t + 11, 0.0f, beta);
            CAPTURE(c.str());
            fbuf A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, c.off_a, tu::qnan);
            fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, c.off_b, tu::qnan);
            tu::rng r(99 + t);
            cmat Ca(c.M, c.N, c.ldc, c.off_c), Cd(c.M, c.N, c.ldc, c.off_c),
                Cw(c.M, c.N, c.ldc, c.off_c);
            for (int64_t i = 0; i < c.M; ++i)
                for (int64_t j = 0; j < c.N; ++j) {
                    const float v = r.frac() * 8.0f;
                    Ca.at(i, j) = beta == 0.0f ? tu::qnan() : v;
                    Cd.at(i, j) = beta == 0.0f ? 0.0f : v;
                    Cw.at(i, j) = beta * v;  // one rounding: the only sensible result
                }
            REQUIRE(anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, 0.0f, A.data(), c.lda, B.data(), c.ldb,
                                beta, Ca.c(), c.ldc) == anvil_success);
            std::string f1, f2;
            CHECK_MESSAGE(tu::count_value_mismatches(Ca, Cw, &f1) == 0, "vs beta*C: ", f1);
            if (peer::sgemm(c.ta, c.tb, c.M, c.N, c.K, 0.0f, A.data(), c.lda, B.data(), c.ldb, beta,
                            Cd.c(), c.ldc))
                CHECK_MESSAGE(tu::count_value_mismatches(Ca, Cd, &f2) == 0, "vs oneDNN: ", f2);
            CHECK(Ca.sentinel_damage() == 0);
        }
}

// A, B and C placed right after / right before PROT_NONE pages with tight
// leading dims: any read or write one element outside an operand faults.
// Covers the small shapes whose operands are read in place (no packing).
TEST_CASE("sgemm diff: operands between guard pages are never accessed outside their extent") {
    const int64_t dims[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64};
    const int64_t Ks[] = {1, 7, 33};
    const size_t cap = size_t(64 * 64 + 64);
    tu::guarded gA(cap * 4), gB(cap * 4), gC(cap * 4);
    tu::fault_reporter reporter;
    int64_t idx = 0;
    for (int place = 0; place < 2; ++place)  // 0: at the front guard, 1: at the back guard
        for (int64_t M : dims)
            for (int64_t N : dims)
                for (int64_t K : Ks)
                    for (int t = 0; t < 4; ++t, ++idx) {
                        gemm_case c;
                        c.ta = kTrans[t][0];
                        c.tb = kTrans[t][1];
                        c.M = M;
                        c.N = N;
                        c.K = K;
                        c.alpha = kAlphaBeta[idx % 6][0];
                        c.beta = kAlphaBeta[idx % 6][1];
                        c.tighten();
                        const size_t na = size_t(c.a_rows() * c.lda), nb = size_t(c.b_rows() * c.ldb),
                                     nc = size_t(M * c.ldc);
                        float *A = place ? gA.tail(na) : gA.head();
                        float *B = place ? gB.tail(nb) : gB.head();
                        float *C = place ? gC.tail(nc) : gC.head();
                        tu::rng r(seed_of(idx, data_kind::integer));
                        for (size_t i = 0; i < na; ++i) A[i] = r.small_int();
                        for (size_t i = 0; i < nb; ++i) B[i] = r.small_int();
                        cmat R(M, N, c.ldc, 0);
                        for (int64_t i = 0; i < M * N; ++i) {
                            R.c()[i] = r.exact_c(c.beta);
                            C[i] = c.beta == 0.0f ? tu::qnan() : R.c()[i];
                        }
                        anvil::ref::sgemm_double(c.ta, c.tb, M, N, K, c.alpha, A, c.lda, B, c.ldb,
                                                 c.beta, R.c(), c.ldc);
                        const std::string what =
                            c.str() + (place ? " (operands end at a guard page)"
                                             : " (operands start after a guard page)");
                        reporter.set(what);
                        const anvil_status_t st = anvil_sgemm(c.ta, c.tb, M, N, K, c.alpha, A,
                                                              c.lda, B, c.ldb, c.beta, C, c.ldc);
                        reporter.set("");
                        INFO(what);
                        REQUIRE(st == anvil_success);
                        cmat G(M, N, c.ldc, 0);
                        for (int64_t i = 0; i < M * N; ++i) G.c()[i] = C[i];
                        std::string f;
                        CHECK_MESSAGE(tu::count_value_mismatches(G, R, &f) == 0, f);
                    }
}
