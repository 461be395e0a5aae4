// Aligned buffers and deterministic random data (fixed seeds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace ex {

// 64-byte aligned allocator so that packed weights and activations start on
// a cache line (anvil and oneDNN both prefer it).
template <class T>
struct AlignedAlloc {
    using value_type = T;
    AlignedAlloc() = default;
    template <class U>
    AlignedAlloc(const AlignedAlloc<U> &) {}
    T *allocate(size_t n) {
        const size_t bytes = ((n * sizeof(T) + 63) / 64) * 64;
        void *p = std::aligned_alloc(64, bytes ? bytes : 64);
        if (!p) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t) { std::free(p); }
    template <class U>
    bool operator==(const AlignedAlloc<U> &) const { return true; }
    template <class U>
    bool operator!=(const AlignedAlloc<U> &) const { return false; }
};

template <class T>
using avec = std::vector<T, AlignedAlloc<T>>;

// Uniform values in [lo, hi) from a fixed-seed generator.
void fill_uniform(float *dst, size_t n, float lo, float hi, uint64_t seed);
avec<float> random_vec(size_t n, float lo, float hi, uint64_t seed);

}  // namespace ex
