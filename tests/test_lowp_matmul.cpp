// The low-precision matmul handle (anvil_matmul_*): every supported type
// combination with scales, zero points, bias and post-op chains, against a
// scalar reference of the documented chain and, where the build has it
// (onednn_peer.h), against oneDNN's matmul primitive with the same
// attributes.
//
// Exactness: A and B are small integers and the scales powers of two, so
// every step of an exact chain (scale, bias, relu, leaky_relu with a
// power-of-two slope, clip, binary add/mul with small integers, zero
// points) is exact in fp32 and anvil, the reference and oneDNN agree
// exactly, except that an integer output may differ by 1 where the value is
// an exact .5 tie (RNE vs oneDNN's rounding).  Transcendental post-ops are
// compared with the reference within their documented bounds
// (docs/postops.md, see eltwise_bound), propagated through the rest of the
// chain, and oneDNN within the sum of both libraries' bounds (benchdnn's
// f32 eltwise threshold, 4e-6, for oneDNN).
//
// oneDNN 2.6 applies bias before the output scale ((acc + bias) * scale);
// anvil's order is acc * scale + bias (the and oneDNN 3's), so
// oneDNN is given bias / scale, exact with power-of-two scales.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "lowp_util.h"
#include "onednn_peer.h"
#include "test_util.h"

namespace {

using dt = anvil_data_type_t;

struct mm_case {
    dt a = anvil_dt_u8, b = anvil_dt_s8, c = anvil_dt_f32;
    lt::shape s;
    int32_t azp = 0, bzp = 0, czp = 0;
    int scale_mode = 0;  // 0 none, 1 per tensor, 2 per N
    bool bias = false;
    std::vector<anvil_post_op_t> ops;
    std::string str() const {
        std::string r = "a=" + std::to_string(a) + " b=" + std::to_string(b) + " c=" +
                        std::to_string(c) + " " + s.str() + " zp=" + std::to_string(azp) + "/" +
                        std::to_string(bzp) + "/" + std::to_string(czp) +
                        " scales=" + std::to_string(scale_mode) + " bias=" + std::to_string(bias) +
                        " ops=";
        for (const auto &o : ops)
            r += o.kind == anvil_post_op_sum
                     ? "sum:" + std::to_string(o.alpha) + ":" + std::to_string(o.beta) + ","
                     : (o.kind == anvil_post_op_binary ? "b" : "e") + std::to_string(o.alg) +
                           (o.kind == anvil_post_op_binary ? (o.per_n ? "n" : "f") : "") + ",";
        return r;
    }
};

using lt::elem_bytes;
using lt::eltwise_bound;
using lt::load;
using lt::onednn_eltwise_bound;
using lt::ulp32;

double eltwise_exact(int alg, double x, double alpha, double beta) {
    switch (alg) {
        case anvil_eltwise_relu: return x > 0 ? x : 0;
        case anvil_eltwise_leaky_relu: return x > 0 ? x : alpha * x;
        case anvil_eltwise_clip: return std::min(std::max(x, alpha), beta);
        case anvil_eltwise_gelu_tanh:
            return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        case anvil_eltwise_gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case anvil_eltwise_silu: return x / (1 + std::exp(-x));
        case anvil_eltwise_sigmoid: return 1 / (1 + std::exp(-x));
        case anvil_eltwise_tanh: return std::tanh(x);
    }
    return x;
}

#if ANVIL_TESTS_HAVE_ONEDNN
using peer::dnnl_alg;
using peer::dnnl_dt;

// oneDNN's matmul primitive with the case's attributes (bias pre-divided by
// the scale) into D; false when oneDNN does not implement the combination.
bool onednn_matmul(const mm_case &q, const std::vector<anvil_post_op_t> &ops,
                   const std::vector<float> &scales, const std::vector<float> &bias,
                   const std::vector<std::vector<float>> &bin, const void *A, const void *B, void *D) {
    const lt::shape &s = q.s;
    if ((q.a == anvil_dt_u8 || q.a == anvil_dt_s8) && !peer::int8_peer()) return false;
    try {
        using namespace dnnl;
        using dims = memory::dims;
        static engine eng(engine::kind::cpu, 0);
        stream st(eng);
        const memory::desc a_md({s.M, s.K}, dnnl_dt(q.a), s.transa() ? dims{1, s.lda()} : dims{s.lda(), 1});
        const memory::desc b_md({s.K, s.N}, dnnl_dt(q.b), s.transb() ? dims{1, s.ldb()} : dims{s.ldb(), 1});
        const memory::desc c_md({s.M, s.N}, dnnl_dt(q.c), dims{s.ldc(), 1});
        const memory::desc bias_md({1, s.N}, memory::data_type::f32, dims{s.N, 1});
        primitive_attr attr;
        if (!scales.empty()) attr.set_output_scales(q.scale_mode == 2 ? 2 : 0, scales);
        if (q.azp) attr.set_zero_points(DNNL_ARG_SRC, 0, {q.azp});
        if (q.bzp) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {q.bzp});
        if (q.czp) attr.set_zero_points(DNNL_ARG_DST, 0, {q.czp});
        post_ops po;
        std::vector<memory::desc> bin_mds;
        for (const auto &o : ops) {
            if (o.kind == anvil_post_op_eltwise) {
                po.append_eltwise(1.0f, dnnl_alg(o.alg), o.alg == anvil_eltwise_silu ? 1.0f : o.alpha, o.beta);
            } else if (o.kind == anvil_post_op_sum) {
                po.append_sum(o.alpha, int32_t(o.beta), dnnl_dt(q.c));
            } else {
                const memory::desc md = o.per_n ? memory::desc({1, s.N}, memory::data_type::f32, dims{s.N, 1})
                                                : memory::desc({s.M, s.N}, memory::data_type::f32, dims{o.ld, 1});
                po.append_binary(o.alg == anvil_binary_add ? algorithm::binary_add : algorithm::binary_mul, md);
                bin_mds.push_back(md);
            }
        }
        attr.set_post_ops(po);
        const matmul::primitive_desc pd =
            q.bias ? matmul::primitive_desc(matmul::desc(a_md, b_md, bias_md, c_md), attr, eng)
                   : matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), attr, eng);
        std::vector<float> dbias = bias;
        for (size_t j = 0; j < dbias.size(); ++j)
            dbias[j] /= scales.empty() ? 1.0f : scales[q.scale_mode == 2 ? j : 0];
        memory ma(a_md, eng, const_cast<void *>(A)), mb(b_md, eng, const_cast<void *>(B));
        memory mc(c_md, eng, D);
        memory mbias(bias_md, eng, dbias.data());
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        if (q.bias) args.insert({DNNL_ARG_BIAS, mbias});
        int bi = 0;
        for (size_t t = 0; t < ops.size(); ++t)
            if (ops[t].kind == anvil_post_op_binary) {
                args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(t)) | DNNL_ARG_SRC_1,
                             memory(bin_mds[size_t(bi)], eng, const_cast<float *>(bin[size_t(bi)].data()))});
                ++bi;
            }
        matmul(pd).execute(st, args);
        st.wait();
        return true;
    } catch (const dnnl::error &e) {
        MESSAGE("oneDNN has no matmul for this case: ", e.what());
        return false;
    }
}
#else
template <typename... Args>
bool onednn_matmul(const Args &...) { return false; }  // no oneDNN in this build
#endif

