// CPU detection on x86-64: cpuid leaves for the features (with XGETBV for
// what the OS saves), the brand string and the cache sizes.
#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

#include <cstring>
#include <string>

#include "cpu/detect.h"

namespace anvil::cpu {
namespace {


struct regs {
    uint32_t a = 0, b = 0, c = 0, d = 0;
};

regs cpuid(uint32_t leaf, uint32_t sub = 0) {
    regs r;
    __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
    return r;
}

uint64_t xgetbv0() {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t(hi) << 32) | lo;
}

bool bit(uint32_t v, int b) { return (v >> b) & 1u; }

uint32_t detect_features() {
    uint32_t f = 0;
    const uint32_t max_leaf = cpuid(0).a;
    if (max_leaf < 7) return 0;
    const regs l1 = cpuid(1);
    const bool osxsave = bit(l1.c, 27);
    if (!osxsave) return 0;
    const uint64_t xcr0 = xgetbv0();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;
    const bool os_tiles = (xcr0 & (3u << 17)) == (3u << 17);
    const regs l7 = cpuid(7, 0);
    const regs l7s1 = cpuid(7, 1);
    const bool fma = bit(l1.c, 12), avx = bit(l1.c, 28);
    if (os_ymm && avx && fma && bit(l7.b, 5)) f |= f_avx2;
    if ((f & f_avx2) && bit(l7s1.a, 4)) f |= f_avx2_vnni;
    const bool avx512f = bit(l7.b, 16), dq = bit(l7.b, 17), bw = bit(l7.b, 30),
               vl = bit(l7.b, 31);
    if ((f & f_avx2) && os_zmm && avx512f && dq && bw && vl) f |= f_avx512_core;
    if ((f & f_avx512_core) && bit(l7.c, 11)) f |= f_avx512_vnni;
    if ((f & f_avx512_vnni) && bit(l7s1.a, 5)) f |= f_avx512_bf16;
    // AMX also needs the kernel's permission for XTILEDATA; that request is
    // made where AMX kernels are enabled, not here.
    if ((f & f_avx512_bf16) && os_tiles && bit(l7.d, 24)) {
        f |= f_amx_tile;
        if (bit(l7.d, 22)) f |= f_amx_bf16;
        if (bit(l7.d, 25)) f |= f_amx_int8;
    }
    return f;
}

std::string brand_string() {
    if (cpuid(0x80000000).a < 0x80000004) return "unknown";
    char s[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
        regs r = cpuid(0x80000002 + i);
        std::memcpy(s + 16 * i + 0, &r.a, 4);
        std::memcpy(s + 16 * i + 4, &r.b, 4);
        std::memcpy(s + 16 * i + 8, &r.c, 4);
        std::memcpy(s + 16 * i + 12, &r.d, 4);
    }
    std::string out(s);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

// Deterministic cache parameters leaf (Intel 4, AMD 0x8000001D): returns
// sizes by level, 0 where the leaf gives nothing.
void cache_leaf(uint32_t leaf, int64_t *l1, int64_t *l2, int64_t *l3) {
    for (uint32_t sub = 0; sub < 16; ++sub) {
        regs r = cpuid(leaf, sub);
        const uint32_t type = r.a & 0x1f;
        if (type == 0) break;
        if (type == 2) continue;  // instruction cache
        const uint32_t level = (r.a >> 5) & 0x7;
        const int64_t ways = ((r.b >> 22) & 0x3ff) + 1;
        const int64_t parts = ((r.b >> 12) & 0x3ff) + 1;
        const int64_t line = (r.b & 0xfff) + 1;
        const int64_t sets = int64_t(r.c) + 1;
        const int64_t size = ways * parts * line * sets;
        if (level == 1) *l1 = size;
        if (level == 2) *l2 = size;
        if (level == 3) *l3 = size;
    }
}

// A cache share that a single core can count on; the L3 reported by cpuid is
// often the whole socket (508 MB on the Zen 5 development VM, where a read
// sweep shows one core sees about a 32 MB CCD), so it is capped.
constexpr int64_t kMaxUsefulL3 = 32ll * 1024 * 1024;

cache_sizes detect_caches(const std::string &vendor, std::string *note) {
    int64_t l1 = 0, l2 = 0, l3 = 0;
    const uint32_t max_leaf = cpuid(0).a;
    if (vendor == "GenuineIntel" && max_leaf >= 4) cache_leaf(4, &l1, &l2, &l3);
    const uint32_t max_ext = cpuid(0x80000000).a;
    if ((l1 == 0 || l2 == 0) && vendor == "AuthenticAMD") {
        if (max_ext >= 0x8000001D) cache_leaf(0x8000001D, &l1, &l2, &l3);
        if (l1 == 0 && max_ext >= 0x80000005)
            l1 = int64_t((cpuid(0x80000005).c >> 24) & 0xff) * 1024;
        if (max_ext >= 0x80000006) {
            regs r = cpuid(0x80000006);
            if (l2 == 0) l2 = int64_t((r.c >> 16) & 0xffff) * 1024;
            if (l3 == 0) l3 = int64_t((r.d >> 18) & 0x3fff) * 512 * 1024;
        }
    }
    cache_sizes cs;
    if (l1 > 0) cs.l1d = l1;
    if (l2 > 0) cs.l2 = l2;
    if (l3 > 0) cs.l3 = l3;
    if (cs.l3 > kMaxUsefulL3) {
        *note = "cpuid reports " + std::to_string(cs.l3 >> 20) +
                " MiB (socket-wide); blocking assumes 32 MiB per core complex";
        cs.l3 = kMaxUsefulL3;
    }
    return cs;
}

}  // namespace

cpu_info detect_cpu() {
    cpu_info ci;
    regs r0 = cpuid(0);
    char v[13] = {};
    std::memcpy(v + 0, &r0.b, 4);
    std::memcpy(v + 4, &r0.d, 4);
    std::memcpy(v + 8, &r0.c, 4);
    ci.vendor = v;
    ci.brand = brand_string();
    ci.detected = detect_features();
    ci.caches = detect_caches(ci.vendor, &ci.l3_note);
    ci.avx512_vbmi = (ci.detected & f_avx512_core) && cpuid(0).a >= 7 && bit(cpuid(7, 0).c, 1);
    // Streaming choices measured per vendor (cpu_info has the series).
    ci.stream_prefetch_lead = ci.caches.l2 / 16;
    const uint32_t sig = cpuid(1).a;
    const uint32_t family = ((sig >> 8) & 0xf) == 0xf ? 0xf + ((sig >> 20) & 0xff) : (sig >> 8) & 0xf;
    // AMD family 0x19 with AVX-512: Zen 4 (Zen 3, the same family, has none
    // and keeps the defaults: unmeasured).
    if (ci.vendor == "AuthenticAMD" && family == 0x19 && (ci.detected & f_avx512_core)) {
        ci.jit_row_stream = true;
        ci.stream_prefetch_lead = 8 * 1024;
        ci.int8_dw_byte_dot = ci.avx512_vbmi;
    }
    if (ci.vendor == "GenuineIntel") {
        ci.stream_prefetch_lead = 8 * 1024;
        ci.a_block_l2_divisor = 8;
        ci.pack_prefetch_groups = 16;
        ci.bf16_dot_half_rate = true;
        ci.int8_dw_byte_dot = true;
    }
    return ci;
}


}  // namespace anvil::cpu
#endif  // x86-64
