// ANVIL_JIT_PROFILE=perf: every kernel made gets one /tmp/perf-<pid>.map
// line ("<start> <size> <name>", hex) with its real address and code size,
// so `perf report` names samples in JIT code.  The setting is read at
// start-up, so a child process (this binary again) runs the operation mix
// under it and compares its map file with the kernels the generator's test
// observer saw sealed.  (The frame pointer chain perf unwinds through is
// checked per kernel in test_jit_failure.cpp.)
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "anvil/anvil.h"
#include "child_process.h"
#include "common/jit_state.h"
#include "op_mix.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT

namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t> g_sealed;  // code address -> code bytes

void record_sealed(anvil::jit_state::stage s, const void *mem, size_t bytes) {
    if (s != anvil::jit_state::stage::sealed) return;
    std::lock_guard<std::mutex> lk(g_mu);
    g_sealed[reinterpret_cast<uintptr_t>(mem)] = bytes;
}

std::string perf_map_path() { return "/tmp/perf-" + std::to_string(getpid()) + ".map"; }

}  // namespace

// The child half: does nothing unless started by the case below.
TEST_CASE("jit profile child: the perf map names every kernel made") {
    const char *flag = std::getenv("ANVIL_JIT_PROFILE_CHILD");
    if (!flag || std::string(flag) != "1") return;
    const std::string path = perf_map_path();
    std::remove(path.c_str());  // a stale file of an earlier process with this pid
    anvil::jit_state::set_observer_for_test(record_sealed);
    for (const auto &r : tu::run_op_mix()) CHECK_MESSAGE(r.status == anvil_success, r.name);
    anvil::jit_state::set_observer_for_test(nullptr);

    std::map<uintptr_t, std::pair<size_t, std::string>> lines;
    std::ifstream f(path);
    std::string line;
    int malformed = 0;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        unsigned long start = 0, size = 0;
        std::string name, extra;
        in >> std::hex >> start >> size >> name;
        if (!in || name.empty() || (in >> extra)) {
            ++malformed;
            continue;
        }
        CHECK_MESSAGE(lines.count(start) == 0, "address listed twice: ", line);
        lines[start] = {size, name};
    }
    std::remove(path.c_str());
    CHECK(malformed == 0);
    std::lock_guard<std::mutex> lk(g_mu);
    INFO("backend ", tu::backend_name(), ": ", g_sealed.size(), " kernels made, ", lines.size(),
         " map lines");
    CHECK(lines.size() == g_sealed.size());
    for (const auto &k : g_sealed) {
        const auto it = lines.find(k.first);
        REQUIRE_MESSAGE(it != lines.end(), "kernel at 0x", std::hex, k.first, " has no map line");
        CHECK(it->second.first == k.second);
        CHECK(it->second.second.rfind("anvil_", 0) == 0);  // names say they are anvil's
    }
    if (tu::backend_is_jit()) CHECK(!g_sealed.empty());
}

TEST_CASE("jit profile: ANVIL_JIT_PROFILE=perf writes /tmp/perf-<pid>.map for every kernel") {
    char log[] = "/tmp/anvil_jit_profile_XXXXXX";
    const int fd = mkstemp(log);
    REQUIRE(fd >= 0);
    close(fd);
    const std::string cmd = "ANVIL_JIT_PROFILE=perf ANVIL_JIT_PROFILE_CHILD=1 " + tu::self_command() +
                            " -tc='jit profile child*' > '" + log + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream f(log);
    const std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::remove(log);
    INFO("child command: ", cmd, "\nchild output:\n", out);
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
    CHECK(out.find("1 passed") != std::string::npos);
}

#endif  // ANVIL_TESTS_HAVE_JIT
