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

anvil_status_t fz_explain_gemm(int a_dt, int b_dt, char transa, char transb, int64_t M, int64_t N,
                               int64_t K, char *buf, size_t size, size_t *needed) {
    return anvil_explain_gemm((anvil_data_type_t)a_dt, (anvil_data_type_t)b_dt, transa, transb, M,
                              N, K, buf, size, needed);
}
