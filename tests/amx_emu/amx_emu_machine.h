// The emulated machine state and the helpers every instruction group
// shares.  Internal to tests/amx_emu (the public interface is
// amx_emulator.h, which does not expose Zydis).
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "amx_emulator.h"

namespace anvil::test::emu {

// One decoded instruction and where it sits in host memory.
struct insn {
    ZydisDecodedInstruction d;
    ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
    uint64_t addr = 0;  // host address of its first byte
    uint64_t next = 0;  // host address of the following instruction
    uint8_t bytes[ZYDIS_MAX_INSTRUCTION_LENGTH] = {};  // the encoding it was decoded from
    // The explicit operands in Intel order, without the EVEX opmask operand
    // (Zydis lists {k} as an operand of its own; masking is read from
    // d.avx.mask instead).
    uint8_t val[ZYDIS_MAX_OPERAND_COUNT] = {};
    int nval = 0;
    const ZydisDecodedOperand &v(int i) const { return op[val[i]]; }
};

// RFLAGS bit positions of the modelled flags (AF is not modelled: no
// modelled instruction reads it).
enum : uint32_t {
    kCF = 1u << 0,
    kPF = 1u << 2,
    kZF = 1u << 6,
    kSF = 1u << 7,
    kOF = 1u << 11,
    kAllFlags = kCF | kPF | kZF | kSF | kOF,
};

struct machine {
    // ---- architectural state
    uint64_t gpr[16] = {};  // x86 encoding order (rax, rcx, rdx, rbx, rsp, ...)
    uint64_t rip = 0;
    uint32_t flags = 0;
    // Flags whose value is defined.  A flag an instruction leaves undefined
    // (SDM "undefined", e.g. SF after imul) or that was never written in this
    // call becomes undefined; reading it (jcc, cmovcc) throws: a kernel whose
    // branch depends on it is wrong on some CPU.
    uint32_t flags_defined = 0;
    alignas(64) uint8_t zmm[32][64] = {};
    uint64_t k[8] = {};

    // AMX palette 1: 8 tiles of up to 16 rows x 64 bytes.
    bool tiles_configured = false;
    uint8_t tilecfg[64] = {};
    uint8_t rows[8] = {};
    uint16_t colsb[8] = {};
    alignas(64) uint8_t tile[8][16][64] = {};

    // ---- the call in progress
    const uint8_t *code = nullptr;
    size_t code_size = 0;
    uint64_t stack_lo = 0, stack_hi = 0;  // the emulator's stack buffer
    bool returned = false;                // ret to the emulator's return address
    uint64_t return_address = 0;

    ZydisFormatter formatter;

    machine();

    // "<what>: <instruction text> at code+0x<offset>", as amx_emu_error.
    [[noreturn]] void fail(const insn &in, const std::string &what) const;
    // An instruction or operand form the emulator does not model.
    [[noreturn]] void unmodelled(const insn &in, const std::string &detail = "") const;
    std::string describe(const insn &in) const;
};

// ---- operands (amx_emu_operands.cpp)

// GPR number (0..15, encoding order) of a general-purpose register of any
// width; *high8 is set for ah/ch/dh/bh.  -1 if `r` is not a GPR.
int gpr_number(ZydisRegister r, bool *high8);
// Width in bits of a GPR operand register (8, 16, 32, 64); 0 if not a GPR.
int gpr_width(ZydisRegister r);

uint64_t read_gpr(const machine &m, const insn &in, ZydisRegister r);
// Writes with x86-64 semantics: a 32-bit destination zero-extends into the
// 64-bit register, 8- and 16-bit destinations merge.
void write_gpr(machine &m, const insn &in, ZydisRegister r, uint64_t value);

// The linear address of a memory operand (base + index * scale + disp,
// RIP-relative included).  Throws for segment overrides (fs/gs),
// 32-bit addressing and VSIB.
uint64_t effective_address(const machine &m, const insn &in, const ZydisDecodedOperand &op);

// Reads a GPR, memory (op.size bits) or immediate operand, zero-extended
// to 64 bits (immediates: Zydis' sign-extended value, cut to `bits`).
uint64_t read_operand(const machine &m, const insn &in, const ZydisDecodedOperand &op, int bits);
void write_operand(machine &m, const insn &in, const ZydisDecodedOperand &op, int bits,
                   uint64_t value);

// Host memory access (the kernel's pointers are real host pointers).
inline void load_bytes(void *dst, uint64_t addr, size_t n) {
    std::memcpy(dst, reinterpret_cast<const void *>(addr), n);
}
inline void store_bytes(uint64_t addr, const void *src, size_t n) {
    std::memcpy(reinterpret_cast<void *>(addr), src, n);
}

inline uint64_t width_mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// ---- instruction groups: each returns false when the mnemonic is not its
// own, executes and returns true otherwise (throwing on unmodelled forms).
bool exec_gpr(machine &m, const insn &in);     // amx_emu_gpr.cpp
bool exec_vector(machine &m, const insn &in);  // amx_emu_vector.cpp
bool exec_tiles(machine &m, const insn &in);   // amx_emu_tiles.cpp

// Tile state helpers (amx_emu_tiles.cpp).
void release_tiles(machine &m);

}  // namespace anvil::test::emu
