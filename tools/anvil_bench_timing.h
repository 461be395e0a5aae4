// anvil-bench: the timing harness (MEASURING.md).
//
// Contestants run alternating in one process on the same inputs: for each of
// `trials` rounds, every contestant runs one trial in turn (A B A B ...).  A
// trial repeats samples until it has lasted >= min_trial_s; a sample is a
// batch of calls lasting >= min_sample_s (tiny calls are batched) and its
// value is the per-call time.  A trial's value is the median of its samples.
// Reported: the best (fastest) trial median and the spread (slowest / fastest
// trial median - 1).  After every trial the contestant's verify() checks the
// output of its last call, so a fast wrong kernel can never look like a win.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace anvil_bench {

struct contestant {
    std::string name;
    // Runs call number `i` (cold runs rotate buffers with it).
    std::function<void(int64_t i)> call;
    // Checks the result of call number `last`; false + *why on a wrong result.
    std::function<bool(int64_t last, std::string *why)> verify;
};

struct timing_options {
    int trials = 5;
    double min_trial_s = 0.3;
    double min_sample_s = 20e-6;
    double warmup_s = 0.05;
};

struct timing_result {
    std::vector<double> trial_median_s;  // per trial, in run order
    double best_s = 0;                   // fastest trial median
    double spread = 0;                   // slowest / fastest - 1
    int64_t calls = 0;
    int64_t batch = 1;                   // calls per sample
    bool verified = true;
    std::string why;                     // first verification failure
};

std::vector<timing_result> run_alternating(const std::vector<contestant> &cs,
                                           const timing_options &opt);

double now_seconds();

}  // namespace anvil_bench
