// Strided batches (anvil_sgemm_batch_strided, anvil_gemm_bf16bf16f32_batch_strided,
// anvil_gemm_u8s8s32 / s8s8s32_batch_strided):
// every item equals the single call on it bit for bit and the exact
// reference, for both batch layouts of C (one after another, side by side
// in each row), shared A or B (stride 0), transposes, padded leading dims,
// alpha / beta, any thread count and a caller pool; oneDNN's batched matmul
// agrees; bad strides and sizes give a status and write nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "anvil/anvil.h"
#include "lowp_util.h"
#include "onednn_peer.h"
#include "test_util.h"

namespace {

// One batched problem; strides in elements.
struct batch_case {
    char ta = 'N', tb = 'N';
    int64_t M = 1, N = 1, K = 1, batch = 1;
    int64_t pad = 0;              // extra elements in every leading dim
    bool share_a = false, share_b = false;
    bool c_side_by_side = false;  // C items interleaved within each row
    float alpha = 1, beta = 0;

    int64_t a_rows() const { return ta == 'T' ? K : M; }
    int64_t a_cols() const { return ta == 'T' ? M : K; }
    int64_t b_rows() const { return tb == 'T' ? N : K; }
    int64_t b_cols() const { return tb == 'T' ? K : N; }
    int64_t lda() const { return a_cols() + pad; }
    int64_t ldb() const { return b_cols() + pad; }
    int64_t ldc() const { return c_side_by_side ? batch * (N + pad) : N + pad; }
    int64_t stride_a() const { return share_a ? 0 : a_rows() * lda() + 3; }
    int64_t stride_b() const { return share_b ? 0 : b_rows() * ldb() + 5; }
    int64_t stride_c() const { return c_side_by_side ? N + pad : M * ldc() + 1; }
    int64_t a_size() const { return (share_a ? 0 : (batch - 1) * stride_a()) + a_rows() * lda(); }
    int64_t b_size() const { return (share_b ? 0 : (batch - 1) * stride_b()) + b_rows() * ldb(); }
    int64_t c_size() const { return (batch - 1) * stride_c() + M * ldc(); }
    std::string str() const {
        return std::to_string(batch) + "x" + std::to_string(M) + "x" + std::to_string(N) + "x" +
               std::to_string(K) + " " + ta + tb + " pad" + std::to_string(pad) +
               (share_a ? " shareA" : "") + (share_b ? " shareB" : "") +
               (c_side_by_side ? " C-side-by-side" : "") + " alpha" + std::to_string(alpha) +
               " beta" + std::to_string(beta);
    }
};

std::vector<batch_case> cases() {
    std::vector<batch_case> v;
    const int64_t shapes[][4] = {{1, 1, 1, 1},   {3, 17, 33, 31}, {12, 16, 40, 64},
                                 {7, 1, 40, 7},  {5, 40, 1, 23},  {2, 130, 70, 300},
                                 {9, 23, 17, 1}, {4, 64, 64, 128}};
    int i = 0;
    for (const auto &s : shapes)
        for (const char *tr : {"NN", "NT", "TN", "TT"}) {
            batch_case c;
            c.batch = s[0], c.M = s[1], c.N = s[2], c.K = s[3];
            c.ta = tr[0], c.tb = tr[1];
            c.pad = i % 3 == 0 ? 0 : i % 3 + 2;
            c.share_a = i % 7 == 3;
            c.share_b = i % 5 == 1;
            c.c_side_by_side = i % 4 == 2;
            c.alpha = i % 6 == 5 ? -0.5f : 1.0f;
            c.beta = i % 3 == 1 ? 1.0f : (i % 9 == 2 ? 0.3f : 0.0f);
            v.push_back(c);
            ++i;
        }
    return v;
}

// The exact result of item b at (i, j) (small-integer data: every sum is
// exact in float and double).
double reference(const batch_case &c, const float *A, const float *B, const float *C0,
                 int64_t b, int64_t i, int64_t j) {
    const float *a = A + b * c.stride_a(), *bb = B + b * c.stride_b();
    double acc = 0;
    for (int64_t k = 0; k < c.K; ++k) {
        const double av = c.ta == 'T' ? a[k * c.lda() + i] : a[i * c.lda() + k];
        const double bv = c.tb == 'T' ? bb[j * c.ldb() + k] : bb[k * c.ldb() + j];
        acc += av * bv;
    }
    const float r = float(acc) * c.alpha;
    return c.beta == 0.0f ? r : double(r + c.beta * C0[b * c.stride_c() + i * c.ldc() + j]);
}

struct batch_data {
    tu::fbuf A, B, C0;
};

batch_data make_data(const batch_case &c, uint64_t seed) {
    tu::rng r(seed);
    batch_data d;
    d.A.reset(size_t(c.a_size()), 1);
    d.B.reset(size_t(c.b_size()), 1);
    d.C0.reset(size_t(c.c_size()), 1);
    for (size_t i = 0; i < d.A.size(); ++i) d.A[i] = r.small_int();
    for (size_t i = 0; i < d.B.size(); ++i) d.B[i] = r.small_int();
    for (size_t i = 0; i < d.C0.size(); ++i)
        d.C0[i] = c.beta == 0.0f ? tu::qnan() : r.exact_c(c.beta);
    return d;
}

// Whether every element outside the C items kept its initial bits.
int64_t gaps_changed(const batch_case &c, const float *C, const float *C0) {
    std::vector<char> inside(size_t(c.c_size()), 0);
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) inside[size_t(b * c.stride_c() + i * c.ldc() + j)] = 1;
    int64_t n = 0;
    for (size_t e = 0; e < inside.size(); ++e)
        n += !inside[e] && std::memcmp(&C[e], &C0[e], 4) != 0;
    return n;
}

