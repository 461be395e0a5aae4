// Text forms of a post-op chain for ANVIL_VERBOSE exec lines.  They use
// anvil-bench's attribute syntax (--attr-post-ops, --attr-scales,
// --attr-zero-points, --dst) so that a logged call can be replayed as an
// anvil-bench problem with the same attributes.
#pragma once
#include <string>

#include "lowp/chain_epilogue.h"

namespace anvil::lowp {

// "relu+leaky_relu:0.1+clip:0:6+add:bf16:per_oc", or "none".
std::string post_ops_string(const std::vector<post_op> &ops);
// The chain's fields other than the post-ops, comma-separated key=value:
//   dst=<type>,scales=<none|common:S|per_oc>,zero_points=<src:V:wei:V:dst:V|none>,
//   bias=<0|1>,post_ops=<post_ops_string>
// (zero points that are 0 are left out; ':' keeps the field free of ',').
std::string chain_fields(const chain_spec &c, bool has_bias, int32_t src_zp, int32_t wei_zp,
                         int32_t dst_zp);
const char *out_type_name(out_type t);

}  // namespace anvil::lowp
