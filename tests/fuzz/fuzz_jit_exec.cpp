// Fuzz target 2: random *valid* small problems, run at a fast ISA cap (the
// JIT on x86-64 with AVX-512; the Highway kernels elsewhere, or at the avx2
// cap) and again with the cap lowered to scalar
// (anvil::cpu::set_max_isa_for_test), and compared.
//
// Input: [op] [tier] [threads] then the problem (tests/fuzz/fuzz_input.h;
// seeds from tests/fuzz/make_seeds.py).  Operations:
//   0 anvil_sgemm             4 gemm plan (create / pack_b / execute per cap)
//   1 anvil_gemm_bf16bf16f32  5 matmul (bf16, u8/s8 with zero points,
//   2 anvil_gemm_u8s8s32        scales, bias, post-op chain, any output type)
//   3 anvil_gemm_s8s8s32      6 conv2d (f32, bf16, int8; groups, depthwise,
//                               stride, padding, dilation, post-ops)
//
// Comparisons are exact, by analysis (no tolerances):
//  - inputs are small integers (fp32 / bf16: |v| <= 8, so every product
//    and every partial sum -- K <= 125 for the GEMMs, KH*KW*IC/G <= 288
//    for conv, |v| <= 4 there for fp32 -- is an integer below 2^24 and
//    exact in fp32 whatever the summation order; int8: the int32 sums are
//    exact by contract, and below 2^24 here, so float(acc) is exact);
//    alpha, beta and scales are powers of two (or small integers / 0) and
//    biases and binary operands small integers, so alpha * acc + beta * C
//    is exact, and every later step of the chain is one IEEE operation on
//    identical operands;
//  - the BLAS-like GEMMs are also checked against an exact reference
//    computed here (double holds every value exactly; int8 results are
//    rounded half-to-even and saturated as anvil.h says);
//  - the post-op chain is the same sequence of IEEE operations on every
//    backend, transcendental ops included (docs/postops.md: "All targets
//    give bitwise identical results, for every op"; the JIT kernels'
//    fused stores are bit-identical to it, docs/conv.md), so fast and
//    scalar results of matmul and conv must be equal too: values compared
//    with == (so +0 and -0 are equal: the sign of an exact zero sum may
//    depend on the summation order), integers exactly;
//  - beta == 0 never reads C: C starts as NaN there;
//  - C's leading-dimension gaps are never written;
//  - packed matmul / conv weights are the same bytes under either cap
//    (anvil.h: "The bytes do not depend on the CPU or the ISA cap");
//  - matmul with flags & 2: an M x N binary operand of C's type and
//    leading dimension is C itself in the fast run (an in-place residual,
//    anvil.h) and a separate copy of C's initial values in the scalar run.
// A mismatch aborts with the decoded problem.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "fuzz_input.h"
#include "lowp/lp_ref.h"

namespace {

using anvil::lowp::bf16_to_f32;
using anvil::lowp::f32_to_bf16;

std::string g_ctx;
anvil_isa_t g_initial_cap = anvil_isa_amx;
int g_default_threads = 1;

[[noreturn]] void fail(const char *fmt, ...) {
    std::fprintf(stderr, "\nfuzz_jit_exec: MISMATCH: ");
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "\nproblem: %s\n", g_ctx.c_str());
    std::abort();
}

std::string fmt(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

void expect_ok(anvil_status_t st, const char *what) {
    int v;
    std::memcpy(&v, &st, sizeof(v));
    if (v != anvil_success) fail("%s returned %d (%s) for a valid problem", what, v, anvil_status_str(st));
}

// --------------------------------------------------------- ISA caps

// The "fast" cap of this input: usually the one the process started with
// (ANVIL_MAX_ISA, else none), sometimes a lower tier (avx2: Highway;
// avx512_core: fp32 JIT, Highway lp; ...).  Off x86-64 any cap above scalar
// means "the best Highway target".
anvil_isa_t decode_tier(fz::reader &r) {
    static const anvil_isa_t t[8] = {anvil_isa_amx,         anvil_isa_amx,
                                     anvil_isa_amx,         anvil_isa_amx,
                                     anvil_isa_avx2,        anvil_isa_avx512_core,
                                     anvil_isa_avx512_core_vnni, anvil_isa_avx512_core_bf16};
    const anvil_isa_t want = t[r.u8() % 8];
    return want < g_initial_cap ? want : g_initial_cap;
}

// Runs fn() under the given cap and thread count, then restores both.
template <typename F>
void under(anvil_isa_t cap, int threads, F &&fn) {
    anvil::cpu::set_max_isa_for_test(cap);
    anvil_set_num_threads(threads);
    fn();
    anvil::cpu::set_max_isa_for_test(g_initial_cap);
    anvil_set_num_threads(g_default_threads);
}

// ----------------------------------------------------------- values

int64_t dim(fz::reader &r, int64_t max = 64) {
    const uint8_t b = r.u8();
    if (b >= 240 && max >= 64) return 65 + (b - 240) * 4;  // 65 .. 125, rarely
    return b % (max + 1);
}

// Powers of two (and 0): products with them are exact.
float pow2_scalar(uint8_t b) {
    static const float t[8] = {1.0f, -1.0f, 2.0f, 0.5f, 0.25f, -4.0f, 0.0f, 8.0f};
    return t[b % 8];
}

// Equal as values (+0 == -0), NaN only where NaN is expected.
bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }


