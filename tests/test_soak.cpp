// Concurrency soak: several application threads make thousands of calls
// over a fixed work list that mixes every public entry point (anvil_sgemm
// with transposes, alpha/beta and padded leading dimensions, planned
// sgemm, the bf16 and int8 BLAS-style GEMMs with zero points, matmul
// handles with post-op chains and prepacked weights, conv2d handles
// including depthwise ones), shapes that need many distinct JIT kernels
// (M/N tails, several K) and kernels of several ISA tiers, against a kernel
// cache far smaller than the set of kernels the list needs, so kernels are
// evicted (and regenerated) while other threads are running them.  Every
// result must be bitwise equal to the same call made single-threaded, and
// the resident memory must not grow once every thread has warmed up.
//
// ISA tiers.  The cap is process-wide and is not changed while the threads
// run (that is not a supported use).  What each entry point binds:
//   - anvil_gemm_plan_create picks the sgemm backend (select_backend) and
//     keeps it in the plan; execute fetches that backend's kernels (through
//     the kernel cache for the JIT) whatever the cap is then;
//   - anvil_conv2d_create fetches every kernel the handle needs from the
//     backend the cap allows then (f32 gemm, lp or depthwise) and keeps
//     them alive in the handle;
//   - anvil_sgemm, anvil_gemm_* and anvil_matmul_execute select their
//     backend at each call (the matmul handle binds none), as do the
//     post-op chains' Highway code at execute.
// So plans and conv handles are created below under the caps scalar, avx2
// (Highway; int8: the AVX-VNNI JIT where the CPU has it), avx512_core (fp32
// JIT; bf16 / int8 on Highway), avx512_core_vnni and avx512_core_bf16 (the
// int8 / bf16 JIT), then the cap is lifted (kSoakCap: whatever the CPU has)
// for the single-threaded reference run and the threaded soak; the
// per-call entry points run the top tier's kernels (the JIT, through the
// cache) beside the handles' lower-tier ones (ANVIL_VERBOSE=2 with
// ANVIL_SOAK_CALLS=1 lists them on an AVX-512 BF16 machine: scalar,
// hwy:AVX2, hwy:AVX3, jit:avx2_vnni_lp, jit:avx512_core, jit:avx512_lp,
// jit:avx512_dw).  The test sets every cap it
// uses itself, so it is in the "once" suite; it restores the process's cap,
// thread pool and cache capacity when done.
//
// The data are small integers (|x| <= 4 for f32 / bf16, small int8 ranges,
// power-of-two scales), so every result is exact: the same problem gives
// the same bits on every tier, which is checked too (items of one "group"),
// and anvil_sgemm is checked against the double reference.
//
// ANVIL_SOAK_CALLS=<n> sets the calls each application thread makes in the
// timed soak (default below; fewer under the sanitizers, and without the
// JIT, where nothing is cached and qemu-emulated runs are slow).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "conv_ref.h"
#include "cpu/isa.h"
#include "lowp_util.h"
#include "ref/ref_ukernel.h"
#include "test_util.h"

// ANVIL_TESTS_SANITIZED: the library is instrumented though these sources
// are not (tests/CMakeLists.txt, ANVIL_SANITIZE builds).
#if defined(ANVIL_TESTS_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ANVIL_SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ANVIL_SOAK_SANITIZED 1
#endif
#endif
#ifndef ANVIL_SOAK_SANITIZED
#define ANVIL_SOAK_SANITIZED 0
#endif

namespace {

using dt = anvil_data_type_t;

// The cap in force during the reference run and the soak: none (the
// highest tier the CPU has).
constexpr anvil_isa_t kSoakCap = anvil_isa_amx;
constexpr int kAppThreads = 3;

// Calls per application thread in the timed soak.  Release, x86-64 with
// AVX-512 BF16, 2 cores: about 1.5 s per case (the caller pool starts a
// thread per parallel call: several times that on a loaded machine).  A
// quarter under the sanitizers (TSan: ~8 s per case here, the JIT's code
// being uninstrumented but its generation not); 1/32 without the JIT
// (nothing is cached, and aarch64 runs under qemu: about 8 s for both
// cases on QEMU_CPU=max).
int64_t soak_calls() {
    if (const char *e = std::getenv("ANVIL_SOAK_CALLS")) {
        const long long v = std::atoll(e);
        if (v > 0) return v;
    }
    int64_t n = 20000;
    if (ANVIL_SOAK_SANITIZED) n /= 4;
    if (!ANVIL_TESTS_HAVE_JIT) n /= 32;
    return n;
}

// ------------------------------------------------------------ buffers

// 64-byte aligned bytes (outputs and packed weights).
struct abytes {
    uint8_t *p = nullptr;
    size_t n = 0;
    abytes() = default;
    explicit abytes(size_t bytes) : n(bytes) {
        p = static_cast<uint8_t *>(std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64));
        REQUIRE(p != nullptr);
        std::memset(p, 0, n);
    }
    ~abytes() { std::free(p); }
    abytes(const abytes &) = delete;
    abytes &operator=(const abytes &) = delete;
};