anvil_status_t run_f32(const batch_case &c, const batch_data &d, float *C) {
    return anvil_sgemm_batch_strided(c.ta, c.tb, c.M, c.N, c.K, c.alpha, d.A.data(), c.lda(),
                                     c.stride_a(), d.B.data(), c.ldb(), c.stride_b(), c.beta, C,
                                     c.ldc(), c.stride_c(), c.batch);
}

// Checks C (from the batched call) item by item against the exact
// reference and against Cs, which single_call(b, Cs) fills with the single
// call on item b; and that the gaps between items kept their bits.
template <typename SingleCall>
void check_items(const batch_case &c, const batch_data &d, const tu::fbuf &C,
                 const SingleCall &single_call) {
    tu::fbuf Cs(size_t(c.c_size()), 1);
    std::memcpy(Cs.data(), d.C0.data(), Cs.size() * 4);
    int64_t wrong = 0, unlike_single = 0;
    for (int64_t b = 0; b < c.batch; ++b) {
        REQUIRE(single_call(b, Cs.data() + b * c.stride_c()) == anvil_success);
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) {
                const size_t at = size_t(b * c.stride_c() + i * c.ldc() + j);
                wrong += double(C[at]) != reference(c, d.A.data(), d.B.data(), d.C0.data(), b, i, j);
                unlike_single += std::memcmp(&C[at], &Cs[at], 4) != 0;
            }
    }
    CHECK(wrong == 0);
    CHECK(unlike_single == 0);
    CHECK(gaps_changed(c, C.data(), d.C0.data()) == 0);
}

#if ANVIL_TESTS_HAVE_ONEDNN
// oneDNN's matmul over the same batch (dims {batch, rows, cols} with the
// batch strides; a shared operand is a batch of 1, broadcast).
void onednn_batched(const batch_case &c, const float *A, const float *B, float *C) {
    using namespace dnnl;
    using dt = memory::data_type;
    using dims = memory::dims;
    static engine eng(engine::kind::cpu, 0);
    stream st(eng);
    const int64_t ba = c.share_a ? 1 : c.batch, bb = c.share_b ? 1 : c.batch;
    const memory::desc a_md({ba, c.M, c.K}, dt::f32,
                            c.ta == 'T' ? dims{c.stride_a(), 1, c.lda()}
                                        : dims{c.stride_a(), c.lda(), 1});
    const memory::desc b_md({bb, c.K, c.N}, dt::f32,
                            c.tb == 'T' ? dims{c.stride_b(), 1, c.ldb()}
                                        : dims{c.stride_b(), c.ldb(), 1});
    const memory::desc c_md({c.batch, c.M, c.N}, dt::f32, dims{c.stride_c(), c.ldc(), 1});
    primitive_attr attr;
    if (c.alpha != 1.0f) attr.set_output_scales(0, {c.alpha});
    if (c.beta != 0.0f) {
        post_ops po;
        po.append_sum(c.beta);
        attr.set_post_ops(po);
    }
    const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), attr, eng);
    memory ma(a_md, eng, const_cast<float *>(A)), mb(b_md, eng, const_cast<float *>(B)),
        mc(c_md, eng, C);
    matmul(pd).execute(st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    st.wait();
}
#endif

}  // namespace