// ---------------------------------------------------------- fp32 / bf16 GEMM

struct gemm_shape {
    bool ta = false, tb = false;
    int64_t M = 0, N = 0, K = 0, lda = 1, ldb = 1, ldc = 1;
    int64_t a_rows() const { return ta ? K : M; }
    int64_t b_rows() const { return tb ? N : K; }
    int64_t a_cols() const { return ta ? M : K; }
    int64_t b_cols() const { return tb ? K : N; }
    int64_t a_elems() const { return a_rows() == 0 || a_cols() == 0 ? 0 : (a_rows() - 1) * lda + a_cols(); }
    int64_t b_elems() const { return b_rows() == 0 || b_cols() == 0 ? 0 : (b_rows() - 1) * ldb + b_cols(); }
    int64_t c_elems() const { return M == 0 || N == 0 ? 0 : (M - 1) * ldc + N; }
    int64_t a_at(int64_t i, int64_t k) const { return ta ? k * lda + i : i * lda + k; }
    int64_t b_at(int64_t k, int64_t j) const { return tb ? j * ldb + k : k * ldb + j; }
    std::string str() const {
        return fmt("trans=%c%c M=%lld N=%lld K=%lld lda=%lld ldb=%lld ldc=%lld", ta ? 'T' : 'N',
                   tb ? 'T' : 'N', (long long)M, (long long)N, (long long)K, (long long)lda,
                   (long long)ldb, (long long)ldc);
    }
};

gemm_shape decode_shape(fz::reader &r) {
    gemm_shape s;
    const uint8_t t = r.u8();
    s.ta = t & 1;
    s.tb = t & 2;
    s.M = dim(r);
    s.N = dim(r);
    s.K = dim(r);
    const uint8_t pads = r.u8();
    s.lda = std::max<int64_t>(1, s.a_cols()) + (pads & 3) * ((pads & 3) == 3 ? 5 : 1);
    s.ldb = std::max<int64_t>(1, s.b_cols()) + ((pads >> 2) & 3);
    s.ldc = std::max<int64_t>(1, s.N) + ((pads >> 4) & 7);
    return s;
}

// Compares C from the fast and the scalar run with the exact reference
// (ref holds M x N values, row-major dense) and checks the gaps.
template <typename T>
void compare_c(const char *what, const gemm_shape &s, const std::vector<T> &init,
               const std::vector<T> &fast, const std::vector<T> &scal, const std::vector<double> &ref) {
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.ldc && i * s.ldc + j < int64_t(init.size()); ++j) {
            const int64_t o = i * s.ldc + j;
            if (j >= s.N) {
                if (std::memcmp(&fast[o], &init[o], sizeof(T)) || std::memcmp(&scal[o], &init[o], sizeof(T)))
                    fail("%s wrote C(%lld, %lld), in the ldc gap", what, (long long)i, (long long)j);
                continue;
            }
            const double want = ref[i * s.N + j];
            const double f = double(fast[o]), c = double(scal[o]);
            const bool ok_f = std::is_integral<T>::value ? f == want : same(float(f), float(want));
            const bool ok_c = std::is_integral<T>::value ? c == want : same(float(c), float(want));
            if (!ok_f || !ok_c)
                fail("%s C(%lld, %lld): fast %.9g, scalar %.9g, exact %.9g", what, (long long)i,
                     (long long)j, f, c, want);
        }
}

