// Comparison of two final outputs (anvil vs oneDNN).
#pragma once

#include <cstddef>
#include <string>

namespace ex {

struct Diff {
    double max_abs = 0;     // max |a - b|
    double max_ref = 0;     // max |b|
    double norm_rel = 0;    // max |a - b| / max |b|: the gated figure
    double max_rel = 0;     // max |a - b| / |b| over |b| >= 1e-3 max |b| (info)
    double l2_rel = 0;      // ||a - b||_2 / ||b||_2 (info)
    size_t nonfinite = 0;   // NaN / Inf in either
};

Diff compare(const float *a, const float *b, size_t n);
std::string describe(const Diff &d);

}  // namespace ex
