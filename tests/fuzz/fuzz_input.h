// Shared by the fuzz targets (tests/fuzz/fuzz_*.cpp): a reader that turns
// the fuzzer's bytes into values, and a deterministic fill generator.
//
// Every read succeeds: past the end of the input the reader returns zeros,
// so any byte string decodes to some sequence of calls (libFuzzer's
// mutations never hit a "too short" dead end).  tests/fuzz/make_seeds.py
// writes the seed corpora in this encoding; keep the two in step.
#pragma once
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define FZ_HAVE_SANITIZER_API 1
#endif
#endif
#if !defined(FZ_HAVE_SANITIZER_API) && defined(__SANITIZE_ADDRESS__)
#define FZ_HAVE_SANITIZER_API 1
#endif
#ifdef FZ_HAVE_SANITIZER_API
#include <sanitizer/common_interface_defs.h>
#endif

// Defined (as 1) by the replay driver, tests/fuzz/replay_main.cpp; absent
// (address 0) in the libFuzzer binaries.
extern "C" __attribute__((weak)) int fz_replay_driver;

namespace fz {

// Under the replay driver: runs fn when a sanitizer reports an error or
// SIGTERM / SIGALRM arrive (`timeout 10 fuzz_replay_x hang-input`), to
// print the decoded call.  Nothing under libFuzzer: it keeps signal
// handlers that are already installed instead of its own (which detect
// timeouts and save the input), and replaces the death callback.
inline void (*g_report_fn)() = nullptr;
inline void on_death_or_timeout(void (*fn)()) {
    if (&fz_replay_driver == nullptr) return;
    g_report_fn = fn;
#ifdef FZ_HAVE_SANITIZER_API
    __sanitizer_set_death_callback(fn);
#endif
    auto handler = [](int sig) {
        if (g_report_fn) g_report_fn();
        std::signal(sig, SIG_DFL);
        std::raise(sig);
    };
    std::signal(SIGTERM, handler);
    std::signal(SIGALRM, handler);
}

class reader {
public:
    reader(const uint8_t *data, size_t size) : p_(data), n_(size) {}

    bool empty() const { return n_ == 0; }

    uint8_t u8() {
        if (n_ == 0) return 0;
        --n_;
        return *p_++;
    }
    uint16_t u16() { return uint16_t(u8() | (uint16_t(u8()) << 8)); }
    uint32_t u32() { return uint32_t(u16()) | (uint32_t(u16()) << 16); }
    uint64_t u64() { return uint64_t(u32()) | (uint64_t(u32()) << 32); }
    int32_t i32() { return int32_t(u32()); }
    int64_t i64() { return int64_t(u64()); }
    // An integer in [lo, hi] from one byte (hi - lo < 256).
    int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(u8() % uint64_t(hi - lo + 1)); }
    bool flag() { return u8() & 1; }
    float f32() {
        const uint32_t b = u32();
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    }

    // A size for the hostile-argument target: mostly small, with the edges
    // of int64 and a few products that overflow when multiplied.
    //   byte <  128: the byte itself (0..127)
    //   byte <  192: a 16-bit value (next two bytes)
    //   byte <  240: an entry of the edge table
    //   otherwise:   a raw int64 (next eight bytes)
    int64_t size() {
        const uint8_t b = u8();
        if (b < 128) return b;
        if (b < 192) return u16();
        if (b < 240) return edge(b - 192);
        return i64();
    }

    // A leading dimension for a matrix with `cols` columns: usually valid
    // (cols + a small pad; max(1, cols) when cols <= 0), sometimes just too
    // small, otherwise a size() value.
    //   byte <  96: max(1, cols) + byte % 8
    //   byte < 128: max(1, cols) - 1 - byte % 4  (too small by 1..4)
    //   otherwise:  as size(), with the byte given back (re-read)
    int64_t ld(int64_t cols) {
        const uint8_t b = u8();
        const int64_t base = cols > 1 ? cols : 1;
        if (b < 96) return sat_add(base, b % 8);
        if (b < 128) return sat_add(base, -1 - int64_t(b % 4));
        if (b < 192) return u16();
        if (b < 240) return edge(b - 192);
        return i64();
    }

    static int64_t edge(int i) {
        static const int64_t t[] = {
            -1,
            -2,
            std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max(),
            std::numeric_limits<int64_t>::max() - 1,
            std::numeric_limits<int64_t>::max() / 2,
            std::numeric_limits<int64_t>::max() / 4 + 1,
            std::numeric_limits<int64_t>::max() / 64,
            int64_t(1) << 62,
            int64_t(1) << 40,
            (int64_t(1) << 40) + 1,
            int64_t(1) << 32,
            (int64_t(1) << 32) + 1,
            (int64_t(1) << 31) - 1,
            int64_t(1) << 31,
            int64_t(3037000499),  // floor(sqrt(2^63 - 1))
            int64_t(3037000500),
            int64_t(1) << 21,
            int64_t(1) << 24,
            65536,
            65537,
            -(int64_t(1) << 31),
            -(int64_t(1) << 62),
            std::numeric_limits<int64_t>::min() + 1,
            int64_t(0x7fffffffffffffc0),
            1000000007,
            int64_t(1) << 30,
            4611686018427387903,  // 2^62 - 1
            256,
            257,
            1023,
            1024,
            -64,
            32,
            33,
            0,
            1,
            2,
            3,
            4,
            12,
            13,
            16,
            31,
            48,
            63,
            64,
            65,
        };
        return t[i % int(sizeof(t) / sizeof(t[0]))];
    }

    static int64_t sat_add(int64_t a, int64_t b) {
        int64_t r;
        if (__builtin_add_overflow(a, b, &r))
            return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
        return r;
    }

private:
    const uint8_t *p_;
    size_t n_;
};

// Deterministic fill values (splitmix64), so inputs stay short: a seed
// byte or two decides a whole buffer.
struct rng {
    uint64_t s;
    explicit rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Integer in [lo, hi].
    int64_t in(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
};

}  // namespace fz