void fuzz_float_gemm(fz::reader &r, bool bf16, bool planned) {
    const anvil_isa_t tier = decode_tier(r);
    const int threads = 1 + r.u8() % 2;
    const gemm_shape s = decode_shape(r);
    const uint8_t ab = r.u8();
    const float alpha = pow2_scalar(ab);
    static const float betas[8] = {0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 3.0f, -0.25f, 0.0f};
    const float beta = betas[(ab >> 3) % 8];
    const int range = 1 + (ab >> 6) * 3;  // 1, 4, 7, 10 -> |v| <= 8 below
    const uint8_t flags = planned ? r.u8() : 0;
    const uint64_t seed = r.u16();
    g_ctx = fmt("%s(cap=%s threads=%d %s alpha=%g beta=%g range=%d flags=0x%x seed=%llu)",
                planned ? "gemm_plan" : bf16 ? "gemm_bf16bf16f32" : "sgemm", anvil_isa_name(tier),
                threads, s.str().c_str(), double(alpha), double(beta), std::min(range, 8), flags,
                (unsigned long long)seed);

    fz::rng g(seed);
    const int v = std::min(range, 8);
    std::vector<float> A(size_t(s.a_elems())), B(size_t(s.b_elems()));
    for (auto &x : A) x = float(g.in(-v, v));
    for (auto &x : B) x = float(g.in(-v, v));
    std::vector<float> C0(size_t(s.c_elems()));
    for (auto &x : C0) x = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : float(g.in(-16, 16));
    // Gaps: a recognisable value (checked bytewise).
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = s.N; j < s.ldc && i * s.ldc + j < int64_t(C0.size()); ++j) C0[i * s.ldc + j] = -77.25f;
    std::vector<anvil_bf16_t> Ah(A.size()), Bh(B.size());
    for (size_t i = 0; i < A.size(); ++i) Ah[i] = f32_to_bf16(A[i]);
    for (size_t i = 0; i < B.size(); ++i) Bh[i] = f32_to_bf16(B[i]);

    // Exact reference: integers below 2^24 times powers of two.
    std::vector<double> ref(size_t(s.M * s.N));
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < s.K; ++k) acc += double(A[s.a_at(i, k)]) * double(B[s.b_at(k, j)]);
            double x = double(alpha) * acc;
            if (beta != 0.0f) x += double(beta) * double(C0[i * s.ldc + j]);
            ref[i * s.N + j] = x;
        }

    auto run = [&](std::vector<float> &C) {
        C = C0;
        if (planned) {
            anvil_gemm_plan_t plan = nullptr;
            expect_ok(anvil_gemm_plan_create(&plan, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N,
                                             s.K, s.lda, s.ldb, s.ldc),
                      "anvil_gemm_plan_create");
            size_t bytes = 0;
            expect_ok(anvil_gemm_plan_packed_b_size(plan, &bytes), "anvil_gemm_plan_packed_b_size");
            std::vector<float> packed((bytes + 3) / 4);
            const void *pb = nullptr;
            if (flags & 1) {
                expect_ok(anvil_gemm_plan_pack_b_owned(plan, B.data()), "anvil_gemm_plan_pack_b_owned");
            } else {
                expect_ok(anvil_gemm_plan_pack_b(plan, B.data(), packed.data()), "anvil_gemm_plan_pack_b");
                pb = packed.data();
            }
            // Twice: a plan is reusable (the second call must not see state
            // left by the first).
            const int reps = (flags & 2) ? 2 : 1;
            for (int rep = 0; rep < reps; ++rep) {
                C = C0;
                expect_ok(anvil_gemm_plan_execute(plan, alpha, A.data(), pb, beta, C.data()),
                          "anvil_gemm_plan_execute");
            }
            expect_ok(anvil_gemm_plan_destroy(plan), "anvil_gemm_plan_destroy");
        } else if (bf16) {
            expect_ok(anvil_gemm_bf16bf16f32(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, alpha,
                                             Ah.data(), s.lda, Bh.data(), s.ldb, beta, C.data(), s.ldc),
                      "anvil_gemm_bf16bf16f32");
        } else {
            expect_ok(anvil_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, alpha, A.data(),
                                  s.lda, B.data(), s.ldb, beta, C.data(), s.ldc),
                      "anvil_sgemm");
        }
    };
    std::vector<float> Cf, Cs;
    under(tier, threads, [&] { run(Cf); });
    under(anvil_isa_scalar, 1, [&] { run(Cs); });
    compare_c(planned ? "gemm_plan" : bf16 ? "gemm_bf16bf16f32" : "sgemm", s, C0, Cf, Cs, ref);
}

// ---------------------------------------------------------- int8 GEMM

int32_t sat32(double x) {
    if (x >= 2147483647.0) return std::numeric_limits<int32_t>::max();
    if (x <= -2147483648.0) return std::numeric_limits<int32_t>::min();
    return int32_t(std::nearbyint(x));  // round to nearest even (default mode)
}

