// anvil-bench conv: check and perf modes of anvil_conv2d_* against oneDNN's
// convolution primitive (the rules are in anvil_bench_conv.h).
#include "anvil_bench_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unordered_map>
#include <vector>

#include "anvil_bench_attr.h"
#include "anvil_bench_check.h"
#include "anvil_bench_lowp.h"
#include "anvil_bench_onednn.h"
#include "anvil_bench_onednn_conv.h"
#include "anvil_bench_output.h"
#include "anvil_bench_peak.h"
#include "anvil_bench_timing.h"
#include "conv/conv_descriptor.h"
#include "cpu/isa.h"

namespace anvil_bench {
namespace {

using anvil::conv::conv_shape;

// ------------------------------------------------------------------ problems

struct conv_problem {
    conv_shape s;
    int64_t mult = 1;       // "*K" at the end of the name
    std::string source;     // "file:line" or "argument"
    int batch = -1;         // index into the batch files, -1 for arguments
};

int64_t multiplicity(const std::string &name) {
    const size_t star = name.rfind('*');
    if (star == std::string::npos || star + 1 >= name.size()) return 1;
    char *end = nullptr;
    const long long k = std::strtoll(name.c_str() + star + 1, &end, 10);
    return end && *end == '\0' && k >= 1 ? int64_t(k) : 1;
}

// '#' starts a comment outside a quoted name.
std::string strip_comment(const std::string &line) {
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '"') quoted = !quoted;
        if (line[i] == '#' && !quoted) return line.substr(0, i);
    }
    return line;
}

bool load_conv_batch(const std::string &path, int index, int64_t mb,
                     std::vector<conv_problem> *out, std::vector<skipped_line> *skipped) {
    std::ifstream f(path);
    if (!f) return false;
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
        ++n;
        const std::string s = strip_comment(line);
        if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(n);
        const size_t b = s.find_first_not_of(" \t\r");
        if (s.compare(b, 2, "--") == 0) {
            skipped->push_back({where, s.substr(b), "benchdnn option line (not applied)"});
            continue;
        }
        conv_problem p;
        std::string why;
        if (!anvil::conv::parse_conv_descriptor(s, &p.s, &why)) {
            skipped->push_back({where, s.substr(b), why});
            continue;
        }
        if (mb > 0) p.s.mb = mb;
        p.mult = multiplicity(p.s.name);
        p.source = where;
        p.batch = index;
        out->push_back(p);
    }
    return true;
}

// The GEMM view: M = output pixels, N = OC, K = the whole block-diagonal
// reduction IC KH KW (what the reference computes per point).
gemm_problem gemm_view(const conv_shape &s) {
    gemm_problem p;
    p.M = s.mb * s.oh * s.ow;
    p.N = s.oc;
    p.K = s.ic * s.kh * s.kw;
    return p;
}

std::string base_name(const std::string &path) {
    const size_t sl = path.rfind('/');
    return sl == std::string::npos ? path : path.substr(sl + 1);
}

// ---------------------------------------------------------------------- data

// One problem's src and plain weights (in the chosen layout), with float
// copies of f32 / bf16 values.
struct conv_data {
    conv_shape s;
    conv_types t;
    anvil_conv_weights_layout_t layout = anvil_conv_weights_oihw;
    bool full_range = true;
    buffer src, wei;
    std::vector<float> srcf, weif;

    int64_t n_src() const { return s.mb * s.ih * s.iw * s.ic; }
    int64_t n_wei() const { return s.oc * (s.ic / s.g) * s.kh * s.kw; }
    int64_t wei_index(int64_t oc, int64_t c, int64_t kh, int64_t kw) const {
        const int64_t icg = s.ic / s.g;
        return layout == anvil_conv_weights_oihw ? ((oc * icg + c) * s.kh + kh) * s.kw + kw
                                                 : ((kh * s.kw + kw) * icg + c) * s.oc + oc;
    }

    bool init(const conv_shape &shape, const conv_types &types, anvil_conv_weights_layout_t l,
              uint64_t seed) {
        s = shape;
        t = types;
        layout = l;
        const int64_t ns = n_src(), nw = n_wei();
        src = buffer(size_t(std::max<int64_t>(ns, 1) * dt_bytes(t.src)));
        wei = buffer(size_t(std::max<int64_t>(nw, 1) * dt_bytes(t.wei)));
        if (!src.ok() || !wei.ok()) return false;
        if (!t.int8()) {
            srcf.resize(size_t(ns));
            weif.resize(size_t(nw));
            fill(srcf.data(), ns, data_kind::ints, seed * 3 + 1);
            fill(weif.data(), nw, data_kind::ints, seed * 3 + 2);
            if (t.src == anvil_dt_bf16) {
                uint16_t *a = static_cast<uint16_t *>(src.data());
                uint16_t *b = static_cast<uint16_t *>(wei.data());
                for (int64_t i = 0; i < ns; ++i) a[i] = f32_to_bf16_rne(srcf[size_t(i)]);
                for (int64_t i = 0; i < nw; ++i) b[i] = f32_to_bf16_rne(weif[size_t(i)]);
            } else {
                std::memcpy(src.data(), srcf.data(), size_t(ns) * 4);
                std::memcpy(wei.data(), weif.data(), size_t(nw) * 4);
            }
            return true;
        }
        // As the lowp data (7-bit data without VNNI).
        full_range = fill_int8_operands(static_cast<uint8_t *>(src.data()), ns,
                                        t.src == anvil_dt_s8, static_cast<uint8_t *>(wei.data()),
                                        nw, seed);
        return true;
    }
};

