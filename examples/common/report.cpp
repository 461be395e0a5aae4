#include "common/report.h"

#include <cstdio>

namespace ex {

double Times::other() const {
    std::vector<double> o;
    for (size_t i = 0; i < total.size(); ++i) o.push_back(total[i] - kernel[i] - glue[i]);
    return median(o);
}

void time_pair(const std::function<void(Profile &)> &fa, const std::function<void(Profile &)> &fb,
               int warmup, int iters, Times &a, Times &b) {
    Profile p;
    for (int i = 0; i < warmup; ++i) {
        fa(p);
        fb(p);
    }
    auto one = [&](const std::function<void(Profile &)> &f, Times &t) {
        p.reset();
        const auto t0 = steady::now();
        f(p);
        t.total.push_back(seconds_since(t0));
        t.kernel.push_back(p.kernel());
        t.glue.push_back(p.glue());
        for (const auto &kv : p.steps) t.steps[kv.first].push_back(kv.second);
    };
    for (int i = 0; i < iters; ++i) {
        if (i % 2 == 0) {
            one(fa, a);
            one(fb, b);
        } else {
            one(fb, b);
            one(fa, a);
        }
    }
}

void print_report(const Report &r) {
    std::printf("\n%s  %s\n", r.model.c_str(), r.config.c_str());
    std::printf("%-8s %12s %12s %12s %12s %12s\n", "backend", "median ms", "kernel ms",
                "glue ms", "other ms", "setup ms");
    for (const Times *t : {&r.a, &r.b}) {
        const double tot = median(t->total), k = median(t->kernel), g = median(t->glue);
        std::printf("%-8s %12.3f %12.3f %12.3f %12.3f %12.1f\n", t->name.c_str(), tot * 1e3,
                    k * 1e3, g * 1e3, t->other() * 1e3, t->setup_s * 1e3);
    }
    const double ta = median(r.a.total), tb = median(r.b.total);
    if (ta > 0)
        std::printf("speed ratio %s/%s (oneDNN time / anvil time): %.3f\n", r.a.name.c_str(),
                    r.b.name.c_str(), tb / ta);
    std::printf("%s vs %s: %s  (bound %.2e)\n", r.a.name.c_str(), r.b.name.c_str(),
                describe(r.diff).c_str(), r.bound);
    if (r.has_ref)
        std::printf("%s vs fp32 graph (info): %s\n", r.a.name.c_str(), describe(r.vs_f32).c_str());
    for (const auto &n : r.notes) std::printf("%s: %s\n", n.first.c_str(), n.second.c_str());
    if (!r.per_op) return;
    std::printf("\nper step (median ms per forward; whole call site)\n%-28s %10s %10s %8s\n", "step",
                r.a.name.c_str(), r.b.name.c_str(), "ratio");
    for (const auto &kv : r.a.steps) {
        const double ta_ = median(kv.second);
        auto it = r.b.steps.find(kv.first);
        const double tb_ = it == r.b.steps.end() ? 0.0 : median(it->second);
        std::printf("%-28s %10.3f %10.3f %8.3f\n", kv.first.c_str(), ta_ * 1e3, tb_ * 1e3,
                    ta_ > 0 ? tb_ / ta_ : 0.0);
    }
}

namespace {

void json_times(FILE *f, const Times &t) {
    std::fprintf(f,
                 "{\"median_ms\": %.6f, \"kernel_ms\": %.6f, \"glue_ms\": %.6f, "
                 "\"setup_ms\": %.6f, \"iters_ms\": [",
                 median(t.total) * 1e3, median(t.kernel) * 1e3, median(t.glue) * 1e3,
                 t.setup_s * 1e3);
    for (size_t i = 0; i < t.total.size(); ++i)
        std::fprintf(f, "%s%.6f", i ? ", " : "", t.total[i] * 1e3);
    std::fprintf(f, "]}");
}

void json_steps(FILE *f, const Times &t) {
    std::fprintf(f, "{");
    bool first = true;
    for (const auto &kv : t.steps) {
        std::fprintf(f, "%s\"%s\": %.6f", first ? "" : ", ", kv.first.c_str(), median(kv.second) * 1e3);
        first = false;
    }
    std::fprintf(f, "}");
}

void json_diff(FILE *f, const Diff &d) {
    std::fprintf(f,
                 "{\"max_abs\": %.6e, \"max_ref\": %.6e, \"norm_rel\": %.6e, \"max_rel\": %.6e, "
                 "\"l2_rel\": %.6e, \"nonfinite\": %zu}",
                 d.max_abs, d.max_ref, d.norm_rel, d.max_rel, d.l2_rel, d.nonfinite);
}

}  // namespace

bool write_json(const Report &r, const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    std::fprintf(f, "{\n  \"model\": \"%s\",\n  \"config\": \"%s\",\n", r.model.c_str(),
                 r.config.c_str());
    for (const auto &n : r.notes)
        std::fprintf(f, "  \"%s\": \"%s\",\n", n.first.c_str(), n.second.c_str());
    std::fprintf(f, "  \"%s\": ", r.a.name.c_str());
    json_times(f, r.a);
    std::fprintf(f, ",\n  \"%s\": ", r.b.name.c_str());
    json_times(f, r.b);
    const double ta = median(r.a.total);
    std::fprintf(f, ",\n  \"speed_ratio\": %.6f,\n  \"diff\": ", ta > 0 ? median(r.b.total) / ta : 0.0);
    json_diff(f, r.diff);
    std::fprintf(f, ",\n  \"bound\": %.6e", r.bound);
    std::fprintf(f, ",\n  \"steps_ms\": {\"%s\": ", r.a.name.c_str());
    json_steps(f, r.a);
    std::fprintf(f, ", \"%s\": ", r.b.name.c_str());
    json_steps(f, r.b);
    std::fprintf(f, "}");
    if (r.has_ref) {
        std::fprintf(f, ",\n  \"anvil_vs_f32\": ");
        json_diff(f, r.vs_f32);
    }
    std::fprintf(f, "\n}\n");
    return std::fclose(f) == 0;
}

int finish_run(const Report &r, bool check, const std::string &json_path) {
    print_report(r);
    if (!json_path.empty() && !write_json(r, json_path)) {
        std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
        return 2;
    }
    if (!check) return 0;
    if (r.diff.nonfinite || !(r.diff.norm_rel <= r.bound)) {
        std::printf("CHECK FAILED: anvil and oneDNN differ by %.3e > %.3e\n", r.diff.norm_rel, r.bound);
        return 1;
    }
    std::printf("check passed\n");
    return 0;
}

}  // namespace ex
