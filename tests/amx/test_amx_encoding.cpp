// Encoding cross-check of the AMX generator: the bytes it emits are
// disassembled by GNU objdump (objdump -D -b binary -mi386:x86-64 -M intel)
// and by Zydis, and
//   * the tile instructions, in order with their tmm operands, are exactly
//     the ones the generator meant to emit (jit_amx_lp::intended_tile_ops);
//   * both disassemblers see the same number of instructions, none of them
//     "(bad)" -- so no byte was mis-encoded into something else;
// for bf16, every int8 sign combination, one and two tile rows, one and two
// tile columns, and both accumulate modes; and the runtime's ldtilecfg /
// tilerelease stubs are what they claim.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <Zydis/Zydis.h>

#include "jit/amx_runtime.h"
#include "jit/jit_amx_lp.h"

namespace {

using anvil::jit::amx_int8_signs;
using anvil::lowp::lp_kind;

struct insn {
    std::string mnemonic, operands;
};

bool have_objdump() { return std::system("objdump --version > /dev/null 2>&1") == 0; }

// objdump's Intel-syntax disassembly of `size` bytes.
std::vector<insn> objdump(const uint8_t *code, size_t size) {
    char path[] = "/tmp/anvil_amx_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, code, size) == ssize_t(size));
    close(fd);
    const std::string cmd = std::string("objdump -D -b binary -mi386:x86-64 -M intel ") + path;
    FILE *p = popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::vector<insn> out;
    char line[512];
    // "   1a:\tc4 e2 7b 4b 24 0e    \ttileloadd tmm4,[rsi+rcx*1]"; a long
    // encoding continues on a line without the third field.
    const std::regex re(R"(^\s*[0-9a-f]+:\t[0-9a-f ]+\t(\S+)\s*(.*)$)");
    while (std::fgets(line, sizeof line, p)) {
        std::string s(line);
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        std::smatch mt;
        if (std::regex_match(s, mt, re)) out.push_back({mt[1].str(), mt[2].str()});
    }
    pclose(p);
    unlink(path);
    return out;
}

int zydis_count(const uint8_t *code, size_t size, std::string *bad) {
    int n = 0;
    for (size_t off = 0; off < size; ++n) {
        ZydisDisassembledInstruction ins;
        if (!ZYAN_SUCCESS(ZydisDisassembleIntel(ZYDIS_MACHINE_MODE_LONG_64, off, code + off,
                                                size - off, &ins))) {
            *bad = "Zydis cannot decode offset " + std::to_string(off);
            return n;
        }
        off += ins.info.length;
    }
    return n;
}

// "tileloadd tmm4" / "tdpbusd tmm0,tmm4,tmm6" from a disassembled line.
std::string tile_op(const insn &i) {
    std::string r = i.mnemonic;
    const std::regex tmm(R"(tmm[0-7])");
    bool firstop = true;
    for (auto it = std::sregex_iterator(i.operands.begin(), i.operands.end(), tmm);
         it != std::sregex_iterator(); ++it) {
        r += (firstop ? " " : ",") + it->str();
        firstop = false;
    }
    return r;
}

bool is_tile(const std::string &mn) {
    return mn.rfind("tile", 0) == 0 || mn.rfind("tdp", 0) == 0 || mn == "ldtilecfg" ||
           mn == "sttilecfg";
}

}  // namespace

TEST_SUITE("amx") {

TEST_CASE("amx encoding: objdump and Zydis see the tile instructions the generator intended") {
    if (!have_objdump()) {
        MESSAGE("objdump not found: encoding cross-check skipped");
        return;
    }
    struct t {
        lp_kind kind;
        amx_int8_signs s;
    };
    const t kinds[] = {{lp_kind::bf16, amx_int8_signs::u8s8},
                       {lp_kind::u8s8, amx_int8_signs::u8s8},
                       {lp_kind::u8s8, amx_int8_signs::s8s8},
                       {lp_kind::u8s8, amx_int8_signs::s8u8},
                       {lp_kind::u8s8, amx_int8_signs::u8u8}};
    int checked = 0;
    for (const t &k : kinds)
        for (int m : {1, 5, 16, 17, 32})
            for (int nv = 1; nv <= 2; ++nv)
                for (int acc = 0; acc <= 1; ++acc) {
                    const auto d = anvil::jit::make_amx_lp_desc(k.kind, m, nv, acc != 0, k.s);
                    anvil::jit::jit_amx_lp gen(d);
                    const auto *code = gen.getCode();
                    const size_t size = gen.getSize();
                    const std::vector<insn> dis = objdump(code, size);
                    std::vector<std::string> seen;
                    bool any_bad = false;
                    for (const insn &i : dis) {
                        if (i.mnemonic == "(bad)") any_bad = true;
                        if (is_tile(i.mnemonic)) seen.push_back(tile_op(i));
                    }
                    std::string zbad;
                    const int zn = zydis_count(code, size, &zbad);
                    const std::string name = anvil::jit::jit_amx_lp::kernel_name(d);
                    INFO(name);
                    CHECK_FALSE(any_bad);
                    CHECK(zbad.empty());
                    CHECK(zn == int(dis.size()));
                    CHECK(seen == gen.intended_tile_ops());
                    // Nothing but the runtime's stub loads a configuration.
                    for (const std::string &s : seen) CHECK(s.rfind("ldtilecfg", 0) != 0);
                    ++checked;
                }
    MESSAGE(checked << " AMX kernels cross-checked with objdump and Zydis");
}

TEST_CASE("amx encoding: the configuration and release stubs") {
    if (!have_objdump()) return;
    anvil::cache::kernel_ptr cfg, rel;
    REQUIRE(anvil::jit::amx::config_stub(&cfg) == anvil_success);
    REQUIRE(anvil::jit::amx::release_stub(&rel) == anvil_success);
    auto tiles = [](const anvil::cache::kernel_ptr &k) {
        std::vector<std::string> r;
        for (const insn &i : objdump(static_cast<const uint8_t *>(k->entry()), k->code_size()))
            if (is_tile(i.mnemonic)) r.push_back(i.mnemonic + " " + i.operands);
        return r;
    };
    const auto c = tiles(cfg), r = tiles(rel);
    REQUIRE(c.size() == 1);
    CHECK(c[0].rfind("ldtilecfg [rdi]", 0) == 0);
    REQUIRE(r.size() == 1);
    CHECK(r[0].rfind("tilerelease", 0) == 0);
}

}  // TEST_SUITE
