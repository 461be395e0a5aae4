#include "conv/conv_descriptor.h"

#include <cctype>
#include <cstdlib>
#include <map>

namespace anvil::conv {
namespace {

int64_t ext_kernel(int64_t k, int64_t d) { return (k - 1) * (d + 1) + 1; }

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
    std::map<std::string, int64_t> v;
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
        static const char *known[] = {"mb", "g", "ic", "ih", "iw", "oc", "oh", "ow", "kh",
                                      "kw", "sh", "sw", "ph", "pw", "dh", "dw"};
        bool ok = false;
        for (const char *kn : known) ok = ok || key == kn;
        if (!ok) {
            *err = "unknown or unsupported field '" + key + "' (2-D convolutions only) in '" +
                   text + "'";
            return false;
        }
        if (d - k > 12) {
            *err = "value of '" + key + "' too large in '" + text + "'";
            return false;
        }
        if (v.count(key)) {
            *err = "field '" + key + "' given twice in '" + text + "'";
            return false;
        }
        v[key] = std::strtoll(s.c_str() + k, nullptr, 10);
        i = d;
    }
    auto get = [&](const char *key, int64_t dflt) { return v.count(key) ? v[key] : dflt; };
    if (!v.count("ic") || !v.count("oc") || !v.count("ih") || !v.count("kh")) {
        if (!v.count("ic") || !v.count("oc") || (!v.count("ih") && !v.count("iw")) ||
            (!v.count("kh") && !v.count("kw"))) {
            *err = "ic, oc, ih and kh are required in '" + text + "'";
            return false;
        }
    }
    r.mb = get("mb", 2);
    r.g = get("g", 1);
    r.ic = v["ic"];
    r.oc = v["oc"];
    r.ih = get("ih", get("iw", 0));
    r.iw = get("iw", r.ih);
    r.kh = get("kh", get("kw", 0));
    r.kw = get("kw", r.kh);
    r.sh = get("sh", 1);
    r.sw = get("sw", r.sh);
    r.dh = get("dh", 0);
    r.dw = get("dw", r.dh);
    if (r.sh < 1 || r.sw < 1 || r.kh < 1 || r.kw < 1 || r.ih < 1 || r.iw < 1) {
        *err = "sizes and strides must be positive in '" + text + "'";
        return false;
    }
    const int64_t ekh = ext_kernel(r.kh, r.dh), ekw = ext_kernel(r.kw, r.dw);
    const bool has_oh = v.count("oh") || v.count("ow");
    const bool has_ph = v.count("ph") || v.count("pw");
    int64_t ph = get("ph", get("pw", 0)), pw = get("pw", ph);
    if (has_oh) {
        r.oh = get("oh", get("ow", 0));
        r.ow = get("ow", r.oh);
        if (!has_ph) {
            // benchdnn: the padding that makes the output size come out.
            ph = ((r.oh - 1) * r.sh - r.ih + ekh) / 2;
            pw = ((r.ow - 1) * r.sw - r.iw + ekw) / 2;
            if (ph < 0) ph = 0;
            if (pw < 0) pw = 0;
        }
    } else {
        r.oh = (r.ih + 2 * ph - ekh) / r.sh + 1;
        r.ow = (r.iw + 2 * pw - ekw) / r.sw + 1;
    }
    r.pt = ph;
    r.pl = pw;
    r.pb = (r.oh - 1) * r.sh - r.ih + ekh - ph;
    r.pr = (r.ow - 1) * r.sw - r.iw + ekw - pw;
    if (r.pb < 0) r.pb = 0;
    if (r.pr < 0) r.pr = 0;
    if (r.oh < 1 || r.ow < 1) {
        *err = "the output would be empty in '" + text + "'";
        return false;
    }
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
