// anvil-bench: batched matmul lines with --dt u8s8s32 / s8s8s32 through
// anvil_gemm_u8s8s32_batch_strided / anvil_gemm_s8s8s32_batch_strided vs
// oneDNN's int8 matmul over the same 3-D tensors (u8 or s8 source, s8
// weights, s32 destination, plain strided memory).  Integer results:
// anvil is checked exactly against an int64 reference at sampled points of
// sampled items, and against oneDNN element by element.
#include "anvil_bench_batch.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "anvil/anvil.h"
#include "anvil_bench_check.h"
#include "anvil_bench_data.h"
#include "anvil_bench_lowp.h"
#include "anvil_bench_onednn.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {
namespace {

struct int8_batch_data {
    bool a_signed = false;
    std::vector<uint8_t> A, B;  // B holds s8 bytes
    std::vector<int32_t> C0;

    void init(const gemm_problem &p, bool is_signed, uint64_t seed, float beta) {
        a_signed = is_signed;
        A.resize(size_t(p.elems_a()));
        B.resize(size_t(p.elems_b()));
        fill_int8_operands(A.data(), p.elems_a(), a_signed, B.data(), p.elems_b(), seed);
        C0.assign(size_t(p.elems_c()), 0);
        if (beta != 0.0f)
            for (size_t e = 0; e < C0.size(); ++e) C0[e] = int32_t(e * 2654435761u % 2001) - 1000;
    }
    dnnl::memory::data_type a_dt() const {
        return a_signed ? dnnl::memory::data_type::s8 : dnnl::memory::data_type::u8;
    }
    int64_t a_at(const gemm_problem &p, int64_t b, int64_t i, int64_t k) const {
        const uint8_t v = A[size_t(b * p.stride_a() + (p.ta == 'N' ? i * p.lda() + k : k * p.lda() + i))];
        return a_signed ? int64_t(int8_t(v)) : int64_t(v);
    }
    int64_t b_at(const gemm_problem &p, int64_t b, int64_t k, int64_t j) const {
        return int8_t(B[size_t(b * p.stride_b() + (p.tb == 'N' ? k * p.ldb() + j : j * p.ldb() + k))]);
    }
};

anvil_status_t run_anvil_int8(const gemm_problem &p, const int8_batch_data &d, float alpha,
                              float beta, int32_t *C) {
    static const int32_t co = 0;
    const auto *b = reinterpret_cast<const int8_t *>(d.B.data());
    if (d.a_signed)
        return anvil_gemm_s8s8s32_batch_strided(
            p.ta, p.tb, 'F', p.M, p.N, p.K, alpha, reinterpret_cast<const int8_t *>(d.A.data()),
            p.lda(), p.stride_a(), 0, b, p.ldb(), p.stride_b(), 0, beta, C, p.ldc(),
            p.stride_c(), &co, p.batch);
    return anvil_gemm_u8s8s32_batch_strided(p.ta, p.tb, 'F', p.M, p.N, p.K, alpha, d.A.data(),
                                            p.lda(), p.stride_a(), 0, b, p.ldb(), p.stride_b(),
                                            0, beta, C, p.ldc(), p.stride_c(), &co, p.batch);
}

// Exact values at sampled points of sampled items: alpha * dot + beta * C0
// in double (dot exact in int64), rounded to nearest-even and saturated, as
// anvil_gemm_u8s8s32 documents.
class int8_reference {
public:
    int8_reference(const gemm_problem &p, const int8_batch_data &d, float alpha, float beta,
                   int64_t points, uint64_t seed)
        : p_(p) {
        const gemm_problem one = p.item();
        const int64_t n = std::min<int64_t>(p.batch, 8);
        for (int64_t k = 0; k < n; ++k) {
            const int64_t b = n == 1 ? 0 : k * (p.batch - 1) / (n - 1);
            for (const point &pt : choose_points(one, points, double(1 << 22), seed + uint64_t(b))) {
                int64_t dot = 0;
                for (int64_t kk = 0; kk < p.K; ++kk)
                    dot += d.a_at(p, b, pt.i, kk) * d.b_at(p, b, kk, pt.j);
                double v = double(alpha) * double(dot);
                if (beta != 0.0f) v += double(beta) * double(d.C0[size_t(at(b, pt))]);
                v = std::nearbyint(v);
                v = std::min(2147483647.0, std::max(-2147483648.0, v));
                at_.push_back(at(b, pt));
                want_.push_back(int32_t(v));
            }
        }
    }
    // The first mismatch in *why.
    bool check(const int32_t *C, std::string *why) const {
        for (size_t k = 0; k < at_.size(); ++k)
            if (C[at_[k]] != want_[k]) {
                if (why)
                    *why = "C[" + std::to_string(at_[k]) + "]=" + std::to_string(C[at_[k]]) +
                           " want " + std::to_string(want_[k]);
                return false;
            }
        return true;
    }
    size_t size() const { return at_.size(); }

private:
    int64_t at(int64_t b, const point &pt) const {
        return b * p_.stride_c() + pt.i * p_.ldc() + pt.j;
    }
    gemm_problem p_;
    std::vector<int64_t> at_;
    std::vector<int32_t> want_;
};

bool check_one(const options &o, const gemm_problem &p, uint64_t seed, std::string *detail) {
    int8_batch_data d;
    d.init(p, o.dt == "s8s8s32", seed, o.beta);
    const int8_reference ref(p, d, o.alpha, o.beta, o.check_points, seed);
    std::vector<int32_t> C = d.C0;
    const anvil_status_t st = run_anvil_int8(p, d, o.alpha, o.beta, C.data());
    if (st != anvil_success) {
        *detail += std::string(" anvil batch returned ") + anvil_status_str(st) + ";";
        return false;
    }
    std::string why;
    const bool ok = ref.check(C.data(), &why);
    *detail += " anvil " + (ok ? "exact (" + std::to_string(ref.size()) + " pts)" : "WRONG (" + why + ")") + ";";
    if (o.vs == "onednn") {
        std::vector<int32_t> Cd = d.C0;
        onednn_batched_matmul mm;
        std::string err;
        if (!mm.init(p, d.a_dt(), d.A.data(), dnnl::memory::data_type::s8, d.B.data(),
                     dnnl::memory::data_type::s32, Cd.data(), o.alpha, o.beta, &err)) {
            *detail += " " + err + ";";
        } else {
            mm.execute();
            // Integer alpha and beta: both exact, so every element agrees.
            // Otherwise oneDNN scales in fp32 where anvil rounds the exact
            // value once: a product near a .5 tie may land 1 apart.
            const bool exact_peer =
                o.alpha == std::nearbyint(o.alpha) && o.beta == std::nearbyint(o.beta);
            int64_t unequal = 0, one_off = 0;
            for (size_t e = 0; e < C.size(); ++e) {
                const int64_t diff = std::abs(int64_t(C[e]) - int64_t(Cd[e]));
                unequal += diff > (exact_peer ? 0 : 1);
                one_off += diff == 1;
            }
            *detail += " oneDNN [" + mm.impl() + "] " +
                       std::to_string(int64_t(C.size()) - unequal) + " of " +
                       std::to_string(C.size()) + " elems " +
                       (exact_peer ? "equal to anvil;"
                                   : "within 1 of anvil (" + std::to_string(one_off) +
                                         " 1 off: fp32 scaling);");
            if (unequal) return false;
        }
    }
    return ok;
}

}  // namespace

