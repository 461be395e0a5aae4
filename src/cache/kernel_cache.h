// A bounded (LRU) cache of generated kernels keyed by descriptor bytes.
// Each key is generated exactly once even when many threads ask for it at
// the same moment: the first caller inserts a pending entry and generates
// outside the lock; the others wait for that result.  Evicted kernels stay
// alive while a caller still holds them (shared_ptr).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "anvil/anvil.h"

namespace anvil::cache {

// A piece of generated code.  Owns its executable mapping.
class kernel {
public:
    virtual ~kernel() = default;
    virtual const void *entry() const = 0;
    virtual const std::string &name() const = 0;
    virtual size_t code_size() const = 0;
    double generation_seconds = 0;
};

using kernel_ptr = std::shared_ptr<const kernel>;
using generator_fn = std::function<anvil_status_t(kernel_ptr *out)>;

// Returns the cached kernel for key, generating it with gen on a miss.
anvil_status_t get_or_generate(const std::string &key, const generator_fn &gen,
                               kernel_ptr *out);

// Counts a hit served by a caller's own front cache (see the JIT backend's
// per-thread lookup), so the statistics cover every lookup.
void note_front_hit();
// This thread's counter behind note_front_hit(), for a hot path that keeps
// the pointer (one thread-local lookup less per call): add 1 with a relaxed
// load and store, only on this thread.  Valid until the thread exits.
std::atomic<int64_t> *this_thread_hits();

// Bumped by clear(): front caches drop their entries when it changes.
// Inline: read on every repeated small call.
extern std::atomic<uint64_t> g_epoch;
inline uint64_t epoch() { return g_epoch.load(std::memory_order_acquire); }

void set_capacity(int64_t capacity);
anvil_cache_stats_t stats();
void clear();

}  // namespace anvil::cache