TEST_CASE("gemm batch: f32 items equal the single call and the exact reference") {
    uint64_t seed = 71;
    for (const batch_case &c : cases()) {
        INFO(c.str());
        const batch_data d = make_data(c, seed++);
        tu::fbuf C(size_t(c.c_size()), 1);
        std::memcpy(C.data(), d.C0.data(), C.size() * 4);
        REQUIRE(run_f32(c, d, C.data()) == anvil_success);
        check_items(c, d, C, [&](int64_t b, float *Cb) {
            return anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, d.A.data() + b * c.stride_a(),
                               c.lda(), d.B.data() + b * c.stride_b(), c.ldb(), c.beta, Cb,
                               c.ldc());
        });
#if ANVIL_TESTS_HAVE_ONEDNN
        // oneDNN broadcasts one operand's batch of 1, not both (then every
        // item is the same product, checked above).
        if (c.share_a && c.share_b) continue;
        tu::fbuf Cd(size_t(c.c_size()), 1);
        std::memcpy(Cd.data(), d.C0.data(), Cd.size() * 4);
        onednn_batched(c, d.A.data(), d.B.data(), Cd.data());
        int64_t unlike_onednn = 0;
        for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t i = 0; i < c.M; ++i)
                for (int64_t j = 0; j < c.N; ++j) {
                    const size_t at = size_t(b * c.stride_c() + i * c.ldc() + j);
                    unlike_onednn += C[at] != Cd[at];
                }
        CHECK(unlike_onednn == 0);
#endif
    }
}

TEST_CASE("gemm batch: bf16 items equal the single call and the exact reference") {
    uint64_t seed = 171;
    for (const batch_case &c : cases()) {
        INFO(c.str());
        const batch_data d = make_data(c, seed++);
        // Small integers are exact in bf16.
        std::vector<uint16_t> A(d.A.size()), B(d.B.size());
        for (size_t i = 0; i < A.size(); ++i) A[i] = lt::f32_to_bf16(d.A[i]);
        for (size_t i = 0; i < B.size(); ++i) B[i] = lt::f32_to_bf16(d.B[i]);
        tu::fbuf C(size_t(c.c_size()), 1);
        std::memcpy(C.data(), d.C0.data(), C.size() * 4);
        REQUIRE(anvil_gemm_bf16bf16f32_batch_strided(
                    c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda(), c.stride_a(), B.data(),
                    c.ldb(), c.stride_b(), c.beta, C.data(), c.ldc(), c.stride_c(),
                    c.batch) == anvil_success);
        check_items(c, d, C, [&](int64_t b, float *Cb) {
            return anvil_gemm_bf16bf16f32(c.ta, c.tb, c.M, c.N, c.K, c.alpha,
                                          A.data() + b * c.stride_a(), c.lda(),
                                          B.data() + b * c.stride_b(), c.ldb(), c.beta, Cb,
                                          c.ldc());
        });
    }
}

