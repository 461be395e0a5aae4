// anvil-bench: alternating trials, batching, medians.
#include "anvil_bench_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace anvil_bench {

double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct state {
    int64_t next_call = 0;
    int64_t batch = 1;
};

// One trial: samples until min_trial_s has passed; returns the median per-call time.
double trial(const contestant &c, state &st, const timing_options &opt, int64_t *calls) {
    std::vector<double> samples;
    const double start = now_seconds();
    double t = start;
    do {
        const double t0 = now_seconds();
        for (int64_t b = 0; b < st.batch; ++b) c.call(st.next_call++);
        t = now_seconds();
        samples.push_back((t - t0) / double(st.batch));
        *calls += st.batch;
    } while (t - start < opt.min_trial_s);
    return median(samples);
}

}  // namespace

std::vector<timing_result> run_alternating(const std::vector<contestant> &cs,
                                           const timing_options &opt) {
    std::vector<timing_result> res(cs.size());
    std::vector<state> st(cs.size());
    // Warm-up, then size the batches from the (warm) single-call time.
    for (size_t n = 0; n < cs.size(); ++n) {
        const double start = now_seconds();
        int64_t calls = 0;
        double last = 0;
        while (calls < 2 || now_seconds() - start < opt.warmup_s) {
            const double t0 = now_seconds();
            cs[n].call(st[n].next_call++);
            last = now_seconds() - t0;
            ++calls;
        }
        st[n].batch = last >= opt.min_sample_s
                          ? 1
                          : std::max<int64_t>(1, int64_t(std::ceil(opt.min_sample_s /
                                                                   std::max(last, 1e-9))));
        res[n].batch = st[n].batch;
    }
    for (int t = 0; t < opt.trials; ++t) {
        for (size_t n = 0; n < cs.size(); ++n) {
            const double med = trial(cs[n], st[n], opt, &res[n].calls);
            res[n].trial_median_s.push_back(med);
            std::string why;
            if (cs[n].verify && !cs[n].verify(st[n].next_call - 1, &why) && res[n].verified) {
                res[n].verified = false;
                res[n].why = "trial " + std::to_string(t + 1) + ": " + why;
            }
        }
    }
    for (auto &r : res) {
        const auto mm = std::minmax_element(r.trial_median_s.begin(), r.trial_median_s.end());
        r.best_s = *mm.first;
        r.spread = *mm.first > 0 ? *mm.second / *mm.first - 1.0 : 0.0;
    }
    return res;
}

}  // namespace anvil_bench