void run_case(const mm_case &q, uint64_t seed) {
    INFO(q.str(), " seed=", seed);
    const lt::shape &s = q.s;
    tu::rng r(seed);
    const bool bf16 = q.a == anvil_dt_bf16;
    const int ea = q.a == anvil_dt_f32 ? 4 : bf16 ? 2 : 1;
    std::vector<uint8_t> A(size_t(s.a_rows() * s.lda() * ea + 64)), B(size_t(s.b_rows() * s.ldb() * ea + 64));
    auto fill = [&](std::vector<uint8_t> &v, int64_t count, dt t) {
        for (int64_t k = 0; k < count; ++k) {
            if (t == anvil_dt_f32)
                reinterpret_cast<float *>(v.data())[k] = float(r.ival(-4, 4));
            else if (t == anvil_dt_bf16)
                reinterpret_cast<uint16_t *>(v.data())[k] = lt::bf16_small_int(r);
            else if (t == anvil_dt_u8)
                v[size_t(k)] = uint8_t(r.ival(0, 6));
            else
                v[size_t(k)] = uint8_t(int8_t(r.ival(-4, 4)));
        }
    };
    fill(A, s.a_rows() * s.lda(), q.a);
    fill(B, s.b_rows() * s.ldb(), q.b);
    std::vector<float> scales, bias;
    if (q.scale_mode) {
        scales.resize(size_t(q.scale_mode == 2 ? s.N : 1));
        for (auto &v : scales) v = std::ldexp(1.0f, int(r.ival(-3, 1)));
    }
    if (q.bias) {
        bias.resize(size_t(s.N));
        for (auto &v : bias) v = float(r.ival(-20, 20));
    }
    // Binary operands (f32, small integers; per-N or M x N with ld = N + 3).
    std::vector<std::vector<float>> bin;
    std::vector<const void *> bin_ptrs;
    std::vector<anvil_post_op_t> ops = q.ops;
    for (auto &o : ops) {
        if (o.kind != anvil_post_op_binary) continue;
        o.src_dt = anvil_dt_f32;
        o.ld = o.per_n ? 0 : s.N + 3;
        std::vector<float> v(size_t(o.per_n ? s.N : s.M * (s.N + 3)));
        for (auto &x : v) x = float(r.ival(o.alg == anvil_binary_mul ? -2 : -9, o.alg == anvil_binary_mul ? 2 : 9));
        bin.push_back(std::move(v));
    }
    for (auto &v : bin) bin_ptrs.push_back(v.data());

    anvil_matmul_desc_t d{};
    d.a_dt = q.a;
    d.b_dt = q.b;
    d.c_dt = q.c;
    d.transa = s.ta;
    d.transb = s.tb;
    d.M = s.M;
    d.N = s.N;
    d.K = s.K;
    d.lda = s.lda();
    d.ldb = s.ldb();
    d.ldc = s.ldc();
    d.a_zero_point = q.azp;
    d.b_zero_point = q.bzp;
    d.c_zero_point = q.czp;
    d.scales = scales.empty() ? nullptr : scales.data();
    d.scales_per_n = q.scale_mode == 2;
    d.bias = bias.empty() ? nullptr : bias.data();
    d.num_post_ops = int(ops.size());
    d.post_ops = ops.data();
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint8_t> packed(bytes + 64);
    void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), pk) == anvil_success);
    const int ec = elem_bytes(q.c);
    std::vector<uint8_t> C(size_t(s.M * s.ldc() * ec), 0xA5);
    // A sum op reads C's old values: small integers of C's type (the
    // padding columns keep 0xA5, which must stay).
    const bool has_sum = std::any_of(ops.begin(), ops.end(),
                                     [](const anvil_post_op_t &o) { return o.kind == anvil_post_op_sum; });
    if (has_sum)
        for (int64_t i = 0; i < s.M; ++i)
            for (int64_t j = 0; j < s.N; ++j) {
                lt::store_int(q.c, C.data(), i * s.ldc() + j, q.c == anvil_dt_u8 ? r.ival(0, 30) : r.ival(-30, 30));
            }
    const std::vector<uint8_t> C0 = C;
    REQUIRE(anvil_matmul_execute(h, A.data(), pk, C.data(), bin_ptrs.empty() ? nullptr : bin_ptrs.data()) == anvil_success);
    anvil_matmul_destroy(h);

    // oneDNN with the same attributes (bias pre-divided by the scale).
    // oneDNN 2.6 gets a chain with two relu-family ops of different slopes
    // wrong (relu, then a binary op, then leaky_relu(0.125) gives 0 for a
    // negative input: it seems to reuse the first slope; reproduced with a
    // 1x1x1 f32 matmul).  It is no peer for those chains.
    std::vector<uint8_t> D = C0;
    const bool have_dnnl = !lt::two_relu_slopes(ops) &&
                           onednn_matmul(q, ops, scales, bias, bin, A.data(), B.data(), D.data());

    int64_t bad = 0, bad_dnnl = 0;
    std::string first;
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < s.N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < s.K; ++k) {
                const double a = load(q.a, A.data(), s.a_at(i, k)) - q.azp;
                const double b = load(q.b, B.data(), s.b_at(k, j)) - q.bzp;
                acc += a * b;
            }
            double x = acc;
            // Error bounds of anvil's x (err) and oneDNN's (err_d) against
            // the exact chain.  Everything before the first transcendental
            // op is exact (integer data, power-of-two scales and slopes,
            // integer bias and operands); after it, each op propagates the
            // bound (slope: <= 1 for the exact ops and for tanh, sigmoid;
            // <= 1.1 silu, <= 1.13 the gelus: 1.13 for all; a product
            // scales it by |y|), adds its own documented error, and every
            // later fp32 operation adds half an ulp of its result.
            double err = 0, err_d = 0;
            if (!scales.empty()) x *= scales[size_t(q.scale_mode == 2 ? j : 0)];
            if (!bias.empty()) x += bias[size_t(j)];
            int bi = 0;
            for (const auto &o : ops) {
                if (o.kind == anvil_post_op_sum) {  // exact: integers, power-of-two scale
                    x += double(o.alpha) * (load(q.c, C0.data(), i * s.ldc() + j) - double(o.beta));
                    if (err > 0) err += 0.5 * ulp32(x);
                    if (err_d > 0) err_d += 0.5 * ulp32(x);
                    continue;
                }
                if (o.kind == anvil_post_op_binary) {
                    const auto &v = bin[size_t(bi++)];
                    const double y = v[size_t(o.per_n ? j : i * o.ld + j)];
                    if (o.alg == anvil_binary_add) {
                        x += y;
                    } else {
                        x *= y;
                        err *= std::fabs(y);
                        err_d *= std::fabs(y);
                    }
                    if (err > 0) err += 0.5 * ulp32(x);
                    if (err_d > 0) err_d += 0.5 * ulp32(x);
                } else {
                    const double y = eltwise_exact(o.alg, x, o.alpha, o.beta);
                    err = err * 1.13 + eltwise_bound(o.alg, y);
                    err_d = err_d * 1.13 + onednn_eltwise_bound(o.alg, y);
                    x = y;
                }
            }
            x += q.czp;
            if (q.czp != 0 && err > 0) err += 0.5 * ulp32(x);
            if (q.czp != 0 && err_d > 0) err_d += 0.5 * ulp32(x);
            const int64_t at = i * s.ldc() + j;
            const double got = load(q.c, C.data(), at);
            const double dn = load(q.c, D.data(), at);
            // oneDNN is held to its own bound, or to anvil's result within
            // both bounds.
            double tol = err, tol_dnnl = err + err_d;
            if (q.c == anvil_dt_bf16) {
                // One output rounding: half an ulp of bf16, at most |x| 2^-8
                // for normal values and 2^-134 (half the subnormal spacing
                // 2^-133) below them.
                const double half_ulp = std::max(std::fabs(x) * 0x1p-8, 0x1p-134);
                tol += half_ulp;
                tol_dnnl += half_ulp;
            }
            double want = x;
            if (q.c == anvil_dt_s32 || q.c == anvil_dt_u8 || q.c == anvil_dt_s8) {
                const double lo = q.c == anvil_dt_u8 ? 0 : q.c == anvil_dt_s8 ? -128 : -2147483648.0;
                const double hi = q.c == anvil_dt_u8 ? 255 : q.c == anvil_dt_s8 ? 127 : 2147483647.0;
                want = std::min(hi, std::max(lo, std::nearbyint(x)));
                // Distance of x to the nearest .5 tie: within the error
                // bound the rounding may go either way (anvil itself rounds
                // exact ties to even, like nearbyint; oneDNN may not).
                const double to_tie = std::fabs(x - std::floor(x) - 0.5);
                tol = (err > 0 && to_tie <= err) ? 1 : 0;
                tol_dnnl = to_tie <= tol_dnnl ? 1 : 0;
            }
            if (!(std::fabs(got - want) <= tol) && bad++ == 0)
                first = "(" + std::to_string(i) + "," + std::to_string(j) + ") anvil " + std::to_string(got) +
                        " want " + std::to_string(want);
            if (have_dnnl && !(std::fabs(dn - want) <= tol_dnnl) && !(std::fabs(dn - got) <= tol_dnnl) &&
                bad_dnnl++ == 0 && first.empty())
                first = "(" + std::to_string(i) + "," + std::to_string(j) + ") onednn " + std::to_string(dn) +
                        " anvil " + std::to_string(got) + " want " + std::to_string(want);
        }
    INFO(first);
    CHECK(bad == 0);
    CHECK(bad_dnnl == 0);
    // Padding columns of C are never written.
    int64_t pad_bad = 0;
    for (int64_t i = 0; i < s.M; ++i)
        for (int64_t b = s.N * ec; b < s.ldc() * ec; ++b) pad_bad += C[size_t(i * s.ldc() * ec + b)] != 0xA5;
    CHECK(pad_bad == 0);
}

