// AMX low-precision micro-kernel generator: the lp kernel contract
// (lowp/lp_ukernel.h) on tiles, for tiles of up to 32 rows x 32 columns.
//
// Tile map (palette 1, all 8 tiles for a 32 x 32 kernel):
//   C(r, c) = tmm[2r + c]  accumulators, rows 16r .. 16r+15, columns 16c ..
//   A(r)    = tmm[4 + r]   16 k-groups (64 bytes) of A rows 16r ..
//   B(c)    = tmm[6 + c]   16 k-groups of B columns 16c .. 16c+15
// so each step of 16 k-groups is 2 + 2 tile loads and 4 dot products, and
// every loaded tile is used twice.  A kernel of m <= 16 rows uses one A tile
// and C row; nv = 1 one B tile and C column.
//
// B is read in place from the lp packed panel: a B tile row is one k-group
// of 16 columns (64 bytes), rows b_ld bytes apart -- exactly the panel's
// layout, so the AVX-512 packing serves AMX unchanged.  A tile rows are A
// rows, a_rs bytes apart.
//
// K tail (kg not a multiple of 16): the last kg % 16 groups of A (m rows)
// and of B are copied to a zero-filled stack buffer and multiplied as one
// more full step; the zero A columns meet zero B rows, so nothing past kg is
// ever read and the padding adds exact zeros (no 0 * Inf).
//
// The tile configuration depends on (m, nv) only.  The kernel does not load
// it: the caller makes sure this thread's tiles are configured with
// amx_lp_tile_config(m, nv) first (lp_backend::configure_thread), so
// consecutive kernels with one shape never reload it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jit/jit_generator.h"
#include "lowp/lp_ukernel.h"

namespace anvil::jit {

// The int8 dot-product instruction: A's and B's signedness.
enum class amx_int8_signs : uint8_t {
    u8s8 = 0,  // tdpbusd (anvil's int8 GEMMs; s8 A is shifted by +128)
    s8s8 = 1,  // tdpbssd
    s8u8 = 2,  // tdpbsud
    u8u8 = 3,  // tdpbuud
};

struct amx_lp_desc {
    lowp::lp_kind kind;
    amx_int8_signs signs;  // u8s8 kind only (0 for bf16)
    uint8_t m;             // 1..32 rows
    uint8_t nv;            // 1 or 2 column tiles of 16
    uint8_t accumulate;    // 0 or 1
    uint8_t reserved[3];
};
static_assert(sizeof(amx_lp_desc) == 8, "amx_lp_desc must stay 8 packed bytes");

constexpr int kAmxMaxRows = 32;      // rows of the largest kernel (2 C tile rows)
constexpr int kAmxTileRows = 16;     // palette 1: rows per tile
constexpr int kAmxStepGroups = 16;   // k-groups per tile step (64 bytes of A)

amx_lp_desc make_amx_lp_desc(lowp::lp_kind kind, int m, int nv, bool accumulate,
                             amx_int8_signs signs = amx_int8_signs::u8s8);
bool amx_lp_desc_valid(const amx_lp_desc &d);

// The 64-byte palette-1 configuration kernels of (m, nv) need; static
// storage, one per shape, so a pointer identifies a configuration.
const uint8_t *amx_lp_tile_config(int m, int nv);

class jit_amx_lp : public jit_generator {
public:
    explicit jit_amx_lp(const amx_lp_desc &d);
    static std::string kernel_name(const amx_lp_desc &d);

    // The tile instructions in emission order, as "mnemonic tmmX[,tmmY,tmmZ]"
    // (the encoding cross-check compares them with a disassembly).
    const std::vector<std::string> &intended_tile_ops() const { return ops_; }

private:
    int c_rows() const { return d_.m > kAmxTileRows ? 2 : 1; }
    static Xbyak::Tmm c_tile(int r, int c) { return Xbyak::Tmm(2 * r + c); }
    static Xbyak::Tmm a_tile(int r) { return Xbyak::Tmm(4 + r); }
    static Xbyak::Tmm b_tile(int c) { return Xbyak::Tmm(6 + c); }

    // Emit steps.
    void load_args();
    void init_c();           // tilezero, or tileloadd from acc
    void k_loop();           // full steps of 16 k-groups
    void k_tail();           // kg % 16 groups through the stack buffer
    void step(const Xbyak::RegExp &a0, const Xbyak::RegExp &a1, const Xbyak::RegExp &b0,
              const Xbyak::RegExp &b1);  // tile loads + dot products of one step
    void store_c();

    // Logged tile instructions.
    void tload(const Xbyak::Tmm &t, const Xbyak::RegExp &at);
    void tstore(const Xbyak::RegExp &at, const Xbyak::Tmm &t);
    void tzero(const Xbyak::Tmm &t);
    void tdp(const Xbyak::Tmm &c, const Xbyak::Tmm &a, const Xbyak::Tmm &b);

    amx_lp_desc d_;
    std::vector<std::string> ops_;

    // GPR map (System V: the args pointer arrives in rdi).  All caller-saved:
    // acc and its stride are reloaded from args for the store.
    const Xbyak::Reg64 reg_args = rdi;
    const Xbyak::Reg64 reg_a = rsi;      // A rows 0..15 at the current group
    const Xbyak::Reg64 reg_a16 = r8;     // A rows 16..31
    const Xbyak::Reg64 reg_astr = r9;    // a_rs (a tile load's stride)
    const Xbyak::Reg64 reg_b = r10;      // B at the current group
    const Xbyak::Reg64 reg_bld = r11;    // b_ld (a tile load's stride)
    const Xbyak::Reg64 reg_bstep = rax;  // 16 * b_ld
    const Xbyak::Reg64 reg_cnt = rcx;    // steps left; then tail groups (cl: shifts)
    const Xbyak::Reg64 reg_tmp = rdx;    // acc, copy pointers
    // Stack buffer of the K tail, 64-byte aligned at rsp.
    static constexpr int kTailA = 0;                        // 32 rows x 64 bytes
    static constexpr int kTailB = kAmxMaxRows * 64;         // 16 rows x 128 bytes
    static constexpr int kTailBytes = kTailB + kAmxTileRows * 128;
};

}  // namespace anvil::jit

namespace anvil::jit {

// The kernel for d from the shared kernel cache (generated on a miss).  It
// does not look at the CPU: the AMX tests generate kernels on machines
// without AMX and execute them in an emulator.
anvil_status_t get_amx_lp_kernel(const amx_lp_desc &d, cache::kernel_ptr *out);

}  // namespace anvil::jit
