// anvil-bench: buffers and test data.  Buffers are 64-byte aligned; large ones
// (>= 4 MiB) are 2 MiB aligned and advised MADV_HUGEPAGE, as in the anchors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace anvil_bench {

class buffer {
public:
    buffer() = default;
    explicit buffer(size_t bytes);
    buffer(buffer &&) noexcept = default;
    buffer &operator=(buffer &&) noexcept = default;
    void *data() const { return p_.get(); }
    float *f32() const { return static_cast<float *>(p_.get()); }
    size_t bytes() const { return bytes_; }
    bool ok() const { return bytes_ == 0 || p_ != nullptr; }

private:
    struct freer {
        void operator()(void *p) const;
    };
    std::unique_ptr<void, freer> p_;
    size_t bytes_ = 0;
};

// How matrices are filled.
//  real: uniform in [-1, 1); checked with the gamma_K error bound.
//  ints: non-zero integers in [-4, 4]; every product and partial sum is exact
//        in fp32 while 16*K < 2^24, so any correct kernel, whatever its
//        summation order, gives the double-precision result exactly.
enum class data_kind { real, ints };

void fill(float *p, int64_t n, data_kind kind, uint64_t seed);
// True when `ints` data gives exact results for this K.
bool ints_exact(int64_t K);

}  // namespace anvil_bench
