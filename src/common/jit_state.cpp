#include "common/jit_state.h"

#include <atomic>

#include "common/env.h"
#include "common/verbose.h"

namespace anvil::jit_state {
namespace {

anvil_jit_failure_policy_t policy_from_env() {
    const std::string v = env::get_string("ANVIL_JIT_ON_FAILURE", "fallback");
    return v == "error" ? anvil_jit_failure_error : anvil_jit_failure_fallback;
}

std::atomic<int> &policy_value() {
    static std::atomic<int> p{int(policy_from_env())};
    return p;
}
std::atomic<bool> g_usable{true};
std::atomic<observer_fn> g_observer{nullptr};
std::atomic<bool> g_refuse_exec{false};

}  // namespace

anvil_jit_failure_policy_t policy() {
    return anvil_jit_failure_policy_t(policy_value().load(std::memory_order_relaxed));
}

anvil_status_t set_policy(anvil_jit_failure_policy_t p) {
    // Callers pass checked values (anvil_set_jit_failure_policy reads the
    // argument as an int first).
    policy_value().store(int(p), std::memory_order_relaxed);
    return anvil_success;
}

bool usable() { return g_usable.load(std::memory_order_acquire); }

void report_failure(const std::string &kernel, const char *what) {
    const bool fallback = policy() == anvil_jit_failure_fallback;
    if (fallback) g_usable.store(false, std::memory_order_release);
    if (verbose::level() >= 1)
        verbose::emit(std::string("jit,error=") + what + ",kernel=" + kernel + ",action=" +
                      (fallback ? "jit_off_fallback_to_highway" : "return_jit_error"));
}

void set_observer_for_test(observer_fn fn) { g_observer.store(fn); }

void notify(stage s, const void *mem, size_t bytes) {
    if (observer_fn fn = g_observer.load(std::memory_order_relaxed)) fn(s, mem, bytes);
}

void set_refuse_exec_for_test(bool refuse) { g_refuse_exec.store(refuse); }
bool refuse_exec_for_test() { return g_refuse_exec.load(std::memory_order_relaxed); }

void reset_for_test() {
    g_usable.store(true);
    policy_value().store(int(policy_from_env()));
}

}  // namespace anvil::jit_state
