// CPU feature detection and the ANVIL_MAX_ISA cap.
#pragma once
#include <cstdint>
#include <string>

#include "anvil/anvil.h"

namespace anvil::cpu {

// Individual features as bits; tiers (anvil_isa_t) are unions of them, so
// "can this path run" is a subset test: (required & effective) == required.
enum feature : uint32_t {
    f_avx2 = 1u << 0,       // AVX2 + FMA
    f_avx2_vnni = 1u << 1,  // AVX-VNNI (VEX-encoded vpdpbusd on ymm)
    f_avx512_core = 1u << 2,  // AVX-512 F + BW + DQ + VL
    f_avx512_vnni = 1u << 3,
    f_avx512_bf16 = 1u << 4,
    f_amx_tile = 1u << 5,
    f_amx_bf16 = 1u << 6,
    f_amx_int8 = 1u << 7,
};

// The feature set a tier stands for (what it needs the CPU to have).
uint32_t tier_features(anvil_isa_t tier);
// Highest tier fully contained in a feature set.
anvil_isa_t highest_tier(uint32_t features);
bool parse_isa_name(const std::string &name, anvil_isa_t *out);
std::string features_string(uint32_t features);

struct cache_sizes {
    int64_t l1d = 32 * 1024;
    int64_t l2 = 1024 * 1024;
    int64_t l3 = 32 * 1024 * 1024;  // per core complex as far as we can tell
};

struct cpu_info {
    std::string vendor;
    std::string brand;
    uint32_t detected = 0;   // what the CPU (and the OS's XSAVE state) allows
    cache_sizes caches;
    std::string l3_note;     // how the L3 figure was derived
};

// Detected once, thread-safe.
const cpu_info &info();

// Features anvil may use: detected & cap.  Compute calls read it with
// freeze = true, after which anvil_set_max_isa refuses to change the cap;
// queries (anvil-info, anvil_get_effective_isa) pass false.
uint32_t effective_features(bool freeze = true);
inline bool has(uint32_t required) {
    return (effective_features() & required) == required;
}
anvil_isa_t effective_tier(bool freeze = true);

// The tier the backends dispatch on.  On x86-64 the effective tier.
// Elsewhere the x86 tiers are all absent (effective_tier() is scalar), and
// the cap only says whether SIMD may run: capped to scalar gives scalar,
// anything else avx2, which the Highway backends read as "the best target
// this CPU supports" (fallback::allowed_targets).
anvil_isa_t dispatch_tier(bool freeze = true);

// Sets the cap; fails once effective_features() has been read by a compute
// call (see freeze_cap).
anvil_status_t set_max_isa(anvil_isa_t tier);
// Tests may reset the cap at any time (not part of the public API).
void set_max_isa_for_test(anvil_isa_t tier);

}  // namespace anvil::cpu