namespace {

// The int8 batches' operands: A (u8, or s8 with a_signed) and B (s8) over
// their whole ranges, C0 small integers (a sentinel where beta == 0, which
// must not read it); the offsets per case.
struct int8_batch {
    bool a_signed = false;
    char offsetc = 'F';
    int32_t ao = 0, bo = 0;
    std::vector<uint8_t> A;
    std::vector<int8_t> B;
    std::vector<int32_t> C0, co;
};

int8_batch make_int8(const batch_case &c, bool a_signed, int variant, uint64_t seed) {
    tu::rng r(seed);
    int8_batch d;
    d.a_signed = a_signed;
    d.offsetc = "FCR"[variant % 3];
    d.ao = variant % 2 ? (a_signed ? -3 : 5) : 0;
    d.bo = variant % 4 == 1 ? -2 : 0;
    d.A.resize(size_t(c.a_size()));
    d.B.resize(size_t(c.b_size()));
    d.C0.resize(size_t(c.c_size()));
    for (auto &v : d.A) v = uint8_t(r.ival(0, 255));
    for (auto &v : d.B) v = int8_t(r.ival(-128, 127));
    for (auto &v : d.C0) v = c.beta == 0.0f ? 0x5a5a5a5a : int32_t(r.ival(-1000, 1000));
    d.co.resize(size_t(std::max(c.M, c.N)));
    for (auto &v : d.co) v = variant % 5 == 0 ? 0 : int32_t(r.ival(-50, 50));
    return d;
}

// The exact value of item b at (i, j): alpha * dot + co (+ beta * C0) in
// double, as the API documents (dot < 2^24 here: every step is exact but
// beta * C0's product, computed the same way), rounded to nearest-even.
int32_t int8_reference(const batch_case &c, const int8_batch &d, int64_t b, int64_t i,
                       int64_t j) {
    const uint8_t *a = d.A.data() + b * c.stride_a();
    const int8_t *bb = d.B.data() + b * c.stride_b();
    int64_t dot = 0;
    for (int64_t k = 0; k < c.K; ++k) {
        const uint8_t av = c.ta == 'T' ? a[k * c.lda() + i] : a[i * c.lda() + k];
        const int64_t x = d.a_signed ? int64_t(int8_t(av)) : int64_t(av);
        const int64_t y = c.tb == 'T' ? bb[j * c.ldb() + k] : bb[k * c.ldb() + j];
        dot += (x - d.ao) * (y - d.bo);
    }
    const int32_t off = d.offsetc == 'F' ? d.co[0] : d.offsetc == 'C' ? d.co[size_t(i)] : d.co[size_t(j)];
    double v = double(c.alpha) * double(dot) + double(off);
    if (c.beta != 0.0f) v += double(c.beta) * double(d.C0[size_t(b * c.stride_c() + i * c.ldc() + j)]);
    return int32_t(std::nearbyint(v));
}

anvil_status_t run_int8(const batch_case &c, const int8_batch &d, int32_t *C) {
    if (d.a_signed)
        return anvil_gemm_s8s8s32_batch_strided(
            c.ta, c.tb, d.offsetc, c.M, c.N, c.K, c.alpha,
            reinterpret_cast<const int8_t *>(d.A.data()), c.lda(), c.stride_a(), int8_t(d.ao),
            d.B.data(), c.ldb(), c.stride_b(), int8_t(d.bo), c.beta, C, c.ldc(), c.stride_c(),
            d.co.data(), c.batch);
    return anvil_gemm_u8s8s32_batch_strided(c.ta, c.tb, d.offsetc, c.M, c.N, c.K, c.alpha,
                                            d.A.data(), c.lda(), c.stride_a(), uint8_t(d.ao),
                                            d.B.data(), c.ldb(), c.stride_b(), int8_t(d.bo),
                                            c.beta, C, c.ldc(), c.stride_c(), d.co.data(),
                                            c.batch);
}

anvil_status_t run_int8_single(const batch_case &c, const int8_batch &d, int64_t b, int32_t *Cb) {
    const uint8_t *a = d.A.data() + b * c.stride_a();
    const int8_t *bb = d.B.data() + b * c.stride_b();
    if (d.a_signed)
        return anvil_gemm_s8s8s32(c.ta, c.tb, d.offsetc, c.M, c.N, c.K, c.alpha,
                                  reinterpret_cast<const int8_t *>(a), c.lda(), int8_t(d.ao), bb,
                                  c.ldb(), int8_t(d.bo), c.beta, Cb, c.ldc(), d.co.data());
    return anvil_gemm_u8s8s32(c.ta, c.tb, d.offsetc, c.M, c.N, c.K, c.alpha, a, c.lda(),
                              uint8_t(d.ao), bb, c.ldb(), int8_t(d.bo), c.beta, Cb, c.ldc(),
                              d.co.data());
}

}  // namespace

