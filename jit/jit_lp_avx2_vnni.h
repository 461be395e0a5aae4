// AVX2 + AVX-VNNI low-precision micro-kernel generator (lowp/lp_ukernel.h):
// u8s8 only, on ymm with the VEX-encoded vpdpbusd, so it runs on AVX2-class
// CPUs that have AVX-VNNI but not AVX-512.  No EVEX instruction is emitted.
// Specialised on m (1..12), nv (1..2) and accumulate.
#pragma once
#include <algorithm>
#include <string>

#include "jit/jit_lp_generator.h"

namespace anvil::jit {

class jit_lp_avx2_vnni : public jit_lp_generator {
public:
    static constexpr int kVecBytes = 32;  // 8 dwords per ymm
    static constexpr int kRegs = 16;      // ymm0..15: all VEX can name

    explicit jit_lp_avx2_vnni(const lowp::lp_ukernel_desc &d);
    static std::string kernel_name(const lowp::lp_ukernel_desc &d);

private:
    // Register map: a row of the tile is w_ = 2 * nv ymm accumulators,
    // from ymm0 up; B stays in memory (the second source of vpdpbusd may
    // be one), so the rest of the 16 holds A broadcasts, from ymm15 down,
    // rotating so consecutive rows' broadcasts are independent.  Rows are
    // emitted in chunks of at most max_rows() (7 for nv = 1, 3 for nv = 2)
    // so at least two broadcast registers remain.
    int max_rows() const { return (kRegs - 2) / w_; }
    Xbyak::Ymm acc(int i, int v) const { return Xbyak::Ymm(i * w_ + v); }
    Xbyak::Ymm bcast(int i) const { return Xbyak::Ymm(kRegs - 1 - i % n_bcast()); }
    int n_bcast() const { return std::min(4, kRegs - rows_ * w_); }

    void init_acc() override;
    void k_group(int u) override;
    void store_acc() override;

    int w_ = 0;
};

}  // namespace anvil::jit
