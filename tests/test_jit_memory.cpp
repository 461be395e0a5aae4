// JIT memory: generated code is never writable and executable at once
// (W^X), and ANVIL_JIT_DUMP=1 writes the generated code to
// ANVIL_JIT_DUMP_DIR.  Runs under every cap; the JIT-specific checks only
// bite where the backend is the JIT (avx512_core and up).
//
// oneDNN (linked into this binary for the differential tests) leaves
// read-write-execute mappings of its own once it has run, so in this
// process only mappings that appear while anvil generates kernels are
// judged.  The strict check -- no W+X mapping anywhere in the process --
// runs in a child process that never calls oneDNN: the test binary itself,
// started with ANVIL_JIT_DUMP_CHILD=1 and a test-case filter.  The
// environment is read once per process, so the dump is checked there too.
//
// Compiled only where the library has the JIT tier (ANVIL_TESTS_HAVE_JIT:
// x86-64); elsewhere anvil generates no code.
#include <doctest/doctest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "ref/ref_ukernel.h"
#include "child_process.h"
#include "test_util.h"

#if ANVIL_TESTS_HAVE_JIT  // the JIT tier (x86-64) is what maps code

namespace {

// A few shapes that need many different kernels (row and column tails,
// both A addressings, every beta kind, alpha == 1 and not); checks each
// result exactly (integer data).
void run_kernel_mix() {
    struct shape {
        char ta, tb;
        int64_t M, N, K;
        float alpha, beta;
    };
    const shape shapes[] = {
        {'N', 'N', 1, 1, 1, 1.0f, 0.0f},      {'N', 'N', 7, 45, 13, 1.0f, 1.0f},
        {'T', 'N', 12, 33, 64, -0.5f, 0.0f},  {'N', 'T', 30, 70, 9, 1.0f, 0.5f},
        {'T', 'T', 100, 129, 31, 1.0f, 0.0f}, {'N', 'N', 3, 1000, 300, -0.5f, 1.0f},
        {'N', 'N', 250, 20, 700, 1.0f, 0.0f}};
    for (const shape &s : shapes) {
        tu::gemm_case c;
        c.ta = s.ta;
        c.tb = s.tb;
        c.M = s.M;
        c.N = s.N;
        c.K = s.K;
        c.alpha = s.alpha;
        c.beta = s.beta;
        c.tighten(1, 0, 3);
        CAPTURE(c.str());
        tu::rng r(uint64_t(s.M * 131 + s.N * 7 + s.K));
        auto gen = [&] { return r.small_int(); };
        tu::fbuf A = tu::make_operand(c.a_rows(), c.a_cols(), c.lda, 0, gen);
        tu::fbuf B = tu::make_operand(c.b_rows(), c.b_cols(), c.ldb, 0, gen);
        tu::cmat C(c.M, c.N, c.ldc, 0), R(c.M, c.N, c.ldc, 0);
        for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = 0; j < c.N; ++j) C.at(i, j) = R.at(i, j) = float((i + j) % 5) - 2.0f;
        REQUIRE(anvil_sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda, B.data(), c.ldb,
                            c.beta, C.c(), c.ldc) == anvil_success);
        anvil::ref::sgemm_double(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), c.lda, B.data(),
                                 c.ldb, c.beta, R.c(), c.ldc);
        std::string f;
        CHECK_MESSAGE(tu::count_value_mismatches(C, R, &f) == 0, f);
        CHECK(C.sentinel_damage() == 0);
    }
}

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const auto &x : v) s += x + "\n";
    return s;
}

// Regular files in dir (name -> size).
std::vector<std::pair<std::string, int64_t>> list_files(const std::string &dir) {
    std::vector<std::pair<std::string, int64_t>> out;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            struct stat st;
            if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode))
                out.emplace_back(name, int64_t(st.st_size));
        }
        closedir(d);
    }
    return out;
}

void remove_dir(const std::string &dir) {
    for (const auto &f : list_files(dir)) std::remove((dir + "/" + f.first).c_str());
    rmdir(dir.c_str());
}

}  // namespace

TEST_CASE("jit memory: generating kernels adds no writable+executable mapping") {
    const std::vector<std::string> before_v = tu::wx_mappings();
    const std::set<std::string> before(before_v.begin(), before_v.end());
    REQUIRE(anvil_clear_kernel_cache() == anvil_success);
    run_kernel_mix();
    std::vector<std::string> added;
    for (const auto &m : tu::wx_mappings())
        if (!before.count(m)) added.push_back(m);
    INFO("backend ", tu::backend_name(), "; new W+X mappings:\n", join(added));
    CHECK(added.empty());
}

// The child half: does nothing unless started by the test below.
TEST_CASE("jit dump child: W^X and code dump in a fresh process") {
    const char *flag = std::getenv("ANVIL_JIT_DUMP_CHILD");
    if (!flag || std::string(flag) != "1") return;
    run_kernel_mix();
    const std::vector<std::string> wx = tu::wx_mappings();
    INFO("backend ", tu::backend_name(), "; W+X mappings in a process without oneDNN:\n",
         join(wx));
    CHECK(wx.empty());
}

TEST_CASE("jit memory: child process has no W+X mapping at all; ANVIL_JIT_DUMP writes code") {
    char tmpl[] = "/tmp/anvil_jit_dump_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    const std::string log = dir + ".log";
    // The child inherits this process's environment (ANVIL_MAX_ISA, ...).
    const std::string cmd = "ANVIL_JIT_DUMP=1 ANVIL_JIT_DUMP_DIR='" + dir +
                            "' ANVIL_JIT_DUMP_CHILD=1 " + tu::self_command() +
                            " -tc='jit dump child*' > '" + log + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::string child_out;
    if (FILE *f = std::fopen(log.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) child_out.append(buf, n);
        std::fclose(f);
    }
    std::remove(log.c_str());
    INFO("child command: ", cmd, "\nchild output:\n", child_out);
    CHECK(rc != -1);
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
    // The child really ran the case (doctest reports one passing case).
    CHECK(child_out.find("1 passed") != std::string::npos);

    const auto files = list_files(dir);
    std::string names;
    for (const auto &f : files) names += f.first + " (" + std::to_string(f.second) + " bytes)\n";
    INFO("backend ", tu::backend_name(), "; dumped files:\n", names);
    if (tu::backend_is_jit()) {
        CHECK(!files.empty());
        for (const auto &f : files) CHECK(f.second > 0);
    }
    remove_dir(dir);
}

#endif  // ANVIL_TESTS_HAVE_JIT
