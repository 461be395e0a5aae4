#include "common/fill.h"

#include <random>

namespace ex {

void fill_uniform(float *dst, size_t n, float lo, float hi, uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    for (size_t i = 0; i < n; ++i) dst[i] = d(gen);
}

avec<float> random_vec(size_t n, float lo, float hi, uint64_t seed) {
    avec<float> v(n);
    fill_uniform(v.data(), n, lo, hi, seed);
    return v;
}

}  // namespace ex