using lt::binary;
using lt::eltwise;
using lt::sum;

// The type triples of the types x chains walks (every output of every input).
const dt kChainTypes[][3] = {
    {anvil_dt_u8, anvil_dt_s8, anvil_dt_f32},     {anvil_dt_u8, anvil_dt_s8, anvil_dt_s32},
    {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8},      {anvil_dt_u8, anvil_dt_s8, anvil_dt_s8},
    {anvil_dt_u8, anvil_dt_s8, anvil_dt_bf16},    {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32},
    {anvil_dt_s8, anvil_dt_s8, anvil_dt_s8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_u8},
    {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32}, {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16},
    {anvil_dt_f32, anvil_dt_f32, anvil_dt_f32},   {anvil_dt_f32, anvil_dt_f32, anvil_dt_bf16},
};

// A case of the types x chains walks: transposes, zero points (A and C;
// oneDNN 2.6's matmul takes weights zero points only on its reference
// path), scales and bias rotated by the seed; c_zp the C zero point used.
mm_case rotated_case(const dt (&t)[3], const int64_t (&sh)[3], const std::vector<anvil_post_op_t> &ops,
                     uint64_t seed, int32_t c_zp) {
    mm_case q;
    q.a = t[0];
    q.b = t[1];
    q.c = t[2];
    q.s.M = sh[0];
    q.s.N = sh[1];
    q.s.K = sh[2];
    q.s.ta = seed % 2 ? 'T' : 'N';
    q.s.tb = (seed / 2) % 2 ? 'T' : 'N';
    const bool int8 = q.a != anvil_dt_bf16 && q.a != anvil_dt_f32;
    q.azp = int8 && seed % 3 == 1 ? (q.a == anvil_dt_u8 ? 3 : -2) : 0;
    q.czp = int8 && (q.c == anvil_dt_u8 || q.c == anvil_dt_s8) && seed % 2 ? c_zp : 0;
    q.scale_mode = int(seed % 3);
    q.bias = seed % 4 != 0;
    q.ops = ops;
    return q;
}

