// anvil-bench: the low-precision matmul handle (--dt bf16 | u8s8s32 |
// s8s8s32 --planned): anvil_matmul_* with weights packed once vs oneDNN's
// matmul primitive with prepacked weights, both with the attributes of
// anvil_bench_attr.h (output type, scales, zero points, bias, post-ops).
//   check  anvil and oneDNN vs the chain reference at points (every point
//          for small shapes) and anvil vs oneDNN on every element
//   perf   alternating trials (A B A B ...), every trial's result checked at
//          sampled points; --chain-cost adds both libraries without
//          attributes and reports the chain's cost in %
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "anvil_bench_attr.h"
#include "anvil_bench_check.h"
#include "anvil_bench_onednn_lowp.h"
#include "anvil_bench_timing.h"

namespace anvil_bench {
namespace {

anvil_data_type_t a_type(lowp_dt dt) {
    return dt == lowp_dt::f32    ? anvil_dt_f32
           : dt == lowp_dt::bf16 ? anvil_dt_bf16
           : dt == lowp_dt::u8s8s32 ? anvil_dt_u8 : anvil_dt_s8;
}

// anvil's handle with one packed copy of the weights.
struct anvil_mm {
    anvil_matmul_t h = nullptr;
    buffer packed;
    const attr_data *ad = nullptr;
    anvil_mm() = default;
    anvil_mm(const anvil_mm &) = delete;
    anvil_mm &operator=(const anvil_mm &) = delete;
    ~anvil_mm() {
        if (h) anvil_matmul_destroy(h);
    }
    anvil_status_t init(lowp_dt dt, const gemm_problem &p, const void *B, const attr_spec &a,
                        const attr_data &data) {
        ad = &data;
        anvil_matmul_desc_t d{};
        d.a_dt = a_type(dt);
        d.b_dt = is_int8(dt) ? anvil_dt_s8 : a_type(dt);
        d.c_dt = a.dst;
        d.transa = p.ta;
        d.transb = p.tb;
        d.M = p.M;
        d.N = p.N;
        d.K = p.K;
        d.lda = p.lda();
        d.ldb = p.ldb();
        d.ldc = p.ldc();
        d.a_zero_point = a.zp_src;
        d.b_zero_point = a.zp_wei;
        d.c_zero_point = a.zp_dst;
        d.scales = data.scales.empty() ? nullptr : data.scales.data();
        d.scales_per_n = a.scale_mode == 2;
        d.bias = data.bias.empty() ? nullptr : data.bias.data();
        d.num_post_ops = int(data.ops.size());
        d.post_ops = data.ops.empty() ? nullptr : data.ops.data();
        anvil_status_t st = anvil_matmul_create(&h, &d);
        if (st != anvil_success) return st;
        size_t bytes = 0;
        if ((st = anvil_matmul_packed_weights_size(h, &bytes)) != anvil_success) return st;
        packed = buffer(bytes);
        if (!packed.ok()) return anvil_out_of_memory;
        return anvil_matmul_pack_weights(h, B, packed.data());
    }
    anvil_status_t run(const void *A, void *C) const {
        return anvil_matmul_execute(h, A, packed.data(), C,
                                    ad->bin_ptrs.empty() ? nullptr : ad->bin_ptrs.data());
    }
};

row base_row(const options &o, const gemm_context &ctx, const gemm_problem &p,
             const attr_spec &a) {
    row r;
    r.p = p;
    r.dt = o.dt;
    r.threads = ctx.threads;
    r.isa = ctx.isa;
    r.backend = ctx.backend;
    r.variant = "planned";
    r.attrs = a.str();
    return r;
}

std::string elem_text(const char *who, int64_t i, int64_t j, double got, const chain_value &v,
                      bool dnnl) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s C(%lld,%lld)=%.9g want %.9g (chain value %.9g, bound %.3g)",
                  who, (long long)i, (long long)j, got, v.want, v.x,
                  dnnl ? v.err_dnnl : v.err_anvil);
    return buf;
}

// Results at points vs the reference.
struct point_check {
    int64_t checked = 0, bad = 0;
    std::string first;
};

