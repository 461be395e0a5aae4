// anvil-bench: command-line parsing.
#include "anvil_bench_cli.h"

#include <cstdlib>

#include "anvil_bench_attr.h"
#include "anvil_bench_conv.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

void print_usage(std::FILE *f) {
    std::fputs(
        "usage:\n"
        "  anvil-bench gemm [--dt f32|bf16|u8s8s32|s8s8s32] --shape MxNxK [--shape ...]\n"
        "              [--batch FILE ...] [--trans NN|NT|TN|TT] [--threads N] [--isa CAP]\n"
        "              [--mode check|perf] [--vs onednn|none] [--planned] [--cold]\n"
        "              [--csv[=FILE]] [--json[=FILE]]\n"
        "              [--dst DT] [--attr-post-ops=OPS] [--attr-scales=S]\n"
        "              [--attr-zero-points=ZP] [--bias] [--chain-cost]   (--planned)\n"
        "  anvil-bench conv [--dt f32|bf16|u8s8u8|u8s8f32|s8s8s8|...] [--mode check|perf]\n"
        "              [DESCRIPTOR ...] [--batch FILE ...] [--mb N] [--wei-layout oihw|hwio]\n"
        "              [--attr-post-ops=OPS] [--attr-scales=S] [--attr-zero-points=src:V,dst:V]\n"
        "              [--bias] [--threads N] [--isa CAP] [--vs onednn|none] [--csv[=FILE]]\n"
        "              [--json[=FILE]]\n"
        "  anvil-bench --peak [--threads N]   fp32 FMA, bf16 and int8 dot-product peaks\n"
        "  anvil-bench replay LOG [ARGS...]   each distinct ANVIL_VERBOSE=2 exec line of LOG\n"
        "              (gemm, gemm_plan, gemm_batch, matmul with its chain, conv2d) run as\n"
        "              the problem it records, with ARGS (e.g. --mode perf --threads 1)\n"
        "\n"
        "shapes: MxNxK (C is MxN, K the reduction) or benchdnn's MxK:KxN[_n\"name\"];\n"
        "  batch files hold one shape per line ('#' comments), optionally followed by\n"
        "  NN/NT/TN/TT; benchdnn matmul input files work (unrunnable lines are listed).\n"
        "  Batched lines (BxMxK:BxKxN, more batch dims, or a batch of 1 on one side:\n"
        "  shared) run through anvil_sgemm_batch_strided / anvil_gemm_bf16bf16f32_\n"
        "  batch_strided (--dt f32 / bf16) vs oneDNN's batched matmul (plain memory);\n"
        "  shown as bB[A|B]:MxNxK, variant 'batch'.\n"
        "modes:\n"
        "  check  anvil vs dnnl_sgemm vs a double-precision reference (every point for\n"
        "         small shapes, sampled points otherwise), bound gamma_{K+2}*sum|a||b|;\n"
        "         exits 1 when anvil fails.  --planned also checks the planned handle\n"
        "         and oneDNN's prepacked matmul.\n"
        "  perf   anvil and the peer alternating on the same buffers: warm-up, trials of\n"
        "         >= 0.3 s, median per trial, best trial median and spread; GFLOP/s,\n"
        "         % of the measured peak, ratio anvil/peer; results are checked after\n"
        "         every trial.  Peer: dnnl_sgemm, or with --planned the oneDNN matmul\n"
        "         primitive with prepacked weights vs anvil's planned handle (packing\n"
        "         outside the timing).  For M <= 4 also GB/s of weights; --cold rotates\n"
        "         weight buffers (> 4 x 32 MiB in all) so they come from DRAM.\n"
        "low-precision types (--dt; no --cold):\n"
        "  bf16     anvil_gemm_bf16bf16f32 vs oneDNN's bf16 matmul (f32 dst) on plain\n"
        "           weights and vs the same with prepacked weights: two ratios\n"
        "  u8s8s32  anvil_gemm_u8s8s32 vs dnnl_gemm_u8s8s32 (offsetc F, ao = bo = 0)\n"
        "           and vs oneDNN's int8 matmul (s8 weights prepacked, s32 dst)\n"
        "  s8s8s32  the same with signed A\n"
        "  Figures in GFLOP/s (bf16) or GOP/s (int8); % of the measured vdpbf16ps /\n"
        "  vpdpbusd peak (n/a without avx512_bf16 / VNNI).  check: anvil vs the\n"
        "  reference at points and vs every oneDNN result element by element (int8\n"
        "  exact but for 1 off at .5 ties; bf16 exact with --data ints, else within\n"
        "  twice the gamma bound); exits 1 on a mismatch.\n"
        "matmul handle (--dt bf16|u8s8s32|s8s8s32 --planned, or --dt f32 --planned\n"
        "with any of the options below; plain f32 --planned is the gemm plan):\n"
        "  anvil_matmul_* with the weights packed once vs oneDNN's matmul primitive\n"
        "  with prepacked weights (format_tag::any, reordered once), both outside the\n"
        "  timing, with the same attributes:\n"
        "  --dst f32|bf16|s32|u8|s8   output type (default f32 for f32 / bf16, s32 for\n"
        "                     int8; f32 and bf16 inputs give f32 or bf16)\n"
        "  --attr-post-ops=OP[+OP...]  at most 8, applied in order:\n"
        "                     relu  leaky_relu[:ALPHA] (0.1)  clip:LO:HI  gelu_tanh\n"
        "                     gelu_erf  silu (swish)  sigmoid (logistic)  tanh\n"
        "                     add[:f32|bf16][:per_oc]  mul[:f32|bf16][:per_oc]\n"
        "                     (binary operand: an M x N tensor, or with per_oc a vector\n"
        "                     of N; type f32 unless bf16 is given)\n"
        "                     sum[:SCALE[:ZERO_POINT]]  oneDNN's sum: + SCALE * (C's old\n"
        "                     value - ZERO_POINT); C starts as small integers, and perf\n"
        "                     mode checks one call from them after each trial\n"
        "  --attr-scales=common:S | per_oc[:S]   per_oc: S * 2^((j mod 5) - 3)\n"
        "                     (alias --attr-oscale)\n"
        "  --attr-zero-points=src:V,wei:V,dst:V  (int8; any subset)\n"
        "  --bias             N fp32 values, added after the scale (oneDNN 2.6 adds\n"
        "                     bias before scaling: it gets bias / scale)\n"
        "  --chain-cost       (perf) also time both libraries without attributes\n"
        "                     (default output, nothing else) and print the chain's\n"
        "                     cost in % of that plain matmul\n"
        "  Per element: acc -> float(acc) * scale -> + bias -> post-ops -> + dst zero\n"
        "  point -> output (RNE, saturating).  check: anvil and oneDNN vs a reference\n"
        "  of that chain in fp32 (every point for small shapes, else sampled) and\n"
        "  anvil vs oneDNN element by element: equal bits, or both within their\n"
        "  error bounds of the reference (exact chains -- no transcendental op, int8\n"
        "  or bf16 --data ints -- allow only a .5 tie of an integer output rounded\n"
        "  the other way by oneDNN); exits 1 when anvil is wrong.  Operand values:\n"
        "  bias in [-20, 20], add operands in [-9, 9], mul operands in [-2, 2].\n"
        "convolution (conv): anvil_conv2d_* vs oneDNN's convolution primitive (NHWC src and\n"
        "  dst, weights reordered once into format_tag::any), same attributes as above:\n"
        "  DESCRIPTOR  benchdnn style, e.g. mb1_ic64ih56iw56_oc64oh56ow56_kh3kw3sh1sw1ph1pw1\n"
        "              (g32 prefix: groups; dh/dw: dilation, 0 = dense; n\"name*K\": the layer\n"
        "              occurs K times in the model); batch files: one per line, '#' comments\n"
        "  --dt        f32, bf16 (bf16 x 3) or a src/weights/dst triple: u8s8u8 u8s8f32\n"
        "              u8s8s32 s8s8s8 s8s8f32 s8s8u8 bf16bf16f32 ... (also u8:s8:u8)\n"
        "  --mb N      overrides every descriptor's mb\n"
        "  --wei-layout oihw (default, PyTorch) | hwio (TensorFlow): the plain weights given\n"
        "              to both libraries\n"
        "  Data: small integers (f32/bf16 in [-4, 4]; int8 full range with VNNI).  check:\n"
        "  anvil vs a reference of the chain at points (every point when small) and vs\n"
        "  oneDNN on every element (equal, or both within the documented bounds of\n"
        "  transcendental post-ops; .5 ties of integer outputs); exits 1 on a failure.\n"
        "  perf: per layer ms, GFLOP/s (GOP/s int8), % of the measured peak, ratio\n"
        "  t(oneDNN) / t(anvil); per batch file the model's conv stack (sum of time x\n"
        "  multiplicity), its ratio, and the geomean and minimum of the layer ratios.\n"
        "options:\n"
        "  --isa CAP          anvil_set_max_isa before any compute call\n"
        "                     (scalar avx2 avx512_core avx512_core_vnni avx512_core_bf16 amx)\n"
        "  --threads N        anvil_set_num_threads(N) and omp_set_num_threads(N) for oneDNN\n"
        "  --trials N         trials per contestant (default 5, at least 3 in perf)\n"
        "  --min-trial-time S seconds per trial (default 0.3)\n"
        "  --trials-big N     trials for problems of >= --big-gflop GFLOP per call\n"
        "  --alpha A --beta B scalars for check mode (perf uses 1 and 0)\n"
        "  --data real|ints   fill: uniform [-1,1) or small non-zero integers (exact\n"
        "                     results); default real in check (plus an exact ints pass),\n"
        "                     ints in perf (f32 and bf16; int8 data are random bytes)\n"
        "  --peak-gflops G    use G (GOP/s for int8) as the peak instead of probing;\n"
        "                     --no-peak skips it\n"
        "  --seed S           data seed\n",
        f);
}

