// Depthwise-convolution micro-kernels (conv/dw_ukernel.h): every backend
// usable under the process's ISA cap (JIT AVX-512, Highway, scalar) against
// a plain loop written here, over kind x m 1..8 x nblocks 1..3 (blocks of
// m pixels along a row, one call) x channel counts around the
// 16-lane vector x tap counts x contiguous / strided pixels x zero points.
// Integer-valued f32 / bf16 data keeps every sum exact, so results compare
// with ==; the int kinds are exact (wrapping) anyway.  src ends right
// before a PROT_NONE page (the channel tail must be masked), weight rows
// end at their 16-padding before another one, and acc entries outside rows
// < m and channels < channels are sentinels that must survive.  f32 random
// fractions must match a std::fma loop bit for bit (the contract's order).
//
// ctest runs this once per ISA cap; the "once" case runs the sweep on every
// compiled Highway target (SSE4, SSSE3, ... are never chosen on this CPU).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "conv/dw_backend.h"
#include "conv/dw_ukernel.h"
#include "cpu/isa.h"
#include "fallback/hwy_conv_dw.h"
#include "lowp/chain_epilogue.h"
#include "test_util.h"

namespace {

using anvil::conv::dw_backend;
using anvil::conv::dw_kind;
using anvil::conv::dw_ukernel_args;
using anvil::conv::dw_ukernel_desc;
using anvil::conv::dw_ukernel_ref;
using anvil::conv::kDwLanes;
using anvil::conv::kDwMaxM;

constexpr uint32_t kSentinel = 0x7fa5c3e1u;
constexpr int64_t kMargin = 37;
const int64_t kChannels[] = {1, 2, 15, 16, 17, 31, 33, 48, 50, 64 + 13};
const int64_t kNtaps[] = {0, 1, 2, 9, 25};
constexpr int64_t kMaxChannels = 128 + 2;  // the byte-dot sweep's largest
constexpr int64_t kMaxNtaps = 25;
constexpr int64_t kMaxBlocks = 3;
constexpr int64_t kMaxRows = kDwMaxM * kMaxBlocks;  // pixels of one call
// nblocks of the sweep's calls, in turn.
const int64_t kBlocks[] = {1, 3, 2};

const char *kind_name(dw_kind k) {
    switch (k) {
        case dw_kind::f32: return "f32";
        case dw_kind::bf16: return "bf16";
        case dw_kind::u8: return "u8";
        default: return "s8";
    }
}

bool is_int(dw_kind k) { return k == dw_kind::u8 || k == dw_kind::s8; }
int64_t padded(int64_t c) { return (c + kDwLanes - 1) / kDwLanes * kDwLanes; }

float bf16_value(uint16_t h) { return tu::from_bits(uint32_t(h) << 16); }

// Every backend that runs under the current cap, best first (no
// duplicates; the scalar one always).
std::vector<const dw_backend *> backends_under_cap() {
    std::vector<const dw_backend *> v;
    if (anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core)
        if (const dw_backend *b = anvil::conv::jit_avx512_dw_backend()) v.push_back(b);
    if (anvil::cpu::effective_tier(false) != anvil_isa_scalar || !anvil::cpu::info().detected)
        if (const dw_backend *b = anvil::conv::highway_dw_backend()) v.push_back(b);
    // Under the scalar cap Highway still has its SIMD-free target: test it.
    if (const dw_backend *b = anvil::conv::highway_dw_backend())
        if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
    v.push_back(anvil::conv::scalar_dw_backend());
    return v;
}

// The operands of one call, placed against guard pages: the taps' src
// regions back to back with the last one ending at the src guard, the
// weight rows (16-padded) back to back with the last one ending at the
// weight guard.  Bytes between pixels (strided src) and the weights'
// padding hold junk (0xff: NaN for f32 / bf16).
struct operands {
    tu::guarded gsrc{size_t(kMaxNtaps) * size_t((kMaxRows - 1) * 2 + 1) * kMaxChannels * 4 + 4096};
    tu::guarded gw{size_t(kMaxNtaps) * size_t(padded(kMaxChannels)) * 4 + 4096};
    std::vector<const uint8_t *> src_taps;
    std::vector<const void *> w_taps;
    int64_t pix_stride = 0;

