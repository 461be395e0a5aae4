#include "common/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ex {

Diff compare(const float *a, const float *b, size_t n) {
    Diff d;
    double num2 = 0, den2 = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
            ++d.nonfinite;
            continue;
        }
        d.max_ref = std::max(d.max_ref, double(std::fabs(b[i])));
    }
    const double floor_ = 1e-3 * d.max_ref;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
        const double e = std::fabs(double(a[i]) - double(b[i]));
        d.max_abs = std::max(d.max_abs, e);
        if (std::fabs(b[i]) >= floor_ && floor_ > 0)
            d.max_rel = std::max(d.max_rel, e / std::fabs(double(b[i])));
        num2 += e * e;
        den2 += double(b[i]) * double(b[i]);
    }
    d.norm_rel = d.max_ref > 0 ? d.max_abs / d.max_ref : d.max_abs;
    d.l2_rel = den2 > 0 ? std::sqrt(num2 / den2) : std::sqrt(num2);
    return d;
}

std::string describe(const Diff &d) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "max_abs %.3e  max|ref| %.3e  max_abs/max|ref| %.3e  max_rel %.3e  l2_rel %.3e%s",
                  d.max_abs, d.max_ref, d.norm_rel, d.max_rel, d.l2_rel,
                  d.nonfinite ? "  NON-FINITE VALUES" : "");
    return buf;
}

}  // namespace ex
