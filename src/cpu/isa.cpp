// The ISA tiers and the ANVIL_MAX_ISA cap over the detected features
// (cpu/detect_*.cpp detect them per architecture).
#include "cpu/isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/env.h"
#include "cpu/detect.h"

namespace anvil::cpu {
namespace {

std::atomic<uint32_t> g_cap{~0u};
std::atomic<bool> g_frozen{false};
std::once_flag g_env_once;
// Set once read_env_cap has run: the per-call check is then one load
// (libstdc++'s std::call_once writes two thread-local variables and calls
// pthread_once on every call, a measurable share of a cached 16^3 GEMM).
std::atomic<bool> g_env_read{false};

void read_env_cap() {
    std::string name = env::get_string("ANVIL_MAX_ISA", "");
    if (name.empty()) return;
    anvil_isa_t tier;
    if (parse_isa_name(name, &tier)) g_cap.store(tier_features(tier));
}

// ANVIL_MAX_ISA is read on the first call only; later calls cost one load.
void read_env_cap_once() {
    if (g_env_read.load(std::memory_order_acquire)) return;
    std::call_once(g_env_once, read_env_cap);
    g_env_read.store(true, std::memory_order_release);
}

}  // namespace

uint32_t tier_features(anvil_isa_t tier) {
    uint32_t f = 0;
    switch (tier) {
        case anvil_isa_amx: f |= f_amx_tile | f_amx_bf16 | f_amx_int8; [[fallthrough]];
        case anvil_isa_avx512_core_bf16: f |= f_avx512_bf16; [[fallthrough]];
        case anvil_isa_avx512_core_vnni: f |= f_avx512_vnni; [[fallthrough]];
        case anvil_isa_avx512_core: f |= f_avx512_core; [[fallthrough]];
        case anvil_isa_avx2: f |= f_avx2 | f_avx2_vnni; [[fallthrough]];
        case anvil_isa_scalar: break;
    }
    return f;
}

anvil_isa_t highest_tier(uint32_t features) {
    const anvil_isa_t order[] = {anvil_isa_amx, anvil_isa_avx512_core_bf16,
                                 anvil_isa_avx512_core_vnni, anvil_isa_avx512_core,
                                 anvil_isa_avx2};
    for (anvil_isa_t t : order) {
        // AVX-VNNI is optional within the avx2 tier.
        const uint32_t need = tier_features(t) & ~uint32_t(f_avx2_vnni);
        if ((features & need) == need) return t;
    }
    return anvil_isa_scalar;
}

bool parse_isa_name(const std::string &name, anvil_isa_t *out) {
    for (int t = anvil_isa_scalar; t <= anvil_isa_amx; ++t) {
        const char *n = anvil_isa_name(anvil_isa_t(t));
        if (n && name == n) {
            *out = anvil_isa_t(t);
            return true;
        }
    }
    return false;
}

std::string features_string(uint32_t f) {
    static const std::pair<uint32_t, const char *> names[] = {
        {f_avx2, "avx2"},           {f_avx2_vnni, "avx2_vnni"},
        {f_avx512_core, "avx512_core"}, {f_avx512_vnni, "avx512_core_vnni"},
        {f_avx512_bf16, "avx512_core_bf16"}, {f_amx_tile, "amx_tile"},
        {f_amx_bf16, "amx_bf16"},   {f_amx_int8, "amx_int8"}};
    std::string s;
    for (auto &p : names)
        if (f & p.first) s += (s.empty() ? "" : " ") + std::string(p.second);
    return s.empty() ? "none" : s;
}

const cpu_info &info() {
    static const cpu_info ci = detect_cpu();
    return ci;
}


uint32_t effective_features(bool freeze) {
    read_env_cap_once();
    if (freeze && !g_frozen.load(std::memory_order_relaxed)) g_frozen.store(true);
    return info().detected & g_cap.load(std::memory_order_relaxed);
}

anvil_isa_t effective_tier(bool freeze) { return highest_tier(effective_features(freeze)); }

namespace {
// dispatch_tier()'s answer once the cap is frozen (-1: not computed since
// the cap last changed).  Every compute call asks for it; the cap cannot
// change after the freeze except through set_max_isa_for_test, which
// resets it.
std::atomic<int> g_frozen_tier{-1};
}  // namespace

anvil_isa_t dispatch_tier(bool freeze) {
    if (freeze) {
        const int cached = g_frozen_tier.load(std::memory_order_relaxed);
        if (cached >= 0) return anvil_isa_t(cached);
    }
#if defined(__x86_64__) || defined(_M_X64)
    const anvil_isa_t t = effective_tier(freeze);
#else
    effective_features(freeze);  // reads ANVIL_MAX_ISA, freezes the cap
    const anvil_isa_t t = g_cap.load(std::memory_order_relaxed) == tier_features(anvil_isa_scalar)
                              ? anvil_isa_scalar
                              : anvil_isa_avx2;
#endif
    if (freeze) g_frozen_tier.store(int(t), std::memory_order_relaxed);
    return t;
}

anvil_status_t set_max_isa(anvil_isa_t tier) {
    if (tier < anvil_isa_scalar || tier > anvil_isa_amx) return anvil_invalid_argument;
    read_env_cap_once();
    if (g_frozen.load()) return anvil_unsupported;
    g_cap.store(tier_features(tier));
    g_frozen_tier.store(-1, std::memory_order_relaxed);
    return anvil_success;
}

void set_max_isa_for_test(anvil_isa_t tier) {
    read_env_cap_once();
    g_cap.store(tier_features(tier));
    g_frozen_tier.store(-1, std::memory_order_relaxed);
}

}  // namespace anvil::cpu
