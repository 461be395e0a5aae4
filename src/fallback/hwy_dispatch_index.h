// Where a compiled Highway target sits in an HWY_EXPORT table (hwy/targets.h,
// 1.0.x): entry 0 is the self-initialising trampoline, entries 1..MAX are the
// dynamic targets in ChosenTarget bit order, MAX + 1 is the EMU128/SCALAR
// fallback.  anvil indexes the tables itself instead of HWY_DYNAMIC_DISPATCH
// because the target must obey anvil's ISA cap, not only what the CPU has,
// and Highway's global chosen target must stay untouched for other users.
// Include only from a Highway file's HWY_ONCE part (after highway.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace anvil::fallback {

// The table index of target t (one HWY_* bit); false when the tables of
// this build cannot hold it.
inline bool hwy_dispatch_index(int64_t t, size_t *idx) {
#if HWY_IDE || ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
    *idx = 0;
    return t == HWY_TARGETS;
#else
    if (t == HWY_EMU128 || t == HWY_SCALAR) {
        *idx = HWY_MAX_DYNAMIC_TARGETS + 1;
        return true;
    }
    const int64_t shifted = HWY_CHOSEN_TARGET_SHIFT(t);
    if (shifted == 0) return false;
    *idx = hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(shifted));
    return true;
#endif
}

// The table index of compiled target t (one HWY_* bit), confirmed by the
// target's own entry of `describe_table` (the HWY_DISPATCH_TABLE of an
// exported function void(int64_t *) that reports its HWY_TARGET); false
// when t is not one compiled target.
template <class DescribeTable>
inline bool hwy_confirmed_index(int64_t t, const DescribeTable &describe_table, size_t *idx) {
    if (t == 0 || (t & (t - 1)) != 0 || (t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, idx))
        return false;
    const auto describe = describe_table[*idx];
    if (!describe) return false;
    int64_t reported = 0;
    describe(&reported);
    return reported == t;
}

}  // namespace anvil::fallback
