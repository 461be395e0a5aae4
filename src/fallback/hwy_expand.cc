// Highway implementation of fallback::expand_pixels (hwy_expand.h),
// compiled once per Highway target through foreach_target.h like the other
// Highway files; the HWY_ONCE part picks the target for anvil's ISA cap.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/isa.h"
#include "fallback/hwy_expand.h"
#include "fallback/hwy_sgemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_expand.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback::ex {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 16 output bytes per step: 16 / out_bytes pixels, each one byte shuffle
// of the input's next in_bytes-byte pixels (the index's high bit zeroes
// the padding bytes) and an xor.  Stops while a 16-byte load would still
// stay inside the count * in_bytes input bytes; returns the pixels done.
int64_t ExpandPixels(const uint8_t *in, int64_t count, int in_bytes, int out_bytes, uint8_t flip,
                     uint8_t *out) {
#if HWY_TARGET == HWY_SCALAR
    // One lane: nothing to shuffle; the caller's byte loop does it all.
    (void)in, (void)count, (void)in_bytes, (void)out_bytes, (void)flip, (void)out;
    return 0;
#else
    const hn::Full128<uint8_t> d;
    alignas(16) uint8_t idx[16], x[16];
    // (No division: this runs once per source row of a few hundred pixels.)
    for (int j = 0, px = 0; j < 16; ++px)
        for (int b = 0; b < out_bytes && j < 16; ++b, ++j) {
            const bool keep = b < in_bytes;
            idx[j] = keep ? uint8_t(px * in_bytes + b) : uint8_t(0x80);
            x[j] = keep ? flip : uint8_t(0);
        }
    const auto vidx = hn::Load(d, idx);
    const auto vx = hn::Load(d, x);
    const int64_t per = 16 / out_bytes;
    const int64_t in_len = count * in_bytes;
    int64_t px = 0;
    for (; px * in_bytes + 16 <= in_len && px + per <= count; px += per) {
        const auto v = hn::LoadU(d, in + px * in_bytes);
        hn::StoreU(hn::Xor(hn::TableLookupBytesOr0(v, vidx), vx), d, out + px * out_bytes);
    }
    return px;
#endif
}

void ExDescribeTarget(int64_t *target) { *target = HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback::ex
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
#include "fallback/hwy_tier_pick.h"
namespace anvil::fallback {
namespace ex {

HWY_EXPORT(ExDescribeTarget);
HWY_EXPORT(ExpandPixels);

namespace {

using expand_fn = int64_t (*)(const uint8_t *, int64_t, int, int, uint8_t, uint8_t *);

// The function of each tier, found on first use.
expand_fn target_for(anvil_isa_t tier) {
    static hwy_tier_pick<expand_fn> pick;
    return pick.get(tier, ANVIL_HWY_FUNCTION_FOR_TARGET(expand_fn, ExDescribeTarget, ExpandPixels),
                    &HWY_STATIC_DISPATCH(ExpandPixels));
}

}  // namespace
}  // namespace ex

void expand_pixels(const uint8_t *in, int64_t count, int in_bytes, int out_bytes, uint8_t flip,
                   uint8_t *out) {
    if (count <= 0 || in_bytes < 1 || in_bytes > out_bytes) return;
    const ex::expand_fn fn = ex::target_for(cpu::dispatch_tier(false));
    int64_t px = 0;
    if (in_bytes == out_bytes) {
        // A plain copy with the xor: whole 16-byte blocks, then the rest.
        const int64_t total = count * in_bytes;
        const int64_t done = fn(in, total / 16, 16, 16, flip, out) * 16;
        for (int64_t i = done; i < total; ++i) out[i] = uint8_t(in[i] ^ flip);
        return;
    }
    if (out_bytes <= 16 && 16 % out_bytes == 0) px = fn(in, count, in_bytes, out_bytes, flip, out);
    // The last pixels (and sizes the shuffle does not take) byte by byte.
    for (in += px * in_bytes, out += px * out_bytes; px < count;
         ++px, in += in_bytes, out += out_bytes) {
        for (int i = 0; i < in_bytes; ++i) out[i] = uint8_t(in[i] ^ flip);
        for (int i = in_bytes; i < out_bytes; ++i) out[i] = 0;
    }
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