// Typed element storage (inputs): bytes of `count` elements of dt t.
struct tensor {
    dt t = anvil_dt_f32;
    std::vector<uint8_t> raw;
    tensor() = default;
    tensor(dt type, int64_t count) : t(type), raw(size_t(std::max<int64_t>(count, 1)) * size_t(lt::elem_bytes(type)) + 64) {}
    void *data() { return raw.data(); }
    const void *data() const { return raw.data(); }
    // Small integers of the type: f32 / bf16 in [-4, 4], u8 [0, 12], s8 [-6, 6].
    void fill(tu::rng &r, int64_t count) {
        for (int64_t i = 0; i < count; ++i) set(i, r);
    }
    void set(int64_t i, tu::rng &r) {
        switch (t) {
            case anvil_dt_f32: reinterpret_cast<float *>(raw.data())[i] = r.small_int(); break;
            case anvil_dt_bf16: reinterpret_cast<uint16_t *>(raw.data())[i] = lt::bf16_small_int(r); break;
            case anvil_dt_u8: raw[size_t(i)] = uint8_t(r.ival(0, 12)); break;
            case anvil_dt_s8: raw[size_t(i)] = uint8_t(int8_t(r.ival(-6, 6))); break;
            default: reinterpret_cast<int32_t *>(raw.data())[i] = int32_t(r.ival(-9, 9)); break;
        }
    }
};

// ------------------------------------------------------------ work items

// One call of the work list.  run(out) writes into an output buffer that
// holds `init` beforehand; `want` is what the single-threaded call left
// there (the whole buffer: margins and padding columns included, so a write
// outside the result shows up too).
struct item {
    std::string name;
    std::string group;  // items of one group compute the same values
    std::vector<uint8_t> init, want;
    std::function<anvil_status_t(uint8_t *out)> run;
    // Optional independent check of `want`: "" when it holds.
    std::function<std::string(const std::vector<uint8_t> &want)> verify;
};

// An output image: `rows` x `ld` elements of `esz` bytes at byte offset
// `off`, margins of `off` bytes around, padding and margins 0xA5 bytes
// (for float outputs a NaN: a stray read of them into a result shows).
// Window elements come from win(i, j, dst) when given.
std::vector<uint8_t> out_image(int64_t rows, int64_t ld, int esz, size_t off,
                               const std::function<void(int64_t, int64_t, uint8_t *)> &win = {},
                               int64_t cols = 0) {
    std::vector<uint8_t> v(off * 2 + size_t(rows * ld) * size_t(esz), 0xA5);
    if (win)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) win(i, j, &v[off + size_t((i * ld + j) * esz)]);
    return v;
}

// Byte offsets of the results in the output buffers: sgemm's C 148 bytes
// past a 64-byte boundary (as tu::cmat: not vector-aligned), the others 64.
constexpr size_t kSgemmOff = size_t(tu::kMargin) * 4;
constexpr size_t kOff = 64;

// Creates what make() returns with the ISA cap set to `cap`.
template <typename F>
auto under_cap(anvil_isa_t cap, F make) {
    anvil::cpu::set_max_isa_for_test(cap);
    return make();
}

std::string shape_str(char ta, char tb, int64_t M, int64_t N, int64_t K) {
    return std::string(1, ta) + tb + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
           std::to_string(K);
}

// ---- fp32: anvil_sgemm, and the same problem planned under `plan_caps`.

struct sgemm_inputs {
    tu::gemm_case c;
    tu::fbuf A, B;
};

void add_sgemm(std::vector<item> &v, tu::rng &r, char ta, char tb, int64_t M, int64_t N, int64_t K,
               float alpha, float beta, int pad, std::vector<anvil_isa_t> plan_caps = {}) {
    auto in = std::make_shared<sgemm_inputs>();
    tu::gemm_case &c = in->c;
    c.ta = ta;
    c.tb = tb;
    c.M = M;
    c.N = N;
    c.K = K;
    c.alpha = alpha;
    c.beta = beta;
    c.tighten(pad, (pad + 1) % 3, pad);
    auto gen = [&] { return r.small_int(); };
    in->A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, 0, gen);
    in->B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, 0, gen);
    constexpr size_t off = kSgemmOff;
    item it;
    it.name = "sgemm " + shape_str(ta, tb, M, N, K) + " alpha=" + std::to_string(alpha) +
              " beta=" + std::to_string(beta) + " ldc=" + std::to_string(c.ldc);
    it.group = it.name;
    // beta == 0 never reads C: its window starts as NaN (it must not leak).
    it.init = out_image(M, c.ldc, 4, off, [&](int64_t, int64_t, uint8_t *d) {
        const float x = beta == 0.0f ? tu::qnan() : r.exact_c(beta);
        std::memcpy(d, &x, 4);
    }, N);
    it.run = [in](uint8_t *out) {
        const tu::gemm_case &c = in->c;
        return anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, in->A.data(), c.lda, in->B.data(),
                           c.ldb, c.beta, reinterpret_cast<float *>(out + off), c.ldc);
    };
    // The double reference: exact data, so the values must agree exactly.
    it.verify = [in, init = it.init](const std::vector<uint8_t> &want) -> std::string {
        const tu::gemm_case &c = in->c;
        std::vector<uint8_t> ref = init;
        auto *R = reinterpret_cast<float *>(ref.data() + off);
        anvil::ref::sgemm_double(c.ta, c.tb, c.M, c.N, c.K, c.alpha, in->A.data(), c.lda,
                                 in->B.data(), c.ldb, c.beta, R, c.ldc);
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) {
                float g;
                std::memcpy(&g, want.data() + off + size_t(i * c.ldc + j) * 4, 4);
                if (g != R[i * c.ldc + j])
                    return "element (" + std::to_string(i) + "," + std::to_string(j) + "): got " +
                           std::to_string(g) + ", double reference " + std::to_string(R[i * c.ldc + j]);
            }
        return "";
    };
    const std::vector<uint8_t> init = it.init;
    const std::string group = it.group;
    v.push_back(std::move(it));
    for (anvil_isa_t cap : plan_caps) {
        struct planned {
            anvil_gemm_plan_t plan = nullptr;
            std::unique_ptr<abytes> packed;
            ~planned() { anvil_gemm_plan_destroy(plan); }
        };
        auto pl = std::make_shared<planned>();
        anvil_status_t st = under_cap(cap, [&] {
            return anvil_gemm_plan_create(&pl->plan, ta, tb, M, N, K, c.lda, c.ldb, c.ldc);
        });
        REQUIRE(st == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_gemm_plan_packed_b_size(pl->plan, &bytes) == anvil_success);
        pl->packed = std::make_unique<abytes>(bytes);
        REQUIRE(anvil_gemm_plan_pack_b(pl->plan, in->B.data(), pl->packed->p) == anvil_success);
        item p;
        p.name = "plan[" + std::string(anvil_isa_name(cap)) + "] " + group.substr(6);
        p.group = group;
        p.init = init;
        p.run = [in, pl](uint8_t *out) {
            return anvil_gemm_plan_execute(pl->plan, in->c.alpha, in->A.data(), pl->packed->p,
                                           in->c.beta, reinterpret_cast<float *>(out + off));
        };
        v.push_back(std::move(p));
    }
}