TEST_CASE("lowp matmul: types x attributes x post-op chains match the reference and oneDNN") {
    const std::vector<std::vector<anvil_post_op_t>> kChains = {
        {},
        {eltwise(anvil_eltwise_relu)},
        {eltwise(anvil_eltwise_leaky_relu, 0.25f)},
        {eltwise(anvil_eltwise_clip, -6.f, 6.f), binary(anvil_binary_add, false)},
        {binary(anvil_binary_mul, true), eltwise(anvil_eltwise_relu), binary(anvil_binary_add, false)},
        {eltwise(anvil_eltwise_gelu_tanh)},
        {eltwise(anvil_eltwise_gelu_erf), binary(anvil_binary_add, true)},
        {eltwise(anvil_eltwise_silu)},
        {eltwise(anvil_eltwise_sigmoid)},
        {eltwise(anvil_eltwise_tanh), binary(anvil_binary_mul, false)},
    };
    const int64_t kShapes[][3] = {{1, 1, 1},   {1, 33, 17},  {3, 17, 5},   {16, 64, 64}, {17, 31, 7},
                                  {13, 100, 129}, {64, 48, 33}, {2, 257, 300}, {100, 40, 4}};
    uint64_t seed = 1;
    for (const auto &t : kChainTypes)
        for (size_t ci = 0; ci < kChains.size(); ++ci) {
            mm_case q = rotated_case(t, kShapes[(seed * 7) % 9], kChains[ci], seed, 7);
            q.s.pad_a = seed % 3;
            q.s.pad_b = seed % 2 ? 5 : 0;
            q.s.pad_c = seed % 5 == 0 ? 3 : 0;
            run_case(q, seed++);
        }
}

// The sum post-op (C's old values, read in C's type) in every type triple,
// alone and between other ops, with scales and zero points, shapes with
// tails and padded C, deep K (several K blocks: C must not be written
// before the chain reads it), f32 output through the fp32 GEMM's scratch
// panels.  Data are small integers and the scales powers of two: exact.
TEST_CASE("matmul: sum post-op in every type, vs the reference and oneDNN") {
    const std::vector<std::vector<anvil_post_op_t>> kChains = {
        {sum()},
        {sum(0.5f), eltwise(anvil_eltwise_relu)},
        {sum(2.0f, 3.0f)},
        {eltwise(anvil_eltwise_clip, -6.f, 6.f), sum(-1.0f), binary(anvil_binary_add, false)},
        {binary(anvil_binary_mul, true), sum(1.0f, -2.0f), eltwise(anvil_eltwise_leaky_relu, 0.25f)},
        {sum(0.25f), eltwise(anvil_eltwise_gelu_tanh)},
    };
    const int64_t kShapes[][3] = {{1, 1, 1},     {1, 33, 17},  {3, 17, 5},    {16, 64, 64},
                                  {17, 31, 700}, {64, 48, 33}, {2, 257, 300}, {29, 40, 2100}};
    uint64_t seed = 300;
    for (const auto &t : kChainTypes)
        for (size_t ci = 0; ci < kChains.size(); ++ci) {
            mm_case q = rotated_case(t, kShapes[(seed * 5) % 8], kChains[ci], seed, 5);
            q.s.pad_c = seed % 3 == 0 ? 3 : 0;
            run_case(q, seed++);
        }
    // Wide f32 / bf16 outputs: several scratch panels of the fp32 GEMM.
    for (const dt c : {anvil_dt_f32, anvil_dt_bf16}) {
        mm_case q;
        q.a = q.b = anvil_dt_f32;
        q.c = c;
        q.s.M = 300;
        q.s.N = 3600;
        q.s.K = 20;
        q.bias = true;
        q.ops = {sum(), eltwise(anvil_eltwise_relu)};
        run_case(q, seed++);
    }
}

TEST_CASE("matmul: sum post-op, bad parameters") {
    anvil_matmul_desc_t d{};
    d.a_dt = d.b_dt = d.c_dt = anvil_dt_f32;
    d.transa = d.transb = 'N';
    d.M = d.N = d.K = 4;
    d.lda = d.ldb = d.ldc = 4;
    for (const anvil_post_op_t bad : {sum(NAN), sum(1.0f, INFINITY), sum(-INFINITY)}) {
        d.num_post_ops = 1;
        d.post_ops = &bad;
        anvil_matmul_t h = nullptr;
        CHECK(anvil_matmul_create(&h, &d) == anvil_invalid_argument);
        CHECK(h == nullptr);
    }
    // A sum takes no operand: a chain of only a sum runs with binary_srcs NULL.
    const anvil_post_op_t ops[1] = {sum()};
    d.num_post_ops = 1;
    d.post_ops = ops;
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint8_t> packed(bytes + 64);
    void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    std::vector<float> A(16, 1.0f), B(16, 1.0f), C(16, 10.0f);
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), pk) == anvil_success);
    REQUIRE(anvil_matmul_execute(h, A.data(), pk, C.data(), nullptr) == anvil_success);
    for (float v : C) CHECK(v == 14.0f);
    anvil_matmul_destroy(h);
}

TEST_CASE("lowp matmul: weights zero point, reference only") {
    mm_case q;
    q.s.M = 19;
    q.s.N = 45;
    q.s.K = 71;
    q.s.tb = 'T';
    q.azp = 2;
    q.bzp = -3;
    q.c = anvil_dt_s32;
    run_case(q, 77);
    q.a = anvil_dt_s8;
    q.c = anvil_dt_f32;
    q.scale_mode = 2;
    q.bias = true;
    run_case(q, 78);
}

}  // namespace

