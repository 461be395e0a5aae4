#include "cache/kernel_cache.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/env.h"
#include "common/verbose.h"

namespace anvil::cache {
namespace {

struct entry {
    kernel_ptr k;                // null while pending
    anvil_status_t status = anvil_success;
    bool pending = true;
    std::list<std::string>::iterator lru_pos;  // valid once ready
};

class lru_cache {
public:
    lru_cache() : capacity_(env::get().kernel_cache_capacity) {}

    anvil_status_t get(const std::string &key, const generator_fn &gen, kernel_ptr *out) {
        std::unique_lock<std::mutex> lk(mu_);
        for (;;) {
            auto it = map_.find(key);
            if (it == map_.end()) break;
            std::shared_ptr<entry> e = it->second;
            if (!e->pending) {
                if (e->status != anvil_success) return e->status;
                ++hits_;
                lru_.splice(lru_.begin(), lru_, e->lru_pos);
                *out = e->k;
                if (verbose::level() >= 2)
                    verbose::emit("cache,hit,kernel=" + e->k->name());
                return anvil_success;
            }
            // Someone else is generating this key: wait for it.
            cv_.wait(lk, [&] { return !e->pending; });
            if (e->status != anvil_success) return e->status;
            // Loop: the entry may have been evicted meanwhile, but we hold it.
            ++hits_;
            *out = e->k;
            return anvil_success;
        }
        auto e = std::make_shared<entry>();
        map_.emplace(key, e);
        ++misses_;
        lk.unlock();

        kernel_ptr k;
        const double t0 = verbose::now_seconds();
        anvil_status_t st = gen(&k);
        const double dt = verbose::now_seconds() - t0;
        if (st == anvil_success && !k) st = anvil_runtime_error;

        lk.lock();
        e->pending = false;
        e->status = st;
        if (st == anvil_success) {
            const_cast<kernel *>(k.get())->generation_seconds = dt;
            e->k = k;
            gen_seconds_ += dt;
            lru_.push_front(key);
            e->lru_pos = lru_.begin();
            evict_locked();
        } else {
            map_.erase(key);  // let a later call retry
        }
        cv_.notify_all();
        lk.unlock();
        if (verbose::level() >= 1) {
            verbose::emit("cache,miss,kernel=" + (k ? k->name() : std::string("?")) +
                          ",status=" + anvil_status_str(st) +
                          ",gen_us=" + std::to_string(dt * 1e6) +
                          ",code_bytes=" + std::to_string(k ? k->code_size() : 0));
        }
        if (st != anvil_success) return st;
        *out = k;
        return anvil_success;
    }

    void set_capacity(int64_t c) {
        std::lock_guard<std::mutex> lk(mu_);
        capacity_ = c;
        evict_locked();
    }

    anvil_cache_stats_t stats() {
        std::lock_guard<std::mutex> lk(mu_);
        anvil_cache_stats_t s{};
        s.hits = hits_;
        s.misses = misses_;
        s.evictions = evictions_;
        s.size = int64_t(lru_.size());
        s.capacity = capacity_;
        s.generation_seconds = gen_seconds_;
        return s;
    }

    void clear() {
        std::lock_guard<std::mutex> lk(mu_);
        for (const auto &key : lru_) map_.erase(key);
        lru_.clear();
    }

private:
    void evict_locked() {
        while (int64_t(lru_.size()) > capacity_) {
            map_.erase(lru_.back());
            lru_.pop_back();
            ++evictions_;
        }
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::unordered_map<std::string, std::shared_ptr<entry>> map_;
    std::list<std::string> lru_;  // front = most recently used; ready entries only
    int64_t capacity_;
    int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
    double gen_seconds_ = 0;
};

void print_summary();

lru_cache &instance() {
    static lru_cache *c = [] {
        auto *cache = new lru_cache();  // never destroyed: kernels may outlive statics
        // ANVIL_VERBOSE=1: one summary line of the cache's work at exit.
        if (verbose::level() >= 1) std::atexit(print_summary);
        return cache;
    }();
    return *c;
}

void print_summary() {
    const anvil_cache_stats_t st = stats();
    verbose::emit("cache,summary,hits=" + std::to_string(st.hits) +
                  ",misses=" + std::to_string(st.misses) +
                  ",evictions=" + std::to_string(st.evictions) +
                  ",size=" + std::to_string(st.size) + ",capacity=" + std::to_string(st.capacity) +
                  ",gen_ms=" + std::to_string(st.generation_seconds * 1e3));
}

}  // namespace

anvil_status_t get_or_generate(const std::string &key, const generator_fn &gen, kernel_ptr *out) {
    return instance().get(key, gen, out);
}
void set_capacity(int64_t capacity) { instance().set_capacity(capacity); }
namespace {

// Front-cache hits (one per call that reuses a thread's setup) are counted
// per thread: a shared atomic counter costs a locked add on every small
// call and bounces its cache line between the threads of a server that
// calls from many.  Each thread's counter is registered while the thread
// lives; a finishing thread adds its count to `retired`.  The registry is
// never destroyed (threads may finish after static destructors ran).
struct hit_registry {
    std::mutex mu;
    std::vector<const std::atomic<int64_t> *> live;
    int64_t retired = 0;
};
hit_registry &registry() {
    static hit_registry *r = new hit_registry;
    return *r;
}

struct thread_hits {
    std::atomic<int64_t> n{0};
    thread_hits() {
        hit_registry &r = registry();
        std::lock_guard<std::mutex> lk(r.mu);
        r.live.push_back(&n);
    }
    ~thread_hits() {
        hit_registry &r = registry();
        std::lock_guard<std::mutex> lk(r.mu);
        r.retired += n.load(std::memory_order_relaxed);
        r.live.erase(std::find(r.live.begin(), r.live.end(), &n));
    }
};
thread_local thread_hits t_hits;

}  // namespace

std::atomic<uint64_t> g_epoch{0};
std::atomic<int64_t> *this_thread_hits() { return &t_hits.n; }
void note_front_hit() {
    // Only this thread writes its counter: a plain load and store, no lock.
    t_hits.n.store(t_hits.n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
anvil_cache_stats_t stats() {
    anvil_cache_stats_t s = instance().stats();
    hit_registry &r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    s.hits += r.retired;
    for (const std::atomic<int64_t> *n : r.live) s.hits += n->load(std::memory_order_relaxed);
    return s;
}
void clear() {
    instance().clear();
    g_epoch.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace anvil::cache

extern "C" {
anvil_status_t anvil_set_kernel_cache_capacity(int64_t capacity) {
    if (capacity < 1) return anvil_invalid_argument;
    anvil::cache::set_capacity(capacity);
    return anvil_success;
}
anvil_status_t anvil_get_kernel_cache_stats(anvil_cache_stats_t *stats) {
    if (!stats) return anvil_null_pointer;
    *stats = anvil::cache::stats();
    return anvil_success;
}
anvil_status_t anvil_clear_kernel_cache(void) {
    anvil::cache::clear();
    return anvil_success;
}
}
