// Highway implementation of fallback::interleave_panels (hwy_interleave.h),
// compiled once per Highway target through foreach_target.h like the other
// Highway files; the HWY_ONCE part picks the target for anvil's ISA cap.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/isa.h"
#include "fallback/hwy_interleave.h"
#include "fallback/hwy_sgemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_interleave.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback::il {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The unpacks work inside 128-bit blocks: unpacking two 32-byte vectors
// gives, in block L of output q, what sat in block L of the inputs.  The
// rows' dwords are first permuted so that the outputs come out in column
// order: int8 (4 rows of bytes, unpacked twice) output q holds columns
// [8 q, 8 q + 8), so input dword 4 L + q takes source dword 2 q + L; bf16
// (2 rows of 16-bit elements, unpacked once) output q holds columns
// [8 q, 8 q + 8) of a 16-column step, so input dwords 4 L + 2 q + e take
// source dword 4 q + 2 L + e.
int64_t InterleavePanels(int elem, const uint8_t *const *rows, int64_t panels, uint8_t *dst,
                         int64_t panel_stride) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    const hn::Full256<uint8_t> d8;
    const hn::Full256<uint16_t> d16;
    const hn::Full256<uint32_t> d32;
    alignas(32) static constexpr int32_t kInt8Order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    alignas(32) static constexpr int32_t kBf16Order[8] = {0, 1, 4, 5, 2, 3, 6, 7};
    const auto order = hn::SetTableIndices(d32, elem == 1 ? kInt8Order : kBf16Order);
    auto load = [&](const uint8_t *p) {
        return hn::BitCast(d8, hn::TableLookupLanes(hn::BitCast(d32, hn::LoadU(d8, p)), order));
    };
    if (elem == 1) {
        for (int64_t p = 0; p < panels; ++p) {
            const int64_t off = p * 32;
            const auto x0 = load(rows[0] + off), x1 = load(rows[1] + off);
            const auto x2 = load(rows[2] + off), x3 = load(rows[3] + off);
            const auto a = hn::BitCast(d16, hn::InterleaveLower(d8, x0, x1));
            const auto b = hn::BitCast(d16, hn::InterleaveUpper(d8, x0, x1));
            const auto c = hn::BitCast(d16, hn::InterleaveLower(d8, x2, x3));
            const auto e = hn::BitCast(d16, hn::InterleaveUpper(d8, x2, x3));
            uint8_t *out = dst + p * panel_stride;
            hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, a, c)), d8, out);
            hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, a, c)), d8, out + 32);
            hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, b, e)), d8, out + 64);
            hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, b, e)), d8, out + 96);
        }
        return panels;
    }
    // bf16: 64 bytes of each row per panel, two 16-column steps.
    for (int64_t p = 0; p < panels; ++p) {
        uint8_t *out = dst + p * panel_stride;
        for (int h = 0; h < 2; ++h) {
            const int64_t off = p * 64 + h * 32;
            const auto x0 = hn::BitCast(d16, load(rows[0] + off));
            const auto x1 = hn::BitCast(d16, load(rows[1] + off));
            hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, x0, x1)), d8, out + h * 64);
            hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, x0, x1)), d8, out + h * 64 + 32);
        }
    }
    return panels;
#else
    (void)elem, (void)rows, (void)panels, (void)dst, (void)panel_stride;
    return 0;
#endif
}

void IlDescribeTarget(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback::il
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
#include "fallback/hwy_tier_pick.h"
namespace anvil::fallback {
namespace il {

HWY_EXPORT(IlDescribeTarget);
HWY_EXPORT(InterleavePanels);

namespace {

using interleave_fn = interleave_panels_fn;

// The function of each tier, found on first use.
interleave_fn target_for(anvil_isa_t tier) {
    static hwy_tier_pick<interleave_fn> pick;
    return pick.get(tier, ANVIL_HWY_FUNCTION_FOR_TARGET(interleave_fn, IlDescribeTarget, InterleavePanels),
                    &HWY_STATIC_DISPATCH(InterleavePanels));
}

}  // namespace
}  // namespace il

int64_t interleave_panels(int elem, const uint8_t *const rows[4], int64_t panels, uint8_t *dst,
                          int64_t panel_stride) {
    if (panels <= 0 || (elem != 1 && elem != 2)) return 0;
    return il::target_for(cpu::dispatch_tier(false))(elem, rows, panels, dst, panel_stride);
}

interleave_panels_fn interleave_panels_for_cap() { return il::target_for(cpu::dispatch_tier(false)); }

}  // namespace anvil::fallback
#endif  // HWY_ONCE
