// The memory cap (anvil_set_memory_cap, ANVIL_MEMORY_CAP): buffers anvil
// allocates are counted; a call that would go over the cap returns
// anvil_out_of_memory with nothing allocated beyond it and nothing written;
// packed-weights buffers larger than the cap are refused at the size query
// and at pack time; the count returns to where it was when buffers are
// freed (threads exit, plans are destroyed, scratch is released).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "child_process.h"
#include "common/memory.h"
#include "op_mix.h"

namespace {

anvil_memory_stats_t stats() {
    anvil_memory_stats_t s{};
    REQUIRE(anvil_get_memory_stats(&s) == anvil_success);
    return s;
}

// Restores "no cap" when a case ends, whatever happens in it.
struct cap_guard {
    int64_t saved = stats().cap;
    ~cap_guard() { anvil_set_memory_cap(saved); }
};

// Runs fn on a new thread: its per-thread scratch starts empty and is freed
// when the thread ends.
template <typename F>
void on_fresh_thread(F fn) {
    std::thread t(fn);
    t.join();
}

}  // namespace

TEST_CASE("memory cap: setting and reading it; bad values are refused and change nothing") {
    cap_guard g;
    REQUIRE(anvil_set_memory_cap(1 << 20) == anvil_success);
    CHECK(stats().cap == (1 << 20));
    CHECK(anvil_set_memory_cap(-1) == anvil_invalid_argument);
    CHECK(stats().cap == (1 << 20));
    CHECK(anvil_get_memory_stats(nullptr) == anvil_null_pointer);
    REQUIRE(anvil_set_memory_cap(0) == anvil_success);
    CHECK(stats().cap == 0);
    CHECK(anvil_release_thread_scratch() == anvil_success);
}

TEST_CASE("memory cap: ANVIL_MEMORY_CAP sizes parse with binary units; junk and overflow are refused") {
    int64_t b = -1;
    CHECK((anvil::mem::parse_size("0", &b) && b == 0));
    CHECK((anvil::mem::parse_size("4096", &b) && b == 4096));
    CHECK((anvil::mem::parse_size("64K", &b) && b == 64 * 1024));
    CHECK((anvil::mem::parse_size("3m", &b) && b == 3 * 1024 * 1024));
    CHECK((anvil::mem::parse_size("2G", &b) && b == int64_t(2) << 30));
    for (const char *bad : {"", "K", "-5", "12KB", "1.5G", "9999999999999999999", "9000000000G", "0x10"})
        CHECK_MESSAGE(!anvil::mem::parse_size(bad, &b), bad);
}

TEST_CASE("memory cap: over the cap every call fails with out_of_memory, writes nothing, holds nothing") {
    cap_guard g;
    // Reference run without a cap on a fresh thread, which also shows how
    // much each call needs.
    std::vector<tu::op_result> want;
    on_fresh_thread([&] { want = tu::run_op_mix(); });
    for (const auto &w : want) REQUIRE_MESSAGE(w.status == anvil_success, w.name);

    // A cap just above what is held now (other threads' scratch): no call
    // of the mix can get its buffers.
    const int64_t base = stats().in_use;
    REQUIRE(anvil_set_memory_cap(base + 64) == anvil_success);
    std::vector<tu::op_result> got;
    on_fresh_thread([&] { got = tu::run_op_mix(); });
    CHECK(stats().in_use == base);
    CHECK(stats().peak >= base);
    REQUIRE(got.size() == want.size());
    int refused = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(got[i].name);
        CAPTURE(anvil_status_str(got[i].status));
        // Either the call needed no counted memory (and then it is right),
        // or it was refused and its output is the untouched fill pattern.
        if (got[i].status == anvil_success) {
            CHECK(got[i].out == want[i].out);
            continue;
        }
        ++refused;
        CHECK(got[i].status == anvil_out_of_memory);
        CHECK_MESSAGE(got[i].out == got[i].initial, "a refused call wrote to its output");
    }
    // The packing GEMMs and convolutions all need scratch (the small fp32
    // matmul with f32 output may not: B is prepacked, A read in place).
    CHECK(refused >= int(got.size()) - 3);

    // With the cap lifted the same calls succeed again.
    REQUIRE(anvil_set_memory_cap(0) == anvil_success);
    on_fresh_thread([&] { got = tu::run_op_mix(); });
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(got[i].name);
        CHECK(got[i].status == anvil_success);
        CHECK(got[i].out == want[i].out);
    }
    CHECK(stats().in_use == base);
}

TEST_CASE("memory cap: a cap that fits the working set changes no result") {
    cap_guard g;
    std::vector<tu::op_result> want, got;
    int64_t need = 0;
    on_fresh_thread([&] {
        const int64_t before = stats().in_use;
        want = tu::run_op_mix();
        need = stats().in_use - before;  // this thread's scratch at its largest
    });
    REQUIRE(anvil_set_memory_cap(stats().in_use + need + (1 << 20)) == anvil_success);
    on_fresh_thread([&] { got = tu::run_op_mix(); });
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(got[i].name);
        CHECK(got[i].status == anvil_success);
        CHECK(got[i].out == want[i].out);
    }
}