point_check check_points(const attr_reference &ref, const std::vector<point> &pts,
                         const std::vector<chain_value> &want, anvil_data_type_t dst, int64_t ldc,
                         const void *C, bool dnnl) {
    point_check r;
    for (size_t n = 0; n < pts.size(); ++n) {
        const double got = load_elem(dst, C, pts[n].i * ldc + pts[n].j);
        ++r.checked;
        if (!ref.accepts(want[n], got, dnnl) && r.bad++ == 0)
            r.first = elem_text(dnnl ? "oneDNN" : "anvil", pts[n].i, pts[n].j, got, want[n], dnnl);
    }
    return r;
}

std::vector<chain_value> chain_at(const attr_reference &ref, const std::vector<point> &pts) {
    std::vector<chain_value> v;
    v.reserve(pts.size());
    for (const point &q : pts) v.push_back(ref.at(q.i, q.j));
    return v;
}

void fill_bytes(buffer &b) { std::memset(b.data(), 0xA5, b.bytes()); }

// One check pass; appends to *detail and returns whether anvil passed.
bool check_pass(const options &o, lowp_dt dt, const attr_spec &a, const gemm_problem &p,
                data_kind kind, uint64_t seed, std::string *detail) {
    lowp_data d;
    attr_data ad;
    const int64_t ldc = p.ldc(), nC = p.M * ldc, cb = dt_bytes(a.dst);
    buffer Ca(size_t(nC * cb)), Cd(size_t(nC * cb));
    // Full binary operands get a leading dimension of N + 3 here.
    if (!d.init(dt, p, kind, seed) || !ad.init(a, p, p.N + 3, seed) || !Ca.ok() || !Cd.ok()) {
        *detail += " out of memory;";
        return false;
    }
    ad.reset_output(Ca);
    ad.reset_output(Cd);
    const attr_reference ref(d, a, ad);
    const std::string tag = is_int8(dt) ? (d.full_range ? "full-range" : "7-bit")
                            : kind == data_kind::ints ? (d.exact(1, 0) ? "ints(exact)" : "ints")
                                                      : "real";
    const std::string how = ref.exact_chain() ? "exact" : "within bounds";
    anvil_mm am;
    anvil_status_t st = am.init(dt, p, d.B.data(), a, ad);
    if (st == anvil_success) st = am.run(d.A.data(), Ca.data());
    if (st != anvil_success) {
        *detail += std::string(" anvil_matmul returned ") + anvil_status_str(st) + ";";
        return false;
    }
    const std::vector<point> pts = choose_points(p, o.check_points, double(1 << 26), seed);
    const std::vector<chain_value> want = chain_at(ref, pts);
    const point_check pa = check_points(ref, pts, want, a.dst, ldc, Ca.data(), false);
    bool ok = pa.bad == 0;
    *detail += " anvil_matmul[" + tag + "] " +
               (ok ? "ok (" + how + ", " + std::to_string(pa.checked) + " pts)"
                   : "WRONG (" + std::to_string(pa.bad) + " of " + std::to_string(pa.checked) +
                         " pts; first: " + pa.first + ")") +
               ";";
    if (o.vs != "onednn") return ok;
    onednn_attr_matmul dm;
    std::string err;
    if (!dm.init(dt, p, d.A.data(), d.B.data(), Cd.data(), a, ad, &err)) {
        *detail += " " + err + ";";
        return ok;
    }
    dm.execute();
    const point_check pd = check_points(ref, pts, want, a.dst, ldc, Cd.data(), true);
    if (pd.bad) {  // a wrong peer says nothing about anvil
        *detail += " onednn_matmul_prepacked [" + dm.impl() + "] WRONG vs reference (" +
                   std::to_string(pd.bad) + " of " + std::to_string(pd.checked) +
                   " pts; first: " + pd.first + "), not compared;";
        return ok;
    }
    // Every element: equal, or both within their bounds of the reference.
    int64_t equal = 0, within = 0, ties = 0, bad_a = 0, bad_d = 0;
    std::string first_a, first_d;
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) {
            const double x = load_elem(a.dst, Ca.data(), i * ldc + j);
            const double y = load_elem(a.dst, Cd.data(), i * ldc + j);
            if (x == y || (std::isnan(x) && std::isnan(y))) {
                ++equal;
                continue;
            }
            const chain_value v = ref.at(i, j);
            const bool oa = ref.accepts(v, x, false), od = ref.accepts(v, y, true);
            if (!oa && bad_a++ == 0)
                first_a = elem_text("anvil", i, j, x, v, false) + ", oneDNN " + std::to_string(y);
            if (!od && bad_d++ == 0) first_d = elem_text("oneDNN", i, j, y, v, true);
            if (oa && od) {
                ++within;
                if (v.err_dnnl == 0 && std::fabs(v.x - std::floor(v.x) - 0.5) == 0) ++ties;
            }
        }
    const std::string peer = "onednn_matmul_prepacked [" + dm.impl() + "]";
    const std::string counts = std::to_string(p.M * p.N) + " elems: " + std::to_string(equal) +
                               " equal" +
                               (within ? ", " + std::to_string(within) + " within bounds" : "") +
                               (ties ? ", " + std::to_string(ties) + " .5 ties 1 off" : "");
    if (bad_a) {
        ok = false;
        *detail += " anvil vs " + peer + " MISMATCH (" + std::to_string(bad_a) +
                   " elems outside anvil's bound; first: " + first_a + ");";
    } else if (bad_d) {
        *detail += " " + peer + " off (" + std::to_string(bad_d) +
                   " elems outside oneDNN's bound; first: " + first_d + "; " + counts + ");";
    } else {
        *detail += " " + peer + " ok (" + counts + ");";
    }
    return ok;
}

}  // namespace

