// Planned GEMM: create -> packed_b_size -> pack_b (caller buffer, aligned
// and not) / pack_b_owned -> execute many times (and from several threads)
// -> destroy.  Integer data, so every result must equal the reference.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

namespace {

using tu::cmat;
using tu::fbuf;
using tu::gemm_case;

// Bytes at a chosen offset from a 64-byte boundary.
struct byte_buf {
    std::vector<unsigned char> raw;
    unsigned char *p = nullptr;
    byte_buf(size_t n, size_t offset) : raw(n + offset + 64 + 64, 0xee) {  // 64 bytes of slack after
        uintptr_t a = reinterpret_cast<uintptr_t>(raw.data());
        p = raw.data() + ((64 - a % 64) % 64) + offset;
    }
};

struct inputs {
    fbuf A;
    cmat C0;
};

// Integer A and initial C for one execute call (beta == 0: NaN in C).
inputs make_inputs(const gemm_case &c, uint64_t seed) {
    tu::rng r(seed);
    inputs in;
    in.A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, c.off_a, [&] { return r.small_int(); });
    in.C0 = cmat(c.M, c.N, c.ldc, c.off_c);
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j)
            in.C0.at(i, j) = c.beta == 0.0f ? tu::qnan() : r.exact_c(c.beta);
    return in;
}

cmat reference(const gemm_case &c, const float *A, const float *B, const cmat &C0) {
    cmat R(c.M, c.N, c.ldc, c.off_c);
    R.copy_window_from(C0);
    anvil::ref::sgemm_double(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A, c.lda, B, c.ldb, c.beta, R.c(),
                             c.ldc);
    return R;
}

cmat execute(anvil_gemm_plan_t p, const gemm_case &c, const inputs &in, const void *packed) {
    cmat C(c.M, c.N, c.ldc, c.off_c);
    C.copy_window_from(in.C0);
    const anvil_status_t st = anvil_gemm_plan_execute(p, c.alpha, in.A.data(), packed, c.beta, C.c());
    CHECK(st == anvil_success);
    return C;
}

void check_same_value(const cmat &got, const cmat &want, const std::string &what) {
    std::string f;
    const int64_t bad = tu::count_value_mismatches(got, want, &f);
    CHECK_MESSAGE(bad == 0, what, ": ", f);
    std::string w;
    CHECK_MESSAGE(got.sentinel_damage(&w) == 0, what, " wrote outside the window: ", w);
}

void check_same_bits(const cmat &got, const cmat &want, const std::string &what) {
    std::string f;
    CHECK_MESSAGE(tu::count_bit_mismatches(got, want, &f) == 0, what, ": ", f);
}

// Runs calls(t) on `threads` threads released together (each spins until
// all have started, so their first calls overlap).
template <typename Calls>
void run_together(int threads, const Calls &calls) {
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < threads) std::this_thread::yield();
            calls(t);
        });
    for (auto &th : ts) th.join();
}

struct shape {
    char ta, tb;
    int64_t M, N, K;
};

gemm_case case_of(const shape &s) {
    gemm_case c;
    c.ta = s.ta;
    c.tb = s.tb;
    c.M = s.M;
    c.N = s.N;
    c.K = s.K;
    return c;
}

const float kAlphaBeta[][2] = {{1.f, 0.f}, {-0.5f, 1.f}, {1.f, 0.3f}, {-0.5f, 0.f}, {1.f, 1.f}};

