// JIT memory while kernels are made, and what happens when the system
// refuses executable memory.
//
//  - W^X during generation: a test observer (common/jit_state.h) is called
//    by the generator with each new code mapping twice -- filled but not
//    yet executable, then sealed -- and reads /proc/self/maps at both
//    points: the mapping must be rw- then r-x, and no new mapping anywhere
//    may be writable and executable at either moment.
//  - Tile state: every kernel's bytes are disassembled with Zydis at the
//    same point.  Tile configuration is per thread (jit/amx_runtime.h): only
//    the configuration stub (frame, ldtilecfg, frame, ret) may load one; a
//    compute kernel that loads a configuration, or any other kernel that
//    returns with one it loaded, fails.  The driver releases a thread's
//    tiles when it leaves anvil's work (tests/amx check that part).  The same pass checks the frame
//    pointer chain perf unwinds through (ANVIL_JIT_PROFILE=perf): each
//    kernel starts with push rbp; mov rbp, rsp and writes rbp nowhere else
//    but the pop rbp right before its ret.  A ud2 after a ret ends the code
//    (constant tables follow it).
//  - Refused executable memory: a child process installs a seccomp filter
//    under which mmap / mprotect / pkey_mprotect with PROT_EXEC fail with
//    EACCES (where a filter cannot be installed it uses the generator's
//    test switch that acts the same), then runs a mix of every operation.
//    Policy fallback (the default): every call succeeds, with the same
//    bytes as the scalar path, the JIT is off afterwards, and ANVIL_VERBOSE
//    says so.  Policy error: calls that need a JIT kernel return
//    anvil_jit_error and write nothing.
//
// Compiled where the library has the JIT tier (x86-64).
#include <doctest/doctest.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "child_process.h"
#include "common/jit_state.h"
#include "cpu/isa.h"
#include "op_mix.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT

#if ANVIL_TESTS_HAVE_ZYDIS
#include <Zydis/Zydis.h>
#endif

namespace {

// ------------------------------------------------------ observer records

struct observation {
    std::mutex mu;
    std::set<std::string> wx_before;  // W+X mappings that existed before (oneDNN's)
    int written = 0, sealed = 0;
    int tile_kernels = 0;
    std::vector<std::string> failures;
};
observation g_obs;

// The /proc/self/maps line of the mapping that holds addr.
std::string mapping_of(const void *addr) {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    std::ifstream f("/proc/self/maps");
    std::string line;
    while (std::getline(f, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) return line;
    }
    return "";
}

std::string perms(const std::string &maps_line) {
    const size_t sp = maps_line.find(' ');
    return sp == std::string::npos ? "" : maps_line.substr(sp + 1, 4);
}

#if ANVIL_TESTS_HAVE_ZYDIS
// Whether the instruction writes rbp (or a part of it) explicitly.
bool writes_rbp(const ZydisDisassembledInstruction &ins) {
    for (int i = 0; i < ins.info.operand_count_visible; ++i) {
        const ZydisDecodedOperand &op = ins.operands[i];
        if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op.reg.value) ==
                ZYDIS_REGISTER_RBP)
            return true;
    }
    return false;
}
#endif

