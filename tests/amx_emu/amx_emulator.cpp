// amx_emulator: the call set-up (System V entry state, the emulator's own
// stack and return address), the fetch-decode-execute loop and the
// calling-convention checks at return.  The instruction groups live in
// amx_emu_gpr.cpp, amx_emu_vector.cpp and amx_emu_tiles.cpp.
#include "amx_emulator.h"

#include <cinttypes>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "amx_emu_machine.h"

namespace anvil::test {
namespace emu {

machine::machine() { ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_INTEL); }

std::string machine::describe(const insn &in) const {
    char text[256] = "?";
    ZydisFormatterFormatInstruction(&formatter, &in.d, in.op, in.d.operand_count_visible, text,
                                    sizeof text, in.addr, nullptr);
    char where[96];
    std::snprintf(where, sizeof where, "` at code+0x%" PRIx64 " (bytes",
                  in.addr - reinterpret_cast<uint64_t>(code));
    std::string s = std::string("`") + text + where;
    for (int b = 0; b < in.d.length; ++b) {
        char hex[4];
        std::snprintf(hex, sizeof hex, " %02x", in.bytes[b]);
        s += hex;
    }
    return s + ")";
}

void machine::fail(const insn &in, const std::string &what) const {
    throw amx_emu_error("amx_emu: " + what + ": " + describe(in));
}

void machine::unmodelled(const insn &in, const std::string &detail) const {
    throw amx_emu_error("amx_emu: unmodelled instruction" +
                        (detail.empty() ? std::string() : " (" + detail + ")") + ": " + describe(in));
}

}  // namespace emu

namespace {

constexpr size_t kStackBytes = 256 * 1024;
// rbx, rbp, r12..r15: callee-saved in the System V ABI (rsp is checked
// separately).
constexpr int kCalleeSaved[] = {3, 5, 12, 13, 14, 15};

uint64_t splitmix64(uint64_t &state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Why the bytes at code+off do not decode.  Encodings Zydis rejects are
// #UD on hardware (e.g. a tile dot product naming one tile twice).
std::string decode_error(ZyanStatus st, uint64_t off) {
    const char *why = "invalid encoding (#UD)";
    if (st == ZYDIS_STATUS_NO_MORE_DATA) why = "an instruction runs past the end of the code";
    else if (st == ZYDIS_STATUS_BAD_REGISTER) why = "invalid register operand combination (#UD)";
    else if (st == ZYDIS_STATUS_INSTRUCTION_TOO_LONG) why = "instruction longer than 15 bytes (#GP)";
    char buf[200];
    std::snprintf(buf, sizeof buf, "amx_emu: cannot decode the bytes at code+0x%" PRIx64 ": %s (Zydis status 0x%x)",
                  off, why, unsigned(st));
    return buf;
}

const char *const kGprNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                   "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

}  // namespace

// Everything the public class hides: the machine, its stack, the counters.
struct amx_emulator::state {
    emu::machine m;
    std::vector<uint8_t> stack = std::vector<uint8_t>(kStackBytes);
    uint64_t executed = 0;
    uint64_t max_instructions = 2000000000ull;
    uint64_t calls = 0;
    std::vector<uint64_t> per_mnemonic = std::vector<uint64_t>(ZYDIS_MNEMONIC_MAX_VALUE + 1);
    std::map<std::string, uint64_t> counts_view;  // built by mnemonic_counts()
    ZydisDecoder decoder;
    // Decoded instructions by host address, kept across calls (kernels run
    // many times); an entry is used only while the bytes there are still
    // the ones it was decoded from.
    std::unordered_map<uint64_t, emu::insn> decoded;

