// anvil-bench: oneDNN's forward-inference convolution primitive as the peer
// of anvil_conv2d_*: NHWC src and dst (tag nhwc), weights given in the
// plain layout (OIHW or HWIO, grouped as G x OC/G x IC/G x KH x KW) and
// reordered once in init into the primitive's preferred format
// (format_tag::any; "prepacked"), the attributes of an attr_spec (output
// scales, src / dst zero points -- as runtime values where the primitive
// wants them --, eltwise and binary post-ops) and an f32 bias (the caller
// passes oneDNN's bias / scale, see anvil_bench_attr.h).  The primitive is
// created in init; only execute + wait is timed.
#pragma once
#include <memory>
#include <string>

#include "anvil_bench_attr.h"
#include "anvil_bench_conv.h"
#include "conv/conv_descriptor.h"

namespace anvil_bench {

class onednn_conv {
public:
    onednn_conv();
    ~onednn_conv();
    // ld: row stride (elements) of the full binary operands (ad.bin_ld).
    bool init(const conv_types &t, const anvil::conv::conv_shape &s,
              anvil_conv_weights_layout_t layout, const void *src, const void *wei, void *dst,
              const attr_spec &a, const attr_data &ad, std::string *err);
    void execute();
    const std::string &impl() const;

private:
    struct state;
    std::unique_ptr<state> s_;
};

}  // namespace anvil_bench