void fuzz_int8_gemm(fz::reader &r, bool a_signed) {
    const anvil_isa_t tier = decode_tier(r);
    const int threads = 1 + r.u8() % 2;
    const gemm_shape s = decode_shape(r);
    static const char offs[3] = {'F', 'C', 'R'};
    const uint8_t ob = r.u8();
    const char oc = offs[ob % 3];
    static const float alphas[8] = {1.0f, 1.0f, -1.0f, 2.0f, 0.5f, 3.0f, 0.0f, 0.25f};
    static const float betas[8] = {0.0f, 1.0f, 0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 3.0f};
    const float alpha = alphas[(ob >> 2) % 8], beta = betas[(ob >> 5) % 8];
    const uint8_t zb = r.u8();
    // Zero points: usually 0, else a byte of the input.
    const int32_t ao = (zb & 1) ? (a_signed ? int32_t(int8_t(r.u8())) : int32_t(r.u8())) : 0;
    const int32_t bo = (zb & 2) ? int32_t(int8_t(r.u8())) : 0;
    const uint64_t seed = r.u16();
    const char *name = a_signed ? "gemm_s8s8s32" : "gemm_u8s8s32";
    g_ctx = fmt("%s(cap=%s threads=%d %s offsetc=%c alpha=%g beta=%g ao=%d bo=%d seed=%llu)", name,
                anvil_isa_name(tier), threads, s.str().c_str(), oc, double(alpha), double(beta), ao,
                bo, (unsigned long long)seed);

    fz::rng g(seed);
    std::vector<uint8_t> A(size_t(s.a_elems()));
    std::vector<int8_t> B(size_t(s.b_elems()));
    for (auto &x : A) x = uint8_t(g.next());
    for (auto &x : B) x = int8_t(g.next());
    std::vector<int32_t> C0(size_t(s.c_elems()));
    for (auto &x : C0) x = int32_t(g.in(-1000, 1000));
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = s.N; j < s.ldc && i * s.ldc + j < int64_t(C0.size()); ++j)
            C0[i * s.ldc + j] = 0x7eadbeef;
    const int64_t nco = oc == 'F' ? 1 : oc == 'C' ? std::max<int64_t>(s.M, 1) : std::max<int64_t>(s.N, 1);
    std::vector<int32_t> co(static_cast<size_t>(nco));
    for (auto &x : co) x = int32_t(g.in(-100, 100));

    auto a_val = [&](int64_t i, int64_t k) -> int64_t {
        const uint8_t b = A[s.a_at(i, k)];
        return a_signed ? int64_t(int8_t(b)) : int64_t(b);
    };
    std::vector<double> ref(size_t(s.M * s.N));
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j) {
            int64_t acc = 0;
            for (int64_t k = 0; k < s.K; ++k) acc += (a_val(i, k) - ao) * (int64_t(B[s.b_at(k, j)]) - bo);
            const int32_t c_off = oc == 'F' ? co[0] : oc == 'C' ? co[i] : co[j];
            // alpha has at most two significant bits and |acc| < 2^31: the
            // double sum is exact, then rounded once as anvil.h says.
            const double x = double(alpha) * double(acc) + double(beta) * double(C0[i * s.ldc + j]) + double(c_off);
            ref[i * s.N + j] = double(sat32(x));
        }

    auto run = [&](std::vector<int32_t> &C) {
        C = C0;
        const char ta = s.ta ? 'T' : 'N', tb = s.tb ? 'T' : 'N';
        if (a_signed)
            expect_ok(anvil_gemm_s8s8s32(ta, tb, oc, s.M, s.N, s.K, alpha,
                                         reinterpret_cast<const int8_t *>(A.data()), s.lda, int8_t(ao),
                                         B.data(), s.ldb, int8_t(bo), beta, C.data(), s.ldc, co.data()),
                      name);
        else
            expect_ok(anvil_gemm_u8s8s32(ta, tb, oc, s.M, s.N, s.K, alpha, A.data(), s.lda,
                                         uint8_t(ao), B.data(), s.ldb, int8_t(bo), beta, C.data(),
                                         s.ldc, co.data()),
                      name);
    };
    std::vector<int32_t> Cf, Cs;
    under(tier, threads, [&] { run(Cf); });
    under(anvil_isa_scalar, 1, [&] { run(Cs); });
    compare_c(name, s, C0, Cf, Cs, ref);
}

// ------------------------------------------------------ post-op chains

int64_t dt_bytes(anvil_data_type_t t) {
    switch (t) {
        case anvil_dt_f32: case anvil_dt_s32: return 4;
        case anvil_dt_bf16: return 2;
        default: return 1;
    }
}
const char *dt_name(anvil_data_type_t t) {
    static const char *n[] = {"f32", "bf16", "s32", "u8", "s8"};
    return n[int(t)];
}

// A chain of up to 4 post-ops over an output of `rows` x `cols` (binary
// operands: per column, or rows x cols with ld = cols + pad), with
// integer-valued operands; sum ops read the output's initial contents.  Transcendental ops are included: every backend
// computes them with the same IEEE operations (docs/postops.md).
struct chain {
    std::vector<anvil_post_op_t> ops;
    std::vector<std::vector<uint8_t>> operands;  // per binary op, in order
    std::vector<const void *> srcs;
    std::string str;
};

