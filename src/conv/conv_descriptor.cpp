#include "conv/conv_descriptor.h"

#include <cctype>
#include <cstdlib>
#include <map>

namespace anvil::conv {
namespace {

int64_t ext_kernel(int64_t k, int64_t d) { return (k - 1) * (d + 1) + 1; }

}  // namespace

namespace {

using field_map = std::map<std::string, int64_t>;

// Splits "mb2_ic3ih8..." into key -> value; false (with *err) on anything
// that is not a known key followed by digits.
bool split_fields(const std::string &s, const std::string &text, field_map *v, std::string *err) {
    static const char *known[] = {"mb", "g",  "ic", "oc", "ih", "oh", "kh", "sh", "ph", "dh",
                                  "iw", "ow", "kw", "sw", "pw", "dw", "id", "od", "kd", "sd",
                                  "pd", "dd"};
    size_t i = 0;
    while (i < s.size()) {
        if (s[i] == '_') {
            ++i;
            continue;
        }
        size_t k = i;
        while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
        std::string key = s.substr(i, k - i);
        size_t d = k;
        while (d < s.size() && std::isdigit(static_cast<unsigned char>(s[d]))) ++d;
        if (key.empty() || d == k) {
            *err = "cannot parse '" + s.substr(i) + "' in '" + text + "'";
            return false;
        }
        bool ok = false;
        for (const char *kn : known) ok = ok || key == kn;
        if (!ok) {
            *err = "unknown field '" + key + "' in '" + text + "'";
            return false;
        }
        if (d - k > 12) {
            *err = "value of '" + key + "' too large in '" + text + "'";
            return false;
        }
        if (v->count(key)) {
            *err = "field '" + key + "' given twice in '" + text + "'";
            return false;
        }
        (*v)[key] = std::strtoll(s.c_str() + k, nullptr, 10);
        i = d;
    }
    return true;
}

// The fields of one spatial dimension ('d', 'h' or 'w'): input, output,
// kernel, stride, padding, dilation, each present or not.
struct dim_fields {
    field_map f;  // keyed "i", "o", "k", "s", "p", "d"
    bool given() const { return !f.empty(); }
    bool has(const char *k) const { return f.count(k) != 0; }
    int64_t get(const char *k, int64_t dflt) const { return has(k) ? f.at(k) : dflt; }
};

dim_fields take_dim(const field_map &v, char dim) {
    dim_fields r;
    for (const char *k : {"i", "o", "k", "s", "p", "d"}) {
        auto it = v.find(std::string(k) + dim);
        if (it != v.end()) r.f[k] = it->second;
    }
    return r;
}

// One resolved spatial dimension.
struct dim_shape {
    int64_t i = 0, o = 0, k = 0, s = 1, p_begin = 0, p_end = 0, d = 0;
};

// benchdnn's rules: a missing output size is computed from the (default 0)
// padding; a missing padding is the one that makes a given output size come
// out; the end padding is what the output size implies (benchdnn's
// padding_r, clamped at 0: a negative one only leaves input rows unread, and
// an output size no padding explains is left for anvil_conv2d_create to
// reject).
bool resolve_dim(const dim_fields &f, char dim, const std::string &text, dim_shape *out,
                 std::string *err) {
    dim_shape r;
    r.i = f.get("i", 0);
    r.k = f.get("k", 0);
    r.s = f.get("s", 1);
    r.d = f.get("d", 0);
    if (r.i < 1 || r.k < 1 || r.s < 1) {
        *err = std::string("i") + dim + ", k" + dim + " and s" + dim +
               " must be given and positive in '" + text + "'";
        return false;
    }
    const int64_t ek = ext_kernel(r.k, r.d);
    if (f.has("o")) {
        r.o = f.get("o", 0);
        r.p_begin = f.has("p") ? f.get("p", 0) : ((r.o - 1) * r.s - r.i + ek) / 2;
        if (r.p_begin < 0) r.p_begin = 0;
    } else {
        r.p_begin = f.get("p", 0);
        r.o = (r.i + 2 * r.p_begin - ek) / r.s + 1;
    }
    if (r.o < 1) {
        *err = "the output would be empty in '" + text + "'";
        return false;
    }
    r.p_end = (r.o - 1) * r.s - r.i + ek - r.p_begin;
    if (r.p_end < 0) r.p_end = 0;
    *out = r;
    return true;
}

bool is_flat(const dim_shape &x) {
    return x.i == 1 && x.o == 1 && x.k == 1 && x.p_begin == 0 && x.p_end == 0;
}

// The two spatial dimensions of the problem, as benchdnn decides which it
// names: only w fields -> a 1-D convolution (h is 1); h fields without w ->
// w copies h; d fields -> 3-D (d alone is copied to h and w, as benchdnn
// does), run when one of the three dimensions is flat (size, output and
// kernel 1, no padding): NDHWC with such a dimension is NHWC of the other two,
// bit for bit, and so are the weights.  anvil's shorthand beyond benchdnn:
// when iw or kw is missing beside h fields, every missing w field copies its
// h twin ("ih9iw7kh3ph1").
bool resolve_spatial(const field_map &v, const std::string &text, dim_shape *h_out,
                     dim_shape *w_out, std::string *err) {
    dim_fields d = take_dim(v, 'd'), h = take_dim(v, 'h'), w = take_dim(v, 'w');
    if (!d.given() && !h.given() && !w.given()) {
        *err = "no spatial sizes in '" + text + "'";
        return false;
    }
    const dim_fields flat{{{"i", 1}, {"o", 1}, {"k", 1}, {"s", 1}, {"p", 0}, {"d", 0}}};
    if (d.given()) {
        if (!h.given() && !w.given()) h = w = d;
        if (!h.given() || !w.given()) {
            *err = "a 3-D descriptor with h or w missing in '" + text + "'";
            return false;
        }
    } else {
        d = flat;
        if (!h.given()) h = flat;  // 1-D
        if (h.given() && (!w.has("i") || !w.has("k")))
            for (const auto &kv : h.f) w.f.insert(kv);  // keeps the w fields given
    }
    dim_shape ds, hs, ws;
    if (!resolve_dim(d, 'd', text, &ds, err) || !resolve_dim(h, 'h', text, &hs, err) ||
        !resolve_dim(w, 'w', text, &ws, err))
        return false;
    if (is_flat(ds)) {
        *h_out = hs, *w_out = ws;
    } else if (is_flat(hs)) {
        *h_out = ds, *w_out = ws;
    } else if (is_flat(ws)) {
        *h_out = ds, *w_out = hs;
    } else {
        *err = "a 3-D convolution (no flat dimension) in '" + text +
               "': anvil runs 2-D convolutions only";
        return false;
    }
    return true;
}

}  // namespace

bool parse_conv_descriptor(const std::string &text, conv_shape *out, std::string *err) {
    size_t b = text.find_first_not_of(" \t\r\n");
    size_t e = text.find_last_not_of(" \t\r\n");
    if (b == std::string::npos) {
        *err = "empty descriptor";
        return false;
    }
    std::string s = text.substr(b, e - b + 1);
    conv_shape r;
    // Name: n"..." at the end (benchdnn also accepts an unquoted tail).
    size_t npos = s.find("n\"");
    if (npos != std::string::npos) {
        size_t close = s.find('"', npos + 2);
        if (close == std::string::npos) {
            *err = "unterminated name in '" + s + "'";
            return false;
        }
        r.name = s.substr(npos + 2, close - npos - 2);
        s = s.substr(0, npos);
    }
    field_map v;
    if (!split_fields(s, text, &v, err)) return false;
    if (!v.count("ic") || !v.count("oc")) {
        *err = "ic and oc are required in '" + text + "'";
        return false;
    }
    dim_shape h, w;
    if (!resolve_spatial(v, text, &h, &w, err)) return false;
    r.mb = v.count("mb") ? v["mb"] : 2;
    r.g = v.count("g") ? v["g"] : 1;
    r.ic = v["ic"];
    r.oc = v["oc"];
    r.ih = h.i, r.oh = h.o, r.kh = h.k, r.sh = h.s, r.dh = h.d, r.pt = h.p_begin, r.pb = h.p_end;
    r.iw = w.i, r.ow = w.o, r.kw = w.k, r.sw = w.s, r.dw = w.d, r.pl = w.p_begin, r.pr = w.p_end;
    *out = r;
    return true;
}

std::string format_conv_descriptor(const conv_shape &s) {
    std::string r = "mb" + std::to_string(s.mb) + "_";
    if (s.g != 1) r += "g" + std::to_string(s.g);
    r += "ic" + std::to_string(s.ic) + "ih" + std::to_string(s.ih) + "iw" + std::to_string(s.iw) +
         "_oc" + std::to_string(s.oc) + "oh" + std::to_string(s.oh) + "ow" +
         std::to_string(s.ow) + "_kh" + std::to_string(s.kh) + "kw" + std::to_string(s.kw) +
         "sh" + std::to_string(s.sh) + "sw" + std::to_string(s.sw) + "ph" +
         std::to_string(s.pt) + "pw" + std::to_string(s.pl);
    if (s.dh || s.dw) r += "dh" + std::to_string(s.dh) + "dw" + std::to_string(s.dw);
    if (!s.name.empty()) r += "_n\"" + s.name + "\"";
    return r;
}

double conv_macs(const conv_shape &s) {
    return double(s.mb) * double(s.oh) * double(s.ow) * double(s.oc) * double(s.kh) *
           double(s.kw) * double(s.ic / (s.g > 0 ? s.g : 1));
}

void fill_conv_desc(const conv_shape &s, anvil_conv2d_desc_t *d) {
    d->N = s.mb;
    d->G = s.g;
    d->IC = s.ic;
    d->IH = s.ih;
    d->IW = s.iw;
    d->OC = s.oc;
    d->OH = s.oh;
    d->OW = s.ow;
    d->KH = s.kh;
    d->KW = s.kw;
    d->SH = s.sh;
    d->SW = s.sw;
    d->pad_t = s.pt;
    d->pad_l = s.pl;
    d->pad_b = s.pb;
    d->pad_r = s.pr;
    d->DH = s.dh;
    d->DW = s.dw;
}

}  // namespace anvil::conv