// The chain reference at the output pixels `pixels` (see the header): a
// compact GEMM of one row per pixel (its im2col patch over all groups)
// times the block-diagonal weights, and the attribute operands of those
// rows, evaluated by attr_reference.  Built in place (it keeps references).
class conv_reference {
public:
    conv_reference(const conv_data &cd, const attr_spec &a, const attr_data &ad,
                   const std::vector<int64_t> &pixels) {
        const conv_shape &s = cd.s;
        for (int64_t px : pixels)
            if (row_.emplace(px, int64_t(rows_.size())).second) rows_.push_back(px);
        const int64_t R = int64_t(rows_.size()), K = s.ic * s.kh * s.kw, OC = s.oc;
        const int64_t icg = s.ic / s.g, ocg = s.oc / s.g, kg = icg * s.kh * s.kw;
        const bool i8 = cd.t.int8();
        d_.dt = !i8 ? lowp_dt::bf16 : cd.t.src == anvil_dt_u8 ? lowp_dt::u8s8s32 : lowp_dt::s8s8s32;
        d_.p.M = std::max<int64_t>(R, 1);
        d_.p.N = OC;
        d_.p.K = K;
        d_.kind = data_kind::ints;
        d_.full_range = cd.full_range;
        if (i8) {
            d_.A = buffer(size_t(d_.p.M * K));
            d_.B = buffer(size_t(K * OC));
        } else {
            d_.Af.assign(size_t(d_.p.M * K), 0.0f);
            d_.Bf.assign(size_t(K * OC), 0.0f);
        }
        ok_ = d_.A.ok() && d_.B.ok();
        if (!ok_) return;
        uint8_t *A8 = static_cast<uint8_t *>(d_.A.data()), *B8 = static_cast<uint8_t *>(d_.B.data());
        if (i8) std::memset(B8, 0, size_t(K * OC));
        // Weights: B[g*kg + (kh*KW + kw)*icg + c][oc] for oc in group g.
        for (int64_t oc = 0; oc < OC; ++oc) {
            const int64_t g = oc / ocg;
            for (int64_t kh = 0; kh < s.kh; ++kh)
                for (int64_t kw = 0; kw < s.kw; ++kw)
                    for (int64_t c = 0; c < icg; ++c) {
                        const int64_t k = g * kg + (kh * s.kw + kw) * icg + c;
                        const int64_t w = cd.wei_index(oc, c, kh, kw);
                        if (i8) B8[k * OC + oc] = static_cast<const uint8_t *>(cd.wei.data())[w];
                        else d_.Bf[size_t(k * OC + oc)] = cd.weif[size_t(w)];
                    }
        }
        // Source patches; a padding tap holds the source zero point.
        const uint8_t pad8 = uint8_t(a.zp_src);
        for (int64_t r = 0; r < R; ++r) {
            const int64_t px = rows_[size_t(r)];
            const int64_t n = px / (s.oh * s.ow), oh = px / s.ow % s.oh, ow = px % s.ow;
            for (int64_t g = 0; g < s.g; ++g)
                for (int64_t kh = 0; kh < s.kh; ++kh)
                    for (int64_t kw = 0; kw < s.kw; ++kw) {
                        const int64_t ih = oh * s.sh - s.pt + kh * (s.dh + 1);
                        const int64_t iw = ow * s.sw - s.pl + kw * (s.dw + 1);
                        const bool in = ih >= 0 && ih < s.ih && iw >= 0 && iw < s.iw;
                        const int64_t k0 = r * K + g * kg + (kh * s.kw + kw) * icg;
                        const int64_t s0 = ((n * s.ih + ih) * s.iw + iw) * s.ic + g * icg;
                        for (int64_t c = 0; c < icg; ++c) {
                            if (i8)
                                A8[k0 + c] = in ? static_cast<const uint8_t *>(cd.src.data())[s0 + c]
                                                : pad8;
                            else
                                d_.Af[size_t(k0 + c)] = in ? cd.srcf[size_t(s0 + c)] : 0.0f;
                        }
                    }
        }
        // The attribute operands of these rows.
        ad_.scales = ad.scales;
        ad_.bias = ad.bias;
        ad_.dnnl_bias = ad.dnnl_bias;
        ad_.bin_ld = ad.bin_ld;
        ad_.bin_dt = ad.bin_dt;
        ad_.ops = ad.ops;
        for (size_t t = 0; t < ad.bin.size(); ++t) {
            const int64_t eb = dt_bytes(ad.bin_dt[t]), ld = ad.bin_ld[t];
            if (ld == 0) {
                buffer b(ad.bin[t].bytes());
                ok_ = ok_ && b.ok();
                if (b.ok()) std::memcpy(b.data(), ad.bin[t].data(), b.bytes());
                ad_.bin.push_back(std::move(b));
                continue;
            }
            buffer b(size_t(d_.p.M * ld * eb));
            ok_ = ok_ && b.ok();
            if (b.ok())
                for (int64_t r = 0; r < R; ++r)
                    std::memcpy(static_cast<char *>(b.data()) + r * ld * eb,
                                static_cast<const char *>(ad.bin[t].data()) + rows_[size_t(r)] * ld * eb,
                                size_t(OC * eb));
            ad_.bin.push_back(std::move(b));
        }
        // dst's initial contents at these rows (a sum op reads them).
        ad_.has_sum = ad.has_sum;
        ad_.c_dt = ad.c_dt;
        ad_.c_ld = ad.c_ld;
        if (ad.has_sum) {
            const int64_t eb = dt_bytes(ad.c_dt);
            ad_.c_old = buffer(size_t(d_.p.M * ad.c_ld * eb));
            ok_ = ok_ && ad_.c_old.ok();
            if (ad_.c_old.ok())
                for (int64_t r = 0; r < R; ++r)
                    std::memcpy(static_cast<char *>(ad_.c_old.data()) + r * ad.c_ld * eb,
                                static_cast<const char *>(ad.c_old.data()) + rows_[size_t(r)] * ad.c_ld * eb,
                                size_t(ad.c_ld * eb));
        }
        ref_ = std::make_unique<attr_reference>(d_, a, ad_);
    }
    bool ok() const { return ok_; }
    bool exact_chain() const { return ref_->exact_chain(); }
    chain_value at(int64_t px, int64_t oc) const { return ref_->at(row_.at(px), oc); }
    bool accepts(const chain_value &v, double got, bool dnnl) const {
        return ref_->accepts(v, got, dnnl);
    }

private:
    lowp_data d_;
    attr_data ad_;
    std::unique_ptr<attr_reference> ref_;
    std::vector<int64_t> rows_;
    std::unordered_map<int64_t, int64_t> row_;
    bool ok_ = true;
};

std::vector<int64_t> pixels_of(const std::vector<point> &pts) {
    std::vector<int64_t> px;
    px.reserve(pts.size());
    for (const point &q : pts) px.push_back(q.i);
    return px;
}

// anvil's handle with one packed copy of the weights.
struct anvil_conv {
    anvil_conv2d_t h = nullptr;
    buffer packed;
    const attr_data *ad = nullptr;
    std::string where;  // the call that failed
    anvil_conv() = default;
    anvil_conv(const anvil_conv &) = delete;
    anvil_conv &operator=(const anvil_conv &) = delete;
    ~anvil_conv() {
        if (h) anvil_conv2d_destroy(h);
    }
    anvil_status_t init(const conv_data &cd, const attr_spec &a, const attr_data &data) {
        ad = &data;
        anvil_conv2d_desc_t d{};
        anvil::conv::fill_conv_desc(cd.s, &d);
        d.src_dt = cd.t.src;
        d.wei_dt = cd.t.wei;
        d.dst_dt = cd.t.dst;
        d.src_zero_point = a.zp_src;
        d.dst_zero_point = a.zp_dst;
        d.scales = data.scales.empty() ? nullptr : data.scales.data();
        d.scales_per_oc = a.scale_mode == 2;
        d.num_post_ops = int(data.ops.size());
        d.post_ops = data.ops.empty() ? nullptr : data.ops.data();
        where = "anvil_conv2d_create";
        anvil_status_t st = anvil_conv2d_create(&h, &d);
        if (st != anvil_success) {
            h = nullptr;
            return st;
        }
        size_t bytes = 0;
        where = "anvil_conv2d_packed_weights_size";
        if ((st = anvil_conv2d_packed_weights_size(h, &bytes)) != anvil_success) return st;
        packed = buffer(std::max<size_t>(bytes, 64));
        if (!packed.ok()) return anvil_out_of_memory;
        where = "anvil_conv2d_pack_weights";
        st = anvil_conv2d_pack_weights(h, cd.wei.data(), cd.layout, packed.data());
        where = "anvil_conv2d_execute";
        return st;
    }
    anvil_status_t run(const void *src, void *dst) const {
        return anvil_conv2d_execute(h, src, packed.data(), ad->bias.empty() ? nullptr : ad->bias.data(),
                                    dst, ad->bin_ptrs.empty() ? nullptr : ad->bin_ptrs.data());
    }
};


