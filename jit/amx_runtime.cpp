// AMX runtime (see amx_runtime.h).
#include "jit/amx_runtime.h"

#include <cerrno>
#include <cstring>
#include <mutex>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "cpu/isa.h"
#include "jit/jit_generator.h"

namespace anvil::jit::amx {
namespace {

// Linux uapi (asm/prctl.h) values, spelled here because older headers lack them.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

class stub_gen : public jit_generator {
public:
    explicit stub_gen(bool load) {
        preamble({});  // the frame every anvil kernel has (perf unwinds through it)
        if (load) ldtilecfg(ptr[rdi]);
        else tilerelease();
        postamble();
    }
};

anvil_status_t make_stub(bool load, cache::kernel_ptr *out) {
    static std::once_flag once[2];
    static cache::kernel_ptr stub[2];
    static anvil_status_t st[2] = {anvil_success, anvil_success};
    const int i = load ? 0 : 1;
    std::call_once(once[i], [&] {
        try {
            stub_gen g(load);
            st[i] = g.finalize(load ? "amx_ldtilecfg" : "amx_tilerelease", &stub[i]);
        } catch (...) {
            st[i] = anvil_jit_error;
        }
    });
    *out = stub[i];
    return st[i];
}

using cfg_fn = void (*)(const void *);
using rel_fn = void (*)();

thread_local const void *t_config = nullptr;

}  // namespace

const availability &request_permission() {
    static availability a;
    static std::once_flag once;
    std::call_once(once, [] {
        const uint32_t need = cpu::f_amx_tile | cpu::f_amx_bf16 | cpu::f_amx_int8;
        if ((cpu::info().detected & need) != need) {
            a.reason = "the CPU has no AMX (amx_tile, amx_bf16, amx_int8)";
            return;
        }
#if defined(__linux__) && defined(SYS_arch_prctl)
        if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
            a.reason = std::string("the kernel refused XTILEDATA (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
                       std::strerror(errno) + ")";
            return;
        }
        unsigned long mask = 0;
        if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0 ||
            !(mask & (1ul << kXfeatureXtiledata))) {
            a.reason = "XTILEDATA not granted (ARCH_GET_XCOMP_PERM)";
            return;
        }
        a.usable = true;
        a.reason = "usable";
#else
        a.reason = "no arch_prctl XTILEDATA request on this OS";
#endif
    });
    return a;
}

void configure(const void *cfg) {
    if (t_config == cfg) return;
    cache::kernel_ptr stub;
    if (make_stub(true, &stub) != anvil_success) return;  // backends check first: not reached
    reinterpret_cast<cfg_fn>(const_cast<void *>(stub->entry()))(cfg);
    t_config = cfg;
}

void release() {
    if (!t_config) return;
    cache::kernel_ptr stub;
    if (make_stub(false, &stub) != anvil_success) return;
    reinterpret_cast<rel_fn>(const_cast<void *>(stub->entry()))();
    t_config = nullptr;
}

anvil_status_t config_stub(cache::kernel_ptr *out) { return make_stub(true, out); }
anvil_status_t release_stub(cache::kernel_ptr *out) { return make_stub(false, out); }

}  // namespace anvil::jit::amx