    // Lays out ntaps taps for m pixels (all blocks of a call); fill(x,
    // is_weight) gives values.
    template <typename FillSrc, typename FillW>
    void place(dw_kind kind, int m, int64_t channels, int64_t ntaps, int64_t stride_pixels,
               bool reverse, FillSrc fill_src, FillW fill_w) {
        const int64_t elem = anvil::conv::dw_src_bytes(kind);
        pix_stride = stride_pixels * channels * elem;
        const int64_t tap_bytes = (m - 1) * pix_stride + channels * elem;
        const int64_t w_bytes = padded(channels) * 4;
        uint8_t *src0 = reinterpret_cast<uint8_t *>(gsrc.end()) - ntaps * tap_bytes;
        uint8_t *w0 = reinterpret_cast<uint8_t *>(gw.end()) - ntaps * w_bytes;
        src_taps.assign(size_t(ntaps), nullptr);
        w_taps.assign(size_t(ntaps), nullptr);
        for (int64_t i = 0; i < ntaps; ++i) {
            const int64_t t = reverse ? ntaps - 1 - i : i;  // which tap owns region i
            uint8_t *s = src0 + i * tap_bytes;
            std::memset(s, 0xff, size_t(tap_bytes));
            for (int r = 0; r < m; ++r)
                for (int64_t c = 0; c < channels; ++c) fill_src(s + r * pix_stride + c * elem);
            uint8_t *w = w0 + i * w_bytes;
            std::memset(w, 0xff, size_t(w_bytes));
            for (int64_t c = 0; c < channels; ++c) fill_w(w + c * 4);
            src_taps[size_t(t)] = s;
            w_taps[size_t(t)] = w;
        }
    }
};

// Taps in groups of R along a row, S = step taps per pixel step (the
// row_taps promise): columns are pix_stride / S apart (stride_cols
// channel vectors each), group g's region holds S (m - 1) + R columns,
// tap g R + k starts at column k; the last region ends at the src guard.
// Weight rows as in operands::place.
template <typename FillSrc, typename FillW>
void place_rows(operands &ops, dw_kind kind, int m, int R, int S, int64_t channels, int64_t groups,
                int64_t stride_cols, FillSrc fill_src, FillW fill_w) {
    const int64_t elem = anvil::conv::dw_src_bytes(kind);
    const int64_t col = stride_cols * channels * elem;
    ops.pix_stride = S * col;
    const int64_t npix = int64_t(S) * (m - 1) + R;
    const int64_t region = (npix - 1) * col + channels * elem;
    const int64_t w_bytes = padded(channels) * 4;
    const int64_t ntaps = groups * R;
    uint8_t *src0 = reinterpret_cast<uint8_t *>(ops.gsrc.end()) - groups * region;
    uint8_t *w0 = reinterpret_cast<uint8_t *>(ops.gw.end()) - ntaps * w_bytes;
    ops.src_taps.assign(size_t(ntaps), nullptr);
    ops.w_taps.assign(size_t(ntaps), nullptr);
    for (int64_t gi = 0; gi < groups; ++gi) {
        uint8_t *s = src0 + gi * region;
        std::memset(s, 0xff, size_t(region));
        for (int64_t r = 0; r < npix; ++r)
            for (int64_t c = 0; c < channels; ++c) fill_src(s + r * col + c * elem);
        for (int k = 0; k < R; ++k) ops.src_taps[size_t(gi * R + k)] = s + k * col;
    }
    for (int64_t t = 0; t < ntaps; ++t) {
        uint8_t *w = w0 + t * w_bytes;
        std::memset(w, 0xff, size_t(w_bytes));
        for (int64_t c = 0; c < channels; ++c) fill_w(w + c * 4);
        ops.w_taps[size_t(t)] = w;
    }
}

// acc rows of acc_ld elements for kMaxRows + 1 rows, kMargin sentinels
// before and after.
struct acc_block {
    std::vector<uint32_t> raw;
    int64_t acc_ld;
    explicit acc_block(int64_t ld) : raw(size_t((kMaxRows + 1) * ld + 2 * kMargin), kSentinel), acc_ld(ld) {}
    uint32_t *at(int64_t r, int64_t c) { return raw.data() + kMargin + r * acc_ld + c; }
};

// The contract as a plain loop: want(r, c) for r < m (all the call's
// pixels: nblocks * the kernel's m), c < channels.
// exact_fp: s + x * w (integer data: exact); otherwise std::fma.
// pair_rows G > 0 (bf16 pair-dot kernels): the taps are G rows of R =
// ntaps / G, taken in the contract's order -- per pair of rows (2q, 2q +
// 1), per k, row 2q's tap, then row 2q + 1's -- each step an fma (the
// products of two bf16 are exact in fp32, so that is vdpbf16ps' rounded
// sum).
std::vector<int64_t> tap_order(int64_t ntaps, int pair_rows) {
    std::vector<int64_t> order;
    if (pair_rows <= 0) {
        for (int64_t t = 0; t < ntaps; ++t) order.push_back(t);
        return order;
    }
    const int64_t R = ntaps / pair_rows;
    for (int q = 0; 2 * q < pair_rows; ++q)
        for (int64_t k = 0; k < R; ++k) {
            order.push_back(2 * q * R + k);
            if (2 * q + 1 < pair_rows) order.push_back((2 * q + 1) * R + k);
        }
    return order;
}

std::vector<uint32_t> reference(const dw_ukernel_args &a, dw_kind kind, bool zp_on, int m,
                                int pair_rows = 0) {
    std::vector<uint32_t> out(size_t(m * a.channels));
    const int64_t elem = anvil::conv::dw_src_bytes(kind);
    const std::vector<int64_t> order = tap_order(a.ntaps, pair_rows);
    for (int r = 0; r < m; ++r)
        for (int64_t c = 0; c < a.channels; ++c) {
            float s = 0.0f;
            uint32_t si = 0;
            for (int64_t t : order) {
                const uint8_t *x = a.src_taps[t] + r * a.pix_stride + c * elem;
                const uint8_t *w = static_cast<const uint8_t *>(a.w_taps[t]) + c * 4;
                if (kind == dw_kind::f32 || kind == dw_kind::bf16) {
                    float xv, wv;
                    if (kind == dw_kind::f32) {
                        std::memcpy(&xv, x, 4);
                    } else {
                        uint16_t h;
                        std::memcpy(&h, x, 2);
                        xv = bf16_value(h);
                    }
                    std::memcpy(&wv, w, 4);
                    s = std::fma(xv, wv, s);
                } else {
                    const int32_t xi = kind == dw_kind::u8 ? int32_t(*x) : int32_t(int8_t(*x));
                    int32_t wi;
                    std::memcpy(&wi, w, 4);
                    si += (uint32_t(xi) - (zp_on ? uint32_t(a.zero_point) : 0u)) * uint32_t(wi);
                }
            }
            out[size_t(r * a.channels + c)] = is_int(kind) ? si : tu::bits(s);
        }
    return out;
}

std::string describe(const char *backend, const char *kname, dw_kind kind, int m,
                     const dw_ukernel_args &a, bool zp_on) {
    std::ostringstream s;
    s << backend << " " << kname << ": kind=" << kind_name(kind) << " m=" << m
      << " nblocks=" << a.nblocks
      << " channels=" << a.channels << " ntaps=" << a.ntaps << " pix_stride=" << a.pix_stride
      << " acc_ld=" << a.acc_ld << " has_zp=" << zp_on << " zp=" << a.zero_point;
    return s.str();
}

// Runs k on the placed operands and compares acc with the reference and
// the sentinels; returns "" or the first difference.
// ops holds m * nblocks pixels per tap.
// kernel_w: the weight rows the kernel reads instead of ops.w_taps (the
// byte-dot form of the same weights); the reference reads ops.w_taps.
std::string run_and_check(const dw_backend &be, const dw_ukernel_ref &k, dw_kind kind, int m,
                          int64_t nblocks, bool zp_on, int32_t zp, int64_t channels,
                          int64_t acc_pad, operands &ops, tu::fault_reporter &fr,
                          const void *const *kernel_w = nullptr, int pair_rows = 0) {
    acc_block acc(channels + acc_pad);
    dw_ukernel_args a{};
    a.src_taps = ops.src_taps.data();
    a.w_taps = ops.w_taps.data();
    a.acc = acc.at(0, 0);
    a.ntaps = int64_t(ops.src_taps.size());
    a.pix_stride = ops.pix_stride;
    a.channels = channels;
    a.acc_ld = acc.acc_ld;
    a.m = m;
    a.nblocks = nblocks;
    a.zero_point = zp;
    const std::string what = describe(be.name(), k.name, kind, m, a, zp_on);
    fr.set(what);
    if (kernel_w) a.w_taps = kernel_w;
    k.fn(&a);
    a.w_taps = ops.w_taps.data();
    const int rows = int(m * nblocks);
    const std::vector<uint32_t> want = reference(a, kind, zp_on, rows, pair_rows);
    for (size_t i = 0; i < acc.raw.size(); ++i) {
        const int64_t e = int64_t(i) - kMargin;
        const int64_t r = e >= 0 ? e / acc.acc_ld : -1, c = e >= 0 ? e % acc.acc_ld : e;
        const bool inside = e >= 0 && r < rows && c < channels;
        const uint32_t w = inside ? want[size_t(r * channels + c)] : kSentinel;
        if (acc.raw[i] == w) continue;
        std::ostringstream s;
        s << what << ": " << (inside ? "" : "OUTSIDE ") << "acc(" << r << "," << c << ") got 0x"
          << std::hex << acc.raw[i] << " want 0x" << w << std::dec;
        if (inside)
            s << " (float " << tu::from_bits(acc.raw[i]) << " vs " << tu::from_bits(w) << ", int "
              << int32_t(acc.raw[i]) << " vs " << int32_t(w) << ")";
        return s.str();
    }
    return "";
}

dw_ukernel_ref get_kernel(const dw_backend &be, dw_kind kind, int m, bool zp_on) {
    dw_ukernel_ref k;
    REQUIRE(be.get(anvil::conv::make_dw_desc(uint8_t(be.tier()), kind, m, zp_on), &k) ==
            anvil_success);
    REQUIRE(bool(k.fn));
    return k;
}

struct zp_case {
    bool on;
    int32_t zp;  // given to the kernel; ignored when !on (and for f32 / bf16)
};

std::vector<zp_case> zp_cases(dw_kind kind) {
    switch (kind) {
        case dw_kind::u8: return {{false, 9}, {true, 0}, {true, 7}, {true, 255}, {true, -3}};
        case dw_kind::s8: return {{false, -9}, {true, -128}, {true, 127}, {true, -3}, {true, 0}};
        default: return {{false, 77}};
    }
}

// The integer-data sweep for one backend; returns the number of calls and
// counts failures (the first 10 reported).
int64_t sweep(const dw_backend &be, uint64_t seed, int64_t *failed) {
    tu::rng rng(seed);
    operands ops;
    tu::fault_reporter fr;
    int64_t calls = 0;
    const int64_t acc_pads[] = {1, 3, 16 + 5};
    for (dw_kind kind : {dw_kind::f32, dw_kind::bf16, dw_kind::u8, dw_kind::s8})
        for (const zp_case &z : zp_cases(kind))
            for (int m = 1; m <= kDwMaxM; ++m) {
                const dw_ukernel_ref k = get_kernel(be, kind, m, z.on);
                for (int64_t ch : kChannels)
                    for (int64_t ntaps : kNtaps)
                        for (int64_t stride : {1, 2}) {
                            ++calls;
                            // Int weights: the packed s8 range, or (every
                            // third call) any int32, so products wrap.
                            const bool wide = calls % 3 == 0;
                            auto fill_src = [&](uint8_t *p) {
                                if (kind == dw_kind::f32) {
                                    const float v = float(rng.ival(-16, 16));
                                    std::memcpy(p, &v, 4);
                                } else if (kind == dw_kind::bf16) {
                                    const uint16_t h = uint16_t(tu::bits(float(rng.ival(-16, 16))) >> 16);
                                    std::memcpy(p, &h, 2);
                                } else {
                                    *p = uint8_t(rng.ival(0, 255));
                                }
                            };
                            auto fill_w = [&](uint8_t *p) {
                                if (!is_int(kind)) {
                                    const float v = float(rng.ival(-16, 16));
                                    std::memcpy(p, &v, 4);
                                } else {
                                    const int32_t v = wide ? int32_t(rng.ival(INT32_MIN, INT32_MAX))
                                                           : int32_t(rng.ival(-128, 127));
                                    std::memcpy(p, &v, 4);
                                }
                            };
                            const int64_t nb = kBlocks[(calls / 5) % 3];
                            ops.place(kind, int(m * nb), ch, ntaps, stride, calls % 2 == 0,
                                      fill_src, fill_w);
                            const std::string diff =
                                run_and_check(be, k, kind, m, nb, z.on, z.zp, ch,
                                              acc_pads[calls % 3], ops, fr);
                            if (!diff.empty() && ++*failed <= 10) FAIL_CHECK(diff);
                        }
            }
    return calls;
}

// Kernels made with row_taps R, row_step S: every kind, m, R, S, whole
// groups of taps, nblocks 1..3, integer data (exact) and f32 fractions.
int64_t row_sweep(const dw_backend &be, uint64_t seed, int64_t *failed) {
    tu::rng rng(seed);
    operands ops;
    tu::fault_reporter fr;
    int64_t calls = 0;
    for (dw_kind kind : {dw_kind::f32, dw_kind::bf16, dw_kind::u8, dw_kind::s8})
        for (const zp_case &z : zp_cases(kind))
            for (bool narrow : {false, true})
            for (int R = 1; R <= anvil::conv::kDwMaxRowTaps; ++R)
                for (int S = 1; S <= anvil::conv::kDwMaxRowStep; ++S)
                for (int m = 1; m <= kDwMaxM; ++m) {
                    if (narrow && !is_int(kind)) continue;
                    // narrow_int: weights in 16 bits (the zero points of
                    // zp_cases keep src - zp there too).
                    dw_ukernel_ref k;
                    REQUIRE(be.get(anvil::conv::make_dw_desc(uint8_t(be.tier()), kind, m, z.on, R, S,
                                                             narrow),
                                   &k) == anvil_success);
                    for (int64_t ch : {int64_t(1), int64_t(17), int64_t(33), int64_t(64 + 13)})
                        for (int64_t groups : {0, 1, 3}) {
                            ++calls;
                            const bool frac = kind == dw_kind::f32 && calls % 2 == 0;
                            auto fill = [&](uint8_t *p, bool weight) {
                                if (kind == dw_kind::f32) {
                                    const float v = frac ? rng.frac() * std::ldexp(1.0f, int(rng.ival(-6, 6)))
                                                         : float(rng.ival(-16, 16));
                                    std::memcpy(p, &v, 4);
                                } else if (kind == dw_kind::bf16) {
                                    const float v = float(rng.ival(-16, 16));
                                    if (weight) {
                                        std::memcpy(p, &v, 4);
                                    } else {
                                        const uint16_t h = uint16_t(tu::bits(v) >> 16);
                                        std::memcpy(p, &h, 2);
                                    }
                                } else if (weight) {
                                    const int32_t v = narrow ? int32_t(rng.ival(-32768, 32767))
                                                      : calls % 3 == 0 ? int32_t(rng.ival(INT32_MIN, INT32_MAX))
                                                                       : int32_t(rng.ival(-128, 127));
                                    std::memcpy(p, &v, 4);
                                } else {
                                    *p = uint8_t(rng.ival(0, 255));
                                }
                            };
                            const int64_t nb = kBlocks[calls % 3];
                            place_rows(ops, kind, int(m * nb), R, S, ch, groups, 1 + (calls / 3) % 2,
                                       [&](uint8_t *p) { fill(p, false); },
                                       [&](uint8_t *p) { fill(p, true); });
                            const std::string diff = run_and_check(be, k, kind, m, nb, z.on, z.zp, ch,
                                                                   1 + calls % 5, ops, fr);
                            if (!diff.empty() && ++*failed <= 10) FAIL_CHECK(diff);
                        }
                }
    return calls;
}

// The byte-dot form of ops' weight rows (s8 values in int32 entries),
// 16-padded like them; returns the row pointers.
std::vector<const void *> byte_dot_rows(const operands &ops, int64_t channels,
                                        std::vector<int32_t> &store) {
    const int64_t wpad = padded(channels);
    store.assign(size_t(int64_t(ops.w_taps.size()) * wpad), 0);
    std::vector<const void *> rows(ops.w_taps.size());
    for (size_t t = 0; t < ops.w_taps.size(); ++t) {
        int32_t *row = store.data() + int64_t(t) * wpad;
        for (int64_t c = 0; c < channels; ++c) {
            int32_t w;
            std::memcpy(&w, static_cast<const uint8_t *>(ops.w_taps[t]) + c * 4, 4);
            row[c] = anvil::conv::dw_byte_dot_entry(w, c);
        }
        rows[t] = row;
    }
    return rows;
}

// Byte-dot row kernels (dw_byte_dot_mode(G), s8 weights): u8 / s8,
// every zero point case, G = 1 (any number of tap groups) and 2..4 (exactly
// G groups: kernel rows), R, S, m, nblocks, channel counts over full
// 64-channel passes and every remainder shape (1..4 slots, the last one
// partial or whole: 16 and 32 channels left take plain loads), against
// the reference on the int32 rows.
int64_t byte_dot_sweep(const dw_backend &be, uint64_t seed, int64_t *failed) {
    tu::rng rng(seed);
    operands ops;
    tu::fault_reporter fr;
    int64_t calls = 0;
    std::vector<int32_t> dot_store;
    for (dw_kind kind : {dw_kind::u8, dw_kind::s8})
        for (const zp_case &z : zp_cases(kind))
            for (int G = 1; G <= anvil::conv::kDwMaxDotRows; ++G)
            for (int R = 1; R <= anvil::conv::kDwMaxRowTaps; ++R)
                for (int S = 1; S <= anvil::conv::kDwMaxRowStep; ++S)
                    for (int m = 1; m <= kDwMaxM; ++m) {
                        dw_ukernel_ref k;
                        REQUIRE(be.get(anvil::conv::make_dw_desc(uint8_t(be.tier()), kind, m, z.on, R, S,
                                                                 anvil::conv::dw_byte_dot_mode(G)),
                                       &k) == anvil_success);
                        CHECK(std::string(k.name).find(G > 1 ? "_dot_g" : "_dot") != std::string::npos);
                        const std::vector<int64_t> group_counts =
                            G > 1 ? std::vector<int64_t>{G} : std::vector<int64_t>{0, 1, 3};
                        for (int64_t ch : {int64_t(1), int64_t(16), int64_t(32), int64_t(33), int64_t(48),
                                           int64_t(64), int64_t(64 + 13), int64_t(64 + 32), int64_t(128 + 2)})
                            for (int64_t groups : group_counts) {
                                ++calls;
                                auto fill_src = [&](uint8_t *p) { *p = uint8_t(rng.ival(0, 255)); };
                                auto fill_w = [&](uint8_t *p) {
                                    const int32_t v = int32_t(rng.ival(-128, 127));
                                    std::memcpy(p, &v, 4);
                                };
                                const int64_t nb = kBlocks[calls % 3];
                                place_rows(ops, kind, int(m * nb), R, S, ch, groups, 1 + (calls / 3) % 2,
                                           fill_src, fill_w);
                                const std::vector<const void *> dot = byte_dot_rows(ops, ch, dot_store);
                                const std::string diff = run_and_check(be, k, kind, m, nb, z.on, z.zp, ch,
                                                                       1 + calls % 5, ops, fr, dot.data());
                                if (!diff.empty() && ++*failed <= 10) FAIL_CHECK(diff);
                            }
                    }
    return calls;
}

// The pair-form rows (conv::dw_pair_pos) of ops' bf16-valued f32 weight
// rows for a call of G kernel rows of R taps: entry w_taps[2 q R + k] for
// pair q, tap k (the other entries null: not read), each row padded with
// zero entries to a multiple of 32, the last one ending at a guard page.
std::vector<const void *> pair_rows_of(const operands &ops, int G, int64_t channels, tu::guarded &store) {
    const int64_t ntaps = int64_t(ops.w_taps.size()), R = ntaps / G;
    const int64_t row = (channels + 31) / 32 * 32;
    const int64_t nrows = (G + 1) / 2 * R;
    auto *base = reinterpret_cast<uint32_t *>(store.end()) - nrows * row;
    std::memset(base, 0, size_t(nrows * row * 4));
    auto h = [&](int64_t t, int64_t c) {
        float w;
        std::memcpy(&w, static_cast<const uint8_t *>(ops.w_taps[size_t(t)]) + c * 4, 4);
        return uint16_t(tu::bits(w) >> 16);
    };
    std::vector<const void *> rows(size_t(ntaps), nullptr);
    for (int q = 0, i = 0; 2 * q < G; ++q)
        for (int64_t k = 0; k < R; ++k, ++i) {
            uint32_t *e = base + i * row;
            const int64_t ta = 2 * q * R + k, tb = (2 * q + 1) * R + k;
            for (int64_t c = 0; c < channels; ++c)
                e[anvil::conv::dw_pair_pos(c)] = anvil::conv::dw_pair_entry(h(ta, c), 2 * q + 1 < G ? h(tb, c) : 0);
            rows[size_t(ta)] = e;
        }
    return rows;
}

// bf16 pair-dot kernels (dw_byte_dot_mode(G) on kind bf16): G = 1..4
// kernel rows, R, S, m, nblocks, channel counts over whole 32-channel
// slots and every last slot (ymm up to 16, whole or masked; zmm masked),
// integer data (exact) and random fractions (rounded: the contract's
// order, bit for bit), against the reference in that order.  Fractions
// keep their exponents near 1, so no product or sum is denormal
// (vdpbf16ps would flush it).
int64_t pair_dot_sweep(const dw_backend &be, uint64_t seed, int64_t *failed) {
    tu::rng rng(seed);
    operands ops;
    tu::guarded wstore{size_t(kMaxNtaps) * 160 * 4 + 4096};
    tu::fault_reporter fr;
    int64_t calls = 0;
    for (int G = 1; G <= anvil::conv::kDwMaxDotRows; ++G)
        for (int R = 1; R <= anvil::conv::kDwMaxRowTaps; ++R)
            for (int S = 1; S <= anvil::conv::kDwMaxRowStep; ++S)
                for (int m = 1; m <= kDwMaxM; ++m) {
                    dw_ukernel_ref k;
                    REQUIRE(be.get(anvil::conv::make_dw_desc(uint8_t(be.tier()), dw_kind::bf16, m, false, R, S,
                                                             anvil::conv::dw_byte_dot_mode(G)),
                                   &k) == anvil_success);
                    CHECK(std::string(k.name).find("_pair_g" + std::to_string(G)) != std::string::npos);
                    for (int64_t ch : {int64_t(1), int64_t(15), int64_t(16), int64_t(17), int64_t(31),
                                       int64_t(32), int64_t(33), int64_t(48), int64_t(64 + 13), int64_t(128 + 2)}) {
                        ++calls;
                        const bool frac = calls % 2 == 0;
                        auto fill = [&](uint8_t *p, bool weight) {
                            const float v = frac ? rng.frac() * std::ldexp(1.0f, int(rng.ival(-4, 4)))
                                                 : float(rng.ival(-16, 16));
                            const uint32_t b = tu::bits(v) & 0xffff0000u;  // a bf16 value
                            if (weight) {
                                std::memcpy(p, &b, 4);
                            } else {
                                const uint16_t hb = uint16_t(b >> 16);
                                std::memcpy(p, &hb, 2);
                            }
                        };
                        const int64_t nb = kBlocks[calls % 3];
                        place_rows(ops, dw_kind::bf16, int(m * nb), R, S, ch, G, 1 + (calls / 3) % 2,
                                   [&](uint8_t *p) { fill(p, false); }, [&](uint8_t *p) { fill(p, true); });
                        const std::vector<const void *> w = pair_rows_of(ops, G, ch, wstore);
                        const std::string diff = run_and_check(be, k, dw_kind::bf16, m, nb, false, 0, ch,
                                                               1 + calls % 5, ops, fr, w.data(), G);
                        if (!diff.empty() && ++*failed <= 10) FAIL_CHECK(diff);
                    }
                }
    return calls;
}

// f32 fractions (20 significant bits, so products round): bitwise equal to
// the std::fma loop.
int64_t fraction_sweep(const dw_backend &be, uint64_t seed, int64_t *failed) {
    tu::rng rng(seed);
    operands ops;
    tu::fault_reporter fr;
    int64_t calls = 0;
    for (int m = 1; m <= kDwMaxM; ++m) {
        const dw_ukernel_ref k = get_kernel(be, dw_kind::f32, m, false);
        for (int64_t ch : {int64_t(15), int64_t(17), int64_t(64 + 13)})
            for (int64_t ntaps : {int64_t(1), int64_t(9), int64_t(25)}) {
                ++calls;
                auto fill = [&](uint8_t *p) {
                    const float v = rng.frac() * std::ldexp(1.0f, int(rng.ival(-6, 6)));
                    std::memcpy(p, &v, 4);
                };
                const int64_t nb = kBlocks[calls % 3];
                ops.place(dw_kind::f32, int(m * nb), ch, ntaps, 1 + calls % 2, calls % 2 == 0,
                          fill, fill);
                const std::string diff =
                    run_and_check(be, k, dw_kind::f32, m, nb, false, 0, ch, 2, ops, fr);
                if (!diff.empty() && ++*failed <= 10) FAIL_CHECK(diff);
            }
    }
    return calls;
}

}  // namespace