namespace {

// One bare int8 -> s32 matmul (no scale, bias or post-op) against an exact
// int64 reference; values near the ends of the ranges make dot products
// beyond 2^24, which a path through fp32 would round.  ldc > N: nothing
// between the rows is written.
void check_bare_s32(anvil_data_type_t a_dt, int64_t M, int64_t N, int32_t azp, int32_t czp,
                    uint64_t seed) {
    CAPTURE(a_dt);
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(azp);
    CAPTURE(czp);
    anvil_matmul_desc_t d{};
    d.a_dt = a_dt;
    d.b_dt = anvil_dt_s8;
    d.c_dt = anvil_dt_s32;
    d.transa = 'N';
    d.transb = 'N';
    d.M = M;
    d.N = N;
    d.K = 4099;  // several K blocks of prepacked weights, and a K tail
    d.lda = d.K;
    d.ldb = d.N;
    d.ldc = d.N + 3;
    d.a_zero_point = azp;
    d.c_zero_point = czp;
    tu::rng r(seed);
    const bool s8 = a_dt == anvil_dt_s8;
    std::vector<uint8_t> A(size_t(d.M * d.K));
    std::vector<int8_t> B(size_t(d.K * d.N));
    for (auto &v : A) v = s8 ? uint8_t(int8_t(-r.ival(120, 128))) : uint8_t(r.ival(250, 255));
    for (auto &v : B) v = int8_t(r.ival(120, 127) * (r.ival(0, 9) == 0 ? -1 : 1));
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint32_t> packed(bytes / 4 + 1);
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
    const int32_t kSentinel = 0x5a5a5a5a;
    std::vector<int32_t> C(size_t(d.M * d.ldc), kSentinel);
    REQUIRE(anvil_matmul_execute(h, A.data(), packed.data(), C.data(), nullptr) == anvil_success);
    anvil_matmul_destroy(h);
    int64_t bad = 0, big = 0, touched = 0;
    for (int64_t i = 0; i < d.M; ++i) {
        for (int64_t j = 0; j < d.N; ++j) {
            int64_t dot = 0;
            for (int64_t k = 0; k < d.K; ++k) {
                const uint8_t a = A[size_t(i * d.K + k)];
                dot += ((s8 ? int64_t(int8_t(a)) : int64_t(a)) - azp) * B[size_t(k * d.N + j)];
            }
            big += std::abs(dot) > (1 << 24);
            bad += C[size_t(i * d.ldc + j)] != dot + czp;
        }
        for (int64_t j = d.N; j < d.ldc; ++j) touched += C[size_t(i * d.ldc + j)] != kSentinel;
    }
    CHECK(big > 0);
    CHECK(bad == 0);
    CHECK(touched == 0);
}

// Without a dst zero point (and with a zero weights zero point) the kernels
// store the int32 result themselves, the column sums' compensation of the
// source zero point (and of s8 sources' +128 shift) included; with one,
// the accumulator block goes through the epilogue.  Both exact.
TEST_CASE("lowp matmul: s32 output of a bare int8 product is exact beyond 2^24") {
    uint64_t seed = 9;
    for (int64_t M : {3, 29})
        for (int64_t N : {20, 45}) {
            check_bare_s32(anvil_dt_u8, M, N, 1, 5, seed++);
            check_bare_s32(anvil_dt_u8, M, N, 0, 0, seed++);
            check_bare_s32(anvil_dt_u8, M, N, 1, 0, seed++);
            check_bare_s32(anvil_dt_s8, M, N, 0, 0, seed++);
            check_bare_s32(anvil_dt_s8, M, N, -2, 0, seed++);
        }
}

}  // namespace

namespace {

anvil_matmul_t make_bf16_mm(int64_t M, int64_t N, int64_t K, anvil_data_type_t c_dt) {
    const anvil_matmul_desc_t d = lt::bf16_matmul_desc(M, N, K, c_dt);
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    return h;
}

// The bf16 output is the fp32 result rounded to nearest-even: bitwise
// f32_to_bf16 of the same matmul's f32 output.  Random fractions make about
// half of the results round up, so truncation (or rounding half away) fails.
TEST_CASE("lowp matmul: bf16 output is the fp32 result rounded to nearest even") {
    const int64_t M = 23, N = 70, K = 129;
    tu::rng r(17);
    std::vector<uint16_t> A(size_t(M * K)), B(size_t(K * N));
    for (auto &v : A) v = lt::bf16_frac(r);
    for (auto &v : B) v = lt::bf16_frac(r);
    anvil_matmul_t hf = make_bf16_mm(M, N, K, anvil_dt_f32), hb = make_bf16_mm(M, N, K, anvil_dt_bf16);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(hf, &bytes) == anvil_success);
    std::vector<uint32_t> packed(bytes / 4 + 1);
    REQUIRE(anvil_matmul_pack_weights(hf, B.data(), packed.data()) == anvil_success);
    std::vector<float> Cf(size_t(M * N));
    std::vector<uint16_t> Cb(size_t(M * N));
    REQUIRE(anvil_matmul_execute(hf, A.data(), packed.data(), Cf.data(), nullptr) == anvil_success);
    REQUIRE(anvil_matmul_execute(hb, A.data(), packed.data(), Cb.data(), nullptr) == anvil_success);
    int64_t bad = 0, rounded_up = 0;
    for (size_t t = 0; t < Cf.size(); ++t) {
        bad += Cb[t] != lt::f32_to_bf16(Cf[t]);
        rounded_up += (tu::bits(Cf[t]) >> 16) != Cb[t];  // differs from truncation
    }
    CHECK(bad == 0);
    CHECK(rounded_up > int64_t(Cf.size()) / 4);  // the data really tells RNE from truncation
    anvil_matmul_destroy(hf);
    anvil_matmul_destroy(hb);
}

// NaN and infinity inputs propagate as IEEE arithmetic says: a NaN in A's
// row i makes row i NaN; +inf times positive B entries gives +inf; inf
// times a zero gives NaN; and they reach a bf16 output as NaN / inf.
TEST_CASE("lowp bf16: NaN and infinity inputs") {
    const int64_t M = 4, N = 40, K = 33;
    std::vector<uint16_t> A(size_t(M * K), lt::f32_to_bf16(1.0f)), B(size_t(K * N), lt::f32_to_bf16(0.5f));
    A[size_t(0 * K + 5)] = lt::f32_to_bf16(tu::qnan());
    A[size_t(1 * K + 32)] = lt::f32_to_bf16(tu::inf());
    A[size_t(2 * K + 7)] = lt::f32_to_bf16(-tu::inf());
    B[size_t(7 * N + 3)] = 0;  // -inf * 0 = NaN in row 2, column 3
    std::vector<float> C(size_t(M * N));
    REQUIRE(anvil_gemm_bf16bf16f32('N', 'N', M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N) ==
            anvil_success);
    for (int64_t j = 0; j < N; ++j) {
        CHECK(std::isnan(C[size_t(j)]));
        CHECK(C[size_t(N + j)] == tu::inf());
        if (j == 3)
            CHECK(std::isnan(C[size_t(2 * N + j)]));
        else
            CHECK(C[size_t(2 * N + j)] == -tu::inf());
        CHECK(C[size_t(3 * N + j)] == (j == 3 ? 16.0f : 16.5f));  // B(7, 3) = 0
    }
    anvil_matmul_t hb = make_bf16_mm(M, N, K, anvil_dt_bf16);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(hb, &bytes) == anvil_success);
    std::vector<uint32_t> packed(bytes / 4 + 1);
    REQUIRE(anvil_matmul_pack_weights(hb, B.data(), packed.data()) == anvil_success);
    std::vector<uint16_t> Cb(size_t(M * N));
    REQUIRE(anvil_matmul_execute(hb, A.data(), packed.data(), Cb.data(), nullptr) == anvil_success);
    for (int64_t j = 0; j < N; ++j) {
        CHECK(std::isnan(lt::bf16_to_f32(Cb[size_t(j)])));
        CHECK(lt::bf16_to_f32(Cb[size_t(N + j)]) == tu::inf());
        CHECK(lt::bf16_to_f32(Cb[size_t(3 * N + j)]) == (j == 3 ? 16.0f : 16.5f));
    }
    anvil_matmul_destroy(hb);
}

