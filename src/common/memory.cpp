#include "common/memory.h"

#include <atomic>
#include <cstdlib>
#include <limits>

#include "common/env.h"

namespace anvil::mem {
namespace {

constexpr int64_t kAlign = 64;

// 0: no cap.  Read once from ANVIL_MEMORY_CAP; anvil_set_memory_cap replaces
// it at any time (a lower cap does not free what is already held: later
// allocations wait until usage is below it).
std::atomic<int64_t> &cap_bytes() {
    static std::atomic<int64_t> c{[] {
        int64_t v = 0;
        const std::string s = env::get_string("ANVIL_MEMORY_CAP", "");
        if (!s.empty() && (!parse_size(s.c_str(), &v) || v < 0)) v = 0;
        return v;
    }()};
    return c;
}
std::atomic<int64_t> g_in_use{0};
std::atomic<int64_t> g_peak{0};

int64_t rounded(int64_t bytes) {
    const int64_t b = bytes < kAlign ? kAlign : bytes;
    if (b > std::numeric_limits<int64_t>::max() - (kAlign - 1)) return -1;
    return (b + kAlign - 1) / kAlign * kAlign;
}

// Reserves `bytes` against the cap (all or nothing).
bool reserve(int64_t bytes) {
    const int64_t c = cap_bytes().load(std::memory_order_relaxed);
    int64_t cur = g_in_use.load(std::memory_order_relaxed);
    for (;;) {
        if (bytes > std::numeric_limits<int64_t>::max() - cur) return false;
        const int64_t next = cur + bytes;
        if (c > 0 && next > c) return false;
        if (g_in_use.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
            int64_t p = g_peak.load(std::memory_order_relaxed);
            while (next > p && !g_peak.compare_exchange_weak(p, next, std::memory_order_relaxed)) {
            }
            return true;
        }
    }
}

}  // namespace

void *allocate(int64_t bytes) {
    const int64_t r = bytes < 0 ? -1 : rounded(bytes);
    if (r < 0 || uint64_t(r) > std::numeric_limits<size_t>::max()) return nullptr;
    if (!reserve(r)) return nullptr;
    void *p = std::aligned_alloc(size_t(kAlign), size_t(r));
    if (!p) g_in_use.fetch_sub(r, std::memory_order_relaxed);
    return p;
}

void release(void *p, int64_t bytes) {
    if (!p) return;
    std::free(p);
    g_in_use.fetch_sub(rounded(bytes), std::memory_order_relaxed);
}

bool fits_cap(int64_t bytes) {
    const int64_t c = cap_bytes().load(std::memory_order_relaxed);
    return bytes >= 0 && (c == 0 || bytes <= c);
}

anvil_status_t set_cap(int64_t bytes) {
    if (bytes < 0) return anvil_invalid_argument;
    cap_bytes().store(bytes, std::memory_order_relaxed);
    return anvil_success;
}

int64_t cap() { return cap_bytes().load(std::memory_order_relaxed); }
int64_t in_use() { return g_in_use.load(std::memory_order_relaxed); }
int64_t peak() { return g_peak.load(std::memory_order_relaxed); }

bool parse_size(const char *text, int64_t *bytes) {
    if (!text || !*text) return false;
    int64_t v = 0;
    const char *s = text;
    for (; *s >= '0' && *s <= '9'; ++s) {
        if (v > (std::numeric_limits<int64_t>::max() - (*s - '0')) / 10) return false;
        v = v * 10 + (*s - '0');
    }
    if (s == text) return false;
    int shift = 0;
    switch (*s) {
        case '\0': break;
        case 'k': case 'K': shift = 10; ++s; break;
        case 'm': case 'M': shift = 20; ++s; break;
        case 'g': case 'G': shift = 30; ++s; break;
        default: return false;
    }
    if (*s != '\0' || v > (std::numeric_limits<int64_t>::max() >> shift)) return false;
    *bytes = v << shift;
    return true;
}

void *growing_buffer::get(int64_t bytes) {
    if (bytes < 0) return nullptr;
    if (p_ && bytes <= bytes_) return p_;
    release(p_, bytes_);
    p_ = nullptr;
    bytes_ = 0;
    p_ = allocate(bytes);
    if (p_) bytes_ = bytes;
    return p_;
}

}  // namespace anvil::mem
