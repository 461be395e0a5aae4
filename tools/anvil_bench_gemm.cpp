// anvil-bench: check mode (anvil vs oneDNN vs double reference) and perf
// mode (alternating timed trials, every trial's result checked).
#include "anvil_bench_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// An anvil plan with one packed copy per weight buffer.
struct anvil_planned {
    anvil_gemm_plan_t plan = nullptr;
    std::vector<buffer> packed;
    ~anvil_planned() {
        if (plan) anvil_gemm_plan_destroy(plan);
    }
    anvil_status_t init(const gemm_problem &p, const std::vector<const float *> &Bs) {
        anvil_status_t st = anvil_gemm_plan_create(&plan, p.ta, p.tb, p.M, p.N, p.K, p.lda(),
                                                   p.ldb(), p.ldc());
        if (st != anvil_success) return st;
        size_t bytes = 0;
        if ((st = anvil_gemm_plan_packed_b_size(plan, &bytes)) != anvil_success) return st;
        for (const float *B : Bs) {
            buffer b(bytes);
            if (!b.ok()) return anvil_out_of_memory;
            if ((st = anvil_gemm_plan_pack_b(plan, B, b.data())) != anvil_success) return st;
            packed.push_back(std::move(b));
        }
        return anvil_success;
    }
    anvil_status_t run(size_t which, float alpha, const float *A, float beta, float *C) const {
        return anvil_gemm_plan_execute(plan, alpha, A, packed[which].data(), beta, C);
    }
};

std::string st_str(anvil_status_t st) { return anvil_status_str(st); }

row base_row(const options &o, const gemm_context &ctx, const gemm_problem &p) {
    row r;
    r.p = p;
    r.threads = ctx.threads;
    r.isa = ctx.isa;
    r.backend = ctx.backend;
    r.variant = o.planned ? "planned" : "plain";
    r.cold = o.cold;
    return r;
}

void fill_nan(float *p, int64_t n) {
    std::fill(p, p + n, std::numeric_limits<float>::quiet_NaN());
}

// One check pass over a data kind; appends to *detail, returns whether every
// anvil path passed.
bool check_pass(const options &o, const gemm_problem &p, data_kind kind, uint64_t seed,
                std::string *detail) {
    const int64_t nA = p.M * p.K, nB = p.K * p.N, nC = p.M * p.N;
    buffer A(size_t(nA) * 4), B(size_t(nB) * 4), C0(size_t(nC) * 4), C(size_t(nC) * 4);
    if (!A.ok() || !B.ok() || !C0.ok() || !C.ok()) {
        *detail += " out of memory;";
        return false;
    }
    fill(A.f32(), nA, kind, seed * 3 + 1);
    fill(B.f32(), nB, kind, seed * 3 + 2);
    const float alpha = o.alpha, beta = o.beta;
    if (beta != 0.0f)
        fill(C0.f32(), nC, kind, seed * 3 + 3);
    else
        fill_nan(C0.f32(), nC);  // beta == 0 must not read C
    const std::vector<point> pts = choose_points(p, o.check_points, double(1 << 26), seed);
    const reference ref(p, A.f32(), B.f32(), alpha, beta, C0.f32(), kind, pts);
    const std::string tag = kind == data_kind::ints ? (ref.exact() ? "ints(exact)" : "ints")
                                                    : "real";
    bool ok = true;
    auto report = [&](const char *who, const check_result &cr, bool is_anvil) {
        char buf[64];
        if (cr.ok() && ref.exact())
            std::snprintf(buf, sizeof buf, "exact, %lld pts", (long long)cr.checked);
        else
            std::snprintf(buf, sizeof buf, "err/bound %.2g, %lld pts", cr.worst_ratio,
                          (long long)cr.checked);
        *detail += std::string(" ") + who + "[" + tag + "] " +
                   (cr.ok() ? "ok (" + std::string(buf) + ")" : "WRONG (" + cr.summary() + ")") +
                   ";";
        if (is_anvil && !cr.ok()) ok = false;
    };
    std::memcpy(C.data(), C0.data(), C.bytes());
    anvil_status_t st = anvil_sgemm(p.ta, p.tb, p.M, p.N, p.K, alpha, A.f32(), p.lda(), B.f32(),
                                    p.ldb(), beta, C.f32(), p.ldc());
    if (st != anvil_success) {
        *detail += " anvil_sgemm returned " + st_str(st) + ";";
        ok = false;
    } else {
        report("anvil_sgemm", ref.check(C.f32()), true);
    }
    if (o.vs == "onednn") {
        std::memcpy(C.data(), C0.data(), C.bytes());
        const int ds = onednn_sgemm(p, alpha, A.f32(), B.f32(), beta, C.f32());
        if (ds != 0)
            *detail += " dnnl_sgemm returned " + std::to_string(ds) + ";";
        else
            report("dnnl_sgemm", ref.check(C.f32()), false);
    }
    if (o.planned) {
        anvil_planned pl;
        st = pl.init(p, {B.f32()});
        std::memcpy(C.data(), C0.data(), C.bytes());
        if (st == anvil_success) st = pl.run(0, alpha, A.f32(), beta, C.f32());
        if (st != anvil_success) {
            *detail += " anvil planned returned " + st_str(st) + ";";
            ok = false;
        } else {
            report("anvil_planned", ref.check(C.f32()), true);
        }
        if (o.vs == "onednn") {
            std::memcpy(C.data(), C0.data(), C.bytes());
            onednn_matmul mm;
            std::string err;
            if (!mm.init(p, A.f32(), {B.f32()}, C.f32(), alpha, beta, &err)) {
                *detail += " " + err + ";";
            } else {
                mm.execute(0);
                report("onednn_matmul", ref.check(C.f32()), false);
            }
        }
    }
    return ok;
}

}  // namespace

