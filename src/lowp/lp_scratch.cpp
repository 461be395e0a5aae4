#include "lowp/lp_scratch.h"

namespace anvil::lowp {

scratch &scratch_acc() {
    thread_local scratch s;
    return s;
}
scratch &scratch_apack() {
    thread_local scratch s;
    return s;
}
scratch &scratch_bpack() {
    thread_local scratch s;
    return s;
}

void release_thread_scratch() {
    scratch_acc().reset();
    scratch_apack().reset();
    scratch_bpack().reset();
}

}  // namespace anvil::lowp