TEST_CASE("dw ukernel: select_dw_backend follows the ISA cap") {
    const dw_backend &sel = anvil::conv::select_dw_backend();
    const uint32_t eff = anvil::cpu::effective_features(false);
    const dw_backend *jit = anvil::conv::jit_avx512_dw_backend();
    CHECK((jit != nullptr) == bool(anvil::cpu::info().detected & anvil::cpu::f_avx512_core));
    if ((eff & anvil::cpu::f_avx512_core) && jit) {
        CHECK(&sel == jit);
        CHECK(std::string(sel.name()) == "jit:avx512_dw");
        CHECK(sel.tier() == anvil_isa_avx512_core);
    } else if (anvil::cpu::dispatch_tier(false) != anvil_isa_scalar) {
        CHECK(&sel == anvil::conv::highway_dw_backend());
        CHECK(std::string(sel.name()).rfind("hwy:", 0) == 0);
        if (anvil::cpu::effective_tier(false) < anvil_isa_avx512_core)
            CHECK(std::string(sel.name()).find("AVX3") == std::string::npos);
    } else {
        CHECK(&sel == anvil::conv::scalar_dw_backend());
    }
    MESSAGE((std::string("cap ") + anvil_isa_name(anvil_get_effective_isa()) + ": selected " + sel.name()));
}

