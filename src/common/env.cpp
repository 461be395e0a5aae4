#include "common/env.h"

#include <cstdlib>

namespace anvil::env {

std::string get_string(const char *name, const std::string &fallback) {
    const char *v = std::getenv(name);
    return v ? std::string(v) : fallback;
}

int64_t get_int(const char *name, int64_t fallback) {
    const char *v = std::getenv(name);
    if (!v || !*v) return fallback;
    char *end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    return (end && *end == '\0') ? int64_t(x) : fallback;
}

const settings &get() {
    static const settings s = [] {
        settings r;
        r.verbose = int(get_int("ANVIL_VERBOSE", 0));
        r.jit_dump = get_int("ANVIL_JIT_DUMP", 0) != 0;
        r.jit_dump_dir = get_string("ANVIL_JIT_DUMP_DIR", ".");
        r.jit_profile = get_string("ANVIL_JIT_PROFILE", "");
        const int64_t cap = get_int("ANVIL_KERNEL_CACHE_CAPACITY", 1024);
        r.kernel_cache_capacity = cap >= 1 ? cap : 1024;
        return r;
    }();
    return s;
}

}  // namespace anvil::env
