#include "anvil_bench_batch.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "anvil/anvil.h"
#include "anvil_bench_check.h"
#include "anvil_bench_data.h"
#include "anvil_bench_onednn.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {
namespace {

// The operands of one batched problem.  A and B hold the values every
// contestant sees (for bf16: the bf16 values widened, so the reference
// multiplies exactly what anvil and oneDNN multiply).
struct batch_data {
    bool bf16 = false;
    buffer A, B, C0;
    std::vector<uint16_t> Ab, Bb;

    bool init(const gemm_problem &p, bool use_bf16, data_kind kind, uint64_t seed, float beta) {
        bf16 = use_bf16;
        A = buffer(size_t(p.elems_a()) * 4);
        B = buffer(size_t(p.elems_b()) * 4);
        C0 = buffer(size_t(p.elems_c()) * 4);
        if (!A.ok() || !B.ok() || !C0.ok()) return false;
        fill(A.f32(), p.elems_a(), kind, seed * 3 + 1);
        fill(B.f32(), p.elems_b(), kind, seed * 3 + 2);
        if (beta != 0.0f)
            fill(C0.f32(), p.elems_c(), kind, seed * 3 + 3);
        else  // beta == 0 must not read C
            std::fill(C0.f32(), C0.f32() + p.elems_c(), std::numeric_limits<float>::quiet_NaN());
        if (bf16) {
            Ab.resize(size_t(p.elems_a()));
            Bb.resize(size_t(p.elems_b()));
            anvil_convert_f32_to_bf16(A.f32(), Ab.data(), p.elems_a());
            anvil_convert_f32_to_bf16(B.f32(), Bb.data(), p.elems_b());
            anvil_convert_bf16_to_f32(Ab.data(), A.f32(), p.elems_a());
            anvil_convert_bf16_to_f32(Bb.data(), B.f32(), p.elems_b());
        }
        return true;
    }
    const void *a() const { return bf16 ? static_cast<const void *>(Ab.data()) : A.data(); }
    const void *b() const { return bf16 ? static_cast<const void *>(Bb.data()) : B.data(); }
    dnnl::memory::data_type in_dt() const {
        return bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    }
};

anvil_status_t run_anvil(const gemm_problem &p, const batch_data &d, float alpha, float beta,
                         float *C) {
    if (d.bf16)
        return anvil_gemm_bf16bf16f32_batch_strided(
            p.ta, p.tb, p.M, p.N, p.K, alpha, d.Ab.data(), p.lda(), p.stride_a(), d.Bb.data(),
            p.ldb(), p.stride_b(), beta, C, p.ldc(), p.stride_c(), p.batch);
    return anvil_sgemm_batch_strided(p.ta, p.tb, p.M, p.N, p.K, alpha, d.A.f32(), p.lda(),
                                     p.stride_a(), d.B.f32(), p.ldb(), p.stride_b(), beta, C,
                                     p.ldc(), p.stride_c(), p.batch);
}

// The items checked against the double reference: first, last and up to
// six spread between them.
std::vector<int64_t> sampled_items(int64_t batch) {
    std::vector<int64_t> v;
    const int64_t n = std::min<int64_t>(batch, 8);
    for (int64_t k = 0; k < n; ++k) v.push_back(n == 1 ? 0 : k * (batch - 1) / (n - 1));
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

// References of the sampled items (points per item as for one GEMM).
struct batch_reference {
    std::vector<int64_t> items;
    std::vector<reference> refs;
    batch_reference(const gemm_problem &p, const batch_data &d, float alpha, float beta,
                    data_kind kind, int64_t points, double full_limit, uint64_t seed) {
        const gemm_problem one = p.item();
        for (int64_t b : sampled_items(p.batch)) {
            items.push_back(b);
            refs.emplace_back(one, d.A.f32() + b * p.stride_a(), d.B.f32() + b * p.stride_b(),
                              alpha, beta, d.C0.f32() + b * p.stride_c(), kind,
                              choose_points(one, points, full_limit, seed + uint64_t(b)));
        }
    }
    // Every sampled item of C; the first failure in *why.
    check_result check(const gemm_problem &p, const float *C, std::string *why) const {
        check_result all;
        for (size_t k = 0; k < refs.size(); ++k) {
            const check_result r = refs[k].check(C + items[k] * p.stride_c());
            all.checked += r.checked;
            all.bad += r.bad;
            all.worst_ratio = std::max(all.worst_ratio, r.worst_ratio);
            if (!r.ok() && all.first_bad.empty()) {
                all.first_bad = "item " + std::to_string(items[k]) + ": " + r.first_bad;
                if (why) *why = all.first_bad;
            }
        }
        return all;
    }
    bool exact() const { return !refs.empty() && refs[0].exact(); }
};

bool check_pass(const options &o, const gemm_problem &p, data_kind kind, uint64_t seed,
                std::string *detail) {
    batch_data d;
    buffer C(size_t(p.elems_c()) * 4), Cd(size_t(p.elems_c()) * 4);
    if (!d.init(p, o.dt == "bf16", kind, seed, o.beta) || !C.ok() || !Cd.ok()) {
        *detail += " out of memory;";
        return false;
    }
    const batch_reference ref(p, d, o.alpha, o.beta, kind, o.check_points, double(1 << 24), seed);
    const std::string tag = kind == data_kind::ints ? (ref.exact() ? "ints(exact)" : "ints")
                                                    : "real";
    std::memcpy(C.data(), d.C0.data(), C.bytes());
    const anvil_status_t st = run_anvil(p, d, o.alpha, o.beta, C.f32());
    if (st != anvil_success) {
        *detail += std::string(" anvil batch returned ") + anvil_status_str(st) + ";";
        return false;
    }
    const check_result cr = ref.check(p, C.f32(), nullptr);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%zu items, %lld pts, %s", ref.items.size(),
                  (long long)cr.checked,
                  cr.ok() && ref.exact() ? "exact"
                                         : ("err/bound " + std::to_string(cr.worst_ratio)).c_str());
    *detail += " anvil[" + tag + "] " + (cr.ok() ? "ok (" + std::string(buf) + ")"
                                                  : "WRONG (" + cr.first_bad + ")") + ";";
    if (o.vs == "onednn") {
        std::memcpy(Cd.data(), d.C0.data(), Cd.bytes());
        onednn_batched_matmul mm;
        std::string err;
        if (!mm.init(p, d.in_dt(), d.a(), d.in_dt(), d.b(), dnnl::memory::data_type::f32, Cd.f32(),
                     o.alpha, o.beta, &err)) {
            *detail += " " + err + ";";
        } else {
            mm.execute();
            // Exact data: every element equal; real data: within the
            // reference bound of both, so compare only the sampled items.
            int64_t unequal = 0;
            for (int64_t e = 0; e < p.elems_c(); ++e) unequal += C.f32()[e] != Cd.f32()[e];
            const check_result pr = ref.check(p, Cd.f32(), nullptr);
            *detail += " oneDNN [" + mm.impl() + "] " +
                       (pr.ok() ? "ok" : "WRONG (" + pr.first_bad + ")") + ", " +
                       std::to_string(p.elems_c() - unequal) + " of " +
                       std::to_string(p.elems_c()) + " elems equal to anvil;";
            if (ref.exact() && pr.ok() && unequal) return false;  // both exact: must agree
        }
    }
    return cr.ok();
}

}  // namespace

