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

#if HWY_TARGET != HWY_SCALAR
// The shuffle tables of one (in_bytes, out_bytes, flip): the byte index and
// xor of each output byte (the same pattern in every 16-byte block; an
// index's high bit zeroes a padding byte) and the 32-bit lane each block's
// input is moved from.  Built once per thread and kind: a call expands one
// source row of a few hundred pixels, and building them per call (with a
// division) had cost more than the row's shuffles.
struct expand_tables {
    int in_bytes = -1, out_bytes = -1;
    uint8_t flip = 0;
    int64_t per = 0;       // pixels per 16 output bytes
    int64_t block_in = 0;  // input bytes per 16 output bytes
    alignas(64) uint8_t idx[HWY_MAX_BYTES];
    alignas(64) uint8_t x[HWY_MAX_BYTES];
    alignas(64) uint32_t lanes[HWY_MAX_BYTES / 4];
};

const expand_tables &tables_for(int in_bytes, int out_bytes, uint8_t flip) {
    thread_local expand_tables t;
    if (t.in_bytes == in_bytes && t.out_bytes == out_bytes && t.flip == flip) return t;
    t.in_bytes = in_bytes;
    t.out_bytes = out_bytes;
    t.flip = flip;
    t.per = 16 / out_bytes;
    t.block_in = t.per * in_bytes;
    for (int j = 0, px = 0; j < 16; ++px)
        for (int b = 0; b < out_bytes && j < 16; ++b, ++j) {
            const bool keep = b < in_bytes;
            t.idx[j] = keep ? uint8_t(px * in_bytes + b) : uint8_t(0x80);
            t.x[j] = keep ? flip : uint8_t(0);
        }
    for (int64_t b = 0; b < HWY_MAX_BYTES / 16; ++b) {
        for (int j = 0; j < 16; ++j) {
            t.idx[b * 16 + j] = t.idx[j];
            t.x[b * 16 + j] = t.x[j];
        }
        for (int j = 0; j < 4; ++j) t.lanes[b * 4 + j] = uint32_t(b * t.block_in / 4 + j);
    }
    return t;
}
#endif

// 16 output bytes per step (16 / out_bytes pixels, each a byte shuffle of
// the input's next pixels and an xor), or a whole vector of them where the
// vectors are wider and each block's input starts on a 4-byte boundary
// (3 -> 4 bytes: 12 input bytes per block; bf16 3 -> 4 channels likewise):
// a 32-bit lane permute first moves each block's input to the start of its
// block, then the same shuffle runs in every block.  (The 16-byte steps
// alone, tables built per call, were a sixth of the u8 IC = 3 first layer
// of MobileNet-v2.)  Stops while a load would still stay inside the count *
// in_bytes input bytes; returns the pixels done.
int64_t ExpandPixels(const uint8_t *in, int64_t count, int in_bytes, int out_bytes, uint8_t flip,
                     uint8_t *out) {
#if HWY_TARGET == HWY_SCALAR
    // One lane: nothing to shuffle; the caller's byte loop does it all.
    (void)in, (void)count, (void)in_bytes, (void)out_bytes, (void)flip, (void)out;
    return 0;
#else
    const expand_tables &t = tables_for(in_bytes, out_bytes, flip);
    const int64_t in_len = count * in_bytes;
    int64_t px = 0;
    const hn::ScalableTag<uint8_t> dv;
    const int64_t vbytes = int64_t(hn::Lanes(dv));
    if (vbytes > 16 && t.block_in % 4 == 0) {
        const hn::Repartition<uint32_t, decltype(dv)> dv32;
        const auto vidx = hn::Load(dv, t.idx);
        const auto vx = hn::Load(dv, t.x);
        const auto perm = hn::SetTableIndices(dv32, t.lanes);
        const int64_t vper = vbytes / 16 * t.per;  // pixels per step
        for (; px * in_bytes + vbytes <= in_len && px + vper <= count; px += vper) {
            const auto v32 = hn::BitCast(dv32, hn::LoadU(dv, in + px * in_bytes));
            const auto moved = hn::BitCast(dv, hn::TableLookupLanes(v32, perm));
            hn::StoreU(hn::Xor(hn::TableLookupBytesOr0(moved, vidx), vx), dv, out + px * out_bytes);
        }
    }
    const hn::Full128<uint8_t> d;
    const auto vidx = hn::Load(d, t.idx);
    const auto vx = hn::Load(d, t.x);
    for (; px * in_bytes + 16 <= in_len && px + t.per <= count; px += t.per) {
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
    if (out_bytes <= 16 && (out_bytes & (out_bytes - 1)) == 0) px = fn(in, count, in_bytes, out_bytes, flip, out);
    // The last pixels (and sizes the shuffle does not take) byte by byte.
    for (in += px * in_bytes, out += px * out_bytes; px < count;
         ++px, in += in_bytes, out += out_bytes) {
        for (int i = 0; i < in_bytes; ++i) out[i] = uint8_t(in[i] ^ flip);
        for (int i = in_bytes; i < out_bytes; ++i) out[i] = 0;
    }
}

}  // namespace anvil::fallback
#endif  // HWY_ONCE