// ---- anvil_gemm_bf16bf16f32

void add_bf16_gemm(std::vector<item> &v, tu::rng &r, char ta, char tb, int64_t M, int64_t N,
                   int64_t K, float alpha, float beta, int pad) {
    auto s = std::make_shared<lt::shape>();
    s->ta = ta;
    s->tb = tb;
    s->M = M;
    s->N = N;
    s->K = K;
    s->pad_a = pad;
    s->pad_b = pad + 1;
    s->pad_c = pad;
    auto A = std::make_shared<tensor>(anvil_dt_bf16, s->a_rows() * s->lda());
    auto B = std::make_shared<tensor>(anvil_dt_bf16, s->b_rows() * s->ldb());
    A->fill(r, s->a_rows() * s->lda());
    B->fill(r, s->b_rows() * s->ldb());
    constexpr size_t off = kOff;
    item it;
    it.name = "bf16bf16f32 " + shape_str(ta, tb, M, N, K) + " alpha=" + std::to_string(alpha) +
              " beta=" + std::to_string(beta);
    it.init = out_image(M, s->ldc(), 4, off, [&](int64_t, int64_t, uint8_t *d) {
        const float x = beta == 0.0f ? tu::qnan() : r.small_int();
        std::memcpy(d, &x, 4);
    }, N);
    it.run = [s, A, B, alpha, beta](uint8_t *out) {
        return anvil_gemm_bf16bf16f32(s->ta, s->tb, s->M, s->N, s->K, alpha,
                                      static_cast<const uint16_t *>(A->data()), s->lda(),
                                      static_cast<const uint16_t *>(B->data()), s->ldb(), beta,
                                      reinterpret_cast<float *>(out + off), s->ldc());
    };
    v.push_back(std::move(it));
}

// ---- anvil_gemm_u8s8s32 / anvil_gemm_s8s8s32 with zero points

void add_int8_gemm(std::vector<item> &v, tu::rng &r, bool a_signed, char ta, char tb, char offc,
                   int64_t M, int64_t N, int64_t K, float beta, int32_t ao, int32_t bo, int pad) {
    auto s = std::make_shared<lt::shape>();
    s->ta = ta;
    s->tb = tb;
    s->M = M;
    s->N = N;
    s->K = K;
    s->pad_a = pad;
    s->pad_b = pad;
    s->pad_c = pad + 1;
    auto A = std::make_shared<tensor>(a_signed ? anvil_dt_s8 : anvil_dt_u8, s->a_rows() * s->lda());
    auto B = std::make_shared<tensor>(anvil_dt_s8, s->b_rows() * s->ldb());
    A->fill(r, s->a_rows() * s->lda());
    B->fill(r, s->b_rows() * s->ldb());
    auto co = std::make_shared<std::vector<int32_t>>(size_t(offc == 'F' ? 1 : offc == 'C' ? M : N));
    for (auto &x : *co) x = int32_t(r.ival(-50, 50));
    constexpr size_t off = kOff;
    item it;
    it.name = std::string(a_signed ? "s8s8s32 " : "u8s8s32 ") + shape_str(ta, tb, M, N, K) +
              " offsetc=" + offc + " beta=" + std::to_string(beta) + " ao=" + std::to_string(ao) +
              " bo=" + std::to_string(bo);
    it.init = out_image(M, s->ldc(), 4, off, [&](int64_t, int64_t, uint8_t *d) {
        const int32_t x = int32_t(r.ival(-1000, 1000));
        std::memcpy(d, &x, 4);
    }, N);
    it.run = [=](uint8_t *out) {
        auto *C = reinterpret_cast<int32_t *>(out + off);
        const auto *b = static_cast<const int8_t *>(B->data());
        if (a_signed)
            return anvil_gemm_s8s8s32(s->ta, s->tb, offc, s->M, s->N, s->K, 1.0f,
                                      static_cast<const int8_t *>(A->data()), s->lda(), int8_t(ao),
                                      b, s->ldb(), int8_t(bo), beta, C, s->ldc(), co->data());
        return anvil_gemm_u8s8s32(s->ta, s->tb, offc, s->M, s->N, s->K, 1.0f,
                                  static_cast<const uint8_t *>(A->data()), s->lda(), uint8_t(ao), b,
                                  s->ldb(), int8_t(bo), beta, C, s->ldc(), co->data());
    };
    v.push_back(std::move(it));
}

// ---- matmul handles

struct mm_spec {
    dt a = anvil_dt_u8, c = anvil_dt_f32;
    char ta = 'N', tb = 'N';
    int64_t M = 1, N = 1, K = 1;
    int32_t azp = 0, bzp = 0, czp = 0;
    int scale_mode = 0;  // 0 none, 1 per tensor, 2 per N (powers of two)
    bool bias = false;
    std::vector<anvil_post_op_t> ops;  // binary: src_dt set; ld: padding past N
};