bool onednn_batched_matmul::init(const gemm_problem &p, dnnl::memory::data_type a_dt,
                                 const void *A, dnnl::memory::data_type b_dt, const void *B,
                                 dnnl::memory::data_type c_dt, void *C, float alpha, float beta,
                                 std::string *err) {
    using namespace dnnl;
    using dims = memory::dims;
    try {
        const int64_t ba = p.share_a ? 1 : p.batch, bb = p.share_b ? 1 : p.batch;
        const memory::desc a_md({ba, p.M, p.K}, a_dt,
                                p.ta == 'N' ? dims{p.M * p.K, p.lda(), 1}
                                            : dims{p.M * p.K, 1, p.lda()});
        const memory::desc b_md({bb, p.K, p.N}, b_dt,
                                p.tb == 'N' ? dims{p.K * p.N, p.ldb(), 1}
                                            : dims{p.K * p.N, 1, p.ldb()});
        const memory::desc c_md({p.batch, p.M, p.N}, c_dt, dims{p.stride_c(), p.ldc(), 1});
        const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), blas_attr(alpha, beta),
                                        eng_);
        impl_ = pd.impl_info_str();
        prim_ = matmul(pd);
        args_ = {{DNNL_ARG_SRC, memory(a_md, eng_, const_cast<void *>(A))},
                 {DNNL_ARG_WEIGHTS, memory(b_md, eng_, const_cast<void *>(B))},
                 {DNNL_ARG_DST, memory(c_md, eng_, C)}};
        return true;
    } catch (const dnnl::error &e) {
        *err = std::string("oneDNN batched matmul: ") + e.what() + " -- not compared";
        return false;
    }
}

