/* The public calls that take an enum by value, called with any int, as a C
 * caller may (C converts an int to an enum type freely; C++ code building
 * an out-of-range enum value would itself be undefined, which UBSan's
 * -fsanitize=enum reports in the caller).  Used by fuzz_api_args.cpp. */
#include "anvil/anvil.h"

anvil_status_t fz_set_max_isa(int isa) { return anvil_set_max_isa((anvil_isa_t)isa); }

const char *fz_isa_name(int isa) { return anvil_isa_name((anvil_isa_t)isa); }

const char *fz_status_str(int status) { return anvil_status_str((anvil_status_t)status); }

anvil_status_t fz_conv2d_pack_weights(anvil_conv2d_t conv, const void *weights, int layout,
                                      void *packed) {
    return anvil_conv2d_pack_weights(conv, weights, (anvil_conv_weights_layout_t)layout, packed);
}