    const emu::insn &fetch(uint64_t addr, uint64_t end) {
        const auto *bytes = reinterpret_cast<const uint8_t *>(addr);
        auto it = decoded.find(addr);
        if (it != decoded.end() && it->second.d.length <= end - addr &&
            std::memcmp(it->second.bytes, bytes, it->second.d.length) == 0)
            return it->second;
        emu::insn in;
        in.addr = addr;
        const ZyanStatus st = ZydisDecoderDecodeFull(&decoder, bytes, size_t(end - addr), &in.d, in.op);
        if (!ZYAN_SUCCESS(st)) throw amx_emu_error(decode_error(st, addr - uint64_t(m.code)));
        in.next = addr + in.d.length;
        std::memcpy(in.bytes, bytes, in.d.length);
        for (int i = 0; i < in.d.operand_count_visible; ++i)
            if (in.op[i].encoding != ZYDIS_OPERAND_ENCODING_MASK) in.val[in.nval++] = uint8_t(i);
        if (decoded.size() >= (1u << 16)) decoded.clear();  // bound the memory
        return decoded.insert_or_assign(addr, in).first->second;
    }
};

amx_emulator::amx_emulator() : s_(new state) {
    ZydisDecoderInit(&s_->decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

amx_emulator::~amx_emulator() = default;

void amx_emulator::call(const void *code, size_t size, uint64_t arg0, uint64_t arg1,
                        uint64_t arg2) {
    emu::machine &m = s_->m;
    state &x = *s_;
    const uint64_t begin = reinterpret_cast<uint64_t>(code), end = begin + size;
    m.code = static_cast<const uint8_t *>(code);
    m.code_size = size;
    m.returned = false;
    m.return_address = reinterpret_cast<uint64_t>(&m.return_address);  // never inside the code

    // Entry state: garbage everywhere (different in every call) except the
    // arguments and rsp, so a kernel that reads a register it never wrote
    // gets a wrong result; the flags are undefined.
    uint64_t seed = 0x5eed0000ull + ++x.calls;
    for (uint64_t &r : m.gpr) r = splitmix64(seed);
    for (uint64_t &k : m.k) k = splitmix64(seed);
    for (auto &z : m.zmm)
        for (int q = 0; q < 8; ++q) {
            const uint64_t v = splitmix64(seed);
            std::memcpy(z + 8 * q, &v, 8);
        }
    m.flags = 0;
    m.flags_defined = 0;
    m.gpr[7] = arg0;  // rdi
    m.gpr[6] = arg1;  // rsi
    m.gpr[2] = arg2;  // rdx
    m.stack_lo = reinterpret_cast<uint64_t>(x.stack.data());
    m.stack_hi = m.stack_lo + x.stack.size();
    // As after a call instruction: the return address at [rsp], and
    // rsp % 16 == 8 (rsp + 8 is 16-byte aligned).
    const uint64_t entry_rsp = ((m.stack_hi - 256) & ~uint64_t(15)) - 8;
    std::memcpy(reinterpret_cast<void *>(entry_rsp), &m.return_address, 8);
    m.gpr[4] = entry_rsp;
    uint64_t saved[6];
    for (int i = 0; i < 6; ++i) saved[i] = m.gpr[kCalleeSaved[i]];

    const emu::insn *last = nullptr;  // the instruction executed last
    uint64_t executed_here = 0;

    m.rip = begin;
    while (!m.returned) {
        if (m.rip < begin || m.rip >= end) {
            char buf[128];
            std::snprintf(buf, sizeof buf,
                          "amx_emu: execution left the code ([code, code+0x%zx)) to 0x%" PRIx64, size, m.rip);
            throw amx_emu_error(std::string(buf) + (last ? " after " + m.describe(*last) : std::string()));
        }
        if (executed_here >= x.max_instructions)
            throw amx_emu_error("amx_emu: more than " + std::to_string(x.max_instructions) +
                                " instructions in one call (runaway loop?); last " +
                                (last ? m.describe(*last) : std::string("none")));
        const emu::insn &in = x.fetch(m.rip, end);
        last = &in;
        ++executed_here;
        ++x.executed;
        ++x.per_mnemonic[in.d.mnemonic];

        if (in.d.attributes & ZYDIS_ATTRIB_HAS_LOCK) m.unmodelled(in, "lock prefix");
        m.rip = in.next;
        if (!emu::exec_gpr(m, in) && !emu::exec_vector(m, in) && !emu::exec_tiles(m, in))
            m.unmodelled(in);
    }

    // The System V contract at return.
    if (m.gpr[4] != entry_rsp + 8) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "amx_emu: rsp at return is entry rsp%+" PRId64 ", expected +8",
                      int64_t(m.gpr[4] - entry_rsp));
        throw amx_emu_error(buf);
    }
    for (int i = 0; i < 6; ++i) {
        const int r = kCalleeSaved[i];
        if (m.gpr[r] != saved[i]) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "amx_emu: callee-saved %s clobbered: 0x%" PRIx64 " at entry, 0x%" PRIx64 " at return",
                          kGprNames[r], saved[i], m.gpr[r]);
            throw amx_emu_error(buf);
        }
    }
}

bool amx_emulator::tiles_configured() const { return s_->m.tiles_configured; }
const uint8_t *amx_emulator::tile_config() const { return s_->m.tilecfg; }
const uint8_t *amx_emulator::tile_data(int tmm) const { return &s_->m.tile[tmm & 7][0][0]; }
void amx_emulator::reset_tiles() { emu::release_tiles(s_->m); }
uint64_t amx_emulator::instructions_executed() const { return s_->executed; }
uint64_t amx_emulator::max_instructions() const { return s_->max_instructions; }
void amx_emulator::set_max_instructions(uint64_t n) { s_->max_instructions = n; }
uint64_t amx_emulator::gpr(int reg) const { return s_->m.gpr[reg & 15]; }
const uint8_t *amx_emulator::zmm(int reg) const { return s_->m.zmm[reg & 31]; }
uint64_t amx_emulator::kreg(int reg) const { return s_->m.k[reg & 7]; }

const std::map<std::string, uint64_t> &amx_emulator::mnemonic_counts() const {
    s_->counts_view.clear();
    for (size_t i = 0; i < s_->per_mnemonic.size(); ++i)
        if (s_->per_mnemonic[i])
            s_->counts_view[ZydisMnemonicGetString(static_cast<ZydisMnemonic>(i))] = s_->per_mnemonic[i];
    return s_->counts_view;
}

}  // namespace anvil::test
