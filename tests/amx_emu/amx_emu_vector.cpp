// The vector subset tail copies need: opmask moves (kmov*), full-register
// and masked vector moves (vmovdqu*, vmovdqa*, vmovups/aps/upd/apd) and
// the xor zeroing idiom (vpxor*, vxorps/pd), on 32 zmm registers and 8
// opmask registers.
//
// Masked moves follow the SDM per element: an element whose mask bit is
// clear is neither read nor written in memory (fault suppression: a tail
// load may end exactly at the end of a buffer), and in a register it keeps
// its value ({k}, merging) or becomes zero ({k}{z}).  Every VEX/EVEX write
// to an xmm/ymm register zeroes the register's bits above the vector length.
#include "amx_emu_machine.h"

namespace anvil::test::emu {
namespace {

// zmm number of an xmm/ymm/zmm register operand; *bytes = its length.
int vector_register(const machine &m, const insn &in, const ZydisDecodedOperand &op,
                    int *bytes) {
    if (op.type != ZYDIS_OPERAND_TYPE_REGISTER) m.unmodelled(in, "vector operand form");
    const ZydisRegister r = op.reg.value;
    switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_XMM: *bytes = 16; return r - ZYDIS_REGISTER_XMM0;
    case ZYDIS_REGCLASS_YMM: *bytes = 32; return r - ZYDIS_REGISTER_YMM0;
    case ZYDIS_REGCLASS_ZMM: *bytes = 64; return r - ZYDIS_REGISTER_ZMM0;
    default: m.unmodelled(in, std::string("register ") + ZydisRegisterGetString(r));
    }
}

int mask_register(const machine &m, const insn &in, ZydisRegister r) {
    if (ZydisRegisterGetClass(r) != ZYDIS_REGCLASS_MASK)
        m.unmodelled(in, std::string("register ") + ZydisRegisterGetString(r));
    return r - ZYDIS_REGISTER_K0;
}

// The instruction's write mask: which elements are enabled and whether
// disabled ones are zeroed.  Unmasked (VEX, or EVEX with k0): all enabled.
struct write_mask {
    uint64_t bits = ~0ull;
    bool zeroing = false;
    bool masked = false;
};

write_mask mask_of(const machine &m, const insn &in) {
    write_mask w;
    if (!(in.d.attributes & ZYDIS_ATTRIB_HAS_EVEX)) return w;
    switch (in.d.avx.mask.mode) {
    case ZYDIS_MASK_MODE_DISABLED: return w;
    case ZYDIS_MASK_MODE_MERGING: break;
    case ZYDIS_MASK_MODE_ZEROING: w.zeroing = true; break;
    default: m.unmodelled(in, "mask mode");
    }
    w.masked = true;
    w.bits = m.k[mask_register(m, in, in.d.avx.mask.reg)];
    return w;
}

// Element size in bytes of a move/xor mnemonic (its masking granularity),
// 0 if the mnemonic is not one of this file's; *aligned for the aligned
// moves (#GP on a misaligned memory operand).
int element_bytes(ZydisMnemonic mn, bool *aligned) {
    *aligned = false;
    switch (mn) {
    case ZYDIS_MNEMONIC_VMOVDQU8: return 1;
    case ZYDIS_MNEMONIC_VMOVDQU16: return 2;
    case ZYDIS_MNEMONIC_VMOVDQU32:
    case ZYDIS_MNEMONIC_VMOVUPS: return 4;
    case ZYDIS_MNEMONIC_VMOVDQU64:
    case ZYDIS_MNEMONIC_VMOVUPD: return 8;
    case ZYDIS_MNEMONIC_VMOVDQU: return 16;  // VEX only: never masked
    case ZYDIS_MNEMONIC_VMOVAPS:
    case ZYDIS_MNEMONIC_VMOVDQA32: *aligned = true; return 4;
    case ZYDIS_MNEMONIC_VMOVAPD:
    case ZYDIS_MNEMONIC_VMOVDQA64: *aligned = true; return 8;
    case ZYDIS_MNEMONIC_VMOVDQA: *aligned = true; return 16;
    default: return 0;
    }
}

bool is_vex_or_evex(const insn &in) {
    return in.d.attributes & (ZYDIS_ATTRIB_HAS_VEX | ZYDIS_ATTRIB_HAS_EVEX);
}

void exec_move(machine &m, const insn &in, int esize, bool aligned) {
    if (in.nval != 2) m.unmodelled(in, "operand count");
    const write_mask wm = mask_of(m, in);
    const auto &dst = in.v(0), &src = in.v(1);
    if (dst.type == ZYDIS_OPERAND_TYPE_REGISTER) {
        int bytes = 0;
        const int d = vector_register(m, in, dst, &bytes);
        alignas(64) uint8_t out[64];
        std::memcpy(out, m.zmm[d], 64);  // merging keeps disabled elements
        const uint8_t *from = nullptr;
        uint64_t addr = 0;
        if (src.type == ZYDIS_OPERAND_TYPE_MEMORY) {
            addr = effective_address(m, in, src);
            if (aligned && addr % uint64_t(bytes))
                m.fail(in, "misaligned memory operand of an aligned move (#GP)");
        } else {
            int sbytes = 0;
            from = m.zmm[vector_register(m, in, src, &sbytes)];
            if (sbytes != bytes) m.unmodelled(in, "mixed vector lengths");
        }
        for (int e = 0; e < bytes / esize; ++e) {
            uint8_t *o = out + e * esize;
            if ((wm.bits >> e) & 1) {
                // Only enabled elements are read: fault suppression.
                if (from)
                    std::memcpy(o, from + e * esize, size_t(esize));
                else
                    load_bytes(o, addr + uint64_t(e * esize), size_t(esize));
            } else if (wm.zeroing) {
                std::memset(o, 0, size_t(esize));
            }
        }
        std::memset(out + bytes, 0, size_t(64 - bytes));  // VEX/EVEX zero the upper bits
        std::memcpy(m.zmm[d], out, 64);
        return;
    }
    if (dst.type != ZYDIS_OPERAND_TYPE_MEMORY) m.unmodelled(in, "destination form");
    if (wm.zeroing) m.fail(in, "zero-masking with a memory destination (#UD)");
    int bytes = 0;
    const uint8_t *from = m.zmm[vector_register(m, in, src, &bytes)];
    const uint64_t addr = effective_address(m, in, dst);
    if (aligned && addr % uint64_t(bytes))
        m.fail(in, "misaligned memory operand of an aligned move (#GP)");
    if (!wm.masked) {
        store_bytes(addr, from, size_t(bytes));
        return;
    }
    for (int e = 0; e < bytes / esize; ++e)
        if ((wm.bits >> e) & 1)
            store_bytes(addr + uint64_t(e * esize), from + e * esize, size_t(esize));
}

void exec_xor(machine &m, const insn &in, int esize) {
    if (in.nval != 3) m.unmodelled(in, "operand count");
    int bytes = 0, b1 = 0, b2 = 0;
    const int d = vector_register(m, in, in.v(0), &bytes);
    if (in.v(2).type != ZYDIS_OPERAND_TYPE_REGISTER) m.unmodelled(in, "memory source");
    const int s1 = vector_register(m, in, in.v(1), &b1);
    const int s2 = vector_register(m, in, in.v(2), &b2);
    if (b1 != bytes || b2 != bytes) m.unmodelled(in, "mixed vector lengths");
    const write_mask wm = mask_of(m, in);
    alignas(64) uint8_t out[64];
    std::memcpy(out, m.zmm[d], 64);
    for (int e = 0; e < bytes / esize; ++e) {
        for (int b = e * esize; b < (e + 1) * esize; ++b) {
            if ((wm.bits >> e) & 1)
                out[b] = uint8_t(m.zmm[s1][b] ^ m.zmm[s2][b]);
            else if (wm.zeroing)
                out[b] = 0;
        }
    }
    std::memset(out + bytes, 0, size_t(64 - bytes));
    std::memcpy(m.zmm[d], out, 64);
}

void exec_kmov(machine &m, const insn &in, int bits) {
    if (in.nval != 2) m.unmodelled(in, "operand count");
    const auto &dst = in.v(0), &src = in.v(1);
    uint64_t v = 0;
    if (src.type == ZYDIS_OPERAND_TYPE_REGISTER &&
        ZydisRegisterGetClass(src.reg.value) == ZYDIS_REGCLASS_MASK)
        v = m.k[mask_register(m, in, src.reg.value)];
    else
        v = read_operand(m, in, src, src.type == ZYDIS_OPERAND_TYPE_MEMORY ? bits
                                                                             : gpr_width(src.reg.value));
    v &= width_mask(bits);
    if (dst.type == ZYDIS_OPERAND_TYPE_REGISTER &&
        ZydisRegisterGetClass(dst.reg.value) == ZYDIS_REGCLASS_MASK)
        m.k[mask_register(m, in, dst.reg.value)] = v;  // bits above `bits` become zero
    else if (dst.type == ZYDIS_OPERAND_TYPE_MEMORY)
        write_operand(m, in, dst, bits, v);
    else
        write_operand(m, in, dst, gpr_width(dst.reg.value), v);  // r32 zero-extends
}

}  // namespace

