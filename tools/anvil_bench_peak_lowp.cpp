// anvil-bench: low-precision peak loops (vdpbf16ps zmm, vpdpbusd zmm and the
// VEX vpdpbusd ymm of AVX-VNNI), each a whole inline-asm loop on fixed
// registers, so the compiler can neither move the accumulators around nor
// spill them.  zmm: 16 independent accumulator chains (zmm0-15), 4 times
// unrolled, 64 instructions per iteration, as in the fp32 FMA probe; ymm
// (VEX encodes registers 0-15 only): 12 chains, 48 instructions.  Each
// function carries its own target attribute, so the file needs no ISA flags;
// nothing here runs unless measure_lowp_peak saw the instructions in
// __builtin_cpu_supports.
#include <cstdint>

#include "anvil_bench_peak.h"

namespace anvil_bench {
namespace {

// OP("n") for the accumulators 0..11 / 0..15.
#define ANVIL_BENCH_X12(OP) \
    OP("0") OP("1") OP("2") OP("3") OP("4") OP("5") OP("6") OP("7") OP("8") OP("9") OP("10") OP("11")
#define ANVIL_BENCH_X16(OP) ANVIL_BENCH_X12(OP) OP("12") OP("13") OP("14") OP("15")
#define ANVIL_BENCH_LD_Z(n) "vmovdqu32 " n "*64(%[acc]), %%zmm" n "\n\t"
#define ANVIL_BENCH_ST_Z(n) "vmovdqu32 %%zmm" n ", " n "*64(%[acc])\n\t"
#define ANVIL_BENCH_LD_Y(n) "vmovdqu " n "*32(%[acc]), %%ymm" n "\n\t"
#define ANVIL_BENCH_ST_Y(n) "vmovdqu %%ymm" n ", " n "*32(%[acc])\n\t"
#define ANVIL_BENCH_CLOBBER16                                                                  \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// A zmm loop: accumulators from acc[16][16 lanes], inputs in zmm16 / zmm17.
#define ANVIL_BENCH_ZMM_LOOP(INSN)                                                             \
    __asm__ volatile("vmovdqu32 (%[in]), %%zmm16\n\t"                                          \
                     "vmovdqu32 64(%[in]), %%zmm17\n\t" ANVIL_BENCH_X16(ANVIL_BENCH_LD_Z)      \
                     "1:\n\t" ANVIL_BENCH_X16(INSN) ANVIL_BENCH_X16(INSN)                      \
                         ANVIL_BENCH_X16(INSN) ANVIL_BENCH_X16(INSN)                           \
                     "dec %[n]\n\t"                                                            \
                     "jnz 1b\n\t" ANVIL_BENCH_X16(ANVIL_BENCH_ST_Z) "vzeroupper\n\t"          \
                     : [n] "+r"(n)                                                             \
                     : [acc] "r"(acc), [in] "r"(in)                                            \
                     : "memory", "cc", ANVIL_BENCH_CLOBBER16, "xmm16", "xmm17")

}  // namespace

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop_zmm(int64_t iters) {
    // Each instruction adds 2 * 2^-40 to accumulators in [1, 3): absorbed, so
    // the values stay put (no overflow, no denormals, which AVX512-BF16
    // flushes).  bf16 2^-20 = 0x3580.
    alignas(64) float acc[16][16];
    alignas(64) uint16_t in[64];
    for (int r = 0; r < 16; ++r)
        for (float &v : acc[r]) v = 1.0f + 0.1f * float(r);
    for (uint16_t &v : in) v = 0x3580;
    if (iters > 0) {
        int64_t n = iters;
#define ANVIL_BENCH_DP(r) "vdpbf16ps %%zmm16, %%zmm16, %%zmm" r "\n\t"
        ANVIL_BENCH_ZMM_LOOP(ANVIL_BENCH_DP);
#undef ANVIL_BENCH_DP
    }
    float sum = 0;
    for (int r = 0; r < 16; ++r) sum += acc[r][r];
    return sum;
}

__attribute__((target("avx512f,avx512vnni"))) uint64_t dpbusd_loop_zmm(int64_t iters) {
    // int32 lanes wrap harmlessly; the value only keeps the loop alive.
    alignas(64) int32_t acc[16][16];
    alignas(64) int8_t in[128];
    for (int r = 0; r < 16; ++r)
        for (int32_t &v : acc[r]) v = r;
    for (int i = 0; i < 128; ++i) in[i] = int8_t(i < 64 ? 3 : -5);  // zmm16 u8, zmm17 s8
    if (iters > 0) {
        int64_t n = iters;
#define ANVIL_BENCH_DP(r) "vpdpbusd %%zmm17, %%zmm16, %%zmm" r "\n\t"
        ANVIL_BENCH_ZMM_LOOP(ANVIL_BENCH_DP);
#undef ANVIL_BENCH_DP
    }
    uint64_t sum = 0;
    for (int r = 0; r < 16; ++r) sum += uint32_t(acc[r][r]);
    return sum;
}

__attribute__((target("avx2,avxvnni"))) uint64_t dpbusd_loop_ymm(int64_t iters) {
    alignas(32) int32_t acc[12][8];
    alignas(32) int8_t in[64];
    for (int r = 0; r < 12; ++r)
        for (int32_t &v : acc[r]) v = r;
    for (int i = 0; i < 64; ++i) in[i] = int8_t(i < 32 ? 3 : -5);  // ymm12 u8, ymm13 s8
    if (iters > 0) {
        int64_t n = iters;
#define ANVIL_BENCH_DP(r) "%{vex%} vpdpbusd %%ymm13, %%ymm12, %%ymm" r "\n\t"
        __asm__ volatile("vmovdqu (%[in]), %%ymm12\n\t"
                         "vmovdqu 32(%[in]), %%ymm13\n\t" ANVIL_BENCH_X12(ANVIL_BENCH_LD_Y)
                         "1:\n\t" ANVIL_BENCH_X12(ANVIL_BENCH_DP) ANVIL_BENCH_X12(ANVIL_BENCH_DP)
                             ANVIL_BENCH_X12(ANVIL_BENCH_DP) ANVIL_BENCH_X12(ANVIL_BENCH_DP)
                         "dec %[n]\n\t"
                         "jnz 1b\n\t" ANVIL_BENCH_X12(ANVIL_BENCH_ST_Y) "vzeroupper\n\t"
                         : [n] "+r"(n)
                         : [acc] "r"(acc), [in] "r"(in)
                         : "memory", "cc", ANVIL_BENCH_CLOBBER16);
#undef ANVIL_BENCH_DP
    }
    uint64_t sum = 0;
    for (int r = 0; r < 12; ++r) sum += uint32_t(acc[r][r % 8]);
    return sum;
}

#undef ANVIL_BENCH_ZMM_LOOP
#undef ANVIL_BENCH_CLOBBER16
#undef ANVIL_BENCH_ST_Y
#undef ANVIL_BENCH_LD_Y
#undef ANVIL_BENCH_ST_Z
#undef ANVIL_BENCH_LD_Z
#undef ANVIL_BENCH_X16
#undef ANVIL_BENCH_X12

}  // namespace anvil_bench