std::string elem_text(const char *who, const conv_shape &s, int64_t px, int64_t oc, double got,
                      const chain_value &v, bool dnnl) {
    const int64_t n = px / (s.oh * s.ow), oh = px / s.ow % s.oh, ow = px % s.ow;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "%s dst(n=%lld,oh=%lld,ow=%lld,oc=%lld)=%.9g want %.9g (chain value %.9g, bound %.3g)",
                  who, (long long)n, (long long)oh, (long long)ow, (long long)oc, got, v.want, v.x,
                  dnnl ? v.err_dnnl : v.err_anvil);
    return buf;
}

struct point_check {
    int64_t checked = 0, bad = 0;
    double max_err = 0;  // max |got - want|
    std::string first;
};

point_check check_points(const conv_reference &ref, const conv_shape &s,
                         const std::vector<point> &pts, const std::vector<chain_value> &want,
                         anvil_data_type_t dst, const void *C, bool dnnl) {
    point_check r;
    for (size_t n = 0; n < pts.size(); ++n) {
        const double got = load_elem(dst, C, pts[n].i * s.oc + pts[n].j);
        ++r.checked;
        const double e = std::fabs(got - want[n].want);
        if (std::isnan(e)) r.max_err = e;
        else if (!std::isnan(r.max_err)) r.max_err = std::max(r.max_err, e);
        if (!ref.accepts(want[n], got, dnnl) && r.bad++ == 0)
            r.first = elem_text(dnnl ? "oneDNN" : "anvil", s, pts[n].i, pts[n].j, got, want[n], dnnl);
    }
    return r;
}

// The timing harness's check of one output: the chosen points only.
bool points_ok(const conv_reference &ref, const conv_shape &s, const std::vector<point> &pts,
               const std::vector<chain_value> &want, anvil_data_type_t dst, const void *C,
               bool dnnl, std::string *why) {
    const point_check pc = check_points(ref, s, pts, want, dst, C, dnnl);
    if (pc.bad) *why = std::to_string(pc.bad) + " bad points; first: " + pc.first;
    return pc.bad == 0;
}

std::vector<chain_value> chain_at(const conv_reference &ref, const std::vector<point> &pts) {
    std::vector<chain_value> v;
    v.reserve(pts.size());
    for (const point &q : pts) v.push_back(ref.at(q.i, q.j));
    return v;
}

// ------------------------------------------------------------------- results

struct conv_result {
    conv_problem p;
    std::string status, detail;
    double max_err_ref = 0, max_diff_peer = -1;  // check; -1: not compared
    bool timed = false;
    double t_anvil = 0, t_peer = 0, spread_anvil = 0, spread_peer = 0;
    std::vector<double> trials_anvil, trials_peer;  // seconds per trial
    std::string peer_impl;
    bool has_peer = false;
};

struct conv_stack {
    std::string batch;
    int64_t mb = 0;  // of its first layer
    int layers = 0;
    int64_t instances = 0;
    double t_anvil = 0, t_peer = 0, flop = 0;
    double geomean_ratio = 0, min_ratio = 0;
    std::string min_layer;
    int missing = 0;  // layers without both timings
};

struct conv_run {
    const options &o;
    conv_types t;
    attr_spec a;
    anvil_conv_weights_layout_t layout = anvil_conv_weights_oihw;
    int threads = 1;
    std::string isa;
    double peak = 0;
    std::FILE *text = stdout;
};

const char *unit_of(const conv_types &t) { return t.int8() ? "GOP/s" : "GFLOP/s"; }

conv_result &finish(conv_result &r, const char *status, const std::string &detail) {
    r.status = status;
    r.detail = detail;
    return r;
}

// The operands and both outputs (anvil's Ca, the peer's Cd, pre-filled with
// a byte pattern) of one problem; false when memory runs out.
struct conv_case {
    conv_data cd;
    attr_data ad;
    buffer Ca, Cd;
    int64_t nC = 0;
    // full_ld: the row stride of full binary operands.
    bool init(const conv_run &run, const conv_shape &s, const gemm_problem &gp,
              uint64_t data_seed, int64_t full_ld, uint64_t attr_seed) {
        nC = gp.M * s.oc;
        const int64_t cb = dt_bytes(run.t.dst);
        const bool mem = cd.init(s, run.t, run.layout, data_seed) &&
                         ad.init(run.a, gp, full_ld, attr_seed);
        Ca = buffer(size_t(nC * cb));
        Cd = buffer(size_t(nC * cb));
        if (!mem || !Ca.ok() || !Cd.ok()) return false;
        ad.reset_output(Ca);
        ad.reset_output(Cd);
        return true;
    }
};

// ---------------------------------------------------------------- check mode

