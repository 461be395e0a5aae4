// Starting this test binary again as a child process (cases that check what
// happens at start-up, or under a seccomp filter, need a fresh process).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tu {

// The shell words that start this test binary again: the launcher the build
// named (ANVIL_TEST_CHILD_LAUNCHER, e.g. qemu-user for a cross build: the
// host shell cannot run an aarch64 binary by itself), then the binary.
inline std::string self_command() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return "false";  // the child "fails"; the caller's check reports it
    buf[n] = '\0';
    std::string cmd;
    if (const char *launcher = std::getenv("ANVIL_TEST_CHILD_LAUNCHER"))
        if (*launcher) cmd = std::string(launcher) + " ";
    return cmd + "'" + buf + "'";
}

}  // namespace tu