void add_matmul(std::vector<item> &v, tu::rng &r, const mm_spec &q) {
    const dt b_dt = q.a == anvil_dt_bf16 ? anvil_dt_bf16 : anvil_dt_s8;
    lt::shape s;
    s.ta = q.ta;
    s.tb = q.tb;
    s.M = q.M;
    s.N = q.N;
    s.K = q.K;
    s.pad_a = 1;
    s.pad_b = 2;
    s.pad_c = 3;
    struct state {
        anvil_matmul_t h = nullptr;
        tensor A;
        std::unique_ptr<abytes> packed;
        std::vector<tensor> bin;
        std::vector<const void *> bin_ptrs;
        ~state() { anvil_matmul_destroy(h); }
    };
    auto st = std::make_shared<state>();
    std::vector<float> scales, bias;
    if (q.scale_mode) {
        scales.resize(size_t(q.scale_mode == 2 ? q.N : 1));
        for (auto &x : scales) x = std::ldexp(1.0f, int(r.ival(-3, 1)));
    }
    if (q.bias) {
        bias.resize(size_t(q.N));
        for (auto &x : bias) x = float(r.ival(-20, 20));
    }
    std::vector<anvil_post_op_t> ops = q.ops;
    for (auto &o : ops) {
        if (o.kind != anvil_post_op_binary) continue;
        o.ld = o.per_n ? 0 : q.N + o.ld;
        const int64_t count = o.per_n ? q.N : q.M * o.ld;
        tensor t(o.src_dt, count);
        t.fill(r, count);
        st->bin.push_back(std::move(t));
    }
    for (auto &t : st->bin) st->bin_ptrs.push_back(t.data());
    anvil_matmul_desc_t d{};
    d.a_dt = q.a;
    d.b_dt = b_dt;
    d.c_dt = q.c;
    d.transa = q.ta;
    d.transb = q.tb;
    d.M = q.M;
    d.N = q.N;
    d.K = q.K;
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
    d.post_ops = ops.empty() ? nullptr : ops.data();
    REQUIRE(anvil_matmul_create(&st->h, &d) == anvil_success);
    st->A = tensor(q.a, s.a_rows() * s.lda());
    st->A.fill(r, s.a_rows() * s.lda());
    tensor B(b_dt, s.b_rows() * s.ldb());
    B.fill(r, s.b_rows() * s.ldb());
    size_t bytes = 0;
    REQUIRE(anvil_matmul_packed_weights_size(st->h, &bytes) == anvil_success);
    st->packed = std::make_unique<abytes>(bytes);
    REQUIRE(anvil_matmul_pack_weights(st->h, B.data(), st->packed->p) == anvil_success);
    constexpr size_t off = kOff;
    item it;
    it.name = "matmul " + std::to_string(q.a) + "->" + std::to_string(q.c) + " " +
              shape_str(q.ta, q.tb, q.M, q.N, q.K) + " post_ops=" + std::to_string(ops.size());
    it.init = out_image(q.M, s.ldc(), lt::elem_bytes(q.c), off);
    it.run = [st](uint8_t *out) {
        return anvil_matmul_execute(st->h, st->A.data(), st->packed->p, out + off,
                                    st->bin_ptrs.empty() ? nullptr : st->bin_ptrs.data());
    };
    v.push_back(std::move(it));
}

// ---- conv2d handles, one per cap in `caps` (same descriptor and data)

struct conv_spec {
    dt src = anvil_dt_f32, wei = anvil_dt_f32, dst = anvil_dt_f32;
    int64_t N = 1, G = 1, IC = 8, IH = 7, IW = 7, OC = 8, KH = 3, KW = 3, SH = 1, SW = 1, P = 1;
    int32_t szp = 0, dzp = 0;
    int scale_mode = 0;
    bool bias = false;
    std::vector<anvil_post_op_t> ops;  // binary: src_dt set; ld: padding past OC
};