void decode_chain(fz::reader &r, int64_t rows, int64_t cols, fz::rng &g, chain *c) {
    const int n = r.u8() % 5;
    for (int t = 0; t < n; ++t) {
        const uint8_t b = r.u8();
        anvil_post_op_t op{};
        if (b % 16 < 11) {
            op.kind = anvil_post_op_eltwise;
            static const int algs[11] = {anvil_eltwise_relu,     anvil_eltwise_relu,
                                         anvil_eltwise_leaky_relu, anvil_eltwise_leaky_relu,
                                         anvil_eltwise_clip,     anvil_eltwise_clip,
                                         anvil_eltwise_gelu_tanh, anvil_eltwise_gelu_erf,
                                         anvil_eltwise_silu,     anvil_eltwise_sigmoid,
                                         anvil_eltwise_tanh};
            op.alg = algs[b % 16];
            static const float leaky[8] = {0.5f, 0.25f, 2.0f, -1.0f, 0.0f, 0.125f, 1.0f, -0.5f};
            op.alpha = leaky[b >> 5];
            if (op.alg == anvil_eltwise_clip) {
                const uint8_t cb = r.u8();
                op.alpha = float(int(cb % 16) - 12) * 0.5f;  // -6 .. 1.5
                op.beta = op.alpha + float(cb >> 4);          // lo <= hi
            }
            static const char *names[] = {"relu", "leaky_relu", "clip", "gelu_tanh", "gelu_erf",
                                          "silu", "sigmoid", "tanh"};
            c->str += fmt(" %s(%g,%g)", names[op.alg], double(op.alpha), double(op.beta));
        } else if (b % 16 == 15) {  // sum: the output's old values (C0 / dst0)
            op.kind = anvil_post_op_sum;
            static const float scale[4] = {1.0f, 0.5f, 2.0f, -1.0f};
            static const float zero_point[4] = {0.0f, 3.0f, -2.0f, 100.0f};
            op.alpha = scale[(b >> 4) & 3];
            op.beta = zero_point[b >> 6];
            c->str += fmt(" sum(%g,%g)", double(op.alpha), double(op.beta));
        } else {
            op.kind = anvil_post_op_binary;
            op.alg = (b & 16) ? anvil_binary_mul : anvil_binary_add;
            op.per_n = (b & 32) ? 1 : 0;
            op.src_dt = (b & 64) ? anvil_dt_bf16 : anvil_dt_f32;
            op.ld = std::max<int64_t>(1, cols) + ((b & 128) ? 3 : 0);
            const int64_t elems = op.per_n ? cols : (rows == 0 || cols == 0 ? 0 : (rows - 1) * op.ld + cols);
            std::vector<uint8_t> data(size_t(elems * (op.src_dt == anvil_dt_bf16 ? 2 : 4)));
            for (int64_t e = 0; e < elems; ++e) {
                const float v = float(g.in(-4, 4));
                if (op.src_dt == anvil_dt_bf16) {
                    const uint16_t h = f32_to_bf16(v);
                    std::memcpy(&data[size_t(e) * 2], &h, 2);
                } else {
                    std::memcpy(&data[size_t(e) * 4], &v, 4);
                }
            }
            c->operands.push_back(std::move(data));
            c->str += fmt(" %s(%s,%s,ld=%lld)", op.alg == anvil_binary_mul ? "mul" : "add",
                          op.per_n ? "per_n" : "full", op.src_dt == anvil_dt_bf16 ? "bf16" : "f32",
                          (long long)op.ld);
        }
        c->ops.push_back(op);
    }
    for (auto &o : c->operands) c->srcs.push_back(o.data());
}

// Compares two outputs of type t element by element (rows x cols with
// leading dimension ld, everything else bytewise).
void compare_out(const char *what, anvil_data_type_t t, int64_t rows, int64_t cols, int64_t ld,
                 const std::vector<uint8_t> &fast, const std::vector<uint8_t> &scal,
                 const std::vector<uint8_t> &init) {
    const int64_t es = dt_bytes(t);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < ld; ++j) {
            const size_t o = size_t((i * ld + j) * es);
            if (o + es > init.size()) break;
            if (j >= cols) {
                if (std::memcmp(&fast[o], &init[o], size_t(es)) || std::memcmp(&scal[o], &init[o], size_t(es)))
                    fail("%s wrote element (%lld, %lld), in the ld gap", what, (long long)i, (long long)j);
                continue;
            }
            double f = 0, c = 0;
            bool eq;
            switch (t) {
                case anvil_dt_f32: {
                    float a, b;
                    std::memcpy(&a, &fast[o], 4);
                    std::memcpy(&b, &scal[o], 4);
                    f = a, c = b, eq = same(a, b);
                    break;
                }
                case anvil_dt_bf16: {
                    uint16_t a, b;
                    std::memcpy(&a, &fast[o], 2);
                    std::memcpy(&b, &scal[o], 2);
                    f = bf16_to_f32(a), c = bf16_to_f32(b), eq = same(bf16_to_f32(a), bf16_to_f32(b));
                    break;
                }
                case anvil_dt_s32: {
                    int32_t a, b;
                    std::memcpy(&a, &fast[o], 4);
                    std::memcpy(&b, &scal[o], 4);
                    f = a, c = b, eq = a == b;
                    break;
                }
                case anvil_dt_u8: f = fast[o], c = scal[o], eq = fast[o] == scal[o]; break;
                default: f = int8_t(fast[o]), c = int8_t(scal[o]), eq = fast[o] == scal[o]; break;
            }
            if (!eq)
                fail("%s element (%lld, %lld): fast %.9g, scalar %.9g", what, (long long)i, (long long)j, f, c);
        }
}

// Output types and the input types they go with.
struct types {
    anvil_data_type_t a, b, c;
};
types decode_types(fz::reader &r, bool conv) {
    static const types t[13] = {
        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32}, {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_f32},     {anvil_dt_u8, anvil_dt_s8, anvil_dt_s32},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_bf16},    {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_s8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_s32},     {anvil_dt_s8, anvil_dt_s8, anvil_dt_bf16},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_u8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_s8},
        {anvil_dt_f32, anvil_dt_f32, anvil_dt_f32},   // conv only
    };
    return t[r.u8() % (conv ? 13 : 12)];
}

// Fills n elements of type t with small integers (fp types) or any value
// (int8).
std::vector<uint8_t> fill(anvil_data_type_t t, int64_t n, fz::rng &g) {
    std::vector<uint8_t> v(size_t(n * dt_bytes(t)));
    for (int64_t i = 0; i < n; ++i) {
        switch (t) {
            case anvil_dt_f32: {
                const float x = float(g.in(-4, 4));
                std::memcpy(&v[size_t(i) * 4], &x, 4);
                break;
            }
            case anvil_dt_bf16: {
                const uint16_t h = f32_to_bf16(float(g.in(-8, 8)));
                std::memcpy(&v[size_t(i) * 2], &h, 2);
                break;
            }
            case anvil_dt_s32: {
                const int32_t x = int32_t(g.in(-1000, 1000));
                std::memcpy(&v[size_t(i) * 4], &x, 4);
                break;
            }
            default: v[size_t(i)] = uint8_t(g.next()); break;
        }
    }
    return v;
}

