// AMX runtime: the Linux permission to use tile data, and each thread's
// tile configuration.
//
// Linux enables the (8 KiB) XTILEDATA state per process only on request
// (arch_prctl ARCH_REQ_XCOMP_PERM); a tile instruction without it faults.
// The request is made once, the first time an AMX backend is asked for; if
// it is refused (or the kernel predates it) AMX stays off and anvil-info
// prints the reason.
//
// Tile configuration is per thread.  configure() loads a 64-byte palette
// only when it differs from what this thread loaded last (kernels of one
// shape run back to back without reloading); release() drops the tile state
// when a thread leaves anvil's work, so a caller's pool thread does not keep
// 8 KiB of dirty state alive (and the next configure() reloads).  Both run
// tiny JIT stubs (ldtilecfg / tilerelease), so tests can execute the same
// bytes in the AMX emulator.
#pragma once
#include <string>

#include "anvil/anvil.h"
#include "cache/kernel_cache.h"

namespace anvil::jit::amx {

struct availability {
    bool usable = false;  // CPU has AMX tile + bf16 + int8 and the kernel allowed XTILEDATA
    std::string reason;   // why not (or "usable")
};

// Asks the kernel once (thread-safe); later calls return the first answer.
const availability &request_permission();

// This thread's tile configuration: `cfg` (64 bytes, static storage: the
// pointer identifies it) loaded unless it is the current one.
void configure(const void *cfg);
// Releases this thread's tile state if it holds any.
void release();

// The stubs configure() and release() call: void stub(const void *cfg) /
// void stub(): ldtilecfg [rdi]; ret  and  tilerelease; ret.
anvil_status_t config_stub(cache::kernel_ptr *out);
anvil_status_t release_stub(cache::kernel_ptr *out);

}  // namespace anvil::jit::amx
