#include "lowp/lp_scratch.h"

#include <algorithm>
#include <cstdlib>

namespace anvil::lowp {

scratch::~scratch() { std::free(p_); }

void *scratch::get(int64_t bytes) {
    if (bytes > cap_) {
        const int64_t rounded = (std::max<int64_t>(bytes, 64) + 63) / 64 * 64;
        void *q = std::aligned_alloc(64, size_t(rounded));
        if (!q) return nullptr;
        std::free(p_);
        p_ = q;
        cap_ = rounded;
    }
    return p_;
}

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

}  // namespace anvil::lowp
