// TEMPORARY stub until src/fallback/hwy_lowp.cc lands: no Highway lp kernels.
#include "lowp/lp_backend.h"
namespace anvil::lowp {
const lp_backend *highway_lp_backend() { return nullptr; }
}  // namespace anvil::lowp
