// Per-architecture CPU detection behind cpu::info() (cpu/isa.cpp).  Exactly
// one detect_*.cpp provides it for the target architecture.
#pragma once
#include "cpu/isa.h"

namespace anvil::cpu {

// Vendor, brand, x86 feature bits (none elsewhere: the tiers describe x86)
// and cache sizes.  Called once.
cpu_info detect_cpu();

}  // namespace anvil::cpu
