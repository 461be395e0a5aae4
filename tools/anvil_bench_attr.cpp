// anvil-bench: matmul attributes (grammar, operands, chain reference); the
// rules are in anvil_bench_attr.h.
#include "anvil_bench_attr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "anvil_bench_check.h"

namespace anvil_bench {
namespace {

uint64_t mix(uint64_t &s) {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t ival(uint64_t &s, int64_t lo, int64_t hi) {
    return lo + int64_t(mix(s) % uint64_t(hi - lo + 1));
}

std::vector<std::string> split(const std::string &s, const std::string &seps) {
    std::vector<std::string> out(1);
    for (char c : s) {
        if (seps.find(c) != std::string::npos)
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

bool to_float(const std::string &s, float *v) {
    char *end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || !end || *end != '\0' || !std::isfinite(d)) return false;
    *v = float(d);
    return std::isfinite(*v);
}

bool to_i32(const std::string &s, int32_t *v) {
    char *end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || !end || *end != '\0' || n < INT32_MIN || n > INT32_MAX) return false;
    *v = int32_t(n);
    return true;
}

std::string fnum(float v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", double(v));
    return b;
}

struct elt_name {
    const char *name;
    int alg;
};
const elt_name kElt[] = {{"relu", anvil_eltwise_relu},
                         {"leaky_relu", anvil_eltwise_leaky_relu},
                         {"clip", anvil_eltwise_clip},
                         {"gelu_tanh", anvil_eltwise_gelu_tanh},
                         {"gelu_erf", anvil_eltwise_gelu_erf},
                         {"silu", anvil_eltwise_silu},
                         {"swish", anvil_eltwise_silu},
                         {"sigmoid", anvil_eltwise_sigmoid},
                         {"logistic", anvil_eltwise_sigmoid},
                         {"tanh", anvil_eltwise_tanh}};

const char *elt_canon(int alg) {
    for (const elt_name &e : kElt)
        if (e.alg == alg) return e.name;  // the first name is the canonical one
    return "?";
}

bool transcendental(int alg) {
    return alg == anvil_eltwise_gelu_tanh || alg == anvil_eltwise_gelu_erf ||
           alg == anvil_eltwise_silu || alg == anvil_eltwise_sigmoid || alg == anvil_eltwise_tanh;
}

std::string op_text(const post_op_spec &o) {
    if (o.sum) {
        std::string t = "sum";
        if (o.alpha != 1.0f || o.beta != 0.0f) t += ":" + fnum(o.alpha);
        if (o.beta != 0.0f) t += ":" + fnum(o.beta);
        return t;
    }
    if (o.binary)
        return std::string(o.alg == anvil_binary_add ? "add" : "mul") + ":" + dt_name(o.src_dt) +
               (o.per_n ? ":per_oc" : "");
    std::string s = elt_canon(o.alg);
    if (o.alg == anvil_eltwise_leaky_relu) s += ":" + fnum(o.alpha);
    if (o.alg == anvil_eltwise_clip) s += ":" + fnum(o.alpha) + ":" + fnum(o.beta);
    return s;
}

// Round to nearest even into bf16 (8 significant bits), from a double;
// the bf16 subnormal range is not special-cased (never reached here).
double bf16_rne(double v) {
    if (v == 0 || !std::isfinite(v)) return v;
    int e = 0;
    const double m = std::frexp(v, &e);  // |m| in [0.5, 1)
    const double r = std::nearbyint(std::ldexp(m, 8));
    const double out = std::ldexp(r, e - 8);
    return std::fabs(out) > 3.3895313892515355e38 ? std::copysign(INFINITY, v) : out;
}

double int_lo(anvil_data_type_t t) {
    return t == anvil_dt_u8 ? 0.0 : t == anvil_dt_s8 ? -128.0 : -2147483648.0;
}
double int_hi(anvil_data_type_t t) {
    return t == anvil_dt_u8 ? 255.0 : t == anvil_dt_s8 ? 127.0 : 2147483647.0;
}
// mode 0: nearest even; -1: ties down; +1: ties up.  NaN -> 0, saturating.
double to_int(anvil_data_type_t t, double v, int mode) {
    if (std::isnan(v)) return 0;
    const double r = mode == 0 ? std::nearbyint(v) : mode < 0 ? std::ceil(v - 0.5) : std::floor(v + 0.5);
    return std::min(int_hi(t), std::max(int_lo(t), r));
}

// One fp32 rounding on top of a bound that is already non-zero.
double after_rounding(double err, double slope, double y) {
    if (err == 0) return 0;
    return slope * err + 0x1p-23 * (std::fabs(y) + slope * err) + 0x1p-149;
}

// The exact eltwise value at a float input (double precision, no
// cancellation), and the op's largest slope.
double eltwise_exact(int alg, double x, double alpha, double beta) {
    switch (alg) {
        case anvil_eltwise_relu: return x > 0 ? x : 0;
        case anvil_eltwise_leaky_relu: return x > 0 ? x : alpha * x;
        case anvil_eltwise_clip: return std::min(std::max(x, alpha), beta);
        case anvil_eltwise_gelu_tanh: {
            const double u2 = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
            return x / (1 + std::exp(-u2));  // 0.5 x (1 + tanh u) = x sigmoid(2u)
        }
        case anvil_eltwise_gelu_erf: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
        case anvil_eltwise_silu: return x / (1 + std::exp(-x));
        case anvil_eltwise_sigmoid: return 1 / (1 + std::exp(-x));
        case anvil_eltwise_tanh: return std::tanh(x);
    }
    return x;
}

double slope(int alg) {
    switch (alg) {
        case anvil_eltwise_gelu_tanh:
        case anvil_eltwise_gelu_erf: return 1.13;
        case anvil_eltwise_silu: return 1.1;
        case anvil_eltwise_sigmoid: return 0.25;
        default: return 1.0;
    }
}

}  // namespace

const char *dt_name(anvil_data_type_t t) {
    switch (t) {
        case anvil_dt_f32: return "f32";
        case anvil_dt_bf16: return "bf16";
        case anvil_dt_s32: return "s32";
        case anvil_dt_u8: return "u8";
        case anvil_dt_s8: return "s8";
    }
    return "?";
}

bool parse_dst(const std::string &s, anvil_data_type_t *t) {
    for (anvil_data_type_t c : {anvil_dt_f32, anvil_dt_bf16, anvil_dt_s32, anvil_dt_u8, anvil_dt_s8})
        if (s == dt_name(c)) {
            *t = c;
            return true;
        }
    return false;
}

anvil_data_type_t default_dst(lowp_dt dt) {
    return is_float(dt) ? anvil_dt_f32 : anvil_dt_s32;
}

int64_t dt_bytes(anvil_data_type_t t) {
    return t == anvil_dt_f32 || t == anvil_dt_s32 ? 4 : t == anvil_dt_bf16 ? 2 : 1;
}

double load_elem(anvil_data_type_t t, const void *p, int64_t at) {
    switch (t) {
        case anvil_dt_f32: return static_cast<const float *>(p)[at];
        case anvil_dt_bf16: return bf16_to_f32(static_cast<const uint16_t *>(p)[at]);
        case anvil_dt_s32: return static_cast<const int32_t *>(p)[at];
        case anvil_dt_u8: return static_cast<const uint8_t *>(p)[at];
        case anvil_dt_s8: return static_cast<const int8_t *>(p)[at];
    }
    return 0;
}

bool is_pow2(float v) {
    int e = 0;
    return v != 0 && std::isfinite(v) && std::fabs(std::frexp(v, &e)) == 0.5;
}

bool parse_post_ops(const std::string &s, std::vector<post_op_spec> *ops, std::string *err) {
    ops->clear();
    if (s.empty()) return true;  // "--attr-post-ops=" : none
    for (const std::string &item : split(s, "+")) {
        const std::vector<std::string> f = split(item, ":");
        const std::string &name = f[0];
        post_op_spec o;
        if (name == "add" || name == "mul") {
            o.binary = true;
            o.alg = name == "add" ? anvil_binary_add : anvil_binary_mul;
            for (size_t k = 1; k < f.size(); ++k) {
                if (f[k] == "f32") o.src_dt = anvil_dt_f32;
                else if (f[k] == "bf16") o.src_dt = anvil_dt_bf16;
                else if (f[k] == "per_oc") o.per_n = true;
                else if (f[k] == "per_tensor" || f[k] == "common") {
                    *err = "'" + item + "': the M x N tensor is the default; '" + f[k] +
                           "' (a single value) is not supported";
                    return false;
                } else {
                    *err = "'" + item + "': expected add|mul[:f32|bf16][:per_oc]";
                    return false;
                }
            }
        } else if (name == "sum") {
            o.sum = true;
            o.alpha = 1.0f;
            int32_t zp = 0;
            if (f.size() > 3 || (f.size() > 1 && (!to_float(f[1], &o.alpha) || !std::isfinite(o.alpha))) ||
                (f.size() > 2 && !to_i32(f[2], &zp))) {
                *err = "'" + item + "': expected sum[:SCALE[:ZERO_POINT]] (an integer zero point)";
                return false;
            }
            o.beta = float(zp);
        } else {
            const elt_name *e = nullptr;
            for (const elt_name &c : kElt)
                if (name == c.name) e = &c;
            if (!e) {
                *err = "unknown post-op '" + name +
                       "' (relu leaky_relu[:A] clip:LO:HI gelu_tanh gelu_erf silu swish sigmoid "
                       "logistic tanh add[:f32|bf16][:per_oc] mul[:f32|bf16][:per_oc] "
                       "sum[:SCALE[:ZERO_POINT]])";
                return false;
            }
            o.alg = e->alg;
            const size_t nargs = f.size() - 1;
            if (o.alg == anvil_eltwise_leaky_relu) {
                o.alpha = 0.1f;
                if (nargs > 1 || (nargs == 1 && !to_float(f[1], &o.alpha))) {
                    *err = "'" + item + "': expected leaky_relu[:ALPHA]";
                    return false;
                }
            } else if (o.alg == anvil_eltwise_clip) {
                if (nargs != 2 || !to_float(f[1], &o.alpha) || !to_float(f[2], &o.beta) ||
                    o.alpha > o.beta) {
                    *err = "'" + item + "': expected clip:LO:HI with LO <= HI";
                    return false;
                }
            } else if (nargs != 0) {
                *err = "'" + item + "': " + name + " takes no parameters";
                return false;
            }
        }
        ops->push_back(o);
    }
    if (ops->size() > size_t(ANVIL_MAX_POST_OPS)) {
        *err = "at most " + std::to_string(ANVIL_MAX_POST_OPS) + " post-ops";
        return false;
    }
    return true;
}

bool parse_scales(const std::string &s, int *mode, float *scale, std::string *err) {
    const std::vector<std::string> f = split(s, ":");
    *scale = 1.0f;
    if (f[0] == "common" && f.size() == 2 && to_float(f[1], scale) && *scale != 0) {
        *mode = 1;
        return true;
    }
    if (f[0] == "per_oc" && (f.size() == 1 || (f.size() == 2 && to_float(f[1], scale) && *scale != 0))) {
        *mode = 2;
        return true;
    }
    *err = "--attr-scales=" + s + ": expected common:S or per_oc[:S] (S finite, non-zero)";
    return false;
}

bool parse_zero_points(const std::string &s, int32_t *src, int32_t *wei, int32_t *dst,
                       std::string *err) {
    *src = *wei = *dst = 0;
    for (const std::string &item : split(s, ",+")) {
        std::vector<std::string> f = split(item, ":");
        if (f.size() == 3 && f[1] == "common") f.erase(f.begin() + 1);  // benchdnn's src:common:V
        int32_t v = 0;
        if (f.size() != 2 || !to_i32(f[1], &v) ||
            (f[0] != "src" && f[0] != "wei" && f[0] != "dst")) {
            *err = "--attr-zero-points=" + s + ": expected src:V,wei:V,dst:V (any subset)";
            return false;
        }
        (f[0] == "src" ? *src : f[0] == "wei" ? *wei : *dst) = v;
    }
    return true;
}

std::string validate_attr(lowp_dt dt, const attr_spec &a) {
    if (is_float(dt)) {
        if (a.dst != anvil_dt_f32 && a.dst != anvil_dt_bf16)
            return std::string("--dst ") + dt_name(a.dst) + ": " + lowp_name(dt) +
                   " inputs give f32 or bf16";
        if (a.zp_src || a.zp_wei || a.zp_dst) return "--attr-zero-points: int8 types only";
    }
    if (a.zp_src && dt == lowp_dt::u8s8s32 && (a.zp_src < 0 || a.zp_src > 255))
        return "--attr-zero-points: src zero point of u8 data outside [0, 255]";
    if (a.zp_src && dt == lowp_dt::s8s8s32 && (a.zp_src < -128 || a.zp_src > 127))
        return "--attr-zero-points: src zero point of s8 data outside [-128, 127]";
    if (a.zp_wei && (a.zp_wei < -128 || a.zp_wei > 127))
        return "--attr-zero-points: wei zero point outside [-128, 127]";
    return "";
}

attr_spec plain_attr(lowp_dt dt) {
    attr_spec a;
    a.dst = default_dst(dt);
    return a;
}

bool attr_spec::any(lowp_dt dt) const {
    return dst != default_dst(dt) || scale_mode || zp_src || zp_wei || zp_dst || bias ||
           !ops.empty();
}

std::string attr_spec::str() const {
    std::string s = std::string("dst=") + dt_name(dst);
    if (scale_mode == 1) s += " scales=common:" + fnum(scale);
    if (scale_mode == 2) s += " scales=per_oc:" + fnum(scale);
    if (zp_src || zp_wei || zp_dst) {
        std::string z;
        if (zp_src) z += ",src:" + std::to_string(zp_src);
        if (zp_wei) z += ",wei:" + std::to_string(zp_wei);
        if (zp_dst) z += ",dst:" + std::to_string(zp_dst);
        s += " zp=" + z.substr(1);
    }
    if (bias) s += " bias";
    if (!ops.empty()) {
        std::string p;
        for (const post_op_spec &o : ops) p += "+" + op_text(o);
        s += " po=" + p.substr(1);
    }
    return s;
}

bool attr_data::init(const attr_spec &a, const gemm_problem &p, int64_t full_ld, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 17;
    scales.clear();
    bias.clear();
    dnnl_bias.clear();
    bin.clear();
    bin_ld.clear();
    bin_dt.clear();
    ops.clear();
    bin_ptrs.clear();
    if (a.scale_mode == 1) scales.push_back(a.scale);
    if (a.scale_mode == 2)
        for (int64_t j = 0; j < p.N; ++j)
            scales.push_back(std::ldexp(a.scale, int(j % 5) - 3));
    if (a.bias) {
        for (int64_t j = 0; j < p.N; ++j) bias.push_back(float(ival(s, -20, 20)));
        for (int64_t j = 0; j < p.N; ++j) dnnl_bias.push_back(bias[size_t(j)] / scale(j));
    }
    has_sum = false;
    for (const post_op_spec &o : a.ops) {
        anvil_post_op_t q{};
        q.kind = o.sum ? anvil_post_op_sum : o.binary ? anvil_post_op_binary : anvil_post_op_eltwise;
        has_sum = has_sum || o.sum;
        q.alg = o.alg;
        q.alpha = o.alpha;
        q.beta = o.beta;
        if (o.binary) {
            q.per_n = o.per_n ? 1 : 0;
            q.src_dt = o.src_dt;
            q.ld = o.per_n ? 0 : full_ld;
            const int64_t n = o.per_n ? p.N : (p.M - 1) * full_ld + p.N;
            buffer b(size_t(std::max<int64_t>(n, 1) * dt_bytes(o.src_dt)));
            if (!b.ok()) return false;
            const int64_t lo = o.alg == anvil_binary_mul ? -2 : -9, hi = -lo;
            for (int64_t k = 0; k < n; ++k) {
                const float v = float(ival(s, lo, hi));
                if (o.src_dt == anvil_dt_bf16)
                    static_cast<uint16_t *>(b.data())[k] = f32_to_bf16_rne(v);
                else
                    b.f32()[k] = v;
            }
            bin.push_back(std::move(b));
            bin_ld.push_back(q.ld);
            bin_dt.push_back(o.src_dt);
        }
        ops.push_back(q);
    }
    for (const buffer &b : bin) bin_ptrs.push_back(b.data());
    c_dt = a.dst;
    c_ld = p.ldc();
    c_old = buffer();
    if (has_sum) {
        const int64_t n = p.M * c_ld;
        c_old = buffer(size_t(std::max<int64_t>(n, 1) * dt_bytes(c_dt)));
        if (!c_old.ok()) return false;
        for (int64_t k = 0; k < n; ++k) {
            const int32_t v = int32_t(c_dt == anvil_dt_u8 ? ival(s, 0, 30) : ival(s, -30, 30));
            void *e = static_cast<uint8_t *>(c_old.data()) + k * dt_bytes(c_dt);
            if (c_dt == anvil_dt_f32) {
                const float f = float(v);
                std::memcpy(e, &f, 4);
            } else if (c_dt == anvil_dt_bf16) {
                const uint16_t h = f32_to_bf16_rne(float(v));
                std::memcpy(e, &h, 2);
            } else if (c_dt == anvil_dt_s32) {
                std::memcpy(e, &v, 4);
            } else {
                *static_cast<uint8_t *>(e) = uint8_t(int8_t(v));
            }
        }
    }
    return true;
}

void attr_data::reset_output(buffer &C) const {
    if (has_sum)
        std::memcpy(C.data(), c_old.data(), std::min(C.bytes(), c_old.bytes()));
    else
        std::memset(C.data(), 0xA5, C.bytes());
}

double attr_data::bin_value(size_t t, int64_t i, int64_t j) const {
    return load_elem(bin_dt[t], bin[t].data(), bin_ld[t] == 0 ? j : i * bin_ld[t] + j);
}

attr_reference::attr_reference(const lowp_data &d, const attr_spec &a, const attr_data &ad)
    : d_(d), a_(a), ad_(ad) {
    bare_s32_ = is_int8(d.dt) && a.dst == anvil_dt_s32 && a.scale_mode == 0 && !a.bias &&
                a.ops.empty();
    exact_chain_ = is_int8(d.dt) || d.exact(1.0f, 0.0f);
    for (const post_op_spec &o : a.ops) {
        if (!o.binary && !o.sum && transcendental(o.alg)) exact_chain_ = false;
        if (o.sum && o.alpha != 1.0f && !is_pow2(o.alpha)) exact_chain_ = false;
    }
    if (a.bias && a.scale_mode)
        for (int64_t j = 0; j < d.p.N; ++j)
            if (!is_pow2(ad.scale(j))) exact_chain_ = false;  // oneDNN's bias / scale
}

chain_value attr_reference::at(int64_t i, int64_t j) const {
    chain_value v;
    const gemm_problem &p = d_.p;
    double acc = 0, mag = 0;
    if (is_int8(d_.dt)) {
        int64_t s = 0;
        for (int64_t k = 0; k < p.K; ++k) s += (d_.a(i, k) - a_.zp_src) * (d_.b(k, j) - a_.zp_wei);
        acc = double(int32_t(uint32_t(uint64_t(s))));  // int32 accumulation wraps
    } else {
        for (int64_t k = 0; k < p.K; ++k) {
            const double x = d_.Af[size_t(p.ta == 'N' ? i * p.lda() + k : k * p.lda() + i)];
            const double y = d_.Bf[size_t(p.tb == 'N' ? k * p.ldb() + j : j * p.ldb() + k)];
            acc += x * y;
            mag += std::fabs(x * y);
        }
    }
    if (bare_s32_) {  // stored from the integer accumulator, exactly
        v.exact_int = true;
        v.x = acc + double(a_.zp_dst);
        v.want = to_int(anvil_dt_s32, v.x, 0);
        return v;
    }
    float x = float(acc);
    double ea = 0, ed = 0;
    if (!is_int8(d_.dt) && !d_.exact(1.0f, 0.0f)) ea = ed = gamma_n(p.K + 2) * mag;
    if (a_.scale_mode) {
        const float s = ad_.scale(j);
        const float xs = x * s;
        ea = after_rounding(ea, std::fabs(s), xs);
        ed = after_rounding(ed, std::fabs(s), xs);
        if (a_.bias && !is_pow2(s))  // oneDNN: (x + bias / s) * s, other roundings
            ed += 0x1p-22 * (std::fabs(xs) + std::fabs(ad_.bias[size_t(j)])) + 0x1p-149;
        x = xs;
    }
    if (a_.bias) {
        x = x + ad_.bias[size_t(j)];
        ea = after_rounding(ea, 1, x);
        ed = after_rounding(ed, 1, x);
        if (a_.scale_mode && !is_pow2(ad_.scale(j))) ed += 0x1p-23 * std::fabs(x);
    }
    size_t bi = 0;
    for (const post_op_spec &o : a_.ops) {
        if (o.sum) {  // x + alpha * (C_old - beta), anvil's order of fp32 steps
            float t = float(ad_.c_old_value(i, j));
            if (o.beta != 0.0f) t = t - o.beta;
            const float t0 = t;
            if (o.alpha != 1.0f) t = t * o.alpha;
            // oneDNN may fuse the product into the add: one rounding less.
            if (o.alpha != 1.0f && !is_pow2(o.alpha)) ed += 0x1p-24 * std::fabs(double(t0) * o.alpha);
            x = x + t;
            ea = after_rounding(ea, 1, x);
            ed = after_rounding(ed, 1, x);
            continue;
        }
        if (o.binary) {
            const float y = float(ad_.bin_value(bi++, i, j));
            const double l = o.alg == anvil_binary_add ? 1.0 : std::fabs(y);
            x = o.alg == anvil_binary_add ? x + y : x * y;
            ea = after_rounding(ea, l, x);
            ed = after_rounding(ed, l, x);
            continue;
        }
        switch (o.alg) {
            case anvil_eltwise_relu:
                x = x > 0 ? x : 0.0f;
                break;
            case anvil_eltwise_clip:
                x = std::min(std::max(x, o.alpha), o.beta);
                break;
            case anvil_eltwise_leaky_relu: {
                const double l = std::max(1.0, double(std::fabs(o.alpha)));
                x = x > 0 ? x : o.alpha * x;
                ea = after_rounding(ea, l, x);
                ed = after_rounding(ed, l, x);
                break;
            }
            default: {  // transcendental
                const double in = x;
                const double y = eltwise_exact(o.alg, in, 0, 0);
                x = float(y);
                const double l = slope(o.alg);
                const double ay = std::fabs(y);
                // the library at its own input vs the exact value there,
                // plus the reference's rounding of y to float
                ea = l * ea + 0x1p-20 + 0x1p-20 * (ay + l * ea) + 0x1p-24 * ay;
                ed = l * ed + 4e-6 + 4e-6 * (ay + l * ed) + 0x1p-22 * std::fabs(in) + 0x1p-24 * ay;
                break;
            }
        }
    }
    if (a_.zp_dst) {
        x = x + float(a_.zp_dst);
        ea = after_rounding(ea, 1, x);
        ed = after_rounding(ed, 1, x);
    }
    v.x = x;
    v.err_anvil = ea;
    v.err_dnnl = ed;
    if (a_.dst == anvil_dt_f32) v.want = x;
    else if (a_.dst == anvil_dt_bf16) v.want = bf16_rne(x);
    else v.want = to_int(a_.dst, x, 0);
    return v;
}

bool attr_reference::accepts(const chain_value &v, double got, bool dnnl) const {
    const double e = dnnl ? v.err_dnnl : v.err_anvil;
    if (v.exact_int) return got == v.want;
    if (std::isnan(got)) return false;
    switch (a_.dst) {
        case anvil_dt_f32: return std::fabs(got - v.x) <= e;
        case anvil_dt_bf16:
            if (e == 0) return got == v.want;
            return got >= bf16_rne(v.x - e) && got <= bf16_rne(v.x + e);
        default:
            // integers: oneDNN may round an exact .5 tie either way
            return got >= to_int(a_.dst, v.x - e, dnnl ? -1 : 0) &&
                   got <= to_int(a_.dst, v.x + e, dnnl ? 1 : 0);
    }
}

}  // namespace anvil_bench
