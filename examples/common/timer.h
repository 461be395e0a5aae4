// Steady-clock timing for the examples: a per-backend profile that splits
// the time of a forward pass into "kernel" (GEMM / conv execute calls of the
// library under test) and "glue" (softmax, LayerNorm, pooling, quantising,
// conversions, copies).  One-time work (weight packing / reordering) is
// timed separately by the caller.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ex {

using steady = std::chrono::steady_clock;

inline double seconds_since(steady::time_point t0) {
    return std::chrono::duration<double>(steady::now() - t0).count();
}

enum class Cat { kernel = 0, glue = 1 };

struct Profile {
    double t[2] = {0.0, 0.0};
    // Seconds per named graph step (the whole call site: kernel and any
    // glue inside it), for the per-op table (--per-op).
    std::map<std::string, double> steps;
    void reset() {
        t[0] = t[1] = 0.0;
        steps.clear();
    }
    double kernel() const { return t[0]; }
    double glue() const { return t[1]; }
};

// Adds the lifetime of the object to one category of a profile.
class Scoped {
public:
    Scoped(Profile &p, Cat c) : p_(p), c_(c), t0_(steady::now()) {}
    ~Scoped() { p_.t[int(c_)] += seconds_since(t0_); }
    Scoped(const Scoped &) = delete;
    Scoped &operator=(const Scoped &) = delete;

private:
    Profile &p_;
    Cat c_;
    steady::time_point t0_;
};

// Adds the lifetime of the object to a named step of a profile.
class Step {
public:
    Step(Profile &p, std::string name) : p_(p), name_(std::move(name)), t0_(steady::now()) {}
    ~Step() { p_.steps[name_] += seconds_since(t0_); }
    Step(const Step &) = delete;
    Step &operator=(const Step &) = delete;

private:
    Profile &p_;
    std::string name_;
    steady::time_point t0_;
};

double median(std::vector<double> v);

}  // namespace ex
