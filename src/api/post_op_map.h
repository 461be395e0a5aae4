// Turning the C API's post-op and data-type descriptions into the
// internal post-op chain (lowp/postops.h); shared by the matmul and conv2d
// handles.
#pragma once
#include <cstdint>
#include <cstring>

#include "anvil/anvil.h"
#include "lowp/postops.h"

namespace anvil::api {

// The integer a C caller stored in an enum field.  C allows any int there;
// reading it as the C++ enum type would be undefined for values outside the
// enumerators (UBSan's -fsanitize=enum), so the bytes are read as an int.
template <typename E>
int enum_value(const E &e) {
    static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

inline bool valid_dt(const anvil_data_type_t &t) {
    const int v = enum_value(t);
    return v >= anvil_dt_f32 && v <= anvil_dt_s8;
}

// One post-op; N is the number of output columns (binary M x N operands
// need ld >= N).
anvil_status_t map_post_op(const anvil_post_op_t &in, int64_t N, lowp::post_op *out);

lowp::out_type map_out(anvil_data_type_t t);

// "f32", "bf16", "s32", "u8", "s8" (for ANVIL_VERBOSE lines; validated types only).
inline const char *dt_name(const anvil_data_type_t &t) {
    static const char *const names[] = {"f32", "bf16", "s32", "u8", "s8"};
    return valid_dt(t) ? names[enum_value(t)] : "?";
}

}  // namespace anvil::api
