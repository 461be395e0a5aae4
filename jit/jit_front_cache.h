// Per-thread front of the kernel cache, shared by the JIT backends: a small
// direct-mapped table keyed by a kernel's 8 descriptor bytes, so a cached
// call costs no lock and no string.  Each backend keeps its own
// thread_local instance, so keys of different backends never collide.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include <new>
#include <string>

#include "cache/kernel_cache.h"
#include "common/jit_state.h"
#include "jit/jit_generator.h"  // Xbyak (its Error type)

namespace anvil::jit {

// It holds its kernels alive, bounded by its size, after a global eviction.
class front_cache {
public:
    static constexpr int kSlots = 64;
    const cache::kernel_ptr *find(uint64_t key) {
        const uint64_t e = cache::epoch();
        if (e != epoch_) {  // the cache was cleared: forget what we held
            for (slot &s : slots_) s.k.reset();
            epoch_ = e;
        }
        const slot &s = slots_[index(key)];
        return (s.k && s.key == key) ? &s.k : nullptr;
    }
    void put(uint64_t key, cache::kernel_ptr k) {
        slot &s = slots_[index(key)];
        s.key = key;
        s.k = std::move(k);
    }

private:
    struct slot {
        uint64_t key = 0;
        cache::kernel_ptr k;
    };
    static int index(uint64_t key) {
        return int((key * 0x9E3779B97F4A7C15ull) >> 58);  // top 6 bits
    }
    slot slots_[kSlots];
    uint64_t epoch_ = 0;
};

// A descriptor's bytes as the front-cache key.
template <typename Desc>
uint64_t desc_bits(const Desc &d) {
    static_assert(sizeof(Desc) == sizeof(uint64_t), "descriptors are 8 bytes");
    uint64_t v;
    std::memcpy(&v, &d, sizeof(v));
    return v;
}

// The kernel for descriptor d (any size) from the shared cache (key:
// key_prefix + the descriptor bytes), generating it with Gen(d) /
// Gen::kernel_name(d) on a miss.  Generator failures become
// anvil_jit_error, allocation failures anvil_out_of_memory.
template <typename Gen, typename Desc>
anvil_status_t shared_kernel(const Desc &d, const char *key_prefix, cache::kernel_ptr *out) {
    std::string key = key_prefix;
    key.append(reinterpret_cast<const char *>(&d), sizeof(d));
    return cache::get_or_generate(
        key,
        [&](cache::kernel_ptr *made) -> anvil_status_t {
            try {
                Gen gen(d);
                return gen.finalize(Gen::kernel_name(d), made);
            } catch (const Xbyak::Error &e) {
                jit_state::report_failure(Gen::kernel_name(d), e.what());
                return anvil_jit_error;
            } catch (const std::bad_alloc &) {
                return anvil_out_of_memory;
            }
        },
        out);
}

// The same, from this thread's front cache first (8-byte descriptors).
template <typename Gen, typename Desc>
anvil_status_t cached_kernel(front_cache &front, const Desc &d, const char *key_prefix,
                             cache::kernel_ptr *out) {
    const uint64_t bits = desc_bits(d);
    if (const cache::kernel_ptr *hit = front.find(bits)) {
        cache::note_front_hit();
        *out = *hit;
        return anvil_success;
    }
    const anvil_status_t st = shared_kernel<Gen>(d, key_prefix, out);
    if (st != anvil_success) return st;
    front.put(bits, *out);
    return anvil_success;
}

}  // namespace anvil::jit
