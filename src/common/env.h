// Environment variables, read in one place (never deep inside generators).
#pragma once
#include <cstdint>
#include <string>

namespace anvil::env {

std::string get_string(const char *name, const std::string &fallback);
int64_t get_int(const char *name, int64_t fallback);

// Settings read once at first use.
struct settings {
    int verbose = 0;                  // ANVIL_VERBOSE=0|1|2
    bool jit_dump = false;            // ANVIL_JIT_DUMP=1
    std::string jit_dump_dir = ".";   // ANVIL_JIT_DUMP_DIR
    std::string jit_profile;          // ANVIL_JIT_PROFILE=perf
    int64_t kernel_cache_capacity = 1024;  // ANVIL_KERNEL_CACHE_CAPACITY
};
const settings &get();

}  // namespace anvil::env
