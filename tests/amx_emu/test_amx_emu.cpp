// Unit test of the AMX emulator (amx_emulator.h).
//
// The programs are real machine code generated with Xbyak.  Those that use
// only general-purpose and AVX-512 instructions run twice -- natively and
// in the emulator -- and must agree, which checks the emulator's flags,
// conditions, shifts and masked moves against the host CPU.  AMX programs
// cannot run natively here; their results are compared with scalar
// computations written from the SDM's operation sections.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xbyak/xbyak.h>
#include <xmmintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "amx_emulator.h"

using anvil::test::amx_emu_error;
using anvil::test::amx_emulator;

namespace {

// ---------------------------------------------------------------- helpers

// A generated function: code in a read+execute mapping once finished (never
// writable and executable at once).
struct program : Xbyak::CodeGenerator {
    program() : Xbyak::CodeGenerator(1 << 16, Xbyak::DontSetProtectRWE) {}
    void finish() { setProtectModeRE(); }
    uint64_t native(uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) const {
        return getCode<uint64_t (*)(uint64_t, uint64_t, uint64_t)>()(a, b, c);
    }
    uint64_t emulate(amx_emulator &emu, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) const {
        emu.call(getCode(), getSize(), a, b, c);
        return emu.rax();
    }
    // The 16 condition codes in opcode order: o no b nb z nz be nbe s ns p np l nl le nle.
    void jcc(int cc, const Xbyak::Label &l) {
        switch (cc) {
        case 0: jo(l, T_NEAR); break;
        case 1: jno(l, T_NEAR); break;
        case 2: jb(l, T_NEAR); break;
        case 3: jnb(l, T_NEAR); break;
        case 4: jz(l, T_NEAR); break;
        case 5: jnz(l, T_NEAR); break;
        case 6: jbe(l, T_NEAR); break;
        case 7: jnbe(l, T_NEAR); break;
        case 8: js(l, T_NEAR); break;
        case 9: jns(l, T_NEAR); break;
        case 10: jp(l, T_NEAR); break;
        case 11: jnp(l, T_NEAR); break;
        case 12: jl(l, T_NEAR); break;
        case 13: jnl(l, T_NEAR); break;
        case 14: jle(l, T_NEAR); break;
        default: jnle(l, T_NEAR); break;
        }
    }
    void cmovcc(int cc, const Xbyak::Reg &d, const Xbyak::Operand &s) {
        switch (cc) {
        case 0: cmovo(d, s); break;
        case 1: cmovno(d, s); break;
        case 2: cmovb(d, s); break;
        case 3: cmovnb(d, s); break;
        case 4: cmovz(d, s); break;
        case 5: cmovnz(d, s); break;
        case 6: cmovbe(d, s); break;
        case 7: cmovnbe(d, s); break;
        case 8: cmovs(d, s); break;
        case 9: cmovns(d, s); break;
        case 10: cmovp(d, s); break;
        case 11: cmovnp(d, s); break;
        case 12: cmovl(d, s); break;
        case 13: cmovnl(d, s); break;
        case 14: cmovle(d, s); break;
        default: cmovnle(d, s); break;
        }
    }
};

std::vector<uint64_t> interesting_values() {
    std::vector<uint64_t> v = {0, 1, 2, 3, 5, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
                               0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
                               0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, ~0ull - 4,
                               0xfffffffffffff000ull};
    std::mt19937_64 rng(42);
    for (int i = 0; i < 6; ++i) v.push_back(rng());
    return v;
}

bool host_has_avx512bw() { return __builtin_cpu_supports("avx512bw"); }

// Runs `f` expecting amx_emu_error whose message contains `needle`.
template <typename F>
void check_throws_with(F f, const std::string &needle) {
    bool threw = false;
    try {
        f();
    } catch (const amx_emu_error &e) {
        threw = true;
        const std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(msg.find(needle) != std::string::npos);
    }
    CHECK_MESSAGE(threw, "expected amx_emu_error containing \"" << needle << "\"");
}

// ---------------------------------------------------------------- AMX helpers

struct tile_config {
    uint8_t bytes[64] = {};
    tile_config() { bytes[0] = 1; }
    tile_config &tile(int t, int rows, int colsb) {
        bytes[16 + 2 * t] = uint8_t(colsb);
        bytes[17 + 2 * t] = uint8_t(colsb >> 8);
        bytes[48 + t] = uint8_t(rows);
        return *this;
    }
};

// Parameters of the test dot-product kernel (offsets are used by the code).
struct dot_params {
    const void *cfg;      // 0
    const void *a;        // 8
    const void *b;        // 16
    void *c;              // 24
    int64_t lda;          // 32: bytes between rows of A
    int64_t ldb;          // 40
    int64_t ldc;          // 48
    int64_t kblocks;      // 56: tile dot products to accumulate
    int64_t a_step;       // 64: bytes to advance A per block
    int64_t b_step;       // 72
    uint64_t row_mask;    // 80: byte mask of one C row (tail copy)
    int64_t c_rows;       // 88
};

enum class dot_kind { bf16, ssd, sud, usd, uud };

// The kernel: C (tmm0) = C + sum over blocks of A_blk (tmm1) . B_blk (tmm2),
// C loaded from and written back to params.c.  Written back through a
// stack scratch and masked vmovdqu8 row copies, as tail-handling code does;
// uses every callee-saved register (saved and restored).
struct dot_kernel : program {
    explicit dot_kernel(dot_kind kind, bool release_at_end = false) {
        using namespace Xbyak;
        const Tmm c(0), a(1), b(2);
        push(rbx); push(rbp); push(r12); push(r13); push(r14); push(r15);
        mov(rbx, rdi);
        mov(rax, ptr[rbx + 0]);
        ldtilecfg(ptr[rax]);
        mov(rax, ptr[rbx + 24]);
        mov(rcx, ptr[rbx + 48]);
        tileloadd(c, ptr[rax + rcx]);
        mov(r12, ptr[rbx + 8]);
        mov(r13, ptr[rbx + 16]);
        mov(r14, ptr[rbx + 32]);
        mov(r15, ptr[rbx + 40]);
        mov(rbp, ptr[rbx + 56]);
        Label loop, rows;
        L(loop);
        tileloadd(a, ptr[r12 + r14]);
        tileloaddt1(b, ptr[r13 + r15]);
        switch (kind) {
        case dot_kind::bf16: tdpbf16ps(c, a, b); break;
        case dot_kind::ssd: tdpbssd(c, a, b); break;
        case dot_kind::sud: tdpbsud(c, a, b); break;
        case dot_kind::usd: tdpbusd(c, a, b); break;
        case dot_kind::uud: tdpbuud(c, a, b); break;
        }
        add(r12, ptr[rbx + 64]);
        add(r13, ptr[rbx + 72]);
        dec(rbp);
        jnz(loop, T_NEAR);
        // C -> 16 x 64-byte rows on the stack -> masked row copies to C.
        sub(rsp, 1024 + 64 + 8);  // 16-byte aligned again after the 6 pushes + return address
        lea(r8, ptr[rsp + 63]);
        and_(r8, -64);
        mov(eax, 64);
        tilestored(ptr[r8 + rax], c);
        mov(rax, ptr[rbx + 80]);
        kmovq(k1, rax);
        mov(rcx, ptr[rbx + 88]);
        mov(rdx, ptr[rbx + 24]);
        mov(r9, ptr[rbx + 48]);
        L(rows);
        vmovdqu8(zmm0 | k1 | T_z, ptr[r8]);
        vmovdqu8(ptr[rdx] | k1, zmm0);
        add(r8, 64);
        add(rdx, r9);
        dec(ecx);
        jnz(rows);
        add(rsp, 1024 + 64 + 8);
        if (release_at_end) tilerelease();
        vzeroupper();
        pop(r15); pop(r14); pop(r13); pop(r12); pop(rbp); pop(rbx);
        ret();
        finish();
    }
};

uint16_t bf16_bits(float f) {  // exact for the values used (low 16 bits zero) or truncating
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(u >> 16);
}

float bf16_value(uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// One TDPBF16PS as the SDM's operation section states it: per C element,
// even- and odd-pair accumulators from zero (fp32 FMA, DAZ, FTZ, RNE), then
// C + (even + odd).  A: M x 2K bf16, B: K x 2N bf16 (pairs), C: M x N.
void ref_tdpbf16ps(float *C, int ldc, const uint16_t *A, int lda, const uint16_t *B, int ldb,
                   int M, int N, int K) {
    const unsigned saved = _mm_getcsr();
    _mm_setcsr(0x1f80);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            float even = 0, odd = 0;
            for (int k = 0; k < K; ++k) {
                even = flush(std::fmaf(flush(bf16_value(A[m * lda + 2 * k])),
                                       flush(bf16_value(B[k * ldb + 2 * n])), even));
                odd = flush(std::fmaf(flush(bf16_value(A[m * lda + 2 * k + 1])),
                                      flush(bf16_value(B[k * ldb + 2 * n + 1])), odd));
            }
            C[m * ldc + n] = flush(flush(C[m * ldc + n]) + flush(even + odd));
        }
    _mm_setcsr(saved);
}

}  // namespace

