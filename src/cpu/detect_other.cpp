// CPU detection off x86-64 (aarch64 and anything else Highway serves).
// The x86 feature bits stay empty: the ISA tiers describe x86, and there
// the Highway tier picks its own best target (NEON, SVE, SVE2 ...) at run
// time.  Brand and cache sizes come from Linux's /proc and /sys; where they
// are missing (another OS, a sandbox) the defaults of cache_sizes stand.
#if !(defined(__x86_64__) || defined(_M_X64))
#include <cstdlib>
#include <fstream>
#include <string>

#include "cpu/detect.h"

namespace anvil::cpu {
namespace {

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The first value of a "key : value" line in /proc/cpuinfo, or "".
std::string cpuinfo_field(const std::string &key) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        if (trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
    }
    return "";
}

std::string read_line(const std::string &path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return trim(s);
}

// "48K", "1024K", "32M" as bytes; 0 when unreadable.
int64_t parse_size(const std::string &s) {
    char *end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (v <= 0 || end == s.c_str()) return 0;
    if (*end == 'K') return v * 1024;
    if (*end == 'M') return v * 1024 * 1024;
    return v;
}

cache_sizes sysfs_caches() {
    cache_sizes cs;
    for (int i = 0; i < 8; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        const std::string type = read_line(dir + "type");
        if (type.empty()) break;
        if (type == "Instruction") continue;
        const int64_t size = parse_size(read_line(dir + "size"));
        if (size <= 0) continue;
        const std::string level = read_line(dir + "level");
        if (level == "1") cs.l1d = size;
        if (level == "2") cs.l2 = size;
        if (level == "3") cs.l3 = size;
    }
    return cs;
}

}  // namespace

cpu_info detect_cpu() {
    cpu_info ci;
#if defined(__aarch64__)
    const std::string implementer = cpuinfo_field("CPU implementer");
    const std::string part = cpuinfo_field("CPU part");
    ci.vendor = implementer.empty() ? "aarch64" : "aarch64 implementer " + implementer;
    ci.brand = part.empty() ? "aarch64 (part unknown)" : "aarch64 part " + part;
#else
    ci.vendor = "unknown";
    ci.brand = cpuinfo_field("model name");
    if (ci.brand.empty()) ci.brand = "unknown";
#endif
    ci.detected = 0;
    ci.caches = sysfs_caches();
    ci.l3_note = "from /sys/devices/system/cpu/cpu0/cache (defaults where absent)";
    ci.stream_prefetch_lead = ci.caches.l2 / 16;  // cpu_info: unmeasured here
    return ci;
}

}  // namespace anvil::cpu
#endif  // not x86-64
