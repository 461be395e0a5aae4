// anvil-bench: check and perf modes of the low-precision GEMMs (bf16,
// u8s8s32, s8s8s32); the rules are in anvil_bench_lowp.h.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "anvil_bench_lowp.h"
#include "anvil_bench_onednn_lowp.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {
namespace {

row base_row(const options &o, const gemm_context &ctx, const gemm_problem &p) {
    row r;
    r.p = p;
    r.dt = o.dt;
    r.threads = ctx.threads;
    r.isa = ctx.isa;
    r.backend = ctx.backend;
    r.variant = "plain";
    return r;
}

// A oneDNN peer writing into C; returns "" or an error text.
struct peer_call {
    std::string name, impl;
    std::function<std::string()> run;
};

// The peers of one data type, set up on d's operands with output C.
// The matmul objects must outlive the calls.
std::vector<peer_call> make_peers(const lowp_data &d, float alpha, float beta, void *C1, void *C2,
                                  onednn_lowp_matmul *mm1, onednn_lowp_matmul *mm2,
                                  std::string *notes) {
    std::vector<peer_call> out;
    std::string err;
    if (d.dt == lowp_dt::bf16) {
        if (mm1->init(d.dt, d.p, d.A.data(), d.B.data(), C1, alpha, beta, false, &err))
            out.push_back({"onednn_matmul", mm1->impl(), [mm1] {
                               mm1->execute();
                               return std::string();
                           }});
        else
            *notes += " " + err + ";";
    } else {
        const bool sa = d.dt == lowp_dt::s8s8s32;
        const gemm_problem p = d.p;
        const void *A = d.A.data(), *B = d.B.data();
        out.push_back({sa ? "dnnl_gemm_s8s8s32" : "dnnl_gemm_u8s8s32",
                       sa ? "dnnl_gemm_s8s8s32" : "dnnl_gemm_u8s8s32",
                       [=] {
                           const int e = onednn_gemm_int8(p, sa, alpha, A, B, beta,
                                                          static_cast<int32_t *>(C1));
                           return e ? "dnnl status " + std::to_string(e) : std::string();
                       }});
    }
    err.clear();
    if (mm2->init(d.dt, d.p, d.A.data(), d.B.data(), C2, alpha, beta, true, &err))
        out.push_back({"onednn_matmul_prepacked", mm2->impl(), [mm2] {
                           mm2->execute();
                           return std::string();
                       }});
    else
        *notes += " " + err + ";";
    return out;
}

std::string fmt_g(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}

std::string pts_note(const check_result &cr, bool exact) {
    char buf[64];
    if (cr.ok() && exact)
        std::snprintf(buf, sizeof buf, "exact, %lld pts", (long long)cr.checked);
    else
        std::snprintf(buf, sizeof buf, "err/bound %.2g, %lld pts", cr.worst_ratio,
                      (long long)cr.checked);
    return buf;
}

// One check pass; appends to *detail and returns whether anvil passed.
bool check_pass(const options &o, lowp_dt dt, const gemm_problem &p, data_kind kind,
                uint64_t seed, std::string *detail) {
    lowp_data d;
    const int64_t nC = p.M * p.N;
    buffer C0(size_t(nC) * 4), C(size_t(nC) * 4), D1(size_t(nC) * 4), D2(size_t(nC) * 4);
    if (!d.init(dt, p, kind, seed) || !C0.ok() || !C.ok() || !D1.ok() || !D2.ok()) {
        *detail += " out of memory;";
        return false;
    }
    const float alpha = o.alpha, beta = o.beta;
    fill_c(dt, C0.data(), nC, beta, kind, seed * 3 + 3);
    const lowp_reference ref(d, alpha, beta, C0.data(),
                             choose_points(p, o.check_points, double(1 << 26), seed));
    const std::string tag = is_int8(dt) ? (d.full_range ? "full-range" : "7-bit")
                            : kind == data_kind::ints ? (ref.exact() ? "ints(exact)" : "ints")
                                                      : "real";
    std::memcpy(C.data(), C0.data(), C.bytes());
    const anvil_status_t st = run_anvil_lowp(d, alpha, beta, C.data());
    if (st != anvil_success) {
        *detail += std::string(" anvil returned ") + anvil_status_str(st) + ";";
        return false;
    }
    const check_result cr = ref.check(C.data(), false);
    bool ok = cr.ok();
    *detail += " anvil[" + tag + "] " +
               (ok ? "ok (" + pts_note(cr, ref.exact()) + ")" : "WRONG (" + cr.summary() + ")") +
               ";";
    if (o.vs != "onednn") return ok;
    // dnnl_gemm_x8s8s32 (2.6) rounds alpha * (partial dot) per K block for an
    // alpha that is not an integer (tests/test_lowp_gemm.cpp): no exact peer.
    const bool blas_rounds = is_int8(dt) && alpha != std::nearbyint(alpha) && p.K > 128;
    onednn_lowp_matmul mm1, mm2;
    for (const peer_call &pc : make_peers(d, alpha, beta, D1.data(), D2.data(), &mm1, &mm2, detail)) {
        if (blas_rounds && pc.name.rfind("dnnl_", 0) == 0) {
            *detail += " " + pc.name + " not compared (rounds a non-integer alpha per K block);";
            continue;
        }
        buffer &D = pc.name == "onednn_matmul_prepacked" ? D2 : D1;
        std::memcpy(D.data(), C0.data(), D.bytes());
        const std::string err = pc.run();
        if (!err.empty()) {
            *detail += " " + pc.name + " " + err + ";";
            continue;
        }
        const check_result pr = ref.check(D.data(), true);
        if (!pr.ok()) {  // a wrong peer says nothing about anvil
            *detail += " " + pc.name + " WRONG vs reference (" + pr.summary() + "), not compared;";
            continue;
        }
        int64_t ties = 0;
        const check_result fr = compare_full(d, alpha, beta, C0.data(), C.data(), D.data(), &ties);
        const bool exact = is_int8(dt) || d.exact(alpha, beta);
        std::string note = exact ? "= anvil" : "~ anvil, diff/bound " + fmt_g(fr.worst_ratio);
        note += ", " + std::to_string(fr.checked) + " elems";
        if (ties) note += ", " + std::to_string(ties) + " .5 ties 1 off";
        if (!fr.ok()) {
            ok = false;
            *detail += " anvil vs " + pc.name + " MISMATCH (" + fr.summary() + ");";
        } else {
            *detail += " " + pc.name + " ok (" + note + ");";
        }
    }
    return ok;
}

}  // namespace