// Scales (powers of two) and bias (integers) for `cols` columns.
struct quant {
    std::vector<float> scales, bias;
    bool per_col = false;
    std::string str;
};
void decode_quant(fz::reader &r, int64_t cols, fz::rng &g, quant *q) {
    const uint8_t b = r.u8();
    if (b % 3 == 1) {
        q->scales.push_back(std::ldexp(1.0f, int(g.in(-3, 2))) * (g.next() & 1 ? -1.0f : 1.0f));
    } else if (b % 3 == 2) {
        q->per_col = true;
        for (int64_t j = 0; j < std::max<int64_t>(cols, 1); ++j)
            q->scales.push_back(std::ldexp(1.0f, int(g.in(-3, 2))) * (g.next() & 1 ? -1.0f : 1.0f));
    }
    if (b & 4)
        for (int64_t j = 0; j < std::max<int64_t>(cols, 1); ++j) q->bias.push_back(float(g.in(-50, 50)));
    q->str = fmt("scales=%s bias=%s", q->scales.empty() ? "none" : q->per_col ? "per_col" : "one",
                 q->bias.empty() ? "no" : "yes");
}

// Zero points: usually 0.
void decode_zero_points(fz::reader &r, anvil_data_type_t a, int32_t *za, int32_t *zb, int32_t *zc) {
    const uint8_t b = r.u8();
    *za = *zb = *zc = 0;
    if (a != anvil_dt_u8 && a != anvil_dt_s8) return;
    if (b & 1) *za = a == anvil_dt_u8 ? int32_t(r.u8()) : int32_t(int8_t(r.u8()));
    if (b & 2) *zb = int32_t(int8_t(r.u8()));
    if (b & 4) *zc = int32_t(int8_t(r.u8())) / 4;
}

// ------------------------------------------------------------ matmul

void fuzz_matmul(fz::reader &r) {
    const anvil_isa_t tier = decode_tier(r);
    const int threads = 1 + r.u8() % 2;
    const types ty = decode_types(r, false);
    const gemm_shape s = decode_shape(r);
    int32_t za, zb, zc;
    decode_zero_points(r, ty.a, &za, &zb, &zc);
    const uint8_t flags = r.u8();
    const uint64_t seed = r.u16();
    fz::rng g(seed);
    quant q;
    decode_quant(r, s.N, g, &q);
    chain ch;
    decode_chain(r, s.M, s.N, g, &ch);
    g_ctx = fmt("matmul(cap=%s threads=%d dt=%s,%s->%s %s zp=%d,%d,%d %s flags=0x%x seed=%llu) "
                "post_ops:%s",
                anvil_isa_name(tier), threads, dt_name(ty.a), dt_name(ty.b), dt_name(ty.c),
                s.str().c_str(), za, zb, zc, q.str.c_str(), flags, (unsigned long long)seed,
                ch.str.c_str());

    anvil_matmul_desc_t d{};
    d.a_dt = ty.a;
    d.b_dt = ty.b;
    d.c_dt = ty.c;
    d.transa = s.ta ? 'T' : 'N';
    d.transb = s.tb ? 'T' : 'N';
    d.M = s.M;
    d.N = s.N;
    d.K = s.K;
    d.lda = s.lda;
    d.ldb = s.ldb;
    d.ldc = s.ldc;
    d.a_zero_point = za;
    d.b_zero_point = zb;
    d.c_zero_point = zc;
    d.scales = q.scales.empty() ? nullptr : q.scales.data();
    d.scales_per_n = q.per_col;
    d.bias = q.bias.empty() ? nullptr : q.bias.data();
    d.num_post_ops = int(ch.ops.size());
    d.post_ops = ch.ops.empty() ? nullptr : ch.ops.data();

    const std::vector<uint8_t> A = fill(ty.a, s.a_elems(), g), B = fill(ty.b, s.b_elems(), g);
    std::vector<uint8_t> C0 = fill(ty.c, s.c_elems(), g);
    const void *const *srcs = ch.srcs.empty() ? nullptr : ch.srcs.data();
    // flags & 2: an in-place residual -- the first M x N binary operand of
    // C's type and leading dimension becomes C itself in the fast run; the
    // scalar run keeps a separate copy of C's initial values as the
    // operand, so it is the out-of-place reference.
    int in_place = -1;
    if (flags & 2)
        for (size_t t = 0, b = 0; t < ch.ops.size() && in_place < 0; ++t) {
            const anvil_post_op_t &op = ch.ops[t];
            if (op.kind != anvil_post_op_binary) continue;
            if (!op.per_n && op.ld == s.ldc && op.src_dt == ty.c && ch.operands[b].size() == C0.size()) {
                in_place = int(b);
                ch.operands[b] = C0;
                ch.srcs[b] = ch.operands[b].data();
                g_ctx += fmt(" in-place(binary %d)", int(b));
            }
            ++b;
        }

    std::vector<uint8_t> packed_f, packed_s, Cf, Cs;
    auto pack = [&](std::vector<uint8_t> &packed) {
        anvil_matmul_t mm = nullptr;
        expect_ok(anvil_matmul_create(&mm, &d), "anvil_matmul_create");
        size_t bytes = 0;
        expect_ok(anvil_matmul_packed_weights_size(mm, &bytes), "anvil_matmul_packed_weights_size");
        packed.assign(bytes + 64, 0xa5);
        expect_ok(anvil_matmul_pack_weights(mm, B.data(), packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64),
                  "anvil_matmul_pack_weights");
        expect_ok(anvil_matmul_destroy(mm), "anvil_matmul_destroy");
    };
    auto exec = [&](const std::vector<uint8_t> &packed, std::vector<uint8_t> &C, bool operand_is_c) {
        anvil_matmul_t mm = nullptr;
        expect_ok(anvil_matmul_create(&mm, &d), "anvil_matmul_create");
        C = C0;
        const uint8_t *p = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
        std::vector<uint8_t> pk(p, p + (packed.size() - 64));  // an exactly sized copy (ASan)
        std::vector<const void *> run_srcs(ch.srcs);
        if (operand_is_c) run_srcs[size_t(in_place)] = C.data();
        expect_ok(anvil_matmul_execute(mm, A.data(), pk.data(), C.data(), run_srcs.empty() ? srcs : run_srcs.data()),
                  "anvil_matmul_execute");
        expect_ok(anvil_matmul_destroy(mm), "anvil_matmul_destroy");
    };
    under(tier, threads, [&] { pack(packed_f); });
    under(anvil_isa_scalar, 1, [&] { pack(packed_s); });
    {
        const uint8_t *pf = packed_f.data() + (64 - reinterpret_cast<uintptr_t>(packed_f.data()) % 64) % 64;
        const uint8_t *ps = packed_s.data() + (64 - reinterpret_cast<uintptr_t>(packed_s.data()) % 64) % 64;
        if (packed_f.size() != packed_s.size() || std::memcmp(pf, ps, packed_f.size() - 64) != 0)
            fail("matmul packed weights differ between the fast and the scalar cap");
    }
    // flags & 1: the fast run uses the weights packed under the scalar cap.
    under(tier, threads, [&] { exec((flags & 1) ? packed_s : packed_f, Cf, in_place >= 0); });
    under(anvil_isa_scalar, 1, [&] { exec(packed_s, Cs, false); });
    compare_out("matmul", ty.c, s.M, s.N, s.ldc, Cf, Cs, C0);
}