TEST_CASE("dw ukernel: bad descriptors are refused by every backend") {
    for (const dw_backend *be : backends_under_cap()) {
        CAPTURE(std::string(be->name()));
        dw_ukernel_ref k;
        for (int m : {0, kDwMaxM + 1, 255})
            CHECK(be->get(anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::f32, m, false), &k) ==
                  anvil_invalid_argument);
        dw_ukernel_desc d = anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::u8, 4, true);
        d.flags = 4;
        CHECK(be->get(d, &k) == anvil_invalid_argument);
        // No scale needs a fused epilogue whose scale is not per channel.
        d = anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::u8, 4, true);
        d.flags |= anvil::conv::DW_FLAG_NO_SCALE;
        CHECK(be->get(d, &k) == anvil_invalid_argument);
        d.epi = uint8_t(anvil::lowp::EPI_U8 | anvil::conv::DW_EPI_SCALE_N);
        CHECK(be->get(d, &k) == anvil_invalid_argument);
        d = anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind(4), 4, false);
        CHECK(be->get(d, &k) == anvil_invalid_argument);
    }
}

TEST_CASE("dw ukernel: jit kernels are named, cached and kept alive") {
    const dw_backend *jit = anvil::conv::jit_avx512_dw_backend();
    if (!jit) {
        MESSAGE("no AVX-512: JIT dw backend absent");
        return;
    }
    {
        dw_ukernel_ref r;
        REQUIRE(jit->get(anvil::conv::make_dw_desc(0, dw_kind::u8, 6, true, 3), &r) == anvil_success);
        CHECK(std::string(r.name) == "anvil_conv_dw_avx512_u8_m6_zp_r3s1");
        REQUIRE(jit->get(anvil::conv::make_dw_desc(0, dw_kind::s8, 6, true, 3, 2, true), &r) == anvil_success);
        const bool vnni = anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_vnni;
        CHECK(std::string(r.name) ==
              std::string("anvil_conv_dw_avx512_s8_m6_zp_r3s2") + (vnni ? "_vnni" : ""));
        dw_ukernel_desc bad = anvil::conv::make_dw_desc(0, dw_kind::f32, 6, false, 0);
        bad.row_taps = anvil::conv::kDwMaxRowTaps + 1;
        bad.row_step = 1;
        CHECK(jit->get(bad, &r) == anvil_invalid_argument);
        bad = anvil::conv::make_dw_desc(0, dw_kind::f32, 6, false, 3, 2);
        bad.row_step = anvil::conv::kDwMaxRowStep + 1;
        CHECK(jit->get(bad, &r) == anvil_invalid_argument);
        bad.row_step = 0;
        CHECK(jit->get(bad, &r) == anvil_invalid_argument);
    }
    const char *want[4] = {"anvil_conv_dw_avx512_f32_m8", "anvil_conv_dw_avx512_bf16_m8",
                           "anvil_conv_dw_avx512_u8_m8_zp", "anvil_conv_dw_avx512_s8_m8"};
    const dw_kind kinds[4] = {dw_kind::f32, dw_kind::bf16, dw_kind::u8, dw_kind::s8};
    for (int i = 0; i < 4; ++i) {
        const dw_ukernel_ref a = get_kernel(*jit, kinds[i], 8, i == 2);
        CHECK(std::string(a.name) == want[i]);
        CHECK(a.keep_alive != nullptr);
        // Again, and with a different tier byte / a zero-point flag on a
        // float kind: the same cached kernel.
        dw_ukernel_desc d = anvil::conv::make_dw_desc(0, kinds[i], 8, i == 2);
        if (!is_int(kinds[i])) d.flags = anvil::conv::DW_FLAG_ZERO_POINT;
        dw_ukernel_ref b;
        REQUIRE(jit->get(d, &b) == anvil_success);
        CHECK((a.fn == b.fn));
    }
    const dw_ukernel_ref z = get_kernel(*jit, dw_kind::u8, 3, true);
    const dw_ukernel_ref n = get_kernel(*jit, dw_kind::u8, 3, false);
    CHECK((z.fn != n.fn));
}

TEST_CASE("dw ukernel: every backend under the cap, integer data, exact") {
    for (const dw_backend *be : backends_under_cap()) {
        CAPTURE(std::string(be->name()));
        int64_t failed = 0;
        const int64_t calls = sweep(*be, 20260411, &failed);
        CHECK_MESSAGE(failed == 0, std::string(be->name()), ": ", failed, " of ", calls, " calls differ");
        MESSAGE((std::string(be->name()) + ": " + std::to_string(calls) + " dw kernel calls checked"));
    }
}

TEST_CASE("dw ukernel: f32 fractions, bitwise equal to the std::fma order") {
    for (const dw_backend *be : backends_under_cap()) {
        CAPTURE(std::string(be->name()));
        int64_t failed = 0;
        const int64_t calls = fraction_sweep(*be, 777, &failed);
        CHECK_MESSAGE(failed == 0, std::string(be->name()), ": ", failed, " of ", calls, " calls differ");
    }
}

TEST_CASE("dw ukernel: row_taps kernels (taps in rows spaced like the pixels)") {
    for (const dw_backend *be : backends_under_cap()) {
        CAPTURE(std::string(be->name()));
        int64_t failed = 0;
        const int64_t calls = row_sweep(*be, 4242, &failed);
        CHECK_MESSAGE(failed == 0, std::string(be->name()), ": ", failed, " of ", calls, " calls differ");
    }
}

TEST_CASE("dw ukernel: byte-dot row kernels (vpdpbusd on permuted source bytes)") {
    for (const dw_backend *be : backends_under_cap()) {
        dw_ukernel_ref k;
        const auto desc = anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::u8, 4, true, 3, 1,
                                                    anvil::conv::DW_INT_BYTE_DOT);
        if (!be->supports_byte_dot()) {
            CHECK(be->get(desc, &k) == anvil_unsupported);
            continue;
        }
        int64_t failed = 0;
        const int64_t calls = byte_dot_sweep(*be, 777, &failed);
        MESSAGE(be->name() << ": " << calls << " byte-dot calls, " << failed << " failures");
        CHECK(failed == 0);
    }
    // Only the JIT backend has them, and only with AVX512-VNNI under the
    // cap and VBMI on the CPU.
    const dw_backend *jit = anvil::conv::jit_avx512_dw_backend();
    if (jit && (anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core))
        CHECK(jit->supports_byte_dot() ==
              ((anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_vnni) != 0 &&
               anvil::cpu::info().avx512_vbmi));
    // The descriptor needs row_taps and an int kind.
    CHECK(!anvil::conv::dw_desc_valid(
        anvil::conv::make_dw_desc(0, dw_kind::u8, 4, false, 0, 1, anvil::conv::DW_INT_BYTE_DOT)));
    CHECK(anvil::conv::make_dw_desc(0, dw_kind::f32, 4, false, 3, 1, anvil::conv::DW_INT_BYTE_DOT)
              .narrow_int == 0);
}

TEST_CASE("dw ukernel: bf16 pair-dot kernels (vdpbf16ps on word-interleaved rows)") {
    for (const dw_backend *be : backends_under_cap()) {
        dw_ukernel_ref k;
        const auto desc = anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::bf16, 4, false, 3, 1,
                                                    anvil::conv::dw_byte_dot_mode(3));
        if (!be->supports_bf16_pair_dot()) {
            CHECK(be->get(desc, &k) == anvil_unsupported);
            continue;
        }
        int64_t failed = 0;
        const int64_t calls = pair_dot_sweep(*be, 919, &failed);
        MESSAGE(std::string(be->name()) << ": " << calls << " pair-dot calls, " << failed << " failures");
        CHECK(failed == 0);
    }
    // Only the JIT backend has them, and only with AVX512-BF16 under the cap.
    const dw_backend *jit = anvil::conv::jit_avx512_dw_backend();
    if (jit && (anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core))
        CHECK(jit->supports_bf16_pair_dot() ==
              ((anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_bf16) != 0));
    // The descriptor needs row_taps; f32 drops the mode.
    CHECK(!anvil::conv::dw_desc_valid(
        anvil::conv::make_dw_desc(0, dw_kind::bf16, 4, false, 0, 1, anvil::conv::dw_byte_dot_mode(2))));
    CHECK(anvil::conv::make_dw_desc(0, dw_kind::f32, 4, false, 3, 1, anvil::conv::dw_byte_dot_mode(2))
              .narrow_int == 0);
    // dw_pair_pos: a permutation of each 32-channel slot.
    std::vector<int> seen(64, 0);
    for (int64_t c = 0; c < 64; ++c) ++seen[size_t(anvil::conv::dw_pair_pos(c))];
    CHECK(std::count(seen.begin(), seen.end(), 1) == 64);
}