bool build_attr_spec(const options &o, lowp_dt dt, attr_spec *a, std::string *err) {
    *a = plain_attr(dt);
    if (!o.dst.empty()) {
        a->dst_set = true;
        parse_dst(o.dst, &a->dst);
    }
    if (!parse_post_ops(o.post_ops, &a->ops, err)) return false;
    a->post_ops_text = o.post_ops;
    if (!o.scales.empty() && !parse_scales(o.scales, &a->scale_mode, &a->scale, err)) return false;
    if (!o.zero_points.empty() &&
        !parse_zero_points(o.zero_points, &a->zp_src, &a->zp_wei, &a->zp_dst, err))
        return false;
    a->bias = o.bias;
    *err = validate_attr(dt, *a);
    if (!err->empty()) return false;
    if (o.chain_cost && !a->any(dt)) {
        *err = "--chain-cost: no attributes to cost (give --attr-post-ops, --bias, --attr-scales, "
               "--attr-zero-points or a --dst other than the default)";
        return false;
    }
    return true;
}

int run_check_matmul(const options &o, const gemm_context &ctx,
                     const std::vector<gemm_problem> &ps, reporter &rep) {
    lowp_dt dt = lowp_dt::bf16;
    parse_lowp_dt(o.dt, &dt);
    attr_spec a;
    std::string err;
    build_attr_spec(o, dt, &a, &err);  // validated in main
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p, a);
        std::string detail;
        bool ok = check_pass(o, dt, a, p, o.data, seed++, &detail);
        // f32 / bf16: the default real-data pass is followed by an exact integer pass.
        if (is_float(dt) && !o.data_set && o.data == data_kind::real && ints_exact(p.K))
            ok = check_pass(o, dt, a, p, data_kind::ints, seed++, &detail) && ok;
        r.status = ok ? "PASS" : "FAIL";
        r.detail = detail.empty() ? detail : detail.substr(1);
        if (!ok) ++failures;
        rep.add(r);
    }
    return failures;
}

