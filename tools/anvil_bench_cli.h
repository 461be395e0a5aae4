// anvil-bench: command-line options.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "anvil_bench_data.h"

namespace anvil_bench {

enum class bench_mode { check, perf };

struct options {
    std::string command;               // "gemm", "conv", "peak" or "help"
    std::string dt = "f32";
    std::vector<std::string> shapes;   // --shape (repeatable) and bare shapes
    std::vector<std::string> batches;  // --batch FILE (repeatable)
    char ta = 'N', tb = 'N';
    int threads = 0;                   // 0: leave the libraries' defaults
    std::string isa;                   // --isa cap name ("" = none)
    bench_mode mode = bench_mode::check;
    std::string vs = "onednn";         // peer: onednn | none
    bool planned = false;
    bool cold = false;
    bool csv = false, json = false;
    std::string csv_path, json_path;   // "" = stdout
    int trials = 5;
    double min_trial_s = 0.3;
    int trials_big = 0;                // trials for problems >= big_gflop (0: same)
    double big_gflop = 4.0;
    float alpha = 1.0f, beta = 0.0f;
    bool data_set = false;
    data_kind data = data_kind::real;
    uint64_t seed = 1;
    bool probe_peak = true;
    double peak_gflops = 0;            // --peak-gflops: use instead of probing
    int perf_points = 48;              // sampled points checked after each trial
    int check_points = 1024;           // sampled points in check mode (big shapes)
    // Low-precision matmul handle (--planned with --dt bf16|u8s8s32|s8s8s32);
    // the grammar is in anvil_bench_attr.h.  Kept as given, parsed there.
    std::string dst;                   // --dst ("" = the type's default)
    std::string post_ops;              // --attr-post-ops
    std::string scales;                // --attr-scales
    std::string zero_points;           // --attr-zero-points
    bool bias = false;                 // --bias
    bool chain_cost = false;           // --chain-cost: also time the bare matmul
    // The option names given that need the matmul handle (for the error).
    std::vector<std::string> attr_flags;
    // conv (anvil_bench_conv.h): shapes holds the descriptors.
    int64_t mb = 0;                    // --mb: overrides the descriptors' mb (0: keep)
    std::string wei_layout = "oihw";   // --wei-layout oihw|hwio
};

bool parse_cli(int argc, char **argv, options *o, std::string *err);
void print_usage(std::FILE *f);

}  // namespace anvil_bench