TEST_CASE("dw ukernel: nblocks < 1 writes nothing") {
    for (const dw_backend *be : backends_under_cap()) {
        CAPTURE(std::string(be->name()));
        for (int R : {0, 3}) {
            const dw_ukernel_ref k = get_kernel(*be, dw_kind::f32, 4, false);
            dw_ukernel_ref kr;
            REQUIRE(be->get(anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::f32, 4, false, R), &kr) ==
                    anvil_success);
            std::vector<float> src(64, 1.0f), w(16, 1.0f), acc(64, -7.0f);
            std::vector<const uint8_t *> st(3, reinterpret_cast<const uint8_t *>(src.data()));
            std::vector<const void *> wt(3, w.data());
            dw_ukernel_args a{};
            a.src_taps = st.data();
            a.w_taps = wt.data();
            a.acc = acc.data();
            a.ntaps = 3;
            a.pix_stride = 0;
            a.channels = 16;
            a.acc_ld = 16;
            a.m = 4;
            for (int64_t nb : {0, -1}) {
                a.nblocks = nb;
                (R ? kr : k).fn(&a);
                CHECK(std::all_of(acc.begin(), acc.end(), [](float v) { return v == -7.0f; }));
            }
        }
    }
}

// Runs an unfused kernel on one call's operands into acc (rows x channels,
// dense, m * nb rows) and returns the args, ready for the fused kernel.
static dw_ukernel_args run_unfused(const dw_ukernel_ref &plain, const uint8_t *const *src_taps,
                                   const void *const *w_taps, int64_t ntaps, int64_t pix_stride,
                                   int64_t channels, int m, int64_t nb, int32_t zero_point,
                                   std::vector<float> &acc) {
    dw_ukernel_args a{};
    a.src_taps = src_taps;
    a.w_taps = w_taps;
    a.ntaps = ntaps;
    a.pix_stride = pix_stride;
    a.channels = channels;
    a.m = m;
    a.nblocks = nb;
    a.zero_point = zero_point;
    acc.assign(size_t(m * nb * channels), 0.0f);
    a.acc = acc.data();
    a.acc_ld = channels;
    plain.fn(&a);
    return a;
}

// The portable chain epilogue over a plain kernel's accumulators (rows x
// channels, dense) into dst, rows ld elements apart: what a fused kernel
// must store.  The chain has no binary operands.
static void apply_chain(const anvil::lowp::chain_spec &ch, std::vector<float> &acc, int64_t rows,
                        int64_t channels, uint8_t *dst, int64_t ld, const float *bias) {
    std::vector<const void *> srcs(ch.ops.size(), nullptr);
    anvil::lowp::chain_epilogue ce(ch, dst, ld, srcs.data(), bias);
    anvil::lowp::lp_block blk{};
    blk.acc = acc.data();
    blk.acc_ld = channels;
    blk.m = rows;
    blk.n = channels;
    ce.apply(blk);
}

// Whether the fused kernel, on the call a (from run_unfused) with the
// chain's operands, stores what the chain epilogue makes of acc: dst rows
// channels + ld_pad elements apart, bytes around them untouched.
static bool fused_matches_chain(const dw_ukernel_ref &fused, dw_ukernel_args a,
                                const anvil::lowp::chain_spec &ch, std::vector<float> &acc, int64_t channels,
                                int64_t ld_pad, const float *scales, const float *bias, float alpha, float beta) {
    const int64_t rows = a.m * a.nblocks;
    const int ob = anvil::lowp::out_type_bytes(ch.out);
    const int64_t ld = channels + ld_pad;
    std::vector<uint8_t> want(size_t(rows * ld * ob + 64), 0xa5), got(want);
    apply_chain(ch, acc, rows, channels, want.data(), ld, bias);
    a.acc = nullptr;
    a.dst = got.data();
    a.dst_ld = ld * ob;
    a.scales = scales;
    a.bias = bias;
    a.dst_zero_point = ch.c_zero_point;
    a.alpha = alpha;
    a.beta = beta;
    fused.fn(&a);
    return got == want;
}

// Fused epilogues (JIT only): the fused kernel's dst equals, byte for
// byte, the plain kernel's acc finished by the portable chain epilogue,
// over outputs, flags, m, nblocks and channel tails; the bytes around each
// dst row stay untouched.  Highway / scalar refuse fused descriptors.
TEST_CASE("dw ukernel: fused epilogue equals the chain epilogue, bit for bit") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    for (const dw_backend *be : backends_under_cap())
        if (!be->supports_fused_epilogue()) {
            dw_ukernel_ref k;
            CHECK(be->get(make_dw_desc(uint8_t(be->tier()), dw_kind::u8, 2, false, 0, 1, false,
                                       uint8_t(lowp::EPI_U8)),
                          &k) == anvil_unsupported);
        }
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core)) return;
    REQUIRE(jit->supports_fused_epilogue());
    const lowp::out_type outs[] = {lowp::out_type::f32, lowp::out_type::bf16, lowp::out_type::u8,
                                   lowp::out_type::s8};
    const uint8_t epi_out[] = {lowp::EPI_F32, lowp::EPI_BF16, lowp::EPI_U8, lowp::EPI_S8};
    uint32_t seed = 12345;
    auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
    for (dw_kind kind : {dw_kind::f32, dw_kind::bf16, dw_kind::u8, dw_kind::s8})
        for (int o = 0; o < 4; ++o)
            for (int flags = 0; flags < 30; ++flags) {
                // act 3: relu + zp + bias; act 4: clip + bias
                const int scale = flags % 3, act = flags / 3 % 5;
                const bool bias = act >= 2, zp = (flags & 1) != 0 || act == 3;
                const int elt = act == 3 ? 1 : act == 4 ? 3 : act;  // 0 none, 1 relu, 2 leaky, 3 clip
                for (int m : {1, 3, 8})
                    for (int64_t channels : {int64_t(1), int64_t(17), int64_t(50)}) {
                        CAPTURE(kind_name(kind));
                        CAPTURE(o);
                        CAPTURE(flags);
                        CAPTURE(m);
                        CAPTURE(channels);
                        const int64_t nb = 2, rows = nb * m, ntaps = 5, elem = dw_src_bytes(kind);
                        const bool zpsrc = is_int(kind) && (flags & 2);
                        uint8_t epi = epi_out[o];
                        if (scale == 2) epi |= DW_EPI_SCALE_N;
                        if (bias) epi |= DW_EPI_BIAS;
                        if (elt == 1) epi |= DW_EPI_RELU;
                        if (elt == 2) epi |= DW_EPI_LEAKY;
                        if (elt == 3) epi |= DW_EPI_CLIP;
                        if (zp) epi |= DW_EPI_ZP;
                        dw_ukernel_ref plain, fused;
                        REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, zpsrc), &plain) ==
                                anvil_success);
                        // No scale: DW_FLAG_NO_SCALE (the kernel must not read scales).
                        REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, zpsrc, 0, 1, false, epi,
                                                      scale == 0),
                                         &fused) == anvil_success);
                        CHECK(std::string(fused.name).find("_epi_") != std::string::npos);
                        CHECK((std::string(fused.name).find("_noscale") != std::string::npos) == (scale == 0));
                        // src: ntaps regions of rows pixels; weights 16-padded.
                        std::vector<uint8_t> src(size_t(ntaps * rows * channels * elem));
                        for (size_t i = 0; i < src.size(); i += size_t(elem)) {
                            const uint32_t r = rnd() >> 8;
                            if (kind == dw_kind::f32) {
                                const float v = float(int(r % 2001) - 1000) / 16.0f;
                                std::memcpy(&src[i], &v, 4);
                            } else if (kind == dw_kind::bf16) {
                                const float v = float(int(r % 2001) - 1000) / 16.0f;
                                uint32_t bits;
                                std::memcpy(&bits, &v, 4);  // truncated to bf16: the same bits for both paths
                                const uint16_t h = uint16_t(bits >> 16);
                                std::memcpy(&src[i], &h, 2);
                            } else {
                                src[i] = uint8_t(r);
                            }
                        }
                        const int64_t wpad = padded(channels);
                        std::vector<int32_t> wi(size_t(ntaps * wpad));
                        std::vector<float> wf(size_t(ntaps * wpad));
                        for (size_t i = 0; i < wi.size(); ++i) {
                            wi[i] = int32_t(int8_t(rnd() >> 8));
                            wf[i] = float(int(rnd() % 201) - 100) / 32.0f;
                        }
                        std::vector<const uint8_t *> st(static_cast<size_t>(ntaps));
                        std::vector<const void *> wt(static_cast<size_t>(ntaps));
                        for (int64_t t = 0; t < ntaps; ++t) {
                            st[size_t(t)] = src.data() + t * rows * channels * elem;
                            wt[size_t(t)] = is_int(kind) ? static_cast<const void *>(wi.data() + t * wpad)
                                                         : static_cast<const void *>(wf.data() + t * wpad);
                        }
                        std::vector<float> scales(static_cast<size_t>(channels)), biasv(static_cast<size_t>(channels));
                        for (auto &v : scales) v = is_int(kind) ? float(int(rnd() % 64) + 1) / 1024.0f
                                                                : float(int(rnd() % 64) + 1) / 8.0f;
                        for (auto &v : biasv) v = float(int(rnd() % 401) - 200) / 4.0f;
                        lowp::chain_spec ch;
                        ch.kind = is_int(kind) ? lowp::lp_kind::u8s8 : lowp::lp_kind::bf16;
                        ch.out = outs[o];
                        if (scale == 1) ch.scales.assign(1, scales[0]);
                        if (scale == 2) ch.scales = scales;
                        ch.scales_per_n = scale == 2;
                        const float alpha = elt == 3 ? -2.5f : 0.375f, beta = 7.0f;  // clip: [-2.5, 7]
                        if (elt) {
                            lowp::post_op op;
                            op.eltwise = elt == 1   ? lowp::eltwise_alg::relu
                                         : elt == 2 ? lowp::eltwise_alg::leaky_relu
                                                    : lowp::eltwise_alg::clip;
                            op.alpha = elt == 1 ? 0.0f : alpha;
                            op.beta = beta;
                            ch.ops.push_back(op);
                        }
                        ch.c_zero_point = zp ? 5.0f : 0.0f;
                        std::vector<float> acc;
                        const dw_ukernel_args a = run_unfused(plain, st.data(), wt.data(), ntaps,
                                                              channels * elem, channels, m, nb, zpsrc ? 3 : 0, acc);
                        CHECK(fused_matches_chain(fused, a, ch, acc, channels, 5,
                                                  scale == 0 ? nullptr : scale == 1 ? ch.scales.data() : scales.data(),
                                                  bias ? biasv.data() : nullptr, alpha, beta));
                    }
            }
}