conv_result check_one(const conv_run &run, const conv_problem &cp, uint64_t seed) {
    const options &o = run.o;
    const attr_spec &a = run.a;
    const conv_shape &s = cp.s;
    conv_result r;
    r.p = cp;
    const gemm_problem gp = gemm_view(s);
    conv_case c;
    // Full binary operands get a row stride of OC + 3 here.
    if (!c.init(run, s, gp, seed, s.oc + 3, seed)) return finish(r, "ERROR", "out of memory");
    const conv_data &cd = c.cd;
    const attr_data &ad = c.ad;
    const buffer &Ca = c.Ca, &Cd = c.Cd;
    const int64_t nC = c.nC;
    anvil_conv ac;
    anvil_status_t st = ac.init(cd, a, ad);
    if (st == anvil_success) st = ac.run(cd.src.data(), Ca.data());
    if (st != anvil_success) return finish(r, "FAIL", ac.where + ": " + anvil_status_str(st));
    const std::vector<point> pts = choose_points(gp, o.check_points, double(1 << 26), seed);
    const conv_reference ref(cd, a, ad, pixels_of(pts));
    if (!ref.ok()) return finish(r, "ERROR", "out of memory (reference)");
    const std::vector<chain_value> want = chain_at(ref, pts);
    const point_check pa = check_points(ref, s, pts, want, run.t.dst, Ca.data(), false);
    r.max_err_ref = pa.max_err;
    bool ok = pa.bad == 0;
    const std::string data = run.t.int8() ? (cd.full_range ? "full-range" : "7-bit") : "ints";
    const std::string how = ref.exact_chain() ? "exact" : "within bounds";
    std::string detail = "anvil[" + data + "] vs reference " +
                         (ok ? "ok (" + how + ", " + std::to_string(pa.checked) + " pts)"
                             : "WRONG (" + std::to_string(pa.bad) + " of " +
                                   std::to_string(pa.checked) + " pts; first: " + pa.first + ")");
    if (o.vs == "onednn") {
        onednn_conv dc;
        std::string err;
        if (!dc.init(run.t, s, run.layout, cd.src.data(), cd.wei.data(), Cd.data(), a, ad, &err)) {
            detail += "; " + err + " -- not compared";
        } else {
            dc.execute();
            r.peer_impl = dc.impl();
            r.has_peer = true;
            const std::string peer = "oneDNN [" + dc.impl() + "]";
            const point_check pd = check_points(ref, s, pts, want, run.t.dst, Cd.data(), true);
            if (pd.bad) {  // a wrong peer says nothing about anvil
                detail += "; " + peer + " WRONG vs reference (" + std::to_string(pd.bad) + " of " +
                          std::to_string(pd.checked) + " pts; first: " + pd.first +
                          "), not compared";
            } else {
                // Every element: equal bits, or (a sample of the others) both
                // within their bounds of the reference.
                int64_t diff = 0;
                double maxd = 0;
                for (int64_t e = 0; e < nC; ++e) {
                    const double x = load_elem(run.t.dst, Ca.data(), e);
                    const double y = load_elem(run.t.dst, Cd.data(), e);
                    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
                    ++diff;
                    const double dxy = std::fabs(x - y);
                    maxd = std::isnan(dxy) || std::isnan(maxd) ? NAN : std::max(maxd, dxy);
                }
                r.max_diff_peer = maxd;
                std::string counts = std::to_string(nC) + " elems: " + std::to_string(nC - diff) +
                                     " equal";
                if (diff) {
                    const int64_t cap = 1024, stride = (diff + cap - 1) / cap;
                    std::vector<point> mis;
                    int64_t seen = 0;
                    for (int64_t e = 0; e < nC; ++e) {
                        const double x = load_elem(run.t.dst, Ca.data(), e);
                        const double y = load_elem(run.t.dst, Cd.data(), e);
                        if (x == y || (std::isnan(x) && std::isnan(y))) continue;
                        if (seen++ % stride == 0) mis.push_back({e / s.oc, e % s.oc});
                    }
                    const conv_reference mref(cd, a, ad, pixels_of(mis));
                    int64_t within = 0, ties = 0, bad_a = 0, bad_d = 0;
                    std::string first_a, first_d;
                    for (const point &q : mis) {
                        const double x = load_elem(run.t.dst, Ca.data(), q.i * s.oc + q.j);
                        const double y = load_elem(run.t.dst, Cd.data(), q.i * s.oc + q.j);
                        const chain_value v = mref.at(q.i, q.j);
                        const bool oa = mref.accepts(v, x, false), od = mref.accepts(v, y, true);
                        if (!oa && bad_a++ == 0)
                            first_a = elem_text("anvil", s, q.i, q.j, x, v, false) + ", oneDNN " +
                                      std::to_string(y);
                        if (!od && bad_d++ == 0) first_d = elem_text("oneDNN", s, q.i, q.j, y, v, true);
                        if (oa && od) {
                            ++within;
                            if (v.err_dnnl == 0 && std::fabs(v.x - std::floor(v.x) - 0.5) == 0) ++ties;
                        }
                    }
                    counts += ", " + std::to_string(diff) + " differ (" +
                              (stride > 1 ? std::to_string(mis.size()) + " sampled: " : "") +
                              std::to_string(within) + " within bounds" +
                              (ties ? ", " + std::to_string(ties) + " .5 ties 1 off" : "") + ")";
                    if (bad_a) {
                        ok = false;
                        detail += "; anvil vs " + peer + " MISMATCH (" + std::to_string(bad_a) +
                                  " elems outside anvil's bound; first: " + first_a + ")";
                    } else if (bad_d) {
                        detail += "; " + peer + " off (" + std::to_string(bad_d) +
                                  " elems outside oneDNN's bound; first: " + first_d + "; " +
                                  counts + ")";
                    } else {
                        detail += "; " + peer + " ok (" + counts + ")";
                    }
                } else {
                    detail += "; " + peer + " ok (" + counts + ")";
                }
            }
        }
    }
    r.status = ok ? "PASS" : "FAIL";
    r.detail = detail;
    return r;
}

// ----------------------------------------------------------------- perf mode

conv_result perf_one(const conv_run &run, const conv_problem &cp, uint64_t seed) {
    const options &o = run.o;
    const attr_spec &a = run.a;
    const conv_shape &s = cp.s;
    conv_result r;
    r.p = cp;
    const gemm_problem gp = gemm_view(s);
    conv_case c;
    if (!c.init(run, s, gp, seed * 7919 + 1, s.oc, seed)) return finish(r, "ERROR", "out of memory");
    const conv_data &cd = c.cd;
    const attr_data &ad = c.ad;
    buffer &Ca = c.Ca, &Cd = c.Cd;
    anvil_conv ac;
    const anvil_status_t st = ac.init(cd, a, ad);
    if (st != anvil_success) return finish(r, "ERROR", ac.where + ": " + anvil_status_str(st));
    const std::vector<point> pts = choose_points(gp, o.perf_points, 0.0, seed);
    const conv_reference ref(cd, a, ad, pixels_of(pts));
    if (!ref.ok()) return finish(r, "ERROR", "out of memory (reference)");
    const std::vector<chain_value> want = chain_at(ref, pts);
    const anvil_data_type_t dst = run.t.dst;

    std::vector<contestant> cs;
    anvil_status_t err = anvil_success;
    {
        const anvil_conv *ap = &ac;
        const void *src = cd.src.data();
        void *out = Ca.data();
        buffer *cp = &Ca;
        const attr_data *adp = &ad;
        anvil_status_t *ep = &err;
        const conv_reference *rp = &ref;
        const std::vector<point> *pp = &pts;
        const std::vector<chain_value> *wp = &want;
        cs.push_back({"anvil_conv2d",
                      [ap, src, out, ep](int64_t) {
                          const anvil_status_t s2 = ap->run(src, out);
                          if (s2 != anvil_success && *ep == anvil_success) *ep = s2;
                      },
                      [=](int64_t, std::string *why) {
                          if (adp->has_sum) {  // the timed calls accumulated: one call from dst_old
                              adp->reset_output(*cp);
                              const anvil_status_t s3 = ap->run(src, out);
                              if (s3 != anvil_success && *ep == anvil_success) *ep = s3;
                          }
                          if (*ep != anvil_success) {
                              *why = std::string("returned ") + anvil_status_str(*ep);
                              return false;
                          }
                          return points_ok(*rp, s, *pp, *wp, dst, out, false, why);
                      }});
    }
    onednn_conv dc;
    std::string notes;
    if (o.vs == "onednn") {
        std::string e;
        if (dc.init(run.t, s, run.layout, cd.src.data(), cd.wei.data(), Cd.data(), a, ad, &e)) {
            onednn_conv *dp = &dc;
            const void *out = Cd.data();
            buffer *cp = &Cd;
            const attr_data *adp = &ad;
            const conv_reference *rp = &ref;
            const std::vector<point> *pp = &pts;
            const std::vector<chain_value> *wp = &want;
            cs.push_back({"onednn_conv", [dp](int64_t) { dp->execute(); },
                          [=](int64_t, std::string *why) {
                              if (adp->has_sum) {  // the timed calls accumulated: one call from dst_old
                                  adp->reset_output(*cp);
                                  dp->execute();
                              }
                              return points_ok(*rp, s, *pp, *wp, dst, out, true, why);
                          }});
            r.has_peer = true;
            r.peer_impl = dc.impl();
        } else {
            notes = e + "; ";
        }
    }
    timing_options to;
    to.trials = 2 * anvil::conv::conv_macs(s) >= o.big_gflop * 1e9 ? o.trials_big : o.trials;
    to.min_trial_s = o.min_trial_s;
    const std::vector<timing_result> tr = run_alternating(cs, to);
    r.timed = true;
    r.t_anvil = tr[0].best_s;
    r.spread_anvil = tr[0].spread;
    r.trials_anvil = tr[0].trial_median_s;
    std::string detail;
    bool ok = tr[0].verified;
    if (!ok) detail += "anvil WRONG: " + tr[0].why + "; ";
    if (r.has_peer) {
        r.t_peer = tr[1].best_s;
        r.spread_peer = tr[1].spread;
        r.trials_peer = tr[1].trial_median_s;
        if (!tr[1].verified) detail += "oneDNN WRONG: " + tr[1].why + "; ";
    }
    if (run.t.int8() && !cd.full_range) detail += "7-bit data (no VNNI); ";
    detail += notes;
    if (detail.size() >= 2) detail.resize(detail.size() - 2);
    r.status = ok ? "PASS" : "FAIL";
    r.detail = detail;
    return r;
}