void onednn_batched_matmul::execute() {
    prim_.execute(strm_, args_);
    strm_.wait();
}

row batch_row(const gemm_context &ctx, const gemm_problem &p, const std::string &dt) {
    row r;
    r.p = p;
    r.dt = dt;
    r.threads = ctx.threads;
    r.isa = ctx.isa;
    r.backend = ctx.backend;
    r.variant = "batch";
    return r;
}

int run_check_batch(const options &o, const gemm_context &ctx,
                    const std::vector<gemm_problem> &ps, reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = batch_row(ctx, p, o.dt);
        std::string detail;
        bool ok = check_pass(o, p, o.data, seed++, &detail);
        if (!o.data_set && o.data == data_kind::real && ints_exact(p.K))
            ok = check_pass(o, p, data_kind::ints, seed++, &detail) && ok;
        r.status = ok ? "PASS" : "FAIL";
        r.detail = detail.empty() ? detail : detail.substr(1);
        failures += !ok;
        rep.add(r);
    }
    return failures;
}

int run_perf_batch(const options &o, const gemm_context &ctx,
                   const std::vector<gemm_problem> &ps, reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = batch_row(ctx, p, o.dt);
        batch_data d;
        buffer Ca(size_t(p.elems_c()) * 4), Cp(size_t(p.elems_c()) * 4);
        if (!d.init(p, o.dt == "bf16", o.data, seed++, 0.0f) || !Ca.ok() || !Cp.ok()) {
            r.status = "ERROR";
            r.detail = "out of memory";
            ++failures;
            rep.add(r);
            continue;
        }
        const batch_reference ref(p, d, 1.0f, 0.0f, o.data, o.perf_points, 0.0, seed);
        anvil_status_t first_err = anvil_success;
        std::vector<contestant> cs;
        cs.push_back({"anvil_batch",
                      [&](int64_t) {
                          const anvil_status_t st = run_anvil(p, d, 1.0f, 0.0f, Ca.f32());
                          if (st != anvil_success && first_err == anvil_success) first_err = st;
                      },
                      [&](int64_t, std::string *why) {
                          if (first_err != anvil_success) {
                              *why = std::string("returned ") + anvil_status_str(first_err);
                              return false;
                          }
                          return ref.check(p, Ca.f32(), why).ok();
                      }});
        onednn_batched_matmul mm;
        if (o.vs == "onednn") {
            std::string err;
            if (!mm.init(p, d.in_dt(), d.a(), d.in_dt(), d.b(), dnnl::memory::data_type::f32,
                         Cp.f32(), 1.0f, 0.0f, &err)) {
                r.detail = err;
            } else {
                r.peer = "onednn_matmul_batched";
                r.peer_impl = mm.impl();
                cs.push_back({r.peer, [&](int64_t) { mm.execute(); },
                              [&](int64_t, std::string *why) {
                                  return ref.check(p, Cp.f32(), why).ok();
                              }});
            }
        }
        timing_options to;
        to.trials = p.flops() >= o.big_gflop * 1e9 ? o.trials_big : o.trials;
        to.min_trial_s = o.min_trial_s;
        const std::vector<timing_result> tr = run_alternating(cs, to);
        std::string detail;
        if (!fill_timed_row(ctx, tr, p.flops() * 1e-9, p.weight_bytes(), &r, &detail)) ++failures;
        r.detail = detail + r.detail;
        rep.add(r);
    }
    return failures;
}

}  // namespace anvil_bench