bool fill_timed_row(const gemm_context &ctx, const std::vector<timing_result> &tr, double gflop,
                    double weight_bytes, row *r, std::string *detail) {
    r->timed = true;
    r->anvil_gflops = gflop / tr[0].best_s;
    r->anvil_spread = tr[0].spread;
    r->anvil_gbps = weight_bytes * 1e-9 / tr[0].best_s;
    for (double t : tr[0].trial_median_s) r->anvil_trials.push_back(gflop / t);
    if (ctx.peak_gflops > 0) r->pct_peak = 100.0 * r->anvil_gflops / ctx.peak_gflops;
    if (tr.size() >= 2) {
        r->peer_gflops = gflop / tr[1].best_s;
        r->peer_spread = tr[1].spread;
        r->peer_gbps = weight_bytes * 1e-9 / tr[1].best_s;
        for (double t : tr[1].trial_median_s) r->peer_trials.push_back(gflop / t);
        if (ctx.peak_gflops > 0) r->peer_pct_peak = 100.0 * r->peer_gflops / ctx.peak_gflops;
        r->ratio = r->anvil_gflops / r->peer_gflops;
        if (!tr[1].verified) *detail += "peer " + r->peer + " WRONG: " + tr[1].why + "; ";
    }
    r->status = tr[0].verified ? "PASS" : "FAIL";
    if (!tr[0].verified) *detail += "anvil WRONG: " + tr[0].why + "; ";
    return tr[0].verified;
}

int run_check(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
              reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p);
        std::string detail;
        bool ok = check_pass(o, p, o.data, seed++, &detail);
        // The default real-data pass is followed by an exact integer pass.
        if (!o.data_set && o.data == data_kind::real && ints_exact(p.K))
            ok = check_pass(o, p, data_kind::ints, seed++, &detail) && ok;
        r.status = ok ? "PASS" : "FAIL";
        r.detail = detail.empty() ? detail : detail.substr(1);
        if (!ok) ++failures;
        rep.add(r);
    }
    return failures;
}

