// anvil-info: what anvil sees on this machine and what it would do.
//
//   anvil-info                          version, CPU, features, tiers, caches, threads, cache
//   anvil-info --shape MxNxK [--trans NT]   anvil_explain_sgemm for one shape (nothing runs)
//   anvil-info --explain MxNxK --dt f32|bf16|u8s8s32|s8s8s32   anvil_explain_gemm
//   options: --isa CAP (anvil_set_max_isa first), --threads N
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "anvil/anvil.h"
#include "anvil_bench_problem.h"
#include "cpu/isa.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "lowp/lp_backend.h"

namespace {

void usage(std::FILE *f) {
    std::fputs(
        "usage: anvil-info [--isa CAP] [--threads N]\n"
        "       anvil-info --shape MxNxK [--trans NN|NT|TN|TT] [--isa CAP] [--threads N]\n"
        "       anvil-info --explain MxNxK [--dt f32|bf16|u8s8s32|s8s8s32] [--trans ..]\n"
        "Shapes may also be given as benchdnn's MxK:KxN.\n",
        f);
}

std::string bytes_str(int64_t b) {
    if (b >= (int64_t(1) << 20) && b % (int64_t(1) << 20) == 0)
        return std::to_string(b >> 20) + " MiB";
    if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
}

// --dt names (anvil-bench's) -> the A and B types of anvil_explain_gemm.
bool explain_types(const std::string &dt, anvil_data_type_t *a, anvil_data_type_t *b, int *a_bytes,
                   int *b_bytes) {
    if (dt == "f32") {
        *a = *b = anvil_dt_f32;
        *a_bytes = *b_bytes = 4;
    } else if (dt == "bf16") {
        *a = *b = anvil_dt_bf16;
        *a_bytes = *b_bytes = 2;
    } else if (dt == "u8s8s32" || dt == "s8s8s32") {
        *a = dt[0] == 'u' ? anvil_dt_u8 : anvil_dt_s8;
        *b = anvil_dt_s8;
        *a_bytes = *b_bytes = 1;
    } else {
        return false;
    }
    return true;
}

int explain(const anvil_bench::gemm_problem &p, const std::string &dt) {
    anvil_data_type_t a_dt, b_dt;
    int a_bytes = 4, b_bytes = 4;
    explain_types(dt, &a_dt, &b_dt, &a_bytes, &b_bytes);
    size_t needed = 0;
    anvil_status_t st = anvil_explain_gemm(a_dt, b_dt, p.ta, p.tb, p.M, p.N, p.K, nullptr, 0, &needed);
    if (st != anvil_success) {
        std::fprintf(stderr, "anvil-info: anvil_explain_gemm: %s\n", anvil_status_str(st));
        return 1;
    }
    std::vector<char> buf(needed + 1);
    st = anvil_explain_gemm(a_dt, b_dt, p.ta, p.tb, p.M, p.N, p.K, buf.data(), buf.size(), &needed);
    if (st != anvil_success) {
        std::fprintf(stderr, "anvil-info: anvil_explain_gemm: %s\n", anvil_status_str(st));
        return 1;
    }
    std::fputs(buf.data(), stdout);
    const double flop = 2.0 * double(p.M) * double(p.N) * double(p.K);
    std::printf("%s per call=%.0f  A=%s B=%s C=%s\n", a_bytes == 1 ? "ops" : "flops", flop,
                bytes_str(a_bytes * p.M * p.K).c_str(), bytes_str(b_bytes * p.K * p.N).c_str(),
                bytes_str(4 * p.M * p.N).c_str());
    return 0;
}

void describe_machine() {
    using namespace anvil;
    const cpu::cpu_info &ci = cpu::info();
    std::printf("anvil %s\n", anvil_version());
    std::printf("cpu:            %s | %s\n", ci.vendor.c_str(), ci.brand.c_str());
    static const std::pair<uint32_t, const char *> feats[] = {
        {cpu::f_avx2, "avx2"},
        {cpu::f_avx2_vnni, "avx2_vnni"},
        {cpu::f_avx512_core, "avx512_core"},
        {cpu::f_avx512_vnni, "avx512_core_vnni"},
        {cpu::f_avx512_bf16, "avx512_core_bf16"},
        {cpu::f_amx_tile, "amx_tile"},
        {cpu::f_amx_bf16, "amx_bf16"},
        {cpu::f_amx_int8, "amx_int8"}};
    std::printf("features:      ");
    for (const auto &f : feats)
        std::printf(" %s=%s", f.second, (ci.detected & f.first) ? "yes" : "no");
    std::printf("\n");
    const anvil_isa_t detected = anvil_get_detected_isa();
    const anvil_isa_t effective = anvil_get_effective_isa();
    std::printf("detected tier:  %s\n", anvil_isa_name(detected));
    const char *env = std::getenv("ANVIL_MAX_ISA");
    anvil_isa_t cap_tier;
    std::string env_note;
    if (env && *env && !cpu::parse_isa_name(env, &cap_tier)) env_note = " (not a tier name: ignored)";
    std::printf("ANVIL_MAX_ISA:  %s%s\n", env && *env ? env : "(unset)", env_note.c_str());
    std::printf("effective tier: %s%s\n", anvil_isa_name(effective),
                effective < detected ? "  (capped)" : "");
    const uint32_t eff = cpu::effective_features(false);
    if (eff != ci.detected)
        std::printf("disabled by the cap: %s\n",
                    cpu::features_string(ci.detected & ~eff).c_str());
    const gemm::backend &be = gemm::select_backend();
    std::printf("fp32 backend:   %s (tier %s, mr=%d nr=%d)\n", be.name(),
                anvil_isa_name(be.tier()), be.mr(), be.nr());
    std::printf("bf16 backend:   %s\n", lowp::select_lp_backend(lowp::lp_kind::bf16).name());
    std::printf("amx:            %s%s\n", lowp::amx_status().c_str(),
                (ci.detected & cpu::f_amx_tile) && !(eff & cpu::f_amx_tile)
                    ? " (but off under the ISA cap)"
                    : "");
    std::printf("int8 backend:   %s%s\n", lowp::select_lp_backend(lowp::lp_kind::u8s8).name(),
                cpu::has(cpu::f_avx512_core | cpu::f_avx512_vnni)
                    ? " (+ in-place dot / row-B kernels for M <= 16)"
                    : "");
    // Highway: every target compiled in, which of them this CPU runs, and
    // the one the fp32 / bf16 / int8 fallbacks use now (the best allowed).
    std::string compiled, usable;
    for (int64_t bits = HWY_TARGETS; bits != 0; bits &= bits - 1)
        compiled += std::string(compiled.empty() ? "" : " ") + hwy::TargetName(bits & -bits);
    for (const auto &t : fallback::compiled_targets())
        usable += std::string(usable.empty() ? "" : " ") + t.name;
    const gemm::backend *hb = gemm::highway_backend();
    std::printf("highway:        compiled [%s], this CPU [%s], best allowed %s\n", compiled.c_str(),
                usable.c_str(), hb ? hb->name() : "none (capped to scalar)");
#if !(defined(__x86_64__) || defined(_M_X64))
    std::printf("note:           the ISA tiers describe x86; here ANVIL_MAX_ISA=scalar forces the\n"
                "                scalar reference kernels, any other value lets Highway pick\n");
#endif
#if defined(__x86_64__) || defined(_M_X64)
    std::printf("backends:      ");
    for (int t = anvil_isa_scalar; t <= anvil_isa_amx; ++t) {
        const gemm::backend *b = gemm::backend_for_tier(anvil_isa_t(t));
        std::printf(" %s->%s", anvil_isa_name(anvil_isa_t(t)),
                    t > int(detected) ? "n/a(cpu)" : b ? b->name() : "n/a");
    }
    std::printf("\n");
#endif
    std::printf("caches:         L1d %s, L2 %s, L3 %s\n", bytes_str(ci.caches.l1d).c_str(),
                bytes_str(ci.caches.l2).c_str(), bytes_str(ci.caches.l3).c_str());
    if (!ci.l3_note.empty()) std::printf("L3 note:        %s\n", ci.l3_note.c_str());
    std::printf("weight stream:  prefetched %s ahead by one-row-tile calls (per vendor, cpu/isa.h)\n",
                bytes_str(ci.stream_prefetch_lead).c_str());
    if (ci.detected & cpu::f_avx512_bf16)
        std::printf("bf16 products:  %s\n",
                    ci.bf16_dot_half_rate
                        ? "FMA on operands widened to fp32 (vdpbf16ps runs at half the FMA's rate here; same bits)"
                        : "vdpbf16ps");
    if (cpu::effective_features(false) & cpu::f_avx512_vnni)  // under the cap, as the kernels are chosen
        std::printf("int8 depthwise: %s\n",
                    !ci.avx512_vbmi ? "kernels on the source widened to int32 (no AVX512-VBMI for byte-dot kernels)"
                    : ci.int8_dw_byte_dot
                        ? "byte-dot kernels (vpermb + vpdpbusd, up to 4 kernel rows per instruction)"
                        : "kernels on the source widened to int32 (byte-dot kernels unmeasured on this CPU)");
    const char *omp = std::getenv("OMP_NUM_THREADS");
    std::printf("threads:        %d (OMP_NUM_THREADS=%s)\n", anvil_get_num_threads(),
                omp ? omp : "unset");
    anvil_cache_stats_t cs{};
    if (anvil_get_kernel_cache_stats(&cs) == anvil_success)
        std::printf("kernel cache:   capacity %lld, cached %lld, hits %lld, misses %lld, "
                    "evictions %lld, generation %.3f ms\n",
                    (long long)cs.capacity, (long long)cs.size, (long long)cs.hits,
                    (long long)cs.misses, (long long)cs.evictions, cs.generation_seconds * 1e3);
    std::printf("jit:            %s; on failure: %s (ANVIL_JIT_ON_FAILURE)\n",
                anvil_jit_enabled() ? "enabled" : "off (no JIT tier under the cap, or turned off by a failure)",
                anvil_get_jit_failure_policy() == anvil_jit_failure_error ? "return anvil_jit_error"
                                                                          : "fall back to Highway/scalar");
    anvil_memory_stats_t ms{};
    if (anvil_get_memory_stats(&ms) == anvil_success) {
        if (ms.cap > 0)
            std::printf("memory cap:     %s (ANVIL_MEMORY_CAP)\n", bytes_str(ms.cap).c_str());
        else
            std::printf("memory cap:     none (ANVIL_MEMORY_CAP unset)\n");
    }
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string shape, trans = "NN", isa, dt = "f32";
    int threads = 0;
    for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i], v;
        const size_t eq = a.find('=');
        bool inline_val = false;
        if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
            v = a.substr(eq + 1);
            a = a.substr(0, eq);
            inline_val = true;
        }
        auto value = [&]() -> bool {
            if (inline_val) return true;
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "anvil-info: %s needs a value\n", a.c_str());
                return false;
            }
            v = args[++i];
            return true;
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else if (a == "--shape" || a == "--explain") {
            if (!value()) return 2;
            shape = v;
        } else if (a == "--trans") {
            if (!value()) return 2;
            trans = v;
        } else if (a == "--dt") {
            if (!value()) return 2;
            anvil_data_type_t a_dt, b_dt;
            int ab, bb;
            if (!explain_types(v, &a_dt, &b_dt, &ab, &bb)) {
                std::fprintf(stderr, "anvil-info: --dt %s: expected f32, bf16, u8s8s32 or s8s8s32\n",
                             v.c_str());
                return 2;
            }
            dt = v;
        } else if (a == "--isa") {
            if (!value()) return 2;
            isa = v;
        } else if (a == "--threads") {
            if (!value()) return 2;
            threads = std::atoi(v.c_str());
            if (threads < 1) {
                std::fprintf(stderr, "anvil-info: --threads %s: expected >= 1\n", v.c_str());
                return 2;
            }
        } else {
            std::fprintf(stderr, "anvil-info: unknown argument %s\n", args[i].c_str());
            usage(stderr);
            return 2;
        }
    }
    if (!isa.empty()) {
        anvil_isa_t t;
        if (!anvil::cpu::parse_isa_name(isa, &t)) {
            std::fprintf(stderr, "anvil-info: unknown --isa %s\n", isa.c_str());
            return 2;
        }
        const anvil_status_t st = anvil_set_max_isa(t);
        if (st != anvil_success) {
            std::fprintf(stderr, "anvil-info: anvil_set_max_isa: %s\n", anvil_status_str(st));
            return 2;
        }
    }
    if (threads > 0) anvil_set_num_threads(threads);
    if (shape.empty()) {
        describe_machine();
        return 0;
    }
    anvil_bench::gemm_problem p;
    std::string why;
    char ta = 'N', tb = 'N';
    if (!anvil_bench::parse_trans(trans, &ta, &tb)) {
        std::fprintf(stderr, "anvil-info: --trans %s: expected NN, NT, TN or TT\n", trans.c_str());
        return 2;
    }
    if (!anvil_bench::parse_problem(shape, ta, tb, &p, &why)) {
        std::fprintf(stderr, "anvil-info: shape %s: %s\n", shape.c_str(), why.c_str());
        return 2;
    }
    return explain(p, dt);
}
