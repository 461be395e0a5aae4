// amx_emulator: runs the machine code of one JIT kernel instruction by
// instruction, so that kernels using Intel AMX (tile) instructions can be
// tested on a CPU without AMX.
//
// The emulator decodes the real bytes (Zydis) and models a deliberately
// small x86-64 subset: the general-purpose instructions a JIT kernel's loop
// and address arithmetic need, the AVX-512 moves its tail copies need, and
// the AMX palette-1 instructions (ldtilecfg, tileloadd, tdp*, ...).  Every
// other instruction or operand form throws amx_emu_error naming the
// instruction: a kernel that needs more has to be modelled explicitly, never
// silently mis-emulated.
//
// Memory operands address host memory directly: the kernel is given real
// pointers, and the emulated stack is a buffer the emulator owns.
//
// Test-only code (tests/amx_emu/README.md lists what is modelled).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace anvil::test {

// Anything the emulator cannot or must not run: an unmodelled instruction,
// a fault the hardware would raise (#UD / #GP for bad tile shapes, a
// misaligned aligned move), a broken calling convention, a runaway loop.
class amx_emu_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class amx_emulator {
public:
    amx_emulator();  // allocates its own 256 KiB stack
    ~amx_emulator();
    amx_emulator(const amx_emulator &) = delete;
    amx_emulator &operator=(const amx_emulator &) = delete;

    // Executes the System V x86-64 function whose code starts at `code`
    // (`size` bytes of readable host memory) with rdi = arg0, rsi = arg1,
    // rdx = arg2, until it returns to the return address the emulator pushed.
    // Execution must stay inside [code, code + size).  At entry every other
    // register holds garbage; at return rsp must be back to its entry value
    // + 8 (the return address popped) and rbx, rbp, r12..r15 must hold their
    // entry values.  Throws amx_emu_error on anything the class comment lists.
    void call(const void *code, size_t size, uint64_t arg0 = 0, uint64_t arg1 = 0,
              uint64_t arg2 = 0);

    // Tile state persists between calls, like a thread's AMX state: a
    // configuration ldtilecfg loaded in one call is used by the next.
    bool tiles_configured() const;
    const uint8_t *tile_config() const;  // the 64 bytes last loaded (valid when configured)
    // One tile's 16 rows x 64 bytes as the hardware holds them (rows and
    // columns beyond the configured shape read zero).
    const uint8_t *tile_data(int tmm) const;
    void reset_tiles();  // as tilerelease

    uint64_t instructions_executed() const;  // total since construction
    // Executed instructions per mnemonic (Zydis spelling, lower case), e.g.
    // "tdpbf16ps" -> 12; totals since construction.
    const std::map<std::string, uint64_t> &mnemonic_counts() const;

    uint64_t max_instructions() const;  // per call; default 2e9
    void set_max_instructions(uint64_t n);

    // Register state after the last call (for tests).  gpr: x86 encoding
    // order, 0 = rax, 1 = rcx, 2 = rdx, 3 = rbx, 4 = rsp, 5 = rbp, 6 = rsi,
    // 7 = rdi, 8..15 = r8..r15.
    uint64_t gpr(int reg) const;
    uint64_t rax() const { return gpr(0); }
    const uint8_t *zmm(int reg) const;  // 64 bytes
    uint64_t kreg(int reg) const;

private:
    struct state;  // the emulated machine, stack and counters (amx_emulator.cpp)
    std::unique_ptr<state> s_;
};

}  // namespace anvil::test