// -------------------------------------------------------------------- output

std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (c == '\n') o += "\\n";
        else if (static_cast<unsigned char>(c) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else o += c;
    }
    return o + "\"";
}

std::string num(double v, const char *fmt = "%.4f") {
    if (!std::isfinite(v)) return "";
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}

double gflops(const conv_shape &s, double t) { return t > 0 ? 2e-9 * anvil::conv::conv_macs(s) / t : 0; }

void text_row(const conv_run &run, const conv_result &r) {
    std::FILE *f = run.text;
    const conv_shape &s = r.p.s;
    std::fprintf(f, "%-5s %s %s%s%s%s%s T=%d %s: ", r.status.c_str(), run.t.name.c_str(),
                 anvil::conv::format_conv_descriptor(s).c_str(), run.a.str().empty() ? "" : " [",
                 run.a.str().c_str(), "]", run.layout == anvil_conv_weights_hwio ? " hwio" : "",
                 run.threads, run.isa.c_str());
    if (r.timed) {
        const double ga = gflops(s, r.t_anvil);
        std::fprintf(f, "anvil %9.4f ms %8.2f %s (", 1e3 * r.t_anvil, ga, unit_of(run.t));
        if (run.peak > 0) std::fprintf(f, "%5.1f%% peak, ", 100 * ga / run.peak);
        std::fprintf(f, "spread %4.1f%%)", 100 * r.spread_anvil);
        if (r.has_peer)
            std::fprintf(f, " | oneDNN [%s] %9.4f ms %8.2f (spread %4.1f%%) | ratio %.2f",
                         r.peer_impl.c_str(), 1e3 * r.t_peer, gflops(s, r.t_peer),
                         100 * r.spread_peer, r.t_peer / r.t_anvil);
        if (!r.detail.empty()) std::fprintf(f, "\n      %s", r.detail.c_str());
    } else if (r.status == "PASS" || r.status == "FAIL") {
        std::fprintf(f, "max|anvil-ref| %s", num(r.max_err_ref, "%.3g").c_str());
        if (r.max_diff_peer >= 0 || std::isnan(r.max_diff_peer))
            std::fprintf(f, ", max|anvil-oneDNN| %s", num(r.max_diff_peer, "%.3g").c_str());
        std::fprintf(f, " | %s", r.detail.c_str());
    } else {
        std::fprintf(f, "%s", r.detail.c_str());
    }
    std::fputc('\n', f);
    std::fflush(f);
}

const char *kCsvHeader =
    "op,dt,desc,name,mult,source,mb,g,ic,ih,iw,oc,oh,ow,kh,kw,sh,sw,pt,pl,pb,pr,dh,dw,wei_layout,"
    "threads,isa,attrs,status,gflop,anvil_ms,anvil_gflops,anvil_spread_pct,pct_peak,peer_impl,"
    "peer_ms,peer_gflops,peer_spread_pct,peer_pct_peak,ratio,max_err_ref,max_diff_peer,"
    "geomean_ratio,min_ratio,min_layer,layers,instances,detail\n";

void csv_row(std::FILE *f, const conv_run &run, const conv_result &r) {
    const conv_shape &s = r.p.s;
    const double ga = gflops(s, r.t_anvil), gd = gflops(s, r.t_peer);
    const bool t = r.timed, p = r.timed && r.has_peer;
    std::vector<std::string> c = {
        "conv", run.t.name, csv_field(anvil::conv::format_conv_descriptor(s)), csv_field(s.name),
        std::to_string(r.p.mult), csv_field(r.p.source)};
    for (int64_t v : {s.mb, s.g, s.ic, s.ih, s.iw, s.oc, s.oh, s.ow, s.kh, s.kw, s.sh, s.sw, s.pt,
                      s.pl, s.pb, s.pr, s.dh, s.dw})
        c.push_back(std::to_string(v));
    c.insert(c.end(),
             {run.layout == anvil_conv_weights_hwio ? "hwio" : "oihw", std::to_string(run.threads),
              run.isa, csv_field(run.a.str()), r.status,
              num(2e-9 * anvil::conv::conv_macs(s), "%.6f"), t ? num(1e3 * r.t_anvil) : "",
              t ? num(ga, "%.2f") : "", t ? num(100 * r.spread_anvil, "%.2f") : "",
              t && run.peak > 0 ? num(100 * ga / run.peak, "%.2f") : "", csv_field(r.peer_impl),
              p ? num(1e3 * r.t_peer) : "", p ? num(gd, "%.2f") : "",
              p ? num(100 * r.spread_peer, "%.2f") : "",
              p && run.peak > 0 ? num(100 * gd / run.peak, "%.2f") : "",
              p ? num(r.t_peer / r.t_anvil) : "", t ? "" : num(r.max_err_ref, "%.6g"),
              t || r.max_diff_peer < 0 ? "" : num(r.max_diff_peer, "%.6g"), "", "", "", "", "",
              csv_field(r.detail)});
    std::string line;
    for (size_t i = 0; i < c.size(); ++i) line += (i ? "," : "") + c[i];
    std::fprintf(f, "%s\n", line.c_str());
    std::fflush(f);
}