// Fused pair-dot kernels (bf16 source; 32-channel slots with a bf16
// output stay in pair order through the epilogue: scales and bias
// permuted per slot, one vpermw per packed row) store what the chain
// epilogue makes of the unfused pair-dot kernel's accumulators, bit for
// bit: G = 2 and 3, m, channel counts with every last-slot shape, f32 and
// bf16 outputs, no / per-tensor / per-channel scales, bias, relu / clip.
// Some channels' scales are tiny, so their results are denormal (the fast
// bf16 store's screen sends those tiles through the exact path).
TEST_CASE("dw ukernel: fused pair-dot kernels equal the chain epilogue, bit for bit") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !jit->supports_bf16_pair_dot() ||
        !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core))
        return;
    tu::rng rng(4711);
    operands ops;
    tu::guarded wstore{size_t(kMaxNtaps) * 160 * 4 + 4096};
    int64_t cases = 0, failed = 0;
    for (int G : {2, 3})
        for (int o = 0; o < 2; ++o)
            for (int variant = 0; variant < 6; ++variant)
                for (int m : {1, 3, 8})
                    for (int64_t channels : {int64_t(16), int64_t(17), int64_t(32), int64_t(50), int64_t(64)}) {
                        const int scale = variant % 3;  // none, per tensor, per channel
                        const bool bias = variant >= 3, clip = variant == 5, relu = variant == 1;
                        const int R = 3, S = 1 + variant % 2;
                        const int64_t nb = 2, rows = nb * m;
                        uint8_t epi = o ? lowp::EPI_BF16 : lowp::EPI_F32;
                        if (scale == 2) epi |= DW_EPI_SCALE_N;
                        if (bias) epi |= DW_EPI_BIAS;
                        if (relu) epi |= DW_EPI_RELU;
                        if (clip) epi |= DW_EPI_CLIP;
                        dw_ukernel_ref plain, fused;
                        const uint8_t mode = dw_byte_dot_mode(G);
                        REQUIRE(jit->get(make_dw_desc(0, dw_kind::bf16, m, false, R, S, mode), &plain) ==
                                anvil_success);
                        REQUIRE(jit->get(make_dw_desc(0, dw_kind::bf16, m, false, R, S, mode, epi, scale == 0),
                                         &fused) == anvil_success);
                        auto fill = [&](uint8_t *p, bool weight) {
                            const float v = float(rng.ival(-16, 16));
                            const uint32_t b = tu::bits(v);
                            if (weight) {
                                std::memcpy(p, &b, 4);
                            } else {
                                const uint16_t hb = uint16_t(b >> 16);
                                std::memcpy(p, &hb, 2);
                            }
                        };
                        place_rows(ops, dw_kind::bf16, int(rows), R, S, channels, G, 1,
                                   [&](uint8_t *p) { fill(p, false); }, [&](uint8_t *p) { fill(p, true); });
                        const std::vector<const void *> w = pair_rows_of(ops, G, channels, wstore);
                        std::vector<float> scales(static_cast<size_t>(channels)), biasv(static_cast<size_t>(channels));
                        for (int64_t c = 0; c < channels; ++c) {
                            // Every fifth channel's scale makes denormal results.
                            scales[size_t(c)] = c % 5 == 3 ? 0x1p-135f : float(rng.ival(1, 64)) / 8.0f;
                            biasv[size_t(c)] = float(rng.ival(-200, 200)) / 4.0f;
                        }
                        lowp::chain_spec ch;
                        ch.kind = lowp::lp_kind::bf16;
                        ch.out = o ? lowp::out_type::bf16 : lowp::out_type::f32;
                        if (scale == 1) ch.scales.assign(1, 0x1p-133f);
                        if (scale == 2) ch.scales = scales;
                        ch.scales_per_n = scale == 2;
                        if (relu || clip) {
                            lowp::post_op op;
                            op.eltwise = clip ? lowp::eltwise_alg::clip : lowp::eltwise_alg::relu;
                            op.alpha = clip ? -2.5f : 0.0f;
                            op.beta = 7.0f;
                            ch.ops.push_back(op);
                        }
                        std::vector<float> acc;
                        const dw_ukernel_args a = run_unfused(plain, ops.src_taps.data(), w.data(),
                                                              int64_t(ops.src_taps.size()), ops.pix_stride,
                                                              channels, m, nb, 0, acc);
                        const bool same = fused_matches_chain(
                            fused, a, ch, acc, channels, 3,
                            scale == 0 ? nullptr : scale == 1 ? ch.scales.data() : scales.data(),
                            bias ? biasv.data() : nullptr, -2.5f, 7.0f);
                        ++cases;
                        if (!same && ++failed <= 5)
                            FAIL_CHECK("G=" << G << " out=" << (o ? "bf16" : "f32") << " variant=" << variant
                                            << " m=" << m << " channels=" << channels << " " << fused.name);
                    }
    MESSAGE(cases << " fused pair-dot cases, " << failed << " failures");
    CHECK(failed == 0);
}

// bf16 output where the cap allows AVX512-BF16 is rounded by
// vcvtne2ps2bf16 plus a denormal screen (jit_conv_dw_avx512::store_bf16_fast):
// results that are denormal, NaN, Inf or zero of either sign must still
// match the portable epilogue bit for bit, for tap and row kernels, pixel
// pairs of channel blocks, single blocks and tails.
TEST_CASE("dw ukernel: fused bf16 output keeps denormals, NaN, Inf and signed zeros") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core)) return;
    const float specials[] = {1e-39f, -3e-40f, 0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(), 1.5f, -2.25f, 3e38f};
    for (dw_kind kind : {dw_kind::f32, dw_kind::bf16})
        for (int row_taps : {0, 3})
            for (int m : {1, 5, 8})
                for (int64_t channels : {int64_t(7), int64_t(33), int64_t(50)})
                    for (int denormals : {0, 1}) {
                        CAPTURE(kind_name(kind));
                        CAPTURE(row_taps);
                        CAPTURE(m);
                        CAPTURE(channels);
                        CAPTURE(denormals);
                        const int64_t nb = 2, rows = nb * m, elem = dw_src_bytes(kind);
                        const int64_t npix = rows + 2;  // one src row: taps 0..2 are pixels 0..2
                        std::vector<uint8_t> src(size_t(npix * channels * elem));
                        for (int64_t i = 0; i < npix * channels; ++i) {
                            // Without denormals the screen must stay quiet:
                            // a specials list without the first two.
                            const int skip = denormals ? 0 : 2;
                            float v = specials[skip + size_t(i * 7 + i / 5) % (10 - skip)];
                            uint32_t bits;
                            std::memcpy(&bits, &v, 4);
                            if (kind == dw_kind::f32) {
                                std::memcpy(&src[size_t(i * 4)], &v, 4);
                            } else {
                                const uint16_t h = uint16_t(bits >> 16);
                                std::memcpy(&src[size_t(i * 2)], &h, 2);
                            }
                        }
                        const int64_t wpad = padded(channels);
                        std::vector<float> wf(size_t(3 * wpad), 0.0f);
                        for (int64_t c = 0; c < wpad; ++c) {
                            wf[size_t(c)] = 1.0f;  // tap 0 passes src through, taps 1, 2 add 0 * src
                            wf[size_t(wpad + c)] = c % 3 == 0 ? -0.0f : 0.0f;
                        }
                        const uint8_t *st[3];
                        const void *wt[3];
                        for (int t = 0; t < 3; ++t) {
                            st[t] = src.data() + t * channels * elem;
                            wt[t] = wf.data() + t * wpad;
                        }
                        const uint8_t epi = uint8_t(lowp::EPI_BF16);
                        dw_ukernel_ref plain, fused;
                        REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, false, row_taps, 1),
                                         &plain) == anvil_success);
                        REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, false, row_taps, 1,
                                                      false, epi),
                                         &fused) == anvil_success);
                        std::vector<float> acc;
                        dw_ukernel_args a = run_unfused(plain, st, wt, 3, channels * elem, channels, m, nb, 0, acc);
                        lowp::chain_spec ch;
                        ch.kind = lowp::lp_kind::bf16;
                        ch.out = lowp::out_type::bf16;
                        const int64_t ld = channels + 3;
                        std::vector<uint8_t> want(size_t(rows * ld * 2 + 64), 0xa5), got(want);
                        apply_chain(ch, acc, rows, channels, want.data(), ld, nullptr);
                        const float one = 1.0f;
                        a.acc = nullptr;
                        a.dst = got.data();
                        a.dst_ld = ld * 2;
                        a.scales = &one;
                        fused.fn(&a);
                        CHECK(got == want);
                    }
}

