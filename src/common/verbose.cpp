#include "common/verbose.h"

#include <chrono>
#include <cstdio>

namespace anvil::verbose {

std::atomic<int> g_level{-1};

int read_level() {
    const int v = env::get().verbose;
    g_level.store(v, std::memory_order_relaxed);
    return v;
}

void emit(const std::string &line) {
    std::string s = "anvil_verbose," + line + "\n";
    std::fwrite(s.data(), 1, s.size(), stderr);
}

double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace anvil::verbose
