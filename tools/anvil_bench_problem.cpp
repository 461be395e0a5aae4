// anvil-bench: shape and batch-file parsing.
#include "anvil_bench_problem.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace anvil_bench {
namespace {

std::string trim(const std::string &s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

// "12x34x5" -> {12, 34, 5}; false on anything but positive decimal numbers.
bool split_dims(const std::string &s, std::vector<int64_t> *dims, std::string *why) {
    dims->clear();
    std::string cur;
    auto flush = [&]() {
        if (cur.empty()) {
            *why = "empty dimension";
            return false;
        }
        if (cur.size() > 12) {
            *why = "dimension too large: " + cur;
            return false;
        }
        const int64_t v = std::strtoll(cur.c_str(), nullptr, 10);
        if (v <= 0) {
            *why = "zero-size dimension";
            return false;
        }
        dims->push_back(v);
        cur.clear();
        return true;
    };
    for (char c : s) {
        if (c == 'x' || c == 'X') {
            if (!flush()) return false;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            cur += c;
        } else {
            *why = std::string("unexpected character '") + c + "'";
            return false;
        }
    }
    return flush();
}

}  // namespace

std::string gemm_problem::shape() const {
    const std::string mnk = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    if (!batched()) return mnk;
    return "b" + std::to_string(batch) + (share_a ? "A" : "") + (share_b ? "B" : "") + ":" + mnk;
}

gemm_problem gemm_problem::item() const {
    gemm_problem p = *this;
    p.batch = 1;
    p.share_a = p.share_b = false;
    return p;
}

namespace {

// benchdnn's batch dims (all but the last two of each side): equal dims,
// or one side all ones (shared by every item).  Sets p's batch fields.
bool resolve_batch(const std::vector<int64_t> &d0, const std::vector<int64_t> &d1,
                   gemm_problem *p, std::string *why) {
    if (d0.size() != d1.size()) {
        *why = "source and weights have different ranks";
        return false;
    }
    int64_t b0 = 1, b1 = 1;
    bool same = true;
    for (size_t i = 0; i + 2 < d0.size(); ++i) {
        if (__builtin_mul_overflow(b0, d0[i], &b0) || __builtin_mul_overflow(b1, d1[i], &b1)) {
            *why = "batch too large";
            return false;
        }
        same = same && d0[i] == d1[i];
    }
    if (same) {
        p->batch = b0;
    } else if (b0 == 1) {
        p->batch = b1;
        p->share_a = true;
    } else if (b1 == 1) {
        p->batch = b0;
        p->share_b = true;
    } else {
        *why = "a partial batch broadcast (dims neither equal nor all 1 on one side)";
        return false;
    }
    return true;
}

}  // namespace

bool parse_trans(const std::string &s, char *ta, char *tb) {
    if (s.size() != 2) return false;
    const char a = char(std::toupper(static_cast<unsigned char>(s[0])));
    const char b = char(std::toupper(static_cast<unsigned char>(s[1])));
    if ((a != 'N' && a != 'T') || (b != 'N' && b != 'T')) return false;
    *ta = a;
    *tb = b;
    return true;
}

bool parse_problem(const std::string &text, char default_ta, char default_tb, gemm_problem *out,
                   std::string *why) {
    std::istringstream in(trim(text));
    std::string shape, extra, more;
    in >> shape >> extra >> more;
    if (shape.empty()) {
        *why = "empty";
        return false;
    }
    if (shape[0] == '-') {
        *why = "benchdnn option line, not a shape";
        return false;
    }
    gemm_problem p;
    p.ta = default_ta;
    p.tb = default_tb;
    if (!extra.empty() && !parse_trans(extra, &p.ta, &p.tb)) {
        *why = "unknown token after the shape: '" + extra + "' (expected NN/NT/TN/TT)";
        return false;
    }
    if (!more.empty()) {
        *why = "trailing text: '" + more + "'";
        return false;
    }
    // benchdnn appends a name: 16x4096:4096x4096_n"layer" or ...n"layer".
    const size_t name = shape.find("n\"");
    if (name != std::string::npos) {
        shape.erase(name);
        if (!shape.empty() && shape.back() == '_') shape.pop_back();
    }
    std::vector<int64_t> d0, d1;
    const size_t colon = shape.find(':');
    if (colon != std::string::npos) {
        if (!split_dims(shape.substr(0, colon), &d0, why) ||
            !split_dims(shape.substr(colon + 1), &d1, why))
            return false;
        if (d0.size() < 2 || d1.size() < 2) {
            *why = "expected MxK:KxN";
            return false;
        }
        if (!resolve_batch(d0, d1, &p, why)) return false;
        const size_t r = d0.size();
        if (d0[r - 1] != d1[r - 2]) {
            *why = "K mismatch (" + std::to_string(d0[r - 1]) + " vs " + std::to_string(d1[r - 2]) +
                   ")";
            return false;
        }
        p.M = d0[r - 2];
        p.K = d0[r - 1];
        p.N = d1[r - 1];
    } else {
        if (!split_dims(shape, &d0, why)) return false;
        if (d0.size() != 3) {
            *why = "expected MxNxK or MxK:KxN";
            return false;
        }
        p.M = d0[0];
        p.N = d0[1];
        p.K = d0[2];
    }
    *out = p;
    return true;
}

bool load_batch(const std::string &path, char default_ta, char default_tb,
                std::vector<gemm_problem> *out, std::vector<skipped_line> *skipped) {
    std::ifstream f(path);
    if (!f) return false;
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
        ++n;
        const size_t hash = line.find('#');
        const std::string body = trim(hash == std::string::npos ? line : line.substr(0, hash));
        if (body.empty()) continue;
        gemm_problem p;
        std::string why;
        const std::string where = path + ":" + std::to_string(n);
        if (parse_problem(body, default_ta, default_tb, &p, &why)) {
            p.source = where;
            out->push_back(p);
        } else {
            skipped->push_back({where, body, why});
        }
    }
    return true;
}

}  // namespace anvil_bench