TEST_CASE("memory cap: packed-weights buffers larger than the cap are refused at query and pack") {
    cap_guard g;
    const int64_t M = 4, N = 1024, K = 1024;  // about 4 MiB of packed fp32 B
    anvil_gemm_plan_t plan = nullptr;
    REQUIRE(anvil_gemm_plan_create(&plan, 'N', 'N', M, N, K, K, N, N) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_gemm_plan_packed_b_size(plan, &bytes) == anvil_success);
    REQUIRE(bytes > (size_t(1) << 22));

    REQUIRE(anvil_set_memory_cap(int64_t(bytes) - 1) == anvil_success);
    size_t q = 12345;
    CHECK(anvil_gemm_plan_packed_b_size(plan, &q) == anvil_out_of_memory);
    CHECK(q == 12345);
    std::vector<float> B(size_t(K * N), 1.0f);
    std::vector<uint8_t> packed(bytes, 0xab);
    CHECK(anvil_gemm_plan_pack_b(plan, B.data(), packed.data()) == anvil_out_of_memory);
    CHECK(std::count(packed.begin(), packed.end(), 0xab) == int64_t(bytes));
    const int64_t before = stats().in_use;
    CHECK(anvil_gemm_plan_pack_b_owned(plan, B.data()) == anvil_out_of_memory);
    CHECK(stats().in_use == before);

    // Library-owned packed B is counted while the plan holds it.
    REQUIRE(anvil_set_memory_cap(0) == anvil_success);
    REQUIRE(anvil_gemm_plan_pack_b_owned(plan, B.data()) == anvil_success);
    CHECK(stats().in_use >= before + int64_t(bytes));
    REQUIRE(anvil_gemm_plan_destroy(plan) == anvil_success);
    CHECK(stats().in_use == before);

    // matmul and conv2d packed weights.
    anvil_matmul_desc_t d{};
    d.a_dt = anvil_dt_u8, d.b_dt = anvil_dt_s8, d.c_dt = anvil_dt_s32;
    d.transa = d.transb = 'N';
    d.M = 1, d.N = 4096, d.K = 4096, d.lda = 4096, d.ldb = 4096, d.ldc = 4096;
    anvil_matmul_t mm = nullptr;
    REQUIRE(anvil_matmul_create(&mm, &d) == anvil_success);
    REQUIRE(anvil_matmul_packed_weights_size(mm, &bytes) == anvil_success);
    REQUIRE(anvil_set_memory_cap(int64_t(bytes) / 2) == anvil_success);
    q = 12345;
    CHECK(anvil_matmul_packed_weights_size(mm, &q) == anvil_out_of_memory);
    CHECK(q == 12345);
    std::vector<int8_t> Bq(size_t(d.K * d.N), 1);
    std::vector<uint8_t> pq(bytes, 0xab);
    CHECK(anvil_matmul_pack_weights(mm, Bq.data(), pq.data()) == anvil_out_of_memory);
    CHECK(std::count(pq.begin(), pq.end(), 0xab) == int64_t(bytes));
    anvil_matmul_destroy(mm);

    REQUIRE(anvil_set_memory_cap(0) == anvil_success);
    anvil_conv2d_desc_t c{};
    c.src_dt = c.wei_dt = c.dst_dt = anvil_dt_f32;
    c.N = 1, c.G = 1, c.IC = 512, c.IH = 7, c.IW = 7, c.OC = 512, c.OH = 7, c.OW = 7;
    c.KH = c.KW = 3, c.SH = c.SW = 1, c.pad_t = c.pad_l = c.pad_b = c.pad_r = 1;
    anvil_conv2d_t cv = nullptr;
    REQUIRE(anvil_conv2d_create(&cv, &c) == anvil_success);
    REQUIRE(anvil_conv2d_packed_weights_size(cv, &bytes) == anvil_success);
    REQUIRE(anvil_set_memory_cap(int64_t(bytes) - 64) == anvil_success);
    q = 12345;
    CHECK(anvil_conv2d_packed_weights_size(cv, &q) == anvil_out_of_memory);
    CHECK(q == 12345);
    std::vector<float> W(size_t(512 * 512 * 9), 1.0f);
    std::vector<uint8_t> pc(bytes, 0xab);
    CHECK(anvil_conv2d_pack_weights(cv, W.data(), anvil_conv_weights_oihw, pc.data()) ==
          anvil_out_of_memory);
    CHECK(std::count(pc.begin(), pc.end(), 0xab) == int64_t(bytes));
    anvil_conv2d_destroy(cv);
}

TEST_CASE("memory cap: anvil_release_thread_scratch returns this thread's scratch") {
    on_fresh_thread([] {
        const int64_t before = stats().in_use;
        for (const auto &r : tu::run_op_mix()) REQUIRE_MESSAGE(r.status == anvil_success, r.name);
        CHECK(stats().in_use > before);
        REQUIRE(anvil_release_thread_scratch() == anvil_success);
        CHECK(stats().in_use == before);
        // Still works afterwards (buffers are made again).
        for (const auto &r : tu::run_op_mix()) CHECK_MESSAGE(r.status == anvil_success, r.name);
    });
}

// The child half of the next case: runs only when started by it.
TEST_CASE("memory cap child: the environment sets the cap") {
    const char *flag = std::getenv("ANVIL_MEMORY_CAP_CHILD");
    if (!flag || std::string(flag) != "1") return;
    CHECK(stats().cap == 3 * 1024 * 1024);
}

TEST_CASE("memory cap: ANVIL_MEMORY_CAP=3M is read at start-up") {
    const std::string cmd = "ANVIL_MEMORY_CAP=3M ANVIL_MEMORY_CAP_CHILD=1 " + tu::self_command() +
                            " -tc='memory cap child*' > /dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
}