namespace {

bool to_int(const std::string &s, long long lo, long long hi, long long *v) {
    char *end = nullptr;
    *v = std::strtoll(s.c_str(), &end, 10);
    return !s.empty() && end && *end == '\0' && *v >= lo && *v <= hi;
}
bool to_double(const std::string &s, double *v) {
    char *end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return !s.empty() && end && *end == '\0';
}

}  // namespace

bool parse_cli(int argc, char **argv, options *o, std::string *err) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        o->command = "help";
        return true;
    }
    size_t i = 0;
    if (args[0] == "gemm" || args[0] == "matmul") {
        o->command = "gemm";
        i = 1;
    } else if (args[0] == "conv") {
        o->command = "conv";
        i = 1;
    } else if (args[0] == "--peak" || args[0] == "peak") {
        o->command = "peak";
        i = 1;
    } else if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        o->command = "help";
        return true;
    } else {
        o->command = "gemm";
    }
    for (; i < args.size(); ++i) {
        std::string a = args[i], val;
        bool has_val = false;
        const size_t eq = a.find('=');
        if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
            val = a.substr(eq + 1);
            a = a.substr(0, eq);
            has_val = true;
        }
        auto need = [&](std::string *out) {
            if (has_val) {
                *out = val;
                return true;
            }
            if (i + 1 >= args.size()) {
                *err = a + " needs a value";
                return false;
            }
            *out = args[++i];
            return true;
        };
        std::string v;
        long long n = 0;
        double d = 0;
        if (a == "--dt") {
            if (!need(&v)) return false;
            conv_types ct;
            if (o->command == "conv" && !parse_conv_dt(v, &ct, err)) return false;
            if (o->command != "conv" && v != "f32" && v != "bf16" && v != "u8s8s32" &&
                v != "s8s8s32") {
                *err = "--dt " + v + ": expected f32, bf16, u8s8s32 or s8s8s32";
                return false;
            }
            o->dt = v;
        } else if (a == "--shape") {
            if (!need(&v)) return false;
            o->shapes.push_back(v);
        } else if (a == "--batch") {
            if (!need(&v)) return false;
            o->batches.push_back(v);
        } else if (a == "--trans") {
            if (!need(&v)) return false;
            if (!parse_trans(v, &o->ta, &o->tb)) {
                *err = "--trans " + v + ": expected NN, NT, TN or TT";
                return false;
            }
        } else if (a == "--threads") {
            if (!need(&v)) return false;
            if (!to_int(v, 1, 4096, &n)) {
                *err = "--threads " + v + ": expected a positive integer";
                return false;
            }
            o->threads = int(n);
        } else if (a == "--isa") {
            if (!need(&v)) return false;
            o->isa = v;
        } else if (a == "--mode") {
            if (!need(&v)) return false;
            if (v == "check" || v == "c" || v == "corr") {
                o->mode = bench_mode::check;
            } else if (v == "perf" || v == "p") {
                o->mode = bench_mode::perf;
            } else {
                *err = "--mode " + v + ": expected check or perf";
                return false;
            }
        } else if (a == "--vs") {
            if (!need(&v)) return false;
            if (v != "onednn" && v != "none") {
                *err = "--vs " + v + ": expected onednn or none";
                return false;
            }
            o->vs = v;
        } else if (a == "--dst") {
            if (!need(&v)) return false;
            anvil_data_type_t t;
            if (!parse_dst(v, &t)) {
                *err = "--dst " + v + ": expected f32, bf16, s32, u8 or s8";
                return false;
            }
            o->dst = v;
            o->attr_flags.push_back(a);
        } else if (a == "--attr-post-ops") {
            if (!need(&v)) return false;
            std::vector<post_op_spec> ops;
            std::string why;
            if (!parse_post_ops(v, &ops, &why)) {
                *err = "--attr-post-ops=" + v + ": " + why;
                return false;
            }
            o->post_ops = v;
            o->attr_flags.push_back(a);
        } else if (a == "--attr-scales" || a == "--attr-oscale") {
            if (!need(&v)) return false;
            int mode = 0;
            float sc = 0;
            if (!parse_scales(v, &mode, &sc, err)) return false;
            o->scales = v;
            o->attr_flags.push_back(a);
        } else if (a == "--attr-zero-points") {
            if (!need(&v)) return false;
            int32_t z1, z2, z3;
            if (!parse_zero_points(v, &z1, &z2, &z3, err)) return false;
            o->zero_points = v;
            o->attr_flags.push_back(a);
        } else if (a == "--bias") {
            o->bias = true;
            o->attr_flags.push_back(a);
        } else if (a == "--chain-cost") {
            o->chain_cost = true;
            o->attr_flags.push_back(a);
        } else if (a == "--mb" && o->command == "conv") {
            if (!need(&v)) return false;
            if (!to_int(v, 1, 1 << 20, &n)) {
                *err = "--mb " + v + ": expected a positive integer";
                return false;
            }
            o->mb = n;
        } else if (a == "--wei-layout" && o->command == "conv") {
            if (!need(&v)) return false;
            if (v != "oihw" && v != "hwio") {
                *err = "--wei-layout " + v + ": expected oihw or hwio";
                return false;
            }
            o->wei_layout = v;
        } else if (a == "--planned") {
            o->planned = true;
        } else if (a == "--cold") {
            o->cold = true;
        } else if (a == "--csv") {
            o->csv = true;
            if (has_val) o->csv_path = val;
        } else if (a == "--json") {
            o->json = true;
            if (has_val) o->json_path = val;
        } else if (a == "--trials") {
            if (!need(&v)) return false;
            if (!to_int(v, 1, 1000, &n)) {
                *err = "--trials " + v + ": expected 1..1000";
                return false;
            }
            o->trials = int(n);
        } else if (a == "--trials-big") {
            if (!need(&v)) return false;
            if (!to_int(v, 1, 1000, &n)) {
                *err = "--trials-big " + v + ": expected 1..1000";
                return false;
            }
            o->trials_big = int(n);
        } else if (a == "--big-gflop") {
            if (!need(&v)) return false;
            if (!to_double(v, &d) || d <= 0) {
                *err = "--big-gflop " + v + ": expected a positive number";
                return false;
            }
            o->big_gflop = d;
        } else if (a == "--min-trial-time") {
            if (!need(&v)) return false;
            if (!to_double(v, &d) || d <= 0 || d > 60) {
                *err = "--min-trial-time " + v + ": expected seconds in (0, 60]";
                return false;
            }
            o->min_trial_s = d;
        } else if (a == "--alpha" || a == "--beta") {
            if (!need(&v)) return false;
            if (!to_double(v, &d)) {
                *err = a + " " + v + ": expected a number";
                return false;
            }
            (a == "--alpha" ? o->alpha : o->beta) = float(d);
        } else if (a == "--data") {
            if (!need(&v)) return false;
            if (v == "real") {
                o->data = data_kind::real;
            } else if (v == "ints") {
                o->data = data_kind::ints;
            } else {
                *err = "--data " + v + ": expected real or ints";
                return false;
            }
            o->data_set = true;
        } else if (a == "--seed") {
            if (!need(&v)) return false;
            if (!to_int(v, 0, (1ll << 62), &n)) {
                *err = "--seed " + v + ": expected a non-negative integer";
                return false;
            }
            o->seed = uint64_t(n);
        } else if (a == "--peak-gflops") {
            if (!need(&v)) return false;
            if (!to_double(v, &d) || d <= 0) {
                *err = "--peak-gflops " + v + ": expected a positive number";
                return false;
            }
            o->peak_gflops = d;
        } else if (a == "--no-peak") {
            o->probe_peak = false;
        } else if (a == "--peak") {
            o->command = "peak";
        } else if (a == "--help" || a == "-h") {
            o->command = "help";
            return true;
        } else if (!a.empty() && a[0] != '-') {
            o->shapes.push_back(args[i]);
        } else {
            *err = "unknown option " + args[i];
            return false;
        }
    }
    if (o->mode == bench_mode::perf && o->trials < 3) {
        *err = "perf mode needs --trials >= 3";
        return false;
    }
    if (o->dt != "f32" && o->cold) {
        *err = "--cold is only implemented for --dt f32";
        return false;
    }
    if (o->command == "conv") {
        if (!o->dst.empty() || o->planned || o->cold || o->chain_cost) {
            *err = "conv: --dst, --planned, --cold and --chain-cost do not apply (the output type "
                   "is the third type of --dt)";
            return false;
        }
        if (o->trials_big == 0) o->trials_big = o->trials;
        if (o->mode == bench_mode::perf && o->trials_big < 3) {
            *err = "perf mode needs --trials-big >= 3";
            return false;
        }
        if (o->shapes.empty() && o->batches.empty()) {
            *err = "conv: no problem given (descriptors or --batch)";
            return false;
        }
        return true;
    }
    if (!o->attr_flags.empty() && !o->planned) {
        *err = o->attr_flags[0] +
               " needs --planned (attributes belong to anvil's matmul handle, not to the "
               "BLAS-style anvil_sgemm / anvil_gemm_* calls)";
        return false;
    }
    if (o->chain_cost && o->mode != bench_mode::perf) {
        *err = "--chain-cost needs --mode perf";
        return false;
    }
    if (o->trials_big == 0) o->trials_big = o->trials;
    if (o->mode == bench_mode::perf && o->trials_big < 3) {
        *err = "perf mode needs --trials-big >= 3";
        return false;
    }
    if (!o->data_set) o->data = o->mode == bench_mode::perf ? data_kind::ints : data_kind::real;
    if (o->command == "gemm" && o->shapes.empty() && o->batches.empty()) {
        *err = "no problem given (--shape or --batch)";
        return false;
    }
    return true;
}

}  // namespace anvil_bench
