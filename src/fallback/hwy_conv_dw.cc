// Highway depthwise-convolution micro-kernels (see hwy_conv_dw.h and the
// contract in conv/dw_ukernel.h).  Compiled once per Highway target through
// foreach_target.h, like hwy_lowp.cc; the HWY_ONCE part at the end is built
// once and picks a target for anvil's ISA cap.

// The f32 / bf16 kernels fuse only through MulAdd; nothing else may be
// contracted (as in hwy_sgemm.cc and hwy_lowp.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "conv/dw_backend.h"
#include "conv/dw_ukernel.h"
#include "cpu/isa.h"
#include "fallback/hwy_conv_dw.h"
#include "fallback/hwy_named_regs.h"
#include "fallback/hwy_sgemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_conv_dw.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
// Its own namespace: per-target names of the other Highway files must not
// collide with these.
namespace anvil::fallback::dw {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using conv::dw_kind;
using conv::dw_ukernel_args;

// At most 16 lanes (the contract's channel vector); wider scalable vectors
// are capped.
using DF = hn::CappedTag<float, conv::kDwLanes>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;

// m accumulators, the weight vector and a src temporary: 8 rows fit 16
// registers (32 on AVX-512); larger m is done in chunks of kRows.
constexpr int kRows = conv::kDwMaxM;
static_assert(kRows <= ANVIL_HWY_MAX_ROWS, "named accumulators");

template <dw_kind K>
constexpr bool kIsFloat = K == dw_kind::f32 || K == dw_kind::bf16;

// Pixel vectors: f32 as is, bf16 shifted up to f32 (exact), u8 / s8 zero- /
// sign-extended to int32.
template <dw_kind K>
HWY_INLINE auto LoadX(const uint8_t *HWY_RESTRICT p) {
    if constexpr (K == dw_kind::f32) {
        return hn::LoadU(DF(), reinterpret_cast<const float *>(p));
    } else if constexpr (K == dw_kind::bf16) {
        const hn::Rebind<uint16_t, DU> d16;
        const auto u = hn::PromoteTo(DU(), hn::LoadU(d16, reinterpret_cast<const uint16_t *>(p)));
        return hn::BitCast(DF(), hn::ShiftLeft<16>(u));
    } else if constexpr (K == dw_kind::u8) {
        const hn::Rebind<uint8_t, DI> d8;
        return hn::PromoteTo(DI(), hn::LoadU(d8, p));
    } else {
        const hn::Rebind<int8_t, DI> d8;
        return hn::PromoteTo(DI(), hn::LoadU(d8, reinterpret_cast<const int8_t *>(p)));
    }
}

// Rows [r0, r0 + kR) of p over the whole vectors of channels [0, c_end):
// per channel vector, the kR accumulators run through every tap, then are
// stored.
template <dw_kind K, bool kZp, int kR>
HWY_NOINLINE void Rows(const dw_ukernel_args *HWY_RESTRICT p, int64_t r0, int64_t c_end) {
    using D = std::conditional_t<kIsFloat<K>, DF, DI>;
    using T = hn::TFromD<D>;
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t elem = conv::dw_src_bytes(K);
    const int64_t ps = p->pix_stride, acc_ld = p->acc_ld, ntaps = p->ntaps;
    T *HWY_RESTRICT acc = static_cast<T *>(p->acc) + r0 * acc_ld;
    const auto zp = hn::Set(DI(), kZp ? p->zero_point : 0);
    (void)zp;
    // Accumulators sR for row R: named, not an array (SVE vectors cannot be
    // array elements; see hwy_named_regs.h).
    for (int64_t c = 0; c < c_end; c += L) {
#define ANVIL_DECLARE_ROW(r) hn::Vec<D> s##r = hn::Zero(d);
        ANVIL_HWY_ROWS(ANVIL_DECLARE_ROW)
#undef ANVIL_DECLARE_ROW
        for (int64_t t = 0; t < ntaps; ++t) {
            const uint8_t *HWY_RESTRICT x = p->src_taps[t] + r0 * ps + c * elem;
            const auto w = hn::LoadU(d, static_cast<const T *>(p->w_taps[t]) + c);
#define ANVIL_TAP_ROW(r)                                                   \
    if constexpr (r < kR) {                                                \
        const auto xv = LoadX<K>(x + r * ps);                              \
        if constexpr (kIsFloat<K>) {                                       \
            s##r = hn::MulAdd(xv, w, s##r);                                \
        } else {                                                           \
            const auto xz = kZp ? hn::Sub(xv, zp) : xv;                    \
            s##r = hn::Add(s##r, hn::Mul(xz, w));                          \
        }                                                                  \
    }
            ANVIL_HWY_ROWS(ANVIL_TAP_ROW)
#undef ANVIL_TAP_ROW
        }
#define ANVIL_STORE_ROW(r) \
    if constexpr (r < kR) hn::StoreU(s##r, d, acc + r * acc_ld + c);
        ANVIL_HWY_ROWS(ANVIL_STORE_ROW)
#undef ANVIL_STORE_ROW
    }
}

template <dw_kind K, bool kZp, int... R>
constexpr auto MakeRowTable(std::integer_sequence<int, R...>) {
    using Fn = void (*)(const dw_ukernel_args *, int64_t, int64_t);
    return std::array<Fn, sizeof...(R)>{{&Rows<K, kZp, R + 1>...}};
}

// Any m >= 1, channels >= 1: whole vectors here in row chunks of at most
// kRows, the last channels % Lanes with the scalar definition (the same
// bits: an fma is exactly rounded; integer arithmetic is exact).  The tail
// never touches src or acc outside [0, channels): no full-vector access
// past the end, no read-modify-write of neighbouring acc entries.
template <dw_kind K, bool kZp>
void Kernel(const dw_ukernel_args *p) {
#if !HWY_NATIVE_FMA
    if constexpr (kIsFloat<K>) {
        conv::dw_ukernel_scalar(p, K, kZp);  // MulAdd would round twice here
        return;
    }
#endif
    static constexpr auto kTable = MakeRowTable<K, kZp>(std::make_integer_sequence<int, kRows>());
    const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
    const int64_t c_vec = p->channels / L * L;
    // Block b's pixel r is row b * m + r of one run of rows: the blocks
    // are walked as one run, in chunks of kRows.
    const int64_t rows = conv::dw_call_rows(*p);
    if (c_vec > 0)
        for (int64_t r0 = 0; r0 < rows; r0 += kRows)
            kTable[size_t(std::min<int64_t>(kRows, rows - r0) - 1)](p, r0, c_vec);
    conv::dw_ukernel_scalar_range(p, K, kZp, c_vec, p->channels);
}

// ---------------------------------------------------- exported per target
void DwDescribeTarget(int64_t *target) { *target = HWY_TARGET; }

conv::dw_ukernel_fn DwGetKernel(dw_kind kind, bool zero_point) {
    switch (kind) {
        case dw_kind::f32: return &Kernel<dw_kind::f32, false>;
        case dw_kind::bf16: return &Kernel<dw_kind::bf16, false>;
        case dw_kind::u8: return zero_point ? &Kernel<dw_kind::u8, true> : &Kernel<dw_kind::u8, false>;
        case dw_kind::s8: return zero_point ? &Kernel<dw_kind::s8, true> : &Kernel<dw_kind::s8, false>;
    }
    return nullptr;
}

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback::dw
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {
namespace dw {

HWY_EXPORT(DwDescribeTarget);
HWY_EXPORT(DwGetKernel);

namespace {

// Fills *out for compiled target t; false if the tables do not hold it.
bool describe(int64_t t, hwy_dw_target *out) {
    size_t idx = 0;
    if (t == 0 || (t & (t - 1)) != 0 || (t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx))
        return false;
    const auto describe_fn = HWY_DISPATCH_TABLE(DwDescribeTarget)[idx];
    if (!describe_fn) return false;
    int64_t reported = 0;
    describe_fn(&reported);
    if (reported != t) return false;
    hwy_dw_target k;
    k.target = t;
    k.name = hwy::TargetName(t);
    k.get = HWY_DISPATCH_TABLE(DwGetKernel)[idx];
    if (!k.get) return false;
    *out = k;
    return true;
}

const char *const kKindNames[4] = {"f32", "bf16", "u8", "s8"};

class hwy_dw_backend_t final : public conv::dw_backend {
public:
    explicit hwy_dw_backend_t(const hwy_dw_target &k) : k_(k), name_(std::string("hwy:") + k.name) {
        for (int i = 0; i < 4; ++i)
            for (int zp = 0; zp < 2; ++zp)
                kernel_names_[i][zp] = name_ + ":conv_dw_" + kKindNames[i] + (zp ? "_zp" : "");
    }
    const char *name() const override { return name_.c_str(); }
    // As the other Highway backends: whatever the target, the avx2 tier's.
    anvil_isa_t tier() const override { return anvil_isa_avx2; }
    anvil_status_t get(const conv::dw_ukernel_desc &d, conv::dw_ukernel_ref *out) const override {
        if (!conv::dw_desc_valid(d)) return anvil_invalid_argument;
        if (d.epi != 0) return anvil_unsupported;  // no fused epilogue here
        if (conv::dw_byte_dot_rows(d.narrow_int) > 0) return anvil_unsupported;  // plain int32 weight rows only
        const conv::dw_ukernel_desc n = conv::make_dw_desc(d.tier, d.kind, d.m, conv::dw_has_zero_point(d));
        const conv::dw_ukernel_fn fn = k_.get(n.kind, conv::dw_has_zero_point(n));
        if (!fn) return anvil_invalid_argument;
        out->fn = fn;
        out->keep_alive.reset();  // static code
        out->name = kernel_names_[int(n.kind)][conv::dw_has_zero_point(n) ? 1 : 0].c_str();
        return anvil_success;
    }

private:
    hwy_dw_target k_;
    std::string name_;
    std::string kernel_names_[4][2];
};

// One backend object per target, made on first use and never destroyed.
const hwy_dw_backend_t *backend_for_target(int64_t t) {
    if (t == 0 || (t & (t - 1)) != 0) return nullptr;
    static std::mutex mu;
    static std::atomic<const hwy_dw_backend_t *> slots[64];
    std::atomic<const hwy_dw_backend_t *> &slot =
        slots[hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(t))];
    if (const hwy_dw_backend_t *b = slot.load(std::memory_order_acquire)) return b;
    std::lock_guard<std::mutex> lock(mu);
    if (const hwy_dw_backend_t *b = slot.load(std::memory_order_relaxed)) return b;
    hwy_dw_target k;
    if (!describe(t, &k)) return nullptr;
    const hwy_dw_backend_t *b = new hwy_dw_backend_t(k);
    slot.store(b, std::memory_order_release);
    return b;
}

const hwy_dw_backend_t *best_for(int64_t supported, anvil_isa_t tier) {
    const int64_t usable = supported & HWY_TARGETS & allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const hwy_dw_backend_t *b = backend_for_target(bits & -bits)) return b;
    return nullptr;
}

// hwy::SupportedTargets() re-runs CPUID on every call: a snapshot.
int64_t supported_once() {
    static const int64_t s = hwy::SupportedTargets();
    return s;
}

}  // namespace
}  // namespace dw

std::vector<hwy_dw_target> compiled_dw_targets() {
    std::vector<hwy_dw_target> out;
    for (int64_t bits = hwy::SupportedTargets() & HWY_TARGETS; bits != 0; bits &= bits - 1) {
        hwy_dw_target k;
        if (dw::describe(bits & -bits, &k)) out.push_back(k);
    }
    return out;
}

const conv::dw_backend *hwy_dw_backend_for_target(int64_t target) {
    return dw::backend_for_target(target);
}

const conv::dw_backend *highway_dw_backend_for(int64_t supported, anvil_isa_t tier) {
    return dw::best_for(supported, tier);
}

}  // namespace anvil::fallback

namespace anvil::conv {

// The cap is read without freezing it, as highway_lp_backend() does.
const dw_backend *highway_dw_backend() {
    return fallback::dw::best_for(fallback::dw::supported_once(), cpu::dispatch_tier(false));
}

}  // namespace anvil::conv
#endif  // HWY_ONCE
