// The AMX lp backend as the tests run it: natively where the CPU has AMX
// and the kernel granted XTILEDATA (anvil-info reports "amx: usable"), and
// otherwise through the AMX emulator (tests/amx_emu), which executes the
// very bytes the generator emitted, one emulator per thread with its own
// tile state -- so the per-thread configure / release logic of the driver
// is exercised as on hardware.
//
// ANVIL_TEST_AMX (read by tests/main.cpp): "auto" (native when usable, else
// emulated), "emulated", or unset (the normal backend choice).  When set,
// select_lp_backend returns this backend for bf16 and u8s8.
#pragma once
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "lowp/lp_backend.h"

namespace amxt {

enum class mode { native, emulated };

// Whether this process can run AMX natively.
bool native_usable();
// The backend for `m` (native: anvil's own jit_amx_lp_backend()).
const anvil::lowp::lp_backend &backend(mode m);
// "native" / "emulated".
const char *mode_name(mode m);
// The mode ANVIL_TEST_AMX asks for; false when unset.
bool mode_from_env(mode *m);

// Runs one kernel with its tile configuration on this thread, natively or
// emulated (the kernel-level tests).
void run_kernel(mode m, const anvil::cache::kernel_ptr &k, const void *tile_config,
                const void *args);
// Releases this thread's tiles (native or emulated state).
void release_tiles(mode m);

// Failures the emulated backend met inside the driver (where it cannot
// throw): unmodelled instructions, faults, a kernel called with another
// configuration loaded than its own.  Tests check this is empty.
std::vector<std::string> take_emulation_errors();

// Instructions and tile dot products the emulators of all threads ran.
uint64_t emulated_tile_ops();

}  // namespace amxt