int run_perf(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
             reporter &rep) {
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p);
        const int64_t nA = p.M * p.K, nB = p.K * p.N, nC = p.M * p.N;
        // Cold: enough weight buffers to exceed 4 x 32 MiB, so every call
        // reads its weights from DRAM.
        const double cold_bytes = 4.0 * 32 * 1024 * 1024;
        // Tiny weights would need millions of copies; cap the count (the
        // detail column says when the rotation stays under 4 x 32 MiB).
        const double max_bufs = 4096;
        const double want = std::max(2.0, std::ceil(cold_bytes / p.weight_bytes()) + 1);
        const size_t nbuf = o.cold ? size_t(std::min(want, max_bufs)) : 1;
        std::string cold_note;
        if (o.cold && want > max_bufs)
            cold_note = "cold: capped at " + std::to_string(nbuf) + " weight copies (" +
                        std::to_string(int64_t(double(nbuf) * p.weight_bytes()) >> 10) +
                        " KiB), not fully cold; ";
        buffer A(size_t(nA) * 4), Ca(size_t(nC) * 4), Cp(size_t(nC) * 4);
        std::vector<buffer> Bs;
        std::vector<const float *> Bp;
        bool mem_ok = A.ok() && Ca.ok() && Cp.ok();
        for (size_t b = 0; b < nbuf && mem_ok; ++b) {
            Bs.emplace_back(size_t(nB) * 4);
            mem_ok = Bs.back().ok();
            if (mem_ok) Bp.push_back(Bs.back().f32());
        }
        if (!mem_ok) {
            r.status = "ERROR";
            r.detail = "out of memory";
            ++failures;
            rep.add(r);
            continue;
        }
        const uint64_t s = seed++;
        fill(A.f32(), nA, o.data, s * 7919 + 1);
        for (size_t b = 0; b < nbuf; ++b) fill(Bs[b].f32(), nB, o.data, s * 7919 + 2 + b);
        fill_nan(Ca.f32(), nC);
        fill_nan(Cp.f32(), nC);
        const std::vector<point> pts = choose_points(p, o.perf_points, 0.0, s);
        std::vector<reference> refs;
        for (size_t b = 0; b < nbuf; ++b)
            refs.emplace_back(p, A.f32(), Bp[b], 1.0f, 0.0f, nullptr, o.data, pts);

        // anvil
        anvil_status_t first_err = anvil_success;
        anvil_planned pl;
        std::vector<contestant> cs;
        if (o.planned) {
            const anvil_status_t st = pl.init(p, Bp);
            if (st != anvil_success) {
                r.status = "ERROR";
                r.detail = "anvil plan: " + st_str(st);
                ++failures;
                rep.add(r);
                continue;
            }
            cs.push_back({"anvil_planned",
                          [&](int64_t i) {
                              const anvil_status_t st2 =
                                  pl.run(size_t(i) % nbuf, 1.0f, A.f32(), 0.0f, Ca.f32());
                              if (st2 != anvil_success && first_err == anvil_success) first_err = st2;
                          },
                          nullptr});
        } else {
            cs.push_back({"anvil_sgemm",
                          [&](int64_t i) {
                              const anvil_status_t st2 = anvil_sgemm(
                                  p.ta, p.tb, p.M, p.N, p.K, 1.0f, A.f32(), p.lda(),
                                  Bp[size_t(i) % nbuf], p.ldb(), 0.0f, Ca.f32(), p.ldc());
                              if (st2 != anvil_success && first_err == anvil_success) first_err = st2;
                          },
                          nullptr});
        }
        cs.back().verify = [&](int64_t last, std::string *why) {
            if (first_err != anvil_success) {
                *why = "returned " + st_str(first_err);
                return false;
            }
            const check_result cr = refs[size_t(last) % nbuf].check(Ca.f32());
            if (!cr.ok()) *why = cr.summary();
            return cr.ok();
        };
        // peer
        onednn_matmul mm;
        int dnnl_err = 0;
        if (o.vs == "onednn") {
            if (o.planned) {
                std::string err;
                if (!mm.init(p, A.f32(), Bp, Cp.f32(), 1.0f, 0.0f, &err)) {
                    r.detail = err;
                } else {
                    r.peer = "onednn_matmul_prepacked";
                    r.peer_impl = mm.impl();
                    cs.push_back({r.peer, [&](int64_t i) { mm.execute(size_t(i) % nbuf); },
                                  nullptr});
                }
            } else {
                r.peer = "onednn_sgemm";
                r.peer_impl = "dnnl_sgemm";
                cs.push_back({r.peer,
                              [&](int64_t i) {
                                  const int e = onednn_sgemm(p, 1.0f, A.f32(), Bp[size_t(i) % nbuf],
                                                             0.0f, Cp.f32());
                                  if (e && !dnnl_err) dnnl_err = e;
                              },
                              nullptr});
            }
            if (cs.size() == 2)
                cs.back().verify = [&](int64_t last, std::string *why) {
                    if (dnnl_err) {
                        *why = "dnnl status " + std::to_string(dnnl_err);
                        return false;
                    }
                    const check_result cr = refs[size_t(last) % nbuf].check(Cp.f32());
                    if (!cr.ok()) *why = cr.summary();
                    return cr.ok();
                };
        }

        timing_options to;
        to.trials = p.flops() >= o.big_gflop * 1e9 ? o.trials_big : o.trials;
        to.min_trial_s = o.min_trial_s;
        const std::vector<timing_result> tr = run_alternating(cs, to);

        std::string detail = cold_note;
        if (!fill_timed_row(ctx, tr, p.flops() * 1e-9, p.weight_bytes(), &r, &detail)) ++failures;
        if (!r.detail.empty()) detail += r.detail;
        r.detail = detail;
        rep.add(r);
    }
    return failures;
}

}  // namespace anvil_bench
