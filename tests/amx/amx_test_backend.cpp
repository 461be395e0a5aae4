// AMX backend for the tests (see amx_test_backend.h).
#include "amx/amx_test_backend.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "amx_emu/amx_emulator.h"
#include "jit/amx_runtime.h"
#include "jit/jit_amx_lp.h"

namespace amxt {
namespace {

using anvil::cache::kernel_ptr;
using anvil::lowp::lp_backend;
using anvil::lowp::lp_kind;
using anvil::lowp::lp_ukernel_args;
using anvil::lowp::lp_ukernel_desc;
using anvil::lowp::lp_ukernel_ref;

std::mutex g_err_mu;
std::vector<std::string> g_errors;
std::atomic<uint64_t> g_tile_ops{0};

void note_error(const std::string &e) {
    std::lock_guard<std::mutex> lk(g_err_mu);
    if (g_errors.size() < 20) g_errors.push_back(e);
}

// Each thread's emulated CPU (its tile state persists between calls) and
// the configuration it loaded last (mirrors jit/amx_runtime.cpp).
struct thread_cpu {
    anvil::test::amx_emulator emu;
    const void *config = nullptr;
};
thread_cpu &cpu() {
    thread_local thread_cpu c;
    return c;
}

kernel_ptr stub(bool load) {
    kernel_ptr k;
    const anvil_status_t st = load ? anvil::jit::amx::config_stub(&k) : anvil::jit::amx::release_stub(&k);
    if (st != anvil_success) note_error("AMX stub generation failed");
    return k;
}

uint64_t tdp_count(const anvil::test::amx_emulator &e) {
    uint64_t n = 0;
    for (const auto &kv : e.mnemonic_counts())
        if (kv.first.rfind("tdp", 0) == 0) n += kv.second;
    return n;
}

void emu_configure(const void *cfg) {
    thread_cpu &c = cpu();
    if (c.config == cfg) return;
    const kernel_ptr k = stub(true);
    if (!k) return;
    try {
        c.emu.call(k->entry(), k->code_size(), reinterpret_cast<uint64_t>(cfg));
        c.config = cfg;
    } catch (const std::exception &e) {
        note_error(std::string("ldtilecfg stub: ") + e.what());
    }
}

void emu_release() {
    thread_cpu &c = cpu();
    if (!c.config) return;
    const kernel_ptr k = stub(false);
    if (!k) return;
    try {
        c.emu.call(k->entry(), k->code_size());
    } catch (const std::exception &e) {
        note_error(std::string("tilerelease stub: ") + e.what());
    }
    c.config = nullptr;
}

void emu_run(const kernel_ptr &k, const void *cfg, const void *args) {
    thread_cpu &c = cpu();
    if (!c.emu.tiles_configured() || std::memcmp(c.emu.tile_config(), cfg, 64) != 0) {
        note_error(k->name() + " called without its tile configuration loaded");
        return;
    }
    const uint64_t before = tdp_count(c.emu);
    try {
        c.emu.call(k->entry(), k->code_size(), reinterpret_cast<uint64_t>(args));
    } catch (const std::exception &e) {
        note_error(k->name() + ": " + e.what());
    }
    g_tile_ops += tdp_count(c.emu) - before;
}

// The driver calls kernels through plain function pointers (lp_ukernel_fn):
// each emulated kernel gets one of these trampolines, which knows its slot.
constexpr int kSlots = 512;
struct slot {
    kernel_ptr k;
    const void *cfg = nullptr;
};
slot g_slots[kSlots];
std::mutex g_slot_mu;
int g_used = 0;

template <int I>
void trampoline(const lp_ukernel_args *a) {
    emu_run(g_slots[I].k, g_slots[I].cfg, a);
}
template <int... I>
constexpr std::array<anvil::lowp::lp_ukernel_fn, sizeof...(I)> make_table(std::integer_sequence<int, I...>) {
    return {&trampoline<I>...};
}
const auto g_tramp = make_table(std::make_integer_sequence<int, kSlots>{});

class emulated_backend final : public lp_backend {
public:
    const char *name() const override { return "jit:amx(emulated)"; }
    anvil_isa_t tier() const override { return anvil_isa_amx; }
    bool supports(lp_kind kind) const override { return kind == lp_kind::bf16 || kind == lp_kind::u8s8; }
    anvil_status_t get(const lp_ukernel_desc &desc, lp_ukernel_ref *out) const override {
        if (desc.m < 1 || desc.m > anvil::jit::kAmxMaxRows || desc.nv < 1 || desc.nv > 2 ||
            desc.accumulate > 1)
            return anvil_invalid_argument;
        if (desc.epi_out != anvil::lowp::EPI_NONE || desc.a_f32) return anvil_unsupported;
        kernel_ptr k;
        const anvil_status_t st = anvil::jit::get_amx_lp_kernel(
            anvil::jit::make_amx_lp_desc(desc.kind, desc.m, desc.nv, desc.accumulate != 0), &k);
        if (st != anvil_success) return st;
        const void *cfg = anvil::jit::amx_lp_tile_config(desc.m, desc.nv);
        std::lock_guard<std::mutex> lk(g_slot_mu);
        int i = 0;
        while (i < g_used && g_slots[i].k != k) ++i;
        if (i == g_used) {
            if (g_used == kSlots) return anvil_out_of_memory;
            g_slots[g_used].k = k;
            g_slots[g_used].cfg = cfg;
            ++g_used;
        }
        out->fn = g_tramp[size_t(i)];
        out->name = k->name().c_str();
        out->keep_alive = k;
        out->tile_config = cfg;
        return anvil_success;
    }
    int max_rows() const override { return anvil::jit::kAmxMaxRows; }
    bool uses_tiles() const override { return true; }
    void configure_thread(const void *cfg) const override { emu_configure(cfg); }
    void release_thread() const override { emu_release(); }
};

}  // namespace

bool native_usable() { return anvil::jit::amx::request_permission().usable; }

const lp_backend &backend(mode m) {
    static const emulated_backend emulated;
    if (m == mode::native) {
        if (const lp_backend *b = anvil::lowp::jit_amx_lp_backend()) return *b;
    }
    return emulated;
}

const char *mode_name(mode m) { return m == mode::native ? "native" : "emulated"; }

bool mode_from_env(mode *m) {
    const char *v = std::getenv("ANVIL_TEST_AMX");
    if (!v || !*v) return false;
    *m = (std::string(v) == "auto" && native_usable()) ? mode::native : mode::emulated;
    return true;
}

void run_kernel(mode m, const kernel_ptr &k, const void *tile_config, const void *args) {
    if (m == mode::native) {
        anvil::jit::amx::configure(tile_config);
        reinterpret_cast<anvil::lowp::lp_ukernel_fn>(const_cast<void *>(k->entry()))(
            static_cast<const lp_ukernel_args *>(args));
        return;
    }
    emu_configure(tile_config);
    emu_run(k, tile_config, args);
}

void release_tiles(mode m) {
    if (m == mode::native)
        anvil::jit::amx::release();
    else
        emu_release();
}

std::vector<std::string> take_emulation_errors() {
    std::lock_guard<std::mutex> lk(g_err_mu);
    return std::exchange(g_errors, {});
}

uint64_t emulated_tile_ops() { return g_tile_ops.load(); }

}  // namespace amxt
