// ISA tiers: names, detection, the ANVIL_MAX_ISA cap, and anvil_set_max_isa
// after the first compute call.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "anvil/anvil.h"
#include "gemm/backend.h"
#include "test_util.h"

namespace {

const anvil_isa_t kTiers[] = {anvil_isa_scalar,           anvil_isa_avx2,
                              anvil_isa_avx512_core,      anvil_isa_avx512_core_vnni,
                              anvil_isa_avx512_core_bf16, anvil_isa_amx};

// The cap this process runs under: ANVIL_MAX_ISA when it names a tier.
bool env_cap(anvil_isa_t *cap) {
    const char *v = std::getenv("ANVIL_MAX_ISA");
    if (!v) return false;
    for (anvil_isa_t t : kTiers)
        if (std::string(v) == anvil_isa_name(t)) {
            *cap = t;
            return true;
        }
    return false;
}

#if defined(__x86_64__)
// The tier /proc/cpuinfo's flags (which Linux clears for state the OS does
// not enable) stand for.  (Elsewhere, e.g. under qemu-user, the file may
// describe another machine.)
bool cpuinfo_tier(anvil_isa_t *out) {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    std::set<std::string> flags;
    while (std::getline(f, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream s(line.substr(line.find(':') + 1));
        std::string w;
        while (s >> w) flags.insert(w);
        break;
    }
    if (flags.empty()) return false;
    auto has = [&](std::initializer_list<const char *> l) {
        for (const char *x : l)
            if (!flags.count(x)) return false;
        return true;
    };
    anvil_isa_t t = anvil_isa_scalar;
    if (has({"avx2", "fma"})) {
        t = anvil_isa_avx2;
        if (has({"avx512f", "avx512dq", "avx512bw", "avx512vl"})) {
            t = anvil_isa_avx512_core;
            if (has({"avx512_vnni"})) {
                t = anvil_isa_avx512_core_vnni;
                if (has({"avx512_bf16"})) {
                    t = anvil_isa_avx512_core_bf16;
                    if (has({"amx_tile", "amx_bf16", "amx_int8"})) t = anvil_isa_amx;
                }
            }
        }
    }
    *out = t;
    return true;
}
#endif

}  // namespace

TEST_CASE("isa: names of every tier, NULL for unknown values") {
    CHECK(std::string(anvil_isa_name(anvil_isa_scalar)) == "scalar");
    CHECK(std::string(anvil_isa_name(anvil_isa_avx2)) == "avx2");
    CHECK(std::string(anvil_isa_name(anvil_isa_avx512_core)) == "avx512_core");
    CHECK(std::string(anvil_isa_name(anvil_isa_avx512_core_vnni)) == "avx512_core_vnni");
    CHECK(std::string(anvil_isa_name(anvil_isa_avx512_core_bf16)) == "avx512_core_bf16");
    CHECK(std::string(anvil_isa_name(anvil_isa_amx)) == "amx");
    CHECK(anvil_isa_name(anvil_isa_t(-1)) == nullptr);
    CHECK(anvil_isa_name(anvil_isa_t(6)) == nullptr);
    CHECK(anvil_isa_name(anvil_isa_t(1000)) == nullptr);
}

TEST_CASE("isa: detected >= effective, effective = min(ANVIL_MAX_ISA, detected)") {
    const anvil_isa_t det = anvil_get_detected_isa(), eff = anvil_get_effective_isa();
    anvil_isa_t cap = anvil_isa_amx;
    const bool capped = env_cap(&cap);
    MESSAGE("detected ", std::string(anvil_isa_name(det)), ", effective ",
            std::string(anvil_isa_name(eff)), ", ANVIL_MAX_ISA ",
            capped ? std::string(anvil_isa_name(cap)) : std::string("(unset)"), ", backend ",
            tu::backend_name());
    CHECK(anvil_isa_name(det) != nullptr);
    CHECK(anvil_isa_name(eff) != nullptr);
    CHECK(det >= eff);
    CHECK(eff == (cap < det ? cap : det));
    // Queries are stable.
    CHECK(anvil_get_detected_isa() == det);
    CHECK(anvil_get_effective_isa() == eff);
}

TEST_CASE("isa: the selected backend matches the effective ISA") {
    const anvil_isa_t eff = anvil_get_effective_isa();
    const anvil::gemm::backend &be = anvil::gemm::select_backend();
    CAPTURE(std::string(be.name()));
    CHECK(be.mr() >= 1);
    CHECK(be.nr() >= 1);
#if defined(__x86_64__)
    CHECK(be.tier() <= eff);
    if (eff == anvil_isa_scalar) CHECK(be.tier() == anvil_isa_scalar);
    if (eff >= anvil_isa_avx512_core && anvil::gemm::jit_avx512_backend() != nullptr)
        CHECK(be.tier() >= anvil_isa_avx512_core);
    if (eff == anvil_isa_avx2 && anvil::gemm::highway_backend() != nullptr)
        CHECK(be.tier() == anvil_isa_avx2);
#else
    // The tiers describe x86 (effective is scalar here); the cap only says
    // whether SIMD may run: scalar gives the scalar backend, any other cap
    // Highway's best target (backend of the "avx2" tier).
    CHECK(eff == anvil_isa_scalar);
    CHECK(anvil::gemm::jit_avx512_backend() == nullptr);
    if (tu::initial_isa_cap() == anvil_isa_scalar) CHECK(be.tier() == anvil_isa_scalar);
    else if (anvil::gemm::highway_backend() != nullptr) CHECK(std::string(be.name()).rfind("hwy:", 0) == 0);
#endif
}

TEST_CASE("isa: anvil_set_max_isa after the first compute call is refused") {
    // Make sure a compute call has happened in this process.
    float a = 2.0f, b = 3.0f, c = 0.0f;
    REQUIRE(anvil_sgemm('N', 'N', 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1) == anvil_success);
    CHECK(c == 6.0f);
    const anvil_isa_t eff = anvil_get_effective_isa();
    for (anvil_isa_t t : kTiers) {
        CAPTURE(int(t));
        CHECK(anvil_set_max_isa(t) == anvil_unsupported);
        CHECK(anvil_get_effective_isa() == eff);
    }
    // An invalid value is reported as such (before the frozen check).
    CHECK(anvil_set_max_isa(anvil_isa_t(-1)) == anvil_invalid_argument);
    CHECK(anvil_set_max_isa(anvil_isa_t(6)) == anvil_invalid_argument);
    CHECK(anvil_set_max_isa(anvil_isa_t(42)) == anvil_invalid_argument);
    CHECK(anvil_get_effective_isa() == eff);
}

TEST_SUITE("once") {
TEST_CASE("isa: detection agrees with /proc/cpuinfo") {
    anvil_isa_t want = anvil_isa_scalar;  // no x86 tier off x86-64
#if defined(__x86_64__)
    if (!cpuinfo_tier(&want)) {
        MESSAGE("no flags line in /proc/cpuinfo; skipped");
        return;
    }
#endif
    CHECK(std::string(anvil_isa_name(anvil_get_detected_isa())) ==
          std::string(anvil_isa_name(want)));
}
}