// Every offset kind, source and weights zero points, alpha / beta on the
// integer and the double path; items against the single call (bitwise) and
// the exact reference; nothing between the items is written.
TEST_CASE("gemm batch: int8 items equal the single call and the exact reference") {
    uint64_t seed = 271;
    int variant = 0;
    for (const batch_case &c : cases())
        for (bool a_signed : {false, true}) {
            const int8_batch d = make_int8(c, a_signed, variant++, seed++);
            INFO(c.str() << (a_signed ? " s8s8s32" : " u8s8s32") << " offsetc " << d.offsetc
                         << " ao " << d.ao << " bo " << d.bo);
            std::vector<int32_t> C = d.C0, Cs = d.C0;
            REQUIRE(run_int8(c, d, C.data()) == anvil_success);
            int64_t wrong = 0, unlike_single = 0, gaps = 0;
            std::vector<char> inside(C.size(), 0);
            for (int64_t b = 0; b < c.batch; ++b) {
                REQUIRE(run_int8_single(c, d, b, Cs.data() + b * c.stride_c()) == anvil_success);
                for (int64_t i = 0; i < c.M; ++i)
                    for (int64_t j = 0; j < c.N; ++j) {
                        const size_t at = size_t(b * c.stride_c() + i * c.ldc() + j);
                        inside[at] = 1;
                        wrong += C[at] != int8_reference(c, d, b, i, j);
                        unlike_single += C[at] != Cs[at];
                    }
            }
            for (size_t e = 0; e < C.size(); ++e) gaps += !inside[e] && C[e] != d.C0[e];
            CHECK(wrong == 0);
            CHECK(unlike_single == 0);
            CHECK(gaps == 0);
        }
}

TEST_CASE("gemm batch: bitwise identical for 1 and 2 threads and a caller pool") {
    // Random fractions (rounding differs with any change of summation
    // order) on batches that run side by side and one after another.
    for (const int64_t *s : {(const int64_t[]){16, 24, 40, 64}, (const int64_t[]){3, 200, 96, 150},
                             (const int64_t[]){2, 1, 3000, 700}}) {
        batch_case c;
        c.batch = s[0], c.M = s[1], c.N = s[2], c.K = s[3];
        c.tb = 'T';
        c.beta = 0.3f;
        INFO(c.str());
        tu::rng r(uint64_t(c.batch * 1000 + c.M));
        batch_data d;
        d.A.reset(size_t(c.a_size()));
        d.B.reset(size_t(c.b_size()));
        d.C0.reset(size_t(c.c_size()));
        for (size_t i = 0; i < d.A.size(); ++i) d.A[i] = r.frac();
        for (size_t i = 0; i < d.B.size(); ++i) d.B[i] = r.frac();
        for (size_t i = 0; i < d.C0.size(); ++i) d.C0[i] = r.frac();
        std::vector<std::vector<float>> results;
        tu::std_thread_pool pool;
        for (int mode = 0; mode < 3; ++mode) {
            if (mode < 2) REQUIRE(anvil_set_num_threads(mode + 1) == anvil_success);
            if (mode == 2) REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 2) == anvil_success);
            tu::fbuf C(size_t(c.c_size()));
            std::memcpy(C.data(), d.C0.data(), C.size() * 4);
            const anvil_status_t st = run_f32(c, d, C.data());
            if (mode == 2) REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
            REQUIRE(st == anvil_success);
            results.emplace_back(C.data(), C.data() + C.size());
        }
        REQUIRE(anvil_set_num_threads(2) == anvil_success);
        CHECK(pool.calls.load() > 0);
        CHECK(std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4) == 0);
        CHECK(std::memcmp(results[0].data(), results[2].data(), results[0].size() * 4) == 0);
    }
}

