// anvil-bench conv: anvil_conv2d_* vs oneDNN's convolution primitive.
//
//   anvil-bench conv --dt f32|bf16|u8s8u8|u8s8f32|s8s8s8|... --mode check|perf
//                    [DESCRIPTOR ...] [--batch FILE ...] [--mb N]
//                    [--wei-layout oihw|hwio] [--attr-post-ops=..]
//                    [--attr-scales=..] [--attr-zero-points=src:V,dst:V] [--bias]
//
// Problems are benchdnn descriptors (src/conv/conv_descriptor.h), e.g.
// mb1_ic64ih56iw56_oc64oh56ow56_kh3kw3sh1sw1ph1pw1, one per line in batch
// files ('#' comments; benchdnn option lines "--..." are listed as skipped).
// A name ending in "*K" (n"resnet_50:res2a_branch2b*3") says the layer
// occurs K times in the model: the perf stack of a batch file weighs it so.
//
// Types (--dt): src, weights, dst as a triple of f32 bf16 u8 s8 s32
// ("u8s8u8", "bf16bf16f32", also benchdnn's "u8:s8:u8"), or the short forms
// f32 (f32 x 3) and bf16 (bf16 x 3).  Attributes use the grammar of the
// matmul handle (anvil_bench_attr.h); the weights zero point is not part of
// anvil's convolution.
//
// Data: small integers everywhere (f32 / bf16: non-zero integers in [-4, 4],
// every fp32 partial sum exact while 16 IC/G KH KW < 2^24; int8: the whole
// u8 / s8 range on VNNI CPUs, 7-bit data otherwise), so any correct
// implementation gives the exact accumulator.
//
// The reference (check mode and the per-trial checks of perf mode) reuses
// the matmul chain reference (attr_reference): at chosen output pixels the
// convolution is written as a GEMM row -- the im2col patch of the pixel over
// all groups (K = IC KH KW; padding taps hold the source zero point, so they
// contribute 0) times block-diagonal weights -- and the attribute chain is
// evaluated on that exact accumulator with its documented error bounds.
//
//   check  anvil vs the reference at points (every point of small problems)
//          and anvil vs oneDNN (NHWC src / dst, weights reordered once into
//          format_tag::any) on every element: equal bits, or -- only where a
//          transcendental post-op or a non-power-of-two scale with a bias is
//          involved, or for .5 ties of integer outputs -- both within their
//          bounds of the reference.  oneDNN 2.6 adds the bias before the
//          output scale: it gets bias / scale.
//   perf   anvil (weights packed once) and oneDNN (weights reordered once)
//          alternating (anvil_bench_timing.h); per layer GFLOP/s (GOP/s for
//          int8; 2 x conv_macs per call), % of the measured peak and the ratio
//          t(oneDNN) / t(anvil); per batch file the stack: sum over layers of
//          time x multiplicity for both, its GFLOP/s and ratio, the geomean
//          and the minimum of the layer ratios.
#pragma once
#include <cstdint>
#include <string>

#include "anvil/anvil.h"
#include "anvil_bench_cli.h"

namespace anvil_bench {

struct conv_types {
    anvil_data_type_t src = anvil_dt_f32, wei = anvil_dt_f32, dst = anvil_dt_f32;
    std::string name;  // canonical: "f32", "bf16", or the triple "u8s8u8"
    bool int8() const { return src == anvil_dt_u8 || src == anvil_dt_s8; }
};

// Parses --dt for conv; false with *err when the text or combination is not
// one of anvil's convolution types.
bool parse_conv_dt(const std::string &s, conv_types *t, std::string *err);

// The conv subcommand (after main has applied --isa and --threads).  Returns
// the exit status: 0, 1 when a check failed, 2 on a usage error.
int run_conv(const options &o, int threads, bool pinned, const std::string &affinity,
             int allowed_cpus, int online_cpus);

}  // namespace anvil_bench
