// anvil-bench: a benchdnn-like CLI for anvil's GEMM.  See print_usage() and
// /work/shared/design/MEASURING.md for how the figures are taken.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "anvil_bench_attr.h"
#include "anvil_bench_cli.h"
#include "anvil_bench_conv.h"
#include "anvil_bench_batch.h"
#include "anvil_bench_gemm.h"
#include "anvil_bench_lowp.h"
#include "anvil_bench_onednn.h"
#include "anvil_bench_output.h"
#include "anvil_bench_peak.h"
#include "anvil_bench_problem.h"
#include "anvil_bench_replay.h"
#include "cpu/isa.h"
#include "gemm/backend.h"
#include "lowp/lp_backend.h"

using namespace anvil_bench;

namespace {

struct affinity {
    int allowed = 0, online = 0;
    std::string list;
};

affinity get_affinity() {
    affinity a;
    a.online = int(sysconf(_SC_NPROCESSORS_ONLN));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return a;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) {
            a.list += (a.allowed++ ? "," : "") + std::to_string(c);
        }
    return a;
}

bool apply_isa(const std::string &name) {
    for (int t = anvil_isa_scalar; t <= anvil_isa_amx; ++t) {
        const char *n = anvil_isa_name(anvil_isa_t(t));
        if (n && name == n) {
            const anvil_status_t st = anvil_set_max_isa(anvil_isa_t(t));
            if (st != anvil_success) {
                std::fprintf(stderr, "anvil-bench: anvil_set_max_isa(%s): %s\n", n,
                             anvil_status_str(st));
                return false;
            }
            return true;
        }
    }
    std::fprintf(stderr,
                 "anvil-bench: unknown --isa %s (scalar avx2 avx512_core avx512_core_vnni "
                 "avx512_core_bf16 amx)\n",
                 name.c_str());
    return false;
}

