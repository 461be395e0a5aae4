#include "jit/jit_generator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/env.h"
#include "common/jit_state.h"
#include "common/verbose.h"

namespace anvil::jit {
namespace {

// Executable code owned by one kernel; unmapped when the last user lets go.
class exec_kernel final : public cache::kernel {
public:
    exec_kernel(void *mem, size_t map_bytes, size_t code_bytes, std::string name)
        : mem_(mem), map_bytes_(map_bytes), code_bytes_(code_bytes), name_(std::move(name)) {}
    ~exec_kernel() override { munmap(mem_, map_bytes_); }
    const void *entry() const override { return mem_; }
    const std::string &name() const override { return name_; }
    size_t code_size() const override { return code_bytes_; }

private:
    void *mem_;
    size_t map_bytes_, code_bytes_;
    std::string name_;
};

void dump_code(const std::string &name, const uint8_t *code, size_t size) {
    const std::string path = env::get().jit_dump_dir + "/" + name + ".bin";
    if (FILE *f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(code, 1, size, f);
        std::fclose(f);
    }
}

// /tmp/perf-<pid>.map lines ("<start> <size> <name>", hex) let `perf report`
// name samples that land in JIT code.
void append_perf_map(const void *addr, size_t size, const std::string &name) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    char path[64];
    std::snprintf(path, sizeof(path), "/tmp/perf-%d.map", int(getpid()));
    if (FILE *f = std::fopen(path, "a")) {
        std::fprintf(f, "%lx %zx %s\n", reinterpret_cast<unsigned long>(addr), size, name.c_str());
        std::fclose(f);
    }
}

}  // namespace

uint8_t *jit_generator::scratch_buffer() {
    // One generator per thread at a time (generation never nests).
    thread_local std::vector<uint8_t> buf(kMaxCodeBytes);
    return buf.data();
}

void jit_generator::preamble(std::initializer_list<Xbyak::Reg64> saved) {
    preamble(std::vector<Xbyak::Reg64>(saved));
}

void jit_generator::preamble(const std::vector<Xbyak::Reg64> &saved) {
    push(rbp);
    mov(rbp, rsp);
    saved_ = saved;
    for (const auto &r : saved_) push(r);
}

void jit_generator::postamble() {
    vzeroupper();  // leave no dirty upper state for SSE code after us
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) pop(*it);
    pop(rbp);
    ret();
}

anvil_status_t jit_generator::finalize(const std::string &kernel_name, cache::kernel_ptr *out) {
    // Every kernel's name says it is anvil's (perf reports, dumps, logs).
    const std::string name =
        kernel_name.rfind("anvil_", 0) == 0 ? kernel_name : "anvil_" + kernel_name;
    const size_t code_bytes = getSize();
    const long page = sysconf(_SC_PAGESIZE);
    const size_t map_bytes = (code_bytes + size_t(page) - 1) / size_t(page) * size_t(page);
    // MAP_POPULATE: the pages are made in the one mmap call instead of one
    // page fault each during the copy below -- a VM exit apiece under a
    // hypervisor (measured on the Zen 5 VM: a 19 KB 64x64x64 kernel's
    // generation 135 -> 108 us).
    void *mem = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) {
        jit_state::report_failure(name, "mmap_failed");
        return anvil_jit_error;
    }
    std::memcpy(mem, getCode(), code_bytes);
    jit_state::notify(jit_state::stage::written, mem, code_bytes);
    if (jit_state::refuse_exec_for_test() || mprotect(mem, map_bytes, PROT_READ | PROT_EXEC) != 0) {
        munmap(mem, map_bytes);
        jit_state::report_failure(name, "mprotect_exec_refused");
        return anvil_jit_error;
    }
    jit_state::notify(jit_state::stage::sealed, mem, code_bytes);
    const env::settings &s = env::get();
    if (s.jit_dump) dump_code(name, getCode(), code_bytes);
    if (s.jit_profile == "perf") append_perf_map(mem, code_bytes, name);
    *out = std::make_shared<exec_kernel>(mem, map_bytes, code_bytes, name);
    return anvil_success;
}

}  // namespace anvil::jit