void csv_stack(std::FILE *f, const conv_run &run, const conv_stack &st) {
    const double ga = st.t_anvil > 0 ? 1e-9 * st.flop / st.t_anvil : 0;
    const double gd = st.t_peer > 0 ? 1e-9 * st.flop / st.t_peer : 0;
    const bool p = st.t_peer > 0;
    std::vector<std::string> c = {"conv_stack", run.t.name, "", csv_field(st.batch), "", csv_field(st.batch)};
    c.push_back(std::to_string(st.mb));  // mb; the other shape columns stay empty
    for (int k = 0; k < 17; ++k) c.push_back("");
    c.insert(c.end(),
             {run.layout == anvil_conv_weights_hwio ? "hwio" : "oihw", std::to_string(run.threads),
              run.isa, csv_field(run.a.str()), st.missing ? "INCOMPLETE" : "PASS",
              num(1e-9 * st.flop, "%.6f"), num(1e3 * st.t_anvil), num(ga, "%.2f"), "",
              run.peak > 0 ? num(100 * ga / run.peak, "%.2f") : "", "", p ? num(1e3 * st.t_peer) : "",
              p ? num(gd, "%.2f") : "", "", p && run.peak > 0 ? num(100 * gd / run.peak, "%.2f") : "",
              p ? num(st.t_peer / st.t_anvil) : "", "", "", p ? num(st.geomean_ratio) : "",
              p ? num(st.min_ratio) : "", csv_field(st.min_layer), std::to_string(st.layers),
              std::to_string(st.instances),
              st.missing ? std::to_string(st.missing) + " layer(s) without both timings" : ""});
    std::string line;
    for (size_t i = 0; i < c.size(); ++i) line += (i ? "," : "") + c[i];
    std::fprintf(f, "%s\n", line.c_str());
    std::fflush(f);
}

std::vector<conv_stack> make_stacks(const std::vector<std::string> &batches,
                                    const std::vector<conv_result> &rs) {
    std::vector<conv_stack> out;
    for (size_t b = 0; b < batches.size(); ++b) {
        conv_stack st;
        st.batch = base_name(batches[b]);
        double log_sum = 0;
        int n_ratio = 0;
        for (const conv_result &r : rs) {
            if (r.p.batch != int(b)) continue;
            if (st.layers++ == 0) st.mb = r.p.s.mb;
            st.instances += r.p.mult;
            if (!r.timed || !r.has_peer || r.t_anvil <= 0 || r.t_peer <= 0) {
                ++st.missing;
                if (r.timed && r.t_anvil > 0) {  // anvil alone still counts for its total
                    st.t_anvil += r.t_anvil * double(r.p.mult);
                    st.flop += 2.0 * anvil::conv::conv_macs(r.p.s) * double(r.p.mult);
                }
                continue;
            }
            st.t_anvil += r.t_anvil * double(r.p.mult);
            st.t_peer += r.t_peer * double(r.p.mult);
            st.flop += 2.0 * anvil::conv::conv_macs(r.p.s) * double(r.p.mult);
            const double ratio = r.t_peer / r.t_anvil;
            log_sum += std::log(ratio);
            ++n_ratio;
            if (n_ratio == 1 || ratio < st.min_ratio) {
                st.min_ratio = ratio;
                st.min_layer = r.p.s.name.empty() ? anvil::conv::format_conv_descriptor(r.p.s)
                                                  : r.p.s.name;
            }
        }
        if (st.missing) st.t_peer = 0;  // totals are only comparable when complete
        st.geomean_ratio = n_ratio ? std::exp(log_sum / n_ratio) : 0;
        if (st.layers) out.push_back(st);
    }
    return out;
}

void text_stack(const conv_run &run, const conv_stack &st) {
    std::FILE *f = run.text;
    const double ga = st.t_anvil > 0 ? 1e-9 * st.flop / st.t_anvil : 0;
    std::fprintf(f, "stack %s %s mb%lld T=%d: %d layers (%lld in the model), %.3f %s per pass | "
                    "anvil %.3f ms %.2f %s",
                 st.batch.c_str(), run.t.name.c_str(), (long long)st.mb, run.threads, st.layers,
                 (long long)st.instances, 1e-9 * st.flop, run.t.int8() ? "GOP" : "GFLOP",
                 1e3 * st.t_anvil, ga, unit_of(run.t));
    if (run.peak > 0) std::fprintf(f, " (%.1f%% peak)", 100 * ga / run.peak);
    if (st.t_peer > 0)
        std::fprintf(f, " | oneDNN %.3f ms %.2f | ratio %.2f | layer ratios: geomean %.2f, min %.2f (%s)",
                     1e3 * st.t_peer, 1e-9 * st.flop / st.t_peer, st.t_peer / st.t_anvil,
                     st.geomean_ratio, st.min_ratio, st.min_layer.c_str());
    else if (st.missing)
        std::fprintf(f, " | %d layer(s) without both timings: no oneDNN total", st.missing);
    std::fputc('\n', f);
    std::fflush(f);
}