// NaN and +-inf scattered through both operands -- the weights (B) too,
// prepacked or read in place -- at random places, over shapes with tails,
// transposes and several K blocks.  IEEE decides each element whatever
// the summation order: a NaN operand or inf * 0 gives NaN, +inf with -inf
// gives NaN, else the infinity, else the exact integer sum.
TEST_CASE("lowp bf16: NaN and infinity in A and in the weights, every path") {
    struct dims3 {
        int64_t M, N, K;
    };
    const dims3 kShapes[] = {{1, 40, 33}, {4, 100, 64}, {13, 33, 17}, {31, 70, 129}, {2, 17, 1100}, {64, 48, 600}};
    tu::rng r(123);
    int c = 0;
    for (const dims3 &sh : kShapes)
        for (const char tb : {'N', 'T'}) {
            const int64_t M = sh.M, N = sh.N, K = sh.K;
            const char ta = c % 3 == 0 ? 'T' : 'N';
            const int64_t lda = ta == 'N' ? K : M, ldb = tb == 'N' ? N : K;
            auto a_at = [&](int64_t i, int64_t k) { return ta == 'N' ? i * lda + k : k * lda + i; };
            auto b_at = [&](int64_t k, int64_t j) { return tb == 'N' ? k * ldb + j : j * ldb + k; };
            std::vector<uint16_t> A(size_t(M * K)), B(size_t(K * N));
            for (auto &v : A) v = lt::f32_to_bf16(float(r.ival(-3, 3)));
            for (auto &v : B) v = lt::f32_to_bf16(float(r.ival(-3, 3)));
            const float specials[3] = {tu::qnan(), tu::inf(), -tu::inf()};
            for (int t = 0; t < 3 + int(M * K / 200); ++t)
                A[size_t(r.ival(0, M * K - 1))] = lt::f32_to_bf16(specials[r.ival(0, 2)]);
            for (int t = 0; t < 3 + int(K * N / 200); ++t)
                B[size_t(r.ival(0, K * N - 1))] = lt::f32_to_bf16(specials[r.ival(0, 2)]);
            // The IEEE class of each element: 0 finite (value), 1 NaN, 2 +inf, 3 -inf.
            std::vector<int> cls(size_t(M * N));
            std::vector<double> val(size_t(M * N));
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                    bool nan = false, pinf = false, ninf = false;
                    double sum = 0;
                    for (int64_t k = 0; k < K; ++k) {
                        const double p = double(lt::bf16_to_f32(A[size_t(a_at(i, k))])) *
                                         double(lt::bf16_to_f32(B[size_t(b_at(k, j))]));
                        if (std::isnan(p)) nan = true;
                        else if (std::isinf(p)) (p > 0 ? pinf : ninf) = true;
                        else sum += p;
                    }
                    cls[size_t(i * N + j)] = nan || (pinf && ninf) ? 1 : pinf ? 2 : ninf ? 3 : 0;
                    val[size_t(i * N + j)] = sum;
                }
            auto check = [&](const char *what, int64_t i, int64_t j, double got) {
                const int k = cls[size_t(i * N + j)];
                const bool ok = k == 1 ? std::isnan(got) : k == 2 ? got == tu::inf() : k == 3 ? got == -tu::inf()
                                                                                           : got == val[size_t(i * N + j)];
                if (ok) return 0;
                MESSAGE(what, " ", M, "x", N, "x", K, " ", ta, tb, " (", i, ",", j, ") got ", got, " class ", k,
                        " sum ", val[size_t(i * N + j)]);
                return 1;
            };
            int bad = 0;
            std::vector<float> C(size_t(M * N), 7.0f);
            REQUIRE(anvil_gemm_bf16bf16f32(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), N) ==
                    anvil_success);
            for (int64_t i = 0; i < M && bad < 3; ++i)
                for (int64_t j = 0; j < N && bad < 3; ++j) bad += check("gemm_bf16bf16f32", i, j, C[size_t(i * N + j)]);
            for (const anvil_data_type_t c_dt : {anvil_dt_f32, anvil_dt_bf16}) {
                anvil_matmul_desc_t d = lt::bf16_matmul_desc(M, N, K, c_dt);
                d.transa = ta;
                d.transb = tb;
                d.lda = lda;
                d.ldb = ldb;
                anvil_matmul_t h = nullptr;
                REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
                size_t bytes = 0;
                REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
                std::vector<uint32_t> packed(bytes / 4 + 1);
                REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
                std::vector<uint8_t> out(size_t(M * N * (c_dt == anvil_dt_f32 ? 4 : 2)));
                REQUIRE(anvil_matmul_execute(h, A.data(), packed.data(), out.data(), nullptr) == anvil_success);
                anvil_matmul_destroy(h);
                for (int64_t i = 0; i < M && bad < 3; ++i)
                    for (int64_t j = 0; j < N && bad < 3; ++j) {
                        // bf16 output: the exact sums here (|sum| <= 9 K) are bf16 values only
                        // when small; compare the class, and the value rounded to bf16.
                        double got = lt::load(c_dt, out.data(), i * N + j);
                        if (c_dt == anvil_dt_bf16 && cls[size_t(i * N + j)] == 0)
                            got = got == double(lt::bf16_to_f32(lt::f32_to_bf16(float(val[size_t(i * N + j)]))))
                                      ? val[size_t(i * N + j)]
                                      : got;
                        bad += check(c_dt == anvil_dt_f32 ? "matmul f32 out" : "matmul bf16 out", i, j, got);
                    }
            }
            CHECK(bad == 0);
            ++c;
        }
}

}  // namespace