void run_plan_case(char ta, char tb, int64_t M, int64_t N, int64_t K, int64_t pad, int idx) {
    gemm_case c;
    c.ta = ta;
    c.tb = tb;
    c.M = M;
    c.N = N;
    c.K = K;
    c.tighten(pad, pad ? pad + 2 : 0, pad ? 2 * pad + 1 : 0);
    c.off_a = idx % 5;
    c.off_b = (idx + 1) % 3;
    c.off_c = (idx + 3) % 7;
    CAPTURE(c.str());

    tu::rng r(1000 + idx);
    fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, c.off_b, [&] { return r.small_int(); });
    std::vector<float> Bkeep(B.data(), B.data() + B.size());

    anvil_gemm_plan_t p = nullptr;
    REQUIRE(anvil_gemm_plan_create(&p, ta, tb, M, N, K, c.lda, c.ldb, c.ldc) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_gemm_plan_packed_b_size(p, &bytes) == anvil_success);
    REQUIRE(bytes >= size_t(N * K) * sizeof(float));

    // Pack into a 64-byte aligned and a 4-byte offset caller buffer: the
    // bytes must be the same (the buffer is plain, position-independent).
    // A buffer that is not 4-byte aligned (anvil.h: it holds floats) is
    // refused with anvil_invalid_argument and left untouched.
    byte_buf aligned(bytes, 0), unaligned(bytes, 4), odd(bytes, 1);
    REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), aligned.p) == anvil_success);
    REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), unaligned.p) == anvil_success);
    REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), odd.p) == anvil_invalid_argument);
    for (size_t t = 0; t < bytes; ++t) REQUIRE(odd.p[t] == 0xee);
    std::memcpy(odd.p, aligned.p, bytes);  // a misaligned copy, for execute below
    CHECK(std::memcmp(aligned.p, unaligned.p, bytes) == 0);
    // Packing reads B only: B unchanged, nothing written past `bytes` (or
    // before the buffer).
    CHECK(std::memcmp(B.data(), Bkeep.data(), Bkeep.size() * sizeof(float)) == 0);
    for (size_t t = bytes; t < bytes + 32; ++t) REQUIRE(unaligned.p[t] == 0xee);
    for (size_t t = bytes; t < bytes + 32; ++t) REQUIRE(odd.p[t] == 0xee);
    REQUIRE(odd.p[-1] == 0xee);
    REQUIRE(anvil_gemm_plan_pack_b_owned(p, B.data()) == anvil_success);
    const std::vector<unsigned char> packed_copy(aligned.p, aligned.p + bytes);

    // Execute must not read B any more: poison it.
    for (size_t t = 0; t < B.size(); ++t) B[t] = tu::qnan();

    // A copy of the packed bytes elsewhere (as if loaded from a file).
    byte_buf moved(bytes, 12);
    std::memcpy(moved.p, aligned.p, bytes);

    // Three (alpha, beta) pairs per plan; one under emulation, where the
    // cases' idx still rotates through all five (the plan's packing and
    // buffer checks above are the point there).
    const int reps = tu::emulated() ? 1 : 3;
    for (int rep = 0; rep < reps; ++rep) {
        const float *ab = kAlphaBeta[(idx + rep) % 5];
        c.alpha = ab[0];
        c.beta = ab[1];
        CAPTURE(rep);
        const inputs in = make_inputs(c, 77 * idx + rep);
        const cmat want = reference(c, in.A.data(), Bkeep.data(), in.C0);
        const cmat a = execute(p, c, in, aligned.p);
        check_same_value(a, want, "execute(aligned packed buffer) vs reference");
        const cmat u = execute(p, c, in, unaligned.p);
        check_same_bits(u, a, "unaligned packed buffer vs aligned");
        check_same_value(u, want, "execute(unaligned packed buffer) vs reference");
        {
            cmat cc(c.M, c.N, c.ldc, c.off_c);
            cc.copy_window_from(in.C0);
            CHECK(anvil_gemm_plan_execute(p, c.alpha, in.A.data(), odd.p, c.beta, cc.c()) ==
                  anvil_invalid_argument);
            check_same_bits(cc, in.C0, "execute with a misaligned packed buffer leaves C");
        }
        const cmat o = execute(p, c, in, nullptr);
        check_same_bits(o, a, "owned packed buffer vs caller's");
        const cmat m = execute(p, c, in, moved.p);
        check_same_bits(m, a, "copied packed buffer vs original");
    }
    // Executing never writes the packed buffer.
    CHECK(std::memcmp(aligned.p, packed_copy.data(), bytes) == 0);
    CHECK(std::memcmp(unaligned.p, packed_copy.data(), bytes) == 0);
    CHECK(std::memcmp(odd.p, packed_copy.data(), bytes) == 0);  // the copy made above
    CHECK(anvil_gemm_plan_destroy(p) == anvil_success);
}

}  // namespace

