// ANVIL_VERBOSE output: one line per event, "anvil_verbose,<kind>,<fields...>"
// with comma-separated key=value fields, so logs can be parsed and replayed.
#pragma once
#include <string>

#include "common/env.h"

namespace anvil::verbose {

inline int level() { return env::get().verbose; }
// Writes one line to stderr atomically (one fwrite).
void emit(const std::string &line);
// Monotonic wall clock in seconds.
double now_seconds();

}  // namespace anvil::verbose