TEST_CASE("gemm batch: bad arguments give a status and write nothing") {
    const int64_t M = 4, N = 5, K = 3, batch = 3;
    std::vector<float> A(1000, 1.0f), B(1000, 1.0f), C(1000, 7.0f);
    std::vector<uint16_t> Ab(1000, 0x3f80), Bb(1000, 0x3f80);
    std::vector<uint8_t> A8(1000, 1);
    std::vector<int8_t> B8(1000, 1);
    std::vector<int32_t> C32(1000, 7);
    const int32_t co = 0;
    struct bad {
        const char *what;
        int64_t sa, sb, sc, ldc, batch;
        anvil_status_t want;
    };
    const bad bads[] = {
        {"negative batch", 12, 15, 20, N, -1, anvil_bad_size},
        {"negative stride_a", -12, 15, 20, N, batch, anvil_bad_leading_dim},
        {"negative stride_b", 12, -1, 20, N, batch, anvil_bad_leading_dim},
        {"negative stride_c, batch 1", 12, 15, -20, N, 1, anvil_bad_leading_dim},
        {"C items overlap (stride_c < (M-1)*ldc+N)", 12, 15, 19, N, batch, anvil_bad_leading_dim},
        {"C items all at one place", 12, 15, 0, N, batch, anvil_bad_leading_dim},
        {"side by side but past ldc", 12, 15, N, 2 * N, batch, anvil_bad_leading_dim},
        {"side by side, items overlapping", 12, 15, N - 1, 3 * N, batch, anvil_bad_leading_dim},
        {"stride overflow", int64_t(1) << 62, 15, 20, N, batch, anvil_size_overflow},
        {"C stride overflow", 12, 15, int64_t(1) << 61, N, batch, anvil_size_overflow},
    };
    for (const bad &b : bads) {
        INFO(b.what);
        CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, A.data(), K, b.sa, B.data(), N,
                                        b.sb, 0.0f, C.data(), b.ldc, b.sc, b.batch) == b.want);
        CHECK(anvil_gemm_bf16bf16f32_batch_strided('N', 'N', M, N, K, 1.0f, Ab.data(), K, b.sa,
                                                   Bb.data(), N, b.sb, 0.0f, C.data(), b.ldc,
                                                   b.sc, b.batch) == b.want);
        CHECK(anvil_gemm_u8s8s32_batch_strided('N', 'N', 'F', M, N, K, 1.0f, A8.data(), K, b.sa, 0,
                                               B8.data(), N, b.sb, 0, 0.0f, C32.data(), b.ldc,
                                               b.sc, &co, b.batch) == b.want);
    }
    // int8: an unknown offsetc, a missing co, a missing A.
    CHECK(anvil_gemm_u8s8s32_batch_strided('N', 'N', 'X', M, N, K, 1.0f, A8.data(), K, 12, 0,
                                           B8.data(), N, 15, 0, 0.0f, C32.data(), N, 20, &co,
                                           batch) == anvil_invalid_argument);
    CHECK(anvil_gemm_s8s8s32_batch_strided('N', 'N', 'F', M, N, K, 1.0f,
                                           reinterpret_cast<const int8_t *>(A8.data()), K, 12, 0,
                                           B8.data(), N, 15, 0, 0.0f, C32.data(), N, 20, nullptr,
                                           batch) == anvil_null_pointer);
    CHECK(anvil_gemm_u8s8s32_batch_strided('N', 'N', 'R', M, N, K, 1.0f, nullptr, K, 12, 0,
                                           B8.data(), N, 15, 0, 0.0f, C32.data(), N, 20, &co,
                                           batch) == anvil_null_pointer);
    for (int32_t v : C32) REQUIRE(v == 7);
    CHECK(anvil_sgemm_batch_strided('X', 'N', M, N, K, 1.0f, A.data(), K, 12, B.data(), N, 15,
                                    0.0f, C.data(), N, 20, batch) == anvil_invalid_argument);
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, A.data(), K - 1, 12, B.data(), N,
                                    15, 0.0f, C.data(), N, 20, batch) == anvil_bad_leading_dim);
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, nullptr, K, 12, B.data(), N, 15,
                                    0.0f, C.data(), N, 20, batch) == anvil_null_pointer);
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, A.data(), K, 12, B.data(), N, 15,
                                    0.0f, nullptr, N, 20, batch) == anvil_null_pointer);
    // No-ops: batch 0, an empty item.
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, A.data(), K, 12, B.data(), N, 15,
                                    0.0f, C.data(), N, 20, 0) == anvil_success);
    CHECK(anvil_sgemm_batch_strided('N', 'N', 0, N, K, 1.0f, A.data(), K, 12, B.data(), N, 15,
                                    0.0f, C.data(), N, 0, batch) == anvil_success);
    for (float v : C) REQUIRE(v == 7.0f);
    // Valid edge layouts: batch 1 with stride 0; shared A and B; K == 0
    // scales C by beta without reading A or B.
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, A.data(), K, 0, B.data(), N, 0,
                                    0.0f, C.data(), N, 0, 1) == anvil_success);
    CHECK(C[0] == 3.0f);
    CHECK(anvil_sgemm_batch_strided('N', 'N', M, N, 0, 1.0f, nullptr, 1, 0, nullptr, N, 0, 2.0f,
                                    C.data(), N, 20, batch) == anvil_success);
    CHECK(C[0] == 6.0f);
    CHECK(C[20] == 14.0f);
}
