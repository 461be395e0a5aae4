// The depthwise convolution driver (groups = IC = OC): channels in vector
// lanes; an item is (image, group of up to kDwMaxM output rows, block of up
// to 256 channels; dw_split).  Per row the interior splits into even tiles
// of up to kDwMaxM pixels that read the same in-bounds taps (one kernel
// call per tile size over all its tiles: dw_ukernel_args::nblocks;
// row_taps kernels when a kernel row's taps are pix_stride / S apart); each
// edge column is one call over the group's rows that share their kernel
// rows.
// The post-op chain runs once per item on its accumulators (or on runs of
// pixels when a row does not fit the 16 KiB buffer); a plain f32
// convolution has the kernels write dst directly, and so do the fused
// kernels (conv_dw_kernels::fused: the chain finished in registers).  Every
// output element takes the same operations whatever the items are, so the
// items may depend on the thread count (dw_split) and the results do not.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "conv/conv_gemm.h"
#include "conv/conv_plan.h"
#include "conv/dw_ukernel.h"
#include "lowp/chain_epilogue.h"

namespace anvil::conv {

// Items of a call: up to group_rows output rows by up to cblock channels,
// a multiple of 32 (the bf16 pair-form weight rows come in 32-channel
// slots) and of 64 for the int8 byte-dot kernels (their weight rows
// interleave 64 channels: dw_byte_dot_entry).
struct dw_split {
    int64_t group_rows = 1;
    int64_t cblock = 256;
};

// A racy but safe one-entry memo of the split for a thread count: a packed
// word, so readers see a whole entry or none; copies start empty.
class dw_split_memo {
public:
    dw_split_memo() = default;
    dw_split_memo(const dw_split_memo &) {}
    dw_split_memo &operator=(const dw_split_memo &) {
        word_.store(0, std::memory_order_relaxed);
        return *this;
    }
    bool get(int threads, bool acc_limited, dw_split *s) const;
    void put(int threads, bool acc_limited, const dw_split &s) const;

private:
    mutable std::atomic<uint64_t> word_{0};
};

struct conv_dw_kernels {
    dw_kind kind = dw_kind::f32;
    dw_ukernel_fn fn[kDwMaxM + 1] = {};
    // Interior tiles when their kernel rows' taps are pix_stride / S apart
    // (SW = S (DW + 1), S <= kDwMaxRowStep, KW <= kDwMaxRowTaps): kernels
    // made with row_taps = KW, row_step = S; row_taps == 0: none (fn for
    // everything).
    int row_taps = 0;
    int row_step = 0;
    // int kinds where the backend supports_byte_dot() and
    // cpu_info::int8_dw_byte_dot (or the test override): every kernel is a
    // byte-dot row kernel (dw_byte_dot_mode(1), fn with R = S = 1; the
    // fn_grows ones G rows) and reads the byte-dot weight rows
    // (conv_plan::dw_dot_offset).
    bool byte_dot = false;
    // bf16 where the backend supports_bf16_pair_dot() and vdpbf16ps is not
    // slow (cpu_info::bf16_dot_half_rate; or the test override): interior
    // tiles of output rows with G = 2..kDwMaxDotRows kernel rows in bounds
    // run the pair-dot kernels fn_grows[G] (dw_ukernel_desc::narrow_int),
    // which read the pair-form weight rows (conv_plan::dw_pair_offset).
    bool bf16_pair = false;
    // Every kernel takes several output rows per call (the backend's
    // supports_rows(), or byte_dot): interior tiles of rows that read the
    // same kernel rows run as one call per channel chunk.
    bool multi_row = false;
    dw_ukernel_fn fn_row[kDwMaxM + 1] = {};
    // fused: kernels that finish the chain in registers and store dst
    // (dw_ukernel_desc::epi), [bias][m], when the backend supports it and
    // the chain allows (bf16 / int8 sources; no post-op or one relu /
    // leaky_relu; f32 / bf16 / u8 / s8 output).  The driver then skips the
    // chain epilogue.
    bool fused = false;
    dw_ukernel_fn fn_fused[2][kDwMaxM + 1] = {};
    dw_ukernel_fn fn_row_fused[2][kDwMaxM + 1] = {};
    // byte_dot (or bf16_pair) row kernels for interior tiles whose call reads exactly G
    // kernel rows (dw_byte_dot_mode(G), G = 2..kDwMaxDotRows; G kernel
    // rows per vpdpbusd), made for the G that the shape's output rows
    // have; [G][m] (fused: [bias][G][m]), null where not made.
    dw_ukernel_fn fn_grows[kDwMaxDotRows + 1][kDwMaxM + 1] = {};
    dw_ukernel_fn fn_grows_fused[2][kDwMaxDotRows + 1][kDwMaxM + 1] = {};
    std::vector<std::shared_ptr<const void>> keep_alive;
    std::string backend_name;
    // The last item split chosen for several threads, keyed by the thread
    // count (choosing it walks a few dozen candidate splits).
    dw_split_memo split_memo;
};

// Tests: -1 (default) byte-dot kernels where the backend supports them
// and cpu_info::int8_dw_byte_dot says they are the faster choice, 0 never,
// 1 wherever supported (kernels prepared afterwards).
void set_dw_byte_dot_override(int v);
// Tests: the same for the bf16 pair-dot kernels (-1: where vdpbf16ps is
// not slow).
void set_dw_bf16_pair_override(int v);

anvil_status_t prepare_conv_dw_kernels(const conv_plan &p, const lowp::chain_spec &chain,
                                       int32_t src_zero_point, conv_dw_kernels *k);

anvil_status_t run_conv_dw(const conv_plan &p, const conv_dw_kernels &k,
                           const lowp::chain_spec &chain, int32_t src_zero_point,
                           const conv_operands &ops);

}  // namespace anvil::conv