// ======================================================================
// General-purpose instructions: emulator vs. the host CPU
// ======================================================================

TEST_CASE("GPR arithmetic agrees with the host CPU") {
    struct arith : program {
        arith() {
            mov(rax, rdi);
            add(rax, rsi);
            imul(rax, rsi);
            mov(rcx, rsi);
            and_(ecx, 63);
            mov(rdx, rdi); shl(rdx, cl); xor_(rax, rdx);
            mov(rdx, rdi); shr(rdx, cl); add(rax, rdx);
            mov(rdx, rdi); sar(rdx, cl); sub(rax, rdx);
            mov(rdx, rdi); shl(edx, cl); xor_(rax, rdx);      // 32-bit: count & 31, zero-extends
            mov(rdx, rdi); sar(dx, cl); add(rax, rdx);         // 16-bit: count may exceed the width
            mov(rdx, rdi); shr(dl, 3); sub(rax, rdx);
            mov(rdx, rdi); sar(edx, 5); add(rax, rdx);
            imul(rdx, rsi, 12345); xor_(rax, rdx);
            imul(edx, esi, -7); add(rax, rdx);
            imul(dx, si); xor_(rax, rdx);
            lea(rdx, ptr[rdi + rsi * 4 + 0x1234]); xor_(rax, rdx);
            lea(edx, ptr[rdi + rsi * 8 - 8]); add(rax, rdx);
            movsxd(rdx, esi); xor_(rax, rdx);
            movzx(edx, sil); add(rax, rdx);
            movzx(rdx, si); xor_(rax, rdx);
            movsx(rdx, dil); sub(rax, rdx);
            movsx(edx, si); add(rax, rdx);
            mov(rdx, rdi); mov(dh, cl); add(rax, rdx);        // high-byte register
            mov(rdx, rdi); mov(dl, 0x5a); xor_(rax, rdx);
            mov(rdx, rsi); neg(edx); xor_(rax, rdx);
            mov(rdx, rsi); neg(rdx); add(rax, rdx);
            mov(rdx, rsi); not_(dx); add(rax, rdx);
            mov(rdx, rdi); add(dl, sil); add(rax, rdx);
            mov(edx, esi); add(dx, di); sub(rax, rdx);
            mov(rdx, rdi); inc(edx); xor_(rax, rdx);
            mov(rdx, rdi); dec(dx); add(rax, rdx);
            mov(rdx, 0x123456789abcdef0ull); xor_(rax, rdx);
            or_(rax, 0x55);
            and_(rax, -2);
            xor_(eax, 0x7fff0000);                             // zero-extends
            mov(rdx, rsi);
            cmp(rdi, rsi);
            cmovl(edx, edi);                                   // zero-extends even if not taken
            add(rax, rdx);
            push(rdi); pop(rdx); add(rax, rdx);
            push(-5); pop(rdx); xor_(rax, rdx);
            sub(rsp, 24);
            mov(ptr[rsp], rax);
            add(qword[rsp], rsi);
            shl(dword[rsp + 4], 3);
            inc(byte[rsp + 1]);
            sub(word[rsp + 2], di);
            mov(qword[rsp + 8], -3);
            mov(dword[rsp + 8], 0x11223344);
            mov(rdx, ptr[rsp]);
            xor_(rax, rdx);
            add(rax, qword[rsp + 8]);
            movzx(edx, word[rsp + 2]); add(rax, rdx);
            add(rsp, 24);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    for (uint64_t a : interesting_values())
        for (uint64_t b : interesting_values()) {
            CAPTURE(a);
            CAPTURE(b);
            REQUIRE(p.emulate(emu, a, b) == p.native(a, b));
        }
}

// Condition evaluation: for a flag-producing instruction, every condition
// code through cmovcc (bits 0..15 of the result) and jcc (bits 16..31).
struct condition_program : program {
    condition_program(const std::function<void(program &)> &produce, uint32_t conditions) {
        using namespace Xbyak;
        xor_(eax, eax);
        for (int cc = 0; cc < 16; ++cc) {
            if (!((conditions >> cc) & 1)) continue;
            xor_(r9d, r9d);  // also defines every flag (CF = OF = 0) before the producer
            mov(r8, uint64_t(1) << cc);
            mov(r10, rdi);
            mov(r11, rsi);
            mov(ecx, r11d);
            produce(*this);
            cmovcc(cc, r9, r8);
            or_(rax, r9);
            mov(r10, rdi);
            mov(r11, rsi);
            mov(r8, uint64_t(1) << (16 + cc));
            mov(ecx, r11d);
            produce(*this);
            Label taken, done;
            jcc(cc, taken);
            jmp(done, T_NEAR);
            L(taken);
            or_(rax, r8);
            L(done);
        }
        ret();
        finish();
    }
};

TEST_CASE("flags and conditions agree with the host CPU") {
    using namespace Xbyak::util;
    constexpr uint32_t all = 0xffff;
    // Conditions not reading OF (o, no, l, nl, le, nle read it).
    constexpr uint32_t no_of = all & ~(0x3u | 0xf000u);
    struct producer {
        const char *name;
        std::function<void(program &)> emit;
        uint32_t conditions;
    };
    const std::vector<producer> producers = {
        {"cmp r64", [](program &g) { g.cmp(r10, r11); }, all},
        {"cmp r32", [](program &g) { g.cmp(r10d, r11d); }, all},
        {"cmp r16", [](program &g) { g.cmp(r10w, r11w); }, all},
        {"cmp r8", [](program &g) { g.cmp(r10b, r11b); }, all},
        {"cmp imm", [](program &g) { g.cmp(r10, -5); }, all},
        {"cmp imm32", [](program &g) { g.cmp(r10d, 0x7fffffff); }, all},
        {"sub", [](program &g) { g.sub(r10, r11); }, all},
        {"add r64", [](program &g) { g.add(r10, r11); }, all},
        {"add r32", [](program &g) { g.add(r10d, r11d); }, all},
        {"add r8", [](program &g) { g.add(r10b, r11b); }, all},
        {"test", [](program &g) { g.test(r10, r11); }, all},
        {"and", [](program &g) { g.and_(r10d, r11d); }, all},
        {"or", [](program &g) { g.or_(r10, r11); }, all},
        {"xor", [](program &g) { g.xor_(r10w, r11w); }, all},
        {"neg", [](program &g) { g.neg(r10); }, all},
        {"neg r8", [](program &g) { g.neg(r10b); }, all},
        {"cmp; inc (CF kept)", [](program &g) { g.cmp(r10, r11); g.inc(r10); }, all},
        {"cmp; dec (CF kept)", [](program &g) { g.cmp(r11, r10); g.dec(r10d); }, all},
        {"shl 1", [](program &g) { g.shl(r10, 1); }, all},
        {"shr 1", [](program &g) { g.shr(r10d, 1); }, all},
        {"sar 1", [](program &g) { g.sar(r10, 1); }, all},
        {"shl 7", [](program &g) { g.shl(r10, 7); }, no_of},
        {"shr 9 r32", [](program &g) { g.shr(r10d, 9); }, no_of},
        {"sar 13", [](program &g) { g.sar(r10w, 13); }, no_of},
        {"sar cl", [](program &g) { g.and_(ecx, 31); g.sar(r10, g.cl); }, no_of},
        {"shl cl", [](program &g) { g.and_(ecx, 31); g.shl(r10d, g.cl); }, no_of},
        {"imul (CF, OF)", [](program &g) { g.imul(r10, r11); }, 0x3 | 0xc},
        {"imul r32 imm", [](program &g) { g.imul(r10d, r11d, 1000); }, 0x3 | 0xc},
    };
    amx_emulator emu;
    const auto values = interesting_values();
    for (const producer &p : producers) {
        const std::string name = p.name;
        CAPTURE(name);
        const condition_program prog(p.emit, p.conditions);
        for (uint64_t a : values)
            for (uint64_t b : values) {
                CAPTURE(a);
                CAPTURE(b);
                REQUIRE(prog.emulate(emu, a, b) == prog.native(a, b));
            }
    }
}

TEST_CASE("signed and unsigned compares") {
    using namespace Xbyak::util;
    // rax = bit 0: a < b signed (jl), bit 1: a < b unsigned (jb), bit 2:
    // a <= b signed (jle), bit 3: a > b unsigned (ja).
    struct cmp_program : program {
        cmp_program() {
            using namespace Xbyak;
            xor_(eax, eax);
            Label l1, l2, l3, l4;
            cmp(rdi, rsi); jnl(l1); or_(eax, 1); L(l1);
            cmp(rdi, rsi); jnb(l2); or_(eax, 2); L(l2);
            cmp(rdi, rsi); jnle(l3); or_(eax, 4); L(l3);
            cmp(rdi, rsi); jbe(l4); or_(eax, 8); L(l4);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    CHECK(p.emulate(emu, uint64_t(-1), 1) == (1 | 4 | 8));
    CHECK(p.emulate(emu, 1, uint64_t(-1)) == 2);
    CHECK(p.emulate(emu, 3, 3) == 4);
    CHECK(p.emulate(emu, 0x8000000000000000ull, 0x7fffffffffffffffull) == (1 | 4 | 8));
    CHECK(p.emulate(emu, 2, 7) == (1 | 2 | 4));
}

TEST_CASE("a branch on an undefined flag throws") {
    struct p1 : program {
        p1() {
            using namespace Xbyak;
            imul(rdi, rsi);  // SF, ZF, PF undefined
            Label l;
            jz(l);
            L(l);
            mov(rax, rdi);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    check_throws_with([&] { p.emulate(emu, 2, 3); }, "undefined");
    struct p2 : program {  // flags are undefined at entry
        p2() {
            using namespace Xbyak;
            mov(eax, 1);
            cmovb(eax, edi);
            ret();
            finish();
        }
    } q;
    check_throws_with([&] { q.emulate(emu, 2); }, "undefined");
}

// ======================================================================
// Calling convention, control, unmodelled instructions
// ======================================================================

TEST_CASE("callee-saved registers and rsp are checked at return") {
    struct clobber : program {
        clobber() {
            mov(rbx, 1);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    check_throws_with([&] { p.emulate(emu); }, "callee-saved rbx clobbered");

    struct saved : program {
        saved() {
            push(rbx); push(r12); push(r15); push(rbp);
            mov(rbx, 1); mov(r12, 2); mov(r15, 3); mov(rbp, 4);
            lea(rax, ptr[rbx + r12 * 2]);
            pop(rbp); pop(r15); pop(r12); pop(rbx);
            ret();
            finish();
        }
    } q;
    CHECK(q.emulate(emu) == 5);
    CHECK(q.native() == 5);

    struct unbalanced : program {
        unbalanced() {
            pop(rcx);   // the return address
            pop(rdx);   // one slot too many
            push(rcx);
            ret();
            finish();
        }
    } r;
    check_throws_with([&] { r.emulate(emu); }, "rsp at return");

    struct r14_clobber : program {
        r14_clobber() {
            xor_(r14d, r14d);
            ret();
            finish();
        }
    } s;
    check_throws_with([&] { s.emulate(emu); }, "r14");
}

TEST_CASE("garbage in registers the kernel did not set") {
    struct reads_rcx : program {
        reads_rcx() {
            mov(rax, rcx);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    const uint64_t first = p.emulate(emu);
    const uint64_t second = p.emulate(emu);
    CHECK(first != 0);
    CHECK(first != second);  // different garbage in every call
}

TEST_CASE("new code at an address the emulator has run before") {
    // The emulator keeps decoded instructions across calls; different bytes
    // at the same address must be decoded again.
    struct ret_const : program {
        explicit ret_const(uint32_t v) {
            mov(eax, v);
            ret();
            finish();
        }
    } one(1), two(2);
    REQUIRE(one.getSize() == two.getSize());
    std::vector<uint8_t> buf(one.getSize());
    amx_emulator emu;
    std::memcpy(buf.data(), one.getCode(), buf.size());
    emu.call(buf.data(), buf.size());
    CHECK(emu.rax() == 1);
    std::memcpy(buf.data(), two.getCode(), buf.size());
    emu.call(buf.data(), buf.size());
    CHECK(emu.rax() == 2);
}

TEST_CASE("unmodelled instructions throw with their text and offset") {
    struct with_cpuid : program {
        with_cpuid() {
            nop();
            cpuid();
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    check_throws_with([&] { p.emulate(emu); }, "cpuid");
    check_throws_with([&] { p.emulate(emu); }, "code+0x1");
    struct with_vaddps : program {
        with_vaddps() {
            using namespace Xbyak::util;
            vaddps(zmm0, zmm1, zmm2);
            ret();
            finish();
        }
    } q;
    check_throws_with([&] { q.emulate(emu); }, "vaddps");
}

TEST_CASE("hint instructions, long nops, endbr64") {
    struct hints : program {
        hints() {
            endbr64();
            nop(1); nop(2); nop(5); nop(9); nop(15);
            prefetcht0(ptr[rdi]);
            prefetcht1(ptr[rdi + 4096]);
            prefetcht2(ptr[rdi + rsi * 8]);
            prefetchnta(ptr[rdi - 64]);
            prefetchw(ptr[rdi + 1000000]);
            mov(eax, 7);
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    // The prefetch addresses are not dereferenced (0x1000 is unmapped).
    CHECK(p.emulate(emu, 0x1000, 12345) == 7);
    CHECK(emu.mnemonic_counts().at("prefetchw") == 1);
}

TEST_CASE("leaving the code and runaway loops throw") {
    struct falls_off : program {
        falls_off() {
            nop();
            nop();
            ret();
            finish();
        }
    } p;
    amx_emulator emu;
    emu.call(p.getCode(), p.getSize());
    check_throws_with([&] { emu.call(p.getCode(), 2); }, "left the code");

    struct spins : program {
        spins() {
            Xbyak::Label l;
            L(l);
            jmp(l);
            finish();
        }
    } q;
    emu.set_max_instructions(1000);
    check_throws_with([&] { q.emulate(emu); }, "more than 1000 instructions");
}

// ======================================================================
// Vector moves
// ======================================================================

// A page of data followed by an inaccessible page: a load that touches a
// byte beyond the first page faults.
struct guarded_page {
    uint8_t *base = nullptr;
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    guarded_page() {
        void *p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<uint8_t *>(p);
        REQUIRE(mprotect(base + page, page, PROT_NONE) == 0);
        for (size_t i = 0; i < page; ++i) base[i] = uint8_t(i * 7 + 1);
    }
    ~guarded_page() { munmap(base, 2 * page); }
    uint8_t *end() const { return base + page; }
};

TEST_CASE("masked tail copy: fault suppression and masked store") {
    // rdi = src, rsi = dst, rdx = n (1..64): copies n bytes.
    struct tail_copy : program {
        tail_copy() {
            using namespace Xbyak;
            mov(ecx, 64);
            sub(ecx, edx);
            mov(rax, -1);
            shr(rax, cl);
            kmovq(k1, rax);
            vmovdqu8(zmm0 | k1 | T_z, ptr[rdi]);
            vmovdqu8(ptr[rsi] | k1, zmm0);
            kmovq(rax, k1);
            ret();
            finish();
        }
    } p;
    guarded_page src;
    amx_emulator emu;
    for (uint64_t n = 1; n <= 64; ++n) {
        CAPTURE(n);
        const uint8_t *from = src.end() - n;  // ends exactly at the inaccessible page
        uint8_t dst_emu[80], dst_native[80];
        std::memset(dst_emu, 0xee, sizeof dst_emu);
        std::memset(dst_native, 0xee, sizeof dst_native);
        const uint64_t mask = p.emulate(emu, uint64_t(from), uint64_t(dst_emu), n);
        CHECK(mask == (n == 64 ? ~0ull : (1ull << n) - 1));
        CHECK(std::memcmp(dst_emu, from, n) == 0);
        for (size_t i = n; i < sizeof dst_emu; ++i) REQUIRE(dst_emu[i] == 0xee);
        if (host_has_avx512bw()) {
            p.native(uint64_t(from), uint64_t(dst_native), n);
            CHECK(std::memcmp(dst_emu, dst_native, sizeof dst_emu) == 0);
        }
        // zmm0: the loaded bytes, zero above n
        for (size_t i = 0; i < 64; ++i) REQUIRE(emu.zmm(0)[i] == (i < n ? from[i] : 0));
    }
}

TEST_CASE("merge/zero masking and vector lengths agree with the host CPU") {
    // rdi = src (192 bytes), rsi = dst (9 x 64 bytes), rdx = mask bits
    struct moves : program {
        moves() {
            using namespace Xbyak;
            kmovq(k2, rdx);
            kmovd(k3, edx);
            kmovw(k4, edx);
            vmovdqu64(zmm1, ptr[rdi + 64]);          // merge target
            vmovdqu32(zmm1 | k4, ptr[rdi]);          // dword merge
            vmovdqu64(ptr[rsi], zmm1);
            vmovdqu64(zmm2, ptr[rdi + 128]);
            vmovdqu16(ymm2 | k3 | T_z, ptr[rdi + 3]); // ymm: zeroes bits 256..511
            vmovdqu64(ptr[rsi + 64], zmm2);
            vmovdqu64(zmm3, ptr[rdi + 128]);
            vmovdqu64(xmm3 | k2, xmm1);              // register source, qword merge, xmm
            vmovdqu64(ptr[rsi + 128], zmm3);
            vmovups(zmm4, ptr[rdi]);
            vmovaps(zmm5 | k4 | T_z, zmm4);
            vmovdqu8(ptr[rsi + 192] | k2, zmm5);
            vmovdqu64(zmm6, ptr[rdi + 64]);
            vmovdqu64(zmm7, ptr[rdi + 128]);
            vpxord(zmm6 | k4, zmm6, zmm7);           // masked xor, merging
            vmovdqu64(ptr[rsi + 256], zmm6);
            vpxorq(zmm8, zmm8, zmm8);                // zeroing idiom
            vxorps(ymm9, ymm9, ymm9);
            vpxor(xmm10, xmm10, xmm10);
            vmovdqu64(zmm11, ptr[rdi]);
            vmovdqu64(zmm12, ptr[rdi + 64]);
            vpxorq(zmm11 | k2 | T_z, zmm11, zmm12);
            vmovdqu64(ptr[rsi + 320], zmm11);
            vmovdqu64(zmm13, ptr[rdi]);
            vzeroupper();                           // keeps the low 128 bits
            vmovdqu64(ptr[rsi + 384], zmm13);
            vmovdqu64(ptr[rsi + 448], zmm9);
            vmovdqu64(ptr[rsi + 512], zmm10);
            kmovw(eax, k4);
            kmovq(rcx, k2);
            add(rax, rcx);
            ret();
            finish();
        }
    } p;
    alignas(64) uint8_t src[192];
    for (int i = 0; i < 192; ++i) src[i] = uint8_t(i * 13 + 5);
    amx_emulator emu;
    for (uint64_t mask : {0ull, ~0ull, 0x5555aaaa12345678ull, 0x8000000000000001ull, 0xf0ull}) {
        CAPTURE(mask);
        alignas(64) uint8_t dst_emu[9 * 64], dst_native[9 * 64];
        std::memset(dst_emu, 0, sizeof dst_emu);
        std::memset(dst_native, 0, sizeof dst_native);
        const uint64_t r = p.emulate(emu, uint64_t(src), uint64_t(dst_emu), mask);
        CHECK(r == (mask & 0xffff) + mask);
        if (host_has_avx512bw()) {
            CHECK(p.native(uint64_t(src), uint64_t(dst_native), mask) == r);
            for (int i = 0; i < 9 * 64; ++i) {
                CAPTURE(i);
                REQUIRE(dst_emu[i] == dst_native[i]);
            }
        }
    }
}

TEST_CASE("misaligned aligned moves and zero-masked stores throw") {
    struct aligned_load : program {
        aligned_load() {
            vmovdqa64(zmm0, ptr[rdi]);
            ret();
            finish();
        }
    } p;
    alignas(64) uint8_t buf[128] = {};
    amx_emulator emu;
    emu.call(p.getCode(), p.getSize(), uint64_t(buf));
    check_throws_with([&] { emu.call(p.getCode(), p.getSize(), uint64_t(buf + 16)); }, "misaligned");
    struct aligned_store_ymm : program {
        aligned_store_ymm() {
            vmovaps(ptr[rdi], ymm1);
            ret();
            finish();
        }
    } q;
    emu.call(q.getCode(), q.getSize(), uint64_t(buf + 32));
    check_throws_with([&] { emu.call(q.getCode(), q.getSize(), uint64_t(buf + 8)); }, "misaligned");
}

// ======================================================================
// AMX
// ======================================================================

TEST_CASE("tdpbf16ps on integer data equals the exact matrix product") {
    std::mt19937 rng(7);
    for (const auto &shape : {std::array<int, 4>{16, 16, 16, 3}, std::array<int, 4>{5, 3, 7, 2},
                              std::array<int, 4>{1, 1, 1, 1}, std::array<int, 4>{16, 9, 16, 1}}) {
        // M rows of C, N fp32 columns, K bf16 pairs per block, blocks
        const int M = shape[0], N = shape[1], K = shape[2], blocks = shape[3];
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        const int Ktot = K * blocks;  // pairs
        std::vector<uint16_t> A(size_t(M) * 2 * Ktot), B(size_t(Ktot) * 2 * N);
        std::vector<float> Af(A.size()), Bf(B.size());
        for (size_t i = 0; i < A.size(); ++i) Af[i] = float(int(rng() % 17) - 8), A[i] = bf16_bits(Af[i]);
        for (size_t i = 0; i < B.size(); ++i) Bf[i] = float(int(rng() % 17) - 8), B[i] = bf16_bits(Bf[i]);
        const int ldc = N + 3;  // floats; rows not contiguous
        std::vector<float> C(size_t(M) * ldc, 0.5f), expect(C);
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                double s = 0.5;
                for (int k = 0; k < 2 * Ktot; ++k) s += double(Af[m * 2 * Ktot + k]) * Bf[(k / 2) * 2 * N + 2 * n + (k & 1)];
                expect[m * ldc + n] = float(s);
            }
        tile_config cfg;
        cfg.tile(0, M, 4 * N).tile(1, M, 4 * K).tile(2, K, 4 * N);
        dot_params prm{cfg.bytes, A.data(), B.data(), C.data(), int64_t(4 * Ktot), int64_t(4 * N),
                       int64_t(4 * ldc), blocks, int64_t(4 * K), int64_t(4 * N) * K,
                       (4 * N == 64) ? ~0ull : (1ull << (4 * N)) - 1, M};
        const dot_kernel kernel(dot_kind::bf16);
        amx_emulator emu;
        emu.call(kernel.getCode(), kernel.getSize(), uint64_t(&prm));
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < ldc; ++n) {
                CAPTURE(m);
                CAPTURE(n);
                REQUIRE(C[m * ldc + n] == (n < N ? expect[m * ldc + n] : 0.5f));
            }
        CHECK(emu.mnemonic_counts().at("tdpbf16ps") == uint64_t(blocks));
        CHECK(emu.mnemonic_counts().at("tileloadd") == uint64_t(1 + blocks));
        CHECK(emu.mnemonic_counts().at("tileloaddt1") == uint64_t(blocks));
        CHECK(emu.tiles_configured());
        CHECK(std::memcmp(emu.tile_config(), cfg.bytes, 64) == 0);
        // C's tile: zero beyond the configured shape
        const uint8_t *t0 = emu.tile_data(0);
        for (int r = 0; r < 16; ++r)
            for (int b = 0; b < 64; ++b)
                if (r >= M || b >= 4 * N) REQUIRE(t0[r * 64 + b] == 0);
    }
}

TEST_CASE("tdpbf16ps rounding, DAZ, FTZ, NaN and Inf as the SDM states") {
    // One block: C 2x2 fp32, A 2 rows x 2 pairs, B 2 rows x 2 pairs.
    const int M = 2, N = 2, K = 2;
    tile_config cfg;
    cfg.tile(0, M, 4 * N).tile(1, M, 4 * K).tile(2, K, 4 * N);
    const dot_kernel kernel(dot_kind::bf16);
    amx_emulator emu;
    auto run = [&](std::vector<uint16_t> A, std::vector<uint16_t> B, std::vector<float> C) {
        dot_params prm{cfg.bytes, A.data(), B.data(), C.data(), 4 * K, 4 * N, 4 * N, 1, 0, 0,
                       (1ull << (4 * N)) - 1, M};
        emu.call(kernel.getCode(), kernel.getSize(), uint64_t(&prm));
        return C;
    };
    const uint16_t one = bf16_bits(1.0f), zero = 0;
    const uint16_t denorm = 0x0001;                  // the smallest bf16 denormal, 2^-133
    const uint16_t big = bf16_bits(std::ldexp(1.0f, 100));
    const uint16_t tiny = bf16_bits(std::ldexp(1.0f, -70));
    const uint16_t inf = 0x7f80, ninf = 0xff80, qnan = 0x7fc0;

    SUBCASE("denormal inputs count as zero (DAZ)") {
        // C[0][0] = denorm * 2^100: 2^-33 without DAZ
        const auto C = run({denorm, zero, zero, zero, zero, zero, zero, zero},
                           {big, zero, zero, zero, zero, zero, zero, zero}, {0, 0, 0, 0});
        CHECK(C[0] == 0.0f);
        // C itself: a denormal accumulator input counts as zero too
        const float dn = std::ldexp(1.0f, -140);
        const auto D = run({zero, zero, zero, zero, zero, zero, zero, zero},
                           {zero, zero, zero, zero, zero, zero, zero, zero}, {dn, -dn, 1.0f, 0});
        CHECK(D[0] == 0.0f);
        CHECK(D[1] == 0.0f);
        CHECK_FALSE(std::signbit(D[1]));  // -denormal -> -0; -0 + (+0 + +0) = +0
        CHECK(D[2] == 1.0f);
    }
    SUBCASE("denormal results are flushed (FTZ)") {
        // 2^-70 * 2^-70 = 2^-140: a denormal fp32
        const auto C = run({tiny, zero, zero, zero, zero, zero, zero, zero},
                           {tiny, zero, zero, zero, zero, zero, zero, zero}, {0, 0, 0, 0});
        CHECK(C[0] == 0.0f);
        // ... while a normal result of two tiny factors is kept: 2^-70 * 2^-50
        const auto D = run({tiny, zero, zero, zero, zero, zero, zero, zero},
                           {bf16_bits(std::ldexp(1.0f, -50)), zero, zero, zero, zero, zero, zero, zero},
                           {0, 0, 0, 0});
        CHECK(D[0] == std::ldexp(1.0f, -120));
    }
    SUBCASE("NaN and Inf") {
        const auto C = run({qnan, zero, zero, zero, inf, zero, inf, zero},
                           {one, zero, one, zero, one, zero, zero, zero}, {0, 0, 0, 0});
        CHECK(std::isnan(C[0]));  // NaN * 1
        CHECK(std::isnan(C[1]));  // NaN * 1 (row 0, column 1 uses B[0][1])
        CHECK(C[2] == INFINITY);  // row 1, column 0: Inf * 1 + Inf * 1
        CHECK(std::isnan(C[3]));  // row 1, column 1: Inf * 1 + Inf * 0
        const auto D = run({inf, ninf, zero, zero, zero, zero, zero, zero},
                           {one, one, zero, zero, zero, zero, zero, zero}, {0, 0, 0, 0});
        CHECK(std::isnan(D[0]));  // even = +Inf, odd = -Inf: Inf - Inf
        const auto E = run({inf, zero, zero, zero, zero, zero, zero, zero},
                           {zero, zero, zero, zero, zero, zero, zero, zero}, {0, 0, 0, 0});
        CHECK(std::isnan(E[0]));  // Inf * 0
    }
    SUBCASE("even and odd pairs are summed separately, then added to C") {
        // even products: 2^24 and then -2^24; odd: 1 and 1.
        // SDM order: even = 2^24 - 2^24 = 0, odd = 2, C = 0 + (0 + 2) = 2.
        // Accumulating straight into C (the Intrinsics Guide's order):
        // 2^24 + 1 = 2^24 (RNE), -2^24 -> 0, + 1 = 1.
        const uint16_t p24 = bf16_bits(std::ldexp(1.0f, 24)), m24 = bf16_bits(-std::ldexp(1.0f, 24));
        const auto C = run({p24, one, m24, one, zero, zero, zero, zero},
                           {one, one, one, one, one, one, one, one}, {0, 0, 0, 0});
        CHECK(C[0] == 2.0f);
    }
}

TEST_CASE("tdpbf16ps on random data matches the SDM-order reference") {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    const int M = 16, N = 16, K = 16, blocks = 4, Ktot = K * blocks;
    std::vector<uint16_t> A(size_t(M) * 2 * Ktot), B(size_t(Ktot) * 2 * N);
    for (auto &x : A) x = bf16_bits(dist(rng));
    for (auto &x : B) x = bf16_bits(dist(rng));
    std::vector<float> C(size_t(M) * N), expect(C.size());
    for (size_t i = 0; i < C.size(); ++i) C[i] = expect[i] = dist(rng);
    for (int blk = 0; blk < blocks; ++blk)
        ref_tdpbf16ps(expect.data(), N, A.data() + 2 * K * blk, 2 * Ktot, B.data() + size_t(blk) * K * 2 * N,
                      2 * N, M, N, K);
    tile_config cfg;
    cfg.tile(0, M, 4 * N).tile(1, M, 4 * K).tile(2, K, 4 * N);
    dot_params prm{cfg.bytes, A.data(), B.data(), C.data(), 4 * Ktot, 4 * N, 4 * N, blocks, 4 * K,
                   int64_t(4 * N) * K, ~0ull, M};
    const dot_kernel kernel(dot_kind::bf16);
    amx_emulator emu;
    emu.call(kernel.getCode(), kernel.getSize(), uint64_t(&prm));
    for (size_t i = 0; i < C.size(); ++i) {
        CAPTURE(i);
        REQUIRE(C[i] == expect[i]);
    }
}

TEST_CASE("int8 dot products, all four signedness variants") {
    std::mt19937 rng(3);
    const uint8_t extremes[] = {0x80, 0x7f, 0xff, 0x00, 0x01};
    for (dot_kind kind : {dot_kind::ssd, dot_kind::sud, dot_kind::usd, dot_kind::uud}) {
        const bool a_signed = kind == dot_kind::ssd || kind == dot_kind::sud;
        const bool b_signed = kind == dot_kind::ssd || kind == dot_kind::usd;
        for (const auto &shape : {std::array<int, 4>{16, 16, 16, 2}, std::array<int, 4>{7, 5, 3, 3},
                                  std::array<int, 4>{1, 16, 1, 1}}) {
            const int M = shape[0], N = shape[1], K = shape[2], blocks = shape[3];  // K: dwords
            CAPTURE(int(kind));
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            const int Ktot = K * blocks;
            std::vector<uint8_t> A(size_t(M) * 4 * Ktot), B(size_t(Ktot) * 4 * N);
            for (auto &x : A) x = rng() % 3 ? uint8_t(rng()) : extremes[rng() % 5];
            for (auto &x : B) x = rng() % 3 ? uint8_t(rng()) : extremes[rng() % 5];
            const int ldc = N + 1;
            std::vector<int32_t> C(size_t(M) * ldc);
            for (auto &x : C) x = int32_t(rng());
            C[0] = 0x7fffffff;  // wraps unless the sum is negative
            std::vector<int32_t> expect(C);
            auto ext = [](uint8_t v, bool s) { return s ? int64_t(int8_t(v)) : int64_t(v); };
            for (int m = 0; m < M; ++m)
                for (int n = 0; n < N; ++n) {
                    int64_t s = expect[m * ldc + n];
                    for (int k = 0; k < 4 * Ktot; ++k)
                        s += ext(A[m * 4 * Ktot + k], a_signed) * ext(B[(k / 4) * 4 * N + 4 * n + (k & 3)], b_signed);
                    expect[m * ldc + n] = int32_t(uint32_t(uint64_t(s)));  // modulo 2^32
                }
            tile_config cfg;
            cfg.tile(0, M, 4 * N).tile(1, M, 4 * K).tile(2, K, 4 * N);
            dot_params prm{cfg.bytes, A.data(), B.data(), C.data(), 4 * Ktot, 4 * N, 4 * ldc, blocks,
                           4 * K, int64_t(4 * N) * K, (4 * N == 64) ? ~0ull : (1ull << (4 * N)) - 1, M};
            const dot_kernel kernel(kind, /*release_at_end=*/true);
            amx_emulator emu;
            emu.call(kernel.getCode(), kernel.getSize(), uint64_t(&prm));
            CHECK_FALSE(emu.tiles_configured());  // tilerelease
            REQUIRE(C == expect);
        }
    }
}

// ldtilecfg from rdi, then tileloadd tmm3 from rsi (stride 100), tilestored
// to rdx (stride 130), sttilecfg to [rdx - 64].
struct load_store : program {
    load_store() {
        using namespace Xbyak;
        const Tmm t3(3);
        ldtilecfg(ptr[rdi]);
        mov(eax, 100);
        tileloadd(t3, ptr[rsi + rax]);
        mov(ecx, 130);
        tilestored(ptr[rdx + rcx], t3);
        sttilecfg(ptr[rdx - 64]);
        ret();
        finish();
    }
};

TEST_CASE("tileloadd / tilestored with strides; ldtilecfg zeroes; sttilecfg") {
    const load_store p;
    std::vector<uint8_t> src(100 * 16), out(64 + 130 * 16, 0xcc);
    for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 3 + 1);
    tile_config cfg;
    cfg.tile(3, 5, 36).tile(7, 16, 64);
    amx_emulator emu;
    emu.call(p.getCode(), p.getSize(), uint64_t(cfg.bytes), uint64_t(src.data()), uint64_t(out.data() + 64));
    CHECK(std::memcmp(out.data(), cfg.bytes, 64) == 0);  // sttilecfg
    const uint8_t *dst = out.data() + 64;
    for (int r = 0; r < 16; ++r)
        for (int b = 0; b < 130; ++b) {
            CAPTURE(r);
            CAPTURE(b);
            const size_t o = size_t(r) * 130 + size_t(b);
            REQUIRE(dst[o] == (r < 5 && b < 36 ? src[size_t(r) * 100 + size_t(b)] : 0xcc));
        }
    const uint8_t *t3 = emu.tile_data(3);
    for (int r = 0; r < 16; ++r)
        for (int b = 0; b < 64; ++b)
            REQUIRE(t3[r * 64 + b] == (r < 5 && b < 36 ? src[size_t(r) * 100 + size_t(b)] : 0));

    // The tile state persists into the next call; a new ldtilecfg zeroes the data.
    struct store_only : program {
        store_only() {
            tilestored(ptr[rdi + rsi], Xbyak::Tmm(3));
            ret();
            finish();
        }
    } q;
    std::vector<uint8_t> again(64 * 5, 0);
    emu.call(q.getCode(), q.getSize(), uint64_t(again.data()), 64);
    for (int r = 0; r < 5; ++r) CHECK(std::memcmp(again.data() + 64 * r, src.data() + 100 * r, 36) == 0);
    struct reload_cfg : program {
        reload_cfg() {
            ldtilecfg(ptr[rdi]);
            ret();
            finish();
        }
    } z;
    emu.call(z.getCode(), z.getSize(), uint64_t(cfg.bytes));
    for (int i = 0; i < 1024; ++i) REQUIRE(emu.tile_data(3)[i] == 0);

    // sttilecfg when unconfigured writes zeros
    emu.reset_tiles();
    CHECK_FALSE(emu.tiles_configured());
    struct st : program {
        st() {
            sttilecfg(ptr[rdi]);
            ret();
            finish();
        }
    } s;
    std::vector<uint8_t> sc(64, 0xab);
    emu.call(s.getCode(), s.getSize(), uint64_t(sc.data()));
    CHECK(std::all_of(sc.begin(), sc.end(), [](uint8_t v) { return v == 0; }));
}

TEST_CASE("tile faults: unconfigured, bad config, shape mismatch") {
    using namespace Xbyak;
    amx_emulator emu;
    struct zero_tile : program {
        zero_tile() {
            tilezero(Tmm(0));
            ret();
            finish();
        }
    } z;
    check_throws_with([&] { z.emulate(emu); }, "not configured");

    // ldtilecfg [rdi]; tdpbusd with the tiles named by the test
    struct cfg_dot : program {
        cfg_dot(int c, int a, int b) {
            ldtilecfg(ptr[rdi]);
            tdpbusd(Tmm(c), Tmm(a), Tmm(b));
            ret();
            finish();
        }
    };
    const cfg_dot ok(0, 1, 2), same(0, 1, 1), uses_tile_5(0, 1, 5);
    tile_config good;
    good.tile(0, 16, 64).tile(1, 16, 64).tile(2, 16, 64);
    ok.emulate(emu, uint64_t(good.bytes));
    // Zydis already rejects the encoding of a tdp* naming one tile twice.
    check_throws_with([&] { same.emulate(emu, uint64_t(good.bytes)); }, "invalid register operand combination");
    check_throws_with([&] { uses_tile_5.emulate(emu, uint64_t(good.bytes)); }, "tmm5 has no shape");

    tile_config kmismatch;  // A.colsb / 4 = 16 but B has 8 rows
    kmismatch.tile(0, 16, 64).tile(1, 16, 64).tile(2, 8, 64);
    check_throws_with([&] { ok.emulate(emu, uint64_t(kmismatch.bytes)); }, "A.colsb / 4 != B.rows");
    tile_config nmismatch;  // C 16 columns, B 8
    nmismatch.tile(0, 16, 64).tile(1, 16, 64).tile(2, 16, 32);
    check_throws_with([&] { ok.emulate(emu, uint64_t(nmismatch.bytes)); }, "C.colsb != B.colsb");
    tile_config mmismatch;
    mmismatch.tile(0, 8, 64).tile(1, 16, 64).tile(2, 16, 64);
    check_throws_with([&] { ok.emulate(emu, uint64_t(mmismatch.bytes)); }, "C.rows != A.rows");
    tile_config odd_colsb;
    odd_colsb.tile(0, 16, 62).tile(1, 16, 64).tile(2, 16, 62);
    check_throws_with([&] { ok.emulate(emu, uint64_t(odd_colsb.bytes)); }, "not a multiple of 4");

    tile_config reserved = good;
    reserved.bytes[40] = 1;
    check_throws_with([&] { ok.emulate(emu, uint64_t(reserved.bytes)); }, "reserved byte 40");
    tile_config too_many_rows = good;
    too_many_rows.tile(4, 17, 64);
    check_throws_with([&] { ok.emulate(emu, uint64_t(too_many_rows.bytes)); }, "(#GP)");
    tile_config too_wide = good;
    too_wide.tile(4, 16, 68);
    check_throws_with([&] { ok.emulate(emu, uint64_t(too_wide.bytes)); }, "(#GP)");
    tile_config half_empty = good;
    half_empty.tile(4, 0, 64);
    check_throws_with([&] { ok.emulate(emu, uint64_t(half_empty.bytes)); }, "(#GP)");
    tile_config palette2 = good;
    palette2.bytes[0] = 2;
    check_throws_with([&] { ok.emulate(emu, uint64_t(palette2.bytes)); }, "palette 2");

    // palette 0 releases: the dot product then faults
    tile_config palette0;
    palette0.bytes[0] = 0;
    check_throws_with([&] { ok.emulate(emu, uint64_t(palette0.bytes)); }, "not configured");

    // tilerelease, then use
    struct release_then_use : program {
        release_then_use() {
            ldtilecfg(ptr[rdi]);
            tilerelease();
            tilezero(Tmm(0));
            ret();
            finish();
        }
    } r;
    check_throws_with([&] { r.emulate(emu, uint64_t(good.bytes)); }, "not configured");
}