namespace {

// Random transposes and leading-dimension padding (none two times in three).
void random_layout(tu::rng &r, lt::shape *s) {
    s->ta = r.ival(0, 1) ? 'T' : 'N';
    s->tb = r.ival(0, 1) ? 'T' : 'N';
    s->pad_a = r.ival(0, 2) ? 0 : r.ival(1, 9);
    s->pad_b = r.ival(0, 2) ? 0 : r.ival(1, 9);
    s->pad_c = r.ival(0, 2) ? 0 : r.ival(1, 9);
}

// Random configurations (seeded, so every run checks the same ones): any
// supported type triple, shape (tails of every tile), transposes, padding,
// zero points, scales, bias and chains of up to 4 post-ops.
TEST_CASE("lowp matmul: random configurations match the reference and oneDNN") {
    const dt kTypes[][3] = {
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_f32},     {anvil_dt_u8, anvil_dt_s8, anvil_dt_s32},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8},      {anvil_dt_u8, anvil_dt_s8, anvil_dt_s8},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_bf16},    {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_s32},     {anvil_dt_s8, anvil_dt_s8, anvil_dt_u8},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_s8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_bf16},
        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32}, {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16},
    };
    tu::rng r(2026);
    for (int c = 0; c < 120; ++c) {
        mm_case q;
        const auto &t = kTypes[r.ival(0, 11)];
        q.a = t[0];
        q.b = t[1];
        q.c = t[2];
        q.s.M = r.ival(0, 3) == 0 ? r.ival(1, 4) : r.ival(1, 70);
        q.s.N = r.ival(1, 80);
        q.s.K = r.ival(0, 4) == 0 ? r.ival(1, 9) : r.ival(1, 300);
        random_layout(r, &q.s);
        const bool int8 = q.a != anvil_dt_bf16;
        if (int8 && r.ival(0, 1)) q.azp = q.a == anvil_dt_u8 ? int32_t(r.ival(0, 6)) : int32_t(r.ival(-4, 4));
        if (int8 && (q.c == anvil_dt_u8 || q.c == anvil_dt_s8) && r.ival(0, 1)) q.czp = int32_t(r.ival(-5, 5));
        q.scale_mode = int(r.ival(0, 2));
        q.bias = r.ival(0, 1) != 0;
        const int nops = int(r.ival(0, 4));
        for (int o = 0; o < nops; ++o) {
            switch (r.ival(0, 9)) {
                case 0: q.ops.push_back(eltwise(anvil_eltwise_relu)); break;
                case 1: q.ops.push_back(eltwise(anvil_eltwise_leaky_relu, 0.125f)); break;
                case 2: q.ops.push_back(eltwise(anvil_eltwise_clip, -8.f, 8.f)); break;
                case 3: q.ops.push_back(eltwise(anvil_eltwise_gelu_tanh)); break;
                case 4: q.ops.push_back(eltwise(anvil_eltwise_gelu_erf)); break;
                case 5: q.ops.push_back(eltwise(anvil_eltwise_silu)); break;
                case 6: q.ops.push_back(eltwise(anvil_eltwise_sigmoid)); break;
                case 7: q.ops.push_back(eltwise(anvil_eltwise_tanh)); break;
                case 8: q.ops.push_back(binary(anvil_binary_add, r.ival(0, 1) != 0)); break;
                default: q.ops.push_back(binary(anvil_binary_mul, r.ival(0, 1) != 0)); break;
            }
        }
        run_case(q, 5000 + uint64_t(c));
    }
}

// Deep K with several row tiles: the prepacked panels are walked in K
// blocks of up to 512 groups (lowp::choose_lp_blocking), so these run two
// to five blocks, accumulating between them and finishing the chain in
// the last one.
TEST_CASE("lowp matmul: deep K in several K blocks of prepacked weights") {
    struct deep {
        dt a, b, c;
        int64_t M, N, K;
    };
    const deep kCases[] = {
        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32, 29, 50, 2100},
        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16, 40, 33, 4500},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8, 25, 47, 4200},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32, 37, 20, 9001},
    };
    tu::rng r(4242);
    int c = 0;
    for (const deep &k : kCases) {
        mm_case q;
        q.a = k.a;
        q.b = k.b;
        q.c = k.c;
        q.s.M = k.M;
        q.s.N = k.N;
        q.s.K = k.K;
        random_layout(r, &q.s);
        if (q.a != anvil_dt_bf16) q.azp = q.a == anvil_dt_u8 ? 3 : -2;
        if (q.c == anvil_dt_u8) q.czp = 4;
        q.scale_mode = c % 3;
        q.bias = true;
        q.ops.push_back(binary(anvil_binary_add, false));
        q.ops.push_back(eltwise(c % 2 ? anvil_eltwise_relu : anvil_eltwise_gelu_tanh));
        run_case(q, 7100 + uint64_t(c++));
    }
}

}  // namespace

