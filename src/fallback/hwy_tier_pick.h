// One Highway function per anvil ISA tier, picked on first use: the best
// target that the CPU supports, this build compiled and the tier allows
// (allowed_targets), else the static-dispatch fallback.  For Highway files
// that export a single function (hwy_expand.cc, hwy_interleave.cc) and a
// describe function that stores HWY_TARGET.  Include only from a Highway
// file's HWY_ONCE part (after hwy_dispatch_index.h).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "anvil/anvil.h"
#include "fallback/hwy_sgemm.h"

// A captureless lambda int64_t t -> FnType: the function FN compiled for
// Highway target t (one HWY_* bit), or null when this build's tables do not
// hold t; DESCRIBE, exported beside FN, confirms which target the slot has.
// A macro because the export tables are named after the functions.
#define ANVIL_HWY_FUNCTION_FOR_TARGET(FnType, DESCRIBE, FN)                                  \
    [](int64_t t) -> FnType {                                                                \
        size_t idx = 0;                                                                      \
        if (t == 0 || (t & (t - 1)) != 0 || (t & HWY_TARGETS) == 0 ||                        \
            !::anvil::fallback::hwy_dispatch_index(t, &idx))                                 \
            return nullptr;                                                                  \
        const auto describe_fn = HWY_DISPATCH_TABLE(DESCRIBE)[idx];                          \
        if (!describe_fn) return nullptr;                                                    \
        int64_t reported = 0;                                                                \
        describe_fn(&reported);                                                              \
        return reported == t ? HWY_DISPATCH_TABLE(FN)[idx] : nullptr;                        \
    }

namespace anvil::fallback {

template <typename Fn>
class hwy_tier_pick {
public:
    // One acquire load once the tier's function is known.
    Fn get(anvil_isa_t tier, Fn (*describe)(int64_t), Fn fallback) {
        const int slot_index = std::min(std::max(int(tier), 0), kTiers - 1);
        std::atomic<Fn> &slot = slots_[slot_index];
        if (const Fn f = slot.load(std::memory_order_acquire)) return f;
        std::lock_guard<std::mutex> lock(mu_);
        if (const Fn f = slot.load(std::memory_order_relaxed)) return f;
        static const int64_t supported = hwy::SupportedTargets();
        const int64_t usable = supported & HWY_TARGETS & allowed_targets(anvil_isa_t(slot_index));
        Fn f = nullptr;
        for (int64_t bits = usable; bits != 0 && !f; bits &= bits - 1) f = describe(bits & -bits);
        if (!f) f = fallback;
        slot.store(f, std::memory_order_release);
        return f;
    }

private:
    static constexpr int kTiers = anvil_isa_amx + 1;
    std::mutex mu_;
    std::atomic<Fn> slots_[kTiers] = {};
};

}  // namespace anvil::fallback
