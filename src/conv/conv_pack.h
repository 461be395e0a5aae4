// Packing the caller's OIHW / HWIO weights into the layout of a conv plan
// (conv_plan.h).  The bytes depend only on the plan's shape and types,
// never on the CPU or the ISA cap.
#pragma once
#include <cstdint>

#include "anvil/anvil.h"
#include "conv/conv_plan.h"

namespace anvil::conv {

// Writes p.weights_bytes bytes at out.  Returns anvil_out_of_memory when
// the temporary per-group matrix cannot be allocated (nothing written).
anvil_status_t pack_conv_weights(const conv_plan &p, anvil_data_type_t wei_dt, const void *w,
                                 anvil_conv_weights_layout_t layout, uint8_t *out);

}  // namespace anvil::conv