int run_check_batch_int8(const options &o, const gemm_context &ctx,
                         const std::vector<gemm_problem> &ps, reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = batch_row(ctx, p, o.dt);
        std::string detail;
        const bool ok = check_one(o, p, seed++, &detail);
        r.status = ok ? "PASS" : "FAIL";
        r.detail = detail.empty() ? detail : detail.substr(1);
        failures += !ok;
        rep.add(r);
    }
    return failures;
}

int run_perf_batch_int8(const options &o, const gemm_context &ctx,
                        const std::vector<gemm_problem> &ps, reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = batch_row(ctx, p, o.dt);
        int8_batch_data d;
        d.init(p, o.dt == "s8s8s32", seed++, 0.0f);
        std::vector<int32_t> Ca(size_t(p.elems_c())), Cp(size_t(p.elems_c()));
        const int8_reference ref(p, d, 1.0f, 0.0f, o.perf_points, seed);
        anvil_status_t first_err = anvil_success;
        std::vector<contestant> cs;
        cs.push_back({"anvil_batch",
                      [&](int64_t) {
                          const anvil_status_t st = run_anvil_int8(p, d, 1.0f, 0.0f, Ca.data());
                          if (st != anvil_success && first_err == anvil_success) first_err = st;
                      },
                      [&](int64_t, std::string *why) {
                          if (first_err != anvil_success) {
                              *why = std::string("returned ") + anvil_status_str(first_err);
                              return false;
                          }
                          return ref.check(Ca.data(), why);
                      }});
        onednn_batched_matmul mm;
        if (o.vs == "onednn") {
            std::string err;
            if (!mm.init(p, d.a_dt(), d.A.data(), dnnl::memory::data_type::s8, d.B.data(),
                         dnnl::memory::data_type::s32, Cp.data(), 1.0f, 0.0f, &err)) {
                r.detail = err;
            } else {
                r.peer = "onednn_matmul_batched";
                r.peer_impl = mm.impl();
                cs.push_back({r.peer, [&](int64_t) { mm.execute(); },
                              [&](int64_t, std::string *why) { return ref.check(Cp.data(), why); }});
            }
        }
        timing_options to;
        to.trials = p.flops() >= o.big_gflop * 1e9 ? o.trials_big : o.trials;
        to.min_trial_s = o.min_trial_s;
        const std::vector<timing_result> tr = run_alternating(cs, to);
        std::string detail;
        if (!fill_timed_row(ctx, tr, p.flops() * 1e-9, double(p.elems_b()), &r, &detail)) ++failures;
        r.detail = detail + r.detail;
        rep.add(r);
    }
    return failures;
}

}  // namespace anvil_bench