void add_conv(std::vector<item> &v, tu::rng &r, const conv_spec &q, std::vector<anvil_isa_t> caps) {
    anvil_conv2d_desc_t d{};
    d.src_dt = q.src;
    d.wei_dt = q.wei;
    d.dst_dt = q.dst;
    d.N = q.N;
    d.G = q.G;
    d.IC = q.IC;
    d.IH = q.IH;
    d.IW = q.IW;
    d.OC = q.OC;
    d.KH = q.KH;
    d.KW = q.KW;
    d.SH = q.SH;
    d.SW = q.SW;
    d.pad_t = d.pad_l = d.pad_b = d.pad_r = q.P;
    d.OH = (q.IH + 2 * q.P - q.KH) / q.SH + 1;
    d.OW = (q.IW + 2 * q.P - q.KW) / q.SW + 1;
    d.src_zero_point = q.szp;
    d.dst_zero_point = q.dzp;
    struct shared_in {
        tensor src, wei;
        std::vector<float> bias;
        std::vector<tensor> bin;
        std::vector<const void *> bin_ptrs;
    };
    auto in = std::make_shared<shared_in>();
    std::vector<float> scales;
    if (q.scale_mode) {
        scales.resize(size_t(q.scale_mode == 2 ? q.OC : 1));
        for (auto &x : scales) x = std::ldexp(1.0f, int(r.ival(-3, 0)));
    }
    if (q.bias) {
        in->bias.resize(size_t(q.OC));
        for (auto &x : in->bias) x = float(r.ival(-20, 20));
    }
    std::vector<anvil_post_op_t> ops = q.ops;
    for (auto &o : ops) {
        if (o.kind != anvil_post_op_binary) continue;
        o.ld = o.per_n ? 0 : q.OC + o.ld;
        const int64_t count = o.per_n ? q.OC : cr::pixels(d) * o.ld;
        tensor t(o.src_dt, count);
        t.fill(r, count);
        in->bin.push_back(std::move(t));
    }
    for (auto &t : in->bin) in->bin_ptrs.push_back(t.data());
    d.scales = scales.empty() ? nullptr : scales.data();
    d.scales_per_oc = q.scale_mode == 2;
    d.num_post_ops = int(ops.size());
    d.post_ops = ops.empty() ? nullptr : ops.data();
    in->src = tensor(q.src, cr::src_elems(d));
    in->src.fill(r, cr::src_elems(d));
    in->wei = tensor(q.wei, cr::wei_elems(d));
    in->wei.fill(r, cr::wei_elems(d));
    constexpr size_t off = kOff;
    const std::string base = "conv " + std::to_string(q.src) + "->" + std::to_string(q.dst) +
                             " g" + std::to_string(q.G) + "ic" + std::to_string(q.IC) + "oc" +
                             std::to_string(q.OC) + "ih" + std::to_string(q.IH) + "k" +
                             std::to_string(q.KH) + "s" + std::to_string(q.SH) +
                             " post_ops=" + std::to_string(ops.size());
    const std::vector<uint8_t> init = out_image(cr::pixels(d), q.OC, lt::elem_bytes(q.dst), off);
    for (anvil_isa_t cap : caps) {
        struct handle {
            anvil_conv2d_t h = nullptr;
            std::unique_ptr<abytes> packed;
            ~handle() { anvil_conv2d_destroy(h); }
        };
        auto h = std::make_shared<handle>();
        const anvil_status_t st = under_cap(cap, [&] { return anvil_conv2d_create(&h->h, &d); });
        REQUIRE(st == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_conv2d_packed_weights_size(h->h, &bytes) == anvil_success);
        h->packed = std::make_unique<abytes>(bytes);
        REQUIRE(anvil_conv2d_pack_weights(h->h, in->wei.data(), anvil_conv_weights_oihw,
                                          h->packed->p) == anvil_success);
        item it;
        it.name = base + " [created under " + anvil_isa_name(cap) + "]";
        it.group = base;
        it.init = init;
        it.run = [in, h](uint8_t *out) {
            return anvil_conv2d_execute(h->h, in->src.data(), h->packed->p,
                                        in->bias.empty() ? nullptr : in->bias.data(), out + off,
                                        in->bin_ptrs.empty() ? nullptr : in->bin_ptrs.data());
        };
        v.push_back(std::move(it));
    }
}

// ------------------------------------------------------------ the work list