int run_perf_matmul(const options &o, const gemm_context &ctx,
                    const std::vector<gemm_problem> &ps, reporter &rep) {
    lowp_dt dt = lowp_dt::bf16;
    parse_lowp_dt(o.dt, &dt);
    attr_spec a;
    std::string err;
    build_attr_spec(o, dt, &a, &err);
    const attr_spec plain = plain_attr(dt);
    int failures = 0;
    uint64_t seed = o.seed;
    for (const gemm_problem &p : ps) {
        row r = base_row(o, ctx, p, a);
        const uint64_t s = seed++;
        const int64_t ldc = p.ldc(), nC = p.M * ldc;
        lowp_data d;
        attr_data ad, pad;
        buffer Ca(size_t(nC * dt_bytes(a.dst))), Cd(size_t(nC * dt_bytes(a.dst)));
        buffer Pa, Pd;
        bool mem = d.init(dt, p, o.data, s * 7919 + 1) && ad.init(a, p, p.N, s) && Ca.ok() &&
                   Cd.ok();
        if (o.chain_cost) {
            Pa = buffer(size_t(nC * dt_bytes(plain.dst)));
            Pd = buffer(size_t(nC * dt_bytes(plain.dst)));
            mem = mem && pad.init(plain, p, p.N, s) && Pa.ok() && Pd.ok();
        }
        if (!mem) {
            r.status = "ERROR";
            r.detail = "out of memory";
            ++failures;
            rep.add(r);
            continue;
        }
        ad.reset_output(Ca);
        ad.reset_output(Cd);
        for (buffer *b : {&Pa, &Pd}) fill_bytes(*b);
        anvil_mm am, pm;
        anvil_status_t st = am.init(dt, p, d.B.data(), a, ad);
        if (st == anvil_success && o.chain_cost) st = pm.init(dt, p, d.B.data(), plain, pad);
        if (st != anvil_success) {
            r.status = "ERROR";
            r.detail = std::string("anvil_matmul: ") + anvil_status_str(st);
            ++failures;
            rep.add(r);
            continue;
        }
        const std::vector<point> pts = choose_points(p, o.perf_points, 0.0, s);
        const attr_reference ref(d, a, ad), pref(d, plain, pad);
        const std::vector<chain_value> want = chain_at(ref, pts);
        const std::vector<chain_value> pwant =
            o.chain_cost ? chain_at(pref, pts) : std::vector<chain_value>();

        // Contestants: anvil, oneDNN, then (chain cost) both without attributes.
        std::vector<contestant> cs;
        std::vector<anvil_status_t> errs(2, anvil_success);
        // (The closures capture pointers: the referenced objects outlive the timing.)
        auto add_anvil = [&](const char *name, const anvil_mm &m, buffer &C,
                             const attr_reference &rf, const std::vector<chain_value> &w,
                             anvil_data_type_t dst, anvil_status_t &e) {
            const anvil_mm *mp = &m;
            void *out = C.data();
            buffer *cp = &C;
            const attr_reference *rp = &rf;
            const std::vector<chain_value> *wp = &w;
            anvil_status_t *ep = &e;
            const void *A = d.A.data();
            const std::vector<point> *pp = &pts;
            const attr_data *adp = rf.data();
            cs.push_back({name,
                          [mp, out, A, ep](int64_t) {
                              const anvil_status_t st2 = mp->run(A, out);
                              if (st2 != anvil_success && *ep == anvil_success) *ep = st2;
                          },
                          [=](int64_t, std::string *why) {
                              if (adp->has_sum) {  // the timed calls accumulated: one call from C_old
                                  adp->reset_output(*cp);
                                  const anvil_status_t st3 = mp->run(A, out);
                                  if (st3 != anvil_success && *ep == anvil_success) *ep = st3;
                              }
                              if (*ep != anvil_success) {
                                  *why = std::string("returned ") + anvil_status_str(*ep);
                                  return false;
                              }
                              const point_check pc = check_points(*rp, *pp, *wp, dst, ldc, out, false);
                              if (pc.bad) *why = std::to_string(pc.bad) + " bad points; first: " + pc.first;
                              return pc.bad == 0;
                          }});
        };
        auto add_dnnl = [&](const char *name, onednn_attr_matmul &m, buffer &C,
                            const attr_reference &rf, const std::vector<chain_value> &w,
                            anvil_data_type_t dst) {
            onednn_attr_matmul *mp = &m;
            const void *out = C.data();
            buffer *cp = &C;
            const attr_reference *rp = &rf;
            const std::vector<chain_value> *wp = &w;
            const std::vector<point> *pp = &pts;
            const attr_data *adp = rf.data();
            cs.push_back({name, [mp](int64_t) { mp->execute(); },
                          [=](int64_t, std::string *why) {
                              if (adp->has_sum) {  // the timed calls accumulated: one call from C_old
                                  adp->reset_output(*cp);
                                  mp->execute();
                              }
                              const point_check pc = check_points(*rp, *pp, *wp, dst, ldc, out, true);
                              if (pc.bad) *why = std::to_string(pc.bad) + " bad points; first: " + pc.first;
                              return pc.bad == 0;
                          }});
        };
        add_anvil("anvil_matmul", am, Ca, ref, want, a.dst, errs[0]);
        onednn_attr_matmul dm, dpm;
        std::string notes;
        int peer_at = -1, anvil_plain_at = -1, peer_plain_at = -1;
        if (o.vs == "onednn") {
            std::string e;
            if (dm.init(dt, p, d.A.data(), d.B.data(), Cd.data(), a, ad, &e)) {
                peer_at = int(cs.size());
                add_dnnl("onednn_matmul_prepacked", dm, Cd, ref, want, a.dst);
            } else {
                notes += e + "; ";
            }
        }
        if (o.chain_cost) {
            anvil_plain_at = int(cs.size());
            add_anvil("anvil_matmul_plain", pm, Pa, pref, pwant, plain.dst, errs[1]);
            std::string e;
            if (peer_at >= 0) {
                if (dpm.init(dt, p, d.A.data(), d.B.data(), Pd.data(), plain, pad, &e)) {
                    peer_plain_at = int(cs.size());
                    add_dnnl("onednn_matmul_plain", dpm, Pd, pref, pwant, plain.dst);
                } else {
                    notes += e + "; ";
                }
            }
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
        if (peer_at >= 0) {
            const timing_result &t = tr[size_t(peer_at)];
            r.peer = "onednn_matmul_prepacked";
            r.peer_impl = dm.impl();
            r.peer_gflops = gop / t.best_s;
            r.peer_spread = t.spread;
            r.peer_gbps = wbytes * 1e-9 / t.best_s;
            r.ratio = r.anvil_gflops / r.peer_gflops;
            if (ctx.peak_gflops > 0) r.peer_pct_peak = 100.0 * r.peer_gflops / ctx.peak_gflops;
            for (double tm : t.trial_median_s) r.peer_trials.push_back(gop / tm);
            if (!t.verified) detail += "peer " + r.peer + " WRONG: " + t.why + "; ";
        }
        bool ok = tr[0].verified;
        if (!tr[0].verified) detail += "anvil WRONG: " + tr[0].why + "; ";
        if (anvil_plain_at >= 0) {
            const timing_result &t = tr[size_t(anvil_plain_at)];
            r.chain = true;
            r.base_gflops = gop / t.best_s;
            r.chain_cost = 100.0 * (tr[0].best_s / t.best_s - 1.0);
            if (!t.verified) {
                ok = false;
                detail += "anvil plain WRONG: " + t.why + "; ";
            }
        }
        if (peer_plain_at >= 0 && peer_at >= 0) {
            const timing_result &t = tr[size_t(peer_plain_at)];
            r.peer_base_gflops = gop / t.best_s;
            r.peer_chain_cost = 100.0 * (tr[size_t(peer_at)].best_s / t.best_s - 1.0);
            if (!t.verified) detail += "peer plain WRONG: " + t.why + "; ";
        }
        r.status = ok ? "PASS" : "FAIL";
        if (!ok) ++failures;
        if (is_int8(dt) && !d.full_range) detail += "7-bit data (no VNNI); ";
        r.detail = detail + notes;
        if (!r.detail.empty() && r.detail.size() >= 2) r.detail.resize(r.detail.size() - 2);
        rep.add(r);
    }
    return failures;
}

}  // namespace anvil_bench