// ------------------------------------------------------------ conv2d

void fuzz_conv(fz::reader &r) {
    const anvil_isa_t tier = decode_tier(r);
    const int threads = 1 + r.u8() % 2;
    const types ty = decode_types(r, true);
    anvil_conv2d_desc_t d{};
    d.src_dt = ty.a;
    d.wei_dt = ty.b;
    d.dst_dt = ty.c;
    const uint8_t nb = r.u8();
    d.N = nb % 8 == 7 ? 0 : 1 + nb % 2;
    const uint8_t gsel = r.u8();
    const int64_t icg = 1 + r.u8() % 8, ocg = 1 + r.u8() % 8;
    switch (gsel % 4) {
        case 0: case 1: d.G = 1; d.IC = icg * (1 + (gsel >> 4) % 4); d.OC = ocg * (1 + (gsel >> 6)); break;
        case 2: d.G = 1 + (gsel >> 4) % 4; d.IC = icg * d.G; d.OC = ocg * d.G; break;
        default: d.G = d.IC = d.OC = 1 + (gsel >> 2) % 40; break;  // depthwise
    }
    const uint8_t kb = r.u8();
    d.KH = 1 + (kb & 3) % 3;
    d.KW = 1 + ((kb >> 2) & 3) % 3;
    d.SH = 1 + (kb >> 4) % 2;
    d.SW = 1 + (kb >> 5) % 2;
    d.DH = (kb >> 6) & 1;
    d.DW = (kb >> 7) & 1;
    const uint8_t pb = r.u8();
    d.pad_t = (pb & 3) % 3;
    d.pad_l = ((pb >> 2) & 3) % 3;
    d.pad_b = ((pb >> 4) & 3) % 3;
    d.pad_r = (pb >> 6) % 3;
    d.IH = 1 + r.u8() % 10;
    d.IW = 1 + r.u8() % 10;
    const int64_t ekh = (d.KH - 1) * (d.DH + 1) + 1, ekw = (d.KW - 1) * (d.DW + 1) + 1;
    d.IH = std::max(d.IH, ekh - d.pad_t - d.pad_b);
    d.IW = std::max(d.IW, ekw - d.pad_l - d.pad_r);
    d.IH = std::max<int64_t>(d.IH, 1);
    d.IW = std::max<int64_t>(d.IW, 1);
    d.OH = (d.IH + d.pad_t + d.pad_b - ekh) / d.SH + 1;
    d.OW = (d.IW + d.pad_l + d.pad_r - ekw) / d.SW + 1;
    int32_t zs, zw, zd;
    decode_zero_points(r, ty.a, &zs, &zw, &zd);
    d.src_zero_point = zs;
    d.dst_zero_point = zd;
    const uint8_t flags = r.u8();
    const anvil_conv_weights_layout_t layout = (flags & 1) ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
    const uint64_t seed = r.u16();
    fz::rng g(seed);
    quant q;
    decode_quant(r, d.OC, g, &q);
    const int64_t pixels = d.N * d.OH * d.OW;
    chain ch;
    decode_chain(r, pixels, d.OC, g, &ch);
    d.scales = q.scales.empty() ? nullptr : q.scales.data();
    d.scales_per_oc = q.per_col;
    d.num_post_ops = int(ch.ops.size());
    d.post_ops = ch.ops.empty() ? nullptr : ch.ops.data();
    g_ctx = fmt("conv2d(cap=%s threads=%d dt=%s,%s->%s mb%lld_g%lldic%lldih%lldiw%lld_oc%lldoh%lldow%lld_"
                "kh%lldkw%lldsh%lldsw%lld_pt%lldpl%lldpb%lldpr%lld_dh%llddw%lld zp=%d,%d %s layout=%s "
                "flags=0x%x seed=%llu) post_ops:%s",
                anvil_isa_name(tier), threads, dt_name(ty.a), dt_name(ty.b), dt_name(ty.c),
                (long long)d.N, (long long)d.G, (long long)d.IC, (long long)d.IH, (long long)d.IW,
                (long long)d.OC, (long long)d.OH, (long long)d.OW, (long long)d.KH, (long long)d.KW,
                (long long)d.SH, (long long)d.SW, (long long)d.pad_t, (long long)d.pad_l,
                (long long)d.pad_b, (long long)d.pad_r, (long long)d.DH, (long long)d.DW, zs, zd,
                q.str.c_str(), layout == anvil_conv_weights_hwio ? "hwio" : "oihw", flags,
                (unsigned long long)seed, ch.str.c_str());

    const std::vector<uint8_t> src = fill(ty.a, d.N * d.IH * d.IW * d.IC, g);
    const std::vector<uint8_t> wei = fill(ty.b, d.OC * (d.IC / d.G) * d.KH * d.KW, g);
    const std::vector<uint8_t> dst0 = fill(ty.c, pixels * d.OC, g);
    const float *bias = q.bias.empty() ? nullptr : q.bias.data();
    const void *const *srcs = ch.srcs.empty() ? nullptr : ch.srcs.data();

    auto run = [&](std::vector<uint8_t> &packed, std::vector<uint8_t> &dst, const std::vector<uint8_t> *use) {
        anvil_conv2d_t cv = nullptr;
        expect_ok(anvil_conv2d_create(&cv, &d), "anvil_conv2d_create");
        size_t bytes = 0;
        expect_ok(anvil_conv2d_packed_weights_size(cv, &bytes), "anvil_conv2d_packed_weights_size");
        // 4-byte aligned (vector storage), filled alike so untouched bytes
        // compare equal.
        std::vector<uint32_t> buf((bytes + 3) / 4, 0xa5a5a5a5u);
        expect_ok(anvil_conv2d_pack_weights(cv, wei.data(), layout, buf.data()), "anvil_conv2d_pack_weights");
        packed.assign(reinterpret_cast<const uint8_t *>(buf.data()), reinterpret_cast<const uint8_t *>(buf.data()) + bytes);
        std::vector<uint32_t> pk((bytes + 3) / 4);
        std::memcpy(pk.data(), use ? use->data() : packed.data(), bytes);
        dst = dst0;
        expect_ok(anvil_conv2d_execute(cv, src.data(), pk.data(), bias, dst.data(), srcs), "anvil_conv2d_execute");
        expect_ok(anvil_conv2d_destroy(cv), "anvil_conv2d_destroy");
    };
    std::vector<uint8_t> pf, ps, df, ds;
    under(anvil_isa_scalar, 1, [&] { run(ps, ds, nullptr); });
    // flags & 2: the fast run uses the weights packed under the scalar cap.
    under(tier, threads, [&] { run(pf, df, (flags & 2) ? &ps : nullptr); });
    if (pf != ps) fail("conv2d packed weights differ between the fast and the scalar cap");
    compare_out("conv2d", ty.c, pixels, d.OC, d.OC, df, ds, dst0);
}

void print_ctx() { std::fprintf(stderr, "\nfuzz_jit_exec: the problem was: %s\n", g_ctx.c_str()); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    if (const char *v = std::getenv("ANVIL_MAX_ISA")) anvil::cpu::parse_isa_name(v, &g_initial_cap);
    g_default_threads = anvil_get_num_threads();
    fz::on_death_or_timeout(print_ctx);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz::reader r(data, size);
    const uint8_t op = r.u8();
    switch (op % 7) {
        case 0: fuzz_float_gemm(r, false, false); break;
        case 1: fuzz_float_gemm(r, true, false); break;
        case 2: fuzz_int8_gemm(r, false); break;
        case 3: fuzz_int8_gemm(r, true); break;
        case 4: fuzz_float_gemm(r, false, true); break;
        case 5: fuzz_matmul(r); break;
        default: fuzz_conv(r); break;
    }
    return 0;
}