std::vector<item> work_list() {
    using lt::binary;
    using lt::eltwise;
    const anvil_isa_t scalar = anvil_isa_scalar, avx2 = anvil_isa_avx2,
                      core = anvil_isa_avx512_core, vnni = anvil_isa_avx512_core_vnni,
                      bf16 = anvil_isa_avx512_core_bf16;
    std::vector<item> v;
    tu::rng r(20240611);
    // sgemm: M and N tails of every kernel height / width, several K, all
    // four transposes, alpha == 1 or not, every beta kind, padded ld.
    // Planned copies of some under lower caps (scalar, Highway, JIT).
    add_sgemm(v, r, 'N', 'N', 13, 37, 19, 1.0f, 0.0f, 1, {scalar, avx2, core});
    add_sgemm(v, r, 'T', 'N', 7, 70, 33, -0.5f, 1.0f, 0, {scalar, avx2});
    add_sgemm(v, r, 'N', 'T', 30, 17, 64, 1.0f, 0.3f, 2, {avx2, core});
    add_sgemm(v, r, 'T', 'T', 5, 100, 9, 2.0f, 0.0f, 0);
    add_sgemm(v, r, 'N', 'N', 1, 300, 40, 1.0f, 1.0f, 3);
    add_sgemm(v, r, 'N', 'N', 3, 45, 129, -0.5f, 0.0f, 0);
    add_sgemm(v, r, 'N', 'T', 11, 23, 5, 1.0f, 1.0f, 1);
    add_sgemm(v, r, 'T', 'N', 29, 9, 77, 1.0f, 0.0f, 2);
    add_sgemm(v, r, 'N', 'N', 2, 61, 17, 2.0f, 0.3f, 0);
    add_sgemm(v, r, 'N', 'N', 17, 150, 31, 1.0f, 0.0f, 0);
    add_sgemm(v, r, 'T', 'T', 9, 33, 48, -0.5f, 1.0f, 1);
    // Small calls with every row-tail height and assorted widths: more
    // distinct kernels.  Each thread's front cache (jit/jit_front_cache.h,
    // direct-mapped) keeps a kernel alive only until another one takes its
    // slot, so with this many the calls keep reaching the shared cache
    // (about one miss and eviction per 4.5 calls in the soak).
    for (int64_t M = 1; M <= 14; ++M) {
        const int64_t N = 3 + (M * 29) % 61;
        const float betas[3] = {0.0f, 1.0f, 0.3f};
        add_sgemm(v, r, M % 2 ? 'N' : 'T', M % 3 ? 'N' : 'T', M, N, 4 + (M * 7) % 23,
                  M % 4 ? 1.0f : -0.5f, betas[M % 3], int(M % 2));
    }
    // Large enough to be split over 2 threads (> 4 MFLOP).
    add_sgemm(v, r, 'N', 'N', 96, 160, 160, 1.0f, 0.0f, 0);
    add_sgemm(v, r, 'N', 'T', 100, 130, 170, -0.5f, 1.0f, 1);

    // bf16 BLAS-style.
    add_bf16_gemm(v, r, 'N', 'N', 13, 50, 37, 1.0f, 0.0f, 1);
    add_bf16_gemm(v, r, 'T', 'T', 5, 33, 64, -0.5f, 1.0f, 0);
    add_bf16_gemm(v, r, 'N', 'T', 96, 128, 384, 1.0f, 0.0f, 0);  // 2 threads
    // int8 BLAS-style with zero points: packed path, the small-M in-place
    // paths (transposed B: dot kernels; M <= 4, B as is: row kernels).
    add_int8_gemm(v, r, false, 'N', 'N', 'F', 20, 45, 33, 0.0f, 3, -2, 1);
    add_int8_gemm(v, r, true, 'T', 'N', 'C', 14, 70, 19, 1.0f, -5, 0, 0);
    add_int8_gemm(v, r, false, 'N', 'T', 'R', 7, 90, 130, 1.0f, 4, 1, 2);
    add_int8_gemm(v, r, true, 'N', 'N', 'F', 3, 200, 70, 0.0f, 2, 0, 0);
    add_int8_gemm(v, r, false, 'N', 'T', 'F', 64, 128, 512, 0.0f, 1, 0, 0);  // 2 threads

    // matmul handles with post-op chains and prepacked weights.
    {
        mm_spec q;
        q.a = anvil_dt_bf16;
        q.c = anvil_dt_f32;
        q.tb = 'T';
        q.M = 21;
        q.N = 40;
        q.K = 50;
        q.scale_mode = 1;
        q.bias = true;
        q.ops = {eltwise(anvil_eltwise_relu), binary(anvil_binary_add, true)};
        add_matmul(v, r, q);
        q.c = anvil_dt_bf16;
        q.ta = 'T';
        q.tb = 'N';
        q.M = 9;
        q.N = 70;
        q.K = 33;
        q.ops = {binary(anvil_binary_mul, false, anvil_dt_bf16, 3),
                 eltwise(anvil_eltwise_clip, -8.0f, 30.0f)};
        add_matmul(v, r, q);
    }
    {
        mm_spec q;
        q.a = anvil_dt_u8;
        q.c = anvil_dt_s8;
        q.M = 19;
        q.N = 36;
        q.K = 70;
        q.azp = 3;
        q.czp = -4;
        q.scale_mode = 2;
        q.bias = true;
        q.ops = {eltwise(anvil_eltwise_leaky_relu, 0.25f), binary(anvil_binary_add, false, anvil_dt_f32, 2)};
        add_matmul(v, r, q);
        q.a = anvil_dt_s8;
        q.c = anvil_dt_s32;
        q.tb = 'T';
        q.M = 12;
        q.N = 50;
        q.K = 100;
        q.azp = -2;
        q.bzp = 1;
        q.czp = 7;
        q.scale_mode = 0;
        q.bias = false;
        q.ops = {};
        add_matmul(v, r, q);
        q.a = anvil_dt_u8;
        q.c = anvil_dt_f32;
        q.tb = 'N';
        q.M = 64;
        q.N = 96;
        q.K = 700;  // 2 threads
        q.azp = 5;
        q.bzp = 0;
        q.czp = 0;
        q.scale_mode = 1;
        q.ops = {eltwise(anvil_eltwise_gelu_tanh)};
        add_matmul(v, r, q);
    }

    // conv2d handles created under several caps.
    {
        conv_spec q;  // f32, 3x3, pad 1, OC tail of the 32-wide panel
        q.IC = 8;
        q.OC = 20;
        q.bias = true;
        q.ops = {eltwise(anvil_eltwise_relu)};
        add_conv(v, r, q, {scalar, avx2, core});
    }
    {
        conv_spec q;  // bf16 -> bf16, stride 2, binary post-op
        q.src = q.wei = anvil_dt_bf16;
        q.dst = anvil_dt_bf16;
        q.IC = 16;
        q.OC = 24;
        q.IH = q.IW = 9;
        q.SH = q.SW = 2;
        q.ops = {binary(anvil_binary_add, true)};
        add_conv(v, r, q, {avx2, core, bf16});
    }
    {
        conv_spec q;  // u8 -> u8, 1x1, zero points, per-OC scales, bias
        q.src = anvil_dt_u8;
        q.wei = anvil_dt_s8;
        q.dst = anvil_dt_u8;
        q.IC = 24;
        q.OC = 40;
        q.KH = q.KW = 1;
        q.P = 0;
        q.IH = q.IW = 6;
        q.szp = 5;
        q.dzp = 10;
        q.scale_mode = 2;
        q.bias = true;
        add_conv(v, r, q, {scalar, avx2, vnni});
    }
    {
        conv_spec q;  // s8 -> f32, 3x3, grouped (2 groups)
        q.src = anvil_dt_s8;
        q.wei = anvil_dt_s8;
        q.dst = anvil_dt_f32;
        q.G = 2;
        q.IC = 16;
        q.OC = 36;
        q.szp = -3;
        q.ops = {eltwise(anvil_eltwise_leaky_relu, 0.5f)};
        add_conv(v, r, q, {avx2, vnni});
    }
    {
        conv_spec q;  // depthwise f32, 3x3 pad 1
        q.G = q.IC = q.OC = 24;
        q.IH = q.IW = 10;
        q.bias = true;
        add_conv(v, r, q, {scalar, avx2, core});
    }
    {
        conv_spec q;  // depthwise u8 -> u8 with relu (the fused JIT store), stride 2
        q.src = anvil_dt_u8;
        q.wei = anvil_dt_s8;
        q.dst = anvil_dt_u8;
        q.G = q.IC = q.OC = 40;
        q.IH = q.IW = 11;
        q.SH = q.SW = 2;
        q.szp = 4;
        q.dzp = 3;
        q.scale_mode = 1;
        q.ops = {eltwise(anvil_eltwise_relu)};
        add_conv(v, r, q, {avx2, core});
    }
    {
        conv_spec q;  // depthwise bf16 -> f32, 5x5 pad 2
        q.src = q.wei = anvil_dt_bf16;
        q.dst = anvil_dt_f32;
        q.G = q.IC = q.OC = 16;
        q.KH = q.KW = 5;
        q.P = 2;
        q.IH = q.IW = 8;
        add_conv(v, r, q, {scalar, core});
    }
    return v;
}

