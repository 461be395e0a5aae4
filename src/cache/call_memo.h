// A thread's last few call setups (blocking, kernels), keyed by what they
// were made from: a server repeating a shape skips the blocking and the
// kernel lookups.  A small LRU, like a JIT dispatcher's handle cache; the
// drivers keep one per thread (thread_local), so it takes no lock.  Each
// hit counts as a front-cache hit in the kernel cache's statistics.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"
#include "cache/kernel_cache.h"

namespace anvil::cache {

template <typename Key, typename Setup, int kEntries = 4>
class call_memo {
public:
    // The setup made for key: a remembered one, or make(&setup) run into
    // the least recently used slot.  *out stays valid until the next call
    // on this memo.  A failed make leaves the slot empty.
    template <typename Make>
    anvil_status_t find_or_make(const Key &key, const Make &make, const Setup **out) {
        slot *victim = &slots_[0];
        for (slot &e : slots_) {
            if (e.valid && e.key == key) {
                e.stamp = ++clock_;
                note_front_hit();
                *out = &e.setup;
                return anvil_success;
            }
            if (e.stamp < victim->stamp) victim = &e;
        }
        victim->valid = false;
        const anvil_status_t st = make(&victim->setup);
        if (st != anvil_success) return st;
        victim->key = key;
        victim->valid = true;
        victim->stamp = ++clock_;
        *out = &victim->setup;
        return anvil_success;
    }

private:
    struct slot {
        bool valid = false;
        uint64_t stamp = 0;
        Key key{};
        Setup setup;
    };
    slot slots_[kEntries];
    uint64_t clock_ = 0;
};

}  // namespace anvil::cache