// Disassembles one kernel; reports undecodable bytes, tile configurations
// that are not released before a return, and a broken frame pointer chain.
void check_code(const uint8_t *code, size_t bytes, std::vector<std::string> *failures, int *tile_kernels) {
#if ANVIL_TESTS_HAVE_ZYDIS
    bool configured = false, any_tile = false;
    bool rbp_restored = false;  // the previous instruction was pop rbp
    bool saw_ret = false;
    int instructions = 0;
    size_t off = 0;
    for (int index = 0; off < bytes; ++index) {
        ZydisDisassembledInstruction ins;
        if (!ZYAN_SUCCESS(ZydisDisassembleIntel(ZYDIS_MACHINE_MODE_LONG_64, uint64_t(off),
                                                code + off, bytes - off, &ins))) {
            failures->push_back("undecodable JIT code at offset " + std::to_string(off));
            return;
        }
        // A ud2 after a return ends the code: what follows is the kernel's
        // constant table (jit_store_convert.h), data that need not decode.
        if (ins.info.mnemonic == ZYDIS_MNEMONIC_UD2 && saw_ret) break;
        if (ins.info.mnemonic == ZYDIS_MNEMONIC_RET) saw_ret = true;
        const std::string text = ins.text;
        if (index == 0 && text != "push rbp")
            failures->push_back("kernel starts with '" + text + "', not push rbp");
        if (index == 1 && text != "mov rbp, rsp")
            failures->push_back("second instruction '" + text + "', not mov rbp, rsp");
        const bool pop_rbp = text == "pop rbp";
        if (index > 1 && !pop_rbp && writes_rbp(ins))
            failures->push_back("rbp overwritten at offset " + std::to_string(off) + ": " + text +
                                " (breaks the frame pointer chain)");
        switch (ins.info.mnemonic) {
            case ZYDIS_MNEMONIC_LDTILECFG: configured = any_tile = true; break;
            case ZYDIS_MNEMONIC_TILERELEASE: configured = false; break;
            case ZYDIS_MNEMONIC_RET:
                if (!rbp_restored) failures->push_back("ret without pop rbp right before it");
                break;
            default: break;
        }
        if (rbp_restored && ins.info.mnemonic != ZYDIS_MNEMONIC_RET)
            failures->push_back("pop rbp not followed by ret at offset " + std::to_string(off));
        rbp_restored = pop_rbp;
        off += ins.info.length;
        instructions = index + 1;
    }
    // The configuration stub: push rbp, mov rbp rsp, ldtilecfg, vzeroupper,
    // pop rbp, ret -- nothing else.
    const bool config_stub = configured && instructions == 6;
    if (configured && !config_stub)
        failures->push_back("a kernel other than the configuration stub loads a tile configuration");
    if (any_tile) ++*tile_kernels;
#else
    (void)code, (void)bytes, (void)failures, (void)tile_kernels;
#endif
}

void observer(anvil::jit_state::stage s, const void *mem, size_t bytes) {
    std::lock_guard<std::mutex> lk(g_obs.mu);
    const std::string own = mapping_of(mem);
    const char *want = s == anvil::jit_state::stage::written ? "rw-p" : "r-xp";
    if (perms(own) != want)
        g_obs.failures.push_back(std::string("code mapping is '") + perms(own) + "', want '" + want +
                                 "': " + own);
    for (const auto &m : tu::wx_mappings())
        if (!g_obs.wx_before.count(m)) g_obs.failures.push_back("W+X mapping during generation: " + m);
    if (s == anvil::jit_state::stage::written) {
        ++g_obs.written;
        check_code(static_cast<const uint8_t *>(mem), bytes, &g_obs.failures, &g_obs.tile_kernels);
    } else {
        ++g_obs.sealed;
    }
}

// ------------------------------------------------------------ seccomp

// mmap / mprotect / pkey_mprotect asking for PROT_EXEC fail with EACCES;
// everything else is allowed.  Returns false when the filter could not be
// installed (no seccomp in this kernel or sandbox).
bool refuse_exec_mappings() {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pkey_mprotect, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        // prot is the third argument of all three (low 32 bits on x86-64).
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Whether the effective cap lets anvil use JIT kernels at all.
bool jit_tier_allowed() { return anvil_jit_enabled() == 1; }

struct child_run {
    int rc = -1;
    std::string out;
};

child_run run_child(const std::string &env) {
    char tmpl[] = "/tmp/anvil_jit_fail_XXXXXX";
    const int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    close(fd);
    const std::string cmd = env + " ANVIL_VERBOSE=1 " + tu::self_command() + " -tc='jit failure child*' > '" +
                            tmpl + "' 2>&1";
    child_run r;
    r.rc = std::system(cmd.c_str());
    std::ifstream f(tmpl);
    r.out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    std::remove(tmpl);
    return r;
}

}  // namespace

TEST_CASE("jit memory: each code mapping is rw- while filled and r-x once sealed, never W+X meanwhile") {
    {
        std::lock_guard<std::mutex> lk(g_obs.mu);
        const auto wx = tu::wx_mappings();
        g_obs.wx_before = std::set<std::string>(wx.begin(), wx.end());
        g_obs.written = g_obs.sealed = g_obs.tile_kernels = 0;
        g_obs.failures.clear();
    }
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    anvil::jit_state::set_observer_for_test(observer);
    const auto results = tu::run_op_mix();
    anvil::jit_state::set_observer_for_test(nullptr);
    for (const auto &r : results) CHECK_MESSAGE(r.status == anvil_success, r.name);
    std::lock_guard<std::mutex> lk(g_obs.mu);
    std::string all;
    for (const auto &f : g_obs.failures) all += f + "\n";
    INFO("backend ", tu::backend_name(), "; failures:\n", all);
    CHECK(g_obs.failures.empty());
    CHECK(g_obs.written == g_obs.sealed);
    if (jit_tier_allowed()) CHECK(g_obs.written > 0);
    MESSAGE("kernels observed while generated: ", g_obs.written, "; of them using AMX tiles: ",
            g_obs.tile_kernels,
            std::string(ANVIL_TESTS_HAVE_ZYDIS ? "" : " (no Zydis: code not disassembled)"));
}

