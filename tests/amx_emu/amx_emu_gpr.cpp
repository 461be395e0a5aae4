// General-purpose instructions: moves, integer arithmetic with the flags the
// SDM defines for each (CF, PF, ZF, SF, OF; AF is not modelled), stack,
// branches, conditional moves and the hint instructions (nop, endbr64,
// prefetch*).
//
// Flags an instruction leaves "undefined" in the SDM are marked undefined
// (machine::flags_defined) rather than given some value: a jcc or cmovcc
// that reads one throws, because a real CPU may produce either value.
#include "amx_emu_machine.h"

namespace anvil::test::emu {
namespace {

int64_t sign_extend(uint64_t v, int bits) {
    if (bits >= 64) return static_cast<int64_t>(v);
    const uint64_t sign = 1ull << (bits - 1);
    v &= width_mask(bits);
    return static_cast<int64_t>((v ^ sign) - sign);
}

uint64_t msb(uint64_t v, int bits) { return (v >> (bits - 1)) & 1; }

// ZF, SF and PF of a result (PF: even number of set bits in its low byte).
uint32_t szp(uint64_t r, int bits) {
    r &= width_mask(bits);
    uint32_t f = 0;
    if (r == 0) f |= kZF;
    if (msb(r, bits)) f |= kSF;
    if (!(__builtin_popcount(unsigned(r & 0xff)) & 1)) f |= kPF;
    return f;
}

// Sets the flags in `written` to the bits of `values`, marks the flags in
// `undefined` undefined; others keep their value and definedness.
void set_flags(machine &m, uint32_t values, uint32_t written, uint32_t undefined = 0) {
    m.flags = (m.flags & ~written) | (values & written);
    m.flags_defined = (m.flags_defined | written) & ~undefined;
}

uint32_t add_flags(uint64_t a, uint64_t b, uint64_t r, int bits) {
    uint32_t f = szp(r, bits);
    if (r < a) f |= kCF;  // a, b, r already cut to `bits`
    if (msb(~(a ^ b) & (a ^ r), bits)) f |= kOF;
    return f;
}

uint32_t sub_flags(uint64_t a, uint64_t b, uint64_t r, int bits) {
    uint32_t f = szp(r, bits);
    if (a < b) f |= kCF;
    if (msb((a ^ b) & (a ^ r), bits)) f |= kOF;
    return f;
}

// Condition code (the low nibble of the Jcc / CMOVcc opcode) of a
// mnemonic; -1 if it is neither.
int condition_code(ZydisMnemonic mn) {
    switch (mn) {
    case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_CMOVO: return 0x0;
    case ZYDIS_MNEMONIC_JNO: case ZYDIS_MNEMONIC_CMOVNO: return 0x1;
    case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_CMOVB: return 0x2;
    case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_CMOVNB: return 0x3;
    case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_CMOVZ: return 0x4;
    case ZYDIS_MNEMONIC_JNZ: case ZYDIS_MNEMONIC_CMOVNZ: return 0x5;
    case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_CMOVBE: return 0x6;
    case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_CMOVNBE: return 0x7;
    case ZYDIS_MNEMONIC_JS: case ZYDIS_MNEMONIC_CMOVS: return 0x8;
    case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_CMOVNS: return 0x9;
    case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_CMOVP: return 0xa;
    case ZYDIS_MNEMONIC_JNP: case ZYDIS_MNEMONIC_CMOVNP: return 0xb;
    case ZYDIS_MNEMONIC_JL: case ZYDIS_MNEMONIC_CMOVL: return 0xc;
    case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_CMOVNL: return 0xd;
    case ZYDIS_MNEMONIC_JLE: case ZYDIS_MNEMONIC_CMOVLE: return 0xe;
    case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_CMOVNLE: return 0xf;
    default: return -1;
    }
}

bool is_jcc(ZydisMnemonic mn) { return mn >= ZYDIS_MNEMONIC_JB && mn <= ZYDIS_MNEMONIC_JZ; }

bool condition(const machine &m, const insn &in, int cc) {
    static const uint32_t reads[8] = {kOF, kCF, kZF, kCF | kZF, kSF, kPF, kSF | kOF,
                                      kZF | kSF | kOF};
    const uint32_t need = reads[cc >> 1];
    if ((m.flags_defined & need) != need)
        m.fail(in, "reads a flag that is undefined here (not written in this call, or left "
                   "undefined by the instruction that last wrote it)");
    const bool cf = m.flags & kCF, zf = m.flags & kZF, sf = m.flags & kSF;
    const bool of = m.flags & kOF, pf = m.flags & kPF;
    bool r = false;
    switch (cc >> 1) {
    case 0: r = of; break;
    case 1: r = cf; break;
    case 2: r = zf; break;
    case 3: r = cf || zf; break;
    case 4: r = sf; break;
    case 5: r = pf; break;
    case 6: r = sf != of; break;
    case 7: r = zf || (sf != of); break;
    }
    return (cc & 1) ? !r : r;
}

void push64(machine &m, const insn &in, uint64_t v) {
    const uint64_t sp = m.gpr[4] - 8;
    if (sp < m.stack_lo || sp + 8 > m.stack_hi) m.fail(in, "push outside the emulator's stack");
    store_bytes(sp, &v, 8);
    m.gpr[4] = sp;
}

uint64_t pop64(machine &m, const insn &in) {
    const uint64_t sp = m.gpr[4];
    if (sp < m.stack_lo || sp + 8 > m.stack_hi) m.fail(in, "pop outside the emulator's stack");
    uint64_t v = 0;
    load_bytes(&v, sp, 8);
    m.gpr[4] = sp + 8;
    return v;
}

// Only GPR and memory destinations / sources are modelled here; a vector,
// mask or segment register operand throws in read_gpr / write_gpr.
void require_operands(const machine &m, const insn &in, int n) {
    if (in.nval != n) m.unmodelled(in, "operand count");
}

void exec_shift(machine &m, const insn &in) {
    require_operands(m, in, 2);
    const auto &dst = in.v(0);
    const int w = dst.size;
    const uint64_t a = read_operand(m, in, dst, w);
    const unsigned count = unsigned(read_operand(m, in, in.v(1), 8)) & (w == 64 ? 63 : 31);
    if (count == 0) {
        // Flags unaffected; the destination is still written (a 32-bit
        // register is zero-extended).
        write_operand(m, in, dst, w, a);
        return;
    }
    uint64_t r = 0;
    bool cf = false, of = false;
    bool cf_defined = true;
    switch (in.d.mnemonic) {
    case ZYDIS_MNEMONIC_SHL:
        r = count >= 64 ? 0 : (a << count) & width_mask(w);
        cf_defined = int(count) < w;  // SDM: undefined for count >= operand size
        cf = cf_defined && ((a >> (w - int(count))) & 1);
        of = msb(r, w) != uint64_t(cf);
        break;
    case ZYDIS_MNEMONIC_SHR:
        r = count >= 64 ? 0 : a >> count;
        cf_defined = int(count) < w;
        cf = cf_defined && ((a >> (count - 1)) & 1);
        of = msb(a, w);
        break;
    default: {  // SAR
        const int64_t s = sign_extend(a, w);
        const unsigned c = count > 63 ? 63 : count;
        r = static_cast<uint64_t>(s >> c) & width_mask(w);
        cf = (static_cast<uint64_t>(s >> (count - 1 > 63 ? 63 : count - 1))) & 1;
        of = false;
        break;
    }
    }
    write_operand(m, in, dst, w, r);
    const uint32_t f = szp(r, w) | (cf ? uint32_t(kCF) : 0u) | (of ? uint32_t(kOF) : 0u);
    uint32_t undefined = 0;
    if (!cf_defined) undefined |= kCF;
    if (count != 1) undefined |= kOF;  // OF is defined for 1-bit shifts only
    set_flags(m, f, kAllFlags, undefined);
}

}  // namespace

bool exec_gpr(machine &m, const insn &in) {
    const ZydisMnemonic mn = in.d.mnemonic;
    const int cc = condition_code(mn);
    if (cc >= 0) {
        if (is_jcc(mn)) {
            require_operands(m, in, 1);
            const auto &t = in.v(0);
            if (t.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !t.imm.is_relative)
                m.unmodelled(in, "jcc target form");
            if (condition(m, in, cc)) m.rip = in.next + t.imm.value.u;
        } else {  // cmovcc
            require_operands(m, in, 2);
            const int w = in.v(0).size;
            // The source is read (and may fault) whatever the condition.
            const uint64_t src = read_operand(m, in, in.v(1), w);
            const uint64_t old = read_operand(m, in, in.v(0), w);
            // A 32-bit destination is zero-extended even when nothing moves.
            write_operand(m, in, in.v(0), w, condition(m, in, cc) ? src : old);
        }
        return true;
    }

    switch (mn) {
    case ZYDIS_MNEMONIC_NOP:
    case ZYDIS_MNEMONIC_ENDBR64: return true;  // the operands of a long nop are never used
    case ZYDIS_MNEMONIC_PREFETCHT0:
    case ZYDIS_MNEMONIC_PREFETCHT1:
    case ZYDIS_MNEMONIC_PREFETCHT2:
    case ZYDIS_MNEMONIC_PREFETCHNTA:
    case ZYDIS_MNEMONIC_PREFETCHW:
        // A hint: never faults, so the address is only computed (which
        // checks its form), not dereferenced.
        require_operands(m, in, 1);
        (void)effective_address(m, in, in.v(0));
        return true;

    case ZYDIS_MNEMONIC_MOV: {
        require_operands(m, in, 2);
        const int w = in.v(0).size;
        write_operand(m, in, in.v(0), w, read_operand(m, in, in.v(1), w));
        return true;
    }
    case ZYDIS_MNEMONIC_MOVZX: {
        require_operands(m, in, 2);
        write_operand(m, in, in.v(0), in.v(0).size, read_operand(m, in, in.v(1), in.v(1).size));
        return true;
    }
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD: {
        require_operands(m, in, 2);
        const int sw = in.v(1).size;
        const uint64_t v = static_cast<uint64_t>(sign_extend(read_operand(m, in, in.v(1), sw), sw));
        write_operand(m, in, in.v(0), in.v(0).size, v & width_mask(in.v(0).size));
        return true;
    }
    case ZYDIS_MNEMONIC_LEA: {
        require_operands(m, in, 2);
        const int w = in.v(0).size;
        write_operand(m, in, in.v(0), w, effective_address(m, in, in.v(1)) & width_mask(w));
        return true;
    }

    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_CMP: {
        require_operands(m, in, 2);
        const int w = in.v(0).size;
        const uint64_t a = read_operand(m, in, in.v(0), w);
        const uint64_t b = read_operand(m, in, in.v(1), w);
        const bool add = mn == ZYDIS_MNEMONIC_ADD;
        const uint64_t r = (add ? a + b : a - b) & width_mask(w);
        if (mn != ZYDIS_MNEMONIC_CMP) write_operand(m, in, in.v(0), w, r);
        set_flags(m, add ? add_flags(a, b, r, w) : sub_flags(a, b, r, w), kAllFlags);
        return true;
    }
    case ZYDIS_MNEMONIC_INC:
    case ZYDIS_MNEMONIC_DEC: {
        require_operands(m, in, 1);
        const int w = in.v(0).size;
        const uint64_t a = read_operand(m, in, in.v(0), w);
        const bool inc = mn == ZYDIS_MNEMONIC_INC;
        const uint64_t r = (inc ? a + 1 : a - 1) & width_mask(w);
        write_operand(m, in, in.v(0), w, r);
        // CF is not affected.
        set_flags(m, inc ? add_flags(a, 1, r, w) : sub_flags(a, 1, r, w), kAllFlags & ~kCF);
        return true;
    }
    case ZYDIS_MNEMONIC_NEG: {
        require_operands(m, in, 1);
        const int w = in.v(0).size;
        const uint64_t a = read_operand(m, in, in.v(0), w);
        const uint64_t r = (0 - a) & width_mask(w);
        write_operand(m, in, in.v(0), w, r);
        set_flags(m, sub_flags(0, a, r, w), kAllFlags);  // CF = (a != 0)
        return true;
    }
    case ZYDIS_MNEMONIC_NOT: {
        require_operands(m, in, 1);
        const int w = in.v(0).size;
        write_operand(m, in, in.v(0), w, ~read_operand(m, in, in.v(0), w) & width_mask(w));
        return true;  // no flags
    }
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_TEST: {
        require_operands(m, in, 2);
        const int w = in.v(0).size;
        const uint64_t a = read_operand(m, in, in.v(0), w);
        const uint64_t b = read_operand(m, in, in.v(1), w);
        uint64_t r = mn == ZYDIS_MNEMONIC_OR ? a | b : mn == ZYDIS_MNEMONIC_XOR ? a ^ b : a & b;
        if (mn != ZYDIS_MNEMONIC_TEST) write_operand(m, in, in.v(0), w, r);
        set_flags(m, szp(r, w), kAllFlags);  // CF = OF = 0
        return true;
    }
    case ZYDIS_MNEMONIC_IMUL: {
        // 2-operand (dst *= src) and 3-operand (dst = src * imm) forms; the
        // 1-operand form (rdx:rax) is not modelled.
        if (in.nval != 2 && in.nval != 3) m.unmodelled(in, "one-operand imul");
        const int w = in.v(0).size;
        const auto &s1 = in.nval == 2 ? in.v(0) : in.v(1);
        const auto &s2 = in.nval == 2 ? in.v(1) : in.v(2);
        const __int128 a = sign_extend(read_operand(m, in, s1, w), w);
        const __int128 b = sign_extend(read_operand(m, in, s2, w), w);
        const __int128 p = a * b;
        const uint64_t r = static_cast<uint64_t>(p) & width_mask(w);
        write_operand(m, in, in.v(0), w, r);
        // CF = OF = the product does not fit the destination; SF, ZF, PF
        // are undefined.
        const bool overflow = __int128(sign_extend(r, w)) != p;
        set_flags(m, overflow ? (kCF | kOF) : 0, kCF | kOF, kSF | kZF | kPF);
        return true;
    }
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR: exec_shift(m, in); return true;

    case ZYDIS_MNEMONIC_PUSH: {
        require_operands(m, in, 1);
        if (in.d.operand_width != 64) m.unmodelled(in, "16-bit push");
        push64(m, in, read_operand(m, in, in.v(0), 64));
        return true;
    }
    case ZYDIS_MNEMONIC_POP: {
        require_operands(m, in, 1);
        if (in.d.operand_width != 64 || in.v(0).type != ZYDIS_OPERAND_TYPE_REGISTER)
            m.unmodelled(in, "pop form");
        write_gpr(m, in, in.v(0).reg.value, pop64(m, in));
        return true;
    }
    case ZYDIS_MNEMONIC_RET: {
        if (in.d.attributes & ZYDIS_ATTRIB_HAS_REP) m.unmodelled(in, "rep ret");
        const uint64_t target = pop64(m, in);
        if (in.nval == 1) m.gpr[4] += in.v(0).imm.value.u & 0xffff;  // ret imm16
        if (target == m.return_address)
            m.returned = true;
        else
            m.rip = target;  // the main loop checks it is inside the code
        return true;
    }
    case ZYDIS_MNEMONIC_JMP: {
        require_operands(m, in, 1);
        const auto &t = in.v(0);
        if (t.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !t.imm.is_relative)
            m.unmodelled(in, "indirect jmp");
        m.rip = in.next + t.imm.value.u;
        return true;
    }
    default: return false;
    }
}

}  // namespace anvil::test::emu
