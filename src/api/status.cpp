#include "anvil/anvil.h"
#include "api/post_op_map.h"

extern "C" {

const char *anvil_status_str(anvil_status_t status) {
    // Read as an int: a value outside the enum may come from C callers.
    switch (anvil::api::enum_value(status)) {
        case anvil_success: return "success";
        case anvil_null_pointer: return "a required pointer is NULL";
        case anvil_invalid_argument: return "invalid argument (bad trans/offset character, enum or value)";
        case anvil_bad_size: return "negative size";
        case anvil_bad_leading_dim: return "leading dimension smaller than the matrix requires";
        case anvil_size_overflow: return "a size or byte count overflows 64 bits";
        case anvil_unsupported: return "unsupported on this CPU/build, or too late to change";
        case anvil_out_of_memory: return "out of memory (or over the configured memory cap)";
        case anvil_jit_error: return "JIT code generation or executable mapping failed";
        case anvil_invalid_handle: return "invalid handle (NULL, or not a handle of this kind)";
        case anvil_runtime_error: return "unexpected internal error";
        case anvil_bad_packed_buffer: return "packed buffer missing or not made for this plan";
    }
    return "unknown status";
}

const char *anvil_version(void) { return "0.1.0"; }

}