// The child half of the cases below; does nothing unless started by them.
TEST_CASE("jit failure child: refused executable memory") {
    const char *mode_env = std::getenv("ANVIL_JIT_FAILURE_CHILD");
    if (!mode_env) return;
    const std::string mode = mode_env;
    const bool jit_before = jit_tier_allowed();
    // The reference: the scalar path (before the filter; it maps no code).
    const anvil_isa_t cap = anvil_get_effective_isa();
    anvil::cpu::set_max_isa_for_test(anvil_isa_scalar);
    const auto want = tu::run_op_mix();
    anvil::cpu::set_max_isa_for_test(cap);

    if (refuse_exec_mappings()) {
        MESSAGE("seccomp filter installed: PROT_EXEC mappings fail with EACCES");
        void *probe = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(probe == MAP_FAILED);
    } else {
        MESSAGE("seccomp unavailable here: the generator's refuse-exec test switch stands in");
        anvil::jit_state::set_refuse_exec_for_test(true);
    }
    if (mode == "error") REQUIRE(anvil_set_jit_failure_policy(anvil_jit_failure_error) == anvil_success);
    const auto got = tu::run_op_mix();
    REQUIRE(got.size() == want.size());
    int refused = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(got[i].name);
        CAPTURE(anvil_status_str(got[i].status));
        REQUIRE(want[i].status == anvil_success);
        if (mode == "fallback" || got[i].status == anvil_success) {
            CHECK(got[i].status == anvil_success);
            CHECK(got[i].out == want[i].out);
        } else {
            ++refused;
            CHECK(got[i].status == anvil_jit_error);
            CHECK(got[i].out == got[i].initial);
        }
    }
    if (mode == "fallback") {
        CHECK(anvil_jit_enabled() == 0);
    } else {
        CHECK(anvil_jit_enabled() == (jit_before ? 1 : 0));
        if (jit_before) CHECK(refused > 0);
    }
    MESSAGE("JIT before: ", jit_before, ", after: ", anvil_jit_enabled(), ", calls refused: ", refused);
}

TEST_CASE("jit failure: policy setting is checked") {
    const anvil_jit_failure_policy_t p = anvil_get_jit_failure_policy();
    // An int outside the enum, as a C caller could pass it.
    anvil_jit_failure_policy_t bad;
    const int seven = 7;
    std::memcpy(&bad, &seven, sizeof(bad));
    CHECK(anvil_set_jit_failure_policy(bad) == anvil_invalid_argument);
    CHECK(anvil_get_jit_failure_policy() == p);
}

TEST_CASE("jit failure: refused executable memory falls back to Highway/scalar (default policy)") {
    const child_run r = run_child("ANVIL_JIT_FAILURE_CHILD=fallback");
    INFO("child output:\n", r.out);
    CHECK(WIFEXITED(r.rc));
    CHECK(WEXITSTATUS(r.rc) == 0);
    CHECK(r.out.find("1 passed") != std::string::npos);
    if (jit_tier_allowed()) {
        CHECK(r.out.find("jit,error=mprotect_exec_refused") != std::string::npos);
        CHECK(r.out.find("action=jit_off_fallback_to_highway") != std::string::npos);
    }
}

TEST_CASE("jit failure: refused executable memory gives anvil_jit_error under the error policy") {
    const child_run r = run_child("ANVIL_JIT_FAILURE_CHILD=error");
    INFO("child output:\n", r.out);
    CHECK(WIFEXITED(r.rc));
    CHECK(WEXITSTATUS(r.rc) == 0);
    CHECK(r.out.find("1 passed") != std::string::npos);
    if (jit_tier_allowed()) CHECK(r.out.find("action=return_jit_error") != std::string::npos);
}

#endif  // ANVIL_TESTS_HAVE_JIT