TEST_CASE("plan: inference shapes, both transb, caller and owned packed buffers") {
    const int64_t Ms[] = {1, 4, 16, 17, 64, 100};
    const int64_t NK[][2] = {{16, 16}, {33, 7}, {100, 31}, {257, 129}, {48, 255}, {1000, 63}};
    int idx = 0;
    for (int64_t M : Ms)
        for (auto &nk : NK)
            for (char tb : {'N', 'T'}) {
                const char ta = (idx % 3 == 2) ? 'T' : 'N';
                run_plan_case(ta, tb, M, nk[0], nk[1], (idx % 4 == 1) ? 3 : 0, idx);
                ++idx;
            }
}

TEST_CASE("plan: transa = 'T' and a deep K") {
    int idx = 500;
    for (char tb : {'N', 'T'}) {
        run_plan_case('T', tb, 5, 77, 2049, 1, idx++);
        run_plan_case('N', tb, 1, 4096, 1024, 0, idx++);
        run_plan_case('T', tb, 64, 130, 33, 0, idx++);
    }
}

TEST_CASE("plan: zero-size plans") {
    // N = 0 or K = 0 still give a valid (header-only) buffer; M = 0 executes
    // as a no-op.
    const int64_t shapes[][3] = {{0, 8, 8}, {8, 0, 8}, {8, 8, 0}};
    for (auto &s : shapes) {
        CAPTURE(s[0]);
        CAPTURE(s[1]);
        CAPTURE(s[2]);
        anvil_gemm_plan_t p = nullptr;
        const int64_t ld = 8;
        REQUIRE(anvil_gemm_plan_create(&p, 'N', 'N', s[0], s[1], s[2], ld, ld, ld) ==
                anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_gemm_plan_packed_b_size(p, &bytes) == anvil_success);
        std::vector<unsigned char> packed(bytes);
        std::vector<float> B(64, 1.0f), A(64, 1.0f), C(64, 3.0f);
        REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), packed.data()) == anvil_success);
        CHECK(anvil_gemm_plan_execute(p, 1.0f, A.data(), packed.data(), 0.5f, C.data()) ==
              anvil_success);
        if (s[0] == 0 || s[1] == 0)
            for (float v : C) CHECK(v == 3.0f);  // nothing to do
        else
            for (int i = 0; i < 64; ++i) CHECK(C[size_t(i)] == 1.5f);  // K = 0: beta * C
        CHECK(anvil_gemm_plan_destroy(p) == anvil_success);
    }
}

TEST_CASE("plan: one plan and packed buffer executed from several threads at once") {
    const shape shapes[] = {{'N', 'N', 1, 1000, 127}, {'N', 'T', 17, 257, 65},
                            {'T', 'N', 64, 100, 31},  {'N', 'N', 100, 48, 255},
                            {'N', 'T', 4, 33, 7}};
    int idx = 0;
    for (const shape &s : shapes) {
        gemm_case c = case_of(s);
        c.tighten(1, 0, 2);
        c.off_a = 1;
        c.off_c = 3;
        c.alpha = -0.5f;
        c.beta = 1.0f;
        CAPTURE(c.str());
        tu::rng r(4242 + idx++);
        fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, 0, [&] { return r.small_int(); });
        anvil_gemm_plan_t p = nullptr;
        REQUIRE(anvil_gemm_plan_create(&p, c.ta, c.tb, c.M, c.N, c.K, c.lda, c.ldb, c.ldc) ==
                anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_gemm_plan_packed_b_size(p, &bytes) == anvil_success);
        byte_buf packed(bytes, 4);
        REQUIRE(anvil_gemm_plan_pack_b(p, B.data(), packed.p) == anvil_success);

        constexpr int kThreads = 4, kReps = 3;
        std::vector<inputs> in;
        for (int t = 0; t < kThreads * kReps; ++t) in.push_back(make_inputs(c, 31 * t + idx));
        // Single-threaded results first.
        std::vector<cmat> want;
        for (auto &x : in) want.push_back(execute(p, c, x, packed.p));
        for (size_t t = 0; t < in.size(); ++t) {
            const cmat ref = reference(c, in[t].A.data(), B.data(), in[t].C0);
            check_same_value(want[t], ref, "single-thread planned execute vs reference");
        }
        // The same calls from kThreads threads at once (each thread its own
        // A/C, all sharing the plan and the packed buffer).
        std::vector<cmat> got(in.size());
        std::vector<anvil_status_t> status(in.size(), anvil_runtime_error);
        run_together(kThreads, [&](int t) {
            for (int rep = 0; rep < kReps; ++rep) {
                const size_t k = size_t(t * kReps + rep);
                got[k] = cmat(c.M, c.N, c.ldc, c.off_c);
                got[k].copy_window_from(in[k].C0);
                status[k] =
                    anvil_gemm_plan_execute(p, c.alpha, in[k].A.data(), packed.p, c.beta, got[k].c());
            }
        });
        for (size_t k = 0; k < in.size(); ++k) {
            CAPTURE(k);
            CHECK(status[k] == anvil_success);
            check_same_bits(got[k], want[k], "threaded planned execute vs single-thread");
            CHECK(got[k].sentinel_damage() == 0);
        }
        CHECK(anvil_gemm_plan_destroy(p) == anvil_success);
    }
}