TEST_SUITE("once") {

// Fused byte-dot kernels: dst equals, byte for byte (the bytes around
// each dst row included), the fused row kernel of the same chain on the
// int32 weight rows, over u8 / s8, every output type, scales, bias,
// relu / leaky / clip, output zero point, G 1..3, S 1 and 2, m with and
// without sub-blocks, and channel counts that end in each remainder shape.
TEST_CASE("dw ukernel: fused byte-dot kernels equal the fused int32-row kernels") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core) ||
        !jit->supports_byte_dot())
        return;
    const uint8_t epi_out[] = {lowp::EPI_F32, lowp::EPI_BF16, lowp::EPI_U8, lowp::EPI_S8};
    const int ob_of[] = {4, 2, 1, 1};
    uint32_t seed = 4321;
    auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
    int64_t cases = 0;
    for (dw_kind kind : {dw_kind::u8, dw_kind::s8})
        for (int o = 0; o < 4; ++o)
            for (int flags = 0; flags < 10; ++flags)
                for (int G = 1; G <= 3; ++G)
                for (int S : {1, 2})
                    for (int m : {1, 4, 5, 8})
                        for (int64_t channels : {int64_t(17), int64_t(32), int64_t(50), int64_t(64), int64_t(77),
                                                 int64_t(80), int64_t(130)}) {
                            CAPTURE(kind_name(kind));
                            CAPTURE(o);
                            CAPTURE(flags);
                            CAPTURE(G);
                            CAPTURE(S);
                            CAPTURE(m);
                            CAPTURE(channels);
                            ++cases;
                            uint8_t epi = epi_out[o];
                            if (flags % 2) epi |= DW_EPI_SCALE_N;
                            if (flags % 3 != 0) epi |= DW_EPI_BIAS;
                            const int elt = flags % 4;  // none, relu, leaky, clip
                            if (elt == 1) epi |= DW_EPI_RELU;
                            if (elt == 2) epi |= DW_EPI_LEAKY;
                            if (elt == 3) epi |= DW_EPI_CLIP;
                            if (flags >= 5) epi |= DW_EPI_ZP;
                            const bool zpsrc = flags % 5 != 0;
                            const int R = 3, nb = 2, rows = nb * m, ngroups = G > 1 ? G : 3;
                            // One src region per group: S (rows - 1) + R columns.
                            const int64_t ncol = int64_t(S) * (rows - 1) + R, wpad = padded(channels);
                            std::vector<uint8_t> src(size_t(ngroups * ncol * channels));
                            for (auto &v : src) v = uint8_t(rnd() >> 13);
                            std::vector<int32_t> wi(size_t(ngroups * R * wpad), 0), wd(wi.size(), 0);
                            for (int64_t t = 0; t < ngroups * R; ++t)
                                for (int64_t c = 0; c < channels; ++c) {
                                    const int32_t w = int32_t(int8_t(rnd() >> 17));
                                    wi[size_t(t * wpad + c)] = w;
                                    wd[size_t(t * wpad + c)] = dw_byte_dot_entry(w, c);
                                }
                            std::vector<const uint8_t *> st(size_t(ngroups * R));
                            std::vector<const void *> wti(st.size()), wtd(st.size());
                            for (int g = 0; g < ngroups; ++g)
                                for (int k = 0; k < R; ++k) {
                                    const size_t t = size_t(g * R + k);
                                    st[t] = src.data() + (g * ncol + k) * channels;
                                    wti[t] = wi.data() + int64_t(t) * wpad;
                                    wtd[t] = wd.data() + int64_t(t) * wpad;
                                }
                            std::vector<float> scales(static_cast<size_t>(channels)), biasv(static_cast<size_t>(channels));
                            for (auto &v : scales) v = float(int(rnd() % 64) + 1) / 1024.0f;
                            for (auto &v : biasv) v = float(int(rnd() % 401) - 200) / 4.0f;
                            dw_ukernel_ref ref_k, dot_k;
                            REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, zpsrc, R, S, 0, epi),
                                             &ref_k) == anvil_success);
                            REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, zpsrc, R, S,
                                                          dw_byte_dot_mode(G), epi),
                                             &dot_k) == anvil_success);
                            const int ob = ob_of[o];
                            const int64_t ld = channels + 5;
                            std::vector<uint8_t> want(size_t(rows * ld * ob + 64), 0xa5), got(want);
                            dw_ukernel_args a{};
                            a.src_taps = st.data();
                            a.ntaps = ngroups * R;
                            a.pix_stride = S * channels;
                            a.channels = channels;
                            a.m = m;
                            a.nblocks = nb;
                            a.zero_point = zpsrc ? int32_t(rnd() % 300) - 40 : 0;
                            a.dst_ld = ld * ob;
                            a.scales = scales.data();
                            a.bias = biasv.data();
                            a.dst_zero_point = 5.0f;
                            a.alpha = elt == 3 ? -2.5f : 0.375f;
                            a.beta = 7.0f;
                            a.w_taps = wti.data();
                            a.dst = want.data();
                            ref_k.fn(&a);
                            a.w_taps = wtd.data();
                            a.dst = got.data();
                            dot_k.fn(&a);
                            CHECK(got == want);
                        }
    MESSAGE(cases << " fused byte-dot cases");
}

// The arguments of the multi-row tests' calls, but for src, outputs and
// rows: a zero point of 17, acc / dst rows ld elements apart (ob output
// bytes each), one scale and a bias row.
dw_ukernel_args rows_args(int64_t ntaps, const void **w_taps, int64_t pix_stride, int64_t channels, int m,
                          int nb, int64_t ld, int ob, const float *scales, const float *bias) {
    dw_ukernel_args a{};
    a.ntaps = ntaps;
    a.w_taps = w_taps;
    a.pix_stride = pix_stride;
    a.channels = channels;
    a.m = m;
    a.nblocks = nb;
    a.zero_point = 17;
    a.acc_ld = ld;
    a.dst_ld = ld * ob;
    a.scales = scales;
    a.bias = bias;
    return a;
}

// The multi-row contract (dw_ukernel_args::nrows): kernel k run once over
// nrows output rows whose taps are src_row_step bytes apart and whose
// outputs row_bytes apart, and once per row, writes the same bytes into
// outputs that start equal (sentinel bytes between rows included).  `a`
// holds everything else: m, nblocks, channels, strides, weights, the
// epilogue's operands.
bool rows_in_one_call_match(const dw_ukernel_ref &k, dw_ukernel_args a, std::vector<const uint8_t *> taps,
                            int nrows, int64_t src_row_step, int64_t row_bytes, bool fused) {
    std::vector<uint8_t> one(size_t(nrows * row_bytes + 64), 0x5a), each(one);
    auto set_out = [&](uint8_t *p) {
        if (fused)
            a.dst = p;
        else
            a.acc = p;
    };
    a.src_taps = taps.data();
    set_out(one.data());
    a.nrows = nrows;
    a.src_row_step = src_row_step;
    a.acc_row_step = row_bytes;
    k.fn(&a);
    a.nrows = 1;
    for (int q = 0; q < nrows; ++q) {
        std::vector<const uint8_t *> sq(taps);
        for (auto &p : sq) p += q * src_row_step;
        a.src_taps = sq.data();
        set_out(each.data() + q * row_bytes);
        k.fn(&a);
    }
    return one == each;
}

// Byte-dot kernels over several output rows in one call
// (dw_ukernel_args::nrows, the rows src_row_step / acc_row_step apart)
// write what one call per row writes, byte for byte, the bytes between
// rows included: G 1 and 3, S 1 and 2, plain and fused (u8 out), channel
// counts with and without a remainder pass.
TEST_CASE("dw ukernel: byte-dot kernels take several output rows per call") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core) ||
        !jit->supports_byte_dot())
        return;
    uint32_t seed = 99;
    auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
    int cases = 0;
    for (int G : {1, 3})
        for (int S : {1, 2})
            for (int m : {3, 8})
                for (int64_t channels : {int64_t(32), int64_t(77)})
                    for (bool fused : {false, true}) {
                        CAPTURE(G);
                        CAPTURE(S);
                        CAPTURE(m);
                        CAPTURE(channels);
                        CAPTURE(fused);
                        const int R = 3, nb = 2, rows = nb * m, nrows = 3, ngroups = G > 1 ? G : 2;
                        const int64_t ncol = int64_t(S) * (rows - 1) + R, wpad = padded(channels);
                        // Row q's group g region at (q * ngroups + g) * ncol columns.
                        const int64_t region = ncol * channels;
                        std::vector<uint8_t> src(size_t(nrows * ngroups * region));
                        for (auto &v : src) v = uint8_t(rnd() >> 11);
                        std::vector<int32_t> wd(size_t(ngroups * R * wpad), 0);
                        for (int64_t t = 0; t < ngroups * R; ++t)
                            for (int64_t c = 0; c < channels; ++c)
                                wd[size_t(t * wpad + c)] = dw_byte_dot_entry(int32_t(int8_t(rnd() >> 19)), c);
                        std::vector<const uint8_t *> st(size_t(ngroups * R));
                        std::vector<const void *> wt(st.size());
                        for (int g = 0; g < ngroups; ++g)
                            for (int k = 0; k < R; ++k) {
                                st[size_t(g * R + k)] = src.data() + g * region + k * channels;
                                wt[size_t(g * R + k)] = wd.data() + (g * R + k) * wpad;
                            }
                        const uint8_t epi = fused ? uint8_t(lowp::EPI_U8 | DW_EPI_BIAS) : 0;
                        dw_ukernel_ref k;
                        REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), dw_kind::u8, m, true, R, S,
                                                      dw_byte_dot_mode(G), epi),
                                         &k) == anvil_success);
                        const int ob = fused ? 1 : 4;
                        const int64_t ld = channels + 3, row_bytes = (rows + 1) * ld * ob;
                        std::vector<float> scales(1, 0.0625f), bias(size_t(channels), 1.5f);
                        const dw_ukernel_args a = rows_args(ngroups * R, wt.data(), S * channels, channels, m, nb, ld, ob,
                                                             scales.data(), bias.data());
                        CHECK(rows_in_one_call_match(k, a, st, nrows, ngroups * region, row_bytes, fused));
                        ++cases;
                    }
    MESSAGE(cases << " multi-row cases");
}

