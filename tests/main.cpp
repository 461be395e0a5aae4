// The doctest runner, plus ANVIL_TEST_HWY_TARGET=<name>: run the suites with
// Highway restricted to one target (hwy::TargetName, any case: neon, sve,
// sve2, avx2, avx3, sse4, emu128, ...) and the SIMD-free fallbacks, so one
// machine tests every Highway target it supports (ctest's anvil_tests_hwy_*
// entries).  A target this CPU lacks, or this build did not compile, makes
// the binary exit with 77 (ctest: skipped).  Every run names the Highway
// target in use on its first line.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <hwy/targets.h>

#include "anvil/anvil.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "hwy_target.h"
#if ANVIL_TESTS_HAVE_AMX
#include "amx/amx_test_backend.h"
#endif

namespace {

constexpr int kSkipped = 77;  // ctest SKIP_RETURN_CODE

std::string lower(std::string s) {
    for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Every Highway target of this architecture (hwy::TargetName knows it).
template <typename F>
void for_each_target(F f) {
    for (int b = 0; b < 63; ++b) {
        const int64_t t = int64_t(1) << b;
        const std::string name = hwy::TargetName(t);
        if (name != "Unknown") f(t, name);
    }
}

// Applies ANVIL_TEST_HWY_TARGET; returns the exit code when the suites must
// not run, -1 otherwise.  Must precede every anvil call that computes: each
// Highway backend reads hwy::SupportedTargets() once, on first use.
int select_hwy_target() {
    const char *env = std::getenv("ANVIL_TEST_HWY_TARGET");
    if (!env || !*env) return -1;
    const std::string want = lower(env);
    int64_t bit = 0;
    std::string known;
    for_each_target([&](int64_t t, const std::string &name) {
        if (lower(name) == want) bit = t;
        known += (known.empty() ? "" : " ") + lower(name);
    });
    if (!bit) {
        std::fprintf(stderr, "anvil_tests: ANVIL_TEST_HWY_TARGET=%s is no Highway target of this "
                             "architecture (%s)\n", env, known.c_str());
        return 2;
    }
    // compiled_targets(): the targets compiled into libanvil (its
    // HWY_TARGETS) that this CPU supports, asked before the override.
    bool usable = false;
    for (const auto &t : anvil::fallback::compiled_targets()) usable |= t.target == bit;
    if (!usable) {
        std::printf("anvil_tests: Highway target %s not supported here: skipped\n", env);
        std::printf("anvil_tests: (%s)\n", hwy::SupportedTargets() & bit
                                               ? "supported by this CPU, not compiled into this build"
                                               : "this CPU lacks it");
        return kSkipped;
    }
    tu::hwy_test_mask() = bit | HWY_EMU128 | HWY_SCALAR;
    hwy::SetSupportedTargetsForTest(tu::hwy_test_mask());
    return -1;
}

// The target the Highway backend uses now (the override and ANVIL_MAX_ISA
// applied); "none" when the cap allows no compiled target.
std::string target_in_use() {
    const anvil::gemm::backend *b = anvil::gemm::highway_backend();
    if (!b) return "none";
    const std::string name = b->name();  // "hwy:" + hwy::TargetName
    return name.rfind("hwy:", 0) == 0 ? name.substr(4) : name;
}

// ANVIL_TEST_CLAMPED_CAP_ISA_ONLY=1 (set by the ctest cap entries above
// scalar, and by tools/test --tsan): when ANVIL_MAX_ISA names a tier this
// CPU lacks, anvil clamps it to the detected tier, so every kernel path the
// suites would take is one that the entry of the detected tier runs anyway
// (on an AVX2-only CPU the avx512_core .. amx entries were five more runs of
// the avx2 one).  Such a run keeps only the "isa:" cases, which check the
// clamp itself.  True when it applied.
bool keep_only_isa_cases_if_clamped(doctest::Context &context) {
    const char *on = std::getenv("ANVIL_TEST_CLAMPED_CAP_ISA_ONLY");
    const char *cap = std::getenv("ANVIL_MAX_ISA");
    if (!on || std::string(on) != "1" || !cap || !*cap) return false;
    int requested = -1;
    for (int t = anvil_isa_scalar; t <= anvil_isa_amx; ++t) {
        const char *name = anvil_isa_name(anvil_isa_t(t));
        if (name && lower(name) == lower(cap)) requested = t;
    }
    const int detected = int(anvil_get_detected_isa());
    if (requested < 0 || requested <= detected) return false;
    std::printf("anvil_tests: ANVIL_MAX_ISA=%s is above this CPU (%s): the kernels are those of "
                "the %s entry; only the isa: cases run\n",
                cap, anvil_isa_name(anvil_isa_t(detected)), anvil_isa_name(anvil_isa_t(detected)));
    std::fflush(stdout);
    context.clearFilters();
    context.addFilter("test-case", "isa:*");
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    const int rc = select_hwy_target();
    if (rc >= 0) return rc;
    std::printf("anvil_tests: Highway target in use: %s\n", target_in_use().c_str());
    std::fflush(stdout);
#if ANVIL_TESTS_HAVE_AMX
    // ANVIL_TEST_AMX: the lp suites run on the AMX backend (native or
    // emulated, tests/amx/amx_test_backend.h).
    amxt::mode amx_mode;
    const bool amx = amxt::mode_from_env(&amx_mode);
    if (amx) {
        anvil::lowp::set_lp_backend_override(&amxt::backend(amx_mode));
        std::printf("anvil_tests: low-precision kernels: AMX, %s\n", amxt::mode_name(amx_mode));
        std::fflush(stdout);
    }
#endif
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    keep_only_isa_cases_if_clamped(context);
    const bool jit_at_start = anvil_jit_enabled() == 1;
    int result = context.run();
    // A kernel that fails to generate (say, a jump the generator emitted
    // too short for its code) switches the JIT off under the default
    // fallback policy, and every later result, computed by the Highway
    // kernels, is still right: only this catches it.  (The JIT-failure
    // cases provoke failures in child processes, which skip the check.)
    if (jit_at_start && anvil_jit_enabled() != 1 && !std::getenv("ANVIL_JIT_FAILURE_CHILD")) {
        std::printf("anvil_tests: the JIT switched itself off during the run: a kernel failed to "
                    "generate (ANVIL_VERBOSE=1 names it)\n");
        if (result == 0) result = 1;
    }
#if ANVIL_TESTS_HAVE_AMX
    if (amx) {
        // Failures inside the driver's kernel calls (emulated) are recorded,
        // not thrown: any fails the run.
        const auto errors = amxt::take_emulation_errors();
        for (const auto &e : errors) std::printf("anvil_tests: AMX emulation error: %s\n", e.c_str());
        std::printf("anvil_tests: %llu tile dot products emulated\n",
                    static_cast<unsigned long long>(amxt::emulated_tile_ops()));
        if (!errors.empty() && result == 0) result = 1;
    }
#endif
    return result;
}