// Small plans call their whole-GEMM kernel directly, looked up by the first
// execute of each alpha / beta kind.  Here those first executes happen on
// several threads at once, each going through every (alpha, beta) pair in
// its own order, on a fresh plan: every result must be the reference's
// value (integer data: exact), and the same again single-threaded.
TEST_CASE("plan: first executes of a small plan race on several threads, every alpha / beta") {
    const shape shapes[] = {{'N', 'N', 16, 16, 16}, {'T', 'N', 23, 31, 17},
                            {'N', 'T', 32, 32, 32}, {'T', 'T', 5, 64, 3}};
    constexpr int kThreads = 4, kPairs = 5;
    int idx = 0;
    for (const shape &s : shapes) {
        gemm_case c = case_of(s);
        c.tighten(idx % 2, 0, 1);
        c.off_a = 1;
        c.off_c = 2;
        CAPTURE(c.str());
        tu::rng r(9090 + idx++);
        fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, 0, [&] { return r.small_int(); });
        anvil_gemm_plan_t p = nullptr;
        REQUIRE(anvil_gemm_plan_create(&p, c.ta, c.tb, c.M, c.N, c.K, c.lda, c.ldb, c.ldc) ==
                anvil_success);
        REQUIRE(anvil_gemm_plan_pack_b_owned(p, B.data()) == anvil_success);

        // Case (t, q): thread t's q-th call uses pair (t + q) % kPairs.
        std::vector<gemm_case> cases;
        std::vector<inputs> in;
        std::vector<cmat> want;
        for (int t = 0; t < kThreads; ++t)
            for (int q = 0; q < kPairs; ++q) {
                gemm_case cq = c;
                cq.alpha = kAlphaBeta[(t + q) % kPairs][0];
                cq.beta = kAlphaBeta[(t + q) % kPairs][1];
                in.push_back(make_inputs(cq, uint64_t(100 * t + q)));
                want.push_back(reference(cq, in.back().A.data(), B.data(), in.back().C0));
                cases.push_back(cq);
            }
        std::vector<cmat> got(in.size());
        std::vector<anvil_status_t> status(in.size(), anvil_runtime_error);
        run_together(kThreads, [&](int t) {
            for (int q = 0; q < kPairs; ++q) {
                const size_t k = size_t(t * kPairs + q);
                got[k] = cmat(c.M, c.N, c.ldc, c.off_c);
                got[k].copy_window_from(in[k].C0);
                status[k] = anvil_gemm_plan_execute(p, cases[k].alpha, in[k].A.data(), nullptr,
                                                    cases[k].beta, got[k].c());
            }
        });
        for (size_t k = 0; k < in.size(); ++k) {
            CAPTURE(k);
            CHECK(status[k] == anvil_success);
            check_same_value(got[k], want[k], "racing first planned executes vs reference");
            const cmat again = execute(p, cases[k], in[k], nullptr);
            check_same_bits(again, got[k], "single-thread execute vs the racing one");
        }
        CHECK(anvil_gemm_plan_destroy(p) == anvil_success);
    }
}
