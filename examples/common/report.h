// Timing harness (warm-up, then alternating anvil / oneDNN iterations) and
// the printed table / JSON file of an example run.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/compare.h"
#include "common/timer.h"

namespace ex {

struct Times {
    std::string name;
    double setup_s = 0;  // one-time packing / reordering
    std::vector<double> total, kernel, glue;  // per iteration, seconds
    std::map<std::string, std::vector<double>> steps;  // per iteration
    double other() const;  // median of total - kernel - glue (timer / call overhead)
};

// Runs each forward `warmup` times, then `iters` times alternating the two
// (so that machine noise hits both alike); fills total / kernel / glue.
void time_pair(const std::function<void(Profile &)> &fa, const std::function<void(Profile &)> &fb,
               int warmup, int iters, Times &a, Times &b);

struct Report {
    std::string model, config;  // "bert_layer", "seq 128 batch 1 dt bf16 threads 1"
    Times a, b;                 // anvil, oneDNN
    Diff diff;                  // a vs b, final output
    double bound = 0;           // gate on diff.norm_rel (with --check)
    bool has_ref = false;       // low-precision variants: anvil vs fp32 graph (info)
    Diff vs_f32;
    std::vector<std::pair<std::string, std::string>> notes;
    bool per_op = false;  // print the per-step table
};

void print_report(const Report &r);
bool write_json(const Report &r, const std::string &path);

// The end of an example's main: prints the report, writes the JSON file
// (json_path non-empty) and, with check, gates on r.diff against r.bound.
// Returns the exit status: 0, 1 (check failed) or 2 (JSON not written).
int finish_run(const Report &r, bool check, const std::string &json_path);

}  // namespace ex