int run_check_lowp(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
                   reporter &rep) {
    lowp_dt dt = lowp_dt::bf16;
    parse_lowp_dt(o.dt, &dt);
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p);
        std::string detail;
        bool ok = check_pass(o, dt, p, o.data, seed++, &detail);
        // bf16: the default real-data pass is followed by an exact integer pass.
        if (dt == lowp_dt::bf16 && !o.data_set && o.data == data_kind::real && ints_exact(p.K))
            ok = check_pass(o, dt, p, data_kind::ints, seed++, &detail) && ok;
        r.status = ok ? "PASS" : "FAIL";
        r.detail = detail.empty() ? detail : detail.substr(1);
        if (!ok) ++failures;
        rep.add(r);
    }
    return failures;
}

int run_perf_lowp(const options &o, const gemm_context &ctx, const std::vector<gemm_problem> &ps,
                  reporter &rep) {
    lowp_dt dt = lowp_dt::bf16;
    parse_lowp_dt(o.dt, &dt);
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p);
        const int64_t nC = p.M * p.N;
        lowp_data d;
        buffer Ca(size_t(nC) * 4), C1(size_t(nC) * 4), C2(size_t(nC) * 4);
        const uint64_t s = seed++;
        if (!d.init(dt, p, o.data, s * 7919 + 1) || !Ca.ok() || !C1.ok() || !C2.ok()) {
            r.status = "ERROR";
            r.detail = "out of memory";
            ++failures;
            rep.add(r);
            continue;
        }
        for (buffer *b : {&Ca, &C1, &C2}) fill_c(dt, b->data(), nC, 0.0f, o.data, 0);
        const lowp_reference ref(d, 1.0f, 0.0f, nullptr, choose_points(p, o.perf_points, 0.0, s));

        anvil_status_t first_err = anvil_success;
        std::vector<contestant> cs;
        cs.push_back({std::string("anvil_gemm_") + (dt == lowp_dt::bf16 ? "bf16bf16f32" : o.dt),
                      [&](int64_t) {
                          const anvil_status_t st = run_anvil_lowp(d, 1.0f, 0.0f, Ca.data());
                          if (st != anvil_success && first_err == anvil_success) first_err = st;
                      },
                      [&](int64_t, std::string *why) {
                          if (first_err != anvil_success) {
                              *why = std::string("returned ") + anvil_status_str(first_err);
                              return false;
                          }
                          const check_result cr = ref.check(Ca.data(), false);
                          if (!cr.ok()) *why = cr.summary();
                          return cr.ok();
                      }});
        onednn_lowp_matmul mm1, mm2;
        std::string notes;
        std::vector<peer_call> peers;
        std::vector<std::string> peer_err;
        if (o.vs == "onednn")
            peers = make_peers(d, 1.0f, 0.0f, C1.data(), C2.data(), &mm1, &mm2, &notes);
        peer_err.resize(peers.size());
        for (size_t n = 0; n < peers.size(); ++n) {
            void *out = peers[n].name == "onednn_matmul_prepacked" ? C2.data() : C1.data();
            cs.push_back({peers[n].name,
                          [&, n](int64_t) {
                              const std::string e = peers[n].run();
                              if (!e.empty() && peer_err[n].empty()) peer_err[n] = e;
                          },
                          [&, n, out](int64_t, std::string *why) {
                              if (!peer_err[n].empty()) {
                                  *why = peer_err[n];
                                  return false;
                              }
                              const check_result cr = ref.check(out, true);
                              if (!cr.ok()) *why = cr.summary();
                              return cr.ok();
                          }});
        }

        timing_options to;
        to.trials = p.flops() >= o.big_gflop * 1e9 ? o.trials_big : o.trials;
        to.min_trial_s = o.min_trial_s;
        const std::vector<timing_result> tr = run_alternating(cs, to);

        r.timed = true;
        const double gop = p.flops() * 1e-9;
        const double wbytes = double(p.K) * double(p.N) * double(elem_bytes(dt));
        r.anvil_gflops = gop / tr[0].best_s;
        r.anvil_spread = tr[0].spread;
        r.anvil_gbps = wbytes * 1e-9 / tr[0].best_s;
        for (double t : tr[0].trial_median_s) r.anvil_trials.push_back(gop / t);
        if (ctx.peak_gflops > 0) r.pct_peak = 100.0 * r.anvil_gflops / ctx.peak_gflops;
        std::string detail;
        for (size_t n = 0; n < peers.size(); ++n) {
            const timing_result &t = tr[n + 1];
            // The first slot is the plain peer; the prepacked matmul is peer2.
            const bool second = peers[n].name == "onednn_matmul_prepacked";
            std::string &name = second ? r.peer2 : r.peer;
            name = peers[n].name;
            (second ? r.peer2_impl : r.peer_impl) = peers[n].impl;
            const double g = gop / t.best_s;
            (second ? r.peer2_gflops : r.peer_gflops) = g;
            (second ? r.peer2_spread : r.peer_spread) = t.spread;
            (second ? r.peer2_gbps : r.peer_gbps) = wbytes * 1e-9 / t.best_s;
            (second ? r.ratio2 : r.ratio) = r.anvil_gflops / g;
            if (ctx.peak_gflops > 0)
                (second ? r.peer2_pct_peak : r.peer_pct_peak) = 100.0 * g / ctx.peak_gflops;
            for (double tm : t.trial_median_s)
                (second ? r.peer2_trials : r.peer_trials).push_back(gop / tm);
            if (!t.verified) detail += "peer " + name + " WRONG: " + t.why + "; ";
        }
        if (tr[0].verified) {
            r.status = "PASS";
        } else {
            r.status = "FAIL";
            detail += "anvil WRONG: " + tr[0].why + "; ";
            ++failures;
        }
        if (is_int8(dt) && !d.full_range) detail += "7-bit data (no VNNI); ";
        if (!notes.empty()) detail += notes.substr(1);
        r.detail = detail;
        rep.add(r);
    }
    return failures;
}

}  // namespace anvil_bench
