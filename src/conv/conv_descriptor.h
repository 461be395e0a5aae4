// benchdnn-style convolution problem descriptors, e.g.
//   mb1_g32ic32ih112iw112oc32oh112ow112kh3kw3sh1sw1ph1pw1dh0dw0n"mobilenet:conv2_1/dw"
// parsed into shapes (for anvil-bench, the tests and the batch files under
// tools/inputs/).  Rules as benchdnn's: '_' separators are optional; mb
// defaults to 2, g and strides to 1, dilation to 0; a missing oh/ow is
// computed, a missing ph/pw is the one that makes oh/ow come out; the
// bottom/right padding is what the output size implies (benchdnn's
// padding_r, clamped at 0: a negative one only leaves input rows unread).
// Dimensions as benchdnn counts them: w fields alone are a 1-D convolution
// (height 1); h fields alone give w the same values; d fields make a 3-D
// problem, accepted when one of depth, height or width is flat (size,
// output and kernel 1, no padding), which is then the 2-D problem of the
// other two.  anvil's shorthand: beside h fields, a w set without iw or kw
// takes every missing w field from its h twin ("ih9iw7kh3ph1").
#pragma once
#include <cstdint>
#include <string>

#include "anvil/anvil.h"

namespace anvil::conv {

struct conv_shape {
    int64_t mb = 2, g = 1;
    int64_t ic = 0, ih = 0, iw = 0;
    int64_t oc = 0, oh = 0, ow = 0;
    int64_t kh = 0, kw = 0;
    int64_t sh = 1, sw = 1;
    int64_t pt = 0, pl = 0, pb = 0, pr = 0;
    int64_t dh = 0, dw = 0;
    std::string name;
};

// Parses one descriptor (surrounding blanks allowed).  On failure returns
// false and says why in *err.
bool parse_conv_descriptor(const std::string &text, conv_shape *out, std::string *err);
// The canonical descriptor of a shape (all fields, benchdnn order, name last).
std::string format_conv_descriptor(const conv_shape &s);

// Multiply-adds of the problem (2x this is its FLOP count).
double conv_macs(const conv_shape &s);

// Fills the shape fields of desc (N, G, channels, spatial sizes, kernel,
// strides, padding, dilation); types, zero points, scales and post-ops are
// left as they are.
void fill_conv_desc(const conv_shape &s, anvil_conv2d_desc_t *desc);

}  // namespace anvil::conv
