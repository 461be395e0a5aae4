// Whether JIT code may still be generated, and what happens when the system
// refuses it (no executable mappings under a hardened kernel or seccomp
// policy, mmap failures).  Portable: no Xbyak here, so the backend
// selections in src/ can ask it.
//
// Policy (anvil_set_jit_failure_policy, ANVIL_JIT_ON_FAILURE):
//   fallback (default)  the first failure turns the JIT off for the rest of
//                       the process; the failed call is retried on the
//                       Highway / scalar kernels, and so is every later one
//   error               the call returns anvil_jit_error (nothing written)
//                       and later calls try the JIT again
// Either way ANVIL_VERBOSE >= 1 prints a line naming the kernel, the
// failure and the action.
#pragma once
#include <cstddef>
#include <string>

#include "anvil/anvil.h"

namespace anvil::jit_state {

anvil_jit_failure_policy_t policy();
anvil_status_t set_policy(anvil_jit_failure_policy_t p);

// False once a generation failed under the fallback policy.
bool usable();

// Called by the generator when a kernel could not be made.
void report_failure(const std::string &kernel, const char *what);

// Whether a status from a call that may have generated code should be
// retried without the JIT: anvil_jit_error after the JIT was turned off.
inline bool retry_without_jit(anvil_status_t st) { return st == anvil_jit_error && !usable(); }

// Test hooks (not public API).  The observer sees each code mapping twice:
// once filled and still read+write, once sealed read+execute; tests read
// /proc/self/maps from it to check W^X while a kernel is being made.
enum class stage { written, sealed };
using observer_fn = void (*)(stage s, const void *mem, size_t bytes);
void set_observer_for_test(observer_fn fn);
void notify(stage s, const void *mem, size_t bytes);
void reset_for_test();  // JIT usable again, policy from the environment
// Makes the generator behave as if mprotect(PROT_EXEC) were refused (for
// systems where a test cannot install a seccomp filter).
void set_refuse_exec_for_test(bool refuse);
bool refuse_exec_for_test();

}  // namespace anvil::jit_state