// Every JIT kernel takes several output rows per call
// (dw_backend::supports_rows: the driver hands them a channel chunk of a
// run of rows): one call over nrows rows writes what one call per row
// writes, byte for byte, the bytes between rows and channel chunks
// included.  Tap kernels and row kernels (S 1 and 2: the bf16 stride-2
// ones split channel pairs), bf16 pair-dot kernels (G = 3), u8 with
// 16-bit products and a zero point; plain and fused.
TEST_CASE("dw ukernel: JIT kernels take several output rows per call") {
    namespace lowp = anvil::lowp;
    using namespace anvil::conv;
    const dw_backend *jit = jit_avx512_dw_backend();
    if (!jit || !(anvil::cpu::effective_features(false) & anvil::cpu::f_avx512_core)) return;
    CHECK(jit->supports_rows());
    if (const dw_backend *hwy = highway_dw_backend()) CHECK_FALSE(hwy->supports_rows());
    uint32_t seed = 7;
    auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
    auto small = [&] { return int(rnd() >> 28) - 8; };  // -8..7
    auto bf16_of = [](int v) { return uint16_t(tu::bits(float(v)) >> 16); };
    enum mode_t { taps, row, pair, narrow };
    int cases = 0;
    for (dw_kind kind : {dw_kind::f32, dw_kind::bf16, dw_kind::u8})
        for (mode_t mode : {taps, row, pair, narrow}) {
            if (mode == pair && (kind != dw_kind::bf16 || !jit->supports_bf16_pair_dot())) continue;
            if (mode == narrow && kind != dw_kind::u8) continue;
            for (int S : {1, 2})
                for (int m : {3, 8})
                    for (int64_t channels : {int64_t(32), int64_t(77)})
                        for (bool fused : {false, true}) {
                            if (mode == taps && S == 2) continue;
                            CAPTURE(int(kind));
                            CAPTURE(int(mode));
                            CAPTURE(S);
                            CAPTURE(m);
                            CAPTURE(channels);
                            CAPTURE(fused);
                            const int R = 3, G = 3, nb = 2, rows = nb * m, nrows = 3;
                            const int eb = kind == dw_kind::f32 ? 4 : kind == dw_kind::bf16 ? 2 : 1;
                            const int64_t ncol = int64_t(S) * (rows - 1) + R;
                            // Row q's kernel row g at (q * G + g) * ncol pixels.
                            const int64_t region = ncol * channels * eb;
                            std::vector<uint8_t> src(size_t(nrows * G * region));
                            for (size_t i = 0; i < src.size(); i += size_t(eb)) {
                                if (kind == dw_kind::f32) {
                                    const float f = float(small());
                                    std::memcpy(&src[i], &f, 4);
                                } else if (kind == dw_kind::bf16) {
                                    const uint16_t h = bf16_of(small());
                                    std::memcpy(&src[i], &h, 2);
                                } else {
                                    src[i] = uint8_t(rnd() >> 24);
                                }
                            }
                            // Weight rows, 32-padded: f32 / int32 values, or pair entries.
                            const int64_t wpad = (channels + 31) / 32 * 32;
                            std::vector<uint32_t> wd(size_t(G * R * wpad), 0);
                            for (int64_t t = 0; t < G * R; ++t)
                                for (int64_t c = 0; c < channels; ++c) {
                                    uint32_t &e = wd[size_t(t * wpad + (mode == pair ? dw_pair_pos(c) : c))];
                                    const int v = small();
                                    if (mode == pair)
                                        e = dw_pair_entry(bf16_of(v), bf16_of(small()));
                                    else
                                        e = is_int(kind) ? uint32_t(int32_t(v)) : tu::bits(float(v));
                                }
                            std::vector<const uint8_t *> st(size_t(G * R));
                            std::vector<const void *> wt(st.size());
                            for (int g = 0; g < G; ++g)
                                for (int k = 0; k < R; ++k) {
                                    st[size_t(g * R + k)] = src.data() + g * region + k * channels * eb;
                                    wt[size_t(g * R + k)] = wd.data() + (g * R + k) * wpad;
                                }
                            const uint8_t epi =
                                fused ? uint8_t((is_int(kind) ? lowp::EPI_U8 : lowp::EPI_F32) | DW_EPI_BIAS) : 0;
                            const uint8_t ni =
                                mode == pair ? dw_byte_dot_mode(G) : mode == narrow ? DW_INT_NARROW16 : 0;
                            dw_ukernel_ref k;
                            REQUIRE(jit->get(make_dw_desc(uint8_t(jit->tier()), kind, m, is_int(kind),
                                                          mode == taps ? 0 : R, mode == taps ? 1 : S, ni, epi),
                                             &k) == anvil_success);
                            const int ob = fused && is_int(kind) ? 1 : 4;
                            const int64_t ld = channels + 3, row_bytes = (rows + 1) * ld * ob;
                            std::vector<float> scales(1, 0.0625f), bias(size_t(channels), 1.5f);
                            const dw_ukernel_args a = rows_args(G * R, wt.data(), int64_t(S) * channels * eb, channels, m, nb, ld, ob,
                                                                 scales.data(), bias.data());
                            CHECK(rows_in_one_call_match(k, a, st, nrows, G * region, row_bytes, fused));
                            ++cases;
                        }
        }
    MESSAGE(cases << " multi-row cases");
}

TEST_CASE("dw ukernel: every compiled Highway target, integer data and fractions") {
    const std::vector<anvil::fallback::hwy_dw_target> targets = anvil::fallback::compiled_dw_targets();
    REQUIRE(!targets.empty());
    for (const anvil::fallback::hwy_dw_target &t : targets) {
        const dw_backend *be = anvil::fallback::hwy_dw_backend_for_target(t.target);
        REQUIRE(be != nullptr);
        CHECK(std::string(be->name()) == std::string("hwy:") + t.name);
        int64_t failed = 0;
        const int64_t calls = sweep(*be, 99 + uint64_t(t.target), &failed) +
                              fraction_sweep(*be, 5 + uint64_t(t.target), &failed);
        CHECK_MESSAGE(failed == 0, std::string(be->name()), ": ", failed, " of ", calls, " calls differ");
    }
    CHECK(anvil::fallback::hwy_dw_backend_for_target(0) == nullptr);
    CHECK(anvil::fallback::highway_dw_backend_for(0, anvil_isa_avx2) == nullptr);
}

}  // TEST_SUITE("once")

// Manual: ./anvil_tests -tc='dw ukernel: throughput*' --no-skip
TEST_CASE("dw ukernel: throughput (f32 m=8, 9 taps, 64 channels)" * doctest::skip()) {
    const int m = 8;
    const int64_t ch = 64, ntaps = 9, width = m + 2;
    // A 3x3 window over three input rows of `width` pixels.
    // 64-byte aligned, as a driver's rows of 64 channels are: no load
    // splits a cache line.
    tu::fbuf src(size_t(3 * width * ch)), w(size_t(ntaps * ch)), acc(size_t(m * ch));
    tu::rng rng(1);
    for (size_t i = 0; i < src.size(); ++i) src[i] = rng.frac();
    for (size_t i = 0; i < w.size(); ++i) w[i] = rng.frac() * 0.01f;
    std::vector<const uint8_t *> st(static_cast<size_t>(ntaps));
    std::vector<const void *> wt(static_cast<size_t>(ntaps));
    for (int64_t t = 0; t < ntaps; ++t) {
        st[size_t(t)] = reinterpret_cast<const uint8_t *>(src.data() + ((t / 3) * width + t % 3) * ch);
        wt[size_t(t)] = w.data() + t * ch;
    }
    dw_ukernel_args a{};
    a.src_taps = st.data();
    a.w_taps = wt.data();
    a.acc = acc.data();
    a.ntaps = ntaps;
    a.pix_stride = ch * 4;
    a.channels = ch;
    a.acc_ld = ch;
    a.m = m;
    a.nblocks = 1;
    for (const dw_backend *be : backends_under_cap())
        for (int R : {0, 3}) {
        // R = 3: the row_taps kernel (the 3x3 window's taps are rows of 3
        // pixels).
        dw_ukernel_ref k;
        REQUIRE(be->get(anvil::conv::make_dw_desc(uint8_t(be->tier()), dw_kind::f32, m, false, R), &k) ==
                anvil_success);
        const int64_t iters = std::string(be->name()) == "scalar" ? 20000 : 2000000;
        for (int i = 0; i < 1000; ++i) k.fn(&a);
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < iters; ++i) k.fn(&a);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double gflops = 2.0 * m * ch * ntaps * double(iters) / s * 1e-9;
        MESSAGE((std::string(be->name()) + " " + k.name + ": " + std::to_string(gflops) +
                " GFLOP/s (" + std::to_string(s / double(iters) * 1e9) + " ns per call)"));
    }
}
