// Register and memory operands of general-purpose instructions: register
// numbering, partial-register writes, effective addresses.
#include "amx_emu_machine.h"

namespace anvil::test::emu {

int gpr_number(ZydisRegister r, bool *high8) {
    *high8 = false;
    if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15) return r - ZYDIS_REGISTER_RAX;
    if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) return r - ZYDIS_REGISTER_EAX;
    if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W) return r - ZYDIS_REGISTER_AX;
    if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_BL) return r - ZYDIS_REGISTER_AL;
    if (r >= ZYDIS_REGISTER_AH && r <= ZYDIS_REGISTER_BH) {
        // ah, ch, dh, bh: bits 8..15 of rax, rcx, rdx, rbx.
        *high8 = true;
        return r - ZYDIS_REGISTER_AH;
    }
    if (r >= ZYDIS_REGISTER_SPL && r <= ZYDIS_REGISTER_DIL) return 4 + (r - ZYDIS_REGISTER_SPL);
    if (r >= ZYDIS_REGISTER_R8B && r <= ZYDIS_REGISTER_R15B) return 8 + (r - ZYDIS_REGISTER_R8B);
    return -1;
}

int gpr_width(ZydisRegister r) {
    switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8: return 8;
    case ZYDIS_REGCLASS_GPR16: return 16;
    case ZYDIS_REGCLASS_GPR32: return 32;
    case ZYDIS_REGCLASS_GPR64: return 64;
    default: return 0;
    }
}

uint64_t read_gpr(const machine &m, const insn &in, ZydisRegister r) {
    bool high8 = false;
    const int n = gpr_number(r, &high8);
    if (n < 0)
        m.unmodelled(in, std::string("register operand ") + ZydisRegisterGetString(r));
    if (high8) return (m.gpr[n] >> 8) & 0xff;
    return m.gpr[n] & width_mask(gpr_width(r));
}

void write_gpr(machine &m, const insn &in, ZydisRegister r, uint64_t value) {
    bool high8 = false;
    const int n = gpr_number(r, &high8);
    if (n < 0)
        m.unmodelled(in, std::string("register operand ") + ZydisRegisterGetString(r));
    if (high8) {
        m.gpr[n] = (m.gpr[n] & ~0xff00ull) | ((value & 0xff) << 8);
        return;
    }
    switch (gpr_width(r)) {
    case 64: m.gpr[n] = value; break;
    case 32: m.gpr[n] = value & 0xffffffffull; break;  // zero-extends to 64 bits
    case 16: m.gpr[n] = (m.gpr[n] & ~0xffffull) | (value & 0xffff); break;
    default: m.gpr[n] = (m.gpr[n] & ~0xffull) | (value & 0xff); break;
    }
}

uint64_t effective_address(const machine &m, const insn &in, const ZydisDecodedOperand &op) {
    if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) m.fail(in, "internal: operand is not memory");
    const ZydisDecodedOperandMem &mem = op.mem;
    if (mem.type == ZYDIS_MEMOP_TYPE_VSIB) m.unmodelled(in, "VSIB addressing");
    // fs/gs would address thread-local storage: no JIT kernel should.
    if (mem.segment == ZYDIS_REGISTER_FS || mem.segment == ZYDIS_REGISTER_GS)
        m.unmodelled(in, "fs/gs segment");
    if (in.d.address_width != 64) m.unmodelled(in, "32-bit address size");
    uint64_t a = static_cast<uint64_t>(mem.disp.value);
    if (mem.base == ZYDIS_REGISTER_RIP) {
        a += in.next;
    } else if (mem.base != ZYDIS_REGISTER_NONE) {
        if (ZydisRegisterGetClass(mem.base) != ZYDIS_REGCLASS_GPR64)
            m.unmodelled(in, "base register class");
        a += read_gpr(m, in, mem.base);
    }
    if (mem.index != ZYDIS_REGISTER_NONE) {
        if (ZydisRegisterGetClass(mem.index) != ZYDIS_REGCLASS_GPR64)
            m.unmodelled(in, "index register class");
        a += read_gpr(m, in, mem.index) * (mem.scale ? mem.scale : 1);
    }
    return a;
}

uint64_t read_operand(const machine &m, const insn &in, const ZydisDecodedOperand &op, int bits) {
    switch (op.type) {
    case ZYDIS_OPERAND_TYPE_REGISTER: return read_gpr(m, in, op.reg.value) & width_mask(bits);
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        // Zydis has already sign-extended signed immediates to 64 bits.
        return op.imm.value.u & width_mask(bits);
    case ZYDIS_OPERAND_TYPE_MEMORY: {
        const uint64_t a = effective_address(m, in, op);
        uint64_t v = 0;  // little-endian host: the low bytes are the value
        load_bytes(&v, a, size_t(bits / 8));
        return v;
    }
    default: m.unmodelled(in, "operand type");
    }
}

void write_operand(machine &m, const insn &in, const ZydisDecodedOperand &op, int bits,
                   uint64_t value) {
    switch (op.type) {
    case ZYDIS_OPERAND_TYPE_REGISTER: write_gpr(m, in, op.reg.value, value); return;
    case ZYDIS_OPERAND_TYPE_MEMORY: {
        const uint64_t a = effective_address(m, in, op);
        store_bytes(a, &value, size_t(bits / 8));
        return;
    }
    default: m.unmodelled(in, "destination operand type");
    }
}

}  // namespace anvil::test::emu