int run_peak(const options &o, int threads) {
    std::printf("anvil-bench --peak  (%s)\n", anvil::cpu::info().brand.c_str());
    std::vector<int> ts = {1};
    if (threads > 1) ts.push_back(threads);
    for (int t : ts) {
        const peak_result pr = measure_fma_peak(t, 0.3);
        std::printf("fp32 FMA peak  %dT: %8.1f GFLOP/s  (%s)\n", t, pr.gflops, pr.probe.c_str());
    }
    for (const char *kind : {"bf16", "int8"})
        for (int t : ts) {
            const peak_result pr = measure_lowp_peak(kind, t, 0.3);
            const char *unit = kind[0] == 'b' ? "GFLOP/s" : "GOP/s  ";
            if (pr.gflops > 0)
                std::printf("%-4s dot peak  %dT: %8.1f %s (%s)\n", kind, t, pr.gflops, unit,
                            pr.probe.c_str());
            else
                std::printf("%-4s dot peak  %dT:      n/a %s (%s)\n", kind, t, unit,
                            pr.probe.c_str());
        }
    for (int t : ts) {
        const double bw = measure_read_gbps(t, size_t(256) << 20, 0.5);
        std::printf("read 256 MiB   %dT: %8.1f GB/s\n", t, bw);
    }
    (void)o;
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc >= 2 && std::string(argv[1]) == "replay") return run_replay(argc, argv);
    options o;
    std::string err;
    if (!parse_cli(argc, argv, &o, &err)) {
        std::fprintf(stderr, "anvil-bench: %s (see anvil-bench --help)\n", err.c_str());
        return 2;
    }
    if (o.command == "help") {
        print_usage(stdout);
        return 0;
    }
    // The matmul handle: --planned with a low-precision type, or f32 with
    // attributes (plain f32 --planned is the gemm plan).
    const bool matmul = o.planned && (o.dt != "f32" || !o.attr_flags.empty());
    if (matmul) {
        lowp_dt dt = lowp_dt::bf16;
        parse_lowp_dt(o.dt, &dt);
        attr_spec a;
        if (!build_attr_spec(o, dt, &a, &err)) {
            std::fprintf(stderr, "anvil-bench: %s (see anvil-bench --help)\n", err.c_str());
            return 2;
        }
    }
    // The ISA cap must be set before anything computes (it freezes then).
    if (!o.isa.empty() && !apply_isa(o.isa)) return 2;
    if (o.threads > 0) {
        anvil_set_num_threads(o.threads);
        set_onednn_threads(o.threads);
    }
    const int threads = anvil_get_num_threads();
    const affinity aff = get_affinity();
    const bool pinned = aff.allowed > 0 && aff.allowed < aff.online;
    if (o.command == "peak") return run_peak(o, threads);
    if (o.command == "conv") return run_conv(o, threads, pinned, aff.list, aff.allowed, aff.online);

    std::vector<gemm_problem> problems;
    std::vector<skipped_line> skipped;
    for (const std::string &s : o.shapes) {
        gemm_problem p;
        std::string why;
        if (!parse_problem(s, o.ta, o.tb, &p, &why)) {
            std::fprintf(stderr, "anvil-bench: --shape %s: %s\n", s.c_str(), why.c_str());
            return 2;
        }
        p.source = "--shape";
        problems.push_back(p);
    }
    for (const std::string &b : o.batches)
        if (!load_batch(b, o.ta, o.tb, &problems, &skipped)) {
            std::fprintf(stderr, "anvil-bench: cannot read batch file %s\n", b.c_str());
            return 2;
        }

    // Batched lines go to the strided-batch calls.
    std::vector<gemm_problem> batched;
    {
        std::vector<gemm_problem> single;
        for (const gemm_problem &p : problems) {
            if (!p.batched())
                single.push_back(p);
            else if (o.dt == "f32" || o.dt == "bf16" || o.dt == "u8s8s32" || o.dt == "s8s8s32")
                batched.push_back(p);
            else
                skipped.push_back({p.source, p.shape(),
                                   "batched lines run with --dt f32, bf16, u8s8s32 or s8s8s32 "
                                   "(the strided-batch calls)"});
        }
        problems.swap(single);
    }

    gemm_context ctx;
    ctx.threads = threads;
    ctx.isa = anvil_isa_name(anvil_get_effective_isa());
    // The low-precision calls have their own backends (lp micro-kernels).
    ctx.backend = o.dt == "f32" ? anvil::gemm::select_backend().name()
                  : anvil::lowp::select_lp_backend(o.dt == "bf16" ? anvil::lowp::lp_kind::bf16
                                                                  : anvil::lowp::lp_kind::u8s8)
                        .name();

    run_info info;
    info.anvil_version = anvil_version();
    info.onednn_version = onednn_version();
    info.cpu = anvil::cpu::info().brand;
    info.features = anvil::cpu::features_string(anvil::cpu::info().detected);
    info.mode = o.mode == bench_mode::perf ? "perf" : "check";
    info.dt = o.dt;
    info.threads = threads;
    info.isa = ctx.isa;
    info.backend = ctx.backend;
    info.pinned = pinned;
    info.affinity = aff.list;

    if (o.mode == bench_mode::perf) {
        if (o.peak_gflops > 0) {
            ctx.peak_gflops = o.peak_gflops;
            info.peak_probe = "given (--peak-gflops)";
        } else if (o.probe_peak) {
            const std::string kind = peak_kind(o.dt);
            const peak_result pr = kind.empty() ? measure_fma_peak(threads, 0.3)
                                                : measure_lowp_peak(kind, threads, 0.3);
            ctx.peak_gflops = pr.gflops;
            info.peak_probe = pr.probe;
        }
        info.peak_gflops = ctx.peak_gflops;
        // M <= 4 streams the weights once: those calls are judged against
        // the read bandwidth, measured once here (0.3 s over 256 MiB).
        bool memory_bound = false;
        for (const gemm_problem &p : problems) memory_bound |= p.M <= 4;
        if (memory_bound && o.probe_peak) info.read_gbps = measure_read_gbps(threads, size_t(256) << 20, 0.3);
    }

    reporter rep(o, info);
    std::FILE *t = rep.text();
    std::fprintf(t, "# anvil-bench %s | oneDNN %s | %s\n", info.anvil_version.c_str(),
                 info.onednn_version.c_str(), info.cpu.c_str());
    std::fprintf(t, "# mode=%s dt=%s threads=%d isa=%s backend=%s affinity=[%s]%s\n",
                 info.mode.c_str(), o.dt.c_str(), threads, ctx.isa.c_str(), ctx.backend.c_str(),
                 aff.list.c_str(), o.cold ? " cold" : "");
    if (o.mode == bench_mode::perf) {
        if (ctx.peak_gflops > 0)
            std::fprintf(t, "# peak %.1f %s at %d thread(s) (%s)\n", ctx.peak_gflops,
                         dt_unit(o.dt), threads, info.peak_probe.c_str());
        else if (!info.peak_probe.empty())
            std::fprintf(t, "# peak %s\n", info.peak_probe.c_str());
        if (info.read_gbps > 0)
            std::fprintf(t, "# read bandwidth %.1f GB/s at %d thread(s) (256 MiB; the %% bw of M <= 4)\n",
                         info.read_gbps, threads);
        if (!pinned)
            std::fprintf(t,
                         "# note: not pinned (allowed CPUs %s of %d online); for stable figures "
                         "run e.g. `OMP_NUM_THREADS=1 taskset -c 0 anvil-bench ... --threads 1`\n",
                         aff.list.c_str(), aff.online);
        if (threads > aff.allowed && aff.allowed > 0)
            std::fprintf(t, "# warning: %d threads on %d allowed CPU(s)\n", threads, aff.allowed);
        if (o.alpha != 1.0f || o.beta != 0.0f)
            std::fprintf(t, "# note: perf mode times alpha=1, beta=0\n");
    }
    for (const skipped_line &s : skipped)
        std::fprintf(t, "# skipped %s: '%s' (%s)\n", s.where.c_str(), s.text.c_str(),
                     s.reason.c_str());
    if (!skipped.empty())
        std::fprintf(t, "# %zu line(s) skipped, %zu problem(s) to run\n", skipped.size(),
                     problems.size() + batched.size());

    const bool lowp = o.dt != "f32";
    int failures =
        o.mode == bench_mode::perf
            ? (matmul ? run_perf_matmul(o, ctx, problems, rep)
               : lowp ? run_perf_lowp(o, ctx, problems, rep)
                      : run_perf(o, ctx, problems, rep))
            : (matmul ? run_check_matmul(o, ctx, problems, rep)
               : lowp ? run_check_lowp(o, ctx, problems, rep)
                      : run_check(o, ctx, problems, rep));
    const bool int8_batch = o.dt == "u8s8s32" || o.dt == "s8s8s32";
    if (!batched.empty() && int8_batch)
        failures += o.mode == bench_mode::perf ? run_perf_batch_int8(o, ctx, batched, rep)
                                               : run_check_batch_int8(o, ctx, batched, rep);
    else if (!batched.empty())
        failures += o.mode == bench_mode::perf ? run_perf_batch(o, ctx, batched, rep)
                                               : run_check_batch(o, ctx, batched, rep);
    problems.insert(problems.end(), batched.begin(), batched.end());
    rep.finish(failures, skipped);
    std::fprintf(t, "# %zu problem(s), %d failure(s)\n", problems.size(), failures);
    return failures ? 1 : 0;
}
