// A depthwise-convolution backend supplies dw micro-kernels (dw_ukernel.h)
// for one ISA tier.  The driver asks select_dw_backend() for the best one
// the effective ISA allows (the same scheme as lowp/lp_backend.h).
#pragma once
#include <memory>

#include "anvil/anvil.h"
#include "conv/dw_ukernel.h"

namespace anvil::conv {

struct dw_ukernel_ref {
    dw_ukernel_fn fn = nullptr;
    std::shared_ptr<const void> keep_alive;  // JIT code; empty for static kernels
    const char *name = "";
};

class dw_backend {
public:
    virtual ~dw_backend() = default;
    virtual const char *name() const = 0;  // "jit:avx512_dw", "hwy:AVX2", "scalar"
    virtual anvil_isa_t tier() const = 0;
    // Kernel for desc (1 <= m <= kDwMaxM, a dw_kind, DW_FLAG_* flags,
    // row_taps <= kDwMaxRowTaps; anything else: anvil_invalid_argument).
    // A kernel for row_taps R > 0 is only called with taps that keep
    // dw_ukernel_desc's promise.  DW_FLAG_ZERO_POINT is ignored for
    // f32 / bf16.  Every backend's kernel for one desc obeys desc.m and
    // DW_FLAG_ZERO_POINT: a kernel made without it never
    // subtracts args->zero_point (so it is only correct when that is 0).
    // desc.epi != 0 (a fused epilogue): anvil_unsupported unless
    // supports_fused_epilogue().
    virtual anvil_status_t get(const dw_ukernel_desc &desc, dw_ukernel_ref *out) const = 0;
    virtual bool supports_fused_epilogue() const { return false; }
    // Whether get() makes byte-dot row kernels (narrow_int a
    // dw_byte_dot_mode; the others answer anvil_unsupported: their kernels
    // read plain int32 weight rows).
    virtual bool supports_byte_dot() const { return false; }
    // Whether every kernel of get() takes several output rows per call
    // (dw_ukernel_args::nrows; byte-dot kernels always do).
    virtual bool supports_rows() const { return false; }
    // Whether get() makes bf16 pair-dot kernels (kind bf16, narrow_int a
    // dw_byte_dot_mode; the others answer anvil_unsupported).
    virtual bool supports_bf16_pair_dot() const { return false; }
};

// The descriptor with every byte set (reserved bytes zero; the zero-point
// flag only for the int kinds, the no-scale flag only with a fused
// epilogue whose scale is not per channel).
inline dw_ukernel_desc make_dw_desc(uint8_t tier, dw_kind kind, int m, bool has_zero_point,
                                    int row_taps = 0, int row_step = 1, uint8_t narrow_int = 0,
                                    uint8_t epi = 0, bool no_scale = false) {
    dw_ukernel_desc d{};
    d.epi = (epi & DW_EPI_OUT_MASK) ? epi : 0;
    d.narrow_int = (kind == dw_kind::u8 || kind == dw_kind::s8) ? narrow_int
                   : kind == dw_kind::bf16 && dw_byte_dot_rows(narrow_int) > 0 ? narrow_int
                                                                               : 0;
    d.row_taps = uint8_t(row_taps);
    d.row_step = row_taps ? uint8_t(row_step) : 0;
    d.tier = tier;
    d.kind = kind;
    d.m = uint8_t(m);
    d.flags = uint8_t(((has_zero_point && (kind == dw_kind::u8 || kind == dw_kind::s8)) ? DW_FLAG_ZERO_POINT : 0) |
                      (no_scale && d.epi != 0 && !(d.epi & DW_EPI_SCALE_N) ? DW_FLAG_NO_SCALE : 0));
    return d;
}

inline bool dw_desc_valid(const dw_ukernel_desc &d) {
    return d.m >= 1 && d.m <= kDwMaxM && uint8_t(d.kind) <= uint8_t(dw_kind::s8) &&
           d.flags <= (DW_FLAG_ZERO_POINT | DW_FLAG_NO_SCALE) &&
           (!(d.flags & DW_FLAG_NO_SCALE) || (d.epi != 0 && !(d.epi & DW_EPI_SCALE_N))) &&
           d.narrow_int <= dw_byte_dot_mode(kDwMaxDotRows) &&
           (dw_byte_dot_rows(d.narrow_int) == 0 || d.row_taps > 0) && d.row_taps <= kDwMaxRowTaps &&
           (d.epi & DW_EPI_OUT_MASK) <= 4 && (d.epi == 0 || (d.epi & DW_EPI_OUT_MASK) != 0) &&
           (d.row_taps == 0 ? d.row_step == 0 : d.row_step >= 1 && d.row_step <= kDwMaxRowStep);
}

// Best backend under the effective ISA.  Never null.
//   JIT avx512_core (all four kinds) > Highway > scalar
const dw_backend &select_dw_backend();
// Each tier's own implementation; the JIT one does not look at the ISA cap
// (select_dw_backend does), only at what the CPU has.
const dw_backend *jit_avx512_dw_backend();  // null when not built or the CPU lacks AVX-512
const dw_backend *highway_dw_backend();     // best Highway target the ISA cap allows
const dw_backend *scalar_dw_backend();

// The contract element by element (dw_ref.cpp), for channels [c0, c1) of
// rows [0, args->m): the scalar backend's kernels and the portable tails.
// zero_point: subtract args->zero_point (int kinds only).
void dw_ukernel_scalar_range(const dw_ukernel_args *args, dw_kind kind, bool zero_point,
                             int64_t c0, int64_t c1);
inline void dw_ukernel_scalar(const dw_ukernel_args *args, dw_kind kind, bool zero_point) {
    dw_ukernel_scalar_range(args, kind, zero_point, 0, args->channels);
}

}  // namespace anvil::conv
