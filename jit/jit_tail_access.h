// Loads and stores of a row's last, partial vector of fp32 lanes, as narrow
// as the tail allows: xmm for up to 4 columns, ymm for up to 8, zmm above,
// masked only when the tail is not exactly 4, 8 or 16 columns.
//
// Why: on Zen 5 a masked access whose masked-off lanes reach into the next
// page costs an assist -- measured on an 8 x 8 x 8 direct kernel: a B or C
// whose last row ended 32 bytes before a page boundary took 175-185 ns per
// call instead of 11-13 ns when that page was not mapped, and 26 ns
// instead of 13 for the masked store when it was.  A narrower access has a
// narrower masked-off part (at most 12, 28 or 60 bytes), and the common 8-
// and 4-column tails none at all.  The register keeps the zeroing-mask
// semantics either way (an xmm / ymm write clears the upper lanes), so the
// arithmetic on the full zmm, and its bits, are unchanged.
#pragma once
#define XBYAK_NO_OP_NAMES
#include <xbyak/xbyak.h>

namespace anvil::jit {

// dst = the first `cols` (1..15) floats at src, the other lanes 0; k holds
// the mask of the first `cols` lanes.
inline void load_tail(Xbyak::CodeGenerator &g, const Xbyak::Zmm &dst, const Xbyak::Address &src,
                      int cols, const Xbyak::Opmask &k) {
    const int idx = dst.getIdx();
    if (cols <= 4) {
        if (cols == 4)
            g.vmovups(Xbyak::Xmm(idx), src);
        else
            g.vmovups(Xbyak::Xmm(idx) | k | Xbyak::util::T_z, src);
    } else if (cols <= 8) {
        if (cols == 8)
            g.vmovups(Xbyak::Ymm(idx), src);
        else
            g.vmovups(Xbyak::Ymm(idx) | k | Xbyak::util::T_z, src);
    } else {
        g.vmovups(dst | k | Xbyak::util::T_z, src);
    }
}

// The first `cols` (1..15) lanes of src to dst; nothing else is written.
inline void store_tail(Xbyak::CodeGenerator &g, const Xbyak::Address &dst, const Xbyak::Zmm &src,
                       int cols, const Xbyak::Opmask &k) {
    const int idx = src.getIdx();
    if (cols <= 4) {
        if (cols == 4)
            g.vmovups(dst, Xbyak::Xmm(idx));
        else
            g.vmovups(dst | k, Xbyak::Xmm(idx));
    } else if (cols <= 8) {
        if (cols == 8)
            g.vmovups(dst, Xbyak::Ymm(idx));
        else
            g.vmovups(dst | k, Xbyak::Ymm(idx));
    } else {
        g.vmovups(dst | k, src);
    }
}

}  // namespace anvil::jit