void json_out(std::FILE *f, const conv_run &run, const run_info &info,
              const std::vector<conv_result> &rs, const std::vector<conv_stack> &stacks,
              int failures, const std::vector<skipped_line> &skipped) {
    std::fprintf(f, "{\n  \"tool\": \"anvil-bench\", \"op\": \"conv\",\n");
    std::fprintf(f, "  \"anvil_version\": %s, \"onednn_version\": %s,\n",
                 json_str(info.anvil_version).c_str(), json_str(info.onednn_version).c_str());
    std::fprintf(f, "  \"cpu\": %s, \"features\": %s,\n", json_str(info.cpu).c_str(),
                 json_str(info.features).c_str());
    std::fprintf(f, "  \"mode\": %s, \"dt\": %s, \"unit\": %s, \"threads\": %d, \"isa\": %s,\n",
                 json_str(info.mode).c_str(), json_str(run.t.name).c_str(),
                 json_str(unit_of(run.t)).c_str(), run.threads, json_str(run.isa).c_str());
    std::fprintf(f, "  \"attrs\": %s, \"wei_layout\": %s,\n", json_str(run.a.str()).c_str(),
                 json_str(run.layout == anvil_conv_weights_hwio ? "hwio" : "oihw").c_str());
    std::fprintf(f, "  \"peak_probe\": %s, \"peak_gflops\": %s,\n", json_str(info.peak_probe).c_str(),
                 run.peak > 0 ? num(run.peak, "%.2f").c_str() : "null");
    std::fprintf(f, "  \"pinned\": %s, \"affinity\": %s,\n  \"failures\": %d,\n  \"skipped\": [",
                 info.pinned ? "true" : "false", json_str(info.affinity).c_str(), failures);
    for (size_t i = 0; i < skipped.size(); ++i)
        std::fprintf(f, "%s\n    {\"where\": %s, \"text\": %s, \"reason\": %s}", i ? "," : "",
                     json_str(skipped[i].where).c_str(), json_str(skipped[i].text).c_str(),
                     json_str(skipped[i].reason).c_str());
    std::fprintf(f, "%s],\n  \"results\": [", skipped.empty() ? "" : "\n  ");
    auto list = [](const std::vector<double> &v) {
        std::string s = "[";
        for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + num(1e3 * v[k], "%.5f");
        return s + "]";
    };
    auto jnum = [](double v, const char *fmt) {
        const std::string s = num(v, fmt);
        return s.empty() ? std::string("null") : s;
    };
    for (size_t i = 0; i < rs.size(); ++i) {
        const conv_result &r = rs[i];
        const conv_shape &s = r.p.s;
        std::fprintf(f, "%s\n    {\"desc\": %s, \"name\": %s, \"mult\": %lld, \"source\": %s, ",
                     i ? "," : "", json_str(anvil::conv::format_conv_descriptor(s)).c_str(),
                     json_str(s.name).c_str(), (long long)r.p.mult, json_str(r.p.source).c_str());
        std::fprintf(f, "\"gflop\": %s, \"status\": %s, \"detail\": %s",
                     jnum(2e-9 * anvil::conv::conv_macs(s), "%.6f").c_str(),
                     json_str(r.status).c_str(), json_str(r.detail).c_str());
        if (!r.timed && (r.status == "PASS" || r.status == "FAIL")) {
            std::fprintf(f, ", \"max_err_ref\": %s", jnum(r.max_err_ref, "%.6g").c_str());
            if (r.max_diff_peer >= 0 || std::isnan(r.max_diff_peer))
                std::fprintf(f, ", \"max_diff_peer\": %s", jnum(r.max_diff_peer, "%.6g").c_str());
        }
        if (r.timed) {
            std::fprintf(f, ",\n     \"anvil_ms\": %s, \"anvil_gflops\": %s, \"anvil_spread\": %s, "
                            "\"anvil_trials_ms\": %s",
                         jnum(1e3 * r.t_anvil, "%.5f").c_str(), jnum(gflops(s, r.t_anvil), "%.3f").c_str(),
                         jnum(r.spread_anvil, "%.4f").c_str(), list(r.trials_anvil).c_str());
            if (run.peak > 0)
                std::fprintf(f, ", \"pct_peak\": %s", jnum(100 * gflops(s, r.t_anvil) / run.peak, "%.2f").c_str());
            if (r.has_peer)
                std::fprintf(f, ",\n     \"peer_impl\": %s, \"peer_ms\": %s, \"peer_gflops\": %s, "
                                "\"peer_spread\": %s, \"peer_trials_ms\": %s, \"ratio\": %s",
                             json_str(r.peer_impl).c_str(), jnum(1e3 * r.t_peer, "%.5f").c_str(),
                             jnum(gflops(s, r.t_peer), "%.3f").c_str(), jnum(r.spread_peer, "%.4f").c_str(),
                             list(r.trials_peer).c_str(), jnum(r.t_peer / r.t_anvil, "%.4f").c_str());
        }
        std::fprintf(f, "}");
    }
    std::fprintf(f, "%s],\n  \"stacks\": [", rs.empty() ? "" : "\n  ");
    for (size_t i = 0; i < stacks.size(); ++i) {
        const conv_stack &st = stacks[i];
        std::fprintf(f, "%s\n    {\"batch\": %s, \"mb\": %lld, \"layers\": %d, \"instances\": %lld, \"gflop\": %s, "
                        "\"anvil_ms\": %s, \"anvil_gflops\": %s, \"missing\": %d",
                     i ? "," : "", json_str(st.batch).c_str(), (long long)st.mb, st.layers, (long long)st.instances,
                     jnum(1e-9 * st.flop, "%.6f").c_str(), jnum(1e3 * st.t_anvil, "%.5f").c_str(),
                     jnum(st.t_anvil > 0 ? 1e-9 * st.flop / st.t_anvil : 0, "%.3f").c_str(), st.missing);
        if (st.t_peer > 0)
            std::fprintf(f, ", \"peer_ms\": %s, \"peer_gflops\": %s, \"ratio\": %s, "
                            "\"geomean_ratio\": %s, \"min_ratio\": %s, \"min_layer\": %s",
                         jnum(1e3 * st.t_peer, "%.5f").c_str(), jnum(1e-9 * st.flop / st.t_peer, "%.3f").c_str(),
                         jnum(st.t_peer / st.t_anvil, "%.4f").c_str(), jnum(st.geomean_ratio, "%.4f").c_str(),
                         jnum(st.min_ratio, "%.4f").c_str(), json_str(st.min_layer).c_str());
        std::fprintf(f, "}");
    }
    std::fprintf(f, "%s]\n}\n", stacks.empty() ? "" : "\n  ");
    std::fflush(f);
}

bool parse_type(const std::string &s, size_t *at, anvil_data_type_t *t) {
    for (anvil_data_type_t c : {anvil_dt_bf16, anvil_dt_f32, anvil_dt_s32, anvil_dt_u8, anvil_dt_s8}) {
        const std::string n = dt_name(c);
        if (s.compare(*at, n.size(), n) == 0) {
            *t = c;
            *at += n.size();
            if (*at < s.size() && s[*at] == ':') ++*at;
            return true;
        }
    }
    return false;
}

}  // namespace

bool parse_conv_dt(const std::string &s, conv_types *t, std::string *err) {
    conv_types r;
    const std::string usage = "--dt " + s +
                              ": expected f32, bf16 or a src/weights/dst triple such as u8s8u8, "
                              "u8s8f32, s8s8s8, u8s8s32, bf16bf16f32";
    if (s == "f32" || s == "bf16") {
        r.src = r.wei = r.dst = s == "f32" ? anvil_dt_f32 : anvil_dt_bf16;
    } else {
        size_t at = 0;
        if (!parse_type(s, &at, &r.src) || !parse_type(s, &at, &r.wei) ||
            !parse_type(s, &at, &r.dst) || at != s.size()) {
            *err = usage;
            return false;
        }
    }
    const bool f32 = r.src == anvil_dt_f32 && r.wei == anvil_dt_f32 && r.dst == anvil_dt_f32;
    const bool bf16 = r.src == anvil_dt_bf16 && r.wei == anvil_dt_bf16 &&
                      (r.dst == anvil_dt_f32 || r.dst == anvil_dt_bf16);
    const bool int8 = (r.src == anvil_dt_u8 || r.src == anvil_dt_s8) && r.wei == anvil_dt_s8;
    if (!f32 && !bf16 && !int8) {
        *err = "--dt " + s +
               ": not an anvil convolution type (f32 x f32 -> f32; bf16 x bf16 -> f32 | bf16; "
               "u8 | s8 x s8 -> f32 | s32 | bf16 | u8 | s8)";
        return false;
    }
    r.name = s == "f32" || s == "bf16"
                 ? s
                 : std::string(dt_name(r.src)) + dt_name(r.wei) + dt_name(r.dst);
    *t = r;
    return true;
}

