// Every buffer anvil allocates whose size follows from a problem's sizes
// (packing scratch, accumulator slots, padded views, owned packed weights)
// goes through here, so that one process-wide cap bounds them all.
//
// The cap (anvil_set_memory_cap, ANVIL_MEMORY_CAP) bounds the bytes these
// buffers hold at once, summed over all threads, and the size of any single
// packed-weights buffer anvil asks a caller to provide.  An allocation that
// would go over fails before anything is allocated; the caller returns
// anvil_out_of_memory before writing any output.  Small fixed-size objects
// (handles, kernel-cache entries, JIT code pages) are not counted.
#pragma once
#include <cstddef>
#include <cstdint>

#include "anvil/anvil.h"

namespace anvil::mem {

// 64-byte aligned, at least `bytes` bytes; nullptr when bytes < 0, when the
// rounded size overflows, when the cap would be exceeded or when the system
// has no memory.  Free with release(p, bytes) using the same `bytes`.
void *allocate(int64_t bytes);
void release(void *p, int64_t bytes);

// Whether one buffer of `bytes` bytes is within the cap (caller-allocated
// packed weights: the size queries and pack calls refuse larger ones).
bool fits_cap(int64_t bytes);

// 0 means no cap.
anvil_status_t set_cap(int64_t bytes);
int64_t cap();
int64_t in_use();
int64_t peak();

// "123", "64K", "512M", "2G" (binary units) -> bytes; false when malformed.
bool parse_size(const char *text, int64_t *bytes);

// A counted buffer that only grows (one per thread and purpose): get() keeps
// the current buffer when it is big enough, otherwise releases it first and
// then allocates the new size, so growing never holds both at once.  The
// contents are not kept across growth.
class growing_buffer {
public:
    growing_buffer() = default;
    growing_buffer(const growing_buffer &) = delete;
    growing_buffer &operator=(const growing_buffer &) = delete;
    ~growing_buffer() { release(p_, bytes_); }
    void *get(int64_t bytes);
    void reset() {
        release(p_, bytes_);
        p_ = nullptr;
        bytes_ = 0;
    }

private:
    void *p_ = nullptr;
    int64_t bytes_ = 0;
};

}  // namespace anvil::mem
