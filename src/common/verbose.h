// ANVIL_VERBOSE output: one line per event, "anvil_verbose,<kind>,<fields...>"
// with comma-separated key=value fields, so logs can be parsed and replayed.
#pragma once
#include <atomic>
#include <string>

#include "common/env.h"

namespace anvil::verbose {

// ANVIL_VERBOSE, read once: a plain load on every call after the first
// (env::get() is a call and an initialisation guard; tiny GEMMs ask on
// every call).
extern std::atomic<int> g_level;  // -1: not read yet
int read_level();
inline int level() {
    const int v = g_level.load(std::memory_order_relaxed);
    return v >= 0 ? v : read_level();
}
// Writes one line to stderr atomically (one fwrite).
void emit(const std::string &line);
// Monotonic wall clock in seconds.
double now_seconds();

}  // namespace anvil::verbose
