// anvil-bench: aligned buffers and deterministic random fills.
#include "anvil_bench_data.h"

#include <sys/mman.h>

#include <cstdlib>

namespace anvil_bench {

void buffer::freer::operator()(void *p) const { std::free(p); }

buffer::buffer(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const size_t big = size_t(4) << 20;
    const size_t align = bytes >= big ? size_t(2) << 20 : 64;
    const size_t rounded = (bytes + align - 1) / align * align;
    void *p = std::aligned_alloc(align, rounded);
    if (p && bytes >= big) madvise(p, rounded, MADV_HUGEPAGE);
    p_.reset(p);
}

namespace {
// splitmix64: fast, and good enough for test data.
inline uint64_t next(uint64_t &s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
}  // namespace

void fill(float *p, int64_t n, data_kind kind, uint64_t seed) {
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
    if (kind == data_kind::real) {
        for (int64_t i = 0; i < n; ++i)
            p[i] = float(int64_t(next(s) >> 40) - (int64_t(1) << 23)) * (1.0f / float(1 << 23));
    } else {
        static const float vals[8] = {-4, -3, -2, -1, 1, 2, 3, 4};
        for (int64_t i = 0; i < n; i += 16) {
            uint64_t r = next(s);
            for (int64_t j = i; j < n && j < i + 16; ++j, r >>= 3) p[j] = vals[r & 7];
        }
    }
}

bool ints_exact(int64_t K) { return 16 * K < (int64_t(1) << 24); }

}  // namespace anvil_bench