int run_conv(const options &o, int threads, bool pinned, const std::string &affinity,
             int allowed_cpus, int online_cpus) {
    conv_run run{o, {}, {}, anvil_conv_weights_oihw, threads, {}, 0, stdout};
    std::string err;
    auto usage_error = [&](const std::string &e) {
        std::fprintf(stderr, "anvil-bench: %s (see anvil-bench --help)\n", e.c_str());
        return 2;
    };
    if (!parse_conv_dt(o.dt, &run.t, &err)) return usage_error(err);
    run.layout = o.wei_layout == "hwio" ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
    // Attributes: the matmul grammar; the output type is part of --dt.
    attr_spec &a = run.a;
    a.dst = run.t.dst;
    a.dst_set = true;
    if (!parse_post_ops(o.post_ops, &a.ops, &err)) return usage_error("--attr-post-ops: " + err);
    a.post_ops_text = o.post_ops;
    if (!o.scales.empty() && !parse_scales(o.scales, &a.scale_mode, &a.scale, &err))
        return usage_error(err);
    if (!o.zero_points.empty() &&
        !parse_zero_points(o.zero_points, &a.zp_src, &a.zp_wei, &a.zp_dst, &err))
        return usage_error(err);
    a.bias = o.bias;
    if (a.zp_wei) return usage_error("--attr-zero-points: anvil's convolution has no weights zero point");
    const lowp_dt ldt = !run.t.int8() ? lowp_dt::bf16
                        : run.t.src == anvil_dt_u8 ? lowp_dt::u8s8s32 : lowp_dt::s8s8s32;
    err = validate_attr(ldt, a);
    if (!err.empty()) return usage_error(err);

    std::vector<conv_problem> problems;
    std::vector<skipped_line> skipped;
    for (const std::string &d : o.shapes) {
        conv_problem p;
        if (!anvil::conv::parse_conv_descriptor(d, &p.s, &err)) return usage_error(err);
        if (o.mb > 0) p.s.mb = o.mb;
        p.mult = multiplicity(p.s.name);
        p.source = "argument";
        problems.push_back(p);
    }
    for (size_t b = 0; b < o.batches.size(); ++b)
        if (!load_conv_batch(o.batches[b], int(b), o.mb, &problems, &skipped)) {
            std::fprintf(stderr, "anvil-bench: cannot read batch file %s\n", o.batches[b].c_str());
            return 2;
        }

    run.isa = anvil_isa_name(anvil_get_effective_isa());
    run_info info;
    info.anvil_version = anvil_version();
    info.onednn_version = onednn_version();
    info.cpu = anvil::cpu::info().brand;
    info.features = anvil::cpu::features_string(anvil::cpu::info().detected);
    info.mode = o.mode == bench_mode::perf ? "perf" : "check";
    info.dt = run.t.name;
    info.threads = threads;
    info.isa = run.isa;
    info.pinned = pinned;
    info.affinity = affinity;
    if (o.mode == bench_mode::perf) {
        if (o.peak_gflops > 0) {
            run.peak = o.peak_gflops;
            info.peak_probe = "given (--peak-gflops)";
        } else if (o.probe_peak) {
            const std::string kind = run.t.int8() ? "int8" : run.t.src == anvil_dt_bf16 ? "bf16" : "";
            const peak_result pr = kind.empty() ? measure_fma_peak(threads, 0.3)
                                                : measure_lowp_peak(kind, threads, 0.3);
            run.peak = pr.gflops;
            info.peak_probe = pr.probe;
        }
        info.peak_gflops = run.peak;
    }

    std::FILE *csv = o.csv ? open_or(o.csv_path, stdout) : nullptr;
    std::FILE *json = o.json ? open_or(o.json_path, stdout) : nullptr;
    if (csv == stdout || json == stdout) run.text = stderr;
    std::FILE *t = run.text;
    if (csv) std::fputs(kCsvHeader, csv);
    std::fprintf(t, "# anvil-bench conv %s | oneDNN %s | %s\n", info.anvil_version.c_str(),
                 info.onednn_version.c_str(), info.cpu.c_str());
    std::fprintf(t, "# mode=%s dt=%s threads=%d isa=%s affinity=[%s] wei=%s%s%s\n",
                 info.mode.c_str(), run.t.name.c_str(), threads, run.isa.c_str(), affinity.c_str(),
                 run.layout == anvil_conv_weights_hwio ? "hwio" : "oihw",
                 o.mb > 0 ? (" mb=" + std::to_string(o.mb)).c_str() : "",
                 a.str() == std::string("dst=") + dt_name(run.t.dst) ? "" : (" attrs: " + a.str()).c_str());
    if (o.mode == bench_mode::perf) {
        if (run.peak > 0)
            std::fprintf(t, "# peak %.1f %s at %d thread(s) (%s)\n", run.peak, unit_of(run.t),
                         threads, info.peak_probe.c_str());
        else if (!info.peak_probe.empty())
            std::fprintf(t, "# peak %s\n", info.peak_probe.c_str());
        if (!pinned)
            std::fprintf(t,
                         "# note: not pinned (allowed CPUs %s of %d online); for stable figures "
                         "run e.g. `OMP_NUM_THREADS=1 taskset -c 0 anvil-bench conv ... --threads 1`\n",
                         affinity.c_str(), online_cpus);
        if (threads > allowed_cpus && allowed_cpus > 0)
            std::fprintf(t, "# warning: %d threads on %d allowed CPU(s)\n", threads, allowed_cpus);
    }
    if (a.bias && a.scale_mode)
        std::fprintf(t, "# note: oneDNN 2.6 adds the bias before the output scale: it gets "
                        "bias / scale (exact for power-of-two scales, else within one rounding)\n");
    for (const skipped_line &s : skipped)
        std::fprintf(t, "# skipped %s: '%s' (%s)\n", s.where.c_str(), s.text.c_str(), s.reason.c_str());
    if (!skipped.empty())
        std::fprintf(t, "# %zu line(s) skipped, %zu problem(s) to run\n", skipped.size(),
                     problems.size());

    std::vector<conv_result> results;
    int failures = 0;
    uint64_t seed = o.seed;
    for (const conv_problem &p : problems) {
        conv_result r = o.mode == bench_mode::perf ? perf_one(run, p, seed++) : check_one(run, p, seed++);
        if (r.status != "PASS") ++failures;
        text_row(run, r);
        if (csv) csv_row(csv, run, r);
        results.push_back(std::move(r));
    }
    std::vector<conv_stack> stacks;
    if (o.mode == bench_mode::perf) {
        stacks = make_stacks(o.batches, results);
        for (const conv_stack &st : stacks) {
            text_stack(run, st);
            if (csv) csv_stack(csv, run, st);
        }
    }
    if (json) json_out(json, run, info, results, stacks, failures, skipped);
    std::fprintf(t, "# %zu problem(s), %d failure(s)\n", problems.size(), failures);
    if (csv && csv != stdout) std::fclose(csv);
    if (json && json != stdout) std::fclose(json);
    return failures ? 1 : 0;
}

}  // namespace anvil_bench
