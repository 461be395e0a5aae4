// Per-thread scratch memory of the lp GEMM paths: 64-byte aligned buffers
// that only grow, one per thread and purpose, taken by the calling thread
// before a call writes anything (so running out of memory leaves C
// untouched) and shared with its workers for the duration of the call.
#pragma once
#include <cstdint>

namespace anvil::lowp {

class scratch {
public:
    scratch() = default;
    scratch(const scratch &) = delete;
    scratch &operator=(const scratch &) = delete;
    ~scratch();
    // At least `bytes` bytes, 64-byte aligned, or nullptr when allocation fails.
    void *get(int64_t bytes);

private:
    void *p_ = nullptr;
    int64_t cap_ = 0;
};

scratch &scratch_acc();    // accumulator slots (one per worker)
scratch &scratch_apack();  // packed A + row sums
scratch &scratch_bpack();  // packed B + column sums

}  // namespace anvil::lowp
