// CPU feature detection and the ANVIL_MAX_ISA cap.
#pragma once
#include <cstdint>
#include <string>

#include "anvil/anvil.h"

namespace anvil::cpu {

// Individual features as bits; tiers (anvil_isa_t) are unions of them, so
// "can this path run" is a subset test: (required & effective) == required.
enum feature : uint32_t {
    f_avx2 = 1u << 0,       // AVX2 + FMA
    f_avx2_vnni = 1u << 1,  // AVX-VNNI (VEX-encoded vpdpbusd on ymm)
    f_avx512_core = 1u << 2,  // AVX-512 F + BW + DQ + VL
    f_avx512_vnni = 1u << 3,
    f_avx512_bf16 = 1u << 4,
    f_amx_tile = 1u << 5,
    f_amx_bf16 = 1u << 6,
    f_amx_int8 = 1u << 7,
};

// The feature set a tier stands for (what it needs the CPU to have).
uint32_t tier_features(anvil_isa_t tier);
// Highest tier fully contained in a feature set.
anvil_isa_t highest_tier(uint32_t features);
bool parse_isa_name(const std::string &name, anvil_isa_t *out);
std::string features_string(uint32_t features);

struct cache_sizes {
    int64_t l1d = 32 * 1024;
    int64_t l2 = 1024 * 1024;
    int64_t l3 = 32 * 1024 * 1024;  // per core complex as far as we can tell
};

struct cpu_info {
    std::string vendor;
    std::string brand;
    uint32_t detected = 0;   // what the CPU (and the OS's XSAVE state) allows
    cache_sizes caches;
    std::string l3_note;     // how the L3 figure was derived
    // How far ahead (bytes) a kernel that streams prepacked weights once
    // (one row tile: M <= MR, the bandwidth-bound inference case) prefetches
    // its own stream.  It depends on the core's memory pipeline, not on a
    // cache size alone, so it is set per vendor from measurements (1
    // thread, planned / matmul handles, 1 and 4 x 4096 x 4096, 1 x 4096 x
    // 11008, 4 x 11008 x 4096 in f32, bf16 and u8s8s32):
    //  - AMD (Zen 5 VM): L2 / 16 = 64 KiB; 32 / 64 / 128 / 256 KiB gave
    //    +30 / +46 / +52 / +19% over prefetching one panel ahead
    //    (lp_driver.cpp has the series).
    //  - Intel (a Xeon VM, family 6 model 207, 2 MiB L2, where L2 / 16 is
    //    128 KiB): 128 / 32 / 16 / 8 / 4 / 2 KiB gave 0.89-0.95x / 0.90-0.98x
    //    / 0.95-1.07x / 0.99-1.11x / 0.98-1.10x / 0.98-1.04x oneDNN's
    //    prepacked matmul in one run each; from DRAM (--cold, f32) 128 KiB
    //    0.93-1.06x, 8 KiB 1.02-1.24x.  8 KiB: about as far as the L1 fill
    //    buffers reach; farther, the lines arrive before they are wanted
    //    and leave L1 again.
    //  - AMD family 0x19 (Zen 4, an EPYC VM: 1 MiB L2): 8 KiB.  Ratios to
    //    oneDNN's prepacked matmul, 1 / 4 / 16 rows (f32 1x4096x4096,
    //    1x11008x4096, 4x4096x4096, 4x11008x4096, 16x11008x4096): 64 KiB
    //    f32 2.05 1.78 1.18 1.29 1.06, bf16 1.26 1.67 1.35 1.03 0.99, u8s8s32
    //    0.79 1.08 0.93 0.96 0.94; 8 KiB f32 2.39 2.13 1.43 1.53 1.08, bf16
    //    1.44 1.88 1.66 1.26 1.00, u8s8s32 0.99 1.28 1.05 1.14 0.99 (16 KiB
    //    about the same, 4 / 32 / 128 KiB less), one run each.
    //  - others (Hygon, VIA, Arm, ... and the Highway kernels, which read
    //    it too): L2 / 16 as before the Intel measurement, unmeasured.
    // Set by detect_cpu() (0 only before that).
    int64_t stream_prefetch_lead = 0;
    // The fp32 GEMM's packed A block (mc x kc) takes L2 / a_block_l2_divisor
    // (gemm/blocking.cpp).  2 everywhere (BLIS's half of L2, which the
    // Zen 5 tuning used) except Intel, 8: on the Xeon VM (2 MiB L2, kc =
    // 373) mc = 672 -> 168 rows measured +3-8% on squares 512..2048 and
    // 512 x 4096 x 4096, 0% on 256 x 4096 x 4096 and 300 x 500 x 700 (1
    // thread, in-process A/B; 120 and 240 rows within 1% of 168).
    int64_t a_block_l2_divisor = 2;
    // How many K groups ahead the lowp B packer (lowp/lp_pack.cpp,
    // pack_block_n) prefetches the columns it packs from a row-major B.
    // 8 (Zen 5: 4 and 16 gave less); Intel 16: on the Xeon VM, u8s8s32
    // 16 x 4096 x 4096 / 16 x 4096 x 11008 / 64 x 4096 x 4096 +36 / +34 /
    // +15% over 8 (24: +31 / +28 / +13%; 4: -2%), bf16 within noise
    // (compute-bound there: vdpbf16ps runs at half the fp32 FMA peak).
    int64_t pack_prefetch_groups = 8;
    // Whether vdpbf16ps retires at half the rate of an fp32 FMA (or less),
    // so bf16 products run faster as two FMAs on operands widened to fp32
    // (exact: a bf16 is the top half of an fp32).  Intel: on the Xeon VM
    // (family 6 model 207) `anvil-bench --peak` gives vdpbf16ps 87 GFLOP/s
    // against the FMA's 177 (one zmm vdpbf16ps every 2 cycles), and a
    // 12 x 32 tile in L1 ran 88 GFLOP/s with vdpbf16ps, 161 with FMAs on A
    // widened in memory and B split in registers.  Set for every Intel CPU
    // (the other Intel models with AVX512-BF16 are unmeasured).  Zen 5 runs
    // vdpbf16ps at twice the FMA's flops (about 420 vs 212 GFLOP/s): false
    // there.
    bool bf16_dot_half_rate = false;
    // AVX512-VBMI (vpermb), not an ISA tier of its own: the int8
    // depthwise byte-dot kernels permute source bytes with it; they can run
    // where it is present and the cap allows AVX512-VNNI (Ice Lake and
    // later Xeons, Zen 4 / 5) and do by default where int8_dw_byte_dot.
    bool avx512_vbmi = false;
    // Whether the int8 depthwise convolution runs the byte-dot kernels
    // (where the backend supports them: VBMI above, VNNI under the cap)
    // rather than the kernels that widen the source to int32.  Set where
    // measured faster: Intel (the Xeon VM, family 6 model 207: MobileNet-
    // v2's u8 depthwise layers 0.83x -> 1.07x oneDNN, docs/conv.md) and AMD
    // family 0x19 (Zen 4, an EPYC VM, 1 thread: the ten MobileNet-v2
    // depthwise layers' sum 1.35x -> 1.86x oneDNN in u8, 1.26x -> 1.43x in
    // s8; per layer u8 1.19-1.43x -> 1.33-2.10x, s8 1.11-1.36x ->
    // 1.23-1.68x).  Not on Zen 5 yet (unmeasured: the widening kernels ran
    // at 1.01-1.40x oneDNN there).  The tests run both everywhere the CPU
    // allows (conv::set_dw_byte_dot_override).
    bool int8_dw_byte_dot = false;
    // Whether anvil_sgemm with M = 1 (or M = 2 and B larger than L3) and a
    // row-major B read in place takes the row-stream path (gemm/stream.h:
    // whole rows of B in sequence, the Highway kernel of the best target)
    // on the JIT tiers too, instead of the JIT in-place kernels that walk
    // B in column strips.  AMD family 0x19 with AVX-512 (Zen 4, measured
    // on an EPYC VM, 1 thread, vs dnnl_sgemm in one run): 1 x 4096 x 4096
    // 0.57x -> 1.18x,
    // 1 x 11008 x 4096 0.49x -> 0.87x, 1 x 4096 x 11008 0.59x -> 1.23x,
    // 1 x 1000 x 2048 0.81x -> 1.08x, 2 x 4096 x 4096 1.07x -> 1.55x; but 2
    // x 1000 x 2048 (B in L3) 0.91x -> 0.79x, hence M = 2 only past L3.
    // Zen 5 (where plain M = 1 ran at 0.86x) and Intel are unmeasured.
    bool jit_row_stream = false;
};

// Detected once, thread-safe.
const cpu_info &info();

// Features anvil may use: detected & cap.  Compute calls read it with
// freeze = true, after which anvil_set_max_isa refuses to change the cap;
// queries (anvil-info, anvil_get_effective_isa) pass false.
uint32_t effective_features(bool freeze = true);
inline bool has(uint32_t required) {
    return (effective_features() & required) == required;
}
anvil_isa_t effective_tier(bool freeze = true);

// The tier the backends dispatch on.  On x86-64 the effective tier.
// Elsewhere the x86 tiers are all absent (effective_tier() is scalar), and
// the cap only says whether SIMD may run: capped to scalar gives scalar,
// anything else avx2, which the Highway backends read as "the best target
// this CPU supports" (fallback::allowed_targets).
anvil_isa_t dispatch_tier(bool freeze = true);

// Sets the cap; fails once effective_features() has been read by a compute
// call (see freeze_cap).
anvil_status_t set_max_isa(anvil_isa_t tier);
// Tests may reset the cap at any time (not part of the public API).
void set_max_isa_for_test(anvil_isa_t tier);

}  // namespace anvil::cpu