// ------------------------------------------------------------ helpers

// Resident set size of this process (bytes), from /proc/self/statm.
int64_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    int64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * int64_t(sysconf(_SC_PAGESIZE));
}

// Resident memory (KiB) a started-and-joined thread leaves behind: about 0
// natively (glibc reuses the stack), but qemu-user keeps ~280 KiB of its own
// per guest thread, which the caller pool (a thread start per parallel
// call) would turn into hundreds of MiB that are none of anvil's doing.
double rss_kib_per_finished_thread() {
    constexpr int kThreads = 200;
    std::thread([] {}).join();
    const int64_t r0 = rss_bytes();
    for (int i = 0; i < kThreads; ++i) std::thread([] {}).join();
    return double(rss_bytes() - r0) / kThreads / 1024;
}

anvil_cache_stats_t cache_stats() {
    anvil_cache_stats_t s{};
    REQUIRE(anvil_get_kernel_cache_stats(&s) == anvil_success);
    return s;
}

// A reusable barrier for n participants (C++17 has no std::barrier).
class barrier {
public:
    explicit barrier(int n) : n_(n) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lk(mu_);
        const int64_t gen = gen_;
        if (++count_ == n_) {
            count_ = 0;
            ++gen_;
            cv_.notify_all();
            return;
        }
        cv_.wait(lk, [&] { return gen_ != gen; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_, count_ = 0;
    int64_t gen_ = 0;
};

// Puts back the ISA cap, the kernel cache capacity and anvil's default
// threading on scope exit, even when a check fails.
struct restore_guard {
    int threads = anvil_get_num_threads();
    int64_t capacity = cache_stats().capacity;
    ~restore_guard() {
        anvil::cpu::set_max_isa_for_test(tu::initial_isa_cap());
        anvil_set_kernel_cache_capacity(capacity);
        anvil_set_threadpool(nullptr, nullptr, 1);
        anvil_set_num_threads(threads);
    }
};

// What one application thread saw.
struct thread_log {
    int64_t calls = 0, failed = 0, mismatched = 0;
    std::string first;
};

// Runs `calls` calls of items in per-thread shuffled rounds (the first
// `warm` calls before the first barrier), checking each result at once.
// (No doctest assertions on these threads: a failed REQUIRE would throw
// there.)
void worker(int t, const std::vector<item> &items, int64_t warm, int64_t calls, barrier &sync,
            abytes &out, thread_log *log) {
    std::mt19937_64 g(uint64_t(1000 + t));
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    size_t pos = order.size();
    auto one = [&] {
        if (pos == order.size()) {
            std::shuffle(order.begin(), order.end(), g);
            pos = 0;
        }
        const item &it = items[order[pos++]];
        std::memcpy(out.p, it.init.data(), it.init.size());
        const anvil_status_t st = it.run(out.p);
        ++log->calls;
        if (st != anvil_success) {
            if (!log->failed++ && log->first.empty())
                log->first = it.name + ": status " + anvil_status_str(st);
        } else if (std::memcmp(out.p, it.want.data(), it.want.size()) != 0) {
            if (!log->mismatched++ && log->first.empty()) {
                size_t b = 0;
                while (b < it.want.size() && out.p[b] == it.want[b]) ++b;
                log->first = it.name + ": first differing byte at " + std::to_string(b) +
                             " of the output buffer";
            }
        }
    };
    for (int64_t c = 0; c < warm; ++c) one();
    sync.arrive_and_wait();  // warmed up: the main thread reads RSS
    sync.arrive_and_wait();
    for (int64_t c = 0; c < calls; ++c) one();
    sync.arrive_and_wait();  // done: the main thread reads RSS again
    sync.arrive_and_wait();
}

void soak(bool caller_pool) {
    restore_guard guard;
    const auto t_start = std::chrono::steady_clock::now();
    // Single-threaded everything for the references.
    REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
    REQUIRE(anvil_set_num_threads(1) == anvil_success);
    std::vector<item> items = work_list();  // sets caps for the handles
    anvil::cpu::set_max_isa_for_test(kSoakCap);
    const bool jit = tu::backend_is_jit();
    MESSAGE(items.size(), " work items; soak cap: effective ISA ",
            std::string(anvil_isa_name(anvil_get_effective_isa())), ", sgemm backend ",
            tu::backend_name());

    // Reference run (one thread, one call per item) with a cache big enough
    // for everything: its misses are the distinct kernels the calls need
    // (the conv handles hold theirs since creation).
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    REQUIRE(anvil_set_kernel_cache_capacity(int64_t(1) << 20) == anvil_success);
    const anvil_cache_stats_t s0 = cache_stats();
    for (item &it : items) {
        INFO(it.name);
        abytes out(it.init.size());
        std::memcpy(out.p, it.init.data(), it.init.size());
        REQUIRE(it.run(out.p) == anvil_success);
        it.want.assign(out.p, out.p + it.init.size());
        CHECK(it.want != it.init);  // it did write something
        if (it.verify) {
            const std::string err = it.verify(it.want);
            CHECK_MESSAGE(err.empty(), err);
        }
    }
    const int64_t distinct = cache_stats().misses - s0.misses;

    // The references themselves: exact data, so one problem gives the same
    // bits on every tier and API (items of a group), and sgemm agrees with
    // the double reference.
    for (size_t i = 0; i < items.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (!items[i].group.empty() && items[i].group == items[j].group) {
                INFO(items[i].name, " vs ", items[j].name);
                CHECK(items[i].want == items[j].want);
                break;
            }

    // The cache: far smaller than the set of kernels the list needs.
    const int64_t capacity = std::max<int64_t>(2, distinct / 8);
    REQUIRE(anvil_set_kernel_cache_capacity(capacity) == anvil_success);
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    MESSAGE("distinct cached kernels the calls need: ", distinct, "; cache capacity ", capacity);
    if (jit) CHECK(distinct >= 16);

    tu::std_thread_pool pool;
    pool.threads = 2;
    if (caller_pool)
        REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 2) == anvil_success);
    else
        REQUIRE(anvil_set_num_threads(guard.threads) == anvil_success);

    const int64_t calls = soak_calls();
    const int64_t warm = 2 * int64_t(items.size());  // every item twice on every thread
    barrier sync(kAppThreads + 1);
    std::vector<thread_log> logs(kAppThreads);
    size_t out_bytes = 0;
    for (const item &it : items) out_bytes = std::max(out_bytes, it.init.size());
    std::vector<std::unique_ptr<abytes>> outs;  // one output buffer per thread
    for (int t = 0; t < kAppThreads; ++t) outs.push_back(std::make_unique<abytes>(out_bytes));
    std::vector<std::thread> ts;
    for (int t = 0; t < kAppThreads; ++t)
        ts.emplace_back(worker, t, std::cref(items), warm, calls, std::ref(sync),
                        std::ref(*outs[size_t(t)]), &logs[size_t(t)]);
    sync.arrive_and_wait();
    const int64_t rss0 = rss_bytes();
    const anvil_cache_stats_t c0 = cache_stats();
    const auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t rss1 = rss_bytes();
    const anvil_cache_stats_t c1 = cache_stats();
    sync.arrive_and_wait();
    for (auto &t : ts) t.join();

    int64_t total = 0;
    for (int t = 0; t < kAppThreads; ++t) {
        const thread_log &l = logs[size_t(t)];
        CAPTURE(t);
        total += l.calls;
        CHECK(l.calls == warm + calls);
        CHECK_MESSAGE(l.failed == 0, l.first);
        CHECK_MESSAGE(l.mismatched == 0, l.first);
    }
    const double rss_mib = double(rss1 - rss0) / (1 << 20);
    MESSAGE(kAppThreads, " threads x ", calls, " calls (+", warm, " warm-up each) in ", secs,
            " s", std::string(caller_pool ? " with a caller pool" : ""), ": misses ", c1.misses - c0.misses,
            ", evictions ", c1.evictions - c0.evictions, ", hits ", c1.hits - c0.hits,
            ", generation ", c1.generation_seconds - c0.generation_seconds, " s; RSS ",
            double(rss0) / (1 << 20), " MiB -> ", double(rss1) / (1 << 20), " MiB (", rss_mib,
            " MiB); test total ",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), " s");
    CHECK(total == kAppThreads * (warm + calls));
    if (caller_pool) CHECK(pool.calls.load() > 0);  // the pool ran the larger items
    // Evictions (and so regeneration) while the threads ran: the cache
    // statistics count lookups of every JIT backend.
    if (jit) {
        CHECK(c1.misses - c0.misses > 0);
        CHECK(c1.evictions - c0.evictions > 0);
        CHECK(c1.size <= capacity);
    }
    // Resident memory after the warm-up (every thread ran every item twice:
    // scratch buffers are at their largest, every thread's per-thread
    // kernel front caches and allocator arenas exist) may move only by
    // allocator noise.  What does change: kernels are regenerated into new
    // mappings and the evicted ones unmapped once their last user lets go;
    // the caller pool's workers are new threads each call (stacks, TLS
    // scratch, freed on exit).  Measured: under 0.1 MiB either way.  8 MiB
    // bounds that noise with room to spare, while one leaked page per cache
    // miss (a kernel mapping never unmapped) is about 60 MiB at the default
    // call count (printed below).  Under ASan (quarantine of freed memory)
    // and TSan (shadow memory of fresh addresses) RSS grows by design: there
    // it is reported only.
    const double bound_mib = 8.0;
    const double per_thread_kib = caller_pool ? rss_kib_per_finished_thread() : 0.0;
    if (per_thread_kib > 16) {
        MESSAGE("RSS not checked: every finished thread leaves ", per_thread_kib,
                " KiB behind here (qemu-user?), and the caller pool started ", pool.calls.load(),
                " parallel calls");
    } else if (!ANVIL_SOAK_SANITIZED) {
        CHECK_MESSAGE(rss_mib < bound_mib, "resident memory grew by ", rss_mib, " MiB during the soak");
        if (jit) MESSAGE("a leaked page per miss would be ", double(c1.misses - c0.misses) * 4096 / (1 << 20), " MiB");
    }
}

}  // namespace

TEST_SUITE("once") {
TEST_CASE("soak: 3 threads x thousands of mixed calls, ISA-capped handles, a tiny kernel cache") {
    soak(false);
}

TEST_CASE("soak: the same with a caller thread pool (std::thread) installed") {
    soak(true);
}
}