namespace {

// The fp32 matmul (B in the fp32 GEMM's panels, the chain on each block of
// C the driver finishes): random configurations, including wide ones with
// many blocks and, for bf16 output, several scratch panels (2^20 floats,
// at least 256 rows).
TEST_CASE("fp32 matmul: random configurations and several row panels match the reference and oneDNN") {
    tu::rng r(77);
    int multi_panel = 0;  // bf16 cases with more than one scratch panel
    for (int c = 0; c < 40; ++c) {
        mm_case q;
        q.a = anvil_dt_f32;
        q.b = anvil_dt_f32;
        const bool panels = c % 8 == 0;
        q.c = (panels && c % 16 == 0) || !r.ival(0, 2) ? anvil_dt_bf16 : anvil_dt_f32;
        q.s.M = panels ? r.ival(300, 420) : r.ival(0, 3) == 0 ? r.ival(1, 4) : r.ival(1, 70);
        q.s.N = panels ? r.ival(2731, 3100) : r.ival(1, 80);
        q.s.K = panels ? r.ival(1, 40) : r.ival(0, 4) == 0 ? r.ival(1, 9) : r.ival(1, 300);
        random_layout(r, &q.s);
        q.scale_mode = int(r.ival(0, 2));
        q.bias = r.ival(0, 1) != 0;
        const int nops = int(r.ival(0, 3));
        for (int o = 0; o < nops; ++o) {
            switch (r.ival(0, 5)) {
                case 0: q.ops.push_back(eltwise(anvil_eltwise_relu)); break;
                case 1: q.ops.push_back(eltwise(anvil_eltwise_gelu_tanh)); break;
                case 2: q.ops.push_back(eltwise(anvil_eltwise_gelu_erf)); break;
                case 3: q.ops.push_back(eltwise(anvil_eltwise_silu)); break;
                case 4: q.ops.push_back(binary(anvil_binary_add, r.ival(0, 1) != 0)); break;
                default: q.ops.push_back(binary(anvil_binary_mul, r.ival(0, 1) != 0)); break;
            }
        }
        multi_panel += q.c == anvil_dt_bf16 && q.s.M * q.s.N > (int64_t(1) << 20);
        run_case(q, 9000 + uint64_t(c));
    }
    CHECK(multi_panel >= 1);
}

anvil_matmul_desc_t f32_desc(int64_t M, int64_t N, int64_t K) {
    anvil_matmul_desc_t d{};
    d.a_dt = d.b_dt = d.c_dt = anvil_dt_f32;
    d.transa = d.transb = 'N';
    d.M = M;
    d.N = N;
    d.K = K;
    d.lda = K;
    d.ldb = N;
    d.ldc = N;
    return d;
}

TEST_CASE("fp32 matmul: bitwise identical for 1 and 2 threads; K = 0; bad descriptors") {
    const int64_t M = 130, N = 3001, K = 67;
    tu::rng r(5);
    std::vector<float> A(size_t(M * K)), B(size_t(K * N)), bias(static_cast<size_t>(N)),
        res(size_t(M * N));
    for (float &v : A) v = r.frac();
    for (float &v : B) v = r.frac();
    for (float &v : bias) v = r.frac();
    for (float &v : res) v = r.frac();
    const anvil_post_op_t ops[] = {eltwise(anvil_eltwise_gelu_erf), binary(anvil_binary_add, false)};
    anvil_matmul_desc_t d = f32_desc(M, N, K);
    d.bias = bias.data();
    d.num_post_ops = 2;
    std::vector<anvil_post_op_t> o(ops, ops + 2);
    o[1].src_dt = anvil_dt_f32;
    o[1].ld = N;
    d.post_ops = o.data();
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<float> packed(bytes / 4 + 1);
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
    const void *srcs[] = {res.data()};
    std::vector<std::vector<float>> out;
    for (int threads : {1, 2}) {
        REQUIRE(anvil_set_num_threads(threads) == anvil_success);
        std::vector<float> C(size_t(M * N), -7.0f);
        REQUIRE(anvil_matmul_execute(h, A.data(), packed.data(), C.data(), srcs) == anvil_success);
        out.push_back(C);
    }
    REQUIRE(anvil_set_num_threads(2) == anvil_success);
    CHECK(std::memcmp(out[0].data(), out[1].data(), out[0].size() * 4) == 0);
    // Another shape's packed weights are refused, C untouched.
    anvil_matmul_desc_t d2 = f32_desc(M, N + 1, K);
    anvil_matmul_t h2 = nullptr;
    REQUIRE(anvil_matmul_create(&h2, &d2) == anvil_success);
    std::vector<float> C(size_t(M * (N + 1)), -7.0f);
    CHECK(anvil_matmul_execute(h2, A.data(), packed.data(), C.data(), nullptr) == anvil_bad_packed_buffer);
    CHECK(std::all_of(C.begin(), C.end(), [](float v) { return v == -7.0f; }));
    anvil_matmul_destroy(h2);
    anvil_matmul_destroy(h);

    // K = 0: C = chain(0) = relu(0 + bias).
    anvil_matmul_desc_t dz = f32_desc(3, 5, 0);
    dz.lda = 1;
    const float bz[5] = {-1, 2, -3, 4, 0.5f};
    dz.bias = bz;
    const anvil_post_op_t relu = eltwise(anvil_eltwise_relu);
    dz.num_post_ops = 1;
    dz.post_ops = &relu;
    REQUIRE(anvil_matmul_create(&h, &dz) == anvil_success);
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<float> pz(bytes / 4 + 1);
    REQUIRE(anvil_matmul_pack_weights(h, nullptr, pz.data()) == anvil_success);
    std::vector<float> Cz(15, 9.0f);
    REQUIRE(anvil_matmul_execute(h, nullptr, pz.data(), Cz.data(), nullptr) == anvil_success);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) CHECK(Cz[size_t(i * 5 + j)] == std::max(0.0f, bz[j]));
    anvil_matmul_destroy(h);

    // Zero points are for int8; s32 / u8 / s8 outputs are not fp32 matmul outputs.
    anvil_matmul_desc_t bad = f32_desc(4, 4, 4);
    bad.a_zero_point = 1;
    CHECK(anvil_matmul_create(&h, &bad) == anvil_invalid_argument);
    bad = f32_desc(4, 4, 4);
    for (anvil_data_type_t c : {anvil_dt_s32, anvil_dt_u8, anvil_dt_s8}) {
        bad.c_dt = c;
        CHECK(anvil_matmul_create(&h, &bad) == anvil_unsupported);
    }
    bad = f32_desc(4, 4, 4);
    bad.b_dt = anvil_dt_bf16;
    CHECK(anvil_matmul_create(&h, &bad) == anvil_unsupported);
    bad = f32_desc(4, 4, 4);
    bad.lda = 3;
    CHECK(anvil_matmul_create(&h, &bad) == anvil_bad_leading_dim);
}

}  // namespace

namespace {

// Several application threads execute one fp32 handle (chain on each
// finished block, bf16 output through scratch panels) at once, under the
// default pool and a caller pool: every result equals the serial one.
TEST_CASE("fp32 matmul: concurrent executes of one handle, default and caller pool") {
    const int64_t M = 300, N = 3500, K = 40;  // bf16 output: two scratch panels
    tu::rng r(11);
    std::vector<float> B(size_t(K * N)), bias(static_cast<size_t>(N));
    for (float &v : B) v = r.frac();
    for (float &v : bias) v = r.frac();
    const anvil_post_op_t gelu = eltwise(anvil_eltwise_gelu_tanh);
    for (const anvil_data_type_t c_dt : {anvil_dt_f32, anvil_dt_bf16}) {
        CAPTURE(c_dt);
        anvil_matmul_desc_t d = f32_desc(M, N, K);
        d.c_dt = c_dt;
        d.bias = bias.data();
        d.num_post_ops = 1;
        d.post_ops = &gelu;
        anvil_matmul_t h = nullptr;
        REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<float> packed(bytes / 4 + 1);
        REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed.data()) == anvil_success);
        constexpr int kThreads = 3;
        const size_t c_bytes = size_t(M * N) * (c_dt == anvil_dt_f32 ? 4 : 2);
        std::vector<std::vector<float>> A(kThreads, std::vector<float>(size_t(M * K)));
        std::vector<std::vector<uint8_t>> want(kThreads, std::vector<uint8_t>(c_bytes));
        for (int t = 0; t < kThreads; ++t) {
            for (float &v : A[size_t(t)]) v = r.frac();
            REQUIRE(anvil_matmul_execute(h, A[size_t(t)].data(), packed.data(),
                                         want[size_t(t)].data(), nullptr) == anvil_success);
        }
        for (const bool caller_pool : {false, true}) {
            CAPTURE(caller_pool);
            tu::std_thread_pool pool;
            pool.threads = 2;
            if (caller_pool)
                REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 2) ==
                        anvil_success);
            std::atomic<int> mismatches{0};
            std::vector<std::thread> app;
            for (int t = 0; t < kThreads; ++t)
                app.emplace_back([&, t]() {
                    std::vector<uint8_t> C(c_bytes);
                    for (int rep = 0; rep < 3; ++rep)
                        if (anvil_matmul_execute(h, A[size_t(t)].data(), packed.data(), C.data(),
                                                 nullptr) != anvil_success ||
                            C != want[size_t(t)])
                            ++mismatches;
                });
            for (auto &th : app) th.join();
            CHECK(mismatches.load() == 0);
            if (caller_pool) REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
        }
        anvil_matmul_destroy(h);
    }
}

}  // namespace