bool exec_vector(machine &m, const insn &in) {
    const ZydisMnemonic mn = in.d.mnemonic;
    switch (mn) {
    case ZYDIS_MNEMONIC_KMOVB: exec_kmov(m, in, 8); return true;
    case ZYDIS_MNEMONIC_KMOVW: exec_kmov(m, in, 16); return true;
    case ZYDIS_MNEMONIC_KMOVD: exec_kmov(m, in, 32); return true;
    case ZYDIS_MNEMONIC_KMOVQ: exec_kmov(m, in, 64); return true;
    case ZYDIS_MNEMONIC_VPXORD:
    case ZYDIS_MNEMONIC_VXORPS: exec_xor(m, in, 4); return true;
    case ZYDIS_MNEMONIC_VPXORQ:
    case ZYDIS_MNEMONIC_VXORPD: exec_xor(m, in, 8); return true;
    case ZYDIS_MNEMONIC_VPXOR: exec_xor(m, in, 16); return true;  // VEX only
    case ZYDIS_MNEMONIC_VZEROUPPER:
        // Zeroes bits 128 and up of zmm0..zmm15 (zmm16..31 are untouched).
        for (int r = 0; r < 16; ++r) std::memset(m.zmm[r] + 16, 0, 48);
        return true;
    default: break;
    }
    bool aligned = false;
    const int esize = element_bytes(mn, &aligned);
    if (esize == 0) return false;
    if (!is_vex_or_evex(in)) m.unmodelled(in, "legacy SSE encoding");
    if (in.d.avx.broadcast.mode != ZYDIS_BROADCAST_MODE_INVALID) m.unmodelled(in, "broadcast");
    exec_move(m, in, esize, aligned);
    return true;
}

}  // namespace anvil::test::emu
